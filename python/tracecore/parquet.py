"""The Parquet directory of a trace: written by ``Trace.to_parquet``, read back by
``tracecore.open(directory)``.

Layout::

    dir/events.parquet ... one file per table (see ``Trace.table_names``)
    dir/tracecore.json     source path, size, mtime, kind, format, versions, row counts, stats,
                           the size and CRC-32C of each Parquet file ("files"), and a sha256
                           of all of that ("checksum")

The raw tables are written (``Trace.table(name)``, not the ``events`` property: the name
columns are derived again when the directory is reopened). Dictionary-encoded strings stay
dictionary-encoded, with their dictionaries reduced to the values the column uses.

``tracecore.open(dir)`` reads the directory back as a stored trace (:mod:`.stored`): its tables
come from the files, and its queries re-parse the source file while it is unchanged.

Verified and whole: reading back checks ``tracecore.json`` against its own checksum and each
file's size and CRC-32C over all its bytes before decoding it (one pass at memory speed, small
next to Parquet decoding); a mismatch raises :class:`TraceFormatError` naming the file (there is
no source to fall back on). The files are read into memory, not mapped. An export is written
into a temporary sibling directory ``.<name>.tmp-<pid>-<random>`` that replaces ``directory``
as a whole (swapped in one step on Linux), so a reader, or a write killed at any point, leaves
the old export or the new one, never a mix; the temporaries of killed writers are removed by
the next export to the same directory.
"""

from __future__ import annotations

import builtins
import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from . import _core
from ._core import TraceFormatError
from .outputs import naming
from .stored import (
    LAYOUT_VERSION,
    ChecksumMismatchError,
    compact_dictionaries,
    file_crc32c,
    new_temp_dir,
    read_verified,
    remove_stale_temps,
    replace_dir,
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
    trace: Trace, directory: str | os.PathLike[str], *, compression: Any = "zstd"
) -> Path:
    """Writes one ``<table>.parquet`` per table and ``tracecore.json`` into a new directory that
    then replaces ``directory`` as a whole (an existing export there is replaced; a directory
    holding anything else is refused). Returns the directory."""
    import pyarrow.parquet as pq  # here, not at the top: a cache hit should not pay for it

    check_parquet_compression(compression)
    out = Path(directory)
    if out.is_symlink():
        out = Path(os.path.realpath(out))  # the directory it names is replaced, not the link
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(
            f"{out}: exists and is not a directory (Parquet export writes a directory)"
        )
    if out.is_dir():
        _check_replaceable(out)
    parent = out.absolute().parent
    parent.mkdir(parents=True, exist_ok=True)
    temp_prefix, aside_prefix = _temp_prefixes(out)
    remove_stale_temps(parent, [temp_prefix, aside_prefix])
    with naming(out):
        tmp = new_temp_dir(parent, temp_prefix)
    try:
        meta = trace_meta(trace)
        meta["tables"] = {}
        meta["files"] = {}
        for name in trace.table_names:
            file_name = f"{name}.parquet"
            table = compact_dictionaries(trace.table(name))
            with naming(out / file_name):
                with builtins.open(tmp / file_name, "wb") as f:
                    # Through a Python file: Arrow's own file system takes only UTF-8 path names.
                    pq.write_table(table, f, compression=compression)
                size, crc = file_crc32c(tmp / file_name)
            meta["tables"][name] = file_name
            meta["files"][file_name] = {"bytes": size, "crc32c": crc}
        meta["checksum"] = _meta_checksum(meta)
        with naming(out / META_FILE), builtins.open(tmp / META_FILE, "w", encoding="utf-8") as f:
            json.dump(meta, f, indent=1, sort_keys=True)
            f.write("\n")
        with naming(out):
            replace_dir(tmp, out, aside_prefix)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def _temp_prefixes(out: Path) -> tuple[str, str]:
    """The name prefixes of the temporary and set-aside siblings of export directory ``out``."""
    name = out.absolute().name
    return f".{name}.tmp-", f".{name}.old-"


def _check_replaceable(out: Path) -> None:
    """Raises FileExistsError unless ``out`` is empty or holds only what an export writes (it is
    replaced as a whole: nothing else in it may be lost)."""
    ours = {META_FILE} | {f"{name}.parquet" for name in _core.TABLE_NAMES}
    # Besides: temporary files of a killed export of the layout before whole-directory writes.
    others = sorted(
        n for n in os.listdir(out) if n not in ours and not (n[:1] == "." and n.endswith(".tmp"))
    )
    if others:
        shown = ", ".join(repr(n) for n in others[:3]) + (", ..." if len(others) > 3 else "")
        raise FileExistsError(
            f"{out}: holds files that are not part of a tracecore Parquet export ({shown}); an "
            f"export replaces its directory as a whole: choose a new or empty directory"
        )


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
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise TraceFormatError(
            f"{path}: not a tracecore Parquet directory (no {META_FILE}; write one with "
            f"Trace.to_parquet)"
        ) from None
    except (ValueError, UnicodeDecodeError) as e:
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
    # Every file is read and checked before any is decoded.
    data = {}
    for name in _core.TABLE_NAMES:
        file_path = path / meta.get("tables", {}).get(name, f"{name}.parquet")
        try:
            if files is None:
                data[name] = _read(file_path)
            else:
                info = files.get(file_path.name)
                if not isinstance(info, dict):
                    raise TraceFormatError(f"{meta_path}: no checksum for {file_path.name}")
                data[name] = read_verified(file_path, info["bytes"], info["crc32c"])
        except FileNotFoundError:
            raise TraceFormatError(f"{path}: missing {file_path.name}") from None
        except ChecksumMismatchError as e:
            raise TraceFormatError(f"{e} (export the trace again)") from None
        except (OSError, KeyError, TypeError) as e:
            raise TraceFormatError(f"{file_path}: unreadable ({e})") from None
    tables = {}
    counts = meta.get("counts", {})
    for name in _core.TABLE_NAMES:
        file_path = path / meta.get("tables", {}).get(name, f"{name}.parquet")
        try:
            # The Arrow schema stored in the file brings the dictionary types back.
            table = pq.read_table(data.pop(name))
        except (pa.ArrowException, OSError) as e:
            raise TraceFormatError(f"{file_path}: unreadable ({e})") from None
        if name in counts and table.num_rows != counts[name]:
            raise TraceFormatError(
                f"{file_path}: {table.num_rows} rows where {META_FILE} says {counts[name]}"
            )
        tables[name] = table
    return tables, meta


def _read(path: Path) -> pa.Buffer:
    """The bytes of the file at ``path`` (a layout-1 export: no checksum to check them by)."""
    with builtins.open(path, "rb") as f:
        return pa.py_buffer(f.read())
