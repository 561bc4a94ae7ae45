"""Grouped interval statistics for the Python layer, computed by the native core's one engine
(the ``group_stats`` query, which also serves ``Trace.op_stats``): per group the number of
intervals, the sum and maximum of their lengths, the busy time (length of the union of the
group's intervals), the first start and last end, and the sum of a weight column. Sums that do
not fit int64 raise OverflowError instead of wrapping."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _core


@dataclass(frozen=True)
class GroupStats:
    """One entry per group id; a group without intervals has zeros."""

    n_events: np.ndarray
    total_ns: np.ndarray
    max_ns: np.ndarray
    busy_ns: np.ndarray
    first_start_ns: np.ndarray
    last_end_ns: np.ndarray
    weight: np.ndarray | None  # the sum of the weight column, when one was given


def _int64(values: Any, what: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.size and arr.dtype.kind not in "iu":
        raise TypeError(f"{what} must hold integers, not {arr.dtype}")
    if arr.dtype.kind == "u" and arr.size and int(arr.max()) > np.iinfo(np.int64).max:
        raise OverflowError(f"{what} does not fit int64")
    return np.ascontiguousarray(arr, dtype=np.int64)


def _int32_codes(values: Any, what: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.size and arr.dtype.kind not in "iu":
        raise TypeError(f"{what} must hold integers, not {arr.dtype}")
    # (int32 itself, the dictionary indices scopes() passes, needs no pass over the values.)
    if arr.size and not np.can_cast(arr.dtype, np.int32) and (
            int(arr.min()) < np.iinfo(np.int32).min or int(arr.max()) > np.iinfo(np.int32).max):
        raise ValueError(f"{what} holds a code outside int32")
    return np.ascontiguousarray(arr, dtype=np.int32)


def group_stats(
    start: Any,
    end: Any,
    group: Any,
    n_groups: int,
    weight: Any = None,
    *,
    group_of_code: Any = None,
) -> GroupStats:
    """Statistics of the intervals ``[start, end)`` (an end before its start counts as the
    start) per group id in ``[0, n_groups)``; rows with a negative id are in no group.

    With ``group_of_code``, ``group`` holds int32 codes (a dictionary column's indices) and the
    group of a row is ``group_of_code[code]``: no per-row id array is made.

    Raises:
        ValueError: columns of different lengths, an id at or above ``n_groups``, or a code
            outside ``group_of_code``.
        OverflowError: a sum or length that does not fit int64.
    """
    weights = None if weight is None else _int64(weight, "weight")
    if group_of_code is not None:
        out = _core.group_stats_codes(
            _int64(start, "start"),
            _int64(end, "end"),
            _int32_codes(group, "group"),
            _int64(group_of_code, "group_of_code"),
            int(n_groups),
            weights,
        )
    else:
        out = _core.group_stats(
            _int64(start, "start"), _int64(end, "end"), _int64(group, "group"), int(n_groups),
            weights,
        )
    return GroupStats(
        n_events=out["n_events"],
        total_ns=out["total_ns"],
        max_ns=out["max_ns"],
        busy_ns=out["busy_ns"],
        first_start_ns=out["first_start_ns"],
        last_end_ns=out["last_end_ns"],
        weight=out.get("weight"),
    )


def union_length(start: Any, end: Any) -> int:
    """Length of the union of the half-open intervals ``[start, end)``."""
    starts = _int64(start, "start")
    return int(group_stats(starts, end, np.zeros(len(starts), dtype=np.int64), 1).busy_ns[0])


def grouped_sum(values: Any, group: Any, n_groups: int) -> np.ndarray:
    """The sum of ``values`` per group id in ``[0, n_groups)`` (negative ids: no group),
    checked: a sum that does not fit int64 raises OverflowError."""
    v = _int64(values, "weight")
    g = _int64(group, "group")
    if len(v) == len(g) and n_groups >= 0 and (len(g) == 0 or int(g.max()) < n_groups):
        keep = g >= 0
        kept_v, kept_g = (v, g) if keep.all() else (v[keep], g[keep])
        # float64 adds integers exactly while every partial sum stays under 2^53: true when
        # the sum of magnitudes does (with room for its own rounding), which bounds them all.
        magnitude = np.bincount(kept_g, weights=np.abs(kept_v.astype(np.float64)),
                                minlength=n_groups)
        if len(magnitude) == 0 or float(magnitude.max()) < 2.0**52:
            sums = np.bincount(kept_g, weights=kept_v.astype(np.float64), minlength=n_groups)
            return sums.astype(np.int64)
    # Sums near or past int64, or bad ids: the native engine's checked sums and errors.
    zeros = np.zeros(len(v), dtype=np.int64)
    weights = group_stats(zeros, zeros, g, n_groups, weight=v).weight
    assert weights is not None
    return weights
