"""The Trace object: parsed tables exposed as pyarrow Tables, without copying."""

from __future__ import annotations

import builtins
import gzip
import os
import zlib
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from . import _core
from ._arrow import array, table_from_capsules
from ._core import TraceFormatError
from .checks import check_flag, check_ns, check_threads
from .replay import MemoryReplay, replay

_FORMATS = ("auto", "text", "binary")
_GZIP_MAGIC = b"\x1f\x8b"
# How much of a file's start is read to explain a parse error (and what format detection reads).
_HEAD_BYTES = 65536
# Files that are certainly not trace dumps, by their first bytes.
_NOT_TRACES = (
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"%PDF-", "a PDF document"),
    (b"PK\x03\x04", "a ZIP archive"),
    (b"\x7fELF", "an ELF executable"),
    (b"BZh", "bzip2-compressed (decompress it first)"),
    (b"\xfd7zXZ\x00", "xz-compressed (decompress it first)"),
    (b"\x28\xb5\x2f\xfd", "zstd-compressed (decompress it first)"),
    (b"PAR1", "a Parquet file (open the directory Trace.to_parquet wrote)"),
)
_TEXT_WHITESPACE = b" \t\r\n\f\v"


def sample_path() -> Path:
    """Path of the sample trace bundled with tracecore (one LSTM training step, StepStats text)."""
    return Path(str(resources.files("tracecore") / "data" / "sample_lstm_step.pbtxt.gz"))


def _looks_like_text(head: bytes) -> bool:
    """No control bytes other than whitespace, nor DEL (0x7f): a file a person would call text.
    Format detection (``DetectFormat`` in C++) also lets DEL through, and asks more: that the
    first non-whitespace byte can start protobuf text."""
    return not any(c < 0x20 and c not in _TEXT_WHITESPACE for c in head) and b"\x7f" not in head


def _explained(error: TraceFormatError, head: bytes, format: str) -> TraceFormatError:
    """``error``, or a clearer one when the file is plainly no trace or was read in the wrong
    format: a known file type by its first bytes; a text file (no control bytes) that format
    detection read as binary because it does not start like protobuf text (the text parser's
    error says what is wrong at line 1); a text-looking file read with ``format="binary"``."""
    for magic, what in _NOT_TRACES:
        if head.startswith(magic):
            explained = TraceFormatError(f"not a TensorFlow trace dump: the file is {what}")
            explained.offset = 0
            return explained
    if getattr(error, "offset", None) is not None and head.strip(_TEXT_WHITESPACE) and _looks_like_text(head):
        if format == "binary":
            return _with_message(
                error, f"{error} (the file looks like text, not a binary dump: use format 'text' or 'auto')"
            )
        try:
            _core.open_bytes(head, "text", 1)
        except TraceFormatError as text_error:
            return _with_message(
                text_error, f"{text_error} (the file is text, but not protobuf text format)"
            )
    return error


def _with_message(error: TraceFormatError, message: str) -> TraceFormatError:
    """A copy of ``error`` (same position attributes) with ``message``."""
    copy = TraceFormatError(message)
    copy.line = getattr(error, "line", None)
    copy.column = getattr(error, "column", None)
    copy.offset = getattr(error, "offset", None)
    return copy


def _reraise_with_path(error: TraceFormatError, path: str) -> TraceFormatError:
    located = _with_message(error, f"{path}: {error}")
    located.path = path
    return located


def _read_gzip(path: str) -> bytes:
    try:
        with gzip.open(path, "rb") as f:
            return f.read()
    except (OSError, EOFError, zlib.error) as e:
        raise TraceFormatError(f"corrupt or truncated gzip data ({e})") from None


def open(
    path: str | os.PathLike[str],
    *,
    format: str = "auto",
    threads: int = 0,
    cache: bool = False,
    progress: bool = False,
) -> Trace:
    """Parses a TensorFlow trace dump into columnar tables.

    Args:
        path: a StepStats or RunMetadata dump, protobuf text (``.pbtxt``) or binary (``.pb``);
            gzip-compressed files are decompressed transparently.
        format: ``"auto"`` (detect), ``"text"`` or ``"binary"``. ``"auto"`` takes a file for
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
        ValueError: ``format`` is not one of the three, or ``threads`` is negative.
    """
    if format not in _FORMATS:
        raise ValueError(f"format must be one of {_FORMATS}, not {format!r}")
    threads = check_threads(threads)
    cache = check_flag(cache, "cache")
    progress = check_flag(progress, "progress")
    path_str = os.fspath(path)
    if os.path.isdir(path_str):
        from .export import open_parquet_dir

        return open_parquet_dir(path_str)
    if cache:
        from .cache import open_cached

        return open_cached(path_str, format=format, threads=threads, progress=progress)
    return _open_parsed(path_str, format=format, threads=threads, progress=progress)


