"""Memory replays: what each allocator held over time, and at its peak."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import _core
from ._arrow import array, scalar, table_from_capsules, to_numpy

if TYPE_CHECKING:
    from .trace import Trace

# An (arrow_schema, arrow_array) pair of PyCapsules, as the native core exports a table.
Capsules = tuple[object, object]


class MemoryReplay:
    """Result of :meth:`tracecore.Trace.replay`.

    Attributes:
        source: ``"records"`` (allocation records replayed per allocator), ``"tensors"``
            (TensorFlow timeline.py's tensor-lifetime model) or ``"in_use"`` (the level the
            allocator itself reported, see :func:`replay_in_use`).
        timeline: ``allocator, time_ns, delta_bytes, bytes_in_use``: one row per distinct
            timestamp per allocator, the level after every change at that time (``in_use``:
            one row per report).
        peaks: ``allocator, peak_bytes, peak_time_ns, live_tensors, n_changes``: one row per
            allocator (``in_use`` adds the peak report's figures, see :func:`replay_in_use`).
    """

    def __init__(
        self,
        trace: Trace,
        source: str,
        capsules: tuple[Capsules, Capsules, Capsules] | tuple[pa.Table, pa.Table, pa.Table],
        replay_live: Callable[[], Capsules] | None = None,
    ) -> None:
        """``capsules``: the timeline, peaks and live tables, as the native core exports them
        or as pyarrow Tables; ``replay_live``: how to get the live table when it is None."""
        timeline, peaks, live = (
            c if isinstance(c, pa.Table) or c is None else table_from_capsules(c)
            for c in capsules
        )
        self._trace = trace
        self.source = source
        self.timeline: pa.Table = timeline
        self.peaks: pa.Table = peaks
        # records: what was live at each peak is replayed again only when asked for
        self._live: pa.Table | None = live if replay_live is None else None
        self._replay_live = replay_live

    @property
    def allocators(self) -> list[str]:
        return [str(a) for a in self.peaks["allocator"].to_pylist()]

    def peak(self, allocator: str) -> dict[str, Any]:
        """The peaks row of one allocator, as a dict."""
        name = scalar(allocator, pa.string())
        rows = self.peaks.filter(pc.equal(self.peaks["allocator"].cast(pa.string()), name))
        if rows.num_rows == 0:
            raise KeyError(f"no allocator {allocator!r}; allocators: {self.allocators}")
        row: dict[str, Any] = rows.to_pylist()[0]
        return row

    def live_at_peak(self, allocator: str) -> pa.Table:
        """What ``allocator`` held at its peak.

        ``source="tensors"``: one row per live tensor (``tensor_name, event_id, node_name,
        output_index, dtype, shape, requested_bytes, allocated_bytes``), sorted by tensor name.
        ``source="records"``: the positive allocation records at or before the peak
        (``event_id, node_name, allocator, time_ns, bytes``), in replay order.
        ``source="in_use"``: the allocation records live at the peak (matched by address), in
        time order, with their ``address, requested_bytes, tf_op, shape, dtype, region``.
        """
        self.peak(allocator)  # raises KeyError for an unknown allocator
        if self._live is None:
            assert self._replay_live is not None  # set whenever _live is not
            self._live = table_from_capsules(self._replay_live())
        name = scalar(allocator, pa.string())
        live = self._live.filter(pc.equal(self._live["allocator"].cast(pa.string()), name))
        rows = live["row"]
        if self.source == "tensors":
            tensors = self._trace.tensors.take(rows)
            events = self._trace.events.take(tensors["event_id"])
            return pa.table(
                {
                    "tensor_name": live["tensor_name"],
                    "event_id": tensors["event_id"],
                    "node_name": events["node_name"],
                    "output_index": tensors["output_index"],
                    "dtype": tensors["dtype"],
                    "shape": tensors["shape"],
                    "requested_bytes": tensors["requested_bytes"],
                    "allocated_bytes": tensors["allocated_bytes"],
                }
            )
        records = self._trace.alloc_records.take(rows)
        # A record of no event (event_id -1: a timeline.py Memory counter) has no node name.
        ids = np.asarray(to_numpy(records["event_id"]), dtype=np.int64)
        events = self._trace.events.take(
            array(ids, mask=ids < 0) if (ids < 0).any() else records["event_id"]
        )
        columns = {
            "event_id": records["event_id"],
            "node_name": events["node_name"],
            "allocator": records["allocator"],
            "time_ns": records["time_ns"],
            "bytes": records["bytes"],
        }
        if self.source == "in_use":
            for name in ("address", "requested_bytes", "tf_op", "shape", "dtype", "region"):
                columns[name] = records[name]
        return pa.table(columns)

    def __repr__(self) -> str:
        parts = ", ".join(
            f"{r['allocator']}: {r['peak_bytes']} B" for r in self.peaks.to_pylist()
        )
        return f"<MemoryReplay source={self.source!r} peaks {{{parts}}}>"


def _allocators(trace: Trace, source: str) -> list[str]:
    """The allocator names that ``source`` (records or tensors) of ``trace`` holds, sorted."""
    if source == "in_use":
        table = trace.alloc_records if _reports_in_use(trace) else trace.allocations
    else:
        table = trace.alloc_records if source == "records" else trace.tensors
    column = table["allocator"]
    return sorted(str(a) for a in pc.unique(column.cast(pa.string())).to_pylist())


def replay(
    trace: Trace,
    core: Callable[[], _core.Trace],
    source: str,
    allocator: str | None,
    baseline: str | None,
    step: int | None = None,
) -> MemoryReplay:
    """:meth:`Trace.replay` of ``trace``; ``core`` gives its native core, called once the
    arguments are checked (a stored trace builds it from its tables there). ``step``: replay
    only the events of that step (``events.step_id``) and their tensors and allocation records."""
    if source not in ("records", "tensors", "in_use"):
        raise ValueError(f"source must be 'records', 'tensors' or 'in_use', not {source!r}")
    if baseline not in (None, "snapshot"):
        raise ValueError(f"baseline must be None or 'snapshot', not {baseline!r}")
    if baseline is not None and source != "records":
        raise ValueError("baseline='snapshot' applies to source='records' only")
    if allocator is not None and not isinstance(allocator, str):
        raise TypeError(
            f"allocator must be a str or None, not {type(allocator).__name__} {allocator!r}"
        )
    snapshot = baseline == "snapshot"
    native = core()  # first: a stored trace's tables are checked before they are read
    events: np.ndarray | None = None
    records: np.ndarray | None = None
    if step is not None:
        from . import steps

        step = steps.check_step(step)
        events = steps.event_mask(trace, step)
        records = steps.record_mask(trace, step) if source != "tensors" else None
    if allocator is not None:
        known = _allocators(trace, source)
        if allocator not in known:
            raise KeyError(f"no allocator {allocator!r} in the {source}; allocators: {known}")
    if source == "in_use":
        return MemoryReplay(trace, source, replay_in_use(trace, allocator, events, records))
    if source == "tensors":
        return MemoryReplay(
            trace, source, _core.replay(native, source, allocator, snapshot, True, events)
        )
    capsules = _core.replay(native, source, allocator, snapshot, False, events, records)

    def replay_live() -> Capsules:
        return _core.replay(native, source, allocator, snapshot, True, events, records)[2]

    return MemoryReplay(trace, source, capsules, replay_live)


# ---- source="in_use" ------------------------------------------------------------------------
_IN_USE_PEAKS = pa.schema(
    [
        ("allocator", pa.string()),
        ("peak_bytes", pa.int64()),
        ("peak_time_ns", pa.int64()),
        ("live_tensors", pa.int64()),
        ("n_changes", pa.int64()),
        ("peak_event_id", pa.int64()),
        ("heap_allocated", pa.int64()),
        ("stack_reserved", pa.int64()),
        ("free", pa.int64()),
        ("fragmentation", pa.float64()),
        ("lifetime_peak_bytes", pa.int64()),
    ]
)
_IN_USE_TIMELINE = pa.schema(
    [
        ("allocator", pa.string()),
        ("time_ns", pa.int64()),
        ("delta_bytes", pa.int64()),
        ("bytes_in_use", pa.int64()),
    ]
)
_LIVE = pa.schema([("allocator", pa.string()), ("row", pa.int64())])


def _int64(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """An int64 column as numpy, nulls as 0."""
    return np.asarray(pc.fill_null(column, 0).to_numpy(zero_copy_only=False), dtype=np.int64)


def _reports_in_use(trace: Trace) -> bool:
    """Whether the trace's alloc_records report the allocator's level (XSpace, Chrome trace)
    rather than its AllocatorMemoryUsed (StepStats)."""
    return trace.kind in ("XSpace", "ChromeTrace", "Kineto")


def replay_in_use(
    trace: Trace,
    allocator: str | None,
    event_mask: np.ndarray | None = None,
    record_mask: np.ndarray | None = None,
) -> tuple[pa.Table, pa.Table, pa.Table]:
    """``(timeline, peaks, live)`` of ``source="in_use"``: the level each allocator reported.

    XSpace: each MemoryAllocation / MemoryDeallocation record reports the allocator's
    ``heap_allocated`` and ``stack_reserved`` (a missing one counts 0); the level is their sum.
    Per allocator, over its records in time order (file order for equal times), the peak is
    the largest level, at the last record reaching it (as XProf's memory profile); the
    allocations live then are the allocation records up to the peak whose address no later
    record up to the peak deallocated or allocated again (records without an address are not
    matched); ``lifetime_peak_bytes`` is the largest ``peak_bytes_in_use`` of its records
    (null when none has one). These equal XProf's ``peakStats`` and ``peakBytesUsageLifetime``.

    Chrome trace: Kineto's ``[memory]`` records report ``Total Allocated`` (``heap_allocated``;
    ``stack_reserved`` is null), timeline.py's Memory counters their value; the rest as XSpace.

    StepStats: each AllocatorMemoryUsed reports ``allocator_bytes_in_use`` at its event's end;
    the peak is the largest (the last reaching it); nothing is matched to it (``live_tensors``
    0) and ``lifetime_peak_bytes`` is null.

    ``event_mask`` / ``record_mask`` (one step alone): only the allocation records (XSpace,
    Chrome trace) of ``record_mask``, the AllocatorMemoryUsed (StepStats) of the events of
    ``event_mask``, count.
    """
    xspace = _reports_in_use(trace)
    table = trace.alloc_records if xspace else trace.allocations
    names = np.asarray(table["allocator"].cast(pa.string()).to_numpy(zero_copy_only=False))
    if xspace:
        time_ns = _int64(table["time_ns"])
        try:
            total = pc.add_checked(pc.fill_null(table["heap_allocated"], 0),
                                   pc.fill_null(table["stack_reserved"], 0))
        except pa.ArrowInvalid:
            raise OverflowError(
                "a memory record's heap_allocated + stack_reserved overflows int64"
            ) from None
        level = _int64(total)
        delta = _int64(table["bytes"])
    else:
        ends = trace.events["end_ns"].to_numpy()
        time_ns = np.asarray(ends[_int64(table["event_id"])], dtype=np.int64)
        level = _int64(table["allocator_bytes_in_use"])
        delta = np.zeros(len(level), dtype=np.int64)
    keep = np.ones(len(names), dtype=bool)
    if xspace and record_mask is not None:
        keep = np.asarray(record_mask, dtype=bool)
    elif not xspace and event_mask is not None:
        keep = np.asarray(event_mask, dtype=bool)[_int64(table["event_id"])]
    timelines, peaks, lives = [], [], []
    for name in sorted(set(names[keep].tolist()) if allocator is None else {allocator}):
        rows = np.flatnonzero((names == name) & keep)
        rows = rows[np.argsort(time_ns[rows], kind="stable")]
        if len(rows) == 0:
            continue
        levels = level[rows]
        top = int(levels.max())
        at = int(np.flatnonzero(levels == top)[-1])
        live = _live_rows(table, rows[: at + 1]) if xspace else np.zeros(0, dtype=np.int64)
        peak_row = int(rows[at])
        row = {
            "allocator": name,
            "peak_bytes": top,
            "peak_time_ns": int(time_ns[peak_row]),
            "live_tensors": len(live),
            "n_changes": len(rows),
            "peak_event_id": table["event_id"][peak_row].as_py(),
        }
        if xspace:
            for column in ("heap_allocated", "stack_reserved", "free", "fragmentation"):
                row[column] = table[column][peak_row].as_py()
            lifetime = pc.max(table["peak_bytes_in_use"].take(pa.array(rows))).as_py()
            row["lifetime_peak_bytes"] = lifetime
        peaks.append(row)
        timelines.append(
            pa.table(
                {
                    "allocator": pa.array([name] * len(rows), pa.string()),
                    "time_ns": time_ns[rows],
                    "delta_bytes": delta[rows],
                    "bytes_in_use": levels,
                },
                schema=_IN_USE_TIMELINE,
            )
        )
        lives.append(pa.table({"allocator": [name] * len(live), "row": live}, schema=_LIVE))
    timeline = pa.concat_tables(timelines) if timelines else _IN_USE_TIMELINE.empty_table()
    live_table = pa.concat_tables(lives) if lives else _LIVE.empty_table()
    return timeline, pa.Table.from_pylist(peaks, schema=_IN_USE_PEAKS), live_table


def _live_rows(records: pa.Table, rows: np.ndarray) -> np.ndarray:
    """The rows (of ``rows``, records in replay order up to a peak) of the allocations still
    live at the last: per address, the last record, when it is an allocation; in time order."""
    address = records["address"].take(pa.array(rows))
    has_address = np.asarray(address.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    kept = rows[has_address]
    addresses = np.asarray(address.drop_null().to_numpy(zero_copy_only=False), dtype=np.uint64)
    if len(kept) == 0:
        return np.zeros(0, dtype=np.int64)
    # The last record of each address: a stable sort by address keeps replay order within one.
    order = np.argsort(addresses, kind="stable")
    sorted_addresses = addresses[order]
    last = np.ones(len(order), dtype=bool)
    last[:-1] = sorted_addresses[1:] != sorted_addresses[:-1]
    candidates = np.sort(order[last])  # positions in replay order
    allocation = np.asarray(
        records["is_allocation"].take(pa.array(kept[candidates])).to_numpy(zero_copy_only=False),
        dtype=bool,
    )
    return np.asarray(kept[candidates][allocation], dtype=np.int64)
