"""A straightforward reference implementation of how a Chrome trace JSON file becomes tables
(issue 23), written with Python's json module and exact Decimal arithmetic. The C++ importer
is compared with it; nothing here is fast or clever on purpose.

Rules (what the importer must do the same way):

* Times: ``ts``/``dur`` are microseconds; ``start_ns = round(ts * 1000)`` and
  ``end_ns = round((ts + dur) * 1000)`` computed on the decimal text (ties to even), never
  through float. ``ts``/``dur`` may be strings holding a number.
* Tracks: one per ``(pid, tid)`` an event names (pid and tid as written: int or str; an event
  without ``tid`` is on its process's track ``(pid, None)``). ``device`` is the process name
  (``M`` ``process_name``), else ``str(pid)``; ``line`` is the thread name (``M``
  ``thread_name``), else ``str(tid)`` (``""`` for a process track). The last name given wins.
  Names are taken from string ``args.name`` values only. Tracks are made by the events read
  (X, B, E, i, I, C, s, t, f), in order of first use; metadata and other phases make none.
  ``kind``: ``"stream"`` when the process name says GPU (``GPU 0``, ``/device:GPU:0``,
  ``...device:GPU:0 Compute``) or TPU, or the thread name is ``stream N``;
  ``"annotation"`` for Kineto's string pids (``Spans``, ``Traces``, ``""``);
  ``"host_thread"`` otherwise.
* Events, grouped by track (in the order of the tracks' first use), in file order within a
  track: ``X`` events (``dur`` missing: 0; negative: an error); ``B``/``E`` pairs on one track
  (the event at the ``B``'s place), each ``E`` closing the most recent open ``B`` (its args
  after the ``B``'s; an ``E`` earlier than its ``B``: an error); an ``E`` with no open ``B``
  and a ``B`` never closed (no event) are counted in ``unmatched_end`` / ``unmatched_begin``;
  instants (``i``, ``I``) as zero-length events, Kineto's ``[memory]`` instants too (and alloc
  records). No event, counter or alloc record, but events of other phases or unmatched ones:
  an error (never an empty trace).
* ``op``: timeline.py writes ``args: {"name": node_name, "op": op_type}``: then ``op`` is
  ``args.op`` and ``node_name`` is ``args.name``; otherwise (Kineto, XProf, JAX) both are the
  event's ``name``. ``timeline_label`` is the event's ``name``; ``cat`` is its own column.
* Counters (``C``): one sample per ``args`` entry: (track of the pid, name, series = the args
  key, ts_ns, value).
* Flows (``s``, ``t``, ``f``; Kineto's ``ac2g`` and ``fwdbwd``): the points in file order;
  links join consecutive points of one ``(cat, id)`` chain from its ``s`` to its ``f``.
* Memory: Kineto ``[memory]`` instants are alloc records: ``bytes`` = ``Bytes`` (signed,
  negative frees), ``addr`` = ``Addr``, allocator = ``cpu`` / ``cuda:<Device Id>`` from
  ``Device Type`` (0 CPU, 1 CUDA; other types ``type<T>:<id>``), ``total_allocated`` /
  ``total_reserved`` from ``Total Allocated`` / ``Total Reserved``. timeline.py memory
  counters (``C`` of ``cat`` ``Memory``: each args key an allocator, the value bytes in use)
  are alloc records too (event id -1), with ``bytes`` the change from the allocator's
  previous value.
* ``kind`` is ``"Kineto"`` when the top level has ``schemaVersion``, ``deviceProperties`` or
  ``distributedInfo``, else ``"ChromeTrace"``.
"""

from __future__ import annotations

import gzip
import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path
from typing import Any

Id = int | str | None
TrackKey = tuple[Id, Id]


def to_ns(value: Any) -> int:
    """Microseconds (an int, a Decimal from parse_float, or a numeric string) to exact ns."""
    if isinstance(value, bool) or not isinstance(value, (int, str, Decimal)):
        raise TypeError(f"a time must be a number, not {value!r}")
    d = Decimal(value) if isinstance(value, (int, str)) else value
    return int((d * 1000).to_integral_value(rounding=ROUND_HALF_EVEN))


@dataclass
class Track:
    pid: Id
    tid: Id
    device: str
    line: str
    kind: str


@dataclass
class Event:
    track: TrackKey
    ph: str
    name: str
    cat: str | None
    start_ns: int
    end_ns: int
    op: str
    node_name: str
    args: dict[str, Any]
    arg_list: list[tuple[str, Any]] = field(default_factory=list)  # B's, then E's


