"""Test oracle for XSpace: the rows tracecore's tables must hold, from a protobuf-parsed XSpace.

``expected_xspace(space)`` takes an ``xspace_proto.XSpace`` and returns ``XSpaceTables``: lines
(the devices table), timed events, aggregate events, every event's full stat set, plane stats,
memory records and per-allocator memory peaks. The rules, one place each:

Time (``event_times``). An event starts at ``line.timestamp_ns`` (ns) + ``offset_ps`` (ps) and
  lasts ``duration_ps``. With exact integers, in picoseconds:
      start_ps = timestamp_ns * 1000 + offset_ps,   end_ps = start_ps + duration_ps
      start_ns = floor(start_ps / 1000),            end_ns = floor(end_ps / 1000)
  i.e. start_ns = timestamp_ns + floor(offset_ps / 1000). Flooring both ends of the exact
  picosecond interval (never the duration on its own) is monotone: an event nested in another
  in picoseconds stays nested in nanoseconds, and two events that do not overlap still do not
  (rounding the duration separately can make a child end after its parent). floor, not
  truncation, so negative offsets round the same way as positive ones. The intermediate
  picosecond values may exceed int64 (``timestamp_ns`` is an epoch time in unshifted files:
  1.8e18 ns is 1.8e21 ps); only the results must fit: start_ns or end_ns outside int64 raises
  ``OracleOutOfRange`` (tracecore: TraceFormatError, out of range). A negative duration is
  kept as it is (end_ns < start_ns). XProf differs: it adds the offset as a double of
  nanoseconds and truncates.

Events. An event whose oneof ``data`` holds ``num_occurrences`` (the last member on the wire
  wins) is an aggregate: a row of ``aggregates``, not of the timeline. Every other event (with
  ``offset_ps``, or neither, offset 0) is a timed event; event ids number the timed events in
  file order (planes, lines, events), aggregate ids the aggregates.
  Names: ``node_name`` = the event metadata's ``name`` in the event's own plane,
  ``display_name`` its ``display_name``; a metadata id absent from the plane's map gives ""
  for both (as XProf's default metadata).

Stats (``full_stats``). An event's full stat set is its own stats, in order (all of them, a
  repeated metadata id included), then the stats of its event metadata whose metadata id is not
  among the event's own (the event's own win; inherited ones are flagged ``inherited``). A
  stat's name is its stat metadata's ``name`` ("" when absent from the map). Value by the oneof
  member set (the last on the wire): double, uint64, int64, str, bytes, ref (the value is the
  ``name`` of the stat metadata whose id is ``ref_value`` read as int64: the map keys are
  int64; "" when absent), compressed (``compressed_str_value`` gunzipped and decoded as UTF-8; a
  value that is not gzip or not UTF-8 raises ``OracleBadValue``), or none (no member set).
  Looking a stat up by name (op, step, memory columns) takes the first of that name in the full
  set.

Op (``derive_op``), first that applies:
  1. an ``hlo_category`` stat with a non-empty string value: that value;
  2. an ``hlo_op`` stat with a non-empty string value: the HLO instruction name without its
     ``.<digits>`` uniquifier (``dot.1`` -> ``dot``, ``add_tanh_fusion`` stays);
  3. a TensorFlow op name ``scope/name:OpType``: the text after the last ':', when it is an
     identifier ([A-Za-z_][A-Za-z0-9_]*) and the ':' is neither the first character nor part
     of a '::' (``Iterator::Root::Prefetch``, ``ThreadpoolListener::Record`` are no ops);
  4. else None.
Step (``derive_step``): the integer value of the first of ``group_id``, ``step_num``,
  ``iter_num`` present in the full stat set (int64, or uint64 up to INT64_MAX), else None. Raw
  profiler files carry ``group_id`` only once XProf has grouped them; TF/JAX step markers carry
  ``step_num``, TF executor events ``iter_num``. Not propagated to nested events.

Line kind (``line_kind``): lines of a ``/host:...`` plane are ``host_thread``; on a
  ``/device:...`` plane the lines XProf derives are named for what they hold (``XLA Ops`` ->
  ``xla_ops``, ``XLA Modules`` -> ``xla_modules``, ``Steps`` -> ``steps``, ``Async XLA Ops``
  -> ``xla_async_ops``, ``TensorFlow Ops``/``Framework Ops``, ``TensorFlow Name Scope``/
  ``Framework Name Scope``, ``Source code``, ``XLA TraceMe`` -> ``derived``), every other line is
  a ``stream``; lines of any other plane are ``other``.

Memory (``memory_records``): every timed event named ``MemoryAllocation`` or
  ``MemoryDeallocation`` (any plane) is a record: ``time_ns`` = the event's start_ns,
  ``allocator`` = the string value of ``allocator_name`` (else the decimal value of
  ``index_on_host``, else of ``device_ordinal``, else ""), ``bytes`` = +``allocation_bytes`` for
  an allocation, -``allocation_bytes`` for a deallocation (0 without that stat; a deallocation
  of -2^63 bytes raises ``OracleOutOfRange``, as its negation does not fit), and the stats as
  columns: heap_allocated (``bytes_allocated``), stack_reserved (``bytes_reserved``), free
  (``bytes_available``), fragmentation (``fragmentation``: double, or an integer value as a
  double), peak_bytes_in_use, requested_bytes, allocation_bytes, address (``addr``: uint64, an
  int64 value read as its two's complement), tf_op, shape (``shape`` parsed from ``[d0,d1,...]``
  into a list of int64, None when it is not of that form), dtype (``data_type`` as a DataType
  name, DT_FLOAT...), region (``region_type``), step (``group_id`` only). Integer columns take
  an int64 value or a uint64 value up to INT64_MAX, else None; string columns a str, ref or
  compressed value, else None.

Peaks (``memory_peaks``), per allocator, over its records in time order (file order for equal
  times): in_use = heap_allocated + stack_reserved (a missing stat counts 0; a sum outside int64
  raises ``OracleOutOfRange``, tracecore: OverflowError); the peak is the
  largest in_use, at the LAST record reaching it (XProf keeps the last too); the allocations
  live at the peak are the allocation records up to and including the peak record whose
  address no later deallocation (up to the peak) released (matched by address; a second
  allocation of a live address replaces the first; records without an address are not
  matched); ``lifetime_peak_bytes`` = the largest ``peak_bytes_in_use`` of the allocator's
  records (None when none has it).

What XProf's memory profile does differently (checked in tests/test_xspace_oracle.py): it reads
only the ``/host:CPU`` plane and only an event's own stats (not its metadata's); it keys
snapshots by ``offset_ps`` (relative to each line's own timestamp); it picks the peak as the last
event with the largest in_use in file order (line after line), and the lifetime peak as the
``peak_bytes_in_use`` of the last memory event in file order; it takes an allocator id from the
last of allocator_name/index_on_host/device_ordinal in stat order; integer stats are read from
int64 values only; it copies an allocation's op, region, dtype and shape onto the deallocation
matched by address; and it counts as live at the peak only the allocations made in the peak's
step (its ``group_id``, assigned by its own event grouping), reporting the rest of the heap as
"unused preallocated device memory".

This module deliberately does not import tracecore.
"""

