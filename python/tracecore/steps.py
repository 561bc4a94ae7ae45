"""Steps inside one trace: ``events.step_id``, :meth:`Trace.step_times` and the masks that make
:meth:`Trace.replay` replay one step alone.

Where ``step_id`` comes from (filled by the native core at the open, kept by every export):

* StepStats / RunMetadata: a dump concatenating the StepStats of many steps (as a training loop
  appends them, or ``bench/make_trace.py`` builds) repeats the same device blocks step after
  step. The blocks are read in file order; a block whose device already has a block in the
  current step starts the next step, numbered 0, 1, ... Every event of a block gets its step.
* XSpace: the event's ``group_id`` / ``step_num`` / ``iter_num`` stat (null when it has none).
* Chrome trace (Kineto): the ``N`` of the ``ProfilerStep#N`` event of the same pid the event
  starts in; an event left without one that a flow (``ac2g``) reaches from an event with a step
  takes that step; null otherwise. Without ProfilerStep events the column is all null.

A trace whose ``step_id`` is all null is one step, 0, spanning the whole trace.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

if TYPE_CHECKING:
    from .trace import Trace

STEP_TIMES_SCHEMA = pa.schema(
    [
        ("step", pa.int64()),
        ("start_ns", pa.int64()),
        ("end_ns", pa.int64()),
        ("duration_ns", pa.int64()),
    ]
)


def _events(trace: Trace) -> pa.Table:
    return trace.table("events")


def has_steps(trace: Trace) -> bool:
    """Whether any event has a ``step_id``."""
    steps = _events(trace)["step_id"]
    return bool(len(steps) > steps.null_count)


def step_spans(trace: Trace) -> pa.Table:
    """``step, start_ns, end_ns`` of every step (:func:`step_times` without the duration, which
    may not fit int64: what the exports draw)."""
    return step_times(trace, durations=False)


def step_times(trace: Trace, *, durations: bool = True) -> pa.Table:
    """``step, start_ns, end_ns, duration_ns``: one row per step, by step. A step spans from
    the earliest start to the latest end of its events (an event ending before it starts
    counts as ending at its start). Events without a step are left out; when no event has
    one, the trace is one step 0 spanning every event. No events: no rows.

    Raises:
        OverflowError: a step's duration does not fit int64 (its events span more than
            2^63 - 1 ns), naming the step.
    """
    trace._ensure_core()  # a stored trace's tables are checked before they are read
    events = _events(trace)
    schema = STEP_TIMES_SCHEMA if durations else STEP_TIMES_SCHEMA.remove(3)
    if events.num_rows == 0:
        return schema.empty_table()
    start = events["start_ns"]
    end = pc.max_element_wise(events["end_ns"], start)
    if not has_steps(trace):
        step = pa.array(np.zeros(events.num_rows, dtype=np.int64))
    else:
        step = events["step_id"]
    grouped = (
        pa.table({"step": step, "start_ns": start, "end_ns": end})
        .filter(pc.is_valid(step))
        .group_by("step")
        .aggregate([("start_ns", "min"), ("end_ns", "max")])
        .sort_by("step")
    )
    step_column = grouped["step"].cast(pa.int64())
    first = grouped["start_ns_min"].cast(pa.int64())
    last = grouped["end_ns_max"].cast(pa.int64())
    if not durations:
        return pa.table([step_column, first, last], schema=schema)
    try:
        duration = pc.subtract_checked(last, first)
    except pa.ArrowInvalid:
        for step, lo, hi in zip(
            step_column.to_pylist(), first.to_pylist(), last.to_pylist(), strict=True
        ):
            if hi - lo > 2**63 - 1:
                raise OverflowError(
                    f"step {step}: duration_ns (end_ns {hi} - start_ns {lo}) overflows int64"
                ) from None
        raise
    return pa.table([step_column, first, last, duration], schema=schema)


def check_step(step: object) -> int:
    if isinstance(step, bool) or not isinstance(step, (int, np.integer)):
        raise TypeError(f"step must be an int or None, not {type(step).__name__} {step!r}")
    return int(step)


def event_mask(trace: Trace, step: int) -> np.ndarray | None:
    """One byte per event, 1 for the events of ``step``; None when the trace has no step
    information and ``step`` is 0 (every event). Raises KeyError for a step the trace lacks."""
    trace._ensure_core()
    events = _events(trace)
    if not has_steps(trace):
        if step != 0:
            raise KeyError(f"no step {step}: the trace has no step information (one step, 0)")
        return None
    steps = events["step_id"]
    mask = pc.fill_null(pc.equal(steps, pa.scalar(step, pa.int64())), False)
    out = np.asarray(mask.to_numpy(zero_copy_only=False), dtype=np.uint8)
    if not out.any():
        known = step_times(trace)["step"].to_pylist()
        shown = known if len(known) <= 10 else [*known[:5], "...", *known[-5:]]
        raise KeyError(f"no step {step}; steps: {shown}")
    return out


def record_steps(trace: Trace) -> np.ndarray:
    """The step of every allocation record (-1 for none): its own ``step_id`` (XSpace), else
    its event's, else (a record of no event: a timeline.py Memory counter) the first step whose
    span holds its time."""
    trace._ensure_core()
    records = trace.alloc_records
    n = records.num_rows
    out = np.full(n, -1, dtype=np.int64)
    if n == 0:
        return out
    own = records["step_id"] if "step_id" in records.column_names else None
    if own is not None and own.null_count < n:
        valid = np.asarray(own.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        out[valid] = np.asarray(pc.fill_null(own, -1).to_numpy(zero_copy_only=False))[valid]
    event_ids = np.asarray(records["event_id"].to_numpy(zero_copy_only=False), dtype=np.int64)
    steps = _events(trace)["step_id"]
    event_steps = np.asarray(pc.fill_null(steps, -1).to_numpy(zero_copy_only=False), dtype=np.int64)
    todo = (out < 0) & (event_ids >= 0)
    out[todo] = event_steps[event_ids[todo]]
    orphan = np.flatnonzero((out < 0) & (event_ids < 0))
    if len(orphan):
        spans = step_spans(trace)
        times = np.asarray(records["time_ns"].to_numpy(zero_copy_only=False), dtype=np.int64)
        for step, lo, hi in zip(
            spans["step"].to_pylist(), spans["start_ns"].to_pylist(), spans["end_ns"].to_pylist(),
            strict=True,
        ):
            hit = orphan[(out[orphan] < 0) & (times[orphan] >= lo) & (times[orphan] <= hi)]
            out[hit] = step
    return out


def record_mask(trace: Trace, step: int) -> np.ndarray | None:
    """One byte per allocation record, 1 for those of ``step`` (:func:`record_steps`); None
    when the trace has no step information (every record is step 0's)."""
    if not has_steps(trace):
        return None
    return np.asarray(record_steps(trace) == step, dtype=np.uint8)
