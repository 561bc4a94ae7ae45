"""Test oracle: the rows tracecore must report, computed from a protobuf-parsed message.

``expected_tables(msg)`` derives every table of docs/tables.md from a StepStats or
RunMetadata message (the classes in tests/tfproto.py, or any message with the same field names),
following the contract's derivation rules literally. ``assert_trace_matches(trace, msg)`` compares
a tracecore Trace with it column by column (schema too) and reports the first mismatching row.

This module deliberately does not import tracecore.
"""

from __future__ import annotations

import math
from typing import Any

from tfproto import DATA_TYPE_NAMES

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1

ASCII_WS = " \t\n\r\f\v"


class OracleOutOfRange(ValueError):
    """A derived nanosecond value overflows int64: tracecore.open must raise TraceFormatError."""


# --------------------------------------------------------------------------------------------
# Column specs: table -> [(column, type)], in the order of docs/tables.md.
# type is one of: int32 int64 uint32 uint64 bool string dict list<int32> list<int64> list<string>
# --------------------------------------------------------------------------------------------
# alloc_records' columns of XSpace memory events' stats: all null for StepStats.
_XSPACE_MEMORY_COLUMNS = [
    ("is_allocation", "bool"), ("heap_allocated", "int64"), ("stack_reserved", "int64"),
    ("free", "int64"), ("fragmentation", "float64"), ("peak_bytes_in_use", "int64"),
    ("requested_bytes", "int64"), ("allocation_bytes", "int64"), ("address", "uint64"),
    ("tf_op", "dict"), ("shape", "list<int64>"), ("dtype", "dict"), ("region", "dict"),
    ("step_id", "int64"), ("reserved", "int64"),
]
_STAT_COLUMNS = [
    ("name", "dict"), ("metadata_id", "int64"), ("value_kind", "dict"), ("int64_value", "int64"),
    ("uint64_value", "uint64"), ("double_value", "float64"), ("str_value", "dict"),
    ("bytes_value", "binary"),
]
SCHEMAS: dict[str, list[tuple[str, str]]] = {
    "devices": [
        ("device_index", "int32"), ("device", "dict"), ("line", "dict"), ("line_id", "int64"),
        ("kind", "string"), ("n_events", "int64"),
    ],
    "events": [
        ("event_id", "int64"), ("device_index", "int32"), ("device", "dict"),
        # timeline_label: dict<string> since the lead's contract change (was string)
        ("node_name", "dict"), ("op", "dict"), ("timeline_label", "dict"),
        ("start_ns", "int64"), ("end_ns", "int64"), ("op_start_ns", "int64"),
        ("op_end_ns", "int64"), ("scheduled_ns", "int64"), ("thread_id", "uint32"),
        ("temp_memory_size", "int64"), ("persistent_memory_size", "int64"),
        ("cat", "dict"), ("step_id", "int64"),
    ],
    "tensors": [
        ("event_id", "int64"), ("output_index", "int32"), ("slot", "int32"), ("dtype", "dict"),
        ("shape", "list<int64>"), ("unknown_rank", "bool"), ("num_elements", "int64"),
        ("requested_bytes", "int64"), ("allocated_bytes", "int64"), ("allocator", "dict"),
        ("allocation_id", "int64"), ("ptr", "uint64"), ("has_single_reference", "bool"),
    ],
    "allocations": [
        ("event_id", "int64"), ("allocator", "dict"), ("total_bytes", "int64"),
        ("peak_bytes", "int64"), ("live_bytes", "int64"), ("allocator_bytes_in_use", "int64"),
    ],
    "alloc_records": [
        ("event_id", "int64"), ("allocator", "dict"), ("time_ns", "int64"), ("bytes", "int64"),
        *[(c, t) for c, t in _XSPACE_MEMORY_COLUMNS],
    ],
    "cost_graph": [
        ("name", "dict"), ("device", "dict"), ("id", "int32"), ("compute_cost", "int64"),
        ("compute_time", "int64"), ("memory_time", "int64"), ("temporary_memory_size", "int64"),
        ("persistent_memory_size", "int64"), ("is_final", "bool"), ("inaccurate", "bool"),
        ("input_nodes", "list<int32>"), ("control_inputs", "list<int32>"),
        ("output_sizes", "list<int64>"),
    ],
    "graph_nodes": [
        ("graph_index", "int32"), ("name", "dict"), ("op", "dict"), ("device", "dict"),
        ("inputs", "list<string>"),
    ],
    "thread_names": [
        ("device_index", "int32"), ("thread_id", "uint32"), ("name", "string"),
    ],
    "persistent_tensors": [
        ("event_id", "int64"), ("allocation_id", "int64"),
    ],
    # XSpace's own tables: no rows for StepStats (tests/xspace_oracle.py has their rules)
    "event_stats": [("event_id", "int64"), *_STAT_COLUMNS, ("inherited", "bool")],
    "plane_stats": [("plane_index", "int32"), ("plane", "dict"), *_STAT_COLUMNS],
    "aggregate_events": [
        ("device_index", "int32"), ("device", "dict"), ("node_name", "dict"),
        ("timeline_label", "dict"), ("op", "dict"), ("num_occurrences", "int64"),
        ("duration_ps", "int64"),
    ],
    # Chrome trace tables: no rows for StepStats (tests/chrome_oracle.py has their rules)
    "counters": [
        ("device_index", "int32"), ("device", "dict"), ("name", "dict"), ("series", "dict"),
        ("time_ns", "int64"), ("value", "float64"), ("int_value", "int64"),
    ],
    "links": [
        ("from_device_index", "int32"), ("to_device_index", "int32"), ("cat", "dict"),
        ("flow_id", "dict"), ("name", "dict"), ("from_ns", "int64"), ("to_ns", "int64"),
        ("to_phase", "dict"), ("from_event_id", "int64"), ("to_event_id", "int64"),
    ],
}

