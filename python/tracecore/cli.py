"""The tracecore command line (``tracecore`` or ``python -m tracecore``).

    tracecore info PATH...|--sample          what is in a trace (or in each of several)
    tracecore top PATH... [--by op|node|device|kind|scope|phase|tower] [-n 20]
    tracecore memory PATH... [--allocator A] [--plot out.png]
    tracecore occupancy PATH... [--bin-us N] [--plot out.png]
    tracecore steps PATH...                  step times (per rank and step for several)
    tracecore stragglers PATH...             per step, the slowest rank and its lag
    tracecore collectives PATH...            collective instances per rank and their wait
    tracecore diff A B                       what changed between two runs
    tracecore export FILE --parquet DIR | --chrome OUT.json[.gz]
    tracecore bench FILE

A PATH is a trace file, a glob (expanded here, sorted) or a log directory; several make a
TraceSet (``tracecore.open_many``). The commands that print rows take ``--format
table|json|csv`` (JSON Lines: one object per row); the input format is ``--input-format``.
Every command takes ``--cache`` (open through the persisted index). Errors are one line on
stderr and a non-zero exit code: 2 for an invalid trace or bad arguments, 1 otherwise.
Set ``TRACECORE_DEBUG=1`` to get the traceback instead.
"""

from __future__ import annotations

import argparse
import builtins  # builtins.open: ``open`` here is tracecore.open
import csv
import gc
import glob
import json
import math
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ._arrow import buffer_bytes, checked_aggregate, to_numpy
from ._core import TraceFormatError
from ._version import __version__
from .checks import display_path
from .dataset import TraceSet, open_many
from .intervals import group_stats, grouped_sum
from .keying import file_keys, resolve_paths, stated_rank
from .logdir import event_files_below
from .opening import is_parquet_export, open_trace, sample_path
from .parquet import PARQUET_CODECS, parquet_files
from .parsing import FORMATS
from .plots import size_text as _size
from .profiles import find_profiles
from .toplevel import open
from .trace import Trace

_MB = 1e6


class UsageError(Exception):
    """A command line that cannot be run (exit code 2)."""


# --------------------------------------------------------------------------------------------
# Helpers


def _paths(args: argparse.Namespace) -> list[str]:
    """The paths the command line names: each glob expanded (sorted; one that matches nothing
    is a usage error naming it), ``--sample`` the bundled trace."""
    given = list(getattr(args, "paths", None) or [])
    if getattr(args, "file", None):  # export: one FILE
        given = [args.file]
    if getattr(args, "sample", False):
        if given:
            raise UsageError("give a trace FILE or --sample, not both")
        return [str(sample_path())]
    if not given:
        raise UsageError("give a trace FILE or --sample")
    paths: list[str] = []
    for path in given:
        if glob.has_magic(path) and not os.path.exists(path):
            matches = sorted(glob.glob(path, recursive=True))
            if not matches:
                raise UsageError(f"no file matches {path!r}")
            paths += matches
        else:
            paths.append(path)
    return paths


def _open_any(args: argparse.Namespace) -> Trace | TraceSet:
    """The trace the command line names; the TraceSet of several paths (``open_many``), or of a
    log directory or an event file (``open``)."""
    paths = _paths(args)
    if len(paths) == 1 and not _plain_directory(paths[0]):
        return open(paths[0], format=args.input_format, threads=args.threads, cache=args.cache,
                    progress=True)
    return open_many(paths, threads=args.threads, format=args.input_format)


def _plain_directory(path: str) -> bool:
    """A directory that is neither a Parquet export nor a profiler / TensorBoard log directory
    (``tracecore.open`` reads those) and holds trace files: they make a TraceSet
    (``open_many``). A directory without any is ``tracecore.open``'s to explain."""
    if not os.path.isdir(path) or is_parquet_export(path) or find_profiles(path) or (
            event_files_below(path)):
        return False
    try:
        resolve_paths([path])
    except ValueError:
        return False
    return True


def _open_set(args: argparse.Namespace) -> TraceSet:
    """A TraceSet of what the command line names; one trace is a set of one, keyed by its path
    as ``open_many`` keys it."""
    opened = _open_any(args)
    if isinstance(opened, TraceSet):
        return opened
    path = _paths(args)[0]
    ranks, rank_type, steps, step_type = file_keys([path], None, None, [stated_rank(opened)])
    size = os.stat(path).st_size if os.path.isfile(path) else None
    return TraceSet([path], [opened], [None], ranks, steps, rank_type, step_type, "step_start",
                    sizes=[size])


def _members(ts: TraceSet) -> list[tuple[str, Trace]]:
    """(path, trace) of every loaded trace of a set; each file that failed is one line on
    stderr."""
    out = []
    for row in ts.traces.to_pylist():
        if row["status"] == "ok":
            out.append((row["path"], ts.trace(row["trace_id"])))
        else:
            print(f"tracecore: skipped {row['path']}: {row['error']}", file=sys.stderr)
    return out


def _open(args: argparse.Namespace) -> Trace:
    """The trace the command line names; a log directory is a usage error that lists its
    profiles (export reads one trace)."""
    given = _paths(args)
    if len(given) > 1:  # a glob of several files: refused before any is read
        shown_paths = [display_path(p) for p in given]
        more = f" and {len(given) - 3} more" if len(given) > 3 else ""
        raise UsageError(
            f"{_count(len(given), 'file')} match ({', '.join(shown_paths[:3])}{more}); "
            f"tracecore {args.command} reads one trace: give one"
        )
    opened = _open_any(args)
    if isinstance(opened, TraceSet):
        paths = opened.traces["path"].to_pylist()
        more = f" and {len(paths) - 3} more" if len(paths) > 3 else ""
        (named,) = given  # export takes one FILE
        shown = display_path(named)
        what = ("a directory" if _plain_directory(named) else
                "a log directory" if os.path.isdir(named) else "an event file")
        raise UsageError(
            f"{shown} is {what} with "
            f"{_count(len(paths), 'trace')} ({', '.join(paths[:3])}{more}); "
            f"tracecore {args.command} reads one trace: give one profile or dump "
            f"('tracecore info {shown}' lists them)"
        )
    return opened


def _open_path(path: str) -> Trace:
    """One trace named on the command line (diff's runs): a TraceSet is a usage error."""
    opened = open(path, progress=True)
    if isinstance(opened, TraceSet):
        raise UsageError(f"{display_path(path)} holds {len(opened.traces)} traces; give one trace")
    return opened


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.3f}"


def _mb(n_bytes: float) -> str:
    return f"{n_bytes / _MB:.2f}"


def _count(n: int, noun: str) -> str:
    """``1 block``, ``7 blocks``."""
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _short(name: str, width: int) -> str:
    return name if len(name) <= width else "..." + name[-(width - 3) :]


