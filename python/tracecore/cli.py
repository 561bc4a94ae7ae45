"""The tracecore command line (``tracecore`` or ``python -m tracecore``).

    tracecore info FILE|LOGDIR|--sample       what is in a trace (or a log directory)
    tracecore top FILE [--by op|node|device|kind] [-n 20]
    tracecore memory FILE [--allocator A] [--plot out.png]
    tracecore occupancy FILE [--bin-us N] [--plot out.png]
    tracecore export FILE --parquet DIR | --chrome OUT.json[.gz]
    tracecore bench FILE

Every command takes ``--cache`` (open through the persisted index). Errors are one line on
stderr and a non-zero exit code: 2 for an invalid trace or bad arguments, 1 otherwise.
Set ``TRACECORE_DEBUG=1`` to get the traceback instead.
"""

from __future__ import annotations

import argparse
import builtins  # builtins.open: ``open`` here is tracecore.open
import gc
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
from .dataset import TraceSet
from .intervals import group_stats, grouped_sum
from .opening import open_trace, sample_path
from .parquet import PARQUET_CODECS, parquet_files
from .parsing import FORMATS
from .toplevel import open
from .trace import Trace

_MB = 1e6


class UsageError(Exception):
    """A command line that cannot be run (exit code 2)."""


# --------------------------------------------------------------------------------------------
# Helpers


def _open_any(args: argparse.Namespace) -> Trace | TraceSet:
    """The trace the command line names, or the TraceSet of a log directory."""
    if getattr(args, "sample", False):
        if args.file:
            raise UsageError("give a trace FILE or --sample, not both")
        path: Any = sample_path()
    elif args.file:
        path = args.file
    else:
        raise UsageError("give a trace FILE or --sample")
    return open(path, format=args.format, threads=args.threads, cache=args.cache, progress=True)