# Columns the package adds after the contract's ones (python/tracecore/names.py: derived from
# node names and from the devices table, not from the trace format); allowed, not compared here
# (tests/test_names.py and tests/test_optime.py check them).
EXTENSION_COLUMNS: dict[str, tuple[str, ...]] = {
    "events": ("forward_scope", "phase", "device_kind")
}

# Columns that may hold nulls; every other column must have null_count == 0.
NULLABLE = {("events", "op"), ("events", "scheduled_ns"), ("tensors", "num_elements"),
            ("devices", "line"), ("devices", "line_id"), ("events", "step_id"), ("events", "cat"),
            ("counters", "value"), ("counters", "int_value"), ("links", "from_event_id"),
            ("links", "to_event_id"),
            *[("alloc_records", c) for c, _ in _XSPACE_MEMORY_COLUMNS]}

TABLES = list(SCHEMAS)


# --------------------------------------------------------------------------------------------
# Derivation rules
# --------------------------------------------------------------------------------------------
def checked(value: int) -> int:
    if value < INT64_MIN or value > INT64_MAX:
        raise OracleOutOfRange(f"derived value {value} out of int64 range")
    return value


def derive_op(timeline_label: str, node_name: str) -> str | None:
    """The lead's rule: strip an optional leading "[...] " prefix, find the first " = ",
    op = text after it up to the first "(" (no "(": the rest of the label, stripped of ASCII
    whitespace). No " = ": the part of node_name after its last ':' if it has one, else None."""
    s = timeline_label
    if s.startswith("["):
        close = s.find("]")
        if close >= 0 and s[close + 1:close + 2] == " ":
            s = s[close + 2:]
    eq = s.find(" = ")
    if eq >= 0:
        rest = s[eq + 3:]
        paren = rest.find("(")
        if paren >= 0:
            return rest[:paren]
        return rest.strip(ASCII_WS)
    if ":" in node_name:
        return node_name[node_name.rfind(":") + 1:]
    return None


def dtype_name(value: int) -> str:
    name = DATA_TYPE_NAMES.get(value)
    return name if name is not None else f"DT_{value}"


