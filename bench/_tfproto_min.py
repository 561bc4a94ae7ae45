"""Minimal TensorFlow StepStats message classes, built in Python (no protoc needed).

Covers step_stats.proto and what it imports (tensor_description, allocation_description,
tensor_shape, types), with the field numbers of TensorFlow's published .proto definitions (the
same as tests/tfproto.py, which defines RunMetadata too).
The classes live in a private DescriptorPool, so they never clash with another definition of
the same `tensorflow.*` names (for example the one in tests/tfproto.py) in the same process.

    from _tfproto_min import StepStats
    msg = StepStats(); msg.ParseFromString(data)
"""

from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_F = descriptor_pb2.FieldDescriptorProto
_OPT, _REP = _F.LABEL_OPTIONAL, _F.LABEL_REPEATED
_T = {
    "int32": _F.TYPE_INT32,
    "int64": _F.TYPE_INT64,
    "uint32": _F.TYPE_UINT32,
    "uint64": _F.TYPE_UINT64,
    "bool": _F.TYPE_BOOL,
    "string": _F.TYPE_STRING,
}

# DataType (types.proto): value -> name; the *_REF variants are value + 100.
_DTYPES = [
    "DT_INVALID", "DT_FLOAT", "DT_DOUBLE", "DT_INT32", "DT_UINT8", "DT_INT16", "DT_INT8",
    "DT_STRING", "DT_COMPLEX64", "DT_INT64", "DT_BOOL", "DT_QINT8", "DT_QUINT8", "DT_QINT32",
    "DT_BFLOAT16", "DT_QINT16", "DT_QUINT16", "DT_UINT16", "DT_COMPLEX128", "DT_HALF",
    "DT_RESOURCE", "DT_VARIANT", "DT_UINT32", "DT_UINT64", "DT_FLOAT8_E5M2", "DT_FLOAT8_E4M3FN",
    "DT_FLOAT8_E4M3FNUZ", "DT_FLOAT8_E4M3B11FNUZ", "DT_FLOAT8_E5M2FNUZ", "DT_INT4", "DT_UINT4",
    "DT_INT2", "DT_UINT2", "DT_FLOAT4_E2M1FN",
]


def _msg(fdp, name, fields, nested=()):
    """Add message `name` with fields (number, name, label, type[, type_name]) to fdp."""
    m = fdp.message_type.add() if isinstance(fdp, descriptor_pb2.FileDescriptorProto) else fdp
    m.name = name
    for number, fname, label, ftype, *type_name in fields:
        f = m.field.add(name=fname, number=number, label=label)
        if ftype in _T:
            f.type = _T[ftype]
        elif ftype == "enum":
            f.type = _F.TYPE_ENUM
            f.type_name = type_name[0]
        else:
            f.type = _F.TYPE_MESSAGE
            f.type_name = ftype
    for n in nested:
        n(m.nested_type.add())
    return m


