"""XSpace profiler messages (XSpace, XPlane, XLine, XEvent, XStat, ...) defined in pure Python.

The TensorFlow 2 / JAX / PyTorch-XLA profilers write one ``tensorflow.profiler.XSpace`` per host
(``<host>.xplane.pb``). As in tests/tfproto.py, the descriptors are built by hand as a
``descriptor_pb2.FileDescriptorProto`` (no protoc, no copy of the upstream .proto file) from the
field numbers and types in the trace-format reference notes: proto3, package
``tensorflow.profiler``, the two oneofs (XEvent.data, XStat.value) declared as oneofs and the
two metadata maps of XPlane declared as proto3 maps (a repeated nested ``...Entry`` message with
``map_entry`` set), so that the ``protobuf`` package reads them with the upstream semantics: last
value wins for scalars and oneofs, last entry wins for a repeated map key.

Exposed message classes: XSpace, XPlane, XLine, XEvent, XStat, XEventMetadata, XStatMetadata.
"""

from __future__ import annotations

from google.protobuf import descriptor_pb2

from proto_build import OPT as _OPT
from proto_build import REP as _REP
from proto_build import add_message, message_classes

_PACKAGE = "tensorflow.profiler"


def _message(parent, name: str, fields, oneofs: dict[str, int] | None = None):
    return add_message(parent, _PACKAGE, name, fields, oneofs)


def _map_entry(parent, name: str, value_type: str) -> None:
    entry = _message(parent, name, [("key", 1, "int64"), ("value", 2, value_type)])
    entry.options.map_entry = True


def _build_file() -> descriptor_pb2.FileDescriptorProto:
    fd = descriptor_pb2.FileDescriptorProto()
    fd.name = "tracecore_tests/xplane.proto"
    fd.package = _PACKAGE
    fd.syntax = "proto3"

    _message(fd, "XSpace", [
        ("planes", 1, "XPlane", _REP),
        ("errors", 2, "string", _REP),
        ("warnings", 3, "string", _REP),
        ("hostnames", 4, "string", _REP),
    ])
    plane = _message(fd, "XPlane", [
        ("id", 1, "int64"),
        ("name", 2, "string"),
        ("lines", 3, "XLine", _REP),
        ("event_metadata", 4, ".tensorflow.profiler.XPlane.EventMetadataEntry", _REP),
        ("stat_metadata", 5, ".tensorflow.profiler.XPlane.StatMetadataEntry", _REP),
        ("stats", 6, "XStat", _REP),
    ])
    _map_entry(plane, "EventMetadataEntry", "XEventMetadata")
    _map_entry(plane, "StatMetadataEntry", "XStatMetadata")
    _message(fd, "XLine", [
        ("id", 1, "int64"),
        ("display_id", 10, "int64"),
        ("name", 2, "string"),
        ("display_name", 11, "string"),
        ("timestamp_ns", 3, "int64"),
        ("duration_ps", 9, "int64"),
        ("events", 4, "XEvent", _REP),
    ])
    _message(fd, "XEvent", [
        ("metadata_id", 1, "int64"),
        ("offset_ps", 2, "int64", _OPT, "data"),
        ("num_occurrences", 5, "int64", _OPT, "data"),
        ("duration_ps", 3, "int64"),
        ("stats", 4, "XStat", _REP),
    ], oneofs={"data": 0})
    _message(fd, "XStat", [
        ("metadata_id", 1, "int64"),
        ("double_value", 2, "double", _OPT, "value"),
        ("uint64_value", 3, "uint64", _OPT, "value"),
        ("int64_value", 4, "int64", _OPT, "value"),
        ("str_value", 5, "string", _OPT, "value"),
        ("bytes_value", 6, "bytes", _OPT, "value"),
        ("ref_value", 7, "uint64", _OPT, "value"),
        ("compressed_str_value", 8, "bytes", _OPT, "value"),
    ], oneofs={"value": 0})
    _message(fd, "XEventMetadata", [
        ("id", 1, "int64"),
        ("name", 2, "string"),
        ("metadata", 3, "bytes"),
        ("display_name", 4, "string"),
        ("stats", 5, "XStat", _REP),
        ("child_id", 6, "int64", _REP),
    ])
    _message(fd, "XStatMetadata", [
        ("id", 1, "int64"),
        ("name", 2, "string"),
        ("description", 3, "string"),
    ])
    return fd


FILE_DESCRIPTOR_PROTO = _build_file()
_CLASSES = message_classes(FILE_DESCRIPTOR_PROTO)

XSpace = _CLASSES[f"{_PACKAGE}.XSpace"]
XPlane = _CLASSES[f"{_PACKAGE}.XPlane"]
XLine = _CLASSES[f"{_PACKAGE}.XLine"]
XEvent = _CLASSES[f"{_PACKAGE}.XEvent"]
XStat = _CLASSES[f"{_PACKAGE}.XStat"]
XEventMetadata = _CLASSES[f"{_PACKAGE}.XEventMetadata"]
XStatMetadata = _CLASSES[f"{_PACKAGE}.XStatMetadata"]

__all__ = [
    "XEvent",
    "XEventMetadata",
    "XLine",
    "XPlane",
    "XSpace",
    "XStat",
    "XStatMetadata",
]