def device_kind(device: str) -> str:
    # The rule of docs/api.md ("Device kind"), ClassifyDevice in
    # cpp/src/sink/trace_semantics.cc: last "/stream:" -> stream / stream_all ("all" after it),
    # ends with "/memcpy" -> memcpy, contains "/device:" or "/job:" -> executor, else other.
    stream = device.rfind("/stream:")
    if stream >= 0:
        return "stream_all" if device[stream + 8:] == "all" else "stream"
    if device.endswith("/memcpy"):
        return "memcpy"
    if "/device:" in device or "/job:" in device:
        return "executor"
    return "other"


def num_elements(shape_msg) -> int | None:
    if shape_msg.unknown_rank:
        return None
    product = 1
    for d in shape_msg.dim:
        if d.size < 0:
            return None
        product *= d.size
    if product > INT64_MAX:
        return None
    return product


def message_kind(msg) -> str:
    name = msg.DESCRIPTOR.name
    if name not in ("StepStats", "RunMetadata"):
        raise TypeError(f"expected StepStats or RunMetadata, got {msg.DESCRIPTOR.full_name}")
    return name


def _event_times(n) -> dict[str, int | None]:
    if n.all_start_nanos != 0:
        start = n.all_start_nanos
        end = checked(start + n.all_end_rel_nanos)
        op_start = checked(start + n.op_start_rel_nanos)
        op_end = checked(start + n.op_end_rel_nanos)
    else:
        start = checked(n.all_start_micros * 1000)
        end = checked(start + checked(n.all_end_rel_micros * 1000))
        op_start = checked(start + checked(n.op_start_rel_micros * 1000))
        op_end = checked(start + checked(n.op_end_rel_micros * 1000))
    if n.scheduled_nanos != 0:
        scheduled = n.scheduled_nanos
    elif n.scheduled_micros != 0:
        scheduled = checked(n.scheduled_micros * 1000)
    else:
        scheduled = None
    return {"start_ns": start, "end_ns": end, "op_start_ns": op_start, "op_end_ns": op_end,
            "scheduled_ns": scheduled}


