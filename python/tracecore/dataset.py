"""Many traces as one dataset: one dump per worker (rank) per profiled step.

    ts = tracecore.open_many("run/rank*/step*.pbtxt")   # parsed in parallel, in-process
    ts.traces          # one row per file: path, trace_id, rank, step, size, kind, status, error
    ts.events          # every trace's events with trace_id, rank, step columns, clocks aligned
    ts.step_times()    # per rank and step: start, end, duration, time in / waiting for collectives
    ts.stragglers()    # per step: the slowest rank and its lag behind the median
    ts.collectives()   # every allreduce/allgather/broadcast instance per rank, with its wait
    ts.to_parquet("run.parquet", partition_by=("rank",))   # for DuckDB, Polars, Spark, Ray

See docs/many_traces.md for the definitions and the Dask / Ray / Spark recipes.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import _core
from ._arrow import checked_aggregate, to_numpy
from .checks import (
    PathArg,
    as_int,
    check_bin_ns,
    check_budget,
    check_flag,
    check_ns,
    check_threads,
    display_path,
)
from .keying import (
    KeySpec,
    Member,
    alignment_offset,
    check_align,
    error_message,
    event_bounds,
    file_keys,
    keyed_table,
    resolve_paths,
    stated_rank,
    table_schema,
    trace_table,
)
from .opening import open_trace as _open_trace
from .trace import TableAttributes, Trace


# -- open_many ------------------------------------------------------------------------------------
def open_many(
    paths: PathArg | Iterable[PathArg],
    *,
    rank: KeySpec = None,
    step: KeySpec = None,
    threads: int = 0,
    strict: bool = False,
    align: Any = "step_start",
    format: str = "auto",
) -> TraceSet:
    """Opens many traces (one per worker and step) as one :class:`TraceSet`.

    Args:
        paths: a glob (``"run/**/*.pbtxt"``), a directory, a file, or a list of these. A
            directory gives every trace file below it; below a profiler or TensorBoard log
            directory, the XSpace profiles ``plugins/profile/<run>/<host>.xplane.pb``.
        rank, step: how to read a file's rank and step from its path: a regex (the group named
            ``rank``/``step``, else group 1, else the whole match, of the LAST match in the path)
            or a callable ``path -> value``. Defaults: an XSpace profile laid out as
            ``plugins/profile/<run>/<host>.xplane.pb`` has rank = host and step = run; other
            paths match ``rank3``, ``worker_3``, ``task-3``... and ``step5``, ``iter_5``,
            ``global_step=5``; a PyTorch (Kineto) trace's ``distributedInfo.rank``, when it has
            one, is its rank. A column is int64 when every value is an integer, else string; a
            path without a match gets null.
        threads: files parsed at once (0: one per core). Parsing releases the GIL, so a thread
            pool scales; each file is parsed single-threaded unless there is only one file.
        strict: raise the first failing file's error (input order) instead of reporting it in
            :attr:`TraceSet.traces`.
        align: ``"step_start"`` (each trace shifted so that its first event starts at 0),
            ``None`` (raw clocks), or per-rank clock offsets: ``{rank: offset_ns}``, or a table
            (pyarrow / pandas) with ``rank, offset_ns`` and optionally ``step`` columns. Every
            time column becomes ``raw - offset``.
        format: passed to :func:`tracecore.open` (``"auto"``, ``"text"``, ``"binary"``,
            ``"xspace"``).
    """
    threads = check_threads(threads)
    strict = check_flag(strict, "strict")
    align = check_align(align)
    files = resolve_paths(paths)
    results = load_files(files, threads=threads, strict=strict, format=format, cache=False)
    ranks, rank_type, steps, step_type = file_keys(
        files, rank, step, [stated_rank(r[0]) for r in results]
    )
    return TraceSet(
        files,
        [r[0] for r in results],
        [r[1] for r in results],
        ranks,
        steps,
        rank_type,
        step_type,
        align,
        sizes=[r[2] for r in results],
    )


def load_files(
    files: list[str], *, threads: int, strict: bool, format: str, cache: bool
) -> list[tuple[Trace | None, BaseException | None, int | None]]:
    """(trace or None, error or None, size) of every file, opened ``threads`` at a time (0: one
    per core); with ``strict``, the first failing file's error (input order) is raised."""
    workers = max(1, min(threads or os.cpu_count() or 1, len(files)))
    per_file_threads = threads if len(files) == 1 else 1

    def load(path: str) -> tuple[Trace | None, BaseException | None, int | None]:
        try:
            size: int | None = os.stat(path).st_size
        except OSError:
            size = None
        try:
            trace = _open_trace(path, format=format, threads=per_file_threads, cache=cache)
            return trace, None, size
        except Exception as e:  # noqa: BLE001 - one bad file must not abort the others
            return None, e, size

    results: list[tuple[Trace | None, BaseException | None, int | None]] = []
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tracecore-open") as pool:
        futures = [pool.submit(load, f) for f in files]
        for fut in futures:
            trace, err, size = fut.result()
            if err is not None and strict:
                for other in futures:
                    other.cancel()
                raise err
            results.append((trace, err, size))
    return results