from __future__ import annotations

import gzip
import re
import zlib
from dataclasses import dataclass, field

from oracle import INT64_MAX, OracleOutOfRange, checked, dtype_name

__all__ = [
    "AggregateRow", "AllocRecord", "EventRow", "LineRow", "MemoryPeak", "OracleBadValue",
    "OracleOutOfRange", "PlaneStatRow", "Stat", "XSpaceTables", "derive_op", "derive_step",
    "event_times", "expected_xspace", "line_kind", "memory_peaks", "parse_shape",
]

UINT64_MOD = 1 << 64


class OracleBadValue(ValueError):
    """A stat value tracecore cannot read (a compressed string that is not gzip'ed UTF-8)."""


@dataclass(frozen=True)
class Stat:
    name: str
    metadata_id: int
    # double | uint64 | int64 | str | bytes | ref | compressed | none
    kind: str
    # float, int, str (str, ref resolved, compressed decompressed), bytes, or None (kind none)
    value: object
    inherited: bool = False


@dataclass(frozen=True)
class LineRow:
    line_index: int  # file order over all planes
    plane_index: int
    plane: str
    plane_id: int
    line_id: int
    display_id: int
    line: str
    display_name: str
    timestamp_ns: int
    duration_ps: int
    kind: str
    n_events: int  # timed events
    n_aggregates: int


