"""TensorBoard event file messages (Event, Summary, TaggedRunMetadata, ...) in pure Python.

Built like tests/tfproto.py (a hand-written ``FileDescriptorProto``, no protoc, no copy of
TensorFlow's .proto files), with the field numbers of event.proto, summary.proto and tensor.proto
given in the trace-format reference notes, in package ``tensorflow``, proto3, added to
``tfproto.POOL`` (TensorProto.dtype uses its DataType enum). RunMetadata itself is
``tfproto.RunMetadata``.

Exposed message classes: Event, Summary (Summary.Value), SummaryMetadata
(SummaryMetadata.PluginData), TaggedRunMetadata, TensorProto, and the placeholders LogMessage,
SessionLog, SourceMetadata, HistogramProto, Summary.Image, Summary.Audio.

Only the fields tracecore reads are declared, so that what protobuf checks (wire format,
UTF-8 of `string` fields) is what tracecore checks: the placeholders have no fields (their
content is still parsed as a message, as unknown fields), Summary.Value.node_name,
SummaryMetadata.display_name / summary_description / data_class and TensorProto.tensor_shape
and its typed values are left out (unknown fields, skipped). The oneofs are declared as in
TensorFlow: Event.what (fields 3-9) and Summary.Value.value (2-6 and 8), so a later member
replaces an earlier one on the wire exactly as in TensorFlow.
"""

from __future__ import annotations

from google.protobuf import descriptor_pb2, message_factory

import tfproto
from tfproto import _REP, _message

_FILE_NAME = "tracecore_tests/tensorflow_event.proto"


def _oneof(msg: descriptor_pb2.DescriptorProto, name: str, numbers: set[int]) -> None:
    index = len(msg.oneof_decl)
    msg.oneof_decl.add().name = name
    for f in msg.field:
        if f.number in numbers:
            f.oneof_index = index


def _build_file() -> descriptor_pb2.FileDescriptorProto:
    fd = descriptor_pb2.FileDescriptorProto()
    fd.name = _FILE_NAME
    fd.package = "tensorflow"
    fd.syntax = "proto3"
    fd.dependency.append(tfproto.FILE_DESCRIPTOR_PROTO.name)

    # ---- tensor.proto (dtype 1, tensor_content 4, string_val 8) ----
    _message(fd, "TensorProto", [
        ("dtype", 1, "DataType"),
        ("tensor_content", 4, "bytes"),
        ("string_val", 8, "bytes", _REP),
    ])

    # ---- summary.proto ----
    meta = _message(fd, "SummaryMetadata", [
        ("plugin_data", 1, ".tensorflow.SummaryMetadata.PluginData"),
    ])
    _message(meta, "PluginData", [
        ("plugin_name", 1, "string"),
        ("content", 2, "bytes"),
    ])
    _message(fd, "HistogramProto", [])
    summary = _message(fd, "Summary", [
        ("value", 1, ".tensorflow.Summary.Value", _REP),
    ])
    _message(summary, "Image", [])
    _message(summary, "Audio", [])
    value = _message(summary, "Value", [
        ("tag", 1, "string"),
        ("metadata", 9, "SummaryMetadata"),
        ("simple_value", 2, "float"),
        ("obsolete_old_style_histogram", 3, "bytes"),
        ("image", 4, ".tensorflow.Summary.Image"),
        ("histo", 5, "HistogramProto"),
        ("audio", 6, ".tensorflow.Summary.Audio"),
        ("tensor", 8, "TensorProto"),
    ])
    _oneof(value, "value", {2, 3, 4, 5, 6, 8})

    # ---- event.proto ----
    _message(fd, "LogMessage", [])
    _message(fd, "SessionLog", [])
    _message(fd, "SourceMetadata", [])
    _message(fd, "TaggedRunMetadata", [
        ("tag", 1, "string"),
        ("run_metadata", 2, "bytes"),
    ])
    event = _message(fd, "Event", [
        ("wall_time", 1, "double"),
        ("step", 2, "int64"),
        ("file_version", 3, "string"),
        ("graph_def", 4, "bytes"),
        ("summary", 5, "Summary"),
        ("log_message", 6, "LogMessage"),
        ("session_log", 7, "SessionLog"),
        ("tagged_run_metadata", 8, "TaggedRunMetadata"),
        ("meta_graph_def", 9, "bytes"),
        ("source_metadata", 10, "SourceMetadata"),
    ])
    _oneof(event, "what", {3, 4, 5, 6, 7, 8, 9})
    return fd


FILE_DESCRIPTOR_PROTO = _build_file()
tfproto.POOL.Add(FILE_DESCRIPTOR_PROTO)


def _cls(full_name: str):
    return message_factory.GetMessageClass(tfproto.POOL.FindMessageTypeByName(full_name))


Event = _cls("tensorflow.Event")
Summary = _cls("tensorflow.Summary")
SummaryMetadata = _cls("tensorflow.SummaryMetadata")
TaggedRunMetadata = _cls("tensorflow.TaggedRunMetadata")
TensorProto = _cls("tensorflow.TensorProto")
LogMessage = _cls("tensorflow.LogMessage")
SessionLog = _cls("tensorflow.SessionLog")
SourceMetadata = _cls("tensorflow.SourceMetadata")
HistogramProto = _cls("tensorflow.HistogramProto")

__all__ = [
    "Event",
    "HistogramProto",
    "LogMessage",
    "SessionLog",
    "SourceMetadata",
    "Summary",
    "SummaryMetadata",
    "TaggedRunMetadata",
    "TensorProto",
]
