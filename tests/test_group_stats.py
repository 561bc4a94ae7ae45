"""The grouped-interval engine (C++ group_stats) as the Python layer uses it: values against a
brute-force oracle, rows in no group, and errors instead of wrapped sums."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracecore
from tracecore import _core
from tracecore.intervals import group_stats, grouped_sum, union_length

INT64_MAX = 2**63 - 1


def union_oracle(intervals: list[tuple[int, int]]) -> int:
    """Length of the union of half-open intervals, one unit at a time."""
    covered: set[int] = set()
    for s, e in intervals:
        covered.update(range(s, max(s, e)))
    return len(covered)


rows = st.lists(
    st.tuples(st.integers(-50, 50), st.integers(-60, 60), st.integers(-1, 4), st.integers(0, 9)),
    max_size=40,
)


@settings(max_examples=200, deadline=None)
@given(rows)
def test_group_stats_match_the_oracle(data):
    start = [r[0] for r in data]
    end = [r[1] for r in data]
    group = [r[2] for r in data]
    weight = [r[3] for r in data]
    s = group_stats(start, end, group, 5, weight=weight)
    for g in range(5):
        mine = [(a, max(a, b), w) for a, b, k, w in data if k == g]
        assert s.n_events[g] == len(mine)
        assert s.total_ns[g] == sum(b - a for a, b, _ in mine)
        assert s.max_ns[g] == max((b - a for a, b, _ in mine), default=0)
        assert s.busy_ns[g] == union_oracle([(a, b) for a, b, _ in mine])
        assert s.first_start_ns[g] == min((a for a, _, _ in mine), default=0)
        assert s.last_end_ns[g] == max((b for _, b, _ in mine), default=0)
        assert s.weight is not None and s.weight[g] == sum(w for _, _, w in mine)


def test_small_input_gives_expected_rows():
    s = group_stats([0, 5, 20, 3, 3], [10, 15, 30, 4, 4], [0, 0, 0, 1, 1], 3)
    assert s.n_events.tolist() == [3, 2, 0]
    assert s.total_ns.tolist() == [30, 2, 0]
    assert s.busy_ns.tolist() == [25, 1, 0]
    assert (s.first_start_ns.tolist(), s.last_end_ns.tolist()) == ([0, 3, 0], [30, 4, 0])
    assert s.weight is None
    assert union_length([0, 10, 12], [10, 11, 13]) == 12
    assert union_length([], []) == 0
    assert grouped_sum([5, 6, 7], [1, -1, 1], 2).tolist() == [0, 12]


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="group id 2 is not below the 2 groups"):
        group_stats([0], [1], [2], 2)
    with pytest.raises(ValueError, match="one entry per row"):
        group_stats([0, 1], [1], [0, 0], 1)
    with pytest.raises(TypeError, match="start must hold integers"):
        group_stats([0.5], [1], [0], 1)
    with pytest.raises(ValueError, match="n_groups must be >= 0"):
        _core.group_stats(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64), -1)


def test_sums_that_do_not_fit_int64_raise_instead_of_wrapping():
    with pytest.raises(OverflowError, match="total_ns overflows int64"):
        group_stats([0, 0], [INT64_MAX, INT64_MAX], [0, 0], 1)
    with pytest.raises(OverflowError, match="weight sum overflows int64"):
        grouped_sum([INT64_MAX, 1], [0, 0], 1)
    with pytest.raises(OverflowError, match="does not fit int64"):
        union_length(np.array([2**63], dtype=np.uint64), np.array([2**63 + 1], dtype=np.uint64))


def test_scopes_raise_on_durations_whose_sum_overflows(tmp_path):
    """scopes() summed durations in numpy, which wraps; the engine raises."""
    path = tmp_path / "long.pbtxt"
    path.write_text(
        'dev_stats { device: "/device:CPU:0" '
        'node_stats { node_name: "a/x" all_start_nanos: 2 all_end_rel_nanos: 5000000000000000000 }'
        ' node_stats { node_name: "a/y" all_start_nanos: 1 all_end_rel_nanos: 5000000000000000000 }'
        " }\n"
    )
    t = tracecore.open(path)
    two = t.scopes(2)  # one event per scope: each sum fits
    assert sorted(two.column("total_ns").to_pylist()) == [5 * 10**18, 5 * 10**18]
    with pytest.raises(OverflowError, match="total_ns overflows int64"):
        t.scopes(1)  # both in scope "a": 10**19 does not fit
    with pytest.raises(OverflowError, match="total_ns overflows int64"):
        t.op_stats("op")  # the same engine, in C++
    assert t.op_stats("node_name")["busy_ns"].to_pylist() == [5 * 10**18] * 2


codes = st.lists(
    st.tuples(st.integers(-50, 50), st.integers(-60, 60), st.integers(0, 5)), max_size=40
)


@settings(max_examples=100, deadline=None)
@given(codes, st.lists(st.integers(-1, 3), min_size=6, max_size=6))
def test_codes_give_what_their_groups_give(data, mapping):
    """group_of_code: the same statistics as the per-row group ids group_of_code[code]."""
    start = [r[0] for r in data]
    end = [r[1] for r in data]
    code = np.array([r[2] for r in data], dtype=np.int32)
    by_code = group_stats(start, end, code, 4, group_of_code=mapping)
    by_id = group_stats(start, end, np.array(mapping, dtype=np.int64)[code], 4)
    for field in ("n_events", "total_ns", "max_ns", "busy_ns", "first_start_ns", "last_end_ns"):
        assert getattr(by_code, field).tolist() == getattr(by_id, field).tolist(), field


def test_many_groups_of_one_row_and_a_few_of_several():
    """Groups of one interval are busy for its length without being sorted; the others are
    still unioned (busy time below the total where their intervals overlap)."""
    n = 5000
    start = np.arange(n, dtype=np.int64) * 10
    end = start + 7
    group = np.arange(n, dtype=np.int64)
    group[:6] = [0, 0, 0, 1, 1, 2]  # 0: [0,7) [10,17) [20,27); 1: two rows; 2: one row
    start[:6] = [0, 5, 20, 100, 100, 0]
    end[:6] = [10, 15, 30, 107, 103, 0]
    s = group_stats(start, end, group, n)
    assert s.busy_ns[:6].tolist() == [25, 7, 0, 0, 0, 0]
    assert s.total_ns[:6].tolist() == [30, 10, 0, 0, 0, 0]
    assert s.busy_ns[6:].tolist() == [7] * (n - 6)
    assert s.n_events[6:].tolist() == [1] * (n - 6)


def test_bad_codes_are_refused():
    zero = [0, 0]
    with pytest.raises(ValueError, match="code -1 of row 1 is not below the 2 codes"):
        group_stats(zero, zero, [0, -1], 1, group_of_code=[0, 0])
    with pytest.raises(ValueError, match="code 2 of row 0 is not below the 2 codes"):
        group_stats(zero, zero, [2, 0], 1, group_of_code=[0, 0])
    with pytest.raises(ValueError, match="group id 3 is not below the 2 groups"):
        group_stats(zero, zero, [0, 0], 2, group_of_code=[0, 3])  # even an unused code
    with pytest.raises(ValueError, match="one entry per row"):
        group_stats(zero, zero, [0], 1, group_of_code=[0])
    with pytest.raises(TypeError, match="group must hold integers"):
        group_stats(zero, zero, [0.9, 1.7], 1, group_of_code=[0, 0])
    with pytest.raises(ValueError, match="outside int32"):
        group_stats(zero, zero, [0, 2**32 + 1], 1, group_of_code=[0, 0])
