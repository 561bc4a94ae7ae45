"""Queries that split their work over the cores on large inputs (occupancy and overlaps per
device block, over 2^16 events) against numpy on a trace big enough to take that path: blocks of
very different sizes (so the largest-first schedule reorders them), shuffled start times,
zero-length and identical intervals, an empty block."""

from __future__ import annotations

import pytest

import tracecore

np = pytest.importorskip("numpy")


def _numpy_occupancy(starts, ends):
    """busy, span, max_concurrency, idle_gaps of one block (ends already clamped to starts)."""
    if len(starts) == 0:
        return 0, 0, 0, 0
    order = np.lexsort((ends, starts))
    s, e = starts[order], ends[order]
    # Busy periods: the union of the positive-length intervals, touching ones merged.
    pos = e > s
    ps, pe = s[pos], e[pos]
    busy = periods = 0
    if len(ps):
        new_period = np.ones(len(ps), dtype=bool)
        new_period[1:] = ps[1:] > np.maximum.accumulate(pe)[:-1]
        period_end = np.maximum.reduceat(pe, np.flatnonzero(new_period))
        busy = int((period_end - ps[new_period]).sum())
        periods = int(new_period.sum())
    span = int(e.max() - s.min())
    # Active at instant t: start <= t < end, or start == end == t; the maximum is at a start.
    ends_pos = np.sort(e[pos])
    zero_starts = np.sort(s[~pos])
    t = np.unique(s)
    started = np.searchsorted(np.sort(s), t, side="right")
    ended = np.searchsorted(ends_pos, t, side="right")
    zero_before = np.searchsorted(zero_starts, t, side="left")
    best = int((started - ended - zero_before).max())
    return busy, span, best, max(periods - 1, 0)


SIZES = [40_000, 7, 0, 15_000, 1, 12_000, 3_000]


@pytest.fixture(scope="module")
def blocks_trace(tmp_path_factory):
    """(path, [(starts, ends) per block]); event ids run through the blocks in order."""
    rng = np.random.default_rng(11)
    assert sum(SIZES) >= 1 << 16
    parts, blocks = [], []
    for b, n in enumerate(SIZES):
        starts = rng.integers(0, 2_000_000, n) * 3
        durs = rng.integers(0, 400, n) * rng.integers(0, 2, n)  # about half zero-length
        if n > 10:
            starts[:3] = starts[3]  # identical intervals
            durs[:3] = durs[3]
        parts.append(f'dev_stats {{ device: "/device:GPU:0/stream:{b}"\n')
        for s, d in zip(starts.tolist(), durs.tolist(), strict=True):
            parts.append(f"node_stats {{ node_name: \"n\" all_start_nanos: {s} "
                         f"op_end_rel_nanos: {d} all_end_rel_nanos: {d} }}\n")
        parts.append("}\n")
        blocks.append((starts, starts + durs))
    path = tmp_path_factory.mktemp("parallel") / "blocks.pbtxt"
    path.write_text("".join(parts))
    return path, blocks


def test_occupancy_parallel_path_matches_numpy(blocks_trace):
    path, blocks = blocks_trace
    t = tracecore.open(path)
    occ = t.occupancy().to_pylist()
    assert [r["n_events"] for r in occ] == SIZES
    assert [r["device_index"] for r in occ] == list(range(len(SIZES)))
    for row, (starts, ends) in zip(occ, blocks, strict=True):
        busy, span, conc, gaps = _numpy_occupancy(starts, ends)
        assert (row["busy_ns"], row["span_ns"], row["max_concurrency"], row["idle_gaps"]) == (
            busy, span, conc, gaps), row["device_index"]
        assert row["utilization"] == (busy / span if span else 0.0)


def _numpy_pairs(starts, ends, first_id):
    """Every unordered overlapping pair of one block: (low id, high id, overlap_ns) arrays."""
    ids = np.arange(first_id, first_id + len(starts))
    order = np.lexsort((ids, ends, starts))
    s, e, i = starts[order], ends[order], ids[order]
    # Items after position p that start before p's end: positions p+1 .. stop[p]-1.
    stop = np.searchsorted(s, e, side="left")
    count = np.maximum(stop - np.arange(len(s)) - 1, 0)
    a = np.repeat(np.arange(len(s)), count)
    offsets = np.arange(len(a)) - np.repeat(np.cumsum(count) - count, count)
    b = a + 1 + offsets
    keep = e[b] > s[a]  # a zero-length item at a's start does not overlap it
    a, b = a[keep], b[keep]
    lo, hi = np.minimum(i[a], i[b]), np.maximum(i[a], i[b])
    overlap = np.minimum(e[a], e[b]) - np.maximum(s[a], s[b])
    return lo, hi, overlap


def test_overlaps_parallel_path_matches_numpy(blocks_trace):
    path, blocks = blocks_trace
    t = tracecore.open(path)
    lo, hi, ov, first = [], [], [], 0
    for starts, ends in blocks:
        a, b, o = _numpy_pairs(starts, ends, first)
        lo.append(a)
        hi.append(b)
        ov.append(o)
        first += len(starts)
    lo, hi, ov = np.concatenate(lo), np.concatenate(hi), np.concatenate(ov)
    order = np.lexsort((hi, lo))
    lo, hi, ov = lo[order], hi[order], ov[order]
    assert len(lo) > 10_000
    got = t.overlaps()
    np.testing.assert_array_equal(got.column("left").to_numpy(), lo)
    np.testing.assert_array_equal(got.column("right").to_numpy(), hi)
    np.testing.assert_array_equal(got.column("overlap_ns").to_numpy(), ov)

    # A join between two masks: ordered pairs (l, r) with l in left, r in right.
    n = first
    ids = np.arange(n)
    left, right = ids % 2 == 0, ids % 3 == 0
    pairs = np.concatenate([np.stack([lo, hi, ov], 1), np.stack([hi, lo, ov], 1)])
    pairs = pairs[left[pairs[:, 0]] & right[pairs[:, 1]]]
    pairs = pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]
    got = t.overlaps(left, right)
    np.testing.assert_array_equal(got.column("left").to_numpy(), pairs[:, 0])
    np.testing.assert_array_equal(got.column("right").to_numpy(), pairs[:, 1])
    np.testing.assert_array_equal(got.column("overlap_ns").to_numpy(), pairs[:, 2])
