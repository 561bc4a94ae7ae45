"""replay(source="records") sorts records by time through packed 8-byte keys when the time range
and the row numbers fit in 64 bits, else through whole records: both paths against a brute force
replay, at ordinary and extreme timestamps (5000 records spread over the whole int64 range take
the second path)."""

from __future__ import annotations

import random

import pytest

import tracecore

M = 9223372036854775  # largest alloc_micros whose nanoseconds fit in int64


def _brute_force(recs):
    out = []
    for a in sorted({r[0] for r in recs}):
        rs = sorted((r for r in recs if r[0] == a), key=lambda r: (r[1], r[3]))
        level, i = 0, 0
        while i < len(rs):
            now, delta = rs[i][1], 0
            while i < len(rs) and rs[i][1] == now:
                delta += rs[i][2]
                i += 1
            level += delta
            out.append((a, now, delta, level))
    return out


@pytest.mark.parametrize("case,n", [("dense", 400), ("extreme", 300), ("corners", 300),
                                    ("extreme_many", 5000)])
def test_records_replay_matches_brute_force(tmp_path, case, n):
    rng = random.Random(n)
    times = {
        "dense": lambda: rng.randint(0, 50) * 1000,
        "extreme": lambda: rng.randint(-M, M) * 1000,
        "corners": lambda: rng.choice([-M, M, 0]) * 1000,
        "extreme_many": lambda: rng.randint(-M, M) * 1000,
    }[case]
    recs, lines = [], ['dev_stats { device: "/d"']
    for i in range(n):
        a, ns, b = rng.choice("AB"), times(), rng.choice([1, 2, 3, -1, -2, 5, 100])
        recs.append((a, ns, b, i))
        lines.append(f'node_stats {{ node_name: "n{i}" all_start_nanos: {ns} memory {{ '
                     f'allocator_name: "{a}" allocation_records {{ alloc_micros: {ns // 1000} '
                     f'alloc_bytes: {b} }} }} }}')
    lines.append("}")
    path = tmp_path / "t.pbtxt"
    path.write_text("\n".join(lines))
    t = tracecore.open(path)
    r = t.replay(source="records")
    got = list(
        zip(
            *(
                r.timeline.column(c).to_pylist()
                for c in ("allocator", "time_ns", "delta_bytes", "bytes_in_use")
            ),
            strict=True,
        )
    )
    assert got == _brute_force(recs)
    assert sum(r.peaks.column("n_changes").to_pylist()) == n


def test_records_replay_parallel_path_matches_numpy(tmp_path):
    """Over 2^20 records the buckets are sorted and replayed on all cores: same timeline and
    peaks as a numpy replay."""
    np = pytest.importorskip("numpy")
    rng = np.random.default_rng(3)
    n_events = 600_000
    alloc = rng.integers(0, 3, n_events)
    start_us = 1_600_000_000_000_000 + np.cumsum(rng.integers(0, 5, n_events))
    dur_us = rng.integers(0, 40, n_events)
    size = rng.integers(1, 1 << 20, n_events)
    names = ("gpu_a", "gpu_b", "host")
    parts = ['dev_stats { device: "/d"\n']
    for a, s, d, b in zip(
        alloc.tolist(), start_us.tolist(), dur_us.tolist(), size.tolist(), strict=True
    ):
        parts.append(
            f'node_stats {{ all_start_micros: {s} memory {{ allocator_name: "{names[a]}" '
            f"allocation_records {{ alloc_micros: {s} alloc_bytes: {b} }} "
            f"allocation_records {{ alloc_micros: {s + d} alloc_bytes: {-b} }} }} }}\n")
    parts.append("}\n")
    path = tmp_path / "big.pbtxt"
    path.write_text("".join(parts))
    t = tracecore.open(path)
    rec = t.alloc_records
    assert rec.num_rows == 2 * n_events > (1 << 20)
    r = t.replay(source="records")
    allocator = np.array([names.index(x) for x in rec.column("allocator").to_pylist()])
    times = rec.column("time_ns").to_numpy()
    nbytes = rec.column("bytes").to_numpy()
    got_time = r.timeline.column("time_ns").to_numpy()
    got_level = r.timeline.column("bytes_in_use").to_numpy()
    got_alloc = r.timeline.column("allocator").to_pylist()
    offset = 0
    for k, name in enumerate(names):  # allocators come in name order
        sel = allocator == k
        order = np.lexsort((np.nonzero(sel)[0], times[sel]))
        t_sorted, b_sorted = times[sel][order], nbytes[sel][order]
        uniq, first = np.unique(t_sorted, return_index=True)
        delta = np.add.reduceat(b_sorted, first)
        level = np.cumsum(delta)
        rows = slice(offset, offset + len(uniq))
        assert got_alloc[rows.start] == name and got_alloc[rows.stop - 1] == name
        np.testing.assert_array_equal(got_time[rows], uniq)
        np.testing.assert_array_equal(got_level[rows], level)
        peak = r.peak(name)
        assert peak["peak_bytes"] == level.max()
        assert peak["peak_time_ns"] == uniq[np.argmax(level)]
        assert peak["n_changes"] == int(sel.sum())
        offset += len(uniq)
    assert offset == r.timeline.num_rows
