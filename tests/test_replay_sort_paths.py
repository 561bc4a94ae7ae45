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
    got = list(zip(*(r.timeline.column(c).to_pylist()
                     for c in ("allocator", "time_ns", "delta_bytes", "bytes_in_use"))))
    assert got == _brute_force(recs)
    assert sum(r.peaks.column("n_changes").to_pylist()) == n
