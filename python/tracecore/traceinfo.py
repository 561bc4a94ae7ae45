"""What is known about a trace besides its tables: kind, format, figures, and the file it was
parsed from. Made by the parser (:mod:`.parsing`) and by the stores (:mod:`.stored`), held by
the :class:`~tracecore.Trace`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class SourceFile:
    """The file a trace was parsed from, as it was just before parsing (a cache entry is
    valid only while the file still has this size and mtime)."""

    path: str  # absolute
    size: int
    mtime_ns: int


@dataclass(frozen=True)
class TraceInfo:
    """What is known about a trace besides its tables."""

    kind: str  # "StepStats", "RunMetadata" or "XSpace"
    format: str  # "text", "binary" or "xspace"
    num_events: int
    stats: Mapping[str, Any]  # what Trace.stats returns
    source: str | None = None  # the path as given to open()
    source_file: SourceFile | None = None
