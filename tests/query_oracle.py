"""Brute-force oracles for the tracecore queries (docs/queries.md).

Everything here works on plain Python lists / numpy arrays and is written for clarity, not speed
(O(n^2) pairs, instant-by-instant concurrency, per-record replays). Results are plain Python
values (lists of tuples / dicts) so that tests can compare them exactly with the pyarrow tables
tracecore returns.

Conventions (all from the contract):
* intervals are half-open [start, end) in int64 ns; an event whose end < start is treated as a
  zero-length event at its start (``clamp_ends``);
* two intervals overlap iff a.start < b.end and b.start < a.end.

This module deliberately does not import tracecore.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

import tf_timeline_model as tfm


# ---------------------------------------------------------------------------------------------
# Interval helpers
# ---------------------------------------------------------------------------------------------
def clamp_ends(starts, ends) -> tuple[list[int], list[int]]:
    s = [int(x) for x in starts]
    e = [max(int(a), int(b)) for a, b in zip(s, ends, strict=True)]
    return s, e


def overlap(s1: int, e1: int, s2: int, e2: int) -> bool:
    return s1 < e2 and s2 < e1


def union_periods(intervals) -> list[tuple[int, int]]:
    """Maximal busy periods of the union of the positive-length intervals (touching ones merged)."""
    ivs = sorted((s, e) for s, e in intervals if e > s)
    out: list[list[int]] = []
    for s, e in ivs:
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(a, b) for a, b in out]


def union_length(intervals) -> int:
    return sum(e - s for s, e in union_periods(intervals))


def union_length_in(intervals, lo: int, hi: int) -> int:
    """Length of (union of intervals) ∩ [lo, hi)."""
    total = 0
    for s, e in union_periods(intervals):
        a, b = max(s, lo), min(e, hi)
        if b > a:
            total += b - a
    return total


def active_at(s: int, e: int, t: int) -> bool:
    return (s <= t < e) or (s == e == t)


def max_concurrency(intervals) -> int:
    """max over instants t of #active events; the maximum is attained at some event start."""
    best = 0
    for t, _ in intervals:
        best = max(best, sum(1 for s, e in intervals if active_at(s, e, t)))
    return best


def max_concurrency_dense(intervals) -> int:
    """Same as max_concurrency, checking every integer instant (only for small ranges; a
    cross-check of the 'every start instant' argument)."""
    if not intervals:
        return 0
    lo = min(s for s, _ in intervals)
    hi = max(e for _, e in intervals)
    return max(sum(1 for s, e in intervals if active_at(s, e, t)) for t in range(lo, hi + 1))


# ---------------------------------------------------------------------------------------------
# overlaps / window
# ---------------------------------------------------------------------------------------------
def overlaps_all(starts, ends, device_index, *, same_device=True) -> list[tuple[int, int, int]]:
    """Every unordered overlapping pair once, left < right; rows sorted by (left, right)."""
    s, e = clamp_ends(starts, ends)
    dev = [int(d) for d in device_index]
    n = len(s)
    rows = []
    for i in range(n):
        for j in range(i + 1, n):
            if same_device and dev[i] != dev[j]:
                continue
            if overlap(s[i], e[i], s[j], e[j]):
                rows.append((i, j, min(e[i], e[j]) - max(s[i], s[j])))
    return rows


def _id_set(sel, n) -> list[int]:
    if sel is None:
        return list(range(n))
    arr = np.asarray(sel)
    if arr.dtype == bool:
        assert len(arr) == n
        return [i for i in range(n) if arr[i]]
    return sorted({int(x) for x in arr.tolist()})