def _open(args: argparse.Namespace) -> Trace:
    """The trace the command line names; a log directory is a usage error that lists its
    profiles (the commands but ``info`` read one trace)."""
    opened = _open_any(args)
    if isinstance(opened, TraceSet):
        paths = opened.traces["path"].to_pylist()
        more = f" and {len(paths) - 3} more" if len(paths) > 3 else ""
        what = "a log directory" if os.path.isdir(args.file) else "an event file"
        raise UsageError(
            f"{display_path(args.file)} is {what} with "
            f"{_count(len(paths), 'trace')} ({', '.join(paths[:3])}{more}); "
            f"tracecore {args.command} reads one trace: give one profile or dump "
            f"('tracecore info {display_path(args.file)}' lists them)"
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


def _size(n_bytes: float) -> str:
    """A byte count for people: 136 B, 3.2 kB, 66.36 MB, 1.20 GB."""
    n = abs(n_bytes)
    if n < 1e3:
        return f"{n_bytes:.0f} B"
    if n < 1e6:
        return f"{n_bytes / 1e3:.1f} kB"
    if n < 1e9:
        return f"{n_bytes / 1e6:.2f} MB"
    return f"{n_bytes / 1e9:.2f} GB"


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

    return (
        f"{_count(len(traces), 'trace')} ({ts.n_traces} loaded): "
        f"{_count(distinct('run'), 'run')}, {_count(distinct('host'), 'host')}, "
        f"{_count(distinct('tag'), 'tag')}, {_count(distinct('step'), 'step')}, "
        f"{_count(len(ts), 'event')}"
    )


def _info_set(ts: TraceSet, path: str) -> int:
    """``info`` of a log directory or an event file: one row per trace found (a RunMetadata
    of an event file, an XSpace profile)."""
    traces = ts.traces.to_pylist()
    root = display_path(path)
    base = root if os.path.isdir(path) else os.path.dirname(root)
    print(f"{'log directory' if os.path.isdir(path) else 'event file'}  {root}")
    print(f"traces         {_set_summary(ts)}")
    print()
    _print_table(
        ["run", "host", "tag", "step", "source", "file", "events", "blocks", "size", "status"],
        [
            [
                r["run"] if r["run"] is not None else "-",
                r["host"] if r["host"] is not None else "-",
                r["tag"] if r["tag"] is not None else "-",
                r["step"] if r["step"] is not None else "-",
                r["source"] if r["source"] is not None else "-",
                os.path.relpath(r["path"], base) if base else r["path"],
                "-" if r["n_events"] is None else r["n_events"],
                ts.trace(r["trace_id"]).devices.num_rows if r["status"] == "ok" else "-",
                "-" if r["size"] is None else _size(r["size"]),
                r["status"],
            ]
            for r in traces
        ],
        left=6,
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
          "directory ranks ops over every trace")
    return 0


def _top_set(ts: TraceSet, args: argparse.Namespace) -> int:
    """``top`` of a log directory or an event file: each trace's rows as ``top`` of it alone
    ranks them (an XSpace's device streams, else its host threads: not the lines that repeat
    them), summed over the traces; ``share`` is the summed busy time over the summed spans."""
    print(f"{display_path(args.file)}: {_set_summary(ts)}")
    by = _BY[args.by]
    parts, span, stepstats = [], 0, False
    for row in ts.traces.filter(pc.equal(ts.traces["status"], "ok")).to_pylist():
        t = ts.trace(row["trace_id"])
        if by == "kind":
            part = t.op_stats(by="kind")
            span += _span(t.table("events"))
        elif t.kind == "XSpace":
            _, lines = xspace_top_lines(t)
            part = xspace_op_stats(t, by, lines)
            span += _span(t.table("events"))
            part = part.append_column("executor_ns", pa.array([0] * part.num_rows, pa.int64()))
            part = part.append_column("stream_ns", pa.array([0] * part.num_rows, pa.int64()))
            part = part.append_column("time_ns", part["total_ns"])
        else:
            stepstats = True
            part = t.op_stats(by=by)
            span += _span(t.table("events"))
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
        return _info_set(opened, args.file)
    t = opened
    s = t.stats
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


# Group keys of `top --by`: "node" is short for Trace.op_stats's "node_name", which is taken too.
_BY = {"op": "op", "node": "node_name", "node_name": "node_name", "device": "device",
       "kind": "kind"}


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
    span = _span(trace.table("events"))
    busy = stats.busy_ns.astype(np.float64)
    n = stats.n_events.astype(np.float64)
    table = pa.table(
        {
            "key": pa.array(distinct, pa.string()),
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
    print(f"ranking {what}: {_count(len(rows), 'line')} on {', '.join(planes) or 'no plane'}")
    _print_top(args, stats, executor_stream=False)
    return 0


def _print_top(args: argparse.Namespace, stats: pa.Table, *, executor_stream: bool) -> None:
    """The first ``-n`` rows of an op_stats table; ``executor_stream`` (StepStats): ranked by
    ``time_ns``, each op's time counted once (stream time for GPU work, else executor time),
    with the executor, stream and all-records columns beside it."""
    once = executor_stream and _BY[args.by] != "device"
    if once:
        stats = stats.sort_by([("time_ns", "descending"), ("key", "ascending")])
    rows = stats.slice(0, args.n).to_pylist()
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
    if args.by == "kind":
        print("time per device kind: every record of each kind (a GPU op's launch on the "
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
    if args.output == "json":
        import json

        for r in rows:
            print(json.dumps({by: r.pop("key"), **r}))
        return 0
    if args.output == "csv":
        import csv

        w = csv.writer(sys.stdout)
        w.writerow([by, *d.ops.column_names[1:]])
        for r in rows:
            w.writerow(["" if v is None else v for v in r.values()])
        return 0
    print(d.summary())
    print()
    shown = rows[: args.n]
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


def _cmd_memory(args: argparse.Namespace) -> int:
    _check_plot(args)
    t = _open(args)
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


def _cmd_occupancy(args: argparse.Namespace) -> int:
    _check_plot(args)
    t = _open(args)
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
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
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


def _cmd_bench(args: argparse.Namespace) -> int:
    """Parse throughput in this process: best and median wall time of ``open()`` over
    ``--repeat`` runs per thread count, the file read once first so the page cache is warm."""
    if args.sample and args.file:
        raise UsageError("give a trace FILE or --sample, not both")
    if not (args.sample or args.file):
        raise UsageError("give a trace FILE or --sample")
    path = str(sample_path()) if args.sample else args.file
    file_size = os.stat(path).st_size
    with builtins.open(path, "rb") as f:  # warm the page cache: measure parsing, not the disk
        while f.read(1 << 24):
            pass
    rss_before = _rss_kib("VmRSS")
    rows = []
    parsed_bytes = file_size
    thread_counts = [args.threads] if args.threads is not None else [1, 0]
    last: Trace | None = None  # the latest run's trace, kept for measuring its tables
    for threads in thread_counts:
        times = []
        n_events = 0
        used = threads
        for _ in range(args.repeat):
            last = None  # freed before the next parse: one trace alive at a time
            gc.collect()
            start = time.perf_counter()
            trace = open_trace(path, format=args.format, threads=threads)
            times.append(time.perf_counter() - start)
            n_events = len(trace)
            stats = trace.stats
            parsed_bytes = stats["bytes"]  # decompressed size for .gz input
            used = stats.get("threads", threads)
            last = trace
            del trace, stats
        best = min(times)
        label = f"threads={threads}" + (f" (used {used})" if threads == 0 else "")
        rows.append(
            [
                label,
                f"{best * 1e3:.1f}",
                f"{float(np.median(times)) * 1e3:.1f}",
                f"{parsed_bytes / _MB / best:.0f}",
                f"{n_events / best:,.0f}",
            ]
        )
    gz = f", {_mb(parsed_bytes)} MB decompressed" if parsed_bytes != file_size else ""
    print(f"file      {path}")
    print(f"size      {_mb(file_size)} MB{gz}; {n_events} events; best of {args.repeat} runs")
    _print_table(["open()", "best ms", "median ms", "MB/s", "events/s"], rows)
    peak = _rss_kib("VmHWM")
    if peak is not None:
        before = f" (RSS before the first parse: {rss_before / 1024:.0f} MiB)" if rss_before else ""
        print(f"peak RSS  {peak / 1024:.0f} MiB{before}")
    # After the peak is read, so that building every table of the last run is not in it.
    assert last is not None  # --repeat is at least 1
    tables = buffer_bytes(last.table(name) for name in last.table_names)
    share = tables / parsed_bytes if parsed_bytes else 0.0
    print(f"tables    {_mb(tables)} MB of Arrow buffers, {share:.3f}x the input")
    return 0


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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tracecore", description="Index and query TensorFlow execution traces."
    )
    parser.add_argument("--version", action="version", version=f"tracecore {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add_input(p: argparse.ArgumentParser, *, cache: bool = True) -> None:
        p.add_argument(
            "file",
            nargs="?",
            help="a StepStats / RunMetadata dump (.pbtxt, .pb, .gz), an XSpace (.xplane.pb) or "
            "a Parquet export directory; info also takes a profiler / TensorBoard log directory",
        )
        p.add_argument("--sample", action="store_true", help="use the bundled sample trace")
        p.add_argument("--format", choices=FORMATS, default="auto")
        p.add_argument(
            "--threads", type=_non_negative_int, default=0, help="parser threads (0 = all cores)"
        )
        if cache:
            p.add_argument(
                "--cache",
                action="store_true",
                help="open through the persisted index (TRACECORE_CACHE_DIR)",
            )

    p = sub.add_parser("info", help="what is in a trace: devices, busy time, allocators, peaks")
    add_input(p)
    p.set_defaults(func=_cmd_info)

    p = sub.add_parser("top", help="time per op, node or device")
    add_input(p)
    p.add_argument("--by", choices=tuple(_BY), default="op")
    p.add_argument("-n", type=_positive_int, default=20, help="rows to show (default 20)")
    p.add_argument("--width", type=_positive_int, default=60, help="key column width")
    p.set_defaults(func=_cmd_top)

    p = sub.add_parser("diff", help="compare two runs: time per op, peak memory, what changed")
    p.add_argument("a", help="the first run (any trace file tracecore reads)")
    p.add_argument("b", help="the second run")
    p.add_argument("--by", choices=tuple(_BY), default="op")
    p.add_argument("-n", type=_positive_int, default=20, help="rows to show (default 20)")
    p.add_argument("--width", type=_positive_int, default=60, help="key column width")
    p.add_argument(
        "--format",
        dest="output",
        choices=("table", "json", "csv"),
        default="table",
        help="table (default), json (one object per line) or csv; every row for json and csv",
    )
    p.set_defaults(func=_cmd_diff)

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
    add_input(p)
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
    p.add_argument("file", nargs="?", help="a StepStats / RunMetadata dump")
    p.add_argument("--sample", action="store_true", help="use the bundled sample trace")
    p.add_argument("--format", choices=FORMATS, default="auto")
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
