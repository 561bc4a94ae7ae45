"""Perfetto's native protobuf trace of a trace (``Trace.to_perfetto``), written by the C++
core (``_core.write_perfetto``) from the tables.

The file is a ``perfetto.protos.Trace``: a sequence of ``TracePacket`` messages on one packet
sequence (``trusted_packet_sequence_id`` 1, the first packet flagged
``SEQ_INCREMENTAL_STATE_CLEARED``). Tracks, as :func:`tracecore.chrome.to_chrome_trace` lays
out its processes and threads:

- one process track (``TrackDescriptor`` with a ``ProcessDescriptor``, ``pid`` = position + 1)
  per device name, in order of first appearance;
- under it, one child track (``parent_uuid``) per line (an XSpace line, a Chrome track; all
  the blocks of a StepStats device are one line) and per TensorFlow timeline.py lane of that
  line: events that overlap without nesting go to separate lanes, so that each track's slices
  never overlap. A track is named after its line (``ops`` without one), ``" (k)"`` appended for
  lane k > 0;
- one slice per event: a ``TYPE_SLICE_BEGIN`` packet at ``start_ns`` named by the event's
  ``node_name`` (``name_iid``, interned in ``InternedData.event_names`` on the packet that
  first uses it; iids are the names' string ids + 1) with its ``op`` as category (interned in
  ``event_categories``), and a ``TYPE_SLICE_END`` at ``end_ns`` (``max(end_ns, start_ns)``);
- an ``Allocators`` process with one counter track (``CounterDescriptor``, unit
  ``UNIT_SIZE_BYTES``) per allocator: ``bytes_in_use`` of ``replay(source="records")``, one
  ``TYPE_COUNTER`` packet per timeline row;
- a ``Steps`` process: one slice ``step N`` per :meth:`step_times` row, on a ``steps`` track
  (``steps (k)`` lanes for steps that overlap, as XSpace step groups can).

Timestamps are ns in the packets' default clock; a negative time is written as 0. Track uuids
are ``(pid + 1) << 32 | (tid + 1)`` (``tid + 1`` = 0: the process track itself)."""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import _core
from .outputs import checked_output_file, naming

if TYPE_CHECKING:
    from .trace import Trace

COUNTER_GROUP = "Allocators"


def _int64(column: Any) -> np.ndarray:
    return np.ascontiguousarray(column.to_numpy(zero_copy_only=False), dtype=np.int64)


def memory_series(
    trace: Trace, *, enabled: bool = True
) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """The record replay's ``bytes_in_use`` as the C++ writers take it: the allocator names,
    each row's index into them (int32), ``time_ns`` and ``bytes_in_use`` (int64), in the
    replay's row order; empty arrays without records or when not ``enabled``."""
    timeline = trace.replay(source="records").timeline if enabled else None
    if timeline is None or not timeline.num_rows:
        return [], np.zeros(0, np.int32), np.zeros(0, np.int64), np.zeros(0, np.int64)
    allocators = pc.fill_null(timeline["allocator"].cast(pa.string()).combine_chunks(), "")
    encoded = pc.dictionary_encode(allocators)
    names = [str(n) for n in encoded.dictionary.to_pylist()]
    series = np.ascontiguousarray(encoded.indices.to_numpy(), dtype=np.int32)
    return names, series, _int64(timeline["time_ns"]), _int64(timeline["bytes_in_use"])


def step_columns(trace: Trace, *columns: str, enabled: bool = True) -> list[np.ndarray]:
    """``step`` and ``columns`` (of ``start_ns``, ``end_ns``) of the trace's steps
    (:func:`tracecore.steps.step_spans`: no duration, which may overflow) as int64 arrays (empty
    without steps or when not ``enabled``)."""
    from .steps import step_spans

    spans = step_spans(trace) if enabled else None
    if spans is None or not spans.num_rows:
        return [np.zeros(0, np.int64) for _ in range(1 + len(columns))]
    return [_int64(spans[c]) for c in ("step", *columns)]


def to_perfetto(
    trace: Trace,
    path: str | os.PathLike[str],
    *,
    show_memory: bool = True,
    show_steps: bool = True,
) -> Path:
    """Writes ``trace`` as a Perfetto protobuf trace (see the module's description) to
    ``path``, through a temporary file renamed into place at the end. The writing runs in
    C++ with the GIL released."""
    out = checked_output_file(path)
    names, series, times, values = memory_series(trace, enabled=show_memory)
    steps, starts, ends = step_columns(trace, "start_ns", "end_ns", enabled=show_steps)
    core = trace._ensure_core()
    tmp = out.with_name(f".{out.name}.{secrets.token_hex(8)}.tmp")
    try:
        with naming(out):
            _core.write_perfetto(
                core, os.fsencode(tmp), COUNTER_GROUP, names, series, times, values, steps, starts,
                ends,
            )
            os.replace(tmp, out)
    except BaseException:
        if tmp.exists():
            tmp.unlink()
        raise
    return out
