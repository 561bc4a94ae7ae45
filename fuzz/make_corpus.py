#!/usr/bin/env python3
"""Builds the seed corpora of the fuzz targets (no dependencies beyond the standard library).

    python fuzz/make_corpus.py OUTDIR [--seed N]

Writes OUTDIR/text/, OUTDIR/binary/, OUTDIR/json/, OUTDIR/tfevents/, OUTDIR/inflate/ and
OUTDIR/xspace/ (each file < 64 KB):
- excerpts of the text seeds in tests/data (whole records: a device block with a window of its
  node_stats, a RunMetadata step_stats / cost_graph / partition_graphs excerpt), and the same
  excerpts encoded in the protobuf wire format with the schema below;
- synthetic StepStats / RunMetadata messages with every known field, extreme integers
  (0, -1, int64 min/max, values whose micros*1000 overflows), packed and unpacked repeated
  fields, unknown fields and groups, in both encodings;
- a few hostile inputs: deep nesting, huge declared lengths, long strings, many repeated
  fields, thread_names with duplicate keys;
- the fixtures of tests/data/regressions (small files only);
- for fuzz_json: excerpts of the Chrome trace samples in tests/data/chrome (the first events
  of each, in compact, pretty and Kineto-like layouts, and raw prefixes of the files) and
  small documents at the edges of JSON (escapes, surrogates, numbers, nesting, BOM).
- tfevents/: the event files of tests/data/tfevents and files recombined from their records.
- for fuzz_inflate: seed excerpts, JSON events, runs and random bytes compressed by zlib at
  several levels and strategies as gzip (one or more members), zlib and raw deflate, each
  after fuzz_inflate's control byte (format, options, piece sizes).
- XSpace (profiler) messages for fuzz_xspace: the small real samples in tests/data/xspace and
  synthetic XSpaces with every field, every stat value kind, duplicate and missing map keys,
  aggregates, memory events, unknown fields and extreme integers.

The schema follows TensorFlow's .proto files (the field numbers of step_stats.proto,
cost_graph.proto, config.proto). It is also used by tests/test_robustness.py (import
``fuzz.make_corpus``) to build binary dumps.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import struct
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
MAX_PIECE = 60_000

# ---- schema -------------------------------------------------------------------------------
# message -> field name -> (number, type, repeated); type is a scalar kind or a message name.
I64, U64, I32, U32, BOOL, STR, ENUM, FLOAT = "int64", "uint64", "int32", "uint32", "bool", "string", "enum", "float"
DOUBLE = "double"
SCHEMA: dict[str, dict[str, tuple[int, str, bool]]] = {
    "StepStats": {"dev_stats": (1, "DeviceStepStats", True)},
    "DeviceStepStats": {
        "device": (1, STR, False),
        "node_stats": (2, "NodeExecStats", True),
        "thread_names": (3, "ThreadNamesEntry", True),
    },
    "ThreadNamesEntry": {"key": (1, U32, False), "value": (2, STR, False)},
    "NodeExecStats": {
        "node_name": (1, STR, False),
        "all_start_micros": (2, I64, False),
        "op_start_rel_micros": (3, I64, False),
        "op_end_rel_micros": (4, I64, False),
        "all_end_rel_micros": (5, I64, False),
        "memory": (6, "AllocatorMemoryUsed", True),
        "output": (7, "NodeOutput", True),
        "timeline_label": (8, STR, False),
        "scheduled_micros": (9, I64, False),
        "thread_id": (10, U32, False),
        "referenced_tensor": (11, "AllocationDescription", True),
        "memory_stats": (12, "MemoryStats", False),
        "all_start_nanos": (13, I64, False),
        "op_start_rel_nanos": (14, I64, False),
        "op_end_rel_nanos": (15, I64, False),
        "all_end_rel_nanos": (16, I64, False),
        "scheduled_nanos": (17, I64, False),
    },
    "AllocatorMemoryUsed": {
        "allocator_name": (1, STR, False),
        "total_bytes": (2, I64, False),
        "peak_bytes": (3, I64, False),
        "live_bytes": (4, I64, False),
        "allocator_bytes_in_use": (5, I64, False),
        "allocation_records": (6, "AllocationRecord", True),
    },
    "AllocationRecord": {"alloc_micros": (1, I64, False), "alloc_bytes": (2, I64, False)},
    "NodeOutput": {"slot": (1, I32, False), "tensor_description": (3, "TensorDescription", False)},
    "MemoryStats": {
        "temp_memory_size": (1, I64, False),
        "device_temp_memory_size": (2, I64, False),
        "persistent_memory_size": (3, I64, False),
        "device_persistent_memory_size": (4, I64, False),
        "persistent_tensor_alloc_ids": (5, I64, True),
        "device_persistent_tensor_alloc_ids": (6, I64, True),
    },
    "TensorDescription": {
        "dtype": (1, ENUM, False),
        "shape": (2, "TensorShapeProto", False),
        "allocation_description": (4, "AllocationDescription", False),
    },
    "AllocationDescription": {
        "requested_bytes": (1, I64, False),
        "allocated_bytes": (2, I64, False),
        "allocator_name": (3, STR, False),
        "allocation_id": (4, I64, False),
        "has_single_reference": (5, BOOL, False),
        "ptr": (6, U64, False),
    },
    "TensorShapeProto": {"dim": (2, "Dim", True), "unknown_rank": (3, BOOL, False)},
    "Dim": {"size": (1, I64, False), "name": (2, STR, False)},
    "CostGraphDef": {"node": (1, "CostNode", True), "cost": (2, "AggregatedCost", True)},
    "AggregatedCost": {"cost": (1, FLOAT, False), "dimension": (2, STR, False)},
    "CostNode": {
        "name": (1, STR, False),
        "device": (2, STR, False),
        "id": (3, I32, False),
        "input_info": (4, "InputInfo", True),
        "output_info": (5, "OutputInfo", True),
        "temporary_memory_size": (6, I64, False),
        "is_final": (7, BOOL, False),
        "control_input": (8, I32, True),
        "compute_cost": (9, I64, False),
        "host_temp_memory_size": (10, I64, False),
        "device_temp_memory_size": (11, I64, False),
        "persistent_memory_size": (12, I64, False),
        "compute_time": (14, I64, False),
        "memory_time": (15, I64, False),
        "device_persistent_memory_size": (16, I64, False),
        "inaccurate": (17, BOOL, False),
    },
    "InputInfo": {"preceding_node": (1, I32, False), "preceding_port": (2, I32, False)},
    "OutputInfo": {
        "size": (1, I64, False),
        "alias_input_port": (2, I64, False),
        "shape": (3, "TensorShapeProto", False),
        "dtype": (4, ENUM, False),
    },
    "RunMetadata": {
        "step_stats": (1, "StepStats", False),
        "cost_graph": (2, "CostGraphDef", False),
        "partition_graphs": (3, "GraphDef", True),
        "function_graphs": (4, "FunctionGraphs", True),
        "session_metadata": (5, "SessionMetadata", False),
    },
    "GraphDef": {"node": (1, "NodeDef", True)},
    "NodeDef": {
        "name": (1, STR, False),
        "op": (2, STR, False),
        "input": (3, STR, True),
        "device": (4, STR, False),
    },
    "FunctionGraphs": {
        "partition_graphs": (1, "GraphDef", True),
        "pre_optimization_graph": (2, "GraphDef", False),
        "post_optimization_graph": (3, "GraphDef", False),
    },
    "SessionMetadata": {"name": (1, STR, False), "version": (2, I64, False)},
    # XSpace (trace-formats.md section 1); the maps as repeated entry messages.
    "XSpace": {"planes": (1, "XPlane", True), "errors": (2, STR, True), "warnings": (3, STR, True),
               "hostnames": (4, STR, True)},
    "XPlane": {"id": (1, I64, False), "name": (2, STR, False), "lines": (3, "XLine", True),
               "event_metadata": (4, "XEventMetadataEntry", True),
               "stat_metadata": (5, "XStatMetadataEntry", True), "stats": (6, "XStat", True)},
    "XEventMetadataEntry": {"key": (1, I64, False), "value": (2, "XEventMetadata", False)},
    "XStatMetadataEntry": {"key": (1, I64, False), "value": (2, "XStatMetadata", False)},
    "XLine": {"id": (1, I64, False), "display_id": (10, I64, False), "name": (2, STR, False),
              "display_name": (11, STR, False), "timestamp_ns": (3, I64, False),
              "duration_ps": (9, I64, False), "events": (4, "XEvent", True)},
    "XEvent": {"metadata_id": (1, I64, False), "offset_ps": (2, I64, False),
               "num_occurrences": (5, I64, False), "duration_ps": (3, I64, False),
               "stats": (4, "XStat", True)},
    "XStat": {"metadata_id": (1, I64, False), "double_value": (2, DOUBLE, False),
              "uint64_value": (3, U64, False), "int64_value": (4, I64, False),
              "str_value": (5, STR, False), "bytes_value": (6, STR, False),
              "ref_value": (7, U64, False), "compressed_str_value": (8, STR, False)},
    "XEventMetadata": {"id": (1, I64, False), "name": (2, STR, False), "metadata": (3, STR, False),
                       "display_name": (4, STR, False), "stats": (5, "XStat", True),
                       "child_id": (6, I64, True)},
    "XStatMetadata": {"id": (1, I64, False), "name": (2, STR, False), "description": (3, STR, False)},
}

DTYPES = ["DT_INVALID", "DT_FLOAT", "DT_DOUBLE", "DT_INT32", "DT_UINT8", "DT_INT16", "DT_INT8",
          "DT_STRING", "DT_COMPLEX64", "DT_INT64", "DT_BOOL", "DT_QINT8", "DT_QUINT8", "DT_QINT32",
          "DT_BFLOAT16", "DT_QINT16", "DT_QUINT16", "DT_UINT16", "DT_COMPLEX128", "DT_HALF",
          "DT_RESOURCE", "DT_VARIANT", "DT_UINT32", "DT_UINT64"]
DTYPE_VALUE = {name: i for i, name in enumerate(DTYPES)}
DTYPE_VALUE.update({name + "_REF": i + 100 for i, name in enumerate(DTYPES) if i})

# A message tree: list of (field name, value) where value is a scalar (int / bool / bytes / str
# enum name / float) or a nested tree (list).
Tree = list


# ---- wire encoding ------------------------------------------------------------------------
def varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = value & 0x7F
        value >>= 7
        if value:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def key(number: int, wire_type: int) -> bytes:
    return varint((number << 3) | wire_type)


def length_delimited(number: int, payload: bytes) -> bytes:
    return key(number, 2) + varint(len(payload)) + payload


def _scalar_int(kind: str, value) -> int:
    if kind == ENUM and isinstance(value, str):
        return DTYPE_VALUE.get(value, 0)
    if kind == BOOL:
        return 1 if value in (True, "true", "True", "t", 1) else 0
    return int(value)


def encode(tree: Tree, message: str, rng: random.Random | None = None) -> bytes:
    """Wire encoding of `tree` as `message`. With `rng`, repeated scalars are sometimes packed,
    sometimes not, and unknown fields are sprinkled in."""
    fields = SCHEMA[message]
    out = bytearray()
    packed: dict[str, list[int]] = {}
    for name, value in tree:
        if name not in fields:
            continue  # unknown in the schema (e.g. NodeDef.attr): dropped
        number, kind, repeated = fields[name]
        if kind in SCHEMA:
            if isinstance(value, list):
                out += length_delimited(number, encode(value, kind, rng))
        elif kind == STR:
            data = value if isinstance(value, bytes) else str(value).encode()
            out += length_delimited(number, data)
        elif kind == FLOAT:
            out += key(number, 5) + struct.pack("<f", float(value))
        elif kind == DOUBLE:
            out += key(number, 1) + struct.pack("<d", float(value))
        else:
            v = _scalar_int(kind, value)
            if repeated and (rng is None or rng.random() < 0.7):
                packed.setdefault(name, []).append(v)
            else:
                out += key(number, 0) + varint(v)
        if rng is not None and rng.random() < 0.03:
            out += unknown_field(rng)
    for name, values in packed.items():
        number = fields[name][0]
        out += length_delimited(number, b"".join(varint(v) for v in values))
    return bytes(out)


def unknown_field(rng: random.Random) -> bytes:
    number = rng.choice([19, 20, 99, 1000, 536870911])
    choice = rng.randrange(5)
    if choice == 0:
        return key(number, 0) + varint(rng.getrandbits(64))
    if choice == 1:
        return key(number, 1) + rng.randbytes(8)
    if choice == 2:
        return key(number, 5) + rng.randbytes(4)
    if choice == 3:
        return length_delimited(number, rng.randbytes(rng.randrange(12)))
    return key(number, 3) + key(1, 0) + varint(7) + key(2, 2) + b"\x00" + key(number, 4)


# ---- text format --------------------------------------------------------------------------
def _escape(data: bytes) -> str:
    out = []
    for b in data:
        c = chr(b)
        if c == '"':
            out.append('\\"')
        elif c == "\\":
            out.append("\\\\")
        elif c == "\n":
            out.append("\\n")
        elif 0x20 <= b < 0x7F:
            out.append(c)
        else:
            out.append("\\%03o" % b)
    return "".join(out)


def render(tree: Tree, message: str, indent: int = 0) -> str:
    fields = SCHEMA.get(message, {})
    pad = "  " * indent
    lines = []
    for name, value in tree:
        kind = fields.get(name, (0, None, False))[1]
        if isinstance(value, list):
            lines.append(f"{pad}{name} {{\n{render(value, kind or '', indent + 1)}{pad}}}\n")
        elif isinstance(value, (bytes, bytearray)):
            lines.append(f'{pad}{name}: "{_escape(bytes(value))}"\n')
        elif isinstance(value, bool):
            lines.append(f"{pad}{name}: {'true' if value else 'false'}\n")
        elif kind == STR and isinstance(value, str):
            lines.append(f'{pad}{name}: "{_escape(value.encode())}"\n')
        else:
            lines.append(f"{pad}{name}: {value}\n")
    return "".join(lines)


def _unescape(body: str) -> bytes:
    raw = body.encode("latin-1", "backslashreplace")
    out = bytearray()
    i = 0
    simple = {ord("n"): 10, ord("t"): 9, ord("r"): 13, ord('"'): 34, ord("'"): 39, ord("\\"): 92,
              ord("a"): 7, ord("b"): 8, ord("f"): 12, ord("v"): 11, ord("?"): 63}
    while i < len(raw):
        c = raw[i]
        if c != 0x5C or i + 1 >= len(raw):
            out.append(c)
            i += 1
            continue
        n = raw[i + 1]
        if n in simple:
            out.append(simple[n])
            i += 2
        elif 0x30 <= n <= 0x37:
            j = i + 1
            while j < len(raw) and j < i + 4 and 0x30 <= raw[j] <= 0x37:
                j += 1
            out.append(int(raw[i + 1:j], 8) & 0xFF)
            i = j
        elif n in (ord("x"), ord("X")):
            j = i + 2
            while j < len(raw) and j < i + 4 and chr(raw[j]) in "0123456789abcdefABCDEF":
                j += 1
            out.append(int(raw[i + 2:j] or b"0", 16))
            i = j
        else:
            out.append(n)
            i += 2
    return bytes(out)


def parse_text(text: str) -> Tree:
    """Parses TensorFlow's one-field-per-line text layout (what the seeds use) into a tree."""
    root: Tree = []
    stack = [root]
    for line in text.splitlines():
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        if s == "}":
            stack.pop()
        elif s.endswith("{"):
            child: Tree = []
            stack[-1].append((s[:-1].rstrip(" :"), child))
            stack.append(child)
        else:
            name, _, value = s.partition(":")
            value = value.strip()
            if value.startswith('"') and value.endswith('"'):
                parsed = _unescape(value[1:-1])
            elif value in ("true", "false"):
                parsed = value == "true"
            else:
                try:
                    parsed = int(value, 0)
                except ValueError:
                    try:
                        parsed = float(value)
                    except ValueError:
                        parsed = value  # enum name
            stack[-1].append((name.strip(), parsed))
    return root