def overlaps_join(starts, ends, device_index, left=None, right=None, *, same_device=True
                  ) -> list[tuple[int, int, int]]:
    """Every ordered pair (l, r), l in left, r in right, l != r, that overlaps; a missing side is
    all events; duplicates ignored; rows sorted by (left, right). same_device (the keyword of
    t.overlaps, default True) keeps only pairs with equal device_index."""
    s, e = clamp_ends(starts, ends)
    dev = [int(d) for d in device_index]
    n = len(s)
    L, R = _id_set(left, n), _id_set(right, n)
    rows = []
    for i in L:
        for j in R:
            if i == j:
                continue
            if same_device and dev[i] != dev[j]:
                continue
            if overlap(s[i], e[i], s[j], e[j]):
                rows.append((i, j, min(e[i], e[j]) - max(s[i], s[j])))
    rows.sort()
    return rows


def window(starts, ends, w0: int, w1: int) -> list[int]:
    s, e = clamp_ends(starts, ends)
    return [i for i in range(len(s)) if s[i] < w1 and w0 < e[i]]


# ---------------------------------------------------------------------------------------------
# occupancy
# ---------------------------------------------------------------------------------------------
def occupancy(starts, ends, device_index, devices) -> list[dict]:
    """devices: list of (device_index, device, kind) for every device block, in device_index
    order. One row per block."""
    s, e = clamp_ends(starts, ends)
    dev = [int(d) for d in device_index]
    rows = []
    for di, name, kind in devices:
        ivs = [(s[i], e[i]) for i in range(len(s)) if dev[i] == di]
        busy = union_length(ivs)
        span = (max(b for _, b in ivs) - min(a for a, _ in ivs)) if ivs else 0
        periods = union_periods(ivs)
        rows.append({
            "device_index": di,
            "device": name,
            "kind": kind,
            "n_events": len(ivs),
            "busy_ns": busy,
            "span_ns": span,
            "utilization": (float(busy) / float(span)) if span != 0 else 0.0,
            "max_concurrency": max_concurrency(ivs),
            "idle_gaps": max(len(periods) - 1, 0),
        })
    return rows