@dataclass(frozen=True)
class EventRow:
    event_id: int
    line_index: int
    plane: str
    line: str
    metadata_id: int
    node_name: str
    display_name: str
    op: str | None
    start_ns: int
    end_ns: int
    offset_ps: int
    duration_ps: int
    step: int | None
    stats: tuple[Stat, ...]


@dataclass(frozen=True)
class AggregateRow:
    aggregate_id: int
    line_index: int
    plane: str
    line: str
    metadata_id: int
    node_name: str
    display_name: str
    num_occurrences: int
    duration_ps: int
    stats: tuple[Stat, ...]


@dataclass(frozen=True)
class PlaneStatRow:
    plane_index: int
    plane: str
    stat: Stat


@dataclass(frozen=True)
class AllocRecord:
    event_id: int
    line_index: int
    offset_ps: int
    time_ns: int
    allocator: str
    is_allocation: bool
    bytes: int
    heap_allocated: int | None
    stack_reserved: int | None
    free: int | None
    fragmentation: float | None
    peak_bytes_in_use: int | None
    requested_bytes: int | None
    allocation_bytes: int | None
    address: int | None
    tf_op: str | None
    shape: tuple[int, ...] | None
    dtype: str | None
    region: str | None
    step: int | None


@dataclass(frozen=True)
class MemoryPeak:
    allocator: str
    peak_bytes: int  # heap_allocated + stack_reserved at the peak
    peak_record: AllocRecord
    lifetime_peak_bytes: int | None
    live: tuple[AllocRecord, ...]  # allocations live at the peak, in time order


@dataclass
class XSpaceTables:
    lines: list[LineRow] = field(default_factory=list)
    events: list[EventRow] = field(default_factory=list)
    aggregates: list[AggregateRow] = field(default_factory=list)
    plane_stats: list[PlaneStatRow] = field(default_factory=list)
    alloc_records: list[AllocRecord] = field(default_factory=list)
    peaks: dict[str, MemoryPeak] = field(default_factory=dict)
    hostnames: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------------------------
