"""TensorFlow trace messages (StepStats, RunMetadata, ...) defined in pure Python.

The descriptors are built by hand as ``descriptor_pb2.FileDescriptorProto`` objects (no protoc,
no copy of TensorFlow's .proto files), with the field numbers, names and types given in
the trace-format reference notes. Everything lives in package ``tensorflow`` with proto3 syntax, so
repeated scalars are packed by default and scalars have no presence.

Exposed message classes: StepStats, DeviceStepStats, NodeExecStats, AllocatorMemoryUsed,
AllocationRecord, NodeOutput, MemoryStats, TensorDescription, TensorShapeProto,
AllocationDescription, CostGraphDef, GraphDef, NodeDef, FunctionGraphs, SessionMetadata,
RunMetadata; plus the DataType enum helpers ``DATA_TYPE_NAMES`` (value -> name).

NodeDef.attr (field 5) and the other GraphDef/NodeDef extras are deliberately not declared:
on the wire they are skipped as unknown fields.
"""

from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

F = descriptor_pb2.FieldDescriptorProto

_OPT = F.LABEL_OPTIONAL
_REP = F.LABEL_REPEATED

_SCALAR_TYPES = {
    "string": F.TYPE_STRING,
    "bytes": F.TYPE_BYTES,
    "int32": F.TYPE_INT32,
    "int64": F.TYPE_INT64,
    "uint32": F.TYPE_UINT32,
    "uint64": F.TYPE_UINT64,
    "bool": F.TYPE_BOOL,
    "float": F.TYPE_FLOAT,
    "double": F.TYPE_DOUBLE,
}

# DataType values from the reference (types.proto). _REF variants are value + 100.
_BASE_DATA_TYPES = [
    ("DT_INVALID", 0),
    ("DT_FLOAT", 1),
    ("DT_DOUBLE", 2),
    ("DT_INT32", 3),
    ("DT_UINT8", 4),
    ("DT_INT16", 5),
    ("DT_INT8", 6),
    ("DT_STRING", 7),
    ("DT_COMPLEX64", 8),
    ("DT_INT64", 9),
    ("DT_BOOL", 10),
    ("DT_QINT8", 11),
    ("DT_QUINT8", 12),
    ("DT_QINT32", 13),
    ("DT_BFLOAT16", 14),
    ("DT_QINT16", 15),
    ("DT_QUINT16", 16),
    ("DT_UINT16", 17),
    ("DT_COMPLEX128", 18),
    ("DT_HALF", 19),
    ("DT_RESOURCE", 20),
    ("DT_VARIANT", 21),
    ("DT_UINT32", 22),
    ("DT_UINT64", 23),
    ("DT_FLOAT8_E5M2", 24),
    ("DT_FLOAT8_E4M3FN", 25),
    ("DT_FLOAT8_E4M3FNUZ", 26),
    ("DT_FLOAT8_E4M3B11FNUZ", 27),
    ("DT_FLOAT8_E5M2FNUZ", 28),
    ("DT_INT4", 29),
    ("DT_UINT4", 30),
]
# TensorFlow defines a _REF variant for every type except DT_INVALID (101..130).
_REF_DATA_TYPES = [(name + "_REF", value + 100) for name, value in _BASE_DATA_TYPES if value != 0]

DATA_TYPE_VALUES: list[tuple[str, int]] = _BASE_DATA_TYPES + _REF_DATA_TYPES
DATA_TYPE_NAMES: dict[int, str] = {value: name for name, value in DATA_TYPE_VALUES}


def _field(msg, name, number, ftype, label=_OPT, json_name=None):
    f = msg.field.add()
    f.name = name
    f.number = number
    f.label = label
    if ftype in _SCALAR_TYPES:
        f.type = _SCALAR_TYPES[ftype]
    elif ftype == "DataType":
        f.type = F.TYPE_ENUM
        f.type_name = ".tensorflow.DataType"
    else:
        f.type = F.TYPE_MESSAGE
        f.type_name = ftype if ftype.startswith(".") else ".tensorflow." + ftype
    return f


def _message(parent, name, fields):
    """parent: FileDescriptorProto or DescriptorProto; fields: (name, number, type[, label])."""
    container = parent.message_type if isinstance(parent, descriptor_pb2.FileDescriptorProto) \
        else parent.nested_type
    m = container.add()
    m.name = name
    for spec in fields:
        _field(m, *spec)
    return m


