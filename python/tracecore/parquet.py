"""The Parquet directory of a trace: written by ``Trace.to_parquet``, read back by
``tracecore.open(directory)``.

Layout::

    dir/events.<random>.parquet ... one file per table (see ``Trace.table_names``)
    dir/tracecore.json     source path, size, mtime, kind, format, versions, row counts, stats,
                           the size and CRC-32C of each Parquet file ("files"), and a sha256
                           of all of that ("checksum")

Each table is written as ``Trace.table(name)`` gives it, but ``events`` as the ``events``
property gives it, with the name columns (``forward_scope``, ``phase``), so that each file
stands alone in DuckDB or pandas. Dictionary-encoded strings stay dictionary-encoded, with their
dictionaries reduced to the values the column uses.

``tracecore.open(dir)`` reads the directory back as a stored trace (:mod:`.stored`): its tables
come from the files, and its queries run on them; the source file is never needed again.

Verified and whole: reading back checks ``tracecore.json`` against its own checksum and each
file's size and CRC-32C over all its bytes before decoding it (one pass at memory speed, small
next to Parquet decoding); a mismatch raises :class:`TraceFormatError` naming the file (there is
no source to fall back on). The files are read into memory, not mapped.

Written whole, file by file, inside ``directory`` (which keeps its inode, mode, owner, and any
other files in it): each table goes to a new file ``<table>.<random>.parquet``; then
``tracecore.json``, naming those files with their checksums, is written to a temporary file
``.tracecore.json.<random>.tmp`` renamed over the old one, the one step that replaces the
export; then the table files the old ``tracecore.json`` named are removed. A reader sees all of
the old export or all of the new one; one that read the old ``tracecore.json`` and then finds a
file gone gets a TraceFormatError saying the export was replaced while it was read. Exports
into one directory take turns (``flock`` on ``.tracecore.lock`` in it); each removes the files
of our naming that no ``tracecore.json`` names (left by a killed export), and no others.
"""

from __future__ import annotations

import builtins
import contextlib
import fcntl
import hashlib
import json
import os
import re
import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeGuard

import pyarrow as pa

from . import _core
from ._arrow import schema_from_capsule
from ._core import TraceFormatError
from .outputs import naming
from .stored import (
    LAYOUT_VERSION,
    ChecksumMismatchError,
    compact_dictionaries,
    file_crc32c,
    read_verified,
    trace_meta,
)

if TYPE_CHECKING:
    from .trace import Trace

META_FILE = "tracecore.json"

# Parquet codecs (pyarrow's names, case-insensitive; "none" or None writes uncompressed).
PARQUET_CODECS = ("zstd", "snappy", "gzip", "brotli", "lz4", "lz4_raw", "none")


def check_parquet_compression(compression: object) -> None:
    """Raises ValueError (with the choices) for a codec Parquet export does not take: a name,
    None, or (as pyarrow takes it) a dict of column name to name."""
    values = compression.values() if isinstance(compression, dict) else [compression]
    for value in values:
        if value is not None and (
            not isinstance(value, str) or value.lower() not in PARQUET_CODECS
        ):
            raise ValueError(
                f"compression must be one of {', '.join(PARQUET_CODECS)} (or None, or a dict of "
                f"column to one of them), not {value!r}"
            )


