"""Test oracle for TensorBoard event files: what tracecore must find in them.

Records are framed and checked here in plain Python (a table-driven CRC-32C written from its
definition), each Event is parsed by the ``protobuf`` package with the messages of
tests/tfevents_proto.py, and each RunMetadata by tests/tfproto.py. The result mirrors
``_core.tfevents_scan``: the RunMetadata found (tag, step, wall_time, source, payload bytes) and
what else the events hold, counted by the same rules.

This module deliberately does not import tracecore.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tfevents_proto as tep
import tfproto

# ---- CRC-32C (Castagnoli), reflected ---------------------------------------------------------


def _crc_table() -> list[int]:
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
        table.append(c)
    return table


_TABLE = _crc_table()


def crc32c(data: bytes, crc: int = 0) -> int:
    c = crc ^ 0xFFFFFFFF
    for b in data:
        c = (c >> 8) ^ _TABLE[(c ^ b) & 0xFF]
    return c ^ 0xFFFFFFFF


def masked_crc32c(data: bytes) -> int:
    c = crc32c(data)
    return ((((c >> 15) | (c << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def frame(payload: bytes) -> bytes:
    """One TFRecord record holding `payload`."""
    length = struct.pack("<Q", len(payload))
    return (length + struct.pack("<I", masked_crc32c(length)) + payload
            + struct.pack("<I", masked_crc32c(payload)))


# ---- records ---------------------------------------------------------------------------------

MAX_TAIL_RECORD_BYTES = 2**31 - 1  # beyond it a length past the end is absurd, not a tail


class RecordError(ValueError):
    """A corrupt record (or an Event protobuf cannot parse) at byte `offset`."""

    def __init__(self, offset: int, kind: str) -> None:
        super().__init__(f"byte offset {offset}: {kind}")
        self.offset = offset
        self.kind = kind


def read_records(data: bytes) -> tuple[list[tuple[int, bytes]], int | None]:
    """[(record offset, payload)] and the offset of a truncated tail record (or None).

    Raises RecordError("length CRC" / "absurd length" / "data CRC") at the record's offset.
    """
    records: list[tuple[int, bytes]] = []
    pos = 0
    while pos < len(data):
        left = len(data) - pos
        if left < 12:
            return records, pos
        head = data[pos:pos + 8]
        (length,) = struct.unpack("<Q", head)
        (stored,) = struct.unpack_from("<I", data, pos + 8)
        if masked_crc32c(head) != stored:
            raise RecordError(pos, "length CRC")
        if length + 16 > left:
            if length > MAX_TAIL_RECORD_BYTES:
                raise RecordError(pos, "absurd length")
            return records, pos
        payload = data[pos + 12:pos + 12 + length]
        (stored,) = struct.unpack_from("<I", data, pos + 12 + length)
        if masked_crc32c(payload) != stored:
            raise RecordError(pos, "data CRC")
        records.append((pos, payload))
        pos += 16 + length
    return records, None


# ---- events ----------------------------------------------------------------------------------

RUN_METADATA_PLUGINS = ("graph_run_metadata_graph", "graph_run_metadata")
_VALUE_KINDS = {"simple_value": "simple_values", "image": "images", "histo": "histograms",
                "obsolete_old_style_histogram": "histograms", "audio": "audio",
                "tensor": "tensors", None: "empty_values"}


@dataclass
class FoundRunMetadata:
    tag: str
    step: int
    wall_time: float
    source: str
    payload: bytes
    record_offset: int
    run: str = ""  # the event file's directory relative to the log root


@dataclass
class FileScan:
    records: int = 0
    run_metadata: list[FoundRunMetadata] = field(default_factory=list)
    content: dict[str, Any] = field(default_factory=dict)
    truncated_tail: int | None = None


def _new_content() -> dict[str, Any]:
    content: dict[str, Any] = {k: 0 for k in (
        "events", "file_version", "graph_def", "summary", "log_message", "session_log",
        "tagged_run_metadata", "meta_graph_def", "no_what", "summary_values",
        "other_plugin_values", "simple_values", "images", "histograms", "audio", "tensors",
        "empty_values", "run_metadata_without_payload", "min_step", "max_step")}
    content.update(plugins={}, file_version_string="", min_wall_time=0.0, max_wall_time=0.0)
    return content


def scan_bytes(data: bytes) -> FileScan:
    """The RunMetadata and content of an event file; RecordError for what tracecore rejects
    in strict mode (a corrupt record, an Event protobuf cannot parse, no complete record)."""
    if not data:
        raise RecordError(0, "empty input")
    records, tail = read_records(data)
    if not records:
        raise RecordError(tail or 0, "no complete record")
    scan = FileScan(records=len(records), content=_new_content(), truncated_tail=tail)
    c = scan.content
    for offset, payload in records:
        try:
            event = tep.Event.FromString(payload)
        except Exception as e:  # google.protobuf.message.DecodeError
            raise RecordError(offset, f"not an Event: {e}") from e
        first = c["events"] == 0
        for key, value, pick in (("min_step", event.step, min), ("max_step", event.step, max),
                                 ("min_wall_time", event.wall_time, min),
                                 ("max_wall_time", event.wall_time, max)):
            c[key] = value if first else pick(c[key], value)
        c["events"] += 1
        what = event.WhichOneof("what")
        c[what or "no_what"] += 1
        if what == "file_version" and not c["file_version_string"]:
            c["file_version_string"] = event.file_version
        elif what == "tagged_run_metadata":
            t = event.tagged_run_metadata
            scan.run_metadata.append(FoundRunMetadata(
                t.tag, event.step, event.wall_time, "tagged_run_metadata", t.run_metadata, offset))
        elif what == "summary":
            for v in event.summary.value:
                c["summary_values"] += 1
                plugin = v.metadata.plugin_data.plugin_name
                kind = v.WhichOneof("value")
                if plugin:
                    c["plugins"][plugin] = c["plugins"].get(plugin, 0) + 1
                else:
                    c[_VALUE_KINDS[kind]] += 1
                if kind != "tensor" or plugin not in RUN_METADATA_PLUGINS:
                    continue
                if not v.tensor.string_val:
                    c["run_metadata_without_payload"] += 1
                    continue
                scan.run_metadata.append(FoundRunMetadata(
                    v.tag, event.step, event.wall_time, plugin, v.tensor.string_val[0], offset))
    return scan


def node_stats_count(payload: bytes) -> int:
    """The events (node_stats over all devices) of a serialized RunMetadata."""
    run_metadata = tfproto.RunMetadata.FromString(payload)
    return sum(len(d.node_stats) for d in run_metadata.step_stats.dev_stats)


def is_event_file(path: Path) -> bool:
    return path.is_file() and "tfevents" in path.name


def scan_logdir(root: Path) -> list[tuple[Path, FileScan]]:
    """Every event file under `root` (sorted paths) with its scan; each RunMetadata's `run` is
    its file's directory relative to `root` ("." for the root itself)."""
    out = []
    for path in sorted(p for p in root.rglob("*") if is_event_file(p)):
        scan = scan_bytes(path.read_bytes())
        run = path.parent.relative_to(root).as_posix()
        for found in scan.run_metadata:
            found.run = run
        out.append((path, scan))
    return out
