"""Comparing two runs: what got slower, what got faster, what appeared or went away.

    d = tracecore.diff("before.pbtxt", "after.pbtxt")   # paths or Traces, any formats
    d.ops            # per op: a_ns, b_ns, delta_ns, ratio, counts, shares; by |delta_ns|
    d.allocators     # per allocator: peak bytes in each run and the change
    print(d.summary())

An op's time in a run is counted once (:mod:`tracecore.optime`): per node, its GPU stream time
when it ran on streams (StepStats ``stream:N`` blocks), else its executor time, else its time on
the trace's other blocks (XSpace lines, Chrome trace tracks); ``stream:all`` and ``memcpy``
repeat the stream kernels and are not added. Devices: each block's total. Ops match by name
across formats (an event without an op, as most XSpace host events, by its node name): a
StepStats run against an XSpace or Chrome trace of the same model matches ops by type.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from ._arrow import array
from .checks import PathArg

if TYPE_CHECKING:
    from .trace import Trace

_BY = ("op", "node_name", "device", "kind")

DIFF_SCHEMA = pa.schema([
    ("key", pa.string()),
    ("a_ns", pa.int64()),
    ("b_ns", pa.int64()),
    ("delta_ns", pa.int64()),
    ("ratio", pa.float64()),
    ("a_count", pa.int64()),
    ("b_count", pa.int64()),
    ("a_share", pa.float64()),
    ("b_share", pa.float64()),
    ("only_in", pa.string()),
])

ALLOCATOR_SCHEMA = pa.schema([
    ("allocator", pa.string()),
    ("a_peak_bytes", pa.int64()),
    ("b_peak_bytes", pa.int64()),
    ("delta_bytes", pa.int64()),
    ("only_in", pa.string()),
])


def op_times(trace: Any, by: str = "op") -> dict[str, tuple[int, int]]:
    """``{key: (time_ns, count)}`` of a trace, each op's time counted once (module doc)."""
    if by not in _BY:
        raise ValueError(f"by must be one of {_BY}, not {by!r}")
    if by in ("device", "kind"):
        return {r["key"]: (r["total_ns"], r["n_events"]) for r in
                trace.op_stats(by=by).to_pylist() if r["n_events"] > 0}
    from .optime import counted_once

    once = counted_once(trace, by, name_for_null_op=True)
    return {k: (t, n) for k, t, n in zip(once["key"].to_pylist(), once["time_ns"].to_pylist(),
                                         once["n_events"].to_pylist(), strict=True)}


def _peaks(trace: Any) -> dict[str, int]:
    source = "in_use" if trace.kind in ("XSpace", "ChromeTrace", "Kineto") else "records"
    return {r["allocator"]: r["peak_bytes"] for r in trace.replay(source=source).peaks.to_pylist()}


@dataclass(frozen=True)
class TraceDiff:
    """What :func:`diff` returns."""

    ops: pa.Table  #: per key: DIFF_SCHEMA, sorted by |delta_ns| descending, then key
    allocators: pa.Table  #: per allocator: ALLOCATOR_SCHEMA, by |delta_bytes| descending
    a_total_ns: int
    b_total_ns: int
    by: str

    def summary(self, rows: int = 3) -> str:
        """One line per change that matters most: the total, then the largest ``rows``."""
        delta = self.b_total_ns - self.a_total_ns
        lines = [f"total {_signed_ms(delta)} ({self.a_total_ns / 1e6:.3f} ms -> "
                 f"{self.b_total_ns / 1e6:.3f} ms, summed {self.by} time)"]
        for r in self.ops.slice(0, rows).to_pylist():
            if r["delta_ns"] == 0:
                break
            where = f" (only in {r['only_in']})" if r["only_in"] else ""
            lines.append(f"  {r['key']} {_signed_ms(r['delta_ns'])}{where}")
        for r in self.allocators.slice(0, 1).to_pylist():
            if r["delta_bytes"]:
                lines.append(f"  peak memory of {r['allocator']!r} {r['delta_bytes']:+,d} bytes")
        return "\n".join(lines)


def _signed_ms(ns: int) -> str:
    return f"{ns / 1e6:+.3f} ms"


def _as_trace(x: Any) -> Any:
    from .trace import Trace

    if isinstance(x, Trace):
        return x
    if isinstance(x, (str, bytes, os.PathLike)):
        from .opening import open_trace

        return open_trace(x)
    raise TypeError(f"diff takes Traces or paths, not {type(x).__name__}")


def diff(a: Trace | PathArg, b: Trace | PathArg, *, by: str = "op") -> TraceDiff:
    """Compares two runs (Traces or paths to trace files) per op (``by="op"``), node
    (``"node_name"``) or device (``"device"``), and per allocator peak (module doc)."""
    ta, tb = _as_trace(a), _as_trace(b)
    times_a, times_b = op_times(ta, by), op_times(tb, by)
    total_a = sum(t for t, _ in times_a.values())
    total_b = sum(t for t, _ in times_b.values())
    rows: list[dict[str, Any]] = []
    for key in sorted(set(times_a) | set(times_b)):
        an, ac = times_a.get(key, (0, 0))
        bn, bc = times_b.get(key, (0, 0))
        only = "a" if key not in times_b else "b" if key not in times_a else None
        rows.append({
            "key": key, "a_ns": an, "b_ns": bn, "delta_ns": bn - an,
            "ratio": bn / an if an > 0 and only is None else None,
            "a_count": ac, "b_count": bc,
            "a_share": an / total_a if total_a else None,
            "b_share": bn / total_b if total_b else None,
            "only_in": only,
        })
    rows.sort(key=lambda r: (-abs(r["delta_ns"]), r["key"]))
    peaks_a, peaks_b = _peaks(ta), _peaks(tb)
    allocs: list[dict[str, Any]] = []
    for name in sorted(set(peaks_a) | set(peaks_b)):
        pa_, pb_ = peaks_a.get(name), peaks_b.get(name)
        allocs.append({
            "allocator": name, "a_peak_bytes": pa_, "b_peak_bytes": pb_,
            "delta_bytes": (pb_ or 0) - (pa_ or 0),
            "only_in": "a" if pb_ is None else "b" if pa_ is None else None,
        })
    allocs.sort(key=lambda r: (-abs(r["delta_bytes"]), r["allocator"]))
    return TraceDiff(_table(rows, DIFF_SCHEMA), _table(allocs, ALLOCATOR_SCHEMA),
                     total_a, total_b, by)


def _table(rows: list[dict[str, Any]], schema: pa.Schema) -> pa.Table:
    """Rows as a table, built with the package's array helper (pa.Table.from_pylist would
    import pandas)."""
    columns = []
    for f in schema:
        values = [r[f.name] for r in rows]
        if pa.types.is_string(f.type):
            columns.append(array(values, f.type))
        else:
            mask = np.array([v is None for v in values], dtype=bool)
            dtype = np.float64 if pa.types.is_floating(f.type) else np.int64
            data = np.array([0 if v is None else v for v in values], dtype=dtype)
            columns.append(array(data, f.type, mask=mask if mask.any() else None))
    return pa.Table.from_arrays(columns, schema=schema)
