"""One trace, for ``tracecore.open`` (:mod:`.toplevel`): a trace file is parsed (:mod:`.parsing`)
or, with ``cache=True``, read from its cache entry (:mod:`.cache`); a directory written by
``Trace.to_parquet`` is read back (:mod:`.parquet`)."""

from __future__ import annotations

import os
import time
from importlib import resources
from pathlib import Path

from ._core import TraceFormatError
from .checks import (
    PathArg,
    check_flag,
    check_path,
    check_table_budget,
    check_threads,
    display_path,
)
from .parsing import FORMATS, check_errors, parse_core
from .trace import Trace


def sample_path() -> Path:
    """Path of the sample trace bundled with tracecore (one LSTM training step, StepStats text)."""
    return Path(str(resources.files("tracecore") / "data" / "sample_lstm_step.pbtxt.gz"))


def open_trace(
    path: PathArg,
    *,
    format: str = "auto",
    threads: int = 0,
    cache: bool = False,
    progress: bool = False,
    max_table_bytes: int | None = None,
    errors: str = "strict",
) -> Trace:
    """``tracecore.open`` of a trace file or a Parquet export: always a :class:`Trace` (a log
    directory is a TraceFormatError that names the profiles found in it)."""
    if format not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, not {format!r}")
    threads = check_threads(threads)
    cache = check_flag(cache, "cache")
    progress = check_flag(progress, "progress")
    max_table_bytes = check_table_budget(max_table_bytes)
    errors = check_errors(errors)
    return open_checked(
        check_path(path), format, threads, cache, progress, max_table_bytes, errors
    )


def is_parquet_export(directory: str) -> bool:
    """Whether ``directory`` has the ``tracecore.json`` of a Parquet export."""
    from .parquet import META_FILE

    return os.path.lexists(os.path.join(directory, META_FILE))


def open_checked(
    path_str: str,
    format: str,
    threads: int,
    cache: bool,
    progress: bool,
    max_table_bytes: int = 0,
    errors: str = "strict",
) -> Trace:
    """:func:`open_trace` of a path and arguments already checked (``max_table_bytes``: 0 for
    the default budget; ``errors="replace"`` bypasses the cache: its tables are not the
    file's)."""
    if os.path.isdir(path_str):
        if not is_parquet_export(path_str):
            raise _not_a_trace_directory(path_str)
        return open_parquet_dir(path_str)
    if cache and errors == "strict":
        from .cache import open_cached

        return open_cached(
            path_str,
            format=format,
            threads=threads,
            progress=progress,
            max_table_bytes=max_table_bytes,
        )
    core, source_file = parse_core(
        path_str,
        format=format,
        threads=threads,
        progress=progress,
        max_table_bytes=max_table_bytes,
        errors=errors,
    )
    return Trace.from_core(core, path_str, source_file)


def _not_a_trace_directory(directory: str) -> TraceFormatError:
    """The error for a directory that is neither a Parquet export nor a log directory with
    XSpace profiles: it says what the directory holds."""
    from .parquet import META_FILE
    from .profiles import PROFILE_LAYOUT, describe_contents, find_profiles

    profiles = find_profiles(directory)
    if profiles:  # open_trace of a log directory: it is a set of traces
        names = ", ".join(display_path(p.path) for p in profiles[:3])
        more = f" and {len(profiles) - 3} more" if len(profiles) > 3 else ""
        return TraceFormatError(
            f"{display_path(directory)}: a log directory with {len(profiles)} XSpace profiles "
            f"({names}{more}), not one trace: tracecore.open or tracecore.open_many reads it as "
            f"a TraceSet"
        )
    return TraceFormatError(
        f"{display_path(directory)}: not a tracecore Parquet directory (no {META_FILE}; write one "
        f"with Trace.to_parquet) and no XSpace profile ({PROFILE_LAYOUT}) below it: "
        f"{describe_contents(directory)}"
    )


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