@dataclass
class CounterSample:
    track: TrackKey
    name: str
    series: str
    ts_ns: int
    value: Any


@dataclass
class FlowPoint:
    ph: str
    cat: str | None
    id: Id
    name: str | None
    track: TrackKey
    ts_ns: int
    bp: str | None


@dataclass
class AllocRecord:
    track: TrackKey
    ts_ns: int
    allocator: str
    bytes: int
    addr: int | None
    total_allocated: int | None
    total_reserved: int | None
    event_id: int = -1


@dataclass
class ChromeOracle:
    kind: str = "ChromeTrace"
    metadata: dict[str, Any] = field(default_factory=dict)
    tracks: dict[TrackKey, Track] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)
    counters: list[CounterSample] = field(default_factory=list)
    flows: list[FlowPoint] = field(default_factory=list)
    alloc_records: list[AllocRecord] = field(default_factory=list)
    unmatched_begin: int = 0
    unmatched_end: int = 0
    other_phases: dict[str, int] = field(default_factory=dict)

    def per_track(self) -> dict[TrackKey, tuple[int, int]]:
        """(event count, summed durations in ns) per track."""
        out: dict[TrackKey, list[int]] = defaultdict(lambda: [0, 0])
        for e in self.events:
            out[e.track][0] += 1
            out[e.track][1] += e.end_ns - e.start_ns
        return {k: (v[0], v[1]) for k, v in out.items()}

    def links(self) -> list[tuple[FlowPoint, FlowPoint]]:
        """Consecutive points of each (cat, id) flow chain, from an s to its f."""
        open_chains: dict[tuple[str | None, Id], FlowPoint] = {}
        out = []
        for p in self.flows:
            key = (p.cat, p.id)
            if p.ph == "s":
                open_chains[key] = p
            elif key in open_chains:
                out.append((open_chains[key], p))
                if p.ph == "f":
                    del open_chains[key]
                else:
                    open_chains[key] = p
        return out

    def replay_in_use(self) -> dict[str, list[tuple[int, int]]]:
        """Per allocator, bytes in use after each record: the sum of the records' bytes, from
        the amount in use before the first record (its total_allocated minus its bytes)."""
        out: dict[str, list[tuple[int, int]]] = defaultdict(list)
        running: dict[str, int] = {}
        for r in self.alloc_records:
            if r.allocator not in running:
                running[r.allocator] = (r.total_allocated or r.bytes) - r.bytes
            running[r.allocator] += r.bytes
            out[r.allocator].append((r.ts_ns, running[r.allocator]))
        return dict(out)


_GPU = re.compile(r"(^gpu(?![a-z0-9_])|/device:gpu|(?<![a-z0-9])gpu[: ]\d)", re.IGNORECASE)
_TPU = re.compile(r"((?<![a-z0-9_])tpu(?![a-z0-9_])|/device:tpu)", re.IGNORECASE)
_STREAM = re.compile(r"^stream\s*#?\d+", re.IGNORECASE)
_DEVICE_TYPES = {0: "cpu", 1: "cuda"}


def _kind(pid: Id, process: str | None, thread: str | None) -> str:
    if (process and _GPU.search(process)) or (thread and _STREAM.search(thread)):
        return "stream"
    if process and _TPU.search(process):
        return "stream"
    if isinstance(pid, str):
        return "annotation"
    return "host_thread"


def _allocator(args: dict[str, Any]) -> str:
    device_type = int(args.get("Device Type", 0))
    device_id = int(args.get("Device Id", -1))
    base = _DEVICE_TYPES.get(device_type, f"type{device_type}")
    return base if device_id < 0 else f"{base}:{device_id}"


def load(data: bytes) -> Any:
    """The document with floats as Decimal (exact decimal text)."""
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return json.loads(data, parse_float=Decimal)