def _open_parsed(path_str: str, *, format: str, threads: int, progress: bool) -> Trace:
    """Parses ``path_str`` (no cache). With ``progress``, opens that take over a second show
    a line on stderr with the size, the elapsed time and the throughput (see :mod:`.progress`)."""
    from .progress import Progress

    with builtins.open(path_str, "rb") as f:
        head = f.read(_HEAD_BYTES)
        st = os.fstat(f.fileno())
    label = f"parsing {os.path.basename(path_str)}"
    try:
        with Progress(label, st.st_size, enabled=progress):
            if head[:2] == _GZIP_MAGIC:
                data = _read_gzip(path_str)
                head = data[:_HEAD_BYTES]
                try:
                    core = _core.open_bytes(data, format, threads)
                finally:
                    # An error's traceback keeps this frame (open_many keeps the errors): not
                    # the whole decompressed file with it.
                    del data
            else:
                core = _core.open_file(path_str, format, threads)
    except TraceFormatError as e:
        raise _reraise_with_path(_explained(e, head, format), path_str) from None
    # The identity of the parsed file (taken before parsing): exports record it so that a
    # reopened copy re-parses the source for queries only if it is still the same file.
    source = {"source": os.path.abspath(path_str), "size": st.st_size, "mtime_ns": st.st_mtime_ns}
    return Trace(core, path_str, meta=source)


