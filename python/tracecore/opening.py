"""``tracecore.open``: a trace file is parsed (:mod:`.parsing`) or, with ``cache=True``, read
from its cache entry (:mod:`.cache`); a directory written by ``Trace.to_parquet`` is read back
(:mod:`.parquet`)."""

from __future__ import annotations

import os
import time
from importlib import resources
from pathlib import Path

from .checks import PathArg, check_flag, check_path, check_threads
from .parsing import FORMATS, parse_core
from .trace import Trace


def sample_path() -> Path:
    """Path of the sample trace bundled with tracecore (one LSTM training step, StepStats text)."""
    return Path(str(resources.files("tracecore") / "data" / "sample_lstm_step.pbtxt.gz"))


def open(
    path: PathArg,
    *,
    format: str = "auto",
    threads: int = 0,
    cache: bool = False,
    progress: bool = False,
) -> Trace:
    """Parses a TensorFlow trace dump into columnar tables.

    Args:
        path: a StepStats or RunMetadata dump, protobuf text (``.pbtxt``) or binary (``.pb``),
            or an XSpace profile (``<host>.xplane.pb``, TensorFlow 2 / JAX); gzip-compressed
            files are decompressed transparently.
        format: ``"auto"`` (detect), ``"text"``, ``"binary"`` or ``"xspace"``. ``"auto"``
            takes a file for an XSpace when its first plane has XPlane's structure, for
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
        progress: show a progress bar with MB/s on stderr for opens that take over a second.

    Raises:
        TraceFormatError: the file is not a valid trace (the message says where and why).
        OSError: the file cannot be read.
        TypeError: an argument of the wrong type (``threads`` not an int, ``cache`` or
            ``progress`` not a bool).
        ValueError: ``format`` is not one of the four, or ``threads`` is negative.
    """
    if format not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, not {format!r}")
    threads = check_threads(threads)
    cache = check_flag(cache, "cache")
    progress = check_flag(progress, "progress")
    path_str = check_path(path)
    if os.path.isdir(path_str):
        return open_parquet_dir(path_str)
    if cache:
        from .cache import open_cached

        return open_cached(path_str, format=format, threads=threads, progress=progress)
    core, source_file = parse_core(path_str, format=format, threads=threads, progress=progress)
    return Trace.from_core(core, path_str, source_file)


def open_parquet_dir(directory: str | os.PathLike[str]) -> Trace:
    """Reopens a directory written by ``Trace.to_parquet`` (see :mod:`.parquet`)."""
    from .parquet import read_parquet_dir

    start = time.perf_counter()
    tables, meta = read_parquet_dir(directory)
    return Trace.from_stored(
        tables,
        meta,
        source=meta.get("source"),
        loaded_from="parquet",
        load_seconds=time.perf_counter() - start,
    )
