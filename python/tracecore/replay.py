"""Memory replays: what each allocator held over time, and at its peak."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from . import _core
from ._arrow import scalar, table_from_capsules

if TYPE_CHECKING:
    from .trace import Trace

# An (arrow_schema, arrow_array) pair of PyCapsules, as the native core exports a table.
Capsules = tuple[object, object]


class MemoryReplay:
    """Result of :meth:`tracecore.Trace.replay`.

    Attributes:
        source: ``"records"`` (allocation records replayed per allocator) or ``"tensors"``
            (TensorFlow timeline.py's tensor-lifetime model).
        timeline: ``allocator, time_ns, delta_bytes, bytes_in_use``: one row per distinct
            timestamp per allocator, the level after every change at that time.
        peaks: ``allocator, peak_bytes, peak_time_ns, live_tensors, n_changes``: one row per
            allocator.
    """

    def __init__(
        self,
        trace: Trace,
        source: str,
        capsules: tuple[Capsules, Capsules, Capsules],
        replay_live: Callable[[], Capsules] | None = None,
    ) -> None:
        timeline, peaks, live = capsules
        self._trace = trace
        self.source = source
        self.timeline: pa.Table = table_from_capsules(timeline)
        self.peaks: pa.Table = table_from_capsules(peaks)
        # records: what was live at each peak is replayed again only when asked for
        self._live = table_from_capsules(live) if replay_live is None else None
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
        events = self._trace.events.take(records["event_id"])
        return pa.table(
            {
                "event_id": records["event_id"],
                "node_name": events["node_name"],
                "allocator": records["allocator"],
                "time_ns": records["time_ns"],
                "bytes": records["bytes"],
            }
        )

    def __repr__(self) -> str:
        parts = ", ".join(
            f"{r['allocator']}: {r['peak_bytes']} B" for r in self.peaks.to_pylist()
        )
        return f"<MemoryReplay source={self.source!r} peaks {{{parts}}}>"


def _allocators(trace: Trace, source: str) -> list[str]:
    """The allocator names that ``source`` (records or tensors) of ``trace`` holds, sorted."""
    column = (trace.alloc_records if source == "records" else trace.tensors)["allocator"]
    return sorted(str(a) for a in pc.unique(column.cast(pa.string())).to_pylist())


def replay(
    trace: Trace,
    core: Callable[[], _core.Trace],
    source: str,
    allocator: str | None,
    baseline: str | None,
) -> MemoryReplay:
    """:meth:`Trace.replay` of ``trace``; ``core`` gives its native core, called once the
    arguments are checked (a stored trace re-parses its source there)."""
    if source not in ("records", "tensors"):
        raise ValueError(f"source must be 'records' or 'tensors', not {source!r}")
    if baseline not in (None, "snapshot"):
        raise ValueError(f"baseline must be None or 'snapshot', not {baseline!r}")
    if baseline is not None and source != "records":
        raise ValueError("baseline='snapshot' applies to source='records' only")
    if allocator is not None and not isinstance(allocator, str):
        raise TypeError(
            f"allocator must be a str or None, not {type(allocator).__name__} {allocator!r}"
        )
    snapshot = baseline == "snapshot"
    if allocator is not None:
        known = _allocators(trace, source)
        if allocator not in known:
            raise KeyError(f"no allocator {allocator!r} in the {source}; allocators: {known}")
    native = core()
    if source == "tensors":
        return MemoryReplay(trace, source, _core.replay(native, source, allocator, snapshot))
    capsules = _core.replay(native, source, allocator, snapshot, False)

    def replay_live() -> Capsules:
        return _core.replay(native, source, allocator, snapshot, True)[2]

    return MemoryReplay(trace, source, capsules, replay_live)