# ---- excerpts of the seeds ----------------------------------------------------------------
def _window(children: list, rng: random.Random, most: int) -> list:
    if len(children) <= most:
        return list(children)
    k = rng.randint(1, most)
    start = rng.randrange(len(children) - k + 1)
    return children[start:start + k]


def excerpt_device(block: Tree, rng: random.Random, most: int) -> Tree:
    scalars = [(n, v) for n, v in block if n != "node_stats"]
    nodes = [(n, v) for n, v in block if n == "node_stats"]
    return scalars[:1] + _window(nodes, rng, most) + scalars[1:]


def excerpt(tree: Tree, kind: str, rng: random.Random, most: int) -> Tree:
    if kind == "StepStats":
        devices = [(n, v) for n, v in tree if n == "dev_stats"]
        return [(n, excerpt_device(v, rng, most)) for n, v in _window(devices, rng, 2)]
    out: Tree = []
    for name, value in tree:
        if name == "step_stats":
            out.append((name, excerpt(value, "StepStats", rng, most)))
        elif name in ("cost_graph",) and isinstance(value, list):
            out.append((name, _window(value, rng, most)))
        elif name == "partition_graphs" and isinstance(value, list):
            out.append((name, _window(value, rng, most)))
        else:
            out.append((name, value))
    return out


