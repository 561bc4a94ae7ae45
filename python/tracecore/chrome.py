"""Chrome trace-event JSON of a trace, for Perfetto and chrome://tracing
(``Trace.to_chrome_trace``)."""

from __future__ import annotations

import gzip
import os
import re
from collections.abc import Iterator
from json.encoder import encode_basestring_ascii
from pathlib import Path
from typing import IO, TYPE_CHECKING

from .outputs import checked_output_file, naming

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


def chrome_trace_events(
    trace: Trace, *, show_memory: bool = True, batch_rows: int = 65536
) -> Iterator[str]:
    """The trace-event JSON objects of :func:`to_chrome_trace`, one string per event, produced
    batch by batch from the tables (never all at once)."""
    enc = encode_basestring_ascii
    devices = trace.devices
    memory_pid = (max(devices["device_index"].to_pylist()) + 1) if devices.num_rows else 0
    for row in devices.to_pylist():
        yield from _process_metadata(row["device_index"], row["device"] or "")

    lanes: dict[int, _Lanes] = {}
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
            device_lanes = lanes.get(device_index)
            if device_lanes is None:
                device_lanes = lanes[device_index] = _Lanes()
            lane = device_lanes.assign(start, end)
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
                f'"pid":{device_index},"tid":{lane},"ts":{_us(start)},"dur":{_us(end - start)},'
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


def to_chrome_trace(
    trace: Trace, path: str | os.PathLike[str], *, show_memory: bool = True
) -> Path:
    """Writes a Chrome trace-event JSON file that Perfetto and chrome://tracing load.

    One process per device block (``pid`` = ``device_index``, named by ``process_name``
    metadata events), lanes as threads (timeline.py's greedy lane assignment), one complete event
    (``"ph": "X"``, ``ts``/``dur`` in microseconds) per node record named by its op (or node name)
    with ``name``, ``op`` and ``input<i>`` (from the label) in ``args``; with ``show_memory``, one
    counter series (``"ph": "C"``) per allocator from the record replay, in an "Allocators"
    process. Gzip-compressed when the name ends in ``.gz``. Written streaming, in batches, to a
    temporary file renamed into place at the end."""
    out = checked_output_file(path)
    tmp = out.with_name(f".{out.name}.tmp")
    try:
        raw: IO[bytes]
        with naming(out):
            raw = tmp.open("wb")
        with raw:
            stream: IO[bytes] = raw
            if out.name.endswith(".gz"):
                stream = gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=6)  # type: ignore[assignment]
            try:
                _write_json_events(stream, chrome_trace_events(trace, show_memory=show_memory))
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
