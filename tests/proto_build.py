"""Building protobuf message classes by hand, without protoc: the message definitions the
differential tests decode with (tests/xspace_proto.py, tests/perfetto_proto.py) are written as
``descriptor_pb2.FileDescriptorProto``s from the published field numbers."""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

F = descriptor_pb2.FieldDescriptorProto

OPT = F.LABEL_OPTIONAL
REP = F.LABEL_REPEATED

SCALARS = ("string", "bytes", "int32", "uint32", "int64", "uint64", "double", "bool")


def add_message(
    parent: Any, package: str, name: str, fields: Any, oneofs: dict[str, int] | None = None
) -> descriptor_pb2.DescriptorProto:
    """A message ``name`` added to ``parent`` (a file, or a message for a nested type).
    fields: (name, number, type[, label[, oneof name]]), a type being a scalar of SCALARS, a
    message of ``package`` or a full name starting with "."; oneofs: oneof name -> index."""
    container = (
        parent.message_type
        if isinstance(parent, descriptor_pb2.FileDescriptorProto)
        else parent.nested_type
    )
    m = container.add()
    m.name = name
    for oneof_name in oneofs or {}:
        m.oneof_decl.add().name = oneof_name
    for spec in fields:
        fname, number, ftype = spec[0], spec[1], spec[2]
        label = spec[3] if len(spec) > 3 else OPT
        oneof = spec[4] if len(spec) > 4 else None
        f = m.field.add()
        f.name = fname
        f.number = number
        f.label = label
        if ftype in SCALARS:
            f.type = getattr(F, "TYPE_" + ftype.upper())
        else:
            f.type = F.TYPE_MESSAGE
            f.type_name = ftype if ftype.startswith(".") else f".{package}.{ftype}"
        if oneof is not None:
            assert oneofs is not None
            f.oneof_index = oneofs[oneof]
    return m


def message_classes(fd: descriptor_pb2.FileDescriptorProto) -> dict[str, Any]:
    """The message classes of ``fd`` by full name (in a pool of their own)."""
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    return message_factory.GetMessageClassesForFiles([fd.name], pool)