def seed_excerpts(rng: random.Random, count: int) -> list[tuple[str, Tree]]:
    pieces = []
    for path, kind in ((DATA / "seed000_stepstats.pbtxt", "StepStats"),
                       (DATA / "seed001_runmetadata.pbtxt", "RunMetadata")):
        if not path.exists():
            continue
        tree = parse_text(path.read_text(encoding="utf-8", errors="replace"))
        made = 0
        attempts = 0
        while made < count and attempts < count * 20:
            attempts += 1
            most = rng.choice([1, 2, 4, 8, 16, 40])
            piece = excerpt(tree, kind, rng, most)
            if len(render(piece, kind)) > MAX_PIECE:
                continue
            pieces.append((kind, piece))
            made += 1
    return pieces


# ---- synthetic messages -------------------------------------------------------------------
INT64_MAX = (1 << 63) - 1
INT64_MIN = -(1 << 63)
EXTREMES = [0, 1, -1, 999, 1000, 1532145303704429, INT64_MAX, INT64_MIN, INT64_MAX // 1000,
            INT64_MAX // 1000 + 1, -(INT64_MAX // 1000) - 1, 2**31 - 1, -(2**31), 2**32 - 1, 2**32]


def _int(rng: random.Random, hostile: bool) -> int:
    if hostile and rng.random() < 0.08:
        return rng.choice(EXTREMES)
    return rng.randrange(0, 5000)


def synth_node(rng: random.Random, hostile: bool, i: int) -> Tree:
    base = 1_600_000_000_000_000 + rng.randrange(10_000)
    node: Tree = [("node_name", rng.choice([f"n{i}", f"scope/op_{i}:MatMul", f"edge_{i}_x:MEMCPYHtoD", "", "a:b:c"]))]
    if rng.random() < 0.5:
        node += [("all_start_micros", _int(rng, hostile) if hostile else base),
                 ("op_start_rel_micros", _int(rng, hostile)), ("op_end_rel_micros", _int(rng, hostile)),
                 ("all_end_rel_micros", _int(rng, hostile))]
    else:
        node += [("all_start_nanos", _int(rng, hostile) if hostile else base * 1000 + 7),
                 ("op_start_rel_nanos", _int(rng, hostile)), ("op_end_rel_nanos", _int(rng, hostile)),
                 ("all_end_rel_nanos", _int(rng, hostile))]
    if rng.random() < 0.6:
        node.append(("timeline_label", rng.choice([f"n{i} = MatMul(a, b, ^c)", "[GPU_0_bfc 0.5MB 0.5MB] x = Add(y)",
                                                   "n = Recv(", " = ()", "x"])))
    if rng.random() < 0.3:
        node.append(("scheduled_micros", _int(rng, hostile)))
    if rng.random() < 0.2:
        node.append(("scheduled_nanos", _int(rng, hostile)))
    if rng.random() < 0.4:
        node.append(("thread_id", rng.choice([0, 1, 2**32 - 1, 77])))
    for _ in range(rng.randrange(3)):
        mem: Tree = [("allocator_name", rng.choice(["GPU_0_bfc", "cpu", "cuda_host_bfc", ""])),
                     ("total_bytes", _int(rng, hostile)), ("peak_bytes", _int(rng, hostile)),
                     ("live_bytes", _int(rng, hostile)), ("allocator_bytes_in_use", _int(rng, hostile))]
        for _ in range(rng.randrange(4)):
            mem.append(("allocation_records", [("alloc_micros", _int(rng, hostile) if hostile else base + rng.randrange(100)),
                                               ("alloc_bytes", rng.choice([256, -256, 0, 4096, -4096]) if not hostile else _int(rng, True))]))
        node.append(("memory", mem))
    for slot in range(rng.randrange(3)):
        shape: Tree = [("dim", [("size", rng.choice([1, 2, 3, -1, 0, 1 << 40] if hostile else [1, 2, 32]))]) for _ in range(rng.randrange(4))]
        if rng.random() < 0.1:
            shape.append(("unknown_rank", True))
        desc: Tree = [("dtype", rng.choice(["DT_FLOAT", "DT_INT32", "DT_FLOAT_REF", 77, 0])), ("shape", shape),
                      ("allocation_description", [("requested_bytes", _int(rng, hostile)), ("allocated_bytes", _int(rng, hostile)),
                                                  ("allocator_name", rng.choice(["GPU_0_bfc", "cpu"])),
                                                  ("allocation_id", _int(rng, hostile)), ("has_single_reference", rng.random() < 0.5),
                                                  ("ptr", rng.choice([0, 140000000000, 2**64 - 1]))])]
        node.append(("output", [("slot", slot if not hostile else rng.choice([slot, -1, 2**31 - 1])), ("tensor_description", desc)]))
    if rng.random() < 0.3:
        node.append(("referenced_tensor", [("requested_bytes", 8), ("allocator_name", "cpu")]))
    if rng.random() < 0.4:
        node.append(("memory_stats", [("temp_memory_size", _int(rng, hostile)), ("persistent_memory_size", _int(rng, hostile)),
                                      ("device_temp_memory_size", 1)]
                     + [("persistent_tensor_alloc_ids", _int(rng, hostile)) for _ in range(rng.randrange(4))]))
    return node


def synth_stepstats(rng: random.Random, hostile: bool) -> Tree:
    tree: Tree = []
    for d in range(rng.randint(1, 4)):
        device: Tree = [("device", rng.choice(["/job:localhost/replica:0/task:0/device:GPU:0", "/device:GPU:0/stream:all",
                                               "/device:GPU:0/stream:13", "/device:GPU:0/memcpy", "/device:CPU:0", ""]))]
        device += [("node_stats", synth_node(rng, hostile, d * 100 + i)) for i in range(rng.randrange(6))]
        for _ in range(rng.randrange(3)):
            device.append(("thread_names", [("key", rng.choice([1, 2, 7])), ("value", f"worker_{rng.randrange(9)}")]))
        tree.append(("dev_stats", device))
    return tree


def synth_runmetadata(rng: random.Random, hostile: bool) -> Tree:
    tree: Tree = [("step_stats", synth_stepstats(rng, hostile))]
    if rng.random() < 0.7:
        nodes: Tree = []
        for i in range(rng.randrange(5)):
            node: Tree = [("name", f"node{i}"), ("device", "/device:GPU:0"), ("id", i if not hostile else rng.choice([i, -1, 2**31 - 1])),
                          ("compute_cost", _int(rng, hostile)), ("temporary_memory_size", _int(rng, hostile)),
                          ("compute_time", _int(rng, hostile)), ("memory_time", _int(rng, hostile)),
                          ("persistent_memory_size", _int(rng, hostile)), ("is_final", rng.random() < 0.5),
                          ("inaccurate", rng.random() < 0.2)]
            node += [("input_info", [("preceding_node", rng.randrange(5)), ("preceding_port", 0)]) for _ in range(rng.randrange(3))]
            node += [("output_info", [("size", _int(rng, hostile)), ("alias_input_port", -1), ("dtype", 1),
                                      ("shape", [("dim", [("size", 4)])])]) for _ in range(rng.randrange(3))]
            node += [("control_input", rng.randrange(5)) for _ in range(rng.randrange(3))]
            nodes.append(("node", node))
        nodes.append(("cost", [("cost", 1.5), ("dimension", "x")]))
        tree.append(("cost_graph", nodes))
    for g in range(rng.randrange(3)):
        graph = [("node", [("name", f"g{g}n{i}"), ("op", "MatMul"), ("device", "/device:CPU:0"),
                           ("input", "a"), ("input", "^b"), ("input", "c:1")]) for i in range(rng.randrange(4))]
        tree.append(("partition_graphs", graph))
    if rng.random() < 0.4:
        tree.append(("function_graphs", [("partition_graphs", [("node", [("name", "f"), ("op", "Identity")])]),
                                         ("pre_optimization_graph", [("node", [("name", "pre")])])]))
    if rng.random() < 0.3:
        tree.append(("session_metadata", [("name", "sess"), ("version", 3)]))
    return tree


# ---- XSpace -------------------------------------------------------------------------------
XSTAT_NAMES = ["group_id", "step_num", "hlo_op", "allocator_name", "bytes_allocated", "addr",
               "shape", "tf_op", "mklcpu", "[128,1024]", "_r", ""]
XEVENT_NAMES = ["scope/MatMul:MatMul", "MemoryAllocation", "MemoryDeallocation", "train",
                "Iterator::Root", "dot.1", "", "caf\u00e9"]


def synth_xstat(rng: random.Random, stat_ids: list[int], hostile: bool) -> Tree:
    tree: Tree = [("metadata_id", rng.choice(stat_ids + [0, 99, -1]))]
    kind = rng.randrange(9)
    if kind == 0:
        tree.append(("double_value", rng.choice([0.5, -0.0, float("inf"), 1e300])))
    elif kind == 1:
        tree.append(("uint64_value", rng.choice([0, 1, 2**63, 2**64 - 1])))
    elif kind == 2:
        tree.append(("int64_value", rng.choice([0, -1, INT64_MIN, INT64_MAX, 524288])))
    elif kind == 3:
        tree.append(("str_value", rng.choice(["mklcpu", "[128,1024]", "", "h\u00e9"])))
    elif kind == 4:
        tree.append(("bytes_value", rng.randbytes(rng.randrange(6))))
    elif kind == 5:
        tree.append(("ref_value", rng.choice(stat_ids + [2**64 - 1, 12345])))
    elif kind == 6:
        data = gzip.compress(b"a compressed name", mtime=0)
        tree.append(("compressed_str_value", data if not hostile else data[:-3]))
    elif kind == 7:  # two members: the last wins
        tree += [("int64_value", 5), ("str_value", "last")]
    return tree


def synth_xspace(rng: random.Random, hostile: bool) -> Tree:
    planes: Tree = []
    for p in range(rng.randint(1, 3)):
        stat_ids = rng.sample(range(-2, 40), rng.randint(0, len(XSTAT_NAMES)))
        event_ids = rng.sample(range(-2, 40), rng.randint(1, 6))
        plane: Tree = [("id", rng.choice([0, 1, INT64_MAX])),
                       ("name", rng.choice(["/host:CPU", "/device:GPU:0", "Task Environment"]))]
        for line_no in range(rng.randint(0, 3)):
            line: Tree = [("id", rng.choice([0, line_no, -5, INT64_MIN])), ("name", f"tf_Compute/{line_no}"),
                          ("timestamp_ns", rng.choice([0, 7916, 1795619473333858452, INT64_MAX if hostile else 1]))]
            for _ in range(rng.randint(0, 8)):
                event: Tree = [("metadata_id", rng.choice(event_ids + [77]))]
                which = rng.randrange(4)
                if which < 2:
                    event.append(("offset_ps", rng.choice([0, 1500, 31538270000, -1, INT64_MAX if hostile else 2])))
                elif which == 2:
                    event.append(("num_occurrences", rng.randrange(5)))
                event.append(("duration_ps", rng.choice([0, 999, 14821000, INT64_MAX if hostile else 3])))
                event += [("stats", synth_xstat(rng, stat_ids, hostile)) for _ in range(rng.randint(0, 4))]
                line.append(("events", event))
            line += [("duration_ps", 77), ("display_id", 4), ("display_name", "Compute")]
            plane.append(("lines", line))
        # the maps after the lines, as writers order them; a repeated key (last wins) now and then
        for k in event_ids + ([event_ids[0]] if rng.random() < 0.3 else []):
            value: Tree = [("id", k), ("name", rng.choice(XEVENT_NAMES))]
            if rng.random() < 0.3:
                value.append(("display_name", "MatMul"))
            if rng.random() < 0.3:
                value += [("stats", synth_xstat(rng, stat_ids, hostile)), ("child_id", k + 1)]
            plane.append(("event_metadata", [("key", k), ("value", value)]))
        for i, k in enumerate(stat_ids):
            plane.append(("stat_metadata", [("key", k), ("value", [("id", k), ("name", XSTAT_NAMES[i])])]))
        if p == 0:
            plane.append(("stats", [("metadata_id", stat_ids[0] if stat_ids else 0), ("uint64_value", 1795619473643289496)]))
        planes.append(("planes", plane))
    return planes + [("hostnames", rng.choice(["vm", "a100-node"]))]


# ---- hostile inputs -----------------------------------------------------------------------
def hostile_inputs() -> list[tuple[str, bytes]]:
    out: list[tuple[str, bytes]] = []
    # Deep text nesting, inside an unknown field and inside known ones.
    for depth in (31, 33, 99, 101, 5000):
        out.append(("text", b"dev_stats { unknown " + b"{ x " * depth + b"}" * depth + b" }\n"))
        out.append(("text", b"dev_stats { " * depth + b"}" * depth))
        out.append(("text", b"dev_stats { node_stats { output { tensor_description { shape { "
                    + b"[" * depth + b"]" * depth + b" } } } } }"))
    out.append(("text", b"dev_stats { device: \"" + b"\\\\" * 30000 + b"\" }"))
    out.append(("text", b"dev_stats { node_stats { all_start_micros: 9223372036854775807 all_end_rel_micros: 1 } }"))
    out.append(("text", b"dev_stats { node_stats { all_start_micros: -9223372036854775808 } }"))
    out.append(("text", b"dev_stats { node_stats { memory_stats { persistent_tensor_alloc_ids: ["
                + b"1, " * 5000 + b"2] } } }"))
    out.append(("text", b"dev_stats { " + b"thread_names { key: 1 value: \"a\" } " * 2000 + b"}"))
    # Binary: huge declared lengths at every level, deep groups, long varints.
    node = length_delimited(1, b"n") + key(2, 0) + varint(5)
    out.append(("binary", key(1, 2) + varint(2**63) + node))
    out.append(("binary", key(1, 2) + varint(2**64 - 1)))
    out.append(("binary", length_delimited(1, key(2, 2) + varint(2**31) + node)))
    out.append(("binary", length_delimited(1, key(2, 2) + varint(0xFFFFFFFF) + node)))
    out.append(("binary", length_delimited(1, length_delimited(2, key(1, 2) + b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"))))
    out.append(("binary", length_delimited(1, key(99, 3) * 150 + key(99, 4) * 150)))
    out.append(("binary", length_delimited(1, key(99, 3) * 99 + key(99, 4) * 99 + length_delimited(1, b"d"))))
    out.append(("binary", b"\x0a" + b"\x80" * 11))
    out.append(("binary", length_delimited(1, b"".join(length_delimited(3, key(1, 0) + varint(k % 7) + length_delimited(2, b"t"))
                                                     for k in range(3000)))))
    out.append(("binary", length_delimited(1, length_delimited(2, key(2, 0) + varint(INT64_MAX) + key(5, 0) + varint(5)))))
    out.append(("binary", length_delimited(1, length_delimited(2, key(13, 0) + varint(INT64_MIN) + key(16, 0) + varint(INT64_MAX)))))
    return out


JSON_EDGES = [
    b"{}", b"[]", b"[{}]", b'{"traceEvents": []}', b'{"traceEvents": [{}]}', b'[{"ph": "X"}]',
    b'["\\u00e9\\ud83d\\ude00\\n\\"\\\\\\/"]', b'["\\ud800", "\\udc00x"]',
    b'["caf\xc3\xa9", "\xed\xa0\x80", "\xff", "a\tb"]', b"\xef\xbb\xbf[1]",
    b"[-0, 0.0, 1e308, 1e-400, 1e400, 9223372036854775807, 9223372036854775808, -1.5E+3]",
    b"[NaN, Infinity, -Infinity]", b"[1,]", b'{"a":1,}', b"[01]", b'{"a" 1}',
    b"[" * 1200 + b"]" * 1200, b'{"a":' * 300 + b"1" + b"}" * 300,
    (b'{"traceEvents": [{"ph": "X", "ts": "12.5", "dur": 1e3, "pid": "p", "tid": 7, '
     b'"args": {"a": 1, "a": [1, {"b": null}], "c": true}}], "traceEvents": []}'),
    b'[{"ph": "X", "ts": 15.449999999999999, "dur": 9.9999999999999995e-07}, {}]',
]


def json_seeds(rng: random.Random) -> list[tuple[str, bytes]]:
    """Excerpts of the Chrome trace samples and edge documents, for fuzz_json."""
    out = [(f"edge_{i:03d}.json", data) for i, data in enumerate(JSON_EDGES)]
    chrome = DATA / "chrome"
    if not chrome.is_dir():
        return out
    for path in sorted(chrome.iterdir()):
        raw = path.read_bytes()
        if path.suffix == ".gz":
            raw = gzip.decompress(raw)
        out.append((f"prefix_{path.name}.json", raw[:MAX_PIECE]))
        doc = json.loads(raw)
        events = doc.get("traceEvents", []) if isinstance(doc, dict) else doc
        if not events:
            continue
        for layout in range(3):
            start = rng.randrange(max(1, len(events) - 40))
            piece = events[start:start + 40]
            top = {k: v for k, v in doc.items() if k != "traceEvents"} if isinstance(doc, dict) else {}
            top["traceEvents"] = piece + [{}]
            if layout == 0:
                data = json.dumps(top, separators=(",", ":")).encode()
            elif layout == 1:
                data = json.dumps(top, indent=2, ensure_ascii=False).encode()
            else:
                data = json.dumps(piece).replace("}, {", "},\n  {").encode()
            out.append((f"excerpt_{path.name}_{layout}.json", data[:MAX_PIECE]))
    return out


def event_file_records(data: bytes) -> list[bytes]:
    """The whole records (framing and CRCs included) of an event file, as they are."""
    records, pos = [], 0
    while len(data) - pos >= 16:
        (length,) = struct.unpack_from("<Q", data, pos)
        if length > len(data) - pos - 16:
            break
        records.append(data[pos:pos + 16 + length])
        pos += 16 + length
    return records


def tfevents_seeds(rng: random.Random) -> list[tuple[str, bytes]]:
    """The real event files of tests/data/tfevents, and files recombined from their records
    (each record after the file_version one, pairs across files, cut tails): valid CRCs
    without computing any."""
    files = sorted(p for p in (DATA / "tfevents").rglob("*") if p.is_file() and "tfevents" in p.name)
    seeds, pool = [], []
    for path in files:
        data = path.read_bytes()
        seeds.append((path.name, data))
        pool.extend(event_file_records(data))
    if not pool:
        return seeds
    head = pool[0]
    for i, record in enumerate(pool):
        seeds.append((f"record_{i:03d}", head + record))
    for i in range(30):
        picked = [rng.choice(pool) for _ in range(rng.randint(1, 4))]
        data = b"".join(picked)
        if i % 3 == 2:
            data = data[:rng.randrange(1, len(data))]
        seeds.append((f"mix_{i:03d}", data))
    return seeds


def inflate_seeds(rng: random.Random, count: int = 48) -> list[bytes]:
    """Compressed streams for fuzz_inflate, each after its control byte: bits 0-1 the format
    (0 auto, 1 gzip, 2 zlib, 3 raw), bit 2 one gzip member only, bit 3 trailing data allowed,
    bits 4-7 the piece sizes of the streaming decode."""
    text = (DATA / "seed000_stepstats.pbtxt").read_bytes()
    strategies = [zlib.Z_DEFAULT_STRATEGY, zlib.Z_FILTERED, zlib.Z_HUFFMAN_ONLY, zlib.Z_RLE,
                  zlib.Z_FIXED]
    seeds = []
    for i in range(count):
        kind = i % 4
        size = rng.choice([0, 1, 50, 700, 5000, 20000])
        if kind == 0:
            start = rng.randrange(len(text) - size)
            data = text[start:start + size]
        elif kind == 1:
            data = b"".join(
                b'{"ph":"X","name":"op%d","ts":%d,"dur":%d},'
                % (rng.randrange(50), rng.randrange(10**9), rng.randrange(999))
                for _ in range(size // 40))
        elif kind == 2:
            data = b"".join(bytes([rng.randrange(256)]) * rng.choice([1, 5, 300])
                            for _ in range(size // 50))
        else:
            data = rng.randbytes(size // 8)
        framing = i % 3
        wbits = [31, 15, -15][framing]
        c = zlib.compressobj(rng.choice([0, 1, 6, 9]), zlib.DEFLATED, wbits,
                             rng.randint(1, 9), rng.choice(strategies))
        flush = rng.choice([zlib.Z_NO_FLUSH, zlib.Z_SYNC_FLUSH, zlib.Z_FULL_FLUSH])
        stream = c.compress(data[:size // 2]) + c.flush(flush)
        stream += c.compress(data[size // 2:]) + c.flush()
        if framing == 0 and rng.random() < 0.3:
            stream += b"\0" * rng.randrange(3) + gzip.compress(data[:100], 6)
        fmt = [rng.choice([0, 1]), rng.choice([0, 2]), 3][framing]
        control = fmt | (rng.randrange(16) << 4)
        if len(stream) < 64 * 1024 - 1:
            seeds.append(bytes([control]) + stream)
    return seeds


def write_corpus(outdir: Path, seed: int = 1, excerpts: int = 40, synthetic: int = 60) -> dict[str, int]:
    rng = random.Random(seed)
    dirs = {kind: outdir / kind for kind in ("text", "binary", "json", "tfevents", "xspace")}
    for d in dirs.values():
        d.mkdir(parents=True, exist_ok=True)
    counts = {kind: 0 for kind in dirs}

    def put(kind: str, name: str, data: bytes) -> None:
        if not data or len(data) > 64 * 1024 - 1:
            return
        (dirs[kind] / name).write_bytes(data)
        counts[kind] += 1

    for i, (kind, tree) in enumerate(seed_excerpts(rng, excerpts // 2)):
        put("text", f"excerpt_{i:03d}.pbtxt", render(tree, kind).encode())
        put("binary", f"excerpt_{i:03d}.pb", encode(tree, kind, rng if i % 2 else None))
    for i in range(synthetic):
        hostile = i % 3 == 2
        kind = "StepStats" if i % 2 == 0 else "RunMetadata"
        tree = synth_stepstats(rng, hostile) if kind == "StepStats" else synth_runmetadata(rng, hostile)
        put("text", f"synth_{i:03d}.pbtxt", render(tree, kind).encode())
        put("binary", f"synth_{i:03d}.pb", encode(tree, kind, rng))
    for i, (kind, data) in enumerate(hostile_inputs()):
        put(kind, f"hostile_{i:03d}", data)
    for name, data in json_seeds(rng):
        put("json", name, data)
    regressions = DATA / "regressions"
    if regressions.is_dir():
        for path in sorted(regressions.iterdir()):
            if path.is_file() and path.stat().st_size < 64 * 1024:
                data = path.read_bytes()
                if ".json" in path.name:
                    put("json", "regression_" + path.name, data)
                    continue
                is_text = path.suffix in (".pbtxt", ".txt") or (data[:1].isalpha() and b"\x00" not in data[:256])
                put("text" if is_text else "binary", "regression_" + path.name, data)
    for name, data in tfevents_seeds(rng):
        put("tfevents", name, data)
    inflate_dir = outdir / "inflate"
    inflate_dir.mkdir(parents=True, exist_ok=True)
    counts["inflate"] = 0
    for i, data in enumerate(inflate_seeds(rng)):
        (inflate_dir / f"stream_{i:03d}").write_bytes(data)
        counts["inflate"] += 1
    for i in range(synthetic // 2):
        put("xspace", f"synth_{i:03d}.xplane.pb", encode(synth_xspace(rng, i % 4 == 3), "XSpace",
                                                         rng if i % 2 else None))
    samples = DATA / "xspace"
    if samples.is_dir():
        for path in sorted(samples.glob("*.xplane.pb")):
            put("xspace", "sample_" + path.name, path.read_bytes())
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("outdir", type=Path)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    counts = write_corpus(args.outdir, args.seed)
    print(f"corpus in {args.outdir}: {counts['text']} text, {counts['binary']} binary, "
          f"{counts['json']} json, {counts['tfevents']} event file, {counts['inflate']} inflate, "
          f"{counts['xspace']} xspace seeds")


if __name__ == "__main__":
    main()
