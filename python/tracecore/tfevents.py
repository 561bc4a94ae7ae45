"""TensorBoard event files and log directories: their RunMetadata, one by one.

An event file (``events.out.tfevents.*``) holds RunMetadata in two places: TensorFlow 1's
``FileWriter.add_run_metadata`` writes ``Event.tagged_run_metadata`` (full step stats with
``FULL_TRACE``), TensorFlow 2's ``tf.summary.trace_export`` writes a summary tensor of plugin
``graph_run_metadata_graph`` / ``graph_run_metadata`` (graphs, no step stats; Keras may write
0 bytes). :func:`scan` lists them without parsing them (the native scan checks every record's
CRCs); :func:`open_event_file` and :func:`open_logdir` parse each one with the binary importer.
``tracecore.open`` of an event file or a log directory gives them as one TraceSet
(:mod:`.logdir`).

The native core maps each file once, checks its records and parses every RunMetadata in place
(a view of the file's bytes), in parallel (``_core.open_event_file``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import _core
from ._core import TraceFormatError
from .trace import Trace

HOW_TO_RECORD = (
    "To record a trace: TensorFlow 1 (or tf.compat.v1 sessions in TensorFlow 2): "
    "run_options = tf.compat.v1.RunOptions(trace_level=tf.compat.v1.RunOptions.FULL_TRACE); "
    "sess.run(..., options=run_options, run_metadata=run_metadata); "
    "writer.add_run_metadata(run_metadata, 'step_N'). TensorFlow 2 eager code: the profiler "
    "(tf.profiler.experimental.start/stop, or Keras TensorBoard(profile_batch=...)) writes "
    "plugins/profile/<run>/<host>.xplane.pb; tf.summary.trace_on/trace_export records graphs "
    "only."
)


@dataclass
class EventTrace:
    """One RunMetadata of an event file, parsed."""

    run: str  # the event file's directory relative to the log root ("." at the root)
    path: str
    tag: str
    step: int
    wall_time: float
    source: str  # tagged_run_metadata | graph_run_metadata_graph | graph_run_metadata
    trace: Trace | None  # None for an empty (0-byte) RunMetadata
    has_step_stats: bool


@dataclass
class LogDirectory:
    """What :func:`open_logdir` found: the traces, and per event file its scan."""

    root: str
    traces: list[EventTrace] = field(default_factory=list)
    scans: dict[str, dict[str, Any]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def is_event_file(path: str | os.PathLike[str]) -> bool:
    return "tfevents" in os.path.basename(os.fspath(path))


def scan(path: str | os.PathLike[str], *, strict: bool = True) -> dict[str, Any]:
    """The native scan of one event file: RunMetadata found (tag, step, wall_time, offset,
    length, source), content counts, warnings. Raises TraceFormatError naming the file."""
    try:
        return _core.tfevents_scan(os.fspath(path), strict=strict)
    except TraceFormatError as e:
        error = TraceFormatError(f"{os.fspath(path)}: {e}")
        error.offset = e.offset
        error.line = error.column = None
        raise error from None


def open_event_file(path: str | os.PathLike[str], *, strict: bool = True, threads: int = 0,
                    root: str | os.PathLike[str] | None = None) -> list[EventTrace]:
    """Every RunMetadata of an event file, parsed in place (no copy) by the binary importer, in
    parallel. ``root``: the log directory the file's run is named relative to."""
    return open_found(os.fspath(path), strict, threads, root)[0]


def open_found(path_str: str, strict: bool, threads: int,
                root: str | os.PathLike[str] | None) -> tuple[list[EventTrace], dict[str, Any]]:
    """The traces of one event file, and its scan (the dict of ``_core.tfevents_scan``)."""
    try:
        result = _core.open_event_file(path_str, strict=strict, threads=threads)
    except TraceFormatError as e:
        error = TraceFormatError(f"{path_str}: {e}")
        error.offset = e.offset
        error.line = error.column = None
        raise error from None
    run = os.path.relpath(os.path.dirname(os.path.abspath(path_str)),
                          os.path.abspath(root)) if root is not None else "."
    traces = []
    for found, core in zip(result["run_metadata"], result.pop("traces"), strict=True):
        trace = None
        if core is not None:
            trace = Trace.from_core(core, f"{path_str}#{found['tag']}@{found['step']}")
        traces.append(EventTrace(run.replace(os.sep, "/"), path_str, found["tag"], found["step"],
                                 found["wall_time"], found["source"], trace,
                                 core is not None and core.num_events > 0))
    return traces, result


def add_content(totals: dict[str, Any], content: dict[str, Any]) -> None:
    """Adds one scan's ``content`` counts into ``totals`` (several files' content)."""
    for key, value in content.items():
        if isinstance(value, dict):
            merged = totals.setdefault(key, {})
            for name, n in value.items():
                merged[name] = merged.get(name, 0) + n
        elif isinstance(value, int) and not key.endswith(("_step", "_wall_time")):
            totals[key] = totals.get(key, 0) + value


def describe_content(content: dict[str, Any]) -> str:
    """What the events hold besides RunMetadata, in words ("scalars only", ...)."""
    plugins = dict(content.get("plugins", {}))
    kinds = []
    scalars = content.get("simple_values", 0) + plugins.pop("scalars", 0)
    if scalars:
        kinds.append(f"{scalars} scalars")
    graphs = (content.get("graph_def", 0) + content.get("meta_graph_def", 0)
              + sum(plugins.pop(p, 0) for p in ("graph_keras_model", "graph_run_metadata_graph",
                                                 "graph_run_metadata")))
    if graphs:
        kinds.append(f"{graphs} graphs")
    for name, key in (("histograms", "histograms"), ("images", "images"), ("audio", "audio"),
                      ("tensors", "tensors")):
        count = content.get(key, 0) + plugins.pop(name, 0)
        if count:
            kinds.append(f"{count} {name}")
    kinds += [f"{n} {name} summaries" for name, n in plugins.items()]
    if not kinds:
        return "no summaries"
    return kinds[0] + " only" if len(kinds) == 1 else ", ".join(kinds)


def open_logdir(root: str | os.PathLike[str], *, strict: bool = True,
                threads: int = 0) -> LogDirectory:
    """Every RunMetadata of every event file under ``root``. A directory without any says what
    its event files hold instead (TraceFormatError, with how to record a trace)."""
    root_str = os.fspath(root)
    files = sorted(str(p) for p in Path(root_str).rglob("*") if p.is_file() and is_event_file(p))
    out = LogDirectory(root_str)
    totals: dict[str, Any] = {}
    for path in files:
        traces, result = open_found(path, strict, threads, root_str)
        out.scans[path] = result
        out.traces += traces
        out.warnings += [f"{path}: byte {offset}: {what}" for offset, what in result["warnings"]]
        add_content(totals, result["content"])
    if not out.traces:
        if not files:
            raise TraceFormatError(f"{root_str}: no event files (events.out.tfevents.*) under it")
        raise TraceFormatError(
            f"{root_str}: no RunMetadata in its {len(files)} event files, which hold "
            f"{describe_content(totals)}. {HOW_TO_RECORD}")
    return out
