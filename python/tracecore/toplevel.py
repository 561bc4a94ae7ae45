"""``tracecore.open``: one trace (:mod:`.opening`), or the :class:`~.dataset.TraceSet` of a
profiler / TensorBoard log directory's XSpace profiles (:mod:`.profiles`)."""

from __future__ import annotations

import os
from typing import Any, BinaryIO

from . import _core
from ._core import TraceFormatError
from .checks import (
    PathArg,
    check_flag,
    check_path,
    check_table_budget,
    check_threads,
)
from .dataset import TraceSet
from .logdir import event_files_below, is_event_file, open_event_file_set, open_log_directory
from .opening import is_parquet_export, open_checked
from .parsing import FORMATS, check_errors, explain_error, reraise_with_path
from .profiles import find_profiles
from .trace import Trace


def _open_file_object(
    f: Any, format: str, threads: int, cache: bool, max_table_bytes: int, errors: str
) -> Trace:
    """A trace read from a binary file object (its bytes from the current position on)."""
    if cache:
        raise ValueError("cache=True needs a path: a file object's trace is not cached")
    try:
        at_start = f.tell() == 0
    except (OSError, AttributeError, ValueError):
        at_start = False
    data = f.read()
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(
            f"a file object must be opened in binary mode ('rb'): its read() gave "
            f"{type(data).__name__}, not bytes"
        )
    data = bytes(data)
    name = getattr(f, "name", None)
    # The trace's source only when the object is a whole regular file read from its start.
    source = name if isinstance(name, str) and at_start and os.path.isfile(name) else None
    try:
        core = _core.open_bytes(data, format, threads, max_table_bytes, errors)
    except TraceFormatError as e:
        explained = explain_error(e, data[:65536], format)
        if source is None:
            raise explained from None
        raise reraise_with_path(explained, source) from None
    return Trace.from_core(core, source, None)


def open(
    path: PathArg | BinaryIO,
    *,
    format: str = "auto",
    threads: int = 0,
    cache: bool = False,
    progress: bool = False,
    max_table_bytes: int | None = None,
    errors: str = "strict",
) -> Trace | TraceSet:
    """Parses a TensorFlow trace dump into columnar tables.

    Args:
        path: a path (``str``, ``bytes`` or path-like; ``bytes`` name a file, as
            ``os.listdir(b".")`` gives them), or a binary file object (``open(f, "rb")``,
            ``io.BytesIO(data)``: its bytes are read from the current position; not cached) of
            a StepStats or RunMetadata dump, protobuf text (``.pbtxt``) or binary (``.pb``),
            an XSpace profile (``<host>.xplane.pb``, TensorFlow 2 / JAX), or Chrome trace JSON
            (timeline.py, XProf, JAX, PyTorch ``*.pt.trace.json``); gzip-compressed
            files are decompressed transparently. A TensorBoard event file (told by its
            content, with ``format="auto"``) gives a :class:`~tracecore.dataset.TraceSet` of its
            RunMetadata. A directory: one written by :meth:`Trace.to_parquet` (it has a
            ``tracecore.json``) is read back as a Trace; a profiler or TensorBoard log
            directory gives a TraceSet of every event file's RunMetadata and every
            ``plugins/profile/<run>/<host>.xplane.pb`` (or ``.xplane.pb.gz``) at any depth below
            it, with run, host, tag, wall_time and source columns (see :mod:`tracecore.logdir`;
            a file that fails to load is reported in ``TraceSet.traces``; ``format`` and
            ``cache`` apply to each profile, ``threads`` is the number of files parsed at once,
            ``progress`` is not shown; ``cache`` and ``progress`` do not apply to event files).
        format: ``"auto"`` (detect), ``"text"``, ``"binary"``, ``"xspace"`` or ``"json"``.
            ``"auto"`` takes a JSON object (or an array of events) for Chrome trace JSON, a file
            for an XSpace when its first plane has XPlane's structure, for
            text when, after whitespace, it starts with a letter, ``_``, ``#`` or ``[`` and its
            first 64 KB hold no control bytes but whitespace; else for binary. A file that does
            not parse in the format taken is read in the other one if it parses there with no
            unknown fields (``t.format`` says which); otherwise the first error is raised.
        threads: parser threads; 0 uses every core (values above the number of cores are
            capped).
        cache: keep the parsed tables in a cache directory (``TRACECORE_CACHE_DIR``) keyed by the
            file's path, size and mtime and the tracecore version; an unchanged file is then
            memory-mapped from the cache instead of parsed. A directory written by
            :meth:`Trace.to_parquet` is opened directly.
        progress: show a progress bar with MB/s on stderr for opens of a file that take over a
            second.
        max_table_bytes: the memory budget of the parsed tables, in bytes: a parse whose
            columns would pass it stops with a TraceFormatError that says where it got to.
            ``None``: 16 bytes per byte of the file (of its decompressed data for gzip), at
            least 64 MiB; dumps take under 8, only degenerate input (empty records) more. For a
            trace file; the traces of a log directory or an event file get the default.
        errors: ``"strict"``, or ``"replace"``: in Chrome trace JSON, invalid UTF-8, raw
            control characters and lone surrogate escapes in strings become U+FFFD instead of
            raising (as ``bytes.decode(errors="replace")``). Such a trace is not cached.

    Raises:
        TraceFormatError: the file is not a valid trace (the message says where and why), an
            event file holds no RunMetadata, or a directory is neither a Parquet export nor a
            log directory with RunMetadata or profiles (the message says what it holds).
        OSError: the file cannot be read.
        TypeError: an argument of the wrong type (``threads`` or ``max_table_bytes`` not an
            int, ``cache`` or ``progress`` not a bool).
        ValueError: ``format`` is not one of the five, ``errors`` not ``"strict"`` or
            ``"replace"``, ``threads`` is negative or ``max_table_bytes`` is not a number of
            bytes from 1 to 2**64 - 1.
    """
    if format not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, not {format!r}")
    errors = check_errors(errors)
    threads = check_threads(threads)
    cache = check_flag(cache, "cache")
    progress = check_flag(progress, "progress")
    max_table_bytes = check_table_budget(max_table_bytes)
    if hasattr(path, "read") and not isinstance(path, (str, bytes, os.PathLike)):
        return _open_file_object(path, format, threads, cache, max_table_bytes, errors)
    path_str = check_path(path)
    if os.path.isdir(path_str) and not is_parquet_export(path_str):
        profiles = find_profiles(path_str)
        event_files = event_files_below(path_str)
        if profiles or event_files:
            return open_log_directory(
                path_str, profiles, event_files, format=format, threads=threads, cache=cache
            )
    elif format == "auto" and is_event_file(path_str):
        return open_event_file_set(path_str, threads=threads)
    return open_checked(path_str, format, threads, cache, progress, max_table_bytes, errors)