def expected_tables(msg) -> dict[str, list[dict[str, Any]]]:
    """Rows (as dicts, file order) of every tracecore table for a parsed message.

    Raises OracleOutOfRange when a derived nanosecond value overflows int64."""
    kind = message_kind(msg)
    out: dict[str, list[dict[str, Any]]] = {t: [] for t in TABLES}
    step_stats = msg if kind == "StepStats" else msg.step_stats

    event_id = 0
    # step_id: a block whose device already has a block in the current step starts the next.
    step, in_step = 0, set()
    for device_index, ds in enumerate(step_stats.dev_stats):
        if ds.device in in_step:
            step, in_step = step + 1, set()
        in_step.add(ds.device)
        out["devices"].append({
            "device_index": device_index, "device": ds.device, "line": None, "line_id": None,
            "kind": device_kind(ds.device), "n_events": len(ds.node_stats),
        })
        for thread_id, name in ds.thread_names.items():
            out["thread_names"].append(
                {"device_index": device_index, "thread_id": thread_id, "name": name})
        for n in ds.node_stats:
            row = {
                "event_id": event_id, "device_index": device_index, "device": ds.device,
                "node_name": n.node_name, "op": derive_op(n.timeline_label, n.node_name),
                "timeline_label": n.timeline_label,
            }
            row.update(_event_times(n))
            row["thread_id"] = n.thread_id
            row["temp_memory_size"] = n.memory_stats.temp_memory_size
            row["persistent_memory_size"] = n.memory_stats.persistent_memory_size
            row["cat"] = None  # Chrome trace only
            row["step_id"] = step
            out["events"].append(row)

            for output_index, o in enumerate(n.output):
                td = o.tensor_description
                ad = td.allocation_description
                out["tensors"].append({
                    "event_id": event_id, "output_index": output_index, "slot": o.slot,
                    "dtype": dtype_name(td.dtype), "shape": [d.size for d in td.shape.dim],
                    "unknown_rank": td.shape.unknown_rank, "num_elements": num_elements(td.shape),
                    "requested_bytes": ad.requested_bytes, "allocated_bytes": ad.allocated_bytes,
                    "allocator": ad.allocator_name, "allocation_id": ad.allocation_id,
                    "ptr": ad.ptr, "has_single_reference": ad.has_single_reference,
                })
            for m in n.memory:
                out["allocations"].append({
                    "event_id": event_id, "allocator": m.allocator_name,
                    "total_bytes": m.total_bytes, "peak_bytes": m.peak_bytes,
                    "live_bytes": m.live_bytes, "allocator_bytes_in_use": m.allocator_bytes_in_use,
                })
                for r in m.allocation_records:
                    out["alloc_records"].append({
                        "event_id": event_id, "allocator": m.allocator_name,
                        "time_ns": checked(r.alloc_micros * 1000), "bytes": r.alloc_bytes,
                        **dict.fromkeys(c for c, _ in _XSPACE_MEMORY_COLUMNS),  # XSpace only
                    })
            for alloc_id in n.memory_stats.persistent_tensor_alloc_ids:
                out["persistent_tensors"].append({"event_id": event_id, "allocation_id": alloc_id})
            event_id += 1

    if kind == "RunMetadata":
        for node in msg.cost_graph.node:
            out["cost_graph"].append({
                "name": node.name, "device": node.device, "id": node.id,
                "compute_cost": node.compute_cost, "compute_time": node.compute_time,
                "memory_time": node.memory_time,
                "temporary_memory_size": node.temporary_memory_size,
                "persistent_memory_size": node.persistent_memory_size,
                "is_final": node.is_final, "inaccurate": node.inaccurate,
                "input_nodes": [i.preceding_node for i in node.input_info],
                "control_inputs": list(node.control_input),
                "output_sizes": [o.size for o in node.output_info],
            })
        graphs = list(msg.partition_graphs)
        for fg in msg.function_graphs:
            graphs.extend(fg.partition_graphs)
            if fg.HasField("pre_optimization_graph"):
                graphs.append(fg.pre_optimization_graph)
            if fg.HasField("post_optimization_graph"):
                graphs.append(fg.post_optimization_graph)
        for graph_index, g in enumerate(graphs):
            for nd in g.node:
                out["graph_nodes"].append({
                    "graph_index": graph_index, "name": nd.name, "op": nd.op,
                    "device": nd.device, "inputs": list(nd.input),
                })
    return out


# --------------------------------------------------------------------------------------------
# Comparison
# --------------------------------------------------------------------------------------------
def _type_ok(pa_type, spec: str) -> bool:
    import pyarrow as pa

    simple = {"int32": pa.int32(), "int64": pa.int64(), "uint32": pa.uint32(),
              "uint64": pa.uint64(), "bool": pa.bool_(), "string": pa.string(),
              "float64": pa.float64(), "binary": pa.binary()}
    if spec in simple:
        return pa_type == simple[spec]
    if spec == "dict":
        return (pa.types.is_dictionary(pa_type) and pa_type.index_type == pa.int32()
                and pa_type.value_type == pa.string())
    if spec.startswith("list<"):
        inner = simple[spec[5:-1]]
        return pa.types.is_list(pa_type) and pa_type.value_type == inner
    raise AssertionError(f"bad spec {spec}")


def _same(a, b) -> bool:
    # Strict equality with type awareness (True != 1 for our purposes, floats never appear).
    if type(a) is bool or type(b) is bool:
        return type(a) is type(b) and a == b
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, float) and isinstance(b, float) and (
            a == b or (math.isnan(a) and math.isnan(b)))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def _fmt_row(row: dict) -> str:
    return "{" + ", ".join(f"{k}: {v!r}" for k, v in row.items()) + "}"


def diff_rows(table: str, expected: list[dict], actual: list[dict]) -> str | None:
    """None if equal, else a description of the first mismatching row."""
    for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
        bad = [c for c in e if c not in a or not _same(e[c], a[c])]
        if bad:
            lines = [(f"table {table!r}: first mismatch at row {i} "
                     f"(expected {len(expected)} rows, got {len(actual)})")]
            for c in bad:
                lines.append(f"  column {c!r}: expected {e[c]!r}, got {a.get(c, '<missing>')!r}")
            lines.append(f"  expected row: {_fmt_row(e)}")
            lines.append(f"  actual row:   {_fmt_row(a)}")
            return "\n".join(lines)
    if len(expected) != len(actual):
        i = min(len(expected), len(actual))
        extra = (f"  first extra expected row: {_fmt_row(expected[i])}" if len(expected) > i
                 else f"  first extra actual row: {_fmt_row(actual[i])}")
        return (f"table {table!r}: expected {len(expected)} rows, got {len(actual)} "
                f"(first {i} rows equal)\n{extra}")
    return None