def to_parquet(
    trace: Trace,
    directory: str | os.PathLike[str],
    *,
    compression: Any = "zstd",
    overwrite: bool = False,
) -> Path:
    """Writes one ``<table>.<random>.parquet`` per table into ``directory`` (made if needed),
    then ``tracecore.json`` naming them, put in place by one rename (the commit), then removes
    the table files of the export it replaced. Other files in ``directory`` are left alone.
    A directory that holds an export (``tracecore.json``) raises ``FileExistsError`` unless
    ``overwrite`` is true. Returns ``Path(directory)``."""
    import pyarrow.parquet as pq  # here, not at the top: a cache hit should not pay for it

    check_parquet_compression(compression)
    out = Path(directory)
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(
            f"{out}: exists and is not a directory (Parquet export writes a directory)"
        )
    with naming(out):
        out.mkdir(parents=True, exist_ok=True)
        lock = _lock(out)
    try:
        if not overwrite and (out / META_FILE).exists():
            raise FileExistsError(
                f"{out} holds a tracecore export already (pass overwrite=True, or --overwrite, "
                f"to replace it)"
            )
        # Holding the lock: our files that the current tracecore.json does not name are
        # leftovers of killed exports (the only other writers of them wait for the lock). A
        # tracecore.json that does not read names nothing we can trust: nothing is removed.
        named = _named_files(out)
        if named is not None:
            _remove_leftovers(out, keep=named)
        meta = trace_meta(trace)
        meta["tables"] = {}
        meta["files"] = {}
        written: list[Path] = []
        try:
            for name in trace.table_names:
                file_name = f"{name}.{secrets.token_hex(8)}.parquet"
                whole = trace.events if name == "events" else trace.table(name)
                table = compact_dictionaries(whole)
                with naming(out / file_name):
                    written.append(out / file_name)
                    with builtins.open(out / file_name, "xb") as f:
                        # Through a Python file: Arrow's own file system takes only UTF-8 names.
                        pq.write_table(table, f, compression=compression)
                        f.flush()
                        os.fsync(f.fileno())
                    size, crc = file_crc32c(out / file_name)
                meta["tables"][name] = file_name
                meta["files"][file_name] = {"bytes": size, "crc32c": crc}
            meta["checksum"] = _meta_checksum(meta)
            with naming(out / META_FILE):
                old = _named_files(out) or set()
                _commit(out, meta)
        except BaseException:
            # Not committed (tracecore.json names none of the new files): they are removed. An
            # interruption after the commit's rename keeps them: they are the export now.
            current = _named_files(out)
            if current is not None and not current & {p.name for p in written}:
                for path in written:
                    with contextlib.suppress(OSError):
                        os.unlink(path)
            raise
        # Committed: the files of the export replaced are no longer named. Only files of our
        # naming (or the fixed names of older exports) are removed, whatever the old file said.
        legacy = {f"{name}.parquet" for name in _core.TABLE_NAMES}
        for file_name in old - set(meta["files"]):
            if _TABLE_FILE.fullmatch(file_name) or file_name in legacy:
                with contextlib.suppress(OSError):
                    os.unlink(out / file_name)
    finally:
        os.close(lock)
    return out


#: Our files in an export directory besides tracecore.json: its lock, table files, and
#: temporary copies of tracecore.json.
LOCK_NAME = ".tracecore.lock"
_TABLE_FILE = re.compile("(?:" + "|".join(_core.TABLE_NAMES) + r")\.[0-9a-f]{16}\.parquet")
_TEMP_META = re.compile(r"\.tracecore\.json\.[0-9a-f]{16}\.tmp")


