"""The Trace object: a trace's tables as pyarrow Tables, its figures, and the queries over it.

A Trace is the same class whether its tables were just parsed (the native core exports them
without copying) or read back from a cache or a Parquet directory (see :mod:`.stored`). The
queries run on the native core; a stored trace builds its core from its stored tables on its
first query, so it never needs its source file.

The modules that implement the methods (exports, names) take a Trace but import this module for
annotations only, and only the layers above (opening, cache, dataset) make Traces: no import
circle runs through here.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from . import _core
from ._arrow import array, table_from_capsules
from .checks import check_bin_ns, check_budget, check_flag, check_ns
from .replay import MemoryReplay, replay
from .traceinfo import SourceFile, TraceInfo

if TYPE_CHECKING:
    from .plots import TracePlots


class TableAttributes:
    """``x.<name>`` is ``x.table(name)`` for every table the native core lists, so that a table
    an importer adds needs no property of its own (the classes keep typed properties for the
    tables they document)."""

    def table(self, name: str) -> pa.Table:
        raise NotImplementedError

    def __getattr__(self, name: str) -> pa.Table:
        # Reached only when ordinary lookup fails: the tables without a property of their own.
        if name in _core.TABLE_NAMES:
            return self.table(name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(_core.TABLE_NAMES))

    def to_pandas(self, name: str = "events") -> Any:
        """Table ``name`` as a pandas DataFrame without loss (needs pandas): integer and
        boolean columns are Arrow-backed (``int64[pyarrow]``), so nullable ones such as
        ``scheduled_ns`` keep their exact values rather than becoming float64; dictionary
        columns are Categoricals whose categories are exactly the column's values. See
        :func:`tracecore._arrow.to_pandas`."""
        from ._arrow import to_pandas

        # t.events is t.table("events") plus the name columns: the attribute is the table.
        table = getattr(self, name) if name in _core.TABLE_NAMES else self.table(name)
        return to_pandas(table)


_JSON_KINDS = ("object", "array", "string", "number", "true", "false", "null")


def chrome_metadata(entries: list[tuple[str, int, str]]) -> dict[str, Any]:
    """The core's (key, json value kind, text) top-level entries of a Chrome trace as a dict
    (a key given twice keeps its last value, as json.loads does)."""
    out: dict[str, Any] = {}
    for key, kind, text in entries:
        out[key] = text if _JSON_KINDS[kind] == "string" else json.loads(text)
    return out


class Trace(TableAttributes):
    """A parsed trace. Every table is a :class:`pyarrow.Table` whose buffers are owned by the
    native core and stay valid for as long as any table (or slice of one) is alive, even after
    the Trace itself is gone. Each table is exported once, on first access, and kept: its
    dictionary columns each carry exactly the strings they hold (see docs/tables.md).

    Every table the core lists (:attr:`table_names`) is ``t.table(name)`` and ``t.<name>``."""

    def __init__(
        self,
        info: TraceInfo,
        *,
        core: _core.Trace | None = None,
        tables: Mapping[str, pa.Table] | None = None,
        rebuild_core: Callable[[], _core.Trace] | None = None,
    ) -> None:
        """``core``: the native core, when there is one yet. ``tables``: tables already at hand
        (read back from files); the others are exported by the core. ``rebuild_core``: how to
        get the core when there is none yet (the queries and the missing tables need it)."""
        self._info = info
        self._core = core
        self._tables: dict[str, pa.Table] = dict(tables or {})
        self._events_with_names: pa.Table | None = None
        self._rebuild_core = rebuild_core

    @classmethod
    def from_core(
        cls, core: _core.Trace, source: str | None = None, source_file: SourceFile | None = None
    ) -> Trace:
        """A Trace over a parsed native core."""
        stats = dict(core.stats())
        if core.format == "json":
            stats["metadata"] = chrome_metadata(core.chrome_metadata)
        info = TraceInfo(core.kind, core.format, int(core.num_events), stats, source, source_file)
        return cls(info, core=core)

    @classmethod
    def from_stored(
        cls,
        tables: Mapping[str, pa.Table],
        meta: Mapping[str, Any],
        *,
        source: str | None,
        loaded_from: str,
        load_seconds: float,
    ) -> Trace:
        """A Trace over tables read back from a store (a cache entry, a Parquet directory),
        described by ``meta`` as :func:`tracecore.stored.trace_meta` wrote it; its queries run
        on a core built from those tables (see :mod:`.stored`). An ``events`` table stored with
        the columns :attr:`events` derives (``names.EVENTS_DERIVED_COLUMNS``) serves it as is."""
        from . import stored
        from .names import EVENTS_DERIVED_COLUMNS

        info = stored.stored_info(
            meta, source=source, loaded_from=loaded_from, load_seconds=load_seconds
        )
        raw = dict(tables)
        events = raw.get("events")
        with_names = None
        if events is not None:
            derived = [c for c in EVENTS_DERIVED_COLUMNS if c in events.column_names]
            # Served as stored only when they are what Trace.events makes (else made again).
            kind = pa.dictionary(pa.int32(), pa.string())
            if events.column_names[-len(EVENTS_DERIVED_COLUMNS):] == list(
                EVENTS_DERIVED_COLUMNS
            ) and all(events.schema.field(c).type == kind for c in EVENTS_DERIVED_COLUMNS):
                with_names = events
            raw["events"] = events.drop_columns(derived)
        recorded = dict(meta)
        trace = cls(info, tables=raw, rebuild_core=lambda: stored.core_from_tables(raw, recorded))
        trace._events_with_names = with_names
        return trace

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
        """The native core; built on first use from the tables when this Trace was read back
        from a store.

        Raises:
            TraceFormatError: a stored table is not one tracecore wrote.
        """
        if self._core is None:
            if self._rebuild_core is None:
                raise RuntimeError("this Trace has neither a native core nor a way to build one")
            self._core = self._rebuild_core()
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
        """The ``events`` table (one row per timed event, times in absolute nanoseconds) plus
        the name-derived ``forward_scope`` and ``phase`` columns and ``device_kind``, the kind
        of the event's device block (``stream`` for GPU kernels, ``executor``, ...)."""
        if self._events_with_names is None:
            from .names import add_event_columns

            self._ensure_core()  # a stored trace's tables are checked before they are read
            raw = self.table("events")
            self._events_with_names = add_event_columns(raw, self.table("devices"))
        return self._events_with_names

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
    def to_parquet(
        self,
        directory: str | os.PathLike[str],
        compression: Any = "zstd",
        *,
        overwrite: bool = False,
    ) -> Path:
        """Writes one Parquet file per table plus ``tracecore.json``; see
        :mod:`tracecore.parquet`. A directory that holds an export already is refused
        (``FileExistsError``) unless ``overwrite=True``, which replaces that export whole."""
        from .parquet import to_parquet

        return to_parquet(self, directory, compression=compression, overwrite=overwrite)

    def to_chrome_trace(
        self, path: str | os.PathLike[str], *, show_memory: bool = True, show_steps: bool = True
    ) -> Path:
        """Writes a Chrome trace-event JSON (``.gz`` when the name ends so) for Perfetto: one
        process per device, steps as slices, written in C++ (see
        :func:`tracecore.chrome.to_chrome_trace`)."""
        from .chrome import to_chrome_trace

        return to_chrome_trace(self, path, show_memory=show_memory, show_steps=show_steps)

    def to_perfetto(
        self, path: str | os.PathLike[str], *, show_memory: bool = True, show_steps: bool = True
    ) -> Path:
        """Writes Perfetto's native protobuf trace (``TracePacket`` messages): a track per device
        and line, a slice per event with interned names, memory counter tracks and step
        slices, written in C++ (see :func:`tracecore.perfetto.to_perfetto`)."""
        from .perfetto import to_perfetto

        return to_perfetto(self, path, show_memory=show_memory, show_steps=show_steps)

    def sql(self, query: str) -> pa.Table:
        """Runs SQL over the tables (registered as views) with DuckDB (``tracecore[duckdb]``)."""
        from .sql import sql

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
        from .listing import shape_listing

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

    def overlaps(
        self,
        left: Any = None,
        right: Any = None,
        *,
        same_device: bool = True,
        max_output_bytes: int = _core.DEFAULT_MAX_OUTPUT_BYTES,
    ) -> pa.Table:
        """Pairs of events whose ``[start_ns, end_ns)`` intervals overlap.

        With no arguments: every unordered overlapping pair once (``left < right``). With
        ``left`` and/or ``right`` (event ids, a single id, or boolean masks; a missing side means
        all events): every ordered pair ``(l, r)``, ``l != r``, that overlaps. ``same_device``
        keeps only pairs in the same device block. Returns ``left, right, overlap_ns`` sorted by
        (left, right).

        The pairs can outnumber the events quadratically: past ``max_output_bytes`` (24 bytes
        per pair; 1 GiB by default) a ValueError says so instead of taking the memory.

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
        max_output_bytes = check_budget(max_output_bytes)
        return table_from_capsules(
            _core.overlaps(self._ensure_core(), l_mask, r_mask, same_device, max_output_bytes)
        )

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

    def occupancy(
        self,
        *,
        by: str = "device",
        bin_ns: int | None = None,
        max_output_bytes: int = _core.DEFAULT_MAX_OUTPUT_BYTES,
    ) -> pa.Table:
        """How busy each device block is: ``busy_ns`` (union of its intervals), ``span_ns``,
        ``utilization``, ``max_concurrency`` and ``idle_gaps``; with ``bin_ns``, the busy fraction
        of every time bin (a utilization timeline): the bins lie on one grid from the trace's
        first start, and each device block has a row per bin over its own span (first start to
        last end; none when it has no events), 32 bytes each, refused with a ValueError before
        any is made when they would pass ``max_output_bytes`` (1 GiB by default)."""
        if by != "device":
            raise ValueError(
                f"occupancy is computed per device block; by must be 'device', not {by!r}"
            )
        bin_ns = check_bin_ns(bin_ns)
        max_output_bytes = check_budget(max_output_bytes)
        return table_from_capsules(_core.occupancy(self._ensure_core(), bin_ns, max_output_bytes))

    def _occupancy_bin_rows(self, bin_ns: int) -> int:
        """The rows ``occupancy(bin_ns=bin_ns)`` would make (one per device block and bin of
        its span), without making them."""
        checked = check_bin_ns(bin_ns)
        if checked is None:
            raise TypeError("bin_ns must be an int, not None")
        return _core.occupancy_bin_rows(self._ensure_core(), checked)

    def replay(
        self,
        *,
        source: str = "records",
        allocator: str | None = None,
        baseline: str | None = None,
        step: int | None = None,
    ) -> MemoryReplay:
        """Replays memory per allocator. ``source="records"`` replays the allocation records;
        ``source="tensors"`` reproduces TensorFlow timeline.py's tensor-lifetime model exactly;
        ``source="in_use"`` follows the level the allocator itself reported (XSpace memory
        events, StepStats ``allocator_bytes_in_use``): its peak, the allocations live then and
        the lifetime peak, as XProf's memory profile (see :func:`tracecore.replay.replay_in_use`).
        ``baseline="snapshot"`` (records only) aligns the level with the allocator's first
        ``allocator_bytes_in_use`` snapshot. ``allocator``: replay that allocator only (a
        ``KeyError`` names the allocators when the trace has no such one). ``step``: replay
        step N alone (its events, as ``events.step_id`` and :meth:`step_times` number them, and
        their tensors and allocation records): ``source="tensors"`` is then timeline.py's
        figure on that step's StepStats alone; a ``KeyError`` for a step the trace lacks."""
        return replay(self, self._ensure_core, source, allocator, baseline, step)

    def step_times(self) -> pa.Table:
        """``step, start_ns, end_ns, duration_ns``: one row per step of the trace, by step,
        from ``events.step_id`` (see :mod:`tracecore.steps` for how each format numbers
        them): the earliest start and latest end of the step's events. A trace without step
        information is one step 0 spanning every event."""
        from .steps import step_times

        return step_times(self)

    def op_stats(self, by: str = "op") -> pa.Table:
        """Time per op type (``by="op"``), node (``"node_name"``), device block (``"device"``)
        or device kind (``"kind"``, :func:`tracecore.optime.kind_stats`):
        ``n_events, total_ns, mean_ns, max_ns, busy_ns, share, executor_ns, stream_ns,
        time_ns``. ``total_ns`` adds every record (a GPU op's executor, stream and
        ``stream:all`` records alike); ``time_ns`` counts each node's time once: its stream
        records if it has any, else its executor records, else its other records
        (:mod:`tracecore.optime`); for ``by="device"`` it is ``total_ns``."""
        if by == "kind":
            from .optime import kind_stats

            self._ensure_core()  # a stored trace's tables are checked before they are read
            return kind_stats(self.table("events"), self.table("devices"))
        stats = table_from_capsules(_core.op_stats(self._ensure_core(), by))
        if by == "device":
            return stats.append_column("time_ns", stats["total_ns"])
        from .optime import counted_once

        once = counted_once(self, by)
        times = dict(zip(once["key"].to_pylist(), once["time_ns"].to_pylist(), strict=True))
        column = np.array([times.get(k, 0) for k in stats["key"].to_pylist()], dtype=np.int64)
        return stats.append_column("time_ns", array(column))

    @property
    def plot(self) -> TracePlots:
        """The trace's figures: ``t.plot.memory()``, ``t.plot.occupancy()``,
        ``t.plot.timeline(start_ns, end_ns)``, each a new matplotlib Figure
        (:class:`tracecore.plots.TracePlots`; ``pip install 'tracecore[plot]'``)."""
        from .plots import TracePlots

        return TracePlots(self)

    # -- metadata --------------------------------------------------------------------------
    @property
    def kind(self) -> str:
        """"StepStats", "RunMetadata", "XSpace", "ChromeTrace" or "Kineto" (Chrome trace JSON
        with Kineto's top-level keys)."""
        return self._info.kind

    @property
    def format(self) -> str:
        """"text", "binary" (StepStats / RunMetadata), "xspace" or "json" (Chrome trace)."""
        return self._info.format

    @property
    def metadata(self) -> dict[str, Any]:
        """A Chrome trace's top-level keys other than ``traceEvents`` (Kineto's
        ``schemaVersion``, ``deviceProperties``, ``distributedInfo``, ...) as JSON values;
        empty for other formats."""
        return dict(self._info.stats.get("metadata", {}))

    @property
    def source(self) -> str | None:
        return self._info.source

    @property
    def source_file(self) -> SourceFile | None:
        """The parsed file's absolute path, size and mtime, taken before parsing (None when
        unknown, e.g. tables stored without a source)."""
        return self._info.source_file

    @property
    def stats(self) -> dict[str, Any]:
        """Input size, parse time, row counts and the number of unknown fields skipped.

        For a trace read back from a cache or Parquet directory these are the figures of the
        original parse, plus ``loaded_from`` ("cache" or "parquet") and ``load_seconds``."""
        return dict(self._info.stats)

    def __len__(self) -> int:
        return self._info.num_events

    def __repr__(self) -> str:
        s = self.stats
        mb = s["bytes"] / 1e6
        origin = f", from {s['loaded_from']}" if "loaded_from" in s else ""
        source = os.fsdecode(self.source) if self.source is not None else None
        return (
            f"<tracecore.Trace {self.kind} ({self.format}, {mb:.2f} MB{origin}) from "
            f"{source!r}: {s['events']} events on {s['devices']} device blocks, "
            f"{s['tensors']} tensors, {s['alloc_records']} allocation records>"
        )
