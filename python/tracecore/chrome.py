"""Chrome trace-event JSON of a trace, for Perfetto and chrome://tracing
(``Trace.to_chrome_trace``)."""

from __future__ import annotations

import gzip
import os
import re
import secrets
from collections.abc import Iterator
from json.encoder import encode_basestring_ascii
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from . import _core
from .outputs import checked_output_file, naming
from .perfetto import COUNTER_GROUP, memory_series, step_columns

if TYPE_CHECKING:
    from .trace import Trace

_LABEL_RE = re.compile(r"(.*) = (.*)\((.*)\)")  # timeline.py's _parse_op_label


def _us(ns: int) -> str:
    """Nanoseconds as an exact decimal number of microseconds (a float64 would lose the
    nanoseconds of an epoch timestamp; the trace viewers parse the decimal text exactly)."""
    if ns < 0:
        return "-" + _us(-ns)
    return f"{ns // 1000}.{ns % 1000:03d}"


class _Lanes:
    """TensorFlow timeline.py's ``_assign_lanes`` for one device block: each event, in file
    order, goes to the first lane whose last event ended strictly before it starts
    (``start > lane_end``, as timeline.py compares), else to a new lane."""

    __slots__ = ("ends",)

    def __init__(self) -> None:
        self.ends = [0]

    def assign(self, start: int, end: int) -> int:
        ends = self.ends
        for lane, lane_end in enumerate(ends):
            if start > lane_end:
                ends[lane] = end
                return lane
        ends.append(end)
        return len(ends) - 1


def _process_metadata(pid: int, name: str) -> Iterator[str]:
    """The metadata events naming process ``pid`` and keeping the processes in pid order."""
    head = f'{{"ph":"M","pid":{pid},"tid":0,'
    yield f'{head}"name":"process_name","args":{{"name":{encode_basestring_ascii(name)}}}}}'
    yield f'{head}"name":"process_sort_index","args":{{"sort_index":{pid}}}}}'


def _thread_metadata(pid: int, tid: int, name: str) -> Iterator[str]:
    """The metadata events naming thread ``tid`` of process ``pid`` and keeping tid order."""
    head = f'{{"ph":"M","pid":{pid},"tid":{tid},'
    yield f'{head}"name":"thread_name","args":{{"name":{encode_basestring_ascii(name)}}}}}'
    yield f'{head}"name":"thread_sort_index","args":{{"sort_index":{tid}}}}}'


class _Processes:
    """One process per device name (pids 0, 1, ... in order of first appearance), whatever
    number of device blocks (steps, lines) it has. Within a process, a track is the blocks of
    one line (an XSpace line, a Chrome track; StepStats blocks have none: all of a device's
    blocks are one track); each track has timeline.py's lanes; each (track, lane) gets the
    process's next tid at its first event (a process of one track: tid = lane)."""

    def __init__(self, trace: Trace) -> None:
        devices = trace.devices
        pids: dict[str, int] = {}
        self.names: list[str] = []
        self.track_of: dict[int, tuple[int, str | None]] = {}
        lines = devices["line"].to_pylist()
        for index, device, line in zip(
            devices["device_index"].to_pylist(), devices["device"].to_pylist(), lines, strict=True
        ):
            name = device or ""
            pid = pids.get(name)
            if pid is None:
                pid = pids[name] = len(self.names)
                self.names.append(name)
            self.track_of[index] = (pid, line)
        self.lanes: dict[tuple[int, str | None], _Lanes] = {}
        self.tids: dict[tuple[int, str | None, int], int] = {}
        self.next_tid: dict[int, int] = {}

    def place(self, device_index: int, start: int, end: int) -> tuple[int, int, str | None]:
        """(pid, tid, the thread's name when this is its first event and its track has a line,
        else None) of an event of block ``device_index``."""
        track = self.track_of[device_index]
        lanes = self.lanes.get(track)
        if lanes is None:
            lanes = self.lanes[track] = _Lanes()
        lane = lanes.assign(start, end)
        pid, line = track
        key = (pid, line, lane)
        tid = self.tids.get(key)
        announce = None
        if tid is None:
            tid = self.tids[key] = self.next_tid.get(pid, 0)
            self.next_tid[pid] = tid + 1
            if line is not None:
                announce = line if lane == 0 else f"{line} ({lane})"
        return pid, tid, announce