def _build_file() -> descriptor_pb2.FileDescriptorProto:
    fd = descriptor_pb2.FileDescriptorProto()
    fd.name = "tracecore_tests/tensorflow_trace.proto"
    fd.package = "tensorflow"
    fd.syntax = "proto3"

    # ---- enum DataType ----
    e = fd.enum_type.add()
    e.name = "DataType"
    for name, value in DATA_TYPE_VALUES:
        v = e.value.add()
        v.name = name
        v.number = value

    # ---- tensor_shape.proto ----
    shape = _message(fd, "TensorShapeProto", [
        ("dim", 2, ".tensorflow.TensorShapeProto.Dim", _REP),
        ("unknown_rank", 3, "bool"),
    ])
    _message(shape, "Dim", [
        ("size", 1, "int64"),
        ("name", 2, "string"),
    ])

    # ---- allocation_description.proto ----
    _message(fd, "AllocationDescription", [
        ("requested_bytes", 1, "int64"),
        ("allocated_bytes", 2, "int64"),
        ("allocator_name", 3, "string"),
        ("allocation_id", 4, "int64"),
        ("has_single_reference", 5, "bool"),
        ("ptr", 6, "uint64"),
    ])

    # ---- tensor_description.proto ----
    _message(fd, "TensorDescription", [
        ("dtype", 1, "DataType"),
        ("shape", 2, "TensorShapeProto"),
        ("allocation_description", 4, "AllocationDescription"),
    ])

    # ---- step_stats.proto ----
    _message(fd, "AllocationRecord", [
        ("alloc_micros", 1, "int64"),
        ("alloc_bytes", 2, "int64"),
    ])
    # Declaration order as in TensorFlow (allocation_records before allocator_bytes_in_use).
    _message(fd, "AllocatorMemoryUsed", [
        ("allocator_name", 1, "string"),
        ("total_bytes", 2, "int64"),
        ("peak_bytes", 3, "int64"),
        ("live_bytes", 4, "int64"),
        ("allocation_records", 6, "AllocationRecord", _REP),
        ("allocator_bytes_in_use", 5, "int64"),
    ])
    _message(fd, "NodeOutput", [
        ("slot", 1, "int32"),
        ("tensor_description", 3, "TensorDescription"),
    ])
    _message(fd, "MemoryStats", [
        ("temp_memory_size", 1, "int64"),
        ("persistent_memory_size", 3, "int64"),
        ("persistent_tensor_alloc_ids", 5, "int64", _REP),
        ("device_temp_memory_size", 2, "int64"),
        ("device_persistent_memory_size", 4, "int64"),
        ("device_persistent_tensor_alloc_ids", 6, "int64", _REP),
    ])
    _message(fd, "NodeExecStats", [
        ("node_name", 1, "string"),
        ("all_start_micros", 2, "int64"),
        ("op_start_rel_micros", 3, "int64"),
        ("op_end_rel_micros", 4, "int64"),
        ("all_end_rel_micros", 5, "int64"),
        ("memory", 6, "AllocatorMemoryUsed", _REP),
        ("output", 7, "NodeOutput", _REP),
        ("timeline_label", 8, "string"),
        ("scheduled_micros", 9, "int64"),
        ("thread_id", 10, "uint32"),
        ("referenced_tensor", 11, "AllocationDescription", _REP),
        ("memory_stats", 12, "MemoryStats"),
        ("all_start_nanos", 13, "int64"),
        ("op_start_rel_nanos", 14, "int64"),
        ("op_end_rel_nanos", 15, "int64"),
        ("all_end_rel_nanos", 16, "int64"),
        ("scheduled_nanos", 17, "int64"),
    ])
    dss = _message(fd, "DeviceStepStats", [
        ("device", 1, "string"),
        ("node_stats", 2, "NodeExecStats", _REP),
        ("thread_names", 3, ".tensorflow.DeviceStepStats.ThreadNamesEntry", _REP),
    ])
    entry = _message(dss, "ThreadNamesEntry", [
        ("key", 1, "uint32"),
        ("value", 2, "string"),
    ])
    entry.options.map_entry = True
    _message(fd, "StepStats", [
        ("dev_stats", 1, "DeviceStepStats", _REP),
    ])

    # ---- cost_graph.proto ----
    cg = _message(fd, "CostGraphDef", [
        ("node", 1, ".tensorflow.CostGraphDef.Node", _REP),
        ("cost", 2, ".tensorflow.CostGraphDef.AggregatedCost", _REP),
    ])
    node = _message(cg, "Node", [
        ("name", 1, "string"),
        ("device", 2, "string"),
        ("id", 3, "int32"),
        ("input_info", 4, ".tensorflow.CostGraphDef.Node.InputInfo", _REP),
        ("output_info", 5, ".tensorflow.CostGraphDef.Node.OutputInfo", _REP),
        ("temporary_memory_size", 6, "int64"),
        ("persistent_memory_size", 12, "int64"),
        ("host_temp_memory_size", 10, "int64"),
        ("device_temp_memory_size", 11, "int64"),
        ("device_persistent_memory_size", 16, "int64"),
        ("compute_cost", 9, "int64"),
        ("compute_time", 14, "int64"),
        ("memory_time", 15, "int64"),
        ("is_final", 7, "bool"),
        ("control_input", 8, "int32", _REP),
        ("inaccurate", 17, "bool"),
    ])
    _message(node, "InputInfo", [
        ("preceding_node", 1, "int32"),
        ("preceding_port", 2, "int32"),
    ])
    _message(node, "OutputInfo", [
        ("size", 1, "int64"),
        ("alias_input_port", 2, "int64"),
        ("shape", 3, "TensorShapeProto"),
        ("dtype", 4, "DataType"),
    ])
    _message(cg, "AggregatedCost", [
        ("cost", 1, "float"),
        ("dimension", 2, "string"),
    ])

    # ---- graph.proto / node_def.proto (attr map etc. omitted: skipped as unknown) ----
    _message(fd, "NodeDef", [
        ("name", 1, "string"),
        ("op", 2, "string"),
        ("input", 3, "string", _REP),
        ("device", 4, "string"),
    ])
    _message(fd, "GraphDef", [
        ("node", 1, "NodeDef", _REP),
    ])

    # ---- config.proto ----
    rm = _message(fd, "RunMetadata", [
        ("step_stats", 1, "StepStats"),
        ("cost_graph", 2, "CostGraphDef"),
        ("partition_graphs", 3, "GraphDef", _REP),
        ("function_graphs", 4, ".tensorflow.RunMetadata.FunctionGraphs", _REP),
        ("session_metadata", 5, "SessionMetadata"),
    ])
    _message(rm, "FunctionGraphs", [
        ("partition_graphs", 1, "GraphDef", _REP),
        ("pre_optimization_graph", 2, "GraphDef"),
        ("post_optimization_graph", 3, "GraphDef"),
    ])
    _message(fd, "SessionMetadata", [
        ("name", 1, "string"),
        ("version", 2, "int64"),
    ])
    return fd