class Trace:
    """A parsed trace. Every table is a :class:`pyarrow.Table` whose buffers are owned by the
    native core and stay valid for as long as any table (or slice of one) is alive, even after
    the Trace itself is gone."""

    def __init__(self, core: _core.Trace | None, source: str | None = None,
                 tables: dict[str, pa.Table] | None = None, meta: dict[str, Any] | None = None) -> None:
        # A Trace is backed by the native core (parsed) or by tables read back from a cache or
        # Parquet directory (core is None; queries then need the core and re-import is lazy).
        self._core = core
        self._source = source
        self._tables: dict[str, pa.Table] = dict(tables or {})
        self._meta = dict(meta or {})

    # -- tables ----------------------------------------------------------------------------
    def table(self, name: str) -> pa.Table:
        """The table called ``name`` (one of :attr:`table_names`)."""
        cached = self._tables.get(name)
        if cached is None:
            if name not in _core.TABLE_NAMES:
                raise KeyError(f"no table {name!r}; tables: {list(_core.TABLE_NAMES)}")
            cached = table_from_capsules(self._ensure_core().export_table(name))
            self._tables[name] = cached
        return cached

    def _ensure_core(self) -> _core.Trace:
        """The native core, re-parsed from the source file when this Trace was read back from
        a cache or a Parquet directory (tables only; the queries need the core).

        The source is re-parsed only if it still has the size and mtime recorded when the
        tables were written, so a query never mixes the stored tables with a changed file.

        Raises:
            tracecore.export.SourceUnavailableError: the source is gone or has changed.
        """
        if self._core is not None:
            return self._core
        from .export import SourceUnavailableError

        meta = self._meta
        source = meta.get("source") or self._source
        what = "this trace was read back from stored tables"
        if not source:
            raise SourceUnavailableError(f"{what} without a source path; queries need the source")
        try:
            st = os.stat(source)
        except OSError:
            raise SourceUnavailableError(
                f"{what}; queries re-parse the source {source!r}, which is no longer there"
            ) from None
        if st.st_size != meta.get("size") or st.st_mtime_ns != meta.get("mtime_ns"):
            raise SourceUnavailableError(
                f"{what}; queries re-parse the source {source!r}, which has changed since "
                f"(size/mtime differ): open the file again"
            )
        parsed = _open_parsed(
            source, format=meta.get("format", "auto"), threads=0, progress=False
        )
        expected = meta.get("counts", {}).get("events")
        if expected is not None and len(parsed) != expected:
            raise SourceUnavailableError(
                f"{what}; re-parsing {source!r} gave {len(parsed)} events, not {expected}"
            )
        self._core = parsed._core
        return self._core

    @property
    def table_names(self) -> list[str]:
        return list(_core.TABLE_NAMES)

    @property
    def devices(self) -> pa.Table:
        """One row per DeviceStepStats block: device_index, device, kind, n_events."""
        return self.table("devices")

    @property
    def events(self) -> pa.Table:
        """One row per NodeExecStats, in file order, times in absolute nanoseconds, plus the
        name-derived ``forward_scope`` and ``phase`` columns."""
        cached = self._tables.get("events+names")
        if cached is None:
            from .names import add_name_columns

            cached = add_name_columns(self.table("events"))
            self._tables["events+names"] = cached
        return cached

    @property
    def tensors(self) -> pa.Table:
        """One row per NodeOutput: dtype, shape, bytes and allocation of each output tensor."""
        return self.table("tensors")

    @property
    def allocations(self) -> pa.Table:
        """One row per AllocatorMemoryUsed: per-op allocator usage."""
        return self.table("allocations")

    @property
    def alloc_records(self) -> pa.Table:
        """One row per AllocationRecord: time_ns and signed bytes per allocator."""
        return self.table("alloc_records")

    @property
    def cost_graph(self) -> pa.Table:
        """One row per CostGraphDef node (empty unless the dump is a RunMetadata with one)."""
        return self.table("cost_graph")

    @property
    def graph_nodes(self) -> pa.Table:
        """One row per NodeDef of the RunMetadata's partition and function graphs."""
        return self.table("graph_nodes")

    @property
    def thread_names(self) -> pa.Table:
        """DeviceStepStats.thread_names: device_index, thread_id, name."""
        return self.table("thread_names")

    @property
    def persistent_tensors(self) -> pa.Table:
        """MemoryStats.persistent_tensor_alloc_ids: event_id, allocation_id."""
        return self.table("persistent_tensors")

    # -- exports, names (implemented in their own modules) ------------------------------------
    def to_parquet(self, directory: str | os.PathLike[str], compression: Any = "zstd") -> Path:
        """Writes one Parquet file per table plus ``tracecore.json``; see :mod:`tracecore.export`."""
        from .export import to_parquet

        return to_parquet(self, directory, compression=compression)

    def to_chrome_trace(self, path: str | os.PathLike[str], *, show_memory: bool = True) -> Path:
        """Writes a Chrome trace-event JSON (``.gz`` when the name ends so) for Perfetto."""
        from .export import to_chrome_trace

        return to_chrome_trace(self, path, show_memory=show_memory)

    def sql(self, query: str) -> pa.Table:
        """Runs SQL over the tables (registered as views) with DuckDB (``tracecore[duckdb]``)."""
        from .export import sql

        return sql(self, query)

    def scopes(self, depth: int = 1, *, by: str = "events") -> pa.Table:
        """Events grouped by the first ``depth`` components of their node name."""
        from .names import scopes

        return scopes(self, depth, by=by)

    def towers(self) -> pa.Table:
        """One row per ``tower_N`` / ``replica_N`` prefix: events, busy time, bytes."""
        from .names import towers

        return towers(self)

    def shape_listing(self) -> str:
        """Per-node shape listing in the format of TensorFlow's shape dumps."""
        from .names import shape_listing

        return shape_listing(self)

    # -- queries ---------------------------------------------------------------------------
    def _event_mask(self, selection: Any, what: str) -> np.ndarray | None:
        """A uint8 mask over events from None, a boolean mask or an array of event ids."""
        if selection is None:
            return None
        if isinstance(selection, (pa.Array, pa.ChunkedArray)):
            selection = selection.to_numpy(zero_copy_only=False)
        arr = np.asarray(selection)
        n = len(self)
        if arr.dtype == np.bool_:
            if arr.shape != (n,):
                raise ValueError(f"{what}: a boolean mask needs one entry per event ({n})")
            return arr.astype(np.uint8)
        if arr.size and not np.issubdtype(arr.dtype, np.integer):
            raise TypeError(f"{what}: expected event ids (integers) or a boolean mask")
        ids = arr.astype(np.int64, copy=False).ravel()
        if ids.size and (ids.min() < 0 or ids.max() >= n):
            raise IndexError(f"{what}: event ids must be in [0, {n})")
        mask = np.zeros(n, dtype=np.uint8)
        mask[ids] = 1
        return mask

    def overlaps(self, left: Any = None, right: Any = None, *, same_device: bool = True) -> pa.Table:
        """Pairs of events whose ``[start_ns, end_ns)`` intervals overlap.

        With no arguments: every unordered overlapping pair once (``left < right``). With
        ``left`` and/or ``right`` (event ids, a single id, or boolean masks; a missing side means
        all events): every ordered pair ``(l, r)``, ``l != r``, that overlaps. ``same_device``
        keeps only pairs in the same device block. Returns ``left, right, overlap_ns`` sorted by
        (left, right).

        Example: GPU kernels overlapping a memcpy::

            kernels = t.events["op"] != "MEMCPYHtoD"
            t.overlaps(kernels, ~kernels, same_device=False)
        """
        l_mask = self._event_mask(left, "left")
        r_mask = self._event_mask(right, "right")
        if l_mask is not None and r_mask is None:
            r_mask = np.ones(len(self), dtype=np.uint8)
        if r_mask is not None and l_mask is None:
            l_mask = np.ones(len(self), dtype=np.uint8)
        same_device = check_flag(same_device, "same_device")
        return table_from_capsules(_core.overlaps(self._ensure_core(), l_mask, r_mask, same_device))

    def window(self, start_ns: int, end_ns: int) -> pa.Array:
        """Ids (ascending) of the events active in ``[start_ns, end_ns)``: those with
        ``start_ns < end`` and ``start < end_ns``. Uses an interval index built once per trace.

        Raises:
            TypeError: a bound that is not an int (a float would be truncated).
            ValueError: a bound outside int64.
        """
        start_ns = check_ns(start_ns, "start_ns")
        end_ns = check_ns(end_ns, "end_ns")
        return array(_core.window(self._ensure_core(), start_ns, end_ns), pa.int64())

    def occupancy(self, *, by: str = "device", bin_ns: int | None = None) -> pa.Table:
        """How busy each device block is: ``busy_ns`` (union of its intervals), ``span_ns``,
        ``utilization``, ``max_concurrency`` and ``idle_gaps``; with ``bin_ns``, the busy fraction of
        every time bin (a utilization timeline)."""
        if by != "device":
            raise ValueError(f"occupancy is computed per device block; by must be 'device', not {by!r}")
        if bin_ns is not None:
            bin_ns = check_ns(bin_ns, "bin_ns")
            if bin_ns <= 0:
                raise ValueError(f"bin_ns must be a positive number of nanoseconds, not {bin_ns!r}")
        return table_from_capsules(_core.occupancy(self._ensure_core(), bin_ns))

    def replay(
        self, *, source: str = "records", allocator: str | None = None, baseline: str | None = None
    ) -> MemoryReplay:
        """Replays memory per allocator. ``source="records"`` replays the allocation records;
        ``source="tensors"`` reproduces TensorFlow timeline.py's tensor-lifetime model exactly.
        ``baseline="snapshot"`` (records only) aligns the level with the allocator's first
        ``allocator_bytes_in_use`` snapshot. ``allocator``: replay that allocator only (a
        ``KeyError`` names the allocators when the trace has no such one)."""
        return replay(self, source, allocator, baseline)

    def op_stats(self, by: str = "op") -> pa.Table:
        """Time per op type (``by="op"``), node (``"node_name"``) or device block (``"device"``):
        ``n_events, total_ns, mean_ns, max_ns, busy_ns, share, executor_ns, stream_ns``."""
        return table_from_capsules(_core.op_stats(self._ensure_core(), by))

    # -- metadata --------------------------------------------------------------------------
    @property
    def kind(self) -> str:
        """"StepStats" or "RunMetadata"."""
        return self._core.kind if self._core is not None else self._meta["kind"]

    @property
    def format(self) -> str:
        """"text" or "binary"."""
        return self._core.format if self._core is not None else self._meta["format"]

    @property
    def source(self) -> str | None:
        return self._source

    @property
    def stats(self) -> dict[str, Any]:
        """Input size, parse time, row counts and the number of unknown fields skipped.

        For a trace read back from a cache or Parquet directory these are the figures of the
        original parse, plus ``loaded_from`` ("cache" or "parquet") and ``load_seconds``."""
        if self._core is not None and "loaded_from" not in self._meta:
            return dict(self._core.stats())
        stats = dict(self._meta.get("stats", {}))
        for key in ("loaded_from", "load_seconds"):
            if key in self._meta:
                stats[key] = self._meta[key]
        return stats

    def __len__(self) -> int:
        if self._core is not None:
            return int(self._core.num_events)
        return int(self._meta["counts"]["events"])

    def __repr__(self) -> str:
        s = self.stats
        mb = s["bytes"] / 1e6
        origin = f", from {s['loaded_from']}" if "loaded_from" in s else ""
        source = os.fsdecode(self._source) if self._source is not None else None
        return (
            f"<tracecore.Trace {self.kind} ({self.format}, {mb:.2f} MB{origin}) from "
            f"{source!r}: {s['events']} events on {s['devices']} device blocks, "
            f"{s['tensors']} tensors, {s['alloc_records']} allocation records>"
        )