# Rules
# --------------------------------------------------------------------------------------------
def event_times(timestamp_ns: int, offset_ps: int, duration_ps: int) -> tuple[int, int]:
    """(start_ns, end_ns): both ends of the exact picosecond interval, floored."""
    start_ps = timestamp_ns * 1000 + offset_ps
    return checked(start_ps // 1000), checked((start_ps + duration_ps) // 1000)


def _as_int64_key(value: int) -> int:
    """A uint64 (ref_value) read as the int64 map key with the same bits."""
    return value - UINT64_MOD if value > INT64_MAX else value


def _gunzip_utf8(data: bytes) -> str:
    try:
        return gzip.decompress(data).decode("utf-8")
    except (OSError, EOFError, zlib.error, UnicodeDecodeError) as e:
        raise OracleBadValue(f"compressed_str_value is not a gzip'ed UTF-8 string: {e}") from e


def stat_of(msg, stat_names: dict[int, str], inherited: bool = False) -> Stat:
    """One XStat message as a Stat (name and ref resolved through `stat_names`)."""
    kind = msg.WhichOneof("value")
    name = stat_names.get(msg.metadata_id, "")
    if kind is None:
        return Stat(name, msg.metadata_id, "none", None, inherited)
    value = getattr(msg, kind)
    short = {"double_value": "double", "uint64_value": "uint64", "int64_value": "int64",
             "str_value": "str", "bytes_value": "bytes", "ref_value": "ref",
             "compressed_str_value": "compressed"}[kind]
    if short == "ref":
        value = stat_names.get(_as_int64_key(value), "")
    elif short == "compressed":
        value = _gunzip_utf8(value)
    return Stat(name, msg.metadata_id, short, value, inherited)


def full_stats(own, metadata, stat_names: dict[int, str]) -> tuple[Stat, ...]:
    """The event's own stats, then its metadata's stats whose id the event does not hold."""
    stats = [stat_of(s, stat_names) for s in own]
    own_ids = {s.metadata_id for s in own}
    if metadata is not None:
        stats += [stat_of(s, stat_names, inherited=True) for s in metadata.stats
                  if s.metadata_id not in own_ids]
    return tuple(stats)


def find(stats: tuple[Stat, ...], name: str) -> Stat | None:
    return next((s for s in stats if s.name == name), None)


def int_value(stat: Stat | None) -> int | None:
    if stat is None:
        return None
    if stat.kind == "int64" or (stat.kind == "uint64" and stat.value <= INT64_MAX):
        return stat.value  # type: ignore[return-value]
    return None


def str_value(stat: Stat | None) -> str | None:
    if stat is None or stat.kind not in ("str", "ref", "compressed"):
        return None
    return stat.value  # type: ignore[return-value]


_TF_OP_TYPE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_HLO_UNIQUIFIER = re.compile(r"\.[0-9]+\Z")


def derive_op(node_name: str, stats: tuple[Stat, ...]) -> str | None:
    category = str_value(find(stats, "hlo_category"))
    if category:
        return category
    hlo_op = str_value(find(stats, "hlo_op"))
    if hlo_op:
        return _HLO_UNIQUIFIER.sub("", hlo_op)
    colon = node_name.rfind(":")
    if colon > 0 and node_name[colon - 1] != ":" and _TF_OP_TYPE.match(node_name[colon + 1:]):
        return node_name[colon + 1:]
    return None


def derive_step(stats: tuple[Stat, ...]) -> int | None:
    for name in ("group_id", "step_num", "iter_num"):
        stat = find(stats, name)
        if stat is not None:
            return int_value(stat)
    return None


_DERIVED_DEVICE_LINES = {
    "XLA Ops": "xla_ops", "XLA Modules": "xla_modules", "Steps": "steps",
    "Async XLA Ops": "xla_async_ops", "TensorFlow Ops": "derived", "Framework Ops": "derived",
    "TensorFlow Name Scope": "derived", "Framework Name Scope": "derived",
    "Source code": "derived", "XLA TraceMe": "derived",
}


def line_kind(plane: str, line: str) -> str:
    if plane.startswith("/host:"):
        return "host_thread"
    if plane.startswith("/device:"):
        return _DERIVED_DEVICE_LINES.get(line, "stream")
    return "other"


_SHAPE = re.compile(r"\[\s*(-?[0-9]+(\s*,\s*-?[0-9]+)*)?\s*\]\Z", re.ASCII)
_BLANKS = " \t\n\r\f\v"  # ASCII white space only, around the brackets and between dims


def parse_shape(text: str | None) -> tuple[int, ...] | None:
    """`[128,1024]` -> (128, 1024), `[]` -> (); anything else (or an int64 overflow) -> None."""
    if text is None or not _SHAPE.match(text.strip(_BLANKS)):
        return None
    inner = text.strip(_BLANKS)[1:-1].strip(_BLANKS)
    dims = tuple(int(d) for d in inner.split(",")) if inner else ()
    return dims if all(-INT64_MAX - 1 <= d <= INT64_MAX for d in dims) else None


def _float_value(stat: Stat | None) -> float | None:
    if stat is None:
        return None
    if stat.kind == "double":
        return stat.value  # type: ignore[return-value]
    if stat.kind in ("int64", "uint64"):
        return float(stat.value)  # type: ignore[arg-type]
    return None


def memory_record(event: EventRow) -> AllocRecord:
    s = event.stats
    allocator = str_value(find(s, "allocator_name"))
    if allocator is None:
        for name in ("index_on_host", "device_ordinal"):
            index = int_value(find(s, name))
            if index is not None:
                allocator = str(index)
                break
    is_allocation = event.node_name == "MemoryAllocation"
    allocation_bytes = int_value(find(s, "allocation_bytes"))
    address_stat = find(s, "addr")
    address = None
    if address_stat is not None and address_stat.kind in ("int64", "uint64"):
        address = address_stat.value % UINT64_MOD  # type: ignore[operator]
    data_type = int_value(find(s, "data_type"))
    return AllocRecord(
        event_id=event.event_id, line_index=event.line_index, offset_ps=event.offset_ps,
        time_ns=event.start_ns, allocator=allocator or "", is_allocation=is_allocation,
        bytes=checked((allocation_bytes or 0) * (1 if is_allocation else -1)),
        heap_allocated=int_value(find(s, "bytes_allocated")),
        stack_reserved=int_value(find(s, "bytes_reserved")),
        free=int_value(find(s, "bytes_available")),
        fragmentation=_float_value(find(s, "fragmentation")),
        peak_bytes_in_use=int_value(find(s, "peak_bytes_in_use")),
        requested_bytes=int_value(find(s, "requested_bytes")),
        allocation_bytes=allocation_bytes,
        address=address,
        tf_op=str_value(find(s, "tf_op")),
        shape=parse_shape(str_value(find(s, "shape"))),
        dtype=dtype_name(data_type) if data_type is not None else None,
        region=str_value(find(s, "region_type")),
        step=int_value(find(s, "group_id")),
    )


def memory_peaks(records: list[AllocRecord]) -> dict[str, MemoryPeak]:
    by_allocator: dict[str, list[AllocRecord]] = {}
    for r in records:
        by_allocator.setdefault(r.allocator, []).append(r)
    peaks = {}
    for allocator, recs in by_allocator.items():
        recs = sorted(recs, key=lambda r: r.time_ns)  # stable: file order for equal times
        in_use = [checked((r.heap_allocated or 0) + (r.stack_reserved or 0)) for r in recs]
        top = max(in_use)
        at = max(i for i, v in enumerate(in_use) if v == top)
        live: dict[int, AllocRecord] = {}
        for r in recs[:at + 1]:
            if r.address is None:
                continue
            if r.is_allocation:
                live.pop(r.address, None)  # a re-allocation moves to its new time
                live[r.address] = r
            else:
                live.pop(r.address, None)
        lifetime = [r.peak_bytes_in_use for r in recs if r.peak_bytes_in_use is not None]
        peaks[allocator] = MemoryPeak(
            allocator=allocator, peak_bytes=top, peak_record=recs[at],
            lifetime_peak_bytes=max(lifetime) if lifetime else None,
            live=tuple(sorted(live.values(), key=lambda r: (r.time_ns, r.event_id))))
    return peaks


# --------------------------------------------------------------------------------------------
# The whole XSpace
# --------------------------------------------------------------------------------------------
def expected_xspace(space) -> XSpaceTables:
    """Every row tracecore must report for `space` (an xspace_proto.XSpace).

    Raises OracleOutOfRange when an event's start_ns/end_ns overflows int64 and OracleBadValue
    for a compressed string that does not decompress to UTF-8."""
    out = XSpaceTables(hostnames=list(space.hostnames), errors=list(space.errors),
                       warnings=list(space.warnings))
    line_index = 0
    for plane_index, plane in enumerate(space.planes):
        stat_names = {k: v.name for k, v in plane.stat_metadata.items()}
        out.plane_stats += [PlaneStatRow(plane_index, plane.name, stat_of(s, stat_names))
                            for s in plane.stats]
        for line in plane.lines:
            n_events = n_aggregates = 0
            for ev in line.events:
                metadata = plane.event_metadata.get(ev.metadata_id)
                name = metadata.name if metadata is not None else ""
                display = metadata.display_name if metadata is not None else ""
                stats = full_stats(ev.stats, metadata, stat_names)
                if ev.WhichOneof("data") == "num_occurrences":
                    out.aggregates.append(AggregateRow(
                        len(out.aggregates), line_index, plane.name, line.name, ev.metadata_id,
                        name, display, ev.num_occurrences, ev.duration_ps, stats))
                    n_aggregates += 1
                    continue
                start_ns, end_ns = event_times(line.timestamp_ns, ev.offset_ps, ev.duration_ps)
                out.events.append(EventRow(
                    len(out.events), line_index, plane.name, line.name, ev.metadata_id, name,
                    display, derive_op(name, stats), start_ns, end_ns, ev.offset_ps,
                    ev.duration_ps, derive_step(stats), stats))
                n_events += 1
            out.lines.append(LineRow(
                line_index, plane_index, plane.name, plane.id, line.id, line.display_id,
                line.name, line.display_name, line.timestamp_ns, line.duration_ps,
                line_kind(plane.name, line.name), n_events, n_aggregates))
            line_index += 1
    out.alloc_records = [memory_record(e) for e in out.events
                         if e.node_name in ("MemoryAllocation", "MemoryDeallocation")]
    out.peaks = memory_peaks(out.alloc_records)
    return out