def _build_pool() -> descriptor_pool.DescriptorPool:
    fdp = descriptor_pb2.FileDescriptorProto(
        name="tracecore_bench/step_stats_min.proto", package="tensorflow", syntax="proto3"
    )
    enum = fdp.enum_type.add(name="DataType")
    for value, name in enumerate(_DTYPES):
        enum.value.add(name=name, number=value)
    for value, name in enumerate(_DTYPES[1:], start=101):
        enum.value.add(name=name + "_REF", number=value)

    def dim(m):
        _msg(m, "Dim", [(1, "size", _OPT, "int64"), (2, "name", _OPT, "string")])

    _msg(
        fdp,
        "TensorShapeProto",
        [(2, "dim", _REP, ".tensorflow.TensorShapeProto.Dim"), (3, "unknown_rank", _OPT, "bool")],
        nested=[dim],
    )
    _msg(
        fdp,
        "AllocationDescription",
        [
            (1, "requested_bytes", _OPT, "int64"),
            (2, "allocated_bytes", _OPT, "int64"),
            (3, "allocator_name", _OPT, "string"),
            (4, "allocation_id", _OPT, "int64"),
            (5, "has_single_reference", _OPT, "bool"),
            (6, "ptr", _OPT, "uint64"),
        ],
    )
    _msg(
        fdp,
        "TensorDescription",
        [
            (1, "dtype", _OPT, "enum", ".tensorflow.DataType"),
            (2, "shape", _OPT, ".tensorflow.TensorShapeProto"),
            (4, "allocation_description", _OPT, ".tensorflow.AllocationDescription"),
        ],
    )
    _msg(
        fdp,
        "AllocationRecord",
        [(1, "alloc_micros", _OPT, "int64"), (2, "alloc_bytes", _OPT, "int64")],
    )
    _msg(
        fdp,
        "AllocatorMemoryUsed",
        [
            (1, "allocator_name", _OPT, "string"),
            (2, "total_bytes", _OPT, "int64"),
            (3, "peak_bytes", _OPT, "int64"),
            (4, "live_bytes", _OPT, "int64"),
            (6, "allocation_records", _REP, ".tensorflow.AllocationRecord"),
            (5, "allocator_bytes_in_use", _OPT, "int64"),
        ],
    )
    _msg(
        fdp,
        "NodeOutput",
        [
            (1, "slot", _OPT, "int32"),
            (3, "tensor_description", _OPT, ".tensorflow.TensorDescription"),
        ],
    )
    _msg(
        fdp,
        "MemoryStats",
        [
            (1, "temp_memory_size", _OPT, "int64"),
            (3, "persistent_memory_size", _OPT, "int64"),
            (5, "persistent_tensor_alloc_ids", _REP, "int64"),
            (2, "device_temp_memory_size", _OPT, "int64"),
            (4, "device_persistent_memory_size", _OPT, "int64"),
            (6, "device_persistent_tensor_alloc_ids", _REP, "int64"),
        ],
    )
    _msg(
        fdp,
        "NodeExecStats",
        [
            (1, "node_name", _OPT, "string"),
            (2, "all_start_micros", _OPT, "int64"),
            (3, "op_start_rel_micros", _OPT, "int64"),
            (4, "op_end_rel_micros", _OPT, "int64"),
            (5, "all_end_rel_micros", _OPT, "int64"),
            (6, "memory", _REP, ".tensorflow.AllocatorMemoryUsed"),
            (7, "output", _REP, ".tensorflow.NodeOutput"),
            (8, "timeline_label", _OPT, "string"),
            (9, "scheduled_micros", _OPT, "int64"),
            (10, "thread_id", _OPT, "uint32"),
            (11, "referenced_tensor", _REP, ".tensorflow.AllocationDescription"),
            (12, "memory_stats", _OPT, ".tensorflow.MemoryStats"),
            (13, "all_start_nanos", _OPT, "int64"),
            (14, "op_start_rel_nanos", _OPT, "int64"),
            (15, "op_end_rel_nanos", _OPT, "int64"),
            (16, "all_end_rel_nanos", _OPT, "int64"),
            (17, "scheduled_nanos", _OPT, "int64"),
        ],
    )

    def thread_names_entry(m):
        _msg(m, "ThreadNamesEntry", [(1, "key", _OPT, "uint32"), (2, "value", _OPT, "string")])
        m.options.map_entry = True

    _msg(
        fdp,
        "DeviceStepStats",
        [
            (1, "device", _OPT, "string"),
            (2, "node_stats", _REP, ".tensorflow.NodeExecStats"),
            (3, "thread_names", _REP, ".tensorflow.DeviceStepStats.ThreadNamesEntry"),
        ],
        nested=[thread_names_entry],
    )
    _msg(fdp, "StepStats", [(1, "dev_stats", _REP, ".tensorflow.DeviceStepStats")])

    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return pool


POOL = _build_pool()


def _cls(full_name: str):
    return message_factory.GetMessageClass(POOL.FindMessageTypeByName(full_name))


StepStats = _cls("tensorflow.StepStats")
DeviceStepStats = _cls("tensorflow.DeviceStepStats")
NodeExecStats = _cls("tensorflow.NodeExecStats")

__all__ = ["POOL", "StepStats", "DeviceStepStats", "NodeExecStats"]
