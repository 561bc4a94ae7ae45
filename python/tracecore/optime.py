"""Time per op counted once: what ``Trace.op_stats``' ``time_ns``, ``tracecore top`` and
``tracecore.diff`` sum.

A GPU op appears several times in a StepStats dump: on the executor (its launch), on its stream
(``stream:N``, the kernel), and again on ``stream:all`` (and ``memcpy``). Adding them counts its
time two or three times. Here each node (a StepStats stream or memcpy record's ``:Op`` suffix
removed, so a kernel joins its node) counts the records of one class of blocks only:

1. its stream records (blocks of kind ``stream``), when it has any: device time;
2. else its ``memcpy`` block records (a copy seen on no stream);
3. else its executor records: a host-only op;
4. else its records on the other blocks (XSpace lines, Chrome trace tracks), but never
   ``stream:all`` or the blocks that repeat or span others: the lines XProf derives
   (``xla_modules``, ``steps``, ``derived``) and a Chrome trace's annotation tracks (Kineto's
   profiler spans).

This removes the repeats between blocks, not nesting within one: on a host thread of a Chrome
trace or an XSpace, an event and the events inside it (a Python frame and the ops it calls)
each count their whole duration. An op's time is the sum over its nodes; lengths and sums are
checked (OverflowError past int64).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from ._arrow import array, to_numpy
from .intervals import group_stats, grouped_sum

_STREAM, _MEMCPY, _EXECUTOR, _OTHER, _REPEATS = 0, 1, 2, 3, 4
_CLASS = {"stream": _STREAM, "memcpy": _MEMCPY, "executor": _EXECUTOR, "stream_all": _REPEATS,
          "xla_modules": _REPEATS, "steps": _REPEATS, "derived": _REPEATS,
          "annotation": _REPEATS}
_SUFFIXED = ("stream", "stream_all", "memcpy")  # records named "node:Op"

SCHEMA = pa.schema([("key", pa.string()), ("time_ns", pa.int64()), ("n_events", pa.int64())])


def device_kind_column(events: pa.Table, devices: pa.Table) -> pa.DictionaryArray:
    """Each event's device kind (its block's ``devices.kind``: ``stream``, ``executor``,
    ``host_thread``, ...) as a dictionary column whose dictionary is the kinds that occur."""
    kinds = [str(k) for k in devices.column("kind").to_pylist()]
    names = sorted(set(kinds))
    code_of_device = np.array([names.index(k) for k in kinds], dtype=np.int32)
    device_index = to_numpy(events.column("device_index")).astype(np.intp, copy=False)
    codes = code_of_device[device_index] if len(device_index) else np.zeros(0, np.int32)
    used = np.flatnonzero(np.bincount(codes, minlength=len(names)))
    remap = np.zeros(len(names), dtype=np.int32)
    remap[used] = np.arange(len(used), dtype=np.int32)
    return pa.DictionaryArray.from_arrays(
        array(remap[codes], pa.int32()), array([names[i] for i in used], pa.string())
    )


def _codes(column: pa.ChunkedArray) -> tuple[np.ndarray, list[Any]]:
    """A dictionary column as (codes, values): -1 for null."""
    col = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    if not pa.types.is_dictionary(col.type):
        col = col.dictionary_encode()
    return np.asarray(to_numpy(col.indices, -1), dtype=np.int64), col.dictionary.to_pylist()


def counted_once(trace: Any, by: str = "op", *, name_for_null_op: bool = False) -> pa.Table:
    """``key, time_ns, n_events`` per op (``by="op"``, null ops as ``"(none)"``, or as the
    event's node name with ``name_for_null_op``) or node (``"node_name"``): the time of the
    records that count (module doc) and their number."""
    if by not in ("op", "node_name"):
        raise ValueError(f"by must be 'op' or 'node_name', not {by!r}")
    ev = trace.table("events")
    if ev.num_rows == 0:
        return SCHEMA.empty_table()
    kinds = trace.devices["kind"].to_pylist()
    block_class = np.array([_CLASS.get(k, _OTHER) for k in kinds], dtype=np.int64)
    block_suffixed = np.array([k in _SUFFIXED for k in kinds], dtype=bool)
    block = np.asarray(to_numpy(ev["device_index"]), dtype=np.int64)
    cls = block_class[block]
    start = np.asarray(to_numpy(ev["start_ns"]), dtype=np.int64)
    end = np.asarray(to_numpy(ev["end_ns"]), dtype=np.int64)
    dur = np.maximum(end, start) - start
    if (dur < 0).any():  # wrapped: the length does not fit int64
        raise OverflowError("an event's length (end_ns - start_ns) overflows int64")

    # Each record's node: stream and memcpy records lose their ":Op" suffix.
    codes, names = _codes(ev["node_name"])
    if trace.kind not in ("StepStats", "RunMetadata"):
        block_suffixed[:] = False  # other formats' names are as written ("void at::native::k")
    bases = [n.rsplit(":", 1)[0] if ":" in n else n for n in names]
    node_names = sorted(set(names) | set(bases))
    position = {n: i for i, n in enumerate(node_names)}
    full = np.array([position[n] for n in names], dtype=np.int64)
    stripped = np.array([position[n] for n in bases], dtype=np.int64)
    node = np.where(block_suffixed[block], stripped[codes], full[codes])

    # Per node, the class that counts: stream, else executor, else other.
    n_nodes = len(node_names)
    chosen = np.full(n_nodes, _OTHER, dtype=np.int64)
    for c in (_EXECUTOR, _MEMCPY, _STREAM):  # the first class a node has wins: stream first
        has = np.bincount(node[cls == c], minlength=n_nodes) > 0
        chosen[has] = c
    counts = cls == chosen[node]

    if by == "node_name":
        key, keys = node, node_names
    else:
        op_codes, ops = _codes(ev["op"])
        keys = [*(str(o) for o in ops), "(none)"]
        key = np.where(op_codes < 0, len(ops), op_codes)
        if name_for_null_op:  # an event without an op is keyed by its node's name
            keys += node_names
            key = np.where(op_codes < 0, len(ops) + 1 + node, key)
    group = np.where(counts, key, -1)
    time = grouped_sum(dur, group, len(keys))
    n = np.bincount(key[counts], minlength=len(keys))
    used = np.flatnonzero(n)
    # "(none)" may also be an op's name: merge rows with the same key text.
    merged: dict[str, list[int]] = {}
    for i in used:
        sums = merged.setdefault(keys[i], [0, 0])
        sums[0] += int(time[i])
        sums[1] += int(n[i])
    if any(total > 2**63 - 1 for total, _ in merged.values()):
        raise OverflowError("an op's time counted once overflows int64")
    return pa.Table.from_arrays(
        [array(list(merged), pa.string()),
         array(np.array([v[0] for v in merged.values()], dtype=np.int64)),
         array(np.array([v[1] for v in merged.values()], dtype=np.int64))],
        schema=SCHEMA,
    )


def kind_stats(events: pa.Table, devices: pa.Table) -> pa.Table:
    """``op_stats`` per device kind (``Trace.op_stats(by="kind")``): every record of each
    kind, so a GPU op's executor record (its launch) and its stream record (the kernel) are in
    different rows. ``busy_ns`` is the union of the kind's intervals over all its blocks (the
    time any stream was busy); ``share`` is that over the trace's span; ``executor_ns`` and
    ``stream_ns`` are the executor and stream rows' totals; ``time_ns`` is ``total_ns``."""
    column = device_kind_column(events, devices)
    names = column.dictionary.to_pylist()
    codes = to_numpy(column.indices) if len(column) else np.zeros(0, np.int32)
    start = to_numpy(events.column("start_ns"))
    end = to_numpy(events.column("end_ns"))
    stats = group_stats(start, end, codes.astype(np.int64), len(names))
    span = int(np.maximum(end, start).max()) - int(start.min()) if len(start) else 0
    n = np.asarray(stats.n_events, dtype=np.int64)
    total = np.asarray(stats.total_ns, dtype=np.int64)
    busy = np.asarray(stats.busy_ns, dtype=np.int64)
    by_kind = list(zip(names, total.tolist(), strict=True))
    table = pa.table({
        "key": pa.array(names, pa.string()),
        "n_events": array(n, pa.int64()),
        "total_ns": array(total, pa.int64()),
        "mean_ns": pa.array(np.divide(total, np.maximum(n, 1), dtype=np.float64)),
        "max_ns": array(np.asarray(stats.max_ns, dtype=np.int64), pa.int64()),
        "busy_ns": array(busy, pa.int64()),
        "share": pa.array(busy / span if span > 0 else busy * 0.0, pa.float64()),
        "executor_ns": pa.array([t if k == "executor" else 0 for k, t in by_kind], pa.int64()),
        "stream_ns": pa.array([t if k == "stream" else 0 for k, t in by_kind], pa.int64()),
        "time_ns": array(total, pa.int64()),
    })
    return table.sort_by([("total_ns", "descending"), ("key", "ascending")])
