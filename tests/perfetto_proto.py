"""Perfetto trace messages (Trace, TracePacket, TrackDescriptor, ProcessDescriptor,
CounterDescriptor, TrackEvent, InternedData, EventName, EventCategory) defined in pure Python.

As in tests/xspace_proto.py, the descriptors are built by hand (no protoc, no copy of the
upstream .proto files) from the field numbers of perfetto's protos/perfetto/trace: trace.proto
(Trace.packet = 1), trace_packet.proto, track_event/track_descriptor.proto,
track_event/process_descriptor.proto, track_event/counter_descriptor.proto,
track_event/track_event.proto and interned_data/interned_data.proto (EventName and
EventCategory in track_event/track_event.proto). proto2, package ``perfetto.protos``; only the
fields tracecore writes or a reader of them needs, enums declared as int32 (same encoding).
Anything else in a packet is an unknown field, which the tests reject.

Exposed message classes: Trace, TracePacket, TrackDescriptor, ProcessDescriptor,
CounterDescriptor, TrackEvent, InternedData, EventName, EventCategory; constants for the enums.
"""

from __future__ import annotations

from google.protobuf import descriptor_pb2

from proto_build import OPT as _OPT
from proto_build import REP as _REP
from proto_build import add_message, message_classes

_PACKAGE = "perfetto.protos"

# TracePacket.SequenceFlags
SEQ_INCREMENTAL_STATE_CLEARED = 1
SEQ_NEEDS_INCREMENTAL_STATE = 2
# TrackEvent.Type
TYPE_SLICE_BEGIN = 1
TYPE_SLICE_END = 2
TYPE_INSTANT = 3
TYPE_COUNTER = 4
# CounterDescriptor.Unit
UNIT_SIZE_BYTES = 3


def _message(parent, name: str, fields, oneofs: dict[str, int] | None = None):
    return add_message(parent, _PACKAGE, name, fields, oneofs)


def _build_file() -> descriptor_pb2.FileDescriptorProto:
    fd = descriptor_pb2.FileDescriptorProto()
    fd.name = "tracecore_tests/perfetto_trace.proto"
    fd.package = _PACKAGE
    fd.syntax = "proto2"

    _message(fd, "Trace", [("packet", 1, "TracePacket", _REP)])
    _message(fd, "TracePacket", [
        ("timestamp", 8, "uint64"),
        ("timestamp_clock_id", 58, "uint32"),
        ("track_event", 11, "TrackEvent", _OPT, "data"),
        ("track_descriptor", 60, "TrackDescriptor", _OPT, "data"),
        ("trusted_packet_sequence_id", 10, "uint32", _OPT, "optional_trusted_packet_sequence_id"),
        ("interned_data", 12, "InternedData"),
        ("sequence_flags", 13, "uint32"),
        ("incremental_state_cleared", 41, "bool"),
        ("first_packet_on_sequence", 87, "bool"),
    ], oneofs={"data": 0, "optional_trusted_packet_sequence_id": 1})
    _message(fd, "TrackDescriptor", [
        ("uuid", 1, "uint64"),
        ("parent_uuid", 5, "uint64"),
        ("name", 2, "string"),
        ("process", 3, "ProcessDescriptor"),
        ("counter", 8, "CounterDescriptor"),
    ])
    _message(fd, "ProcessDescriptor", [
        ("pid", 1, "int32"),
        ("cmdline", 2, "string", _REP),
        ("process_name", 6, "string"),
    ])
    _message(fd, "CounterDescriptor", [
        ("type", 1, "int32"),
        ("categories", 2, "string", _REP),
        ("unit", 3, "int32"),
        ("unit_multiplier", 4, "int64"),
        ("is_incremental", 5, "bool"),
        ("unit_name", 6, "string"),
    ])
    _message(fd, "TrackEvent", [
        ("category_iids", 3, "uint64", _REP),
        ("categories", 22, "string", _REP),
        ("name_iid", 10, "uint64", _OPT, "name_field"),
        ("name", 23, "string", _OPT, "name_field"),
        ("type", 9, "int32"),
        ("track_uuid", 11, "uint64"),
        ("counter_value", 30, "int64", _OPT, "counter_value_field"),
        ("double_counter_value", 44, "double", _OPT, "counter_value_field"),
    ], oneofs={"name_field": 0, "counter_value_field": 1})
    _message(fd, "InternedData", [
        ("event_categories", 1, "EventCategory", _REP),
        ("event_names", 2, "EventName", _REP),
    ])
    _message(fd, "EventName", [("iid", 1, "uint64"), ("name", 2, "string")])
    _message(fd, "EventCategory", [("iid", 1, "uint64"), ("name", 2, "string")])
    return fd


FILE_DESCRIPTOR_PROTO = _build_file()
_CLASSES = message_classes(FILE_DESCRIPTOR_PROTO)

Trace = _CLASSES[f"{_PACKAGE}.Trace"]
TracePacket = _CLASSES[f"{_PACKAGE}.TracePacket"]
TrackDescriptor = _CLASSES[f"{_PACKAGE}.TrackDescriptor"]
ProcessDescriptor = _CLASSES[f"{_PACKAGE}.ProcessDescriptor"]
CounterDescriptor = _CLASSES[f"{_PACKAGE}.CounterDescriptor"]
TrackEvent = _CLASSES[f"{_PACKAGE}.TrackEvent"]
InternedData = _CLASSES[f"{_PACKAGE}.InternedData"]
EventName = _CLASSES[f"{_PACKAGE}.EventName"]
EventCategory = _CLASSES[f"{_PACKAGE}.EventCategory"]
