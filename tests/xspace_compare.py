"""tracecore's XSpace tables side by side with the oracle's rows (tests/xspace_oracle.py).

Each function gives, for one table, the rows tracecore holds and the rows the oracle expects,
in the same plain form (lists of dicts; a NaN double as the string "nan", so that equal rows
compare equal), for tests to assert equal.
"""

from __future__ import annotations

import math

import tracecore
import xspace_oracle as xo

STAT_VALUE_COLUMNS = ("int64_value", "uint64_value", "double_value", "str_value", "bytes_value")


def _nan_safe(value: object) -> object:
    return "nan" if isinstance(value, float) and math.isnan(value) else value


def _rows(table, columns: list[str]) -> list[dict[str, object]]:
    return [{k: _nan_safe(v) for k, v in row.items()} for row in table.select(columns).to_pylist()]


STAT_COLUMNS = ["name", "metadata_id", "value_kind", *STAT_VALUE_COLUMNS]


def event_stats(t: tracecore.Trace, want: xo.XSpaceTables, refs: dict) -> tuple[list, list]:
    """(got, expected) rows of ``event_stats``. ``refs``: per (event_id, position) of a ref
    stat, its raw ref_value (the oracle resolves it to the name only)."""
    got = _rows(t.event_stats, ["event_id", *STAT_COLUMNS, "inherited"])
    expected = []
    for e in want.events:
        for i, s in enumerate(e.stats):
            row = {"event_id": e.event_id, **_stat_row(s, refs.get((e.event_id, i))),
                   "inherited": s.inherited}
            expected.append(row)
    return got, expected


def _stat_row(s: xo.Stat, ref_value: int | None) -> dict[str, object]:
    values: dict[str, object] = dict.fromkeys(STAT_VALUE_COLUMNS)
    column = {"int64": "int64_value", "uint64": "uint64_value", "double": "double_value",
              "str": "str_value", "compressed": "str_value", "bytes": "bytes_value"}.get(s.kind)
    if column is not None:
        values[column] = _nan_safe(s.value)
    elif s.kind == "ref":
        values["uint64_value"] = ref_value
        values["str_value"] = s.value
    return {"name": s.name, "metadata_id": s.metadata_id, "value_kind": s.kind, **values}


def ref_values(space) -> tuple[dict, dict]:
    """The raw ref_value of every ref stat: per (event_id, position in its full stat set) and
    per (plane_index, position among the plane's stats), from the protobuf message."""
    events: dict = {}
    planes: dict = {}
    event_id = 0
    for plane_index, plane in enumerate(space.planes):
        for i, s in enumerate(plane.stats):
            if s.WhichOneof("value") == "ref_value":
                planes[(plane_index, i)] = s.ref_value
        for line in plane.lines:
            for ev in line.events:
                if ev.WhichOneof("data") == "num_occurrences":
                    continue
                own = list(ev.stats)
                own_ids = {s.metadata_id for s in own}
                meta = plane.event_metadata.get(ev.metadata_id)
                inherited = [s for s in meta.stats if s.metadata_id not in own_ids] if meta else []
                for i, s in enumerate(own + inherited):
                    if s.WhichOneof("value") == "ref_value":
                        events[(event_id, i)] = s.ref_value
                event_id += 1
    return events, planes


def plane_stats(t: tracecore.Trace, want: xo.XSpaceTables, refs: dict) -> tuple[list, list]:
    got = _rows(t.plane_stats, ["plane_index", "plane", *STAT_COLUMNS])
    expected = []
    position: dict[int, int] = {}
    for r in want.plane_stats:
        i = position.get(r.plane_index, 0)
        position[r.plane_index] = i + 1
        expected.append({"plane_index": r.plane_index, "plane": r.plane,
                         **_stat_row(r.stat, refs.get((r.plane_index, i)))})
    return got, expected


def aggregates(t: tracecore.Trace, want: xo.XSpaceTables) -> tuple[list, list]:
    got = _rows(t.aggregate_events, ["device_index", "device", "node_name", "timeline_label",
                                     "op", "num_occurrences", "duration_ps"])
    expected = [{"device_index": a.line_index, "device": a.plane, "node_name": a.node_name,
                 "timeline_label": a.display_name, "op": xo.derive_op(a.node_name, a.stats),
                 "num_occurrences": a.num_occurrences, "duration_ps": a.duration_ps}
                for a in want.aggregates]
    return got, expected


ALLOC_COLUMNS = ["event_id", "allocator", "time_ns", "bytes", "is_allocation", "heap_allocated",
                 "stack_reserved", "free", "fragmentation", "peak_bytes_in_use",
                 "requested_bytes", "allocation_bytes", "address", "tf_op", "shape", "dtype",
                 "region", "step_id"]


def alloc_record_row(r: xo.AllocRecord) -> dict[str, object]:
    return {"event_id": r.event_id, "allocator": r.allocator, "time_ns": r.time_ns,
            "bytes": r.bytes, "is_allocation": r.is_allocation,
            "heap_allocated": r.heap_allocated, "stack_reserved": r.stack_reserved,
            "free": r.free, "fragmentation": _nan_safe(r.fragmentation),
            "peak_bytes_in_use": r.peak_bytes_in_use, "requested_bytes": r.requested_bytes,
            "allocation_bytes": r.allocation_bytes, "address": r.address, "tf_op": r.tf_op,
            "shape": list(r.shape) if r.shape is not None else None, "dtype": r.dtype,
            "region": r.region, "step_id": r.step}


def alloc_records(t: tracecore.Trace, want: xo.XSpaceTables) -> tuple[list, list]:
    return _rows(t.alloc_records, ALLOC_COLUMNS), [alloc_record_row(r) for r in want.alloc_records]


def peaks(t: tracecore.Trace, want: xo.XSpaceTables) -> tuple[dict, dict]:
    """Per allocator: the in_use replay's peak figures and live allocations (event ids)."""
    replay = t.replay(source="in_use")
    got = {}
    for row in replay.peaks.to_pylist():
        live = replay.live_at_peak(row["allocator"])["event_id"].to_pylist()
        got[row["allocator"]] = (row["peak_bytes"], row["peak_time_ns"], row["peak_event_id"],
                                 row["lifetime_peak_bytes"], live)
    expected = {a: (p.peak_bytes, p.peak_record.time_ns, p.peak_record.event_id,
                    p.lifetime_peak_bytes, [r.event_id for r in p.live])
                for a, p in want.peaks.items()}
    return got, expected