def occupancy_bins(starts, ends, device_index, devices, bin_ns: int) -> list[dict]:
    """Rows (device_index, device, bin_start_ns, busy_ns, busy_fraction), device-major then bin:
    the bins of the grid ``t0 + k * bin_ns`` (t0: the trace's first start) from the one holding
    the block's first start up to its last end (at least one), none for an empty block."""
    assert bin_ns > 0
    s, e = clamp_ends(starts, ends)
    dev = [int(d) for d in device_index]
    if not s:
        return []
    t0 = min(s)
    rows = []
    for di, name, _kind in devices:
        ivs = [(s[i], e[i]) for i in range(len(s)) if dev[i] == di]
        if not ivs:
            continue
        first = (min(a for a, _ in ivs) - t0) // bin_ns
        last = -(-(max(b for _, b in ivs) - t0) // bin_ns)  # bins up to the block's last end
        for k in range(first, max(last, first + 1)):
            lo = t0 + k * bin_ns
            hi = lo + bin_ns
            busy = union_length_in(ivs, lo, hi)
            rows.append({
                "device_index": di,
                "device": name,
                "bin_start_ns": lo,
                "busy_ns": busy,
                "busy_fraction": float(busy) / float(bin_ns),
            })
    return rows


# ---------------------------------------------------------------------------------------------
# replay, source="records"
# ---------------------------------------------------------------------------------------------
@dataclass
class Replay:
    timeline: list[dict] = field(default_factory=list)  # sorted by (allocator, time_ns)
    peaks: list[dict] = field(default_factory=list)     # sorted by allocator
    live: dict = field(default_factory=dict)            # allocator -> list of rows


def _timeline_rows(allocator: str, changes, offset: int = 0) -> list[dict]:
    """changes: [(time, delta)] in processing order -> one row per distinct time (ascending),
    delta = sum of the deltas at that time, bytes_in_use = level after all of them (+ offset)."""
    by_time: dict[int, int] = {}
    order: list[int] = []
    for t, d in changes:
        if t not in by_time:
            by_time[t] = 0
            order.append(t)
        by_time[t] += d
    level = offset
    rows = []
    for t in sorted(order):
        level += by_time[t]
        rows.append({"allocator": allocator, "time_ns": t, "delta_bytes": by_time[t],
                     "bytes_in_use": level})
    return rows


def records_level_at(records, allocator: str, t: int) -> int:
    """Level of the allocator's records replay at time t (after every record with time <= t)."""
    return sum(b for _eid, a, tn, b in records if a == allocator and tn <= t)


def replay_records(records, *, event_start=None, node_names=None, allocations=None,
                   baseline=None, allocator=None, per_timestamp_peak=True) -> Replay:
    """records: [(event_id, allocator, time_ns, bytes)] in file order.
    node_names: event_id -> node_name (for live_at_peak rows).
    allocations (for baseline="snapshot"): [(event_id, allocator, allocator_bytes_in_use)],
    event_start: event_id -> start_ns.

    Reading of the contract used here (see the report for the ambiguity):
    * the level is looked at once per distinct timestamp, after every change at that time (the
      .timeline rows) -- this is the only reading under which the contract's live_tensors
      ("records with time_ns <= peak_time_ns") and live_at_peak are consistent with the peak;
      per_timestamp_peak=False evaluates after each single record instead (timeline.py style);
    * the running level starts at 0 (+ the baseline offset) and the peak at 0 at time 0 (no
      offset), updated only when a level is strictly greater;
    * baseline offset = allocator_bytes_in_use of the allocator's allocations row whose event
      starts earliest (ties: smaller event_id) minus the records level at that start (all records
      with time_ns <= start).
    """
    allocs = sorted({a for _e, a, _t, _b in records})
    if allocator is not None:
        allocs = [a for a in allocs if a == allocator]
    out = Replay()
    for a in allocs:
        recs = [(i, r) for i, r in enumerate(records) if r[1] == a]
        recs.sort(key=lambda ir: (ir[1][2], ir[0]))  # by time, ties in file order
        offset = 0
        if baseline == "snapshot":
            rows = [(event_start[eid], eid, biu) for eid, al, biu in allocations if al == a]
            if rows:
                st, eid, biu = min(rows, key=lambda r: (r[0], r[1]))
                offset = biu - records_level_at(records, a, st)
        elif baseline is not None:
            raise ValueError(baseline)
        level = offset
        peak, peak_t, updated = 0, 0, False
        for k, (_i, (_eid, _a, t, b)) in enumerate(recs):
            level += b
            if per_timestamp_peak and k + 1 < len(recs) and recs[k + 1][1][2] == t:
                continue
            if level > peak:
                peak, peak_t, updated = level, t, True
        if updated:
            held = [r for _i, r in recs if r[2] <= peak_t]
            live_n = sum(1 for r in held if r[3] > 0) - sum(1 for r in held if r[3] < 0)
            live_rows = [
                {"event_id": r[0], "node_name": node_names[r[0]] if node_names else None,
                 "allocator": a, "time_ns": r[2], "bytes": r[3]}
                for r in held if r[3] > 0
            ]
        else:
            live_n, live_rows = 0, []
        out.timeline.extend(_timeline_rows(a, [(r[2], r[3]) for _i, r in recs], offset))
        out.peaks.append({"allocator": a, "peak_bytes": peak, "peak_time_ns": peak_t,
                          "live_tensors": live_n, "n_changes": len(recs)})
        out.live[a] = live_rows
    return out


# ---------------------------------------------------------------------------------------------
# replay, source="tensors" (TensorFlow timeline.py's model)
# ---------------------------------------------------------------------------------------------
def replay_tensors(msg, *, allocator=None, from_nanos=True) -> Replay:
    """msg: the StepStats / RunMetadata message. Times: micros (derived from the nanosecond
    fields when all_start_nanos != 0, as TensorFlow does), reported as micros * 1000.

    live rows: tensor_name, event_id, node_name, output_index, requested_bytes, allocated_bytes
    (dtype/shape are those of the NodeOutput at (event_id, output_index)), sorted by tensor_name.
    """
    tl = tfm.analyze(msg, from_nanos=from_nanos)
    maxima = tl.allocator_maximums
    counters = tl.counters
    n_tensors: dict[str, int] = defaultdict(int)
    for tr in tl.tensors.values():
        n_tensors[tr.allocator] += 1
    allocs = sorted(counters)
    if allocator is not None:
        allocs = [a for a in allocs if a == allocator]
    out = Replay()
    for a in allocs:
        out.timeline.extend(_timeline_rows(a, [(t * 1000, d) for t, d, _tot, _n in counters[a]]))
        m = maxima[a]
        out.peaks.append({"allocator": a, "peak_bytes": m.num_bytes,
                          "peak_time_ns": m.timestamp * 1000, "live_tensors": len(m.tensors),
                          "n_changes": 2 * n_tensors[a]})
        rows = []
        for name in sorted(m.tensors):
            tr = tl.tensors[name]
            ad = tr.output.tensor_description.allocation_description
            rows.append({"tensor_name": name, "event_id": tr.event_index,
                         "node_name": tr.node_name, "output_index": tr.output_index,
                         "requested_bytes": ad.requested_bytes,
                         "allocated_bytes": ad.allocated_bytes})
        out.live[a] = rows
    return out


# ---------------------------------------------------------------------------------------------
# op_stats
# ---------------------------------------------------------------------------------------------
def op_stats(starts, ends, device_index, ops, node_names, devices, by="op",
             include_empty_devices=True) -> list[dict]:
    """devices: [(device_index, device, kind)] for every block. ops: op per event (None = null).
    by="device": one row per device_index (the contract), blocks without events included unless
    include_empty_devices=False.
    Returns rows sorted by total_ns descending then key (rows with equal (total_ns, key) — only
    possible with by="device" and repeated device strings — are ordered by device_index)."""
    s, e = clamp_ends(starts, ends)
    dev = [int(d) for d in device_index]
    kind_of = {di: kind for di, _n, kind in devices}
    n = len(s)
    groups: dict = {}
    order_key: dict = {}
    if by == "device":
        for di, name, _k in devices:
            if not include_empty_devices and di not in dev:
                continue
            groups[di] = []
            order_key[di] = (name, di)
        for i in range(n):
            groups[dev[i]].append(i)
    else:
        for i in range(n):
            if by == "op":
                key = ops[i] if ops[i] is not None else "(none)"
            elif by == "node_name":
                key = node_names[i]
                if kind_of[dev[i]] in ("stream", "stream_all", "memcpy") and ":" in key:
                    key = key[:key.rfind(":")]
            else:
                raise ValueError(by)
            groups.setdefault(key, []).append(i)
            order_key[key] = (key, 0)
    all_span = (max(e) - min(s)) if n else 0
    rows = []
    for g, members in groups.items():
        key, tie = order_key[g]
        durs = [e[i] - s[i] for i in members]
        total = sum(durs)
        busy = union_length([(s[i], e[i]) for i in members])
        rows.append(
            {
                "key": key,
                "n_events": len(members),
                "total_ns": total,
                "mean_ns": (float(total) / float(len(members))) if members else None,
                "max_ns": max(durs) if durs else 0,
                "busy_ns": busy,
                "share": (float(busy) / float(all_span)) if all_span != 0 else None,
                "executor_ns": sum(
                    d for i, d in zip(members, durs, strict=True) if kind_of[dev[i]] == "executor"
                ),
                "stream_ns": sum(
                    d for i, d in zip(members, durs, strict=True) if kind_of[dev[i]] == "stream"
                ),
                "_tie": tie,
            }
        )
        if by == "device":
            rows[-1]["_device_index"] = g
    rows.sort(key=lambda r: (-r["total_ns"], r["key"], r["_tie"]))
    return rows
