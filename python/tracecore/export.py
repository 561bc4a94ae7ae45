"""Exports: Parquet directories, Chrome trace-event JSON, SQL through DuckDB.

Parquet layout (``Trace.to_parquet(dir)``)::

    dir/events.parquet ... one file per table (see ``Trace.table_names``)
    dir/tracecore.json     source path, size, mtime, kind, format, versions, row counts, stats

The raw tables are written (``Trace.table(name)``, not the ``events`` property: the name
columns are derived again when the directory is reopened). Dictionary-encoded strings stay
dictionary-encoded, with their dictionaries reduced to the values the column uses.

``tracecore.open(dir)`` reads such a directory back. The tables come from the files; the
queries (``overlaps``, ``window``, ``occupancy``, ``replay``, ``op_stats``) need the native core,
which is rebuilt on first use by re-parsing the source file, but only if that file is still there
with the size and mtime recorded in ``tracecore.json``; otherwise they raise
:class:`SourceUnavailableError`.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import re
import time
from collections.abc import Iterator
from json.encoder import encode_basestring_ascii
from pathlib import Path
from typing import IO, Any

import numpy as np
import pyarrow as pa

from . import _core, _version
from ._core import TraceFormatError
from .trace import Trace

META_FILE = "tracecore.json"
LAYOUT_VERSION = 1


class SourceUnavailableError(RuntimeError):
    """A query needs the native core of a trace read back from a cache or a Parquet directory,
    and its source file is gone or has changed since the tables were written."""


class StoredTrace(Trace):
    """A :class:`Trace` whose tables were read back from a cache or a Parquet directory.

    Tables and metadata come from the stored files. The queries rebuild the native core on
    first use (:meth:`Trace._ensure_core`: re-parses the unchanged source file, or raises
    :class:`SourceUnavailableError`)."""

    # The queries call Trace._ensure_core() themselves, after checking their arguments.


# --------------------------------------------------------------------------------------------
# Metadata shared by the Parquet layout and the cache


def trace_meta(trace: Trace) -> dict[str, Any]:
    """What a stored copy of ``trace`` records about it: source identity, kind, format,
    row counts and the parse statistics."""
    meta = trace._meta
    stats = {k: v for k, v in trace.stats.items() if k not in ("loaded_from", "load_seconds")}
    counts = {name: trace.table(name).num_rows for name in trace.table_names}
    return {
        "layout_version": LAYOUT_VERSION,
        "tracecore_version": _version.__version__,
        "source": meta.get("source") or (os.path.abspath(trace.source) if trace.source else None),
        "size": meta.get("size"),
        "mtime_ns": meta.get("mtime_ns"),
        "kind": trace.kind,
        "format": trace.format,
        "counts": counts,
        "stats": stats,
    }


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


# --------------------------------------------------------------------------------------------
# Parquet


# Parquet codecs (pyarrow's names, case-insensitive; "none" or None writes uncompressed).
PARQUET_CODECS = ("zstd", "snappy", "gzip", "brotli", "lz4", "lz4_raw", "none")


def check_parquet_compression(compression: object) -> None:
    """Raises ValueError (with the choices) for a codec Parquet export does not take: a name,
    None, or (as pyarrow takes it) a dict of column name to name."""
    values = compression.values() if isinstance(compression, dict) else [compression]
    for value in values:
        if value is not None and (not isinstance(value, str) or value.lower() not in PARQUET_CODECS):
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
        raise NotADirectoryError(f"{out}: exists and is not a directory (Parquet export writes a directory)")
    out.mkdir(parents=True, exist_ok=True)
    meta = trace_meta(trace)
    meta["tables"] = {}
    for name in trace.table_names:
        file_name = f"{name}.parquet"
        table = compact_dictionaries(trace.table(name))
        tmp = out / f".{file_name}.tmp"
        with _naming(out / file_name):
            pq.write_table(table, tmp, compression=compression)
            os.replace(tmp, out / file_name)
        meta["tables"][name] = file_name
    _write_json_atomically(out / META_FILE, meta)
    return out


def open_parquet_dir(directory: str | os.PathLike[str]) -> StoredTrace:
    """Reopens a directory written by :func:`to_parquet`."""
    import pyarrow.parquet as pq
    start = time.perf_counter()
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
            table = pq.read_table(file_path, memory_map=True)
        except FileNotFoundError:
            raise TraceFormatError(f"{path}: missing {file_path.name}") from None
        except (pa.ArrowException, OSError) as e:
            raise TraceFormatError(f"{file_path}: unreadable ({e})") from None
        if name in counts and table.num_rows != counts[name]:
            raise TraceFormatError(
                f"{file_path}: {table.num_rows} rows where {META_FILE} says {counts[name]}"
            )
        tables[name] = table
    meta["loaded_from"] = "parquet"
    meta["load_seconds"] = time.perf_counter() - start
    return StoredTrace(None, meta.get("source"), tables=tables, meta=meta)


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


# --------------------------------------------------------------------------------------------
# Chrome trace-event JSON

_LABEL_RE = re.compile(r"(.*) = (.*)\((.*)\)")  # timeline.py's _parse_op_label


def _us(ns: int) -> str:
    """Nanoseconds as an exact decimal number of microseconds (a float64 would lose the
    nanoseconds of an epoch timestamp; the trace viewers parse the decimal text exactly)."""
    if ns < 0:
        return "-" + _us(-ns)
    return f"{ns // 1000}.{ns % 1000:03d}"


class _Lanes:
    """TensorFlow timeline.py's ``_assign_lanes`` for one device block: each event, in file
    order, goes to the first lane whose last event ended strictly before it starts
    (``start > lane_end``, as timeline.py compares), else to a new lane."""

    __slots__ = ("ends",)

    def __init__(self) -> None:
        self.ends = [0]

    def assign(self, start: int, end: int) -> int:
        ends = self.ends
        for lane, lane_end in enumerate(ends):
            if start > lane_end:
                ends[lane] = end
                return lane
        ends.append(end)
        return len(ends) - 1


def _process_metadata(pid: int, name: str) -> Iterator[str]:
    """The metadata events naming process ``pid`` and keeping the processes in pid order."""
    head = f'{{"ph":"M","pid":{pid},"tid":0,'
    yield f'{head}"name":"process_name","args":{{"name":{encode_basestring_ascii(name)}}}}}'
    yield f'{head}"name":"process_sort_index","args":{{"sort_index":{pid}}}}}'


def chrome_trace_events(
    trace: Trace, *, show_memory: bool = True, batch_rows: int = 65536
) -> Iterator[str]:
    """The trace-event JSON objects of :func:`to_chrome_trace`, one string per event, produced
    batch by batch from the tables (never all at once)."""
    enc = encode_basestring_ascii
    devices = trace.devices
    memory_pid = (max(devices["device_index"].to_pylist()) + 1) if devices.num_rows else 0
    for row in devices.to_pylist():
        yield from _process_metadata(row["device_index"], row["device"] or "")

    lanes: dict[int, _Lanes] = {}
    names: dict[str, str] = {}

    def quoted(s: str | None) -> str:
        q = names.get(s)
        if q is None:
            q = enc(s or "")
            if len(names) < 1_000_000:
                names[s] = q
        return q

    events = trace.table("events").select(
        ["device_index", "node_name", "op", "timeline_label", "start_ns", "end_ns"]
    )
    for batch in events.to_batches(max_chunksize=batch_rows):
        cols = batch.to_pydict()
        for device_index, node_name, op, label, start, end in zip(
            cols["device_index"],
            cols["node_name"],
            cols["op"],
            cols["timeline_label"],
            cols["start_ns"],
            cols["end_ns"],
        ):
            end = max(end, start)  # corrupt clocks: zero length at the start, as the queries do
            device_lanes = lanes.get(device_index)
            if device_lanes is None:
                device_lanes = lanes[device_index] = _Lanes()
            lane = device_lanes.assign(start, end)
            args = [f'"name":{quoted(node_name)}', f'"op":{quoted(op)}']
            match = _LABEL_RE.match(label) if label else None
            if match is not None:
                inputs = match.group(3)
                if inputs:
                    for i, input_name in enumerate(inputs.split(", ")):
                        args.append(f'"input{i}":{quoted(input_name)}')
            elif label:
                args.append(f'"label":{enc(label)}')
            yield (
                f'{{"ph":"X","cat":"Op","name":{quoted(op if op is not None else node_name)},'
                f'"pid":{device_index},"tid":{lane},"ts":{_us(start)},"dur":{_us(end - start)},'
                f'"args":{{{",".join(args)}}}}}'
            )

    if show_memory:
        timeline = trace.replay(source="records").timeline
        if timeline.num_rows:
            yield from _process_metadata(memory_pid, "Allocators")
        for batch in timeline.to_batches(max_chunksize=batch_rows):
            cols = batch.to_pydict()
            for allocator, time_ns, in_use in zip(
                cols["allocator"], cols["time_ns"], cols["bytes_in_use"]
            ):
                name = quoted(allocator)
                yield (
                    f'{{"ph":"C","cat":"Memory","name":{name},"pid":{memory_pid},"tid":0,'
                    f'"ts":{_us(time_ns)},"args":{{{name}:{in_use}}}}}'
                )


@contextlib.contextmanager
def _naming(path: Path) -> Iterator[None]:
    """OSErrors raised inside name ``path`` (what the user asked for), not the temporary file
    it is written through."""
    try:
        yield
    except OSError as e:
        if e.errno is None:
            raise
        raise type(e)(e.errno, e.strerror, str(path)) from None


def checked_output_file(path: str | os.PathLike[str], what: str = "") -> Path:
    """``path`` as a file to write, checked before any work so that errors name it (not the
    temporary file it is written through). ``what``: how messages call it ("the plot ")."""
    out = Path(path)
    if out.is_dir() or not out.name or out.name in (".", ".."):
        raise IsADirectoryError(f"{path}: is a directory; give {what}a file name")
    parent = out.parent
    if not parent.exists():
        raise FileNotFoundError(f"{parent}: no such directory (for {what}{out})")
    if not parent.is_dir():
        raise NotADirectoryError(f"{parent}: not a directory (for {what}{out})")
    return out


def to_chrome_trace(
    trace: Trace, path: str | os.PathLike[str], *, show_memory: bool = True
) -> Path:
    """Writes a Chrome trace-event JSON file that Perfetto and chrome://tracing load.

    One process per device block (``pid`` = ``device_index``, named by ``process_name``
    metadata events), lanes as threads (timeline.py's greedy lane assignment), one complete event
    (``"ph": "X"``, ``ts``/``dur`` in microseconds) per node record named by its op (or node name)
    with ``name``, ``op`` and ``input<i>`` (from the label) in ``args``; with ``show_memory``, one
    counter series (``"ph": "C"``) per allocator from the record replay, in an "Allocators"
    process. Gzip-compressed when the name ends in ``.gz``. Written streaming, in batches, to a
    temporary file renamed into place at the end."""
    out = checked_output_file(path)
    tmp = out.with_name(f".{out.name}.tmp")
    try:
        raw: IO[bytes]
        with _naming(out):
            raw = tmp.open("wb")
        with raw:
            stream: IO[bytes] = (
                gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=6)
                if out.name.endswith(".gz")
                else raw
            )
            try:
                _write_json_events(stream, chrome_trace_events(trace, show_memory=show_memory))
            finally:
                if stream is not raw:
                    stream.close()
        with _naming(out):
            os.replace(tmp, out)
    except BaseException:
        if tmp.exists():
            tmp.unlink()
        raise
    return out


def _write_json_events(stream: IO[bytes], events: Iterator[str], chunk: int = 4096) -> None:
    stream.write(b'{"displayTimeUnit":"ns","otherData":{"producer":"tracecore"},"traceEvents":[\n')
    parts: list[str] = []
    first = True
    for event in events:
        parts.append(event if first else ",\n" + event)
        first = False
        if len(parts) >= chunk:
            stream.write("".join(parts).encode("ascii"))
            parts.clear()
    parts.append("\n]}\n")
    stream.write("".join(parts).encode("ascii"))


# --------------------------------------------------------------------------------------------
# SQL


def sql(trace: Trace, query: str) -> pa.Table:
    """Runs ``query`` with DuckDB over the tables, each registered as a view of its name
    (``events`` with the name columns). Returns a pyarrow Table."""
    try:
        import duckdb
    except ImportError:
        raise ImportError(
            "Trace.sql needs DuckDB: pip install 'tracecore[duckdb]' (or pip install duckdb)"
        ) from None
    con = duckdb.connect(":memory:")
    try:
        for name in trace.table_names:
            con.register(name, trace.events if name == "events" else trace.table(name))
        relation = con.sql(query)
        if relation is None:  # a statement without a result (e.g. CREATE VIEW)
            return pa.table({})
        for method in ("to_arrow_table", "fetch_arrow_table", "arrow"):
            fetch = getattr(relation, method, None)
            if fetch is not None:
                table = fetch()
                break
        else:  # pragma: no cover - every DuckDB release has one of the above
            raise RuntimeError("this DuckDB release cannot return Arrow tables")
        if isinstance(table, pa.RecordBatchReader):
            table = table.read_all()
        return table
    finally:
        con.close()
