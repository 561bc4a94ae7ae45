"""Stored traces: what a stored copy of a trace's tables records, and what a Trace made again
from such tables (a cache entry, :mod:`.cache`, or a Parquet directory, :mod:`.parquet`) is and
does (``Trace.from_stored`` puts the two together).

A stored trace has the tables and figures of the original parse. The queries (``overlaps``,
``window``, ``occupancy``, ``replay``, ``op_stats``) need the native core, which is rebuilt on
first use by re-parsing the source file, but only if that file is still there with the size and
mtime recorded when the tables were written; otherwise they raise
:class:`SourceUnavailableError`.

Stored files are verified and written whole (:func:`read_verified`, :func:`file_crc32c`,
:func:`new_temp_dir`, :func:`remove_stale_temps`, :func:`replace_dir`): every file carries the
CRC-32C of its bytes, checked before a byte of it is decoded; files are read into memory, not
mapped, so a file truncated or rewritten under a reader cannot fault it; a store is written into
a temporary directory renamed into place as a whole, and the temporaries of killed writers are
removed by the next write.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
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
from .parsing import parse_core
from .traceinfo import SourceFile, TraceInfo

if TYPE_CHECKING:
    from .trace import Trace

#: Version of the metadata layout (``tracecore.json`` of a Parquet directory). 2: per-file sizes
#: and CRC-32Cs ("files") and a checksum of the metadata itself.
LAYOUT_VERSION = 2


#: A temporary directory of a store unchanged for this long is stale whatever pid its name
#: gives (pids are reused; another host's cannot be checked). A writer adds a file to it per
#: table, so a live writer's directory is kept unless one table takes longer than this to write.
STALE_TEMP_SECONDS = 60.0


class ChecksumMismatchError(ValueError):
    """A stored file does not have the size or the CRC-32C recorded when it was written."""


class SourceUnavailableError(RuntimeError):
    """A query needs the native core of a trace read back from a cache or a Parquet directory,
    and its source file is gone or has changed since the tables were written."""


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


def reparse(meta: Mapping[str, Any], source: str | None = None) -> _core.Trace:
    """The native core of a stored trace, re-parsed from its source file.

    The source is re-parsed only if it still has the size and mtime recorded when the tables
    were written, so a query never mixes the stored tables with a changed file.

    Raises:
        SourceUnavailableError: the source is gone or has changed.
    """
    path = meta.get("source") or source
    what = "this trace was read back from stored tables"
    if not path:
        raise SourceUnavailableError(f"{what} without a source path; queries need the source")
    try:
        st = os.stat(path)
    except OSError:
        raise SourceUnavailableError(
            f"{what}; queries re-parse the source {path!r}, which is no longer there"
        ) from None
    if st.st_size != meta.get("size") or st.st_mtime_ns != meta.get("mtime_ns"):
        raise SourceUnavailableError(
            f"{what}; queries re-parse the source {path!r}, which has changed since "
            f"(size/mtime differ): open the file again"
        )
    core, _ = parse_core(path, format=meta.get("format", "auto"), threads=0)
    expected = meta.get("counts", {}).get("events")
    if expected is not None and core.num_events != expected:
        raise SourceUnavailableError(
            f"{what}; re-parsing {path!r} gave {core.num_events} events, not {expected}"
        )
    return core


def compact_dictionaries(table: pa.Table) -> pa.Table:
    """``table`` with every dictionary column's dictionary cut down to the values it uses.

    The native core exports one shared string pool as the dictionary of every string column;
    stored as is, each column would carry the whole pool."""
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


# --- whole-directory writes ----------------------------------------------------------------------


def new_temp_dir(parent: Path, prefix: str) -> Path:
    """A new directory ``parent/<prefix><pid>-<random>`` (the pid tells later writers whether
    its writer is still alive, see :func:`remove_stale_temps`)."""
    while True:
        path = parent / f"{prefix}{os.getpid()}-{secrets.token_hex(6)}"
        try:
            path.mkdir(mode=0o755)
        except FileExistsError:
            continue
        return path


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: alive, someone else's
        return True
    return True


def remove_stale_temps(parent: Path, prefixes: Iterable[str]) -> list[Path]:
    """Removes the temporary directories ``<prefix><pid>-<random>`` in ``parent`` left by
    killed writers; returns them. A directory is stale when its writer pid is dead, or when it
    has not changed for :data:`STALE_TEMP_SECONDS`; this process's own are kept, and so are
    those of live writers that are still adding files, so concurrent writers are safe."""
    removed: list[Path] = []
    prefixes = tuple(prefixes)
    try:
        children = list(os.scandir(parent))
    except OSError:
        return removed
    now = time.time()
    for child in children:
        prefix = next((p for p in prefixes if child.name.startswith(p)), None)
        if prefix is None:
            continue
        pid_text = child.name[len(prefix) :].split("-", 1)[0]
        pid = int(pid_text) if pid_text.isdigit() else None
        if pid == os.getpid():
            continue
        try:
            age = now - child.stat(follow_symlinks=False).st_mtime
        except OSError:
            continue
        if (pid is not None and not _pid_alive(pid)) or age > STALE_TEMP_SECONDS:
            if child.is_dir(follow_symlinks=False):
                shutil.rmtree(child.path, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    os.unlink(child.path)
            removed.append(Path(child.path))
    return removed


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Swaps the directories ``a`` and ``b`` in one step (Linux renameat2 RENAME_EXCHANGE);
    False where that is not available (other systems, some file systems)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    c_int, c_path = ctypes.c_int, ctypes.c_char_p
    renameat2.argtypes = [c_int, c_path, c_int, c_path, ctypes.c_uint]
    renameat2.restype = ctypes.c_int
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), os.fsdecode(b))


def replace_dir(new: Path, target: Path, aside_prefix: str) -> None:
    """Puts the complete directory ``new`` at ``target`` as a whole. An existing ``target`` is
    swapped with ``new`` in one step where the system can (a reader sees the old directory or
    the new one, never a mix, never none), else renamed aside to
    ``<aside_prefix><pid>-<random>`` first (a reader may then find no directory for the moment
    between the two renames); the old directory is then removed."""
    if not os.path.lexists(target):
        try:
            os.rename(new, target)
            return
        except OSError as e:
            # Created meanwhile by another writer: replace it like an existing one.
            if e.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                raise
    if _exchange(new, target):
        shutil.rmtree(new, ignore_errors=True)  # now the old directory
        return
    aside = target.parent / f"{aside_prefix}{os.getpid()}-{secrets.token_hex(6)}"
    os.rename(target, aside)
    try:
        os.rename(new, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.rename(aside, target)
        raise
    shutil.rmtree(aside, ignore_errors=True)