def _print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], *, left: int = 1) -> None:
    """Prints ``rows`` under ``headers``, the first ``left`` columns left-aligned, others right."""
    cells = [[str(c) for c in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]

    def fmt(row: Sequence[str]) -> str:
        parts = [
            c.ljust(w) if i < left else c.rjust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ]
        return "  " + "  ".join(parts).rstrip()

    print(fmt(headers))
    for row in cells:
        print(fmt(row))


def _cell(value: Any) -> Any:
    """A JSON value: a NaN or infinite float is null (JSON has neither)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _emit(args: argparse.Namespace, rows: Sequence[dict[str, Any]],
          columns: Sequence[str]) -> bool:
    """Writes ``rows`` (their ``columns``) as JSON Lines or CSV when ``--format`` asks for it;
    False for ``--format table`` (the caller prints its table). Integers stay exact."""
    output = getattr(args, "output", "table")
    if output == "json":
        for r in rows:
            print(json.dumps({c: _cell(r.get(c)) for c in columns}, allow_nan=False))
        return True
    if output == "csv":
        w = csv.writer(sys.stdout, lineterminator="\n")
        w.writerow(columns)
        for r in rows:
            w.writerow([
                "" if v is None else json.dumps(v) if isinstance(v, (list, dict)) else v
                for v in (_cell(r.get(c)) for c in columns)
            ])
        return True
    return False


def _say(args: argparse.Namespace, *text: str) -> None:
    """A line of the table output (nothing with ``--format json|csv``)."""
    if getattr(args, "output", "table") == "table":
        print(*text)


def _print_columns(rows: Sequence[dict[str, Any]], columns: Sequence[str], *,
                   left: int = 1) -> None:
    """A table of ``columns``: ``*_ns`` columns in ms (``x_ns`` becomes ``x ms``), floats with
    3 decimals, None as ``-``."""
    headers = [c[:-3] + " ms" if c.endswith("_ns") else c for c in columns]

    def fmt(column: str, value: Any) -> str:
        if value is None:
            return "-"
        if column.endswith("_ns"):
            return _ms(value)
        if isinstance(value, float):
            return f"{value:.3f}"
        return str(value)

    _print_table(headers, [[fmt(c, r.get(c)) for c in columns] for r in rows], left=left)


def _t0(trace: Trace) -> int:
    from .plots import trace_start_ns

    return trace_start_ns(trace)


def device_summary(trace: Trace) -> list[dict[str, Any]]:
    """Per device (its blocks merged; a device repeats once per step in multi-step dumps):
    kind, blocks, events, busy_ns (summed over blocks), span_ns (its first start to its last
    end), utilization (busy / its own span), share (busy / the trace's span, as ``op_stats``'
    ``share`` and ``top``'s "% of trace") and the largest max_concurrency of its blocks."""
    occupancy = trace.occupancy()
    events = trace.table("events")
    rows: dict[str, dict[str, Any]] = {}
    for r in occupancy.to_pylist():
        row = rows.setdefault(
            r["device"],
            {
                "device": r["device"],
                "kind": r["kind"],
                "blocks": 0,
                "events": 0,
                "busy_ns": 0,
                "max_concurrency": 0,
            },
        )
        row["blocks"] += 1
        row["events"] += r["n_events"]
        row["busy_ns"] += r["busy_ns"]
        row["max_concurrency"] = max(row["max_concurrency"], r["max_concurrency"])
    # First start and last end per device (its blocks merged), by the group_stats engine.
    # Occupancy has one row per device block, in device_index order.
    position = {device: g for g, device in enumerate(rows)}
    device_of_block = np.array(
        [position[device] for device in occupancy["device"].to_pylist()], dtype=np.int64
    )
    stats = group_stats(
        to_numpy(events.column("start_ns")),
        to_numpy(events.column("end_ns")),
        device_of_block[to_numpy(events.column("device_index"))],
        len(rows),
    )
    trace_span = _span(events)
    for g, row in enumerate(rows.values()):
        has_events = int(stats.n_events[g]) > 0
        span = int(stats.last_end_ns[g]) - int(stats.first_start_ns[g]) if has_events else 0
        row["span_ns"] = span
        row["utilization"] = row["busy_ns"] / span if span > 0 else 0.0
        row["share"] = row["busy_ns"] / trace_span if trace_span > 0 else 0.0
    return list(rows.values())


def _peaks(trace: Trace) -> tuple[Any, Any, list[str]]:
    """Both replays and the allocators that hold memory in at least one of them (tensors
    without an allocator form a "" allocator that usually holds nothing)."""
    records = trace.replay(source="records")
    tensors = trace.replay(source="tensors")
    allocators = [
        a
        for a in sorted(set(records.allocators) | set(tensors.allocators))
        if any(a in r.allocators and r.peak(a)["peak_bytes"] > 0 for r in (records, tensors))
    ]
    return records, tensors, allocators


def _print_peaks(trace: Trace, records: Any, tensors: Any, allocators: Sequence[str]) -> None:
    t0 = _t0(trace)
    rows = []
    for name in allocators:
        cells: list[Any] = [name or "(none)"]
        for replay in (records, tensors):
            if name in replay.allocators:
                p = replay.peak(name)
                at = _ms(p["peak_time_ns"] - t0) if p["peak_bytes"] else "-"
                cells += [_size(p["peak_bytes"]), at, p["live_tensors"]]
            else:
                cells += ["-", "-", "-"]
        rows.append(cells)
    _print_table(
        ["allocator", "records peak", "at ms", "live", "tensors peak", "at ms", "live"], rows
    )


# --------------------------------------------------------------------------------------------
# Commands


def _line_summary(trace: Trace) -> list[dict[str, Any]]:
    """Per XSpace line (a devices row): plane, line, line_id, kind, events, busy_ns."""
    busy = trace.occupancy()["busy_ns"].to_pylist()  # one row per devices row, in its order
    columns = ["device", "line", "line_id", "kind", "n_events"]
    rows: list[dict[str, Any]] = trace.devices.select(columns).to_pylist()
    for row, busy_ns in zip(rows, busy, strict=True):
        row["busy_ns"] = busy_ns
    return rows


def _print_lines(trace: Trace) -> None:
    lines = _line_summary(trace)
    planes = list(dict.fromkeys(r["device"] for r in lines))
    print(f"planes and lines ({_count(len(planes), 'plane')}, {_count(len(lines), 'line')})")
    _print_table(
        ["plane", "line", "line id", "kind", "events", "busy ms"],
        [
            [
                _short(r["device"], 40),
                _short(r["line"] or "", 60),
                r["line_id"],
                r["kind"],
                r["n_events"],
                _ms(r["busy_ns"]),
            ]
            for r in lines
        ],
        left=2,
    )


def _set_summary(ts: TraceSet) -> str:
    """What a log directory's set holds, in a line: traces, runs, hosts, tags, steps, events."""
    traces = ts.traces.to_pylist()

    def distinct(column: str) -> int:
        return len({r[column] for r in traces if r[column] is not None})

    # A log directory's set has run, host and tag labels; open_many's has ranks.
    keys = ("run", "host", "tag") if "run" in ts.traces.column_names else ("rank",)
    return (
        f"{_count(len(traces), 'trace')} ({ts.n_traces} loaded): "
        + "".join(f"{_count(distinct(k), k)}, " for k in keys)
        + f"{_count(distinct('step'), 'step')}, {_count(len(ts), 'event')}"
    )


_INFO_COLUMNS = ["path", "kind", "format", "size", "n_events", "blocks", "span_ns", "status",
                 "error"]


def _info_rows(ts: TraceSet) -> tuple[list[dict[str, Any]], list[str]]:
    """``info --format json|csv`` of a set: its ``traces`` rows with ``blocks`` and
    ``span_ns``; and the columns."""
    rows = ts.traces.to_pylist()
    for r in rows:
        ok = r["status"] == "ok"
        t = ts.trace(r["trace_id"]) if ok else None
        r["blocks"] = t.devices.num_rows if t is not None else None
        r["span_ns"] = _span(t.table("events")) if t is not None else None
    keys = [c for c in ts.traces.column_names if c not in _INFO_COLUMNS]
    return rows, ["path", *keys, *_INFO_COLUMNS[1:]]


def _info_set(ts: TraceSet, path: str | None, args: argparse.Namespace) -> int:
    """``info`` of several traces, a log directory or an event file: one row per trace found
    (a file named, a RunMetadata of an event file, an XSpace profile)."""
    if args.output != "table":
        rows, columns = _info_rows(ts)
        _emit(args, rows, columns)
        return 0
    traces = ts.traces.to_pylist()
    if path is None:
        base = ""
        print(f"traces         {_set_summary(ts)}")
    else:
        root = display_path(path)
        base = root if os.path.isdir(path) else os.path.dirname(root)
        print(f"{'log directory' if os.path.isdir(path) else 'event file'}  {root}")
        print(f"traces         {_set_summary(ts)}")
    print()
    # A log directory's labels, else open_many's rank and step (and the kind of each file).
    keys = (["run", "host", "tag", "step", "source"] if "run" in ts.traces.column_names
            else ["rank", "step", "kind"])
    _print_table(
        [*keys, "file", "events", "blocks", "size", "status"],
        [
            [
                *(r[k] if r[k] is not None else "-" for k in keys),
                os.path.relpath(r["path"], base) if base else r["path"],
                "-" if r["n_events"] is None else r["n_events"],
                ts.trace(r["trace_id"]).devices.num_rows if r["status"] == "ok" else "-",
                "-" if r["size"] is None else _size(r["size"]),
                r["status"],
            ]
            for r in traces
        ],
        left=len(keys) + 1,
    )
    for r in traces:
        if r["error"] is not None:
            print(f"error: {r['error']}")
    graph_only = [r for r in traces if r["status"] == "ok" and r["n_events"] == 0]
    if graph_only:
        print()
        print(f"{_count(len(graph_only), 'RunMetadata')} with no step stats (graphs only): "
              f"{', '.join(str(r['tag']) for r in graph_only[:5])}")
    print()
    print("'tracecore info FILE' shows one profile's planes and lines; 'tracecore top' of the "
          "same paths ranks ops over every trace")
    return 0


def _top_set(ts: TraceSet, args: argparse.Namespace) -> int:
    """``top`` of several traces, a log directory or an event file: each trace's rows as
    ``top`` of it alone ranks them (an XSpace's device streams, else its host threads: not the
    lines that repeat them), summed over the traces; ``share`` is the summed busy time over the
    summed spans."""
    paths = _paths(args)
    where = display_path(paths[0]) if len(paths) == 1 else _count(len(paths), "path")
    _say(args, f"{where}: {_set_summary(ts)}")
    by = _BY[args.by]
    parts, span, stepstats = [], 0, False
    for _, t in _members(ts):
        if by in _DERIVED:
            part = derived_op_stats(t, by)
        elif by == "kind":
            part = t.op_stats(by="kind")
        elif t.kind == "XSpace":
            _, lines = xspace_top_lines(t)
            part = xspace_op_stats(t, by, lines)
        else:
            stepstats = True
            part = t.op_stats(by=by)
        span += _span(t.table("events"))
        for column in ("executor_ns", "stream_ns"):
            if column not in part.column_names:
                part = part.append_column(column, pa.array([0] * part.num_rows, pa.int64()))
        if "time_ns" not in part.column_names:
            part = part.append_column("time_ns", part["total_ns"])
        parts.append(part.select(["key", "n_events", "total_ns", "max_ns", "busy_ns",
                                  "executor_ns", "stream_ns", "time_ns"]))
    columns = ["n_events", "total_ns", "busy_ns", "executor_ns", "stream_ns", "time_ns"]
    if parts:
        agg = checked_aggregate(pa.concat_tables(parts), ["key"],
                                [(c, "sum") for c in columns] + [("max_ns", "max")])
        stats = pa.table({"key": agg["key"], **{c: agg[f"{c}_sum"] for c in columns},
                          "max_ns": agg["max_ns_max"]})
    else:
        stats = pa.table({"key": pa.array([], pa.string()),
                          **{c: pa.array([], pa.int64()) for c in [*columns, "max_ns"]}})
    total = to_numpy(stats["total_ns"]).astype(np.float64)
    busy = to_numpy(stats["busy_ns"]).astype(np.float64)
    n = np.maximum(to_numpy(stats["n_events"]).astype(np.float64), 1)
    stats = stats.append_column("mean_ns", pa.array(total / n))
    stats = stats.append_column("share", pa.array(busy / span if span > 0 else busy * 0))
    stats = stats.sort_by([("total_ns", "descending"), ("key", "ascending")])
    _print_top(args, stats, executor_stream=stepstats)
    return 0


def _cmd_info(args: argparse.Namespace) -> int:
    opened = _open_any(args)
    if isinstance(opened, TraceSet):
        paths = _paths(args)
        return _info_set(opened, paths[0] if len(paths) == 1 else None, args)
    t = opened
    s = t.stats
    if args.output != "table":
        path = _paths(args)[0]
        row = {"path": display_path(path), "kind": t.kind, "format": t.format,
               "size": os.stat(path).st_size if os.path.isfile(path) else None,
               "n_events": len(t),
               "blocks": t.devices.num_rows, "span_ns": _span(t.table("events")),
               "status": "ok", "error": None}
        _emit(args, [row], _INFO_COLUMNS)
        return 0
    mb = s["bytes"] / _MB
    print(f"file      {t.source}")
    print(f"kind      {t.kind} ({t.format}), {_size(s['bytes'])}")
    secs = s["parse_seconds"]
    rate = f"{mb / secs:.0f} MB/s, {s['events'] / secs:,.0f} events/s" if secs > 0 else "-"
    print(
        f"parsed    {s['events']} events, {s['tensors']} tensors, {s['alloc_records']} allocation "
        f"records in {secs * 1e3:.1f} ms ({rate})"
    )
    if s.get("loaded_from"):
        print(f"loaded    from {s['loaded_from']} in {s['load_seconds'] * 1e3:.1f} ms")
    if s.get("unknown_fields"):
        print(f"skipped   {s['unknown_fields']} unknown fields")
    events = t.table("events")
    if events.num_rows:
        span = int(pc.max(events["end_ns"]).as_py()) - _t0(t)
        print(f"span      {_ms(span)} ms")
    print()
    devices = device_summary(t)
    print(f"devices ({_count(t.devices.num_rows, 'block')})")
    _print_table(
        ["device", "kind", "blocks", "events", "busy ms", "% of trace", "max conc"],
        [
            [
                _short(d["device"], 56),
                d["kind"],
                d["blocks"],
                d["events"],
                _ms(d["busy_ns"]),
                f"{d['share'] * 100:.1f}",
                d["max_concurrency"],
            ]
            for d in devices
        ],
        left=2,
    )
    if t.kind == "XSpace":
        print()
        _print_lines(t)
        replay = t.replay(source="in_use")
        if replay.allocators:
            print()
            print("allocators (peak of heap + stack in use, as reported; 'tracecore memory' "
                  "has more)")
            t0 = _t0(t)
            _print_table(
                ["allocator", "peak", "at ms", "live"],
                [[a or "(none)", _size(replay.peak(a)["peak_bytes"]),
                  _ms(replay.peak(a)["peak_time_ns"] - t0), replay.peak(a)["live_tensors"]]
                 for a in replay.allocators],
            )
        return 0
    records, tensors, allocators = _peaks(t)
    if allocators:
        print()
        print("allocators (peak memory: allocation-record replay / timeline.py tensor model)")
        print("  records: what the allocator held, from its own records; tensors: timeline.py's")
        print("  figure (tensor lifetimes), what TensorBoard showed for the step")
        _print_peaks(t, records, tensors, allocators)
    return 0


# Group keys of `top --by`: "node" is short for Trace.op_stats's "node_name", which is taken too;
# scope, phase and tower group every event by a name-derived column (_DERIVED). diff takes the
# keys of compare.diff (_DIFF_BY).
_BY = {"op": "op", "node": "node_name", "node_name": "node_name", "device": "device",
       "kind": "kind", "scope": "scope", "phase": "phase", "tower": "tower"}
_DIFF_BY = ("op", "node", "node_name", "device", "kind")
_DERIVED = ("scope", "phase", "tower")


def derived_op_stats(trace: Trace, by: str) -> pa.Table:
    """``top --by scope|phase|tower`` of one trace: every event grouped by
    :func:`tracecore.names.event_group_keys` (events without a tower are in no row), with
    ``op_stats``' columns key, n_events, total_ns, mean_ns, max_ns, busy_ns (union of the
    group's intervals) and share (busy / the trace's span). Sorted by total_ns descending,
    then key."""
    from .names import event_group_keys

    keys = event_group_keys(trace.events, by)
    encoded = pc.dictionary_encode(keys)
    distinct = encoded.dictionary.cast(pa.string())
    group = to_numpy(encoded.indices, -1).astype(np.int64)
    events = trace.events
    stats = group_stats(to_numpy(events["start_ns"]), to_numpy(events["end_ns"]), group,
                        len(distinct))
    table = _stats_table(distinct, stats, _span(trace.table("events")))
    return table.filter(pa.array(stats.n_events > 0))


def xspace_top_lines(trace: Trace) -> tuple[str, list[int]]:
    """What ``top`` ranks in an XSpace: the device-stream lines (kind ``stream`` on a
    ``/device:`` plane) when there are any, else the host threads (kind ``host_thread``).
    Returns what was chosen ("device streams" or "host threads") and those devices rows."""
    devices = trace.devices.select(["device", "kind"]).to_pylist()
    streams = [
        i
        for i, d in enumerate(devices)
        if d["kind"] == "stream" and str(d["device"]).startswith("/device:")
    ]
    if streams:
        return "device streams", streams
    return "host threads", [i for i, d in enumerate(devices) if d["kind"] == "host_thread"]


def events_on_lines(trace: Trace, rows: list[int]) -> pa.Table:
    """The events of the devices rows ``rows`` (XSpace lines)."""
    trace._ensure_core()  # a stored trace's tables are checked before they are read
    events = trace.table("events")
    device_index = to_numpy(events["device_index"]).astype(np.int64)
    chosen = np.zeros(trace.devices.num_rows, dtype=bool)
    chosen[rows] = True
    mask = chosen[device_index] if len(device_index) else np.zeros(0, dtype=bool)
    return events.filter(pa.array(mask, pa.bool_()))


def _span(events: pa.Table) -> int:
    """From the first start to the last end (an end before its start counts as the start)."""
    if events.num_rows == 0:
        return 0
    start = to_numpy(events["start_ns"])
    return int(np.maximum(to_numpy(events["end_ns"]), start).max()) - int(start.min())


def xspace_op_stats(trace: Trace, by: str, rows: list[int]) -> pa.Table:
    """``op_stats`` of the events on the devices ``rows`` only (XSpace lines): key (``op``
    with ``(none)`` for a null op, ``node_name``, or ``device`` = plane and line name),
    n_events, total_ns, mean_ns, max_ns, busy_ns (union of the key's intervals) and share
    (busy / the trace's span, as everywhere). Sorted by total_ns descending, then key."""
    picked = events_on_lines(trace, rows)
    if by == "device":
        devices = trace.devices.select(["device", "line"]).to_pylist()
        names = [f"{d['device']} {d['line'] or ''}".rstrip() for d in devices]
        keys = [names[i] for i in to_numpy(picked["device_index"]).tolist()]
    elif by == "op":
        keys = [k if k is not None else "(none)" for k in picked["op"].to_pylist()]
    else:
        keys = [str(k) for k in picked["node_name"].to_pylist()]
    distinct = sorted(set(keys))
    position = {k: g for g, k in enumerate(distinct)}
    start = to_numpy(picked["start_ns"])
    end = to_numpy(picked["end_ns"])
    group = np.array([position[k] for k in keys], dtype=np.int64)
    stats = group_stats(start, end, group, len(distinct))
    return _stats_table(pa.array(distinct, pa.string()), stats, _span(trace.table("events")))


def _stats_table(keys: pa.Array, stats: Any, span: int) -> pa.Table:
    """``op_stats``' columns from a group_stats result, one row per key: key, n_events,
    total_ns, mean_ns, max_ns, busy_ns and share (busy / ``span``). Sorted by total_ns
    descending, then key."""
    busy = stats.busy_ns.astype(np.float64)
    n = stats.n_events.astype(np.float64)
    table = pa.table(
        {
            "key": keys,
            "n_events": pa.array(stats.n_events, pa.int64()),
            "total_ns": pa.array(stats.total_ns, pa.int64()),
            "mean_ns": pa.array(stats.total_ns.astype(np.float64) / np.maximum(n, 1)),
            "max_ns": pa.array(stats.max_ns, pa.int64()),
            "busy_ns": pa.array(stats.busy_ns, pa.int64()),
            "share": pa.array(busy / span if span > 0 else np.zeros_like(busy)),
        }
    )
    return table.sort_by([("total_ns", "descending"), ("key", "ascending")])


def _top_xspace(t: Trace, args: argparse.Namespace) -> int:
    chosen, rows = xspace_top_lines(t)
    stats = xspace_op_stats(t, _BY[args.by], rows)
    chosen_devices = t.devices["device"].take(pa.array(rows, pa.int64()))
    planes = sorted({str(p) for p in chosen_devices.to_pylist()})
    what = (
        "device-stream time (stream lines of /device: planes)"
        if chosen == "device streams"
        else "host op time (host_thread lines; no /device: plane with stream lines)"
    )
    _say(args, f"ranking {what}: {_count(len(rows), 'line')} on {', '.join(planes) or 'no plane'}")
    _print_top(args, stats, executor_stream=False)
    return 0


def _print_top(args: argparse.Namespace, stats: pa.Table, *, executor_stream: bool) -> None:
    """The first ``-n`` rows of an op_stats table; ``executor_stream`` (StepStats): ranked by
    ``time_ns``, each op's time counted once (stream time for GPU work, else executor time),
    with the executor, stream and all-records columns beside it. ``--format json|csv``: every
    row (the first ``-n`` when given), keyed by the --by column."""
    once = executor_stream and _BY[args.by] not in ("device", "kind", *_DERIVED)
    if once:
        stats = stats.sort_by([("time_ns", "descending"), ("key", "ascending")])
    if args.output != "table":
        key = _BY[args.by]
        columns = [key, "n_events", "total_ns", "mean_ns", "max_ns", "busy_ns", "share"]
        if executor_stream:
            columns += ["executor_ns", "stream_ns", "time_ns"]
        shown = stats if args.n is None else stats.slice(0, args.n)
        rows = [{key: r.pop("key"), **r} for r in shown.to_pylist()]
        _emit(args, rows, columns)
        return
    rows = stats.slice(0, args.n or 20).to_pylist()
    order = ("time counted once: stream, else executor records" if once
             else "total time")
    print(f"top {len(rows)} of {stats.num_rows} by {args.by} (sorted by {order})")
    headers = [args.by, "events", "time ms" if once else "total ms", "mean us", "max us",
               "busy ms", "% of trace"]
    if executor_stream:
        headers += ["executor ms", "stream ms", "all records ms"]
    cells = []
    for r in rows:
        row = [
            _short(r["key"], args.width),
            r["n_events"],
            _ms(r["time_ns"] if once else r["total_ns"]),
            f"{r['mean_ns'] / 1e3:.1f}",
            f"{r['max_ns'] / 1e3:.1f}",
            _ms(r["busy_ns"]),
            f"{r['share'] * 100:.1f}",
        ]
        if executor_stream:
            row += [_ms(r["executor_ns"]), _ms(r["stream_ns"]), _ms(r["total_ns"])]
        cells.append(row)
    _print_table(headers, cells)


def _cmd_top(args: argparse.Namespace) -> int:
    opened = _open_any(args)
    if isinstance(opened, TraceSet):
        return _top_set(opened, args)
    t = opened
    if args.by in _DERIVED:
        _say(args, f"time per {args.by}: every event of the trace, grouped by its name-derived "
             f"{args.by}" + (" (events outside a tower_N / replica_N are in no row)"
                              if args.by == "tower" else ""))
        _print_top(args, derived_op_stats(t, args.by), executor_stream=False)
        return 0
    if args.by == "kind":
        _say(args, "time per device kind: every record of each kind (a GPU op's launch on the "
             "executor and its kernel on a stream are in different rows)")
        _print_top(args, t.op_stats(by="kind"), executor_stream=False)
        return 0
    if t.kind == "XSpace":
        return _top_xspace(t, args)
    _print_top(args, t.op_stats(by=_BY[args.by]), executor_stream=True)
    return 0


def _cmd_diff(args: argparse.Namespace) -> int:
    from .compare import diff

    by = _BY[args.by]
    d = diff(_open_path(args.a), _open_path(args.b), by=by)
    rows = d.ops.to_pylist()
    if args.output != "table":
        rows = [{by: r.pop("key"), **r} for r in rows]
        _emit(args, rows if args.n is None else rows[: args.n], [by, *d.ops.column_names[1:]])
        return 0
    print(d.summary())
    print()
    shown = rows[: args.n or 20]
    _print_table(
        [by, "a ms", "b ms", "delta ms", "ratio", "a n", "b n"],
        [[_short(r["key"], args.width), _ms(r["a_ns"]), _ms(r["b_ns"]),
          f"{r['delta_ns'] / 1e6:+.3f}", f"{r['ratio']:.2f}x" if r["ratio"] is not None else
          f"only {r['only_in']}" if r["only_in"] else "-", r["a_count"], r["b_count"]]
         for r in shown],
    )
    if d.allocators.num_rows:
        print()
        _print_table(
            ["allocator", "a peak", "b peak", "delta"],
            [[r["allocator"] or "(none)",
              _size(r["a_peak_bytes"]) if r["a_peak_bytes"] is not None else "-",
              _size(r["b_peak_bytes"]) if r["b_peak_bytes"] is not None else "-",
              f"{r['delta_bytes']:+,d} B"] for r in d.allocators.to_pylist()],
        )
    return 0


def _check_plot(args: argparse.Namespace) -> None:
    """A --plot that cannot be written fails before the trace is read."""
    if args.plot:
        from .plots import check_plot_path

        try:
            check_plot_path(args.plot)
        except (ValueError, OSError) as e:  # a bad --plot is a bad command line (exit 2)
            raise UsageError(str(e)) from None


def _memory_in_use(t: Trace, args: argparse.Namespace) -> int:
    """``memory`` of an XSpace: what each allocator reported (``replay(source="in_use")``,
    XProf's memory profile figures) and the allocations live at its peak."""
    replay = t.replay(source="in_use")
    if args.allocator is not None and args.allocator not in replay.allocators:
        names = ", ".join(repr(a) for a in replay.allocators) or "none"
        raise UsageError(f"no allocator {args.allocator!r}; allocators: {names}")
    if not replay.allocators:
        print("no memory held (no MemoryAllocation / MemoryDeallocation events)")
        return 0
    shown = [args.allocator] if args.allocator is not None else replay.allocators
    t0 = _t0(t)
    print("peak memory per allocator (heap + stack in use, as the allocator reported it)")
    rows = []
    for name in shown:
        p = replay.peak(name)
        lifetime = p["lifetime_peak_bytes"]
        rows.append([name or "(none)", _size(p["peak_bytes"]), _ms(p["peak_time_ns"] - t0),
                     _size(p["heap_allocated"] or 0), _size(p["stack_reserved"] or 0),
                     _size(p["free"]) if p["free"] is not None else "-",
                     _size(lifetime) if lifetime is not None else "-", p["live_tensors"]])
    _print_table(["allocator", "peak", "at ms", "heap", "stack", "free", "lifetime peak",
                  "live"], rows)
    focus = args.allocator if args.allocator is not None else max(
        shown, key=lambda a: replay.peak(a)["peak_bytes"])
    live = replay.live_at_peak(focus)
    print()
    print(f"live at the {focus or '(none)'} peak: {live.num_rows} allocations, "
          f"{_size(_checked_total(live['bytes']))}; largest {min(args.n, live.num_rows)}:")
    if live.num_rows:
        order = pc.sort_indices(live, sort_keys=[("bytes", "descending"), ("time_ns", "ascending")])
        _print_table(
            ["op", "dtype", "shape", "bytes"],
            [[_short(r["tf_op"] or r["node_name"], 64), r["dtype"] or "-", _shape(r["shape"]),
              _size(r["bytes"])] for r in live.take(order[: args.n]).to_pylist()],
            left=3,
        )
    if args.plot:
        from .plots import plot_memory

        out = plot_memory(t, args.plot, allocator=args.allocator)
        print(f"\nwrote {out}")
    return 0


_MEMORY_COLUMNS = ["trace", "allocator", "source", "peak_bytes", "peak_time_ns",
                   "live_tensors"]


def _memory_rows(path: str, t: Trace, allocator: str | None) -> list[dict[str, Any]]:
    """``memory --format json|csv`` of one trace: per allocator (or only ``allocator``) and
    replay source (``records`` and ``tensors`` for StepStats, ``in_use`` for XSpace), its peak
    bytes, the peak's time (the trace's clock) and what was live then."""
    if t.kind == "XSpace":
        in_use = t.replay(source="in_use")
        replays = [("in_use", in_use)]
        names = list(in_use.allocators)
    else:
        records, tensors, names = _peaks(t)
        replays = [("records", records), ("tensors", tensors)]
    if allocator is not None:
        names = [allocator]
    rows = []
    for name in names:
        for source, replay in replays:
            if name in replay.allocators:
                p = replay.peak(name)
                rows.append({"trace": path, "allocator": name, "source": source,
                             "peak_bytes": p["peak_bytes"], "peak_time_ns": p["peak_time_ns"],
                             "live_tensors": p["live_tensors"]})
    return rows


def _traces(args: argparse.Namespace) -> list[tuple[str, Trace]]:
    """(path, trace) of every trace the command line names (memory, occupancy)."""
    opened = _open_any(args)
    if isinstance(opened, TraceSet):
        return _members(opened)
    return [(display_path(_paths(args)[0]), opened)]


def _sections(args: argparse.Namespace, traces: list[tuple[str, Trace]]) -> None:
    """Checks that a --plot names one trace."""
    if getattr(args, "plot", None) and len(traces) > 1:
        raise UsageError(f"--plot draws one trace; these paths hold {len(traces)}")


def _cmd_memory(args: argparse.Namespace) -> int:
    _check_plot(args)
    traces = _traces(args)
    _sections(args, traces)
    if args.output != "table":
        rows = [r for path, t in traces for r in _memory_rows(path, t, args.allocator)]
        if args.allocator is not None and not rows:
            raise UsageError(f"no allocator {args.allocator!r} in these traces")
        _emit(args, rows, _MEMORY_COLUMNS)
        return 0
    code = 0
    for i, (path, t) in enumerate(traces):
        if len(traces) > 1:
            print(("\n" if i else "") + f"== {path}")
        code = max(code, _memory_one(t, args))
    return code


def _memory_one(t: Trace, args: argparse.Namespace) -> int:
    if t.kind == "XSpace":
        return _memory_in_use(t, args)
    records, tensors, allocators = _peaks(t)
    known = sorted(set(records.allocators) | set(tensors.allocators))
    if args.allocator is not None and args.allocator not in known:
        names = (
            ", ".join(repr(a) if a else "'' (tensors without an allocator)" for a in known)
            or "none"
        )
        raise UsageError(f"no allocator {args.allocator!r}; allocators: {names}")
    if not allocators and args.allocator is None:
        print("no memory held (no allocation records and no output tensors with bytes)")
        return 0
    shown = [args.allocator] if args.allocator is not None else allocators
    print("peak memory per allocator (allocation-record replay / timeline.py tensor model)")
    _print_peaks(t, records, tensors, shown)
    # What is live at the peak: the allocator asked for, else the one with the largest peak.
    focus = (
        args.allocator
        if args.allocator is not None
        else max(
            (a for a in allocators if a in tensors.allocators),
            key=lambda a: tensors.peak(a)["peak_bytes"],
            default=None,
        )
    )
    if focus is not None and focus in tensors.allocators:
        live = tensors.live_at_peak(focus)
        print()
        requested = _checked_total(live["requested_bytes"])
        print(
            f"live at the {focus or '(none)'} peak (tensor model): {live.num_rows} tensors, "
            f"{_size(requested)} requested; largest {min(args.n, live.num_rows)}:"
        )
        if live.num_rows:
            order = pc.sort_indices(
                live, sort_keys=[("requested_bytes", "descending"), ("tensor_name", "ascending")]
            )
            top = live.take(order[: args.n]).to_pylist()
            _print_table(
                ["tensor", "dtype", "shape", "requested"],
                [
                    [
                        _short(r["tensor_name"], 64),
                        r["dtype"],
                        _shape(r["shape"]),
                        _size(r["requested_bytes"]),
                    ]
                    for r in top
                ],
                left=3,
            )
    if focus is not None and focus in records.allocators:
        live = records.live_at_peak(focus)
        held = _checked_total(live["bytes"])
        print()
        print(
            f"allocation records up to the {focus or '(none)'} record peak: {live.num_rows} "
            f"positive records, {_size(held)} allocated"
        )
    if args.plot:
        from .plots import plot_memory

        out = plot_memory(t, args.plot, allocator=args.allocator)
        print(f"\nwrote {out}")
    return 0


def _shape(dims: list[int] | None) -> str:
    if dims is None:
        return "?"
    return "x".join(map(str, dims)) or "()"


_RAMP = " .:-=+*#%@"


def _strip(fractions: np.ndarray) -> str:
    idx = np.minimum((fractions * (len(_RAMP) - 1) + 0.5).astype(int), len(_RAMP) - 1)
    idx[(fractions > 0) & (idx == 0)] = 1  # any busy time shows
    return "".join(_RAMP[i] for i in idx)


_OCCUPANCY_COLUMNS = ["trace", "device", "kind", "blocks", "events", "busy_ns", "span_ns",
                      "utilization", "share", "max_concurrency"]


def _cmd_occupancy(args: argparse.Namespace) -> int:
    _check_plot(args)
    traces = _traces(args)
    _sections(args, traces)
    if args.output != "table":
        rows = [{"trace": path, **d} for path, t in traces for d in device_summary(t)]
        _emit(args, rows, _OCCUPANCY_COLUMNS)
        return 0
    for i, (path, t) in enumerate(traces):
        if len(traces) > 1:
            print(("\n" if i else "") + f"== {path}")
        _occupancy_one(t, args)
    return 0


def _occupancy_one(t: Trace, args: argparse.Namespace) -> None:
    devices = device_summary(t)
    print(
        f"busy time per device ({_count(t.devices.num_rows, 'block')}; busy summed over each "
        f"device's blocks; % of span: busy / the device's span, first start to last end; "
        f"% of trace: busy / the trace's span, as in info and top)"
    )
    _print_table(
        ["device", "kind", "blocks", "events", "busy ms", "span ms", "% of span", "% of trace",
         "max conc"],
        [
            [
                _short(d["device"], 56),
                d["kind"],
                d["blocks"],
                d["events"],
                _ms(d["busy_ns"]),
                _ms(d["span_ns"]),
                f"{d['utilization'] * 100:.1f}",
                f"{d['share'] * 100:.1f}",
                d["max_concurrency"],
            ]
            for d in devices
        ],
        left=2,
    )
    if args.bin_us is not None:
        from .plots import device_bins

        names, grid, _ = device_bins(t, args.bin_us * 1000)
        n_bins = grid.shape[1] if grid.size else 0
        shown = min(n_bins, args.max_bins)
        print()
        print(
            f"utilization timeline, {args.bin_us} us bins ({n_bins} bins"
            + (f", first {shown} shown" if shown < n_bins else "")
            + f"; scale '{_RAMP}' = 0..100%)"
        )
        width = max((len(_short(n, 56)) for n in names), default=0)
        for name, row in zip(names, grid, strict=True):
            print(f"  {_short(name, 56).ljust(width)}  |{_strip(row[:shown])}|")
    if args.plot:
        from .plots import plot_occupancy

        out = plot_occupancy(
            t, args.plot, bin_ns=None if args.bin_us is None else args.bin_us * 1000
        )
        print(f"\nwrote {out}")


def _rows_command(args: argparse.Namespace, table: pa.Table, title: str) -> int:
    """Prints a query's table: every row for ``--format json|csv`` (the first ``-n`` when
    given), else ``title`` and the first ``-n`` (default 20) rows."""
    columns = table.column_names
    if args.output != "table":
        shown = table if args.n is None else table.slice(0, args.n)
        _emit(args, shown.to_pylist(), columns)
        return 0
    n = args.n or 20
    shown_rows = table.slice(0, n).to_pylist()
    more = f", first {len(shown_rows)} shown (-n)" if table.num_rows > n else ""
    print(f"{title} ({_count(table.num_rows, 'row')}{more})")
    _print_columns(shown_rows, columns)
    return 0


def _cmd_steps(args: argparse.Namespace) -> int:
    opened = _open_any(args)
    if isinstance(opened, TraceSet):
        _members(opened)  # reports the files that failed
        return _rows_command(args, opened.step_times(),
                             "per rank and step: duration, collective time, wait, compute")
    return _rows_command(args, opened.step_times(), "per step: first start to last end")


def _cmd_stragglers(args: argparse.Namespace) -> int:
    ts = _open_set(args)
    _members(ts)
    table = ts.stragglers(by=args.by, min_lag_ns=args.min_lag_us * 1000)
    return _rows_command(args, table, f"per step: the slowest rank by {args.by} and its lag "
                         f"behind the median rank")


def _cmd_collectives(args: argparse.Namespace) -> int:
    ts = _open_set(args)
    _members(ts)
    table = ts.collectives(args.pattern)
    return _rows_command(args, table, "collective instances per rank, with the time each "
                         "waited for the last rank")


def _cmd_export(args: argparse.Namespace) -> int:
    if args.parquet:
        opened = _open_any(args)
        start = time.perf_counter()  # the write, not the parse
        if isinstance(opened, TraceSet):
            # Several traces (files, a glob, a log directory): one hive-partitioned dataset,
            # by rank when every trace has one, else by trace_id.
            ranks = opened.traces["rank"]
            by = "rank" if ranks.null_count == 0 else "trace_id"
            out = opened.to_parquet(
                args.parquet, partition_by=(by,), compression=args.compression,
                overwrite=args.overwrite,
            )
            n_files = sum(1 for _ in out.rglob("*.parquet"))
            print(
                f"wrote a dataset of {_count(opened.traces.num_rows, 'trace')} to {out} "
                f"({n_files} Parquet files, partitioned by {by}; "
                f"{time.perf_counter() - start:.2f} s)"
            )
            return 0
        t = opened
    else:
        t = _open(args)
        start = time.perf_counter()
    if args.parquet:
        out = t.to_parquet(args.parquet, compression=args.compression, overwrite=args.overwrite)
        files = parquet_files(out)
        size = sum(f.stat().st_size for f in files)
        print(
            f"wrote {len(files)} Parquet files + tracecore.json to {out} ({_mb(size)} MB, "
            f"{time.perf_counter() - start:.2f} s)"
        )
    elif args.perfetto:
        out = t.to_perfetto(args.perfetto, show_memory=not args.no_memory)
        print(
            f"wrote Perfetto trace {out} ({len(t)} events, {_mb(out.stat().st_size)} MB, "
            f"{time.perf_counter() - start:.2f} s); open it in https://ui.perfetto.dev"
        )
    else:
        out = t.to_chrome_trace(args.chrome, show_memory=not args.no_memory)
        print(
            f"wrote Chrome trace {out} ({len(t)} events, {_mb(out.stat().st_size)} MB, "
            f"{time.perf_counter() - start:.2f} s); open it in https://ui.perfetto.dev"
        )
    return 0


def _rss_kib(field: str) -> int | None:
    """``VmRSS`` (now) or ``VmHWM`` (peak) of this process, in KiB (None where unknown)."""
    try:
        with builtins.open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    if field == "VmHWM":
        try:
            import resource

            return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)  # KiB on Linux
        except (ImportError, OSError):  # pragma: no cover - not POSIX
            return None
    return None


_BENCH_COLUMNS = ("file", "threads", "threads_used", "best_ms", "median_ms", "mb_per_s",
                  "events_per_s", "file_bytes", "parsed_bytes", "events", "peak_rss_kib",
                  "table_bytes")


def _cmd_bench(args: argparse.Namespace) -> int:
    """Parse throughput in this process: best and median wall time of ``open()`` over
    ``--repeat`` runs per thread count, each file read once first so the page cache is warm;
    several files (paths, globs) one after the other."""
    rows: list[dict[str, Any]] = []
    for k, path in enumerate(_paths(args)):
        file_rows = _bench_file(args, path)
        rows += file_rows
        if args.output == "table":
            if k:
                print()
            _print_bench(args, file_rows)
    _emit(args, rows, _BENCH_COLUMNS)
    return 0


def _bench_file(args: argparse.Namespace, path: str) -> list[dict[str, Any]]:
    """One row per thread count for the file at ``path``; the file's figures (size, events,
    peak RSS, the last run's table bytes) on each."""
    file_size = os.stat(path).st_size
    with builtins.open(path, "rb") as f:  # warm the page cache: measure parsing, not the disk
        while f.read(1 << 24):
            pass
    rss_before = _rss_kib("VmRSS")
    rows: list[dict[str, Any]] = []
    parsed_bytes = file_size
    thread_counts = [args.threads] if args.threads is not None else [1, 0]
    last: Trace | None = None  # the latest run's trace, kept for measuring its tables
    n_events = 0
    for threads in thread_counts:
        times = []
        used = threads
        for _ in range(args.repeat):
            last = None  # freed before the next parse: one trace alive at a time
            gc.collect()
            start = time.perf_counter()
            trace = open_trace(path, format=args.input_format, threads=threads)
            times.append(time.perf_counter() - start)
            n_events = len(trace)
            stats = trace.stats
            parsed_bytes = stats["bytes"]  # decompressed size for .gz input
            used = stats.get("threads", threads)
            last = trace
            del trace, stats
        best = min(times)
        rows.append({"file": path, "threads": threads, "threads_used": used,
                     "best_ms": best * 1e3, "median_ms": float(np.median(times)) * 1e3,
                     "mb_per_s": parsed_bytes / _MB / best, "events_per_s": n_events / best})
    peak = _rss_kib("VmHWM")
    # After the peak is read, so that building every table of the last run is not in it.
    assert last is not None  # --repeat is at least 1
    tables = buffer_bytes(last.table(name) for name in last.table_names)
    for row in rows:
        row.update(file_bytes=file_size, parsed_bytes=parsed_bytes, events=n_events,
                   peak_rss_kib=peak, table_bytes=tables, rss_before_kib=rss_before)
    return rows


def _print_bench(args: argparse.Namespace, rows: list[dict[str, Any]]) -> None:
    first = rows[0]
    file_size, parsed_bytes = first["file_bytes"], first["parsed_bytes"]
    gz = f", {_mb(parsed_bytes)} MB decompressed" if parsed_bytes != file_size else ""
    print(f"file      {first['file']}")
    print(f"size      {_mb(file_size)} MB{gz}; {first['events']} events; best of {args.repeat} "
          f"runs")
    cells = []
    for r in rows:
        label = f"threads={r['threads']}" + (
            f" (used {r['threads_used']})" if r["threads"] == 0 else "")
        cells.append([label, f"{r['best_ms']:.1f}", f"{r['median_ms']:.1f}",
                      f"{r['mb_per_s']:.0f}", f"{r['events_per_s']:,.0f}"])
    _print_table(["open()", "best ms", "median ms", "MB/s", "events/s"], cells)
    peak, before = first["peak_rss_kib"], first["rss_before_kib"]
    if peak is not None:
        shown = f" (RSS before the first parse: {before / 1024:.0f} MiB)" if before else ""
        print(f"peak RSS  {peak / 1024:.0f} MiB{shown}")
    share = first["table_bytes"] / parsed_bytes if parsed_bytes else 0.0
    print(f"tables    {_mb(first['table_bytes'])} MB of Arrow buffers, {share:.3f}x the input")


# --------------------------------------------------------------------------------------------
# Parser and entry point


_INT_MAX = 2**63 - 1  # what every integer argument is checked against (int64 downstream)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, not {text!r}") from None
    if not 0 < value <= _INT_MAX:
        raise argparse.ArgumentTypeError(
            f"expected a positive integer up to 2**63 - 1, not {text!r}"
        )
    return value


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, not {text!r}") from None
    if not 0 <= value <= _INT_MAX:
        raise argparse.ArgumentTypeError(
            f"expected an integer from 0 to 2**63 - 1, not {text!r}"
        )
    return value


def _output_format(text: str) -> str:
    if text in ("table", "json", "csv"):
        return text
    hint = (f"; the input format ({'|'.join(FORMATS)}) is --input-format {text}"
            if text in FORMATS else "")
    raise argparse.ArgumentTypeError(
        f"invalid output format {text!r} (choose from table, json, csv){hint}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tracecore", description="Index and query TensorFlow execution traces."
    )
    parser.add_argument("--version", action="version", version=f"tracecore {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add_input(p: argparse.ArgumentParser, *, cache: bool = True, many: bool = True,
                  output: bool = True) -> None:
        if many:
            p.add_argument(
                "paths",
                nargs="*",
                metavar="PATH",
                help="trace files (StepStats / RunMetadata dumps .pbtxt, .pb, .gz; XSpace "
                "profiles .xplane.pb; Chrome JSON; Parquet export directories), globs "
                "(quoted: expanded here, sorted) and profiler / TensorBoard log directories; "
                "several make a TraceSet",
            )
        else:
            p.add_argument(
                "file",
                nargs="?",
                help="a StepStats / RunMetadata dump (.pbtxt, .pb, .gz), an XSpace "
                "(.xplane.pb) or a Parquet export directory",
            )
        p.add_argument("--sample", action="store_true", help="use the bundled sample trace")
        p.add_argument(
            "--input-format",
            choices=FORMATS,
            default="auto",
            help="how to read the input (default auto: told by its name and content)",
        )
        p.add_argument(
            "--threads", type=_non_negative_int, default=0, help="parser threads (0 = all cores)"
        )
        if cache:
            p.add_argument(
                "--cache",
                action="store_true",
                help="open through the persisted index (TRACECORE_CACHE_DIR)",
            )
        if output:
            add_output(p)

    def add_output(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--format",
            dest="output",
            type=_output_format,
            default="table",
            metavar="{table,json,csv}",
            help="table (default), json (JSON Lines: one object per row) or csv (a header, "
            "then the rows); every row for json and csv unless -n is given. The input "
            "format is --input-format",
        )

    def add_n(p: argparse.ArgumentParser, what: str = "rows to show") -> None:
        p.add_argument("-n", type=_positive_int, default=None,
                       help=f"{what} (default 20 in a table, every row for json and csv)")

    p = sub.add_parser("info", help="what is in a trace: devices, busy time, allocators, peaks")
    add_input(p)
    p.set_defaults(func=_cmd_info)

    p = sub.add_parser("top", help="time per op, node, device, kind, scope, phase or tower")
    add_input(p)
    p.add_argument("--by", choices=("op", "node", "node_name", "device", "kind", *_DERIVED),
                   default="op")
    add_n(p)
    p.add_argument("--width", type=_positive_int, default=60, help="key column width")
    p.set_defaults(func=_cmd_top)

    p = sub.add_parser("diff", help="compare two runs: time per op, peak memory, what changed")
    p.add_argument("a", help="the first run (any trace file tracecore reads)")
    p.add_argument("b", help="the second run")
    p.add_argument("--by", choices=_DIFF_BY, default="op")
    add_n(p)
    p.add_argument("--width", type=_positive_int, default=60, help="key column width")
    add_output(p)
    p.set_defaults(func=_cmd_diff)

    p = sub.add_parser("steps", help="step times: per step (one trace) or per rank and step")
    add_input(p)
    add_n(p)
    p.set_defaults(func=_cmd_steps)

    p = sub.add_parser("stragglers", help="per step, the slowest rank and its lag")
    add_input(p)
    p.add_argument("--by", choices=("compute", "duration"), default="compute",
                   help="rank by compute (duration minus collective wait; default) or duration")
    p.add_argument("--min-lag-us", type=_non_negative_int, default=0, metavar="US",
                   help="only steps whose lag exceeds US microseconds")
    add_n(p)
    p.set_defaults(func=_cmd_stragglers)

    p = sub.add_parser("collectives", help="collective instances per rank and their wait")
    add_input(p)
    p.add_argument("--pattern", metavar="REGEX",
                   help="collectives are events whose op or node name matches REGEX")
    add_n(p)
    p.set_defaults(func=_cmd_collectives)

    p = sub.add_parser("memory", help="peak memory per allocator and what is live at the peak")
    add_input(p)
    p.add_argument("--allocator", help="only this allocator")
    p.add_argument("-n", type=_positive_int, default=10, help="live tensors to list (default 10)")
    p.add_argument("--plot", metavar="OUT.png", help="draw the memory timeline per allocator")
    p.set_defaults(func=_cmd_memory)

    p = sub.add_parser("occupancy", help="busy time per device, utilization timeline")
    add_input(p)
    p.add_argument(
        "--bin-us",
        type=_positive_int,
        metavar="N",
        help="also print a utilization timeline with N-microsecond bins",
    )
    p.add_argument(
        "--max-bins",
        type=_positive_int,
        default=100,
        help="bins shown per timeline row (default 100)",
    )
    p.add_argument("--plot", metavar="OUT.png", help="draw the utilization timeline per device")
    p.set_defaults(func=_cmd_occupancy)

    p = sub.add_parser("export", help="write Parquet files or a Chrome trace (Perfetto)")
    add_input(p, output=False)
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument(
        "--parquet", metavar="DIR", help="one Parquet file per table + tracecore.json"
    )
    target.add_argument("--chrome", metavar="OUT.json[.gz]", help="Chrome trace-event JSON")
    target.add_argument(
        "--perfetto", metavar="OUT", help="Perfetto protobuf trace (TracePackets), from C++"
    )
    p.add_argument(
        "--compression",
        default="zstd",
        type=str.lower,
        choices=PARQUET_CODECS,
        help="Parquet compression (default zstd)",
    )
    p.add_argument(
        "--overwrite", action="store_true", help="replace the export a --parquet DIR holds"
    )
    p.add_argument(
        "--no-memory", action="store_true", help="Chrome / Perfetto trace without memory counters"
    )
    p.set_defaults(func=_cmd_export)

    p = sub.add_parser("bench", help="parse throughput (MB/s, events/s) and peak RSS")
    p.add_argument("paths", nargs="*", metavar="PATH",
                   help="trace files or globs (quoted), timed one after the other")
    p.add_argument("--sample", action="store_true", help="use the bundled sample trace")
    p.add_argument("--input-format", choices=FORMATS, default="auto")
    add_output(p)
    p.add_argument(
        "--threads",
        type=_non_negative_int,
        default=None,
        help="only this thread count (default: 1 and all cores)",
    )
    p.add_argument("--repeat", type=_positive_int, default=3, help="runs per row (default 3)")
    p.set_defaults(func=_cmd_bench)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    # Paths Python decoded from undecodable bytes (surrogateescape) print as those bytes.
    for stream in (sys.__stdout__, sys.__stderr__):
        if stream is not None and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="surrogateescape")
    parser = build_parser()
    args = parser.parse_args(argv)
    if os.environ.get("TRACECORE_DEBUG"):
        return int(args.func(args))
    try:
        return int(args.func(args))
    except UsageError as e:
        print(f"tracecore {args.command}: error: {e}", file=sys.stderr)
        return 2
    except TraceFormatError as e:
        print(f"tracecore: invalid trace: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. piped into head
        # Python flushes stdout at exit and would complain again: point it at /dev/null.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except OSError as e:
        print(f"tracecore: {e}", file=sys.stderr)
        return 1
    except ImportError as e:
        print(f"tracecore: {e}", file=sys.stderr)
        return 1
    except (KeyError, ValueError) as e:
        message = e.args[0] if isinstance(e, KeyError) and e.args else e
        print(f"tracecore {args.command}: error: {message}", file=sys.stderr)
        return 1
    except OverflowError as e:  # a query's checked int64 arithmetic on extreme values
        print(
            f"tracecore {args.command}: error: {_clipped(str(e))} (the trace's values are too "
            f"large for 64-bit sums)",
            file=sys.stderr,
        )
        return 1
    except KeyboardInterrupt:
        print("tracecore: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # noqa: BLE001 - the CLI promises one line, not a traceback
        print(
            f"tracecore: internal error: {type(e).__name__}: {_clipped(str(e))} "
            f"(TRACECORE_DEBUG=1 shows the traceback)",
            file=sys.stderr,
        )
        return 3


def _checked_total(column: pa.ChunkedArray) -> int:
    """The sum of an int64 column (nulls as 0); OverflowError when it does not fit int64."""
    values = to_numpy(column, 0).astype(np.int64, copy=False)
    return int(grouped_sum(values, np.zeros(len(values), dtype=np.int64), 1)[0])


def _clipped(message: str, limit: int = 300) -> str:
    """``message`` cut to ``limit`` characters: an error may quote its (large) arguments."""
    return (
        message if len(message) <= limit else message[:limit] + f"... ({len(message)} characters)"
    )


if __name__ == "__main__":
    raise SystemExit(main())