def table_problems(name: str, table, expected_rows: list[dict]) -> list[str]:
    """Schema + value problems of one pyarrow table against the oracle rows."""
    problems = []
    spec = SCHEMAS[name]
    names = [f.name for f in table.schema]
    want_names = [c for c, _ in spec]
    # Known extensions beyond docs/tables.md may follow the declared columns; their
    # values are not part of this oracle.
    extras = [c for c in names if c not in want_names]
    unknown_extras = [c for c in extras if c not in EXTENSION_COLUMNS.get(name, ())]
    missing = [c for c in want_names if c not in names]
    if missing or unknown_extras:
        problems.append(f"table {name!r}: columns {names}, expected {want_names}"
                        + (f" (+ optional {list(EXTENSION_COLUMNS[name])})"
                           if name in EXTENSION_COLUMNS else ""))
        return problems
    if names[:len(want_names)] != want_names:
        problems.append(f"table {name!r}: column order {names}, expected {want_names} first")
    for col, tspec in spec:
        t = table.schema.field(col).type
        if not _type_ok(t, tspec):
            problems.append(f"table {name!r}: column {col!r} has type {t}, expected {tspec}")
        if (name, col) not in NULLABLE and table.column(col).null_count:
            problems.append(f"table {name!r}: column {col!r} has "
                            f"{table.column(col).null_count} nulls, expected none")
    if extras:
        table = table.select(want_names)
    actual_rows = table.to_pylist()
    if name == "thread_names":
        # A proto map: row order is free; duplicate keys collapse to the last value.
        def as_map(rows):
            return {(r["device_index"], r["thread_id"]): r["name"] for r in rows}
        exp_map, act_map = as_map(expected_rows), as_map(actual_rows)
        if exp_map != act_map:
            missing = {k: v for k, v in exp_map.items() if act_map.get(k, object()) != v}
            extra = {k: v for k, v in act_map.items() if exp_map.get(k, object()) != v}
            problems.append(f"table 'thread_names': expected {exp_map!r}, got {act_map!r} "
                            f"(expected-not-matched {missing!r}, got-not-expected {extra!r})")
        elif len(actual_rows) != len(exp_map):
            problems.append(f"table 'thread_names': {len(actual_rows)} rows for "
                            f"{len(exp_map)} distinct (device_index, thread_id) keys: "
                            f"{actual_rows!r}")
        return problems
    d = diff_rows(name, expected_rows, actual_rows)
    if d:
        problems.append(d)
    return problems


def trace_problems(trace, msg, *, expected_format: str | None = None) -> list[str]:
    expected = expected_tables(msg)
    problems = []
    kind = message_kind(msg)
    if trace.kind != kind:
        problems.append(f"trace.kind is {trace.kind!r}, expected {kind!r}")
    if expected_format is not None and trace.format != expected_format:
        problems.append(f"trace.format is {trace.format!r}, expected {expected_format!r}")
    for name in TABLES:
        problems.extend(table_problems(name, getattr(trace, name), expected[name]))
    if len(trace) != len(expected["events"]):
        problems.append(f"len(trace) is {len(trace)}, expected {len(expected['events'])}")
    return problems


def assert_trace_matches(trace, msg, *, expected_format: str | None = None,
                         context: str = "") -> None:
    """Assert every column of every table of a tracecore Trace equals the oracle's rows."""
    problems = trace_problems(trace, msg, expected_format=expected_format)
    if problems:
        head = f"tracecore disagrees with the oracle{(' for ' + context) if context else ''}:\n"
        raise AssertionError(head + "\n".join(problems))
