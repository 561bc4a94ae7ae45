"""Stored traces: what a stored copy of a trace's tables records, and what a Trace made again
from such tables (a cache entry, :mod:`.cache`, or a Parquet directory, :mod:`.parquet`) is and
does (``Trace.from_stored`` puts the two together).

A stored trace has the tables and figures of the original parse, and is complete without the
source file: the queries (``overlaps``, ``window``, ``occupancy``, ``replay``, ``op_stats``)
run on a native core built on first use from the stored tables (:func:`core_from_tables`),
which checks every value it takes.

Stored files are verified (:func:`read_verified`, :func:`file_crc32c`): every file carries the
CRC-32C of its bytes, checked before a byte of it is decoded; files are read into memory, not
mapped, so a file truncated or rewritten under a reader cannot fault it. A cache entry is
written into a temporary directory (:func:`new_temp_dir`) renamed into place as a whole; its
writer holds a lock on a file in it for the whole write, and the temporaries of killed writers
are removed by the next write (:func:`remove_stale_temps`).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import shutil
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from . import _core, _version
from .traceinfo import SourceFile, TraceInfo

if TYPE_CHECKING:
    from .trace import Trace

#: Version of the metadata layout (``tracecore.json`` of a Parquet directory). 2: per-file sizes
#: and CRC-32Cs ("files") and a checksum of the metadata itself.
LAYOUT_VERSION = 2


#: A temporary directory of a store without a lock file (its writer was killed before it made
#: one, or after it removed it) is stale once unchanged for this long.
STALE_UNLOCKED_SECONDS = 3600.0


class ChecksumMismatchError(ValueError):
    """A stored file does not have the size or the CRC-32C recorded when it was written."""


def trace_meta(trace: Trace) -> dict[str, Any]:
    """What a stored copy of ``trace`` records about it: source identity, kind, format,
    row counts and the parse statistics."""
    stats = {k: v for k, v in trace.stats.items() if k not in ("loaded_from", "load_seconds")}
    counts = {name: trace.table(name).num_rows for name in trace.table_names}
    source_file = trace.source_file
    if source_file is not None:
        source: str | None = source_file.path
        size: int | None = source_file.size
        mtime_ns: int | None = source_file.mtime_ns
    else:
        source = os.path.abspath(trace.source) if trace.source else None
        size = mtime_ns = None
    return {
        "layout_version": LAYOUT_VERSION,
        "tracecore_version": _version.__version__,
        "source": source,
        "size": size,
        "mtime_ns": mtime_ns,
        "kind": trace.kind,
        "format": trace.format,
        "counts": counts,
        "stats": stats,
    }


def stored_info(
    meta: Mapping[str, Any], *, source: str | None, loaded_from: str, load_seconds: float
) -> TraceInfo:
    """What a trace read back from a store is, from ``meta`` (as :func:`trace_meta` wrote it):
    the figures of the original parse plus ``loaded_from`` and ``load_seconds``. ``source``:
    the path it reports as :attr:`Trace.source`."""
    stats = dict(meta.get("stats", {}))
    stats["loaded_from"] = loaded_from
    stats["load_seconds"] = load_seconds
    path, size, mtime_ns = meta.get("source"), meta.get("size"), meta.get("mtime_ns")
    source_file = None
    if isinstance(path, str) and isinstance(size, int) and isinstance(mtime_ns, int):
        source_file = SourceFile(path, size, mtime_ns)
    return TraceInfo(
        kind=meta["kind"],
        format=meta["format"],
        num_events=int(meta["counts"]["events"]),
        stats=stats,
        source=source,
        source_file=source_file,
    )


def core_from_tables(tables: Mapping[str, pa.Table], meta: Mapping[str, Any]) -> _core.Trace:
    """The native core of a stored trace, built from its own ``tables`` (read back from the
    store): every query then runs on what was stored, whatever became of the source file.

    The core copies every value and checks it (types, offsets, dictionary indices, references
    between tables, row numbers); the tables of a store are also checksummed when read.

    Raises:
        TraceFormatError: a table is not one the core wrote (another type, a missing column, a
            reference out of range, ...); the message names the table and column.
    """
    items = []
    for name in _core.TABLE_NAMES:
        table = tables.get(name)
        if table is not None:
            # Batch by batch, each with its own dictionaries: no copy on this side.
            items.append((name, [batch.__arrow_c_array__() for batch in table.to_batches()]))
    return _core.from_tables(items, str(meta.get("kind", "")), str(meta.get("format", "")))


def compact_dictionaries(table: pa.Table) -> pa.Table:
    """``table`` with every dictionary column's dictionary cut down to the values it uses.

    The native core's exports already are (see docs/tables.md); a table made otherwise (a slice,
    a filter, names derived in Python) can carry unused entries, which a store would keep."""
    columns = []
    for column in table.columns:
        if pa.types.is_dictionary(column.type):
            column = pa.chunked_array(
                [_compact_dictionary(chunk) for chunk in column.chunks], type=column.type
            )
        columns.append(column)
    return pa.Table.from_arrays(columns, schema=table.schema)


def _compact_dictionary(chunk: pa.DictionaryArray) -> pa.DictionaryArray:
    dictionary = chunk.dictionary
    indices = chunk.indices
    codes = indices.fill_null(0).to_numpy(zero_copy_only=False)
    if indices.null_count:
        counts = np.bincount(
            codes[~indices.is_null().to_numpy(zero_copy_only=False)], minlength=len(dictionary)
        )
    else:
        counts = np.bincount(codes, minlength=len(dictionary))
    used = np.flatnonzero(counts)
    if len(used) == len(dictionary):
        return chunk
    remap = np.zeros(len(dictionary), dtype=codes.dtype)
    remap[used] = np.arange(len(used), dtype=codes.dtype)
    mask = indices.is_null().to_numpy(zero_copy_only=False) if indices.null_count else None
    new_indices = pa.array(remap[codes], type=indices.type, mask=mask)
    return pa.DictionaryArray.from_arrays(new_indices, dictionary.take(pa.array(used)))


# --- verified reads ------------------------------------------------------------------------------

_CHUNK = 4 << 20


def file_crc32c(path: str | os.PathLike[str]) -> tuple[int, int]:
    """``(size, crc32c)`` of the file at ``path``, read in 4 MB pieces (right after it was
    written, from the page cache: memory speed)."""
    crc = size = 0
    with open(path, "rb", buffering=0) as f:
        view = memoryview(bytearray(max(1, min(_CHUNK, os.fstat(f.fileno()).st_size))))
        while n := f.readinto(view):
            crc = _core.crc32c(view[:n], crc)
            size += n
    return size, crc


def read_verified(path: str | os.PathLike[str], size: int, crc32c: int) -> pa.Buffer:
    """The bytes of the file at ``path`` in a 64-byte aligned Arrow buffer, read in one pass
    (not mapped: a file truncated later cannot fault the tables that point into it) and checked
    against the ``size`` and ``crc32c`` recorded when it was written.

    Raises:
        ChecksumMismatchError: the size or the checksum differ (the file is corrupt, truncated,
            or was replaced).
        OSError: the file cannot be read.
    """
    name = os.fsdecode(path)
    with open(path, "rb", buffering=0) as f:
        actual_size = os.fstat(f.fileno()).st_size
        if actual_size != size:
            raise ChecksumMismatchError(
                f"{name}: {actual_size} bytes where {size} were written (truncated or replaced)"
            )
        buf = pa.allocate_buffer(size)
        view = memoryview(buf)
        done = 0
        while done < size:
            n = f.readinto(view[done:])
            if not n:
                raise ChecksumMismatchError(f"{name}: truncated while being read")
            done += n
        view.release()
    actual = _core.crc32c(buf)
    if actual != crc32c:
        raise ChecksumMismatchError(
            f"{name}: the checksum does not match (crc32c {actual:08x}, {crc32c:08x} when "
            f"written): the file is corrupt"
        )
    return buf


# --- temporary directories ----------------------------------------------------------------------

#: The lock file in a temporary directory: its writer holds ``flock(LOCK_EX)`` on it while it
#: writes (see :func:`new_temp_dir`).
LOCK_FILE = ".lock"


def new_temp_dir(parent: Path, prefix: str) -> tuple[Path, int]:
    """A new directory ``parent/<prefix><pid>-<random>`` (mode 0o700) and the descriptor of
    its lock file :data:`LOCK_FILE`, on which this process holds ``flock(LOCK_EX)``: while that
    descriptor is open, :func:`remove_stale_temps` keeps the directory. Close it (after
    removing the lock file, or the directory) when the write is done."""
    while True:
        path = parent / f"{prefix}{os.getpid()}-{secrets.token_hex(6)}"
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            continue
        try:
            fd = os.open(path / LOCK_FILE, _LOCK_FLAGS, 0o600)
        except FileNotFoundError:
            continue  # removed as stale (no lock file, and an old mtime: a clock step)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if os.fstat(fd).st_nlink:
                return path, fd
        except BaseException:
            os.close(fd)
            raise
        # Removed as stale between its creation and the lock: take another name.
        os.close(fd)


_LOCK_FLAGS = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)


def _lock_if_stale(path: str, now: float) -> int | None:
    """Whether the temporary directory at ``path`` is a killed writer's (see
    :func:`remove_stale_temps`): -1 if it has no lock file and is old; the descriptor of its
    lock file, locked by this process, if the lock was free (keep it open until the directory
    is removed, so that a writer blocked on the lock then sees the directory gone); else None."""
    try:
        fd = os.open(os.path.join(path, LOCK_FILE), os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        try:
            age = now - os.stat(path, follow_symlinks=False).st_mtime
        except OSError:
            return None
        return -1 if age > STALE_UNLOCKED_SECONDS else None
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None  # locked: its writer is alive (or the lock cannot be taken: keep it)
    return fd


def remove_stale_temps(parent: Path, prefixes: Iterable[str]) -> list[Path]:
    """Removes the temporary directories ``<prefix>...`` in ``parent`` left by killed writers;
    returns them. A directory is stale when ``flock(LOCK_EX | LOCK_NB)`` on its lock file
    succeeds (its writer, who holds that lock for the whole write, is gone, wherever it ran),
    or when it has no lock file and has not changed for :data:`STALE_UNLOCKED_SECONDS`; every
    other one is kept, so concurrent writers are safe."""
    removed: list[Path] = []
    prefixes = tuple(prefixes)
    try:
        children = list(os.scandir(parent))
    except OSError:
        return removed
    now = time.time()
    for child in children:
        if not child.name.startswith(prefixes):
            continue
        if child.is_dir(follow_symlinks=False):
            lock = _lock_if_stale(child.path, now)
            if lock is None:
                continue
            try:
                shutil.rmtree(child.path, ignore_errors=True)
            finally:
                if lock >= 0:
                    os.close(lock)
        else:
            try:
                if now - child.stat(follow_symlinks=False).st_mtime <= STALE_UNLOCKED_SECONDS:
                    continue
            except OSError:
                continue
            with contextlib.suppress(OSError):
                os.unlink(child.path)
        removed.append(Path(child.path))
    return removed
