"""The Parquet directory of a trace: written by ``Trace.to_parquet``, read back by
``tracecore.open(directory)``.

Layout::

    dir/events.parquet ... one file per table (see ``Trace.table_names``)
    dir/tracecore.json     source path, size, mtime, kind, format, versions, row counts, stats

The raw tables are written (``Trace.table(name)``, not the ``events`` property: the name
columns are derived again when the directory is reopened). Dictionary-encoded strings stay
dictionary-encoded, with their dictionaries reduced to the values the column uses.

``tracecore.open(dir)`` reads the directory back as a stored trace (:mod:`.stored`): its tables
come from the files, and its queries re-parse the source file while it is unchanged.
"""

from __future__ import annotations

import builtins
import json
import mmap
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from . import _core
from ._core import TraceFormatError
from .outputs import naming
from .stored import LAYOUT_VERSION, compact_dictionaries, trace_meta

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
    """Writes one ``<table>.parquet`` per table and ``tracecore.json`` into ``directory``
    (created if needed; files of the same names are replaced). Returns the directory."""
    import pyarrow.parquet as pq  # here, not at the top: a cache hit should not pay for it

    check_parquet_compression(compression)
    out = Path(directory)
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(
            f"{out}: exists and is not a directory (Parquet export writes a directory)"
        )
    out.mkdir(parents=True, exist_ok=True)
    meta = trace_meta(trace)
    meta["tables"] = {}
    for name in trace.table_names:
        file_name = f"{name}.parquet"
        table = compact_dictionaries(trace.table(name))
        tmp = out / f".{file_name}.tmp"
        with naming(out / file_name), builtins.open(tmp, "wb") as f:
            # Through a Python file: Arrow's own file system takes only UTF-8 path names.
            pq.write_table(table, f, compression=compression)
            os.replace(tmp, out / file_name)
        meta["tables"][name] = file_name
    _write_json_atomically(out / META_FILE, meta)
    return out


def read_parquet_dir(
    directory: str | os.PathLike[str],
) -> tuple[dict[str, pa.Table], dict[str, Any]]:
    """The tables and the metadata (``tracecore.json``) of a directory written by
    :func:`to_parquet`, checked (``tracecore.open(directory)`` makes the Trace).

    Raises:
        TraceFormatError: not such a directory, or a file is missing, unreadable or has other
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
    if not isinstance(meta, dict) or meta.get("layout_version") != LAYOUT_VERSION:
        raise TraceFormatError(
            f"{meta_path}: unsupported layout (expected version {LAYOUT_VERSION})"
        )
    tables = {}
    counts = meta.get("counts", {})
    for name in _core.TABLE_NAMES:
        file_path = path / meta.get("tables", {}).get(name, f"{name}.parquet")
        try:
            # The Arrow schema stored in the file brings the dictionary types back.
            table = pq.read_table(_mapped(file_path))
        except FileNotFoundError:
            raise TraceFormatError(f"{path}: missing {file_path.name}") from None
        except (pa.ArrowException, OSError) as e:
            raise TraceFormatError(f"{file_path}: unreadable ({e})") from None
        if name in counts and table.num_rows != counts[name]:
            raise TraceFormatError(
                f"{file_path}: {table.num_rows} rows where {META_FILE} says {counts[name]}"
            )
        tables[name] = table
    return tables, meta


def _mapped(path: Path) -> pa.Buffer:
    """The file at ``path`` memory-mapped as an Arrow buffer (Python's mmap: Arrow's own file
    system takes only UTF-8 path names). The tables read from it keep the mapping alive."""
    with builtins.open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            return pa.py_buffer(b"")
        return pa.py_buffer(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ))


def _write_json_atomically(path: Path, obj: Any) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(obj, f, indent=1, sort_keys=True)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        if tmp.exists():
            tmp.unlink()
        raise