FILE_DESCRIPTOR_PROTO = _build_file()
POOL = descriptor_pool.DescriptorPool()
POOL.Add(FILE_DESCRIPTOR_PROTO)
FILE_DESCRIPTOR = POOL.FindFileByName(FILE_DESCRIPTOR_PROTO.name)


def _cls(full_name: str):
    return message_factory.GetMessageClass(POOL.FindMessageTypeByName(full_name))


StepStats = _cls("tensorflow.StepStats")
DeviceStepStats = _cls("tensorflow.DeviceStepStats")
NodeExecStats = _cls("tensorflow.NodeExecStats")
AllocatorMemoryUsed = _cls("tensorflow.AllocatorMemoryUsed")
AllocationRecord = _cls("tensorflow.AllocationRecord")
NodeOutput = _cls("tensorflow.NodeOutput")
MemoryStats = _cls("tensorflow.MemoryStats")
TensorDescription = _cls("tensorflow.TensorDescription")
TensorShapeProto = _cls("tensorflow.TensorShapeProto")
AllocationDescription = _cls("tensorflow.AllocationDescription")
CostGraphDef = _cls("tensorflow.CostGraphDef")
GraphDef = _cls("tensorflow.GraphDef")
NodeDef = _cls("tensorflow.NodeDef")
SessionMetadata = _cls("tensorflow.SessionMetadata")
RunMetadata = _cls("tensorflow.RunMetadata")
FunctionGraphs = RunMetadata.FunctionGraphs
DataType = POOL.FindEnumTypeByName("tensorflow.DataType")

__all__ = [
    "DATA_TYPE_NAMES",
    "DATA_TYPE_VALUES",
    "POOL",
    "AllocationDescription",
    "AllocationRecord",
    "AllocatorMemoryUsed",
    "CostGraphDef",
    "DataType",
    "DeviceStepStats",
    "FunctionGraphs",
    "GraphDef",
    "MemoryStats",
    "NodeDef",
    "NodeExecStats",
    "NodeOutput",
    "RunMetadata",
    "SessionMetadata",
    "StepStats",
    "TensorDescription",
    "TensorShapeProto",
]