# -- the set --------------------------------------------------------------------------------------
class TraceSet(TableAttributes):
    """Traces of many workers and steps, queried as one. Made by :func:`tracecore.open_many`.

    Every table of a :class:`~tracecore.Trace` (``events``, ``devices``, ``tensors``, ...) is
    available here with ``trace_id`` (int32), ``rank`` and ``step`` columns in front and its
    times aligned (see ``align``); dictionary columns are unified across traces. ``len(ts)`` is
    the number of events of all loaded traces.
    """

    def __init__(
        self,
        paths: list[str],
        traces: list[Trace | None],
        errors: list[BaseException | None],
        ranks: list[Any],
        steps: list[Any],
        rank_type: pa.DataType,
        step_type: pa.DataType,
        align: Any,
        sizes: list[int | None] | None = None,
        labels: dict[str, tuple[list[Any], pa.DataType]] | None = None,
    ) -> None:
        """``labels``: more key columns (name -> per trace values, type), after ``step`` in
        :attr:`traces` and in every table (a log directory's run, tag, host, ...)."""
        self._paths = paths
        self._sizes = sizes if sizes is not None else [None] * len(paths)
        self._traces = traces
        self._errors = errors
        self._ranks = ranks
        self._steps = steps
        self._rank_type = rank_type
        self._step_type = step_type
        self._align = align
        self._offsets = [
            alignment_offset(t, align, r, s) if t is not None else 0
            for t, r, s in zip(traces, ranks, steps, strict=True)
        ]
        self._tables: dict[str, pa.Table] = {}
        self._collectives: pa.Table | None = None
        self._labels = dict(labels or {})
        for name, (values, _) in self._labels.items():
            if len(values) != len(paths):
                raise ValueError(f"label {name!r} has {len(values)} values for {len(paths)} traces")

    def _label_values(self, trace_id: int | None) -> list[tuple[str, Any, pa.DataType]]:
        """The label columns of one trace (all null for None: an empty table's)."""
        return [(name, None if trace_id is None else values[trace_id], type_)
                for name, (values, type_) in self._labels.items()]

    def _keyed(self, table: pa.Table, name: str, trace_id: int | None, rank: Any, step: Any,
               offset: int) -> pa.Table:
        """keyed_table with this set's key types and the trace's labels."""
        return keyed_table(table, name, trace_id or 0, rank, step, offset, self._rank_type,
                           self._step_type, self._label_values(trace_id))

    # -- listing ------------------------------------------------------------------------------
    @property
    def traces(self) -> pa.Table:
        """One row per input file: ``path, trace_id, rank, step, size`` (bytes, when opened),
        ``kind, format, n_events, offset_ns`` (what alignment subtracted), ``status``
        ("ok"|"error") and ``error`` (the message, with the path and line:column or offset)."""
        ok = [t is not None for t in self._traces]
        return pa.table(
            {
                "path": pa.array([display_path(p) for p in self._paths], pa.string()),
                "trace_id": pa.array(range(len(self._paths)), pa.int32()),
                "rank": pa.array(self._ranks, self._rank_type),
                "step": pa.array(self._steps, self._step_type),
                **{name: pa.array(values, type_) for name, (values, type_) in self._labels.items()},
                "size": pa.array(self._sizes, pa.int64()),
                "kind": pa.array(
                    [t.kind if t is not None else None for t in self._traces], pa.string()
                ),
                "format": pa.array(
                    [t.format if t is not None else None for t in self._traces], pa.string()
                ),
                "n_events": pa.array(
                    [len(t) if t is not None else None for t in self._traces], pa.int64()
                ),
                "offset_ns": pa.array(
                    [o if k else None for o, k in zip(self._offsets, ok, strict=True)], pa.int64()
                ),
                "status": pa.array(["ok" if k else "error" for k in ok], pa.string()),
                "error": pa.array(
                    [None if e is None else error_message(e) for e in self._errors], pa.string()
                ),
            }
        )

    @property
    def errors(self) -> pa.Table:
        """The rows of :attr:`traces` whose file failed to load."""
        t = self.traces
        return t.filter(pc.equal(t["status"], "error"))

    def trace(self, trace_id: int) -> Trace:
        """The :class:`~tracecore.Trace` of one file (raw clocks, as tracecore.open returns it).
        ``trace_id``: the file's row in :attr:`traces` (0 to the number of files - 1; negative
        ids count from the end)."""
        index = as_int(trace_id)
        if index is None:
            raise TypeError(f"trace_id must be an int, not {type(trace_id).__name__}")
        n = len(self._traces)
        if not -n <= index < n:  # negative ids count from the end, as list indices do
            raise IndexError(
                f"trace_id {index} out of range: this set has {n} files (0 to {n - 1})"
            )
        trace_id = index % n
        t, error = self._traces[trace_id], self._errors[trace_id]
        if t is None:
            assert error is not None  # a file that did not load has its error
            raise ValueError(
                f"trace {trace_id} ({self._paths[trace_id]}) failed to load: "
                f"{error_message(error)}"
            )
        return t

    def _loaded(self) -> Iterator[Member]:
        for i, t in enumerate(self._traces):
            if t is not None:
                yield Member(i, t, self._ranks[i], self._steps[i], self._offsets[i])

    @property
    def align(self) -> Any:
        return self._align

    @property
    def n_traces(self) -> int:
        return sum(t is not None for t in self._traces)

    def __len__(self) -> int:
        return sum(len(t) for t in self._traces if t is not None)

    def __repr__(self) -> str:
        n_err = len(self._paths) - self.n_traces
        ranks = {r for _, _, r, _, _ in self._loaded()}
        steps = {s for _, _, _, s, _ in self._loaded()}
        return (
            f"<tracecore.TraceSet {self.n_traces} traces ({n_err} failed), {len(ranks)} ranks, "
            f"{len(steps)} steps, {len(self)} events, align={self._align!r}>"
        )

    # -- tables -------------------------------------------------------------------------------
    @property
    def table_names(self) -> list[str]:
        return list(_core.TABLE_NAMES)

    def table(self, name: str) -> pa.Table:
        """Table ``name`` of every loaded trace, with trace_id, rank, step and aligned times."""
        if name not in _core.TABLE_NAMES:
            raise KeyError(f"no table {name!r}; tables: {list(_core.TABLE_NAMES)}")
        cached = self._tables.get(name)
        if cached is None:
            parts = [
                self._keyed(trace_table(t, name), name, i, r, s, off)
                for i, t, r, s, off in self._loaded()
            ]
            cached = self._concat(
                parts,
                lambda: self._keyed(table_schema(name).empty_table(), name, None, None, None, 0),
            )
            self._tables[name] = cached
        return cached

    @staticmethod
    def _concat(parts: list[pa.Table], empty: Callable[[], pa.Table]) -> pa.Table:
        if not parts:
            return empty()
        # Each trace has its own dictionaries: concatenation keeps them per chunk, then one
        # dictionary per column is built so that kernels and writers see a single one.
        return pa.concat_tables(parts, promote_options="permissive").unify_dictionaries()

    devices = property(lambda self: self.table("devices"), doc="Device blocks of every trace.")
    events = property(lambda self: self.table("events"), doc="Events of every trace, aligned.")
    tensors = property(lambda self: self.table("tensors"), doc="Output tensors of every trace.")
    allocations = property(lambda self: self.table("allocations"), doc="AllocatorMemoryUsed rows.")
    alloc_records = property(lambda self: self.table("alloc_records"), doc="Allocation records.")
    cost_graph = property(lambda self: self.table("cost_graph"), doc="CostGraphDef nodes.")
    graph_nodes = property(lambda self: self.table("graph_nodes"), doc="Partition graph nodes.")
    thread_names = property(lambda self: self.table("thread_names"), doc="Thread names.")
    persistent_tensors = property(
        lambda self: self.table("persistent_tensors"), doc="Persistent tensor allocation ids."
    )

    # -- per-trace queries --------------------------------------------------------------------
    def map(self, query: Callable[[Trace], pa.Table]) -> pa.Table:
        """``query(trace)`` of every loaded trace, concatenated with trace_id, rank, step in front.
        The Trace passed has raw clocks: times in the result are not aligned."""
        parts = []
        for i, t, r, s, _ in self._loaded():
            parts.append(self._keyed(query(t), "", i, r, s, 0))
        if not parts:
            raise ValueError("no trace loaded")
        return self._concat(parts, lambda: None)

    def op_stats(self, by: str = "op", *, per: str = "trace") -> pa.Table:
        """:meth:`Trace.op_stats` of every trace. ``per="trace"``: the per-trace rows with
        trace_id, rank, step; ``per="rank"`` / ``"step"`` / ``"all"``: summed over the traces of
        each rank / step / all (n_events, total_ns, busy_ns, executor_ns, stream_ns, time_ns summed,
        max_ns the max, mean_ns = total/n, share = busy_ns / the summed spans of those traces)."""
        table = self.map(lambda t: t.op_stats(by))
        if per == "trace":
            return table
        group = _per_columns(per)
        spans = self._spans(group)
        agg = checked_aggregate(
            table,
            group + ["key"],
            [
                ("n_events", "sum"),
                ("total_ns", "sum"),
                ("max_ns", "max"),
                ("busy_ns", "sum"),
                ("executor_ns", "sum"),
                ("stream_ns", "sum"),
                ("time_ns", "sum"),
            ]
        )
        cols = {c: agg[c] for c in group}
        cols["key"] = agg["key"]
        cols["n_events"] = agg["n_events_sum"]
        cols["total_ns"] = agg["total_ns_sum"]
        # Rounded to the nearest double (safe=False: a total above 2^53 ns is not exact in it).
        total = pc.cast(agg["total_ns_sum"], pa.float64(), safe=False)
        cols["mean_ns"] = pc.divide(total, agg["n_events_sum"])
        cols["max_ns"] = agg["max_ns_max"]
        cols["busy_ns"] = agg["busy_ns_sum"]
        span = np.array(
            [spans.get(tuple(row[c] for c in group), 0) for row in agg.select(group).to_pylist()],
            dtype=np.float64,
        )
        busy = to_numpy(agg["busy_ns_sum"]).astype(np.float64)
        cols["share"] = pa.array(np.divide(busy, span, out=np.zeros_like(busy), where=span > 0))
        cols["executor_ns"] = agg["executor_ns_sum"]
        cols["stream_ns"] = agg["stream_ns_sum"]
        cols["time_ns"] = agg["time_ns_sum"]
        out = pa.table(cols)
        return out.sort_by(
            [(c, "ascending") for c in group] + [("total_ns", "descending"), ("key", "ascending")]
        )

    def _check_bins_budget(self, bin_ns: int, max_output_bytes: int) -> None:
        """Raises the ValueError of :meth:`occupancy` when the bins of every trace, keyed,
        would pass ``max_output_bytes``."""
        one = pa.table({"_": pa.array([0], pa.int8())})
        rows = total = 0
        for i, t, r, s, _ in self._loaded():
            n = t._occupancy_bin_rows(bin_ns)
            # The key columns' bytes per row (a one-row table's: a string's offsets counted
            # twice, on the safe side).
            key_bytes = self._keyed(one, "", i, r, s, 0).nbytes - one.nbytes
            rows += n
            total += n * (_core.OCCUPANCY_BIN_ROW_BYTES + key_bytes)
        if total > max_output_bytes:
            raise ValueError(
                f"TraceSet.occupancy(bin_ns={bin_ns}) would make {rows} rows over "
                f"{self.n_traces} traces, {total} bytes with their key columns, over the output "
                f"budget of {max_output_bytes} bytes (choose a larger bin_ns, or raise "
                f"max_output_bytes)"
            )

    def occupancy(
        self,
        *,
        by: str = "device",
        bin_ns: int | None = None,
        per: str = "trace",
        max_output_bytes: int = _core.DEFAULT_MAX_OUTPUT_BYTES,
    ) -> pa.Table:
        """:meth:`Trace.occupancy` of every trace with trace_id, rank, step (``bin_start_ns``
        aligned). ``per="rank"`` / ``"step"`` / ``"all"`` (without bins): summed per device
        string: n_events, busy_ns, span_ns and idle_gaps summed, utilization = busy/span,
        max_concurrency the max. ``max_output_bytes`` bounds the whole result: with ``bin_ns``,
        every trace's bins, each row counted at 32 bytes plus its key columns, are counted
        before any is made, and a ValueError says when they would pass it."""
        bin_ns = check_bin_ns(bin_ns)
        max_output_bytes = check_budget(max_output_bytes)
        if bin_ns is not None:
            if per != "trace":
                raise ValueError("occupancy with bin_ns is per trace; use per='trace'")
            self._check_bins_budget(bin_ns, max_output_bytes)
        table = self.map(
            lambda t: t.occupancy(by=by, bin_ns=bin_ns, max_output_bytes=max_output_bytes)
        )
        if bin_ns is not None:
            offsets = pa.array(np.array(self._offsets, dtype=np.int64)).take(table["trace_id"])
            i = table.schema.get_field_index("bin_start_ns")
            return table.set_column(
                i, "bin_start_ns", pc.subtract_checked(table["bin_start_ns"], offsets)
            )
        if per == "trace":
            return table
        group = _per_columns(per)
        table = table.set_column(
            table.schema.get_field_index("device"), "device", pc.cast(table["device"], pa.string())
        )
        agg = checked_aggregate(
            table,
            group + ["device", "kind"],
            [
                ("n_events", "sum"),
                ("busy_ns", "sum"),
                ("span_ns", "sum"),
                ("max_concurrency", "max"),
                ("idle_gaps", "sum"),
                ("trace_id", "count"),
            ]
        )
        busy = to_numpy(agg["busy_ns_sum"]).astype(np.float64)
        span = to_numpy(agg["span_ns_sum"]).astype(np.float64)
        cols = {c: agg[c] for c in group}
        cols.update(
            {
                "device": agg["device"],
                "kind": agg["kind"],
                "n_traces": agg["trace_id_count"],
                "n_events": agg["n_events_sum"],
                "busy_ns": agg["busy_ns_sum"],
                "span_ns": agg["span_ns_sum"],
                "utilization": pa.array(
                    np.divide(busy, span, out=np.zeros_like(busy), where=span > 0)
                ),
                "max_concurrency": agg["max_concurrency_max"],
                "idle_gaps": agg["idle_gaps_sum"],
            }
        )
        return pa.table(cols).sort_by([(c, "ascending") for c in group + ["device"]])

    def window(self, start_ns: int, end_ns: int) -> pa.Table:
        """Events active in ``[start_ns, end_ns)`` of the aligned clock, per trace:
        ``trace_id, rank, step, event_id``."""
        start_ns = check_ns(start_ns, "start_ns")
        end_ns = check_ns(end_ns, "end_ns")
        parts = []
        for i, t, r, s, off in self._loaded():
            ids = t.window(start_ns + off, end_ns + off)
            parts.append(
                self._keyed(pa.table({"event_id": ids}), "", i, r, s, 0)
            )
        return self._concat(
            parts,
            lambda: self._keyed(
                pa.table({"event_id": pa.array([], pa.int64())}),
                "",
                None,
                None,
                None,
                0,
            ),
        )

    def replay(
        self, *, source: str = "records", allocator: str | None = None, baseline: str | None = None
    ) -> tuple[pa.Table, pa.Table]:
        """:meth:`Trace.replay` of every trace: ``(timeline, peaks)`` with trace_id, rank, step;
        time_ns and peak_time_ns aligned (a peak that never rose above 0 keeps time 0)."""
        timelines, peaks = [], []
        for i, t, r, s, off in self._loaded():
            rep = t.replay(source=source, allocator=allocator, baseline=baseline)
            tl = rep.timeline
            tl = tl.set_column(
                tl.schema.get_field_index("time_ns"),
                "time_ns",
                pc.subtract_checked(tl["time_ns"], off),
            )
            pk = rep.peaks
            rose = pc.greater(pk["peak_bytes"], 0)
            pk = pk.set_column(
                pk.schema.get_field_index("peak_time_ns"),
                "peak_time_ns",
                pc.if_else(rose, pc.subtract_checked(pk["peak_time_ns"], off), pk["peak_time_ns"]),
            )
            timelines.append(self._keyed(tl, "", i, r, s, 0))
            peaks.append(self._keyed(pk, "", i, r, s, 0))
        if not peaks:
            raise ValueError("no trace loaded")
        return self._concat(timelines, lambda: None), self._concat(peaks, lambda: None)

    def _spans(self, group: list[str]) -> dict[tuple[Any, ...], int]:
        spans: dict[tuple[Any, ...], int] = {}
        for _, t, r, s, _ in self._loaded():
            bounds = event_bounds(t.table("events"))
            key = tuple({"rank": r, "step": s}[c] for c in group)
            spans[key] = spans.get(key, 0) + (0 if bounds is None else bounds[1] - bounds[0])
        return spans

    # -- cross-trace queries ------------------------------------------------------------------
    def collectives(self, pattern: str | None = None) -> pa.Table:
        """Every collective op instance on every rank, with how long the rank waited for it.

        A collective is an event whose op is one of
        :data:`~tracecore.collectives.COLLECTIVE_OPS` (Horovod
        ``HorovodAllreduce``/``Allgather``/``Broadcast``/..., e.g. the ops under Horovod's
        ``DistributedGradientTape_Allreduce`` scope; ``NcclAllReduce``...; TF's
        ``CollectiveReduce``/``Gather``/``Bcast*``; NCCL kernel names), or, for events without
        an op, whose last node-name component starts with one; ``pattern`` (a regex searched in
        op and node name) replaces that rule. Events on executor blocks are used; stream or
        memcpy events only for a collective that has no executor event in that trace (their
        ``:Op`` suffix removed). The k-th execution of a node in a trace is its ``occurrence`` k.

        An instance is (step, node_name, occurrence) across ranks. A rank's ``arrival`` is its
        event's aligned ``start_ns``; the collective can only complete once the last rank has
        arrived, so ``wait_ns = (latest arrival among the instance's ranks) - (this rank's
        arrival)``: 0 for the last rank (``last_rank``), and the time the others spent waiting
        for it. Meaningful only when the clocks are aligned (``align="step_start"`` assumes the
        ranks start each step together; per-rank offsets give a common clock).

        Columns: trace_id, rank, step, node_name, op, collective (allreduce, allgather,
        broadcast, alltoall, reducescatter, reduce, other), occurrence, device, start_ns,
        end_ns, duration_ns, wait_ns, n_ranks, last_rank. Sorted by step, node_name,
        occurrence, rank.
        """
        from . import collectives

        if pattern is None and self._collectives is not None:
            return self._collectives
        out = collectives.collectives(self._loaded(), self._rank_type, self._step_type, pattern)
        if pattern is None:
            self._collectives = out
        return out

    def step_times(self) -> pa.Table:
        """Per rank and step: ``rank, step, n_traces, n_events, start_ns, end_ns, duration_ns``
        (first event start to last event end, aligned clock), ``collective_ns`` (union of the
        rank's collective intervals), ``wait_ns`` (union of its wait intervals ``[arrival,
        latest arrival]`` from :meth:`collectives`, so concurrent collectives are not counted
        twice) and ``compute_ns = duration_ns - wait_ns``. Sorted by rank, step."""
        from . import collectives

        return collectives.step_times(
            self._loaded(), self._rank_type, self._step_type, self.collectives()
        )

    def stragglers(self, *, by: str = "compute", min_lag_ns: float = 0) -> pa.Table:
        """Per step, the slowest rank and how far it lags behind the median rank.

        ``by="compute"`` (default) ranks by ``compute_ns`` of :meth:`step_times` (step duration
        minus time spent waiting in collectives): with synchronous collectives every rank's
        step ends when the slowest arrives, so durations are equal and the straggler shows in
        what it did before arriving. Without collectives ``compute_ns == duration_ns``.
        ``by="duration"`` ranks by ``duration_ns``.

        Columns: ``step, n_ranks, slowest_rank`` (ties: the smallest rank), ``slowest_ns`` (its
        compute or duration), ``median_ns`` (median over the step's ranks), ``lag_ns =
        slowest_ns - median_ns``, ``lag_ratio = lag_ns / median_ns``, and the slowest rank's
        ``duration_ns`` and ``wait_ns``. Only steps with ``lag_ns > min_lag_ns`` when
        ``min_lag_ns > 0``. Sorted by step.
        """
        from . import collectives

        return collectives.stragglers(
            self.step_times(), self._rank_type, self._step_type, by=by, min_lag_ns=min_lag_ns
        )

    # -- export -------------------------------------------------------------------------------
    def to_parquet(
        self,
        directory: str | os.PathLike[str],
        *,
        partition_by: Iterable[str] = ("rank",),
        tables: Iterable[str] | None = None,
        compression: Any = "zstd",
        overwrite: bool = False,
    ) -> Path:
        """Writes a hive-partitioned Parquet dataset per table: ``directory/<table>/rank=3/...``.

        ``tables``: which tables (default: every non-empty one). Also writes, unpartitioned,
        ``traces.parquet`` (the :attr:`traces` listing), ``step_times.parquet`` and
        ``collectives.parquet`` (:meth:`step_times`, :meth:`collectives`) and
        ``tracecore_set.json`` (what was written). Each table directory reads as one table with
        ``pyarrow.dataset.dataset(dir, partitioning="hive")``, DuckDB
        ``read_parquet('dir/events/**/*.parquet', hive_partitioning=true)``, Polars
        ``scan_parquet(..., hive_partitioning=True)``, Spark ``spark.read.parquet(dir)`` and
        Ray ``ray.data.read_parquet(dir)``. ``overwrite=False`` refuses a directory that holds a
        dataset (a non-empty table directory) or a single-trace export (``tracecore.json``);
        ``overwrite=True`` first removes what either wrote there (other files stay).
        """
        import pyarrow.dataset as ds
        import pyarrow.parquet as pq

        from .parquet import META_FILE, check_parquet_compression

        check_parquet_compression(compression)
        out = Path(directory)
        partition_by = list(partition_by)
        names = list(tables) if tables is not None else list(_core.TABLE_NAMES)
        written = []
        # Refused or cleared before anything is written: a dataset is never a mix of two.
        if not overwrite:
            if (out / META_FILE).exists():
                raise FileExistsError(
                    f"{out} holds a single-trace export ({META_FILE}; pass overwrite=True)"
                )
            for name in _core.TABLE_NAMES:
                target = out / name
                if target.is_dir() and any(target.iterdir()):
                    raise FileExistsError(
                        f"{target} exists and is not empty (pass overwrite=True)"
                    )
        else:
            _clear_dataset(out)
        out.mkdir(parents=True, exist_ok=True)
        for name in names:
            table = self.table(name)
            if tables is None and table.num_rows == 0:
                continue
            missing = [c for c in partition_by if c not in table.column_names]
            if missing:
                raise ValueError(f"cannot partition table {name} by missing columns {missing}")
            target = out / name
            ds.write_dataset(
                table,
                target,
                format="parquet",
                partitioning=ds.partitioning(
                    pa.schema([table.schema.field(c) for c in partition_by]), flavor="hive"
                )
                if partition_by
                else None,
                file_options=ds.ParquetFileFormat().make_write_options(compression=compression),
                basename_template="part-{i}.parquet",
                existing_data_behavior="delete_matching",
            )
            written.append(name)
        # The listing and the cross-trace results are small: one file each.
        summaries = {
            "traces": self.traces,
            "step_times": self.step_times(),
            "collectives": self.collectives(),
        }
        for name, summary in summaries.items():
            pq.write_table(summary, out / f"{name}.parquet", compression=compression)
        (out / "tracecore_set.json").write_text(
            json.dumps(
                {
                    "tables": written,
                    "summaries": [f"{n}.parquet" for n in summaries],
                    "partition_by": partition_by,
                    "align": self._align if self._align in (None, "step_start") else "offsets",
                    "traces": len(self._paths),
                    "loaded": self.n_traces,
                },
                indent=1,
            )
        )
        return out


def _per_columns(per: str) -> list[str]:
    groups = {"rank": ["rank"], "step": ["step"], "all": [], "rank_step": ["rank", "step"]}
    if per not in groups:
        raise ValueError(f"per must be 'trace', 'rank', 'step', 'rank_step' or 'all', not {per!r}")
    return groups[per]


def _clear_dataset(out: Path) -> None:
    """Removes from ``out`` what a dataset (``TraceSet.to_parquet``) or a single-trace export
    (``Trace.to_parquet``) wrote there: the table directories, the summary files, the single
    export's table files and ``tracecore.json``; other files stay."""
    import shutil

    from .parquet import META_FILE, parquet_files

    if not out.is_dir():
        return
    for name in _core.TABLE_NAMES:
        if (out / name).is_dir():
            shutil.rmtree(out / name)
    if (out / META_FILE).exists():
        with contextlib.suppress(ValueError):  # an unreadable tracecore.json names nothing
            for path in parquet_files(out):
                path.unlink(missing_ok=True)
        (out / META_FILE).unlink()
    for name in ("traces.parquet", "step_times.parquet", "collectives.parquet",
                 "tracecore_set.json"):
        (out / name).unlink(missing_ok=True)