def _lock(out: Path) -> int:
    """The descriptor of ``out``'s lock file, with ``flock(LOCK_EX)`` held on it: one export
    into a directory at a time."""
    # Read-only: another user's lock file serves as well (flock needs no write access).
    fd = os.open(out / LOCK_NAME, os.O_RDONLY | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _commit(out: Path, meta: dict[str, Any]) -> None:
    """Writes ``tracecore.json`` through a temporary file renamed over it: the one step that
    replaces the export (a reader sees the old one or the new one)."""
    tmp = out / f".{META_FILE}.{secrets.token_hex(8)}.tmp"
    try:
        with builtins.open(tmp, "x", encoding="utf-8") as f:
            json.dump(meta, f, indent=1, sort_keys=True)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, out / META_FILE)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):  # the rename made durable, where the system can
        fd = os.open(out, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _plain_name(value: object) -> bool:
    """Whether ``value`` is the name of a file in the directory itself (no path)."""
    return (
        isinstance(value, str)
        and value not in ("", ".", "..")
        and "/" not in value
        and "\0" not in value
        and (os.sep == "/" or os.sep not in value)
    )


def _named_files(out: Path) -> set[str] | None:
    """The Parquet files ``out``'s current tracecore.json names: none if there is no
    tracecore.json, None if there is one that does not read (unknown: nothing may be removed)."""
    try:
        meta = json.loads((out / META_FILE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return set()
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    tables = meta.get("tables") if isinstance(meta, dict) else None
    if not isinstance(tables, dict):
        return None
    return {v for v in tables.values() if _plain_name(v) and v.endswith(".parquet")}


def _remove_leftovers(out: Path, keep: set[str]) -> None:
    """Removes the table files and temporary tracecore.json copies of killed exports: files
    of our naming that ``keep`` (the current export's) does not hold."""
    with contextlib.suppress(OSError):
        for entry in os.scandir(out):
            name = entry.name
            if name in keep or not (_TABLE_FILE.fullmatch(name) or _TEMP_META.fullmatch(name)):
                continue
            if entry.is_file(follow_symlinks=False):
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)


def _meta_checksum(meta: dict[str, Any]) -> str:
    body = {k: v for k, v in meta.items() if k != "checksum"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode("utf-8")).hexdigest()


def read_parquet_dir(
    directory: str | os.PathLike[str],
) -> tuple[dict[str, pa.Table], dict[str, Any]]:
    """The tables and the metadata (``tracecore.json``) of a directory written by
    :func:`to_parquet`, checked (``tracecore.open(directory)`` makes the Trace).

    Raises:
        TraceFormatError: not such a directory, or a file is missing, unreadable, corrupt (its
            size or CRC-32C is not the one recorded: "the checksum does not match") or has other
            row counts than the metadata says.
    """
    import pyarrow.parquet as pq

    path = Path(directory)
    meta_path = path / META_FILE
    try:
        meta_bytes = meta_path.read_bytes()
        meta = json.loads(meta_bytes.decode("utf-8"))
    except FileNotFoundError:
        raise TraceFormatError(
            f"{path}: not a tracecore Parquet directory (no {META_FILE}; write one with "
            f"Trace.to_parquet)"
        ) from None
    except (ValueError, UnicodeDecodeError) as e:
        raise TraceFormatError(f"{meta_path}: unreadable ({e})") from None
    except OSError as e:
        raise TraceFormatError(f"{meta_path}: unreadable ({e})") from None
    if not isinstance(meta, dict) or meta.get("layout_version") not in (1, LAYOUT_VERSION):
        raise TraceFormatError(
            f"{meta_path}: unsupported layout (expected version {LAYOUT_VERSION})"
        )
    # Layout 1 (before checksums) is read unchecked; a checksum present is always checked, so
    # a corrupt version number cannot skip it.
    if meta.get("layout_version") == LAYOUT_VERSION or "checksum" in meta:
        if meta.get("checksum") != _meta_checksum(meta):
            raise TraceFormatError(
                f"{meta_path}: the checksum does not match: the file is corrupt (export the "
                f"trace again)"
            )
        files = meta.get("files")
        if not isinstance(files, dict):
            raise TraceFormatError(f"{meta_path}: no file checksums")
    else:
        files = None
    names = meta.get("tables", {})
    if not isinstance(names, dict):
        raise TraceFormatError(f"{meta_path}: 'tables' is not a mapping of table to file")
    file_names = {}
    added_since: list[str] = []
    for name in _core.TABLE_NAMES:
        if name in ADDED_TABLES and name not in names:
            added_since.append(name)  # an export older than the table: it has no rows there
            continue
        file_name = names.get(name, f"{name}.parquet")
        if not _plain_name(file_name):
            raise TraceFormatError(
                f"{meta_path}: the file of table {name!r} is {file_name!r}, not the name of a "
                f"file in the directory"
            )
        file_names[name] = file_name
    # Every file is read and checked before any is decoded.
    data = {}
    for name, file_name in file_names.items():
        file_path = path / file_name
        try:
            if files is None:
                data[name] = _read(file_path)
            else:
                info = files.get(file_name)
                if not isinstance(info, dict):
                    raise TraceFormatError(f"{meta_path}: no checksum for {file_name}")
                size, crc = info.get("bytes"), info.get("crc32c")
                if not (_is_int(size) and _is_int(crc)):
                    raise TraceFormatError(
                        f"{meta_path}: the size and checksum of {file_name} are not numbers"
                    )
                data[name] = read_verified(file_path, size, crc)
        except FileNotFoundError:
            raise TraceFormatError(_missing(path, meta_bytes, file_name)) from None
        except ChecksumMismatchError as e:
            raise TraceFormatError(f"{e} (export the trace again)") from None
        except OSError as e:
            raise TraceFormatError(f"{file_path}: unreadable ({e})") from None
    tables = {}
    counts = meta.get("counts", {})
    for name, file_name in file_names.items():
        file_path = path / file_name
        try:
            # The Arrow schema stored in the file brings the dictionary types back.
            table = pq.read_table(data.pop(name))
        except (pa.ArrowException, OSError) as e:
            raise TraceFormatError(f"{file_path}: unreadable ({e})") from None
        if isinstance(counts, dict) and name in counts and table.num_rows != counts[name]:
            raise TraceFormatError(
                f"{file_path}: {table.num_rows} rows where {META_FILE} says {counts[name]}"
            )
        tables[name] = _with_current_columns(table, name)
    for name in added_since:
        tables[name] = schema_from_capsule(_core.schema(name)).empty_table()
    return {name: tables[name] for name in _core.TABLE_NAMES}, meta


#: Tables added after the first layout: an export written before them has no file for them.
ADDED_TABLES = ("event_stats", "plane_stats", "aggregate_events", "counters", "links")


def _with_current_columns(table: pa.Table, name: str) -> pa.Table:
    """``table`` as read from an export, with the columns added to table ``name`` since it was
    written (alloc_records' XSpace memory columns, ...) as all-null columns in their place."""
    schema = schema_from_capsule(_core.schema(name))
    missing = [f for f in schema if f.name not in table.schema.names]
    if not missing:
        return table
    for field in missing:
        position = min(schema.get_field_index(field.name), table.num_columns)
        table = table.add_column(position, field, pa.nulls(table.num_rows, field.type))
    return table


def parquet_files(directory: str | os.PathLike[str]) -> list[Path]:
    """The Parquet files of the export in ``directory``, one per table in table order, as its
    ``tracecore.json`` names them (to read them with other tools).

    Raises:
        TraceFormatError: ``directory`` holds no readable export.
    """
    path = Path(directory)
    try:
        meta = json.loads((path / META_FILE).read_text(encoding="utf-8"))
        tables = meta["tables"]
        names = [tables[name] for name in _core.TABLE_NAMES if name in tables]
    except (OSError, ValueError, UnicodeDecodeError, KeyError, TypeError) as e:
        raise TraceFormatError(f"{path / META_FILE}: unreadable ({e})") from None
    if not all(_plain_name(n) for n in names):
        raise TraceFormatError(f"{path / META_FILE}: a table file is not a plain file name")
    return [path / n for n in names]


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _missing(path: Path, meta_bytes: bytes, file_name: str) -> str:
    """The message for a file named by tracecore.json (as first read: ``meta_bytes``) that is
    not there: the export was replaced meanwhile, or it is incomplete."""
    try:
        replaced = (path / META_FILE).read_bytes() != meta_bytes
    except OSError:
        replaced = True
    if replaced:
        return (
            f"{path}: missing {file_name}; the export was replaced while it was read (open it "
            f"again)"
        )
    return f"{path}: missing {file_name} (named by {META_FILE}; export the trace again)"


def _read(path: Path) -> pa.Buffer:
    """The bytes of the file at ``path`` (a layout-1 export: no checksum to check them by)."""
    with builtins.open(path, "rb") as f:
        return pa.py_buffer(f.read())