def chrome_trace_events(
    trace: Trace, *, show_memory: bool = True, show_steps: bool = True, batch_rows: int = 65536
) -> Iterator[str]:
    """The trace-event JSON objects of :func:`to_chrome_trace`, one string per event, produced
    batch by batch from the tables (never all at once)."""
    trace._ensure_core()  # a stored trace's tables are checked before they are read
    enc = encode_basestring_ascii
    processes = _Processes(trace)
    for pid, process_name in enumerate(processes.names):
        yield from _process_metadata(pid, process_name)
    memory_pid = len(processes.names)
    steps_pid = memory_pid + 1

    names: dict[str | None, str] = {}

    def quoted(s: str | None) -> str:
        q = names.get(s)
        if q is None:
            q = enc(s or "")
            if len(names) < 1_000_000:
                names[s] = q
        return q

    events = trace.table("events").select(
        ["device_index", "node_name", "op", "timeline_label", "start_ns", "end_ns"]
    )
    for batch in events.to_batches(max_chunksize=batch_rows):
        cols = batch.to_pydict()
        for device_index, node_name, op, label, start, end in zip(
            cols["device_index"],
            cols["node_name"],
            cols["op"],
            cols["timeline_label"],
            cols["start_ns"],
            cols["end_ns"],
            strict=True,
        ):
            end = max(end, start)  # corrupt clocks: zero length at the start, as the queries do
            pid, tid, announce = processes.place(device_index, start, end)
            if announce is not None:
                yield from _thread_metadata(pid, tid, announce)
            args = [f'"name":{quoted(node_name)}', f'"op":{quoted(op)}']
            match = _LABEL_RE.match(label) if label else None
            if match is not None:
                inputs = match.group(3)
                if inputs:
                    for i, input_name in enumerate(inputs.split(", ")):
                        args.append(f'"input{i}":{quoted(input_name)}')
            elif label:
                args.append(f'"label":{enc(label)}')
            yield (
                f'{{"ph":"X","cat":"Op","name":{quoted(op if op is not None else node_name)},'
                f'"pid":{pid},"tid":{tid},"ts":{_us(start)},"dur":{_us(end - start)},'
                f'"args":{{{",".join(args)}}}}}'
            )

    if show_memory:
        timeline = trace.replay(source="records").timeline
        if timeline.num_rows:
            yield from _process_metadata(memory_pid, "Allocators")
        for batch in timeline.to_batches(max_chunksize=batch_rows):
            cols = batch.to_pydict()
            for allocator, time_ns, in_use in zip(
                cols["allocator"], cols["time_ns"], cols["bytes_in_use"], strict=True
            ):
                name = quoted(allocator)
                yield (
                    f'{{"ph":"C","cat":"Memory","name":{name},"pid":{memory_pid},"tid":0,'
                    f'"ts":{_us(time_ns)},"args":{{{name}:{in_use}}}}}'
                )

    if show_steps:
        from .steps import step_spans

        spans = step_spans(trace)
        if spans.num_rows:
            yield from _process_metadata(steps_pid, "Steps")
            yield from _thread_metadata(steps_pid, 0, "steps")
        for step, start, end in zip(
            spans["step"].to_pylist(),
            spans["start_ns"].to_pylist(),
            spans["end_ns"].to_pylist(),
            strict=True,
        ):
            yield (
                f'{{"ph":"X","cat":"Step","name":"step {step}","pid":{steps_pid},"tid":0,'
                f'"ts":{_us(start)},"dur":{_us(end - start)},"args":{{"step":{step}}}}}'
            )


