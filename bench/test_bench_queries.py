"""pytest-benchmark suite for the queries on synthetic events (see queries.py for the input).

    pytest bench/test_bench_queries.py                              # 1 million events
    TRACECORE_BENCH_QUERY_EVENTS=10000000 pytest bench/test_bench_queries.py

Each benchmark asserts its result's size or a value, so a wrong answer fails even with
--benchmark-disable.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

BENCH_DIR = Path(__file__).resolve().parent
if str(BENCH_DIR) not in sys.path:
    sys.path.insert(0, str(BENCH_DIR))

import queries  # noqa: E402

EVENTS = int(os.environ.get("TRACECORE_BENCH_QUERY_EVENTS", "1000000"))
DEVICES = 16


@pytest.fixture(scope="module")
def trace():
    tracecore = pytest.importorskip("tracecore")
    path = queries.make_synthetic(EVENTS, DEVICES, queries.DEFAULT_OUT / f"synthetic_{EVENTS}ev.pb")
    t = tracecore.open(path)
    assert len(t.events) == EVENTS
    return t


def test_overlaps(benchmark, trace):
    pairs = benchmark(trace.overlaps)
    # about two events run at once per device: more pairs than events, far fewer than n^2
    assert EVENTS // 2 < pairs.num_rows < 10 * EVENTS
    benchmark.extra_info["pairs"] = pairs.num_rows


def test_window(benchmark, trace):
    starts = trace.events.column("start_ns").to_numpy()
    mid = int(starts.min() + (starts.max() - starts.min()) // 2)
    ids = benchmark(trace.window, mid, mid + 1_000_000)
    assert len(ids) > 0
    got = trace.events.take(ids)
    assert all(s < mid + 1_000_000 for s in got.column("start_ns").to_pylist())
    assert all(e > mid for e in got.column("end_ns").to_pylist())


def test_occupancy(benchmark, trace):
    occ = benchmark(trace.occupancy)
    assert occ.num_rows == DEVICES
    assert all(0.0 < u <= 1.0 for u in occ.column("utilization").to_pylist())


def test_occupancy_bins(benchmark, trace):
    bins = benchmark(trace.occupancy, bin_ns=1_000_000)
    assert bins.num_rows >= DEVICES


def test_replay_records(benchmark, trace):
    def run():
        r = trace.replay(source="records")
        return r.timeline, r.peaks

    timeline, peaks = benchmark(run)
    assert peaks.num_rows == queries.N_ALLOCATORS
    # every allocation is freed: each allocator ends at 0
    levels = {}
    for a, b in zip(
        timeline.column("allocator").to_pylist(),
        timeline.column("bytes_in_use").to_pylist(),
        strict=True,
    ):
        levels[a] = b
    assert set(levels.values()) == {0}