def read(data: bytes) -> ChromeOracle:
    doc = load(data)
    o = ChromeOracle()
    events = doc.get("traceEvents") if isinstance(doc, dict) else doc
    if not isinstance(events, list):
        raise ValueError("not a Chrome trace: no traceEvents array")  # noqa: TRY004
    if isinstance(doc, dict):
        o.metadata = {k: v for k, v in doc.items() if k != "traceEvents"}
        if {"schemaVersion", "deviceProperties", "distributedInfo"} & o.metadata.keys():
            o.kind = "Kineto"

    process_names: dict[Id, str] = {}
    thread_names: dict[TrackKey, str] = {}
    seen: dict[TrackKey, None] = {}
    open_begins: dict[TrackKey, list[Event]] = defaultdict(list)
    slots: list[Event | None] = []
    memory_totals: dict[str, int] = {}

    def track_of(e: dict[str, Any]) -> TrackKey:
        key = (e.get("pid"), e.get("tid"))
        seen.setdefault(key, None)
        return key

    for e in events:
        if not e:
            continue  # XProf's trailing {}
        if not isinstance(e, dict):
            raise TypeError("a traceEvents element is not an object")
        ph = e.get("ph", "")
        name = e.get("name", "")
        args = e.get("args") or {}
        if ph == "M":
            value = args.get("name")
            if name == "process_name" and isinstance(value, str):
                process_names[e.get("pid")] = value
            elif name == "thread_name" and isinstance(value, str):
                thread_names[(e.get("pid"), e.get("tid"))] = value
            continue
        if ph not in ("X", "B", "E", "i", "I", "C", "s", "t", "f"):
            o.other_phases[ph] = o.other_phases.get(ph, 0) + 1
            continue
        key = track_of(e)
        if ph in ("X", "B", "i", "I"):
            start = to_ns(e.get("ts", 0))
            dur = to_ns(e.get("dur", 0)) if ph == "X" else 0
            if dur < 0:
                raise ValueError("a negative dur")
            end = start + dur
            timeline = isinstance(args.get("op"), str) and isinstance(args.get("name"), str)
            ev = Event(key, ph, name, e.get("cat"), start, end,
                       args["op"] if timeline else name, args["name"] if timeline else name,
                       dict(args), list(args.items()))
            slots.append(ev)
            if ph == "B":
                open_begins[key].append(ev)
            if ph in ("i", "I") and name == "[memory]":  # Kineto
                o.alloc_records.append(AllocRecord(
                    key, start, _allocator(args), int(args.get("Bytes", 0)), args.get("Addr"),
                    args.get("Total Allocated"), args.get("Total Reserved"), len(slots) - 1))
        elif ph == "E":
            if open_begins[key]:
                ev = open_begins[key].pop()
                ev.end_ns = to_ns(e.get("ts", 0))
                if ev.end_ns < ev.start_ns:
                    raise ValueError("an E event earlier than its B")
                ev.args.update(args)
                ev.arg_list.extend(args.items())
            else:
                o.unmatched_end += 1
        elif ph == "C":
            ts = to_ns(e.get("ts", 0))
            for series, value in args.items():
                o.counters.append(CounterSample(key, name, series, ts, value))
                if (e.get("cat") == "Memory" and isinstance(value, int)
                        and not isinstance(value, bool)):
                    total = int(value)
                    delta = total - memory_totals.get(series, 0)
                    memory_totals[series] = total
                    o.alloc_records.append(
                        AllocRecord(key, ts, series, delta, None, total, None, -1))
        else:  # s, t, f
            o.flows.append(FlowPoint(ph, e.get("cat"), e.get("id"), e.get("name"), key,
                                     to_ns(e.get("ts", 0)), e.get("bp")))
    unclosed = {id(ev) for stack in open_begins.values() for ev in stack}
    o.unmatched_begin = len(unclosed)
    track_order = {key: n for n, key in enumerate(seen)}
    kept = [i for i, ev in enumerate(slots) if id(ev) not in unclosed]
    kept.sort(key=lambda i: track_order[slots[i].track])  # stable: file order within a track
    final: dict[int, int] = {}
    for i in kept:
        final[i] = len(o.events)
        o.events.append(slots[i])
    if not o.events and not o.counters and not o.alloc_records and (
            o.other_phases or o.unmatched_begin or o.unmatched_end):
        raise ValueError("no event tracecore reads")
    for r in o.alloc_records:
        if r.event_id >= 0:
            r.event_id = final[r.event_id]
    for key in seen:
        pid, tid = key
        process = process_names.get(pid)
        thread = thread_names.get(key)
        o.tracks[key] = Track(pid, tid, process if process is not None else str(pid),
                              thread if thread is not None else ("" if tid is None else str(tid)),
                              _kind(pid, process, thread))
    return o


def read_file(path: str | Path) -> ChromeOracle:
    return read(Path(path).read_bytes())
