"""Distributed-training analyses of a :class:`~tracecore.dataset.TraceSet`: the collective ops
of every rank and how long each rank waited in them, per rank and step times, stragglers.

See docs/many_traces.md for the definitions.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable
from typing import Any

import numpy as np
import pyarrow as pa

from ._arrow import to_numpy
from .intervals import group_stats
from .keying import Member, event_bounds, key_order
from .trace import Trace

#: Collective ops by kind; an event is a collective when its op matches one of these exactly
#: (or, for events without an op, when the last component of its node name starts with one).
COLLECTIVE_OPS = {
    "allreduce": r"HorovodAllreduce|HorovodGroupedAllreduce|NcclAllReduce"
    r"|CollectiveReduce(?:V2|V3)?"
    r"|CollectiveAllReduce(?:V2)?|MPIAllreduce|ncclAllReduce\w*|ncclKernel_AllReduce\w*"
    r"|nccl:all_reduce\w*",
    "allgather": r"HorovodAllgather|HorovodGroupedAllgather|NcclAllGather|CollectiveGather(?:V2)?"
    r"|MPIAllgather|ncclAllGather\w*|ncclKernel_AllGather\w*|nccl:(?:all_gather|_allgather_base)\w*",
    "broadcast": r"HorovodBroadcast|NcclBroadcast|CollectiveBcast(?:Send|Recv)(?:V2)?"
    r"|ncclBroadcast\w*|ncclKernel_Broadcast\w*|nccl:broadcast\w*",
    "alltoall": r"HorovodAlltoall|CollectiveAllToAll(?:V2|V3)?|ncclKernel_AllToAll\w*"
    r"|nccl:all_to_all\w*",
    "reducescatter": r"HorovodReducescatter|HorovodGroupedReducescatter|NcclReduceScatter"
    r"|CollectiveReduceScatter(?:V2)?|ncclReduceScatter\w*|ncclKernel_ReduceScatter\w*"
    r"|nccl:(?:reduce_scatter|_reduce_scatter_base)\w*",
    "reduce": r"NcclReduce|ncclReduce\w*|ncclKernel_Reduce\w*|nccl:reduce\b",
}
_KIND_OF_OP = [(kind, re.compile(rf"(?:{rx})(?:_.*)?")) for kind, rx in COLLECTIVE_OPS.items()]
_ANY_COLLECTIVE = "|".join(f"(?:{rx})" for rx in COLLECTIVE_OPS.values())
_OP_RX = re.compile(rf"(?:{_ANY_COLLECTIVE})")
_NAME_RX = re.compile(rf"(?:{_ANY_COLLECTIVE})(?:_.*)?")


def collectives(
    members: Iterable[Member],
    rank_type: pa.DataType,
    step_type: pa.DataType,
    pattern: str | None = None,
) -> pa.Table:
    """Every collective op instance of the traces ``members`` (see :meth:`TraceSet.collectives`)."""
    rx = re.compile(pattern) if pattern is not None else None
    rows: list[dict[str, Any]] = []
    for i, t, r, s, off in members:
        for ev in _collective_events(t, rx):
            ev.update(trace_id=i, rank=r, step=s)
            ev["start_ns"] -= off
            ev["end_ns"] -= off
            rows.append(ev)
    instances: dict[tuple[Any, str, int], list[dict[str, Any]]] = {}
    for ev in rows:
        instances.setdefault((ev["step"], ev["node_name"], ev["occurrence"]), []).append(ev)
    for same in instances.values():
        latest = max(m["start_ns"] for m in same)
        last = min(
            (m for m in same if m["start_ns"] == latest), key=lambda m: key_order(m["rank"])
        )
        for m in same:
            m["wait_ns"] = latest - m["start_ns"]
            m["n_ranks"] = len({x["rank"] for x in same})
            m["last_rank"] = last["rank"]
    rows.sort(
        key=lambda m: (
            key_order(m["step"]),
            m["node_name"],
            m["occurrence"],
            key_order(m["rank"]),
        )
    )

    def col(name: str) -> list[Any]:
        return [m[name] for m in rows]

    out = pa.table(
        {
            "trace_id": pa.array(col("trace_id"), pa.int32()),
            "rank": pa.array(col("rank"), rank_type),
            "step": pa.array(col("step"), step_type),
            "node_name": pa.array(col("node_name"), pa.string()),
            "op": pa.array(col("op"), pa.string()),
            "collective": pa.array(col("collective"), pa.string()),
            "occurrence": pa.array(col("occurrence"), pa.int32()),
            "device": pa.array(col("device"), pa.string()),
            "start_ns": pa.array(col("start_ns"), pa.int64()),
            "end_ns": pa.array(col("end_ns"), pa.int64()),
            "duration_ns": pa.array([m["end_ns"] - m["start_ns"] for m in rows], pa.int64()),
            "wait_ns": pa.array(col("wait_ns"), pa.int64()),
            "n_ranks": pa.array(col("n_ranks"), pa.int64()),
            "last_rank": pa.array(col("last_rank"), rank_type),
        }
    )
    return out

def step_times(
    members: Iterable[Member],
    rank_type: pa.DataType,
    step_type: pa.DataType,
    collectives: pa.Table,
) -> pa.Table:
    """Per rank and step of the traces ``members`` (see :meth:`TraceSet.step_times`), with
    ``collectives`` their :func:`collectives`."""
    coll = collectives
    by_trace: dict[int, list[tuple[int, int, int]]] = {}
    for tid, start, end, wait in zip(
        coll["trace_id"].to_pylist(),
        coll["start_ns"].to_pylist(),
        coll["end_ns"].to_pylist(),
        coll["wait_ns"].to_pylist(),
        strict=True,
    ):
        by_trace.setdefault(tid, []).append((start, end, wait))
    groups: dict[tuple[Any, Any], dict[str, Any]] = {}
    for i, t, r, s, off in members:
        g = groups.setdefault(
            (r, s), {"n_traces": 0, "n_events": 0, "start": None, "end": None, "coll": []}
        )
        g["n_traces"] += 1
        g["n_events"] += len(t)
        bounds = event_bounds(t.table("events"))
        if bounds is not None:
            start, end = bounds[0] - off, bounds[1] - off
            g["start"] = start if g["start"] is None else min(g["start"], start)
            g["end"] = end if g["end"] is None else max(g["end"], end)
        g["coll"].extend(by_trace.get(i, ()))
    keys = sorted(groups, key=lambda k: (key_order(k[0]), key_order(k[1])))
    rows = [groups[k] for k in keys]
    duration = [None if g["start"] is None else g["end"] - g["start"] for g in rows]
    # Per (rank, step): the union of its collective intervals and of its wait intervals.
    member = [k for k, g in enumerate(rows) for _ in g["coll"]]
    starts = [cs for g in rows for cs, _, _ in g["coll"]]
    ends = [ce for g in rows for _, ce, _ in g["coll"]]
    arrived = [cs + w for g in rows for cs, _, w in g["coll"]]
    collective_ns = group_stats(starts, ends, member, len(rows)).busy_ns.tolist()
    wait = group_stats(starts, arrived, member, len(rows)).busy_ns.tolist()
    return pa.table(
        {
            "rank": pa.array([k[0] for k in keys], rank_type),
            "step": pa.array([k[1] for k in keys], step_type),
            "n_traces": pa.array([g["n_traces"] for g in rows], pa.int64()),
            "n_events": pa.array([g["n_events"] for g in rows], pa.int64()),
            "start_ns": pa.array([g["start"] for g in rows], pa.int64()),
            "end_ns": pa.array([g["end"] for g in rows], pa.int64()),
            "duration_ns": pa.array(duration, pa.int64()),
            "collective_ns": pa.array(collective_ns, pa.int64()),
            "wait_ns": pa.array(wait, pa.int64()),
            "compute_ns": pa.array(
                [None if d is None else d - w for d, w in zip(duration, wait, strict=True)],
                pa.int64(),
            ),
        }
    )


def stragglers(
    step_times: pa.Table,
    rank_type: pa.DataType,
    step_type: pa.DataType,
    *,
    by: str = "compute",
    min_lag_ns: float = 0,
) -> pa.Table:
    """Per step, the slowest rank of ``step_times`` (see :meth:`TraceSet.stragglers`)."""
    if by not in ("compute", "duration"):
        raise ValueError(f"by must be 'compute' or 'duration', not {by!r}")
    st = step_times.to_pylist()
    per_step: dict[Any, list[dict[str, Any]]] = {}
    for row in st:
        if row["duration_ns"] is not None:
            per_step.setdefault(row["step"], []).append(row)
    metric = f"{by}_ns"
    out: list[dict[str, Any]] = []
    for step in sorted(per_step, key=key_order):
        rows = sorted(per_step[step], key=lambda x: key_order(x["rank"]))
        slowest = max(rows, key=lambda x: x[metric])  # first (smallest rank) among ties
        median = float(statistics.median(x[metric] for x in rows))
        lag = slowest[metric] - median
        if min_lag_ns > 0 and not lag > min_lag_ns:
            continue
        out.append(
            {
                "step": step,
                "n_ranks": len(rows),
                "slowest_rank": slowest["rank"],
                "slowest_ns": slowest[metric],
                "median_ns": median,
                "lag_ns": lag,
                "lag_ratio": lag / median if median else 0.0,
                "duration_ns": slowest["duration_ns"],
                "wait_ns": slowest["wait_ns"],
            }
        )
    return pa.table(
        {
            "step": pa.array([o["step"] for o in out], step_type),
            "n_ranks": pa.array([o["n_ranks"] for o in out], pa.int64()),
            "slowest_rank": pa.array([o["slowest_rank"] for o in out], rank_type),
            "slowest_ns": pa.array([o["slowest_ns"] for o in out], pa.int64()),
            "median_ns": pa.array([o["median_ns"] for o in out], pa.float64()),
            "lag_ns": pa.array([o["lag_ns"] for o in out], pa.float64()),
            "lag_ratio": pa.array([o["lag_ratio"] for o in out], pa.float64()),
            "duration_ns": pa.array([o["duration_ns"] for o in out], pa.int64()),
            "wait_ns": pa.array([o["wait_ns"] for o in out], pa.int64()),
        }
    )


def collective_kind(op: str) -> str:
    """The kind of collective ``op`` is (a key of :data:`COLLECTIVE_OPS`), else ``"other"``."""
    for kind, rx in _KIND_OF_OP:
        if rx.fullmatch(op):
            return kind
    return "other"


def _collective_events(trace: Trace, rx: re.Pattern[str] | None) -> list[dict[str, Any]]:
    """The collective events of one trace (raw clock), one dict per instance."""
    trace._ensure_core()  # a stored trace's tables are checked before they are read
    ev = trace.table("events")  # without the name columns (not needed here)
    if ev.num_rows == 0:
        return []
    ops = ev["op"].cast(pa.string()).to_pylist()
    names = ev["node_name"].cast(pa.string()).to_pylist()
    kinds_by_block = trace.devices["kind"].to_pylist()
    block = ev["device_index"].to_pylist()
    selected = []
    for row, (op, name) in enumerate(zip(ops, names, strict=True)):
        if rx is not None:
            hit = bool(rx.search(op or "") or rx.search(name))
        elif op is not None:
            hit = _OP_RX.fullmatch(op) is not None
        else:
            hit = _NAME_RX.fullmatch(name.rsplit("/", 1)[-1]) is not None
        if hit:
            selected.append(row)
    if not selected:
        return []
    starts = to_numpy(ev["start_ns"])
    ends = np.maximum(to_numpy(ev["end_ns"]), starts)
    devices = ev["device"].cast(pa.string()).to_pylist()
    by_name: dict[str, dict[bool, list[int]]] = {}
    # StepStats stream records are named "node:Op"; a Chrome trace's names are as written
    # ("nccl:all_reduce").
    suffixed = trace.format != "json"
    for row in selected:
        on_executor = kinds_by_block[block[row]] == "executor"
        keep = on_executor or not suffixed or ":" not in names[row]
        base = names[row] if keep else names[row].rsplit(":", 1)[0]
        by_name.setdefault(base, {True: [], False: []})[on_executor].append(row)
    out = []
    for base, rows in by_name.items():
        chosen = rows[True] or rows[False]
        chosen.sort(key=lambda i: (starts[i], i))
        for k, i in enumerate(chosen):
            op = ops[i] or base.rsplit("/", 1)[-1]
            out.append(
                {
                    "node_name": base,
                    "op": ops[i],
                    "collective": collective_kind(op),
                    "occurrence": k,
                    "device": devices[i],
                    "start_ns": int(starts[i]),
                    "end_ns": int(ends[i]),
                }
            )
    return out