def to_chrome_trace(
    trace: Trace,
    path: str | os.PathLike[str],
    *,
    show_memory: bool = True,
    show_steps: bool = True,
    engine: str = "native",
) -> Path:
    """Writes a Chrome trace-event JSON file that Perfetto and chrome://tracing load.

    One process per device (``pid`` 0, 1, ... in order of first appearance, named by
    ``process_name`` metadata events), however many device blocks it has (a multi-step dump
    repeats each device's block at every step: still one process). Within a process, each line
    (an XSpace line, a Chrome track; the blocks of a StepStats device are one) gets timeline.py's
    greedy lanes, each lane a thread (named after its line when there is one); one complete
    event (``"ph": "X"``, ``ts``/``dur`` in microseconds) per node record named by its op (or
    node name) with ``name``, ``op`` and ``input<i>`` (from the label) in ``args``. With
    ``show_memory``, one counter series (``"ph": "C"``) per allocator from the record replay, in
    an "Allocators" process; with ``show_steps``, one slice ``step N`` per row of
    :meth:`Trace.step_times` on the "steps" thread of a "Steps" process. Gzip-compressed when
    the name ends in ``.gz``. Written streaming to a temporary file renamed into place at the
    end.

    ``engine="native"`` (the default) writes the events in C++ with the GIL released
    (``_core.write_chrome_trace``; the memory series and the steps are computed here);
    ``engine="python"`` runs :func:`chrome_trace_events`. Both write the same bytes (a ``.gz``
    file: the same JSON once decompressed; the native engine hands its text to Python's
    ``gzip`` module in chunks of 1 MiB)."""
    if engine not in ("native", "python"):
        raise ValueError(f"engine must be 'native' or 'python', not {engine!r}")
    out = checked_output_file(path)
    native = _native_inputs(trace, show_memory, show_steps) if engine == "native" else None
    tmp = out.with_name(f".{out.name}.{secrets.token_hex(8)}.tmp")
    try:
        raw: IO[bytes]
        with naming(out):
            raw = tmp.open("wb")
        with raw:
            stream: IO[bytes] = raw
            if out.name.endswith(".gz"):
                stream = gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=6)  # type: ignore[assignment]
            try:
                if native is not None:
                    if stream is raw:
                        raw.close()  # the C++ writer opens the file itself
                        with naming(out):
                            name = os.fsencode(tmp)  # any name the file system takes
                            _core.write_chrome_trace(trace._ensure_core(), name, *native)
                    else:
                        _core.write_chrome_trace(trace._ensure_core(), stream, *native)
                else:
                    events = chrome_trace_events(
                        trace, show_memory=show_memory, show_steps=show_steps
                    )
                    _write_json_events(stream, events)
            finally:
                if stream is not raw:
                    stream.close()
        with naming(out):
            os.replace(tmp, out)
    except BaseException:
        if tmp.exists():
            tmp.unlink()
        raise
    return out


def _native_inputs(
    trace: Trace, show_memory: bool, show_steps: bool
) -> tuple[Any, ...] | None:
    """The arguments of ``_core.write_chrome_trace`` after the trace and the output: the
    allocator series of the record replay and the step spans, as :func:`chrome_trace_events`
    reads them. None when a step lasts longer than int64 nanoseconds (the C++ writer takes
    int64 durations; the Python writer draws such a step)."""
    memory = memory_series(trace, enabled=show_memory)
    steps, starts, ends = step_columns(trace, "start_ns", "end_ns", enabled=show_steps)
    if any(e - s > 2**63 - 1 for s, e in zip(starts.tolist(), ends.tolist(), strict=True)):
        return None
    return (COUNTER_GROUP, *memory, steps, starts, ends - starts)


def _write_json_events(stream: IO[bytes], events: Iterator[str], chunk: int = 4096) -> None:
    stream.write(b'{"displayTimeUnit":"ns","otherData":{"producer":"tracecore"},"traceEvents":[\n')
    parts: list[str] = []
    first = True
    for event in events:
        parts.append(event if first else ",\n" + event)
        first = False
        if len(parts) >= chunk:
            stream.write("".join(parts).encode("ascii"))
            parts.clear()
    parts.append("\n]}\n")
    stream.write("".join(parts).encode("ascii"))
