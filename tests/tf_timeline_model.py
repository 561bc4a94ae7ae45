"""A faithful pure-Python model of TensorFlow's timeline.py memory analysis.

Reproduces ``Timeline(step_stats).analyze_step_stats(show_memory=True).allocator_maximums``
from tensorflow/python/client/timeline.py, operating on a StepStats protobuf message (the classes
of tests/tfproto.py, or any message with the same field names). Only the parts that feed the
memory analysis are modelled:

* ``_TensorTracker``: create_time, allocator, num_bytes = requested_bytes, and the list of unref
  times (last_unref = max of them). Ref times never influence the memory counters.
* ``_analyze_tensors``: every output of every node of every device block (file order) produces a
  tensor named ``node_name`` (list position 0) or ``f"{node_name}:{i}"``; a later tensor with the
  same name replaces the earlier one (``self._tensors[name] = tensor``). It gets
  add_ref(start) / add_unref(end) with start = all_start_micros, end = start + all_end_rel_micros.
* ``_show_compute``: runs after ``_analyze_tensors`` over all devices; skips devices whose name
  contains '/stream:' or '/memcpy' and nodes named 'RecvTensor'; parses the timeline label with
  ``re.match(r"(.*) = (.*)\\((.*)\\)", label)`` and splits the inputs on ', ' (when non-empty); an
  input that is not a known tensor is cut at ``rfind('/_')`` when that index is > 0; if the name
  is (then) known: add_ref(start), add_unref(end - 1).
* ``_show_memory_counters``: per allocator, a list of (create_time, num_bytes, name) and
  (last_unref, -num_bytes, name); ``list.sort()`` then a stable ``sorted`` by time; running
  total; ``discard`` the name on negative bytes, else ``add``; the AllocationMaximum (initially
  timestamp 0, 0 bytes, empty set) is replaced when the total is strictly greater.

``op_time="schedule"`` (the default of analyze_step_stats) is the only mode modelled: the step stats
are used unchanged.

For traces written with nanosecond fields, ``micros_from_nanos`` derives the micro fields the way
TensorFlow writes them (all_start_micros = all_start_nanos / 1000 and the micro end
(all_start_nanos + all_end_rel_nanos) / 1000 - all_start_micros, C++ integer division truncating
toward zero), which is also the tracecore contract for source="tensors".

This module deliberately does not import tracecore.
"""

from __future__ import annotations

import copy
import re
from collections import namedtuple
from dataclasses import dataclass, field

AllocationMaximum = namedtuple("AllocationMaximum", ("timestamp", "num_bytes", "tensors"))

_LABEL_RE = re.compile(r"(.*) = (.*)\((.*)\)")


def trunc_div(a: int, b: int) -> int:
    """C/C++ integer division (truncation toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


@dataclass
class TensorTracker:
    """timeline.py's _TensorTracker, plus provenance (which NodeExecStats produced it)."""

    name: str
    object_id: int
    create_time: int
    allocator: str
    num_bytes: int
    ref_times: list = field(default_factory=list)
    unref_times: list = field(default_factory=list)
    # provenance (not in timeline.py): global NodeExecStats index in file order, output position
    event_index: int = -1
    output_index: int = -1
    node_name: str = ""
    output: object = None  # the NodeOutput message

    @property
    def last_unref(self) -> int:
        return max(self.unref_times)

    def add_ref(self, timestamp: int) -> None:
        self.ref_times.append(timestamp)

    def add_unref(self, timestamp: int) -> None:
        self.unref_times.append(timestamp)


def parse_op_label(label: str):
    """timeline.py's Timeline._parse_op_label."""
    match = _LABEL_RE.match(label)
    if match is None:
        return "unknown", "unknown", []
    nn, op, inputs = match.groups()
    inputs = inputs.split(", ") if inputs else []
    return nn, op, inputs


def is_gputrace_device(device_name: str) -> bool:
    return "/stream:" in device_name or "/memcpy" in device_name


def as_step_stats(msg):
    """A RunMetadata gives its .step_stats; a StepStats is returned as is."""
    if msg.DESCRIPTOR.name == "RunMetadata":
        return msg.step_stats
    return msg


def micros_from_nanos(step_stats):
    """A copy whose micro fields are derived from the nanosecond ones where all_start_nanos != 0.

    (Exactly as TensorFlow writes them: truncating integer division; tracecore's contract:
    start_us = start_ns / 1000, end_us = end_ns / 1000 with end_ns = all_start_nanos +
    all_end_rel_nanos.)
    """
    out = copy.deepcopy(step_stats)
    for dev in out.dev_stats:
        for ns in dev.node_stats:
            if ns.all_start_nanos != 0:
                start_us = trunc_div(ns.all_start_nanos, 1000)
                end_us = trunc_div(ns.all_start_nanos + ns.all_end_rel_nanos, 1000)
                ns.all_start_micros = start_us
                ns.all_end_rel_micros = end_us - start_us
    return out


class Timeline:
    """The memory-relevant part of timeline.py's Timeline (op_time='schedule')."""

    def __init__(self, step_stats):
        self._step_stats = as_step_stats(step_stats)
        self._tensors: dict[str, TensorTracker] = {}
        self._allocator_maximums: dict[str, AllocationMaximum] = {}
        self._counters: dict[str, list] = {}

    # -- _produce_tensor ----------------------------------------------------------------------
    def _produce_tensor(self, name, timestamp, allocator, num_bytes) -> TensorTracker:
        object_id = len(self._tensors)
        tensor = TensorTracker(name, object_id, timestamp, allocator, num_bytes)
        self._tensors[name] = tensor
        return tensor

    # -- _analyze_tensors ---------------------------------------------------------------------
    def _analyze_tensors(self) -> None:
        event_index = 0
        for dev_stats in self._step_stats.dev_stats:
            for node_stats in dev_stats.node_stats:
                node_name = node_stats.node_name
                start_time = node_stats.all_start_micros
                end_time = node_stats.all_start_micros + node_stats.all_end_rel_micros
                for index, output in enumerate(node_stats.output):
                    output_name = f"{node_name}:{index}" if index else node_name
                    allocation = output.tensor_description.allocation_description
                    num_bytes = allocation.requested_bytes
                    allocator_name = allocation.allocator_name
                    tensor = self._produce_tensor(
                        output_name, start_time, allocator_name, num_bytes
                    )
                    tensor.event_index = event_index
                    tensor.output_index = index
                    tensor.node_name = node_name
                    tensor.output = output
                    tensor.add_ref(start_time)
                    tensor.add_unref(end_time)
                event_index += 1

    # -- _show_compute (input handling only) --------------------------------------------------
    def _show_compute(self) -> None:
        for dev_stats in self._step_stats.dev_stats:
            device_name = dev_stats.device
            is_gputrace = is_gputrace_device(device_name)
            for node_stats in dev_stats.node_stats:
                start_time = node_stats.all_start_micros
                end_time = node_stats.all_start_micros + node_stats.all_end_rel_micros
                if is_gputrace or node_stats.node_name == "RecvTensor":
                    continue
                _, _, inputs = parse_op_label(node_stats.timeline_label)
                for input_name in inputs:
                    if input_name not in self._tensors:
                        index = input_name.rfind("/_")
                        if index > 0:
                            input_name = input_name[:index]
                    if input_name in self._tensors:
                        tensor = self._tensors[input_name]
                        tensor.add_ref(start_time)
                        tensor.add_unref(end_time - 1)

    # -- _show_memory_counters ----------------------------------------------------------------
    def _show_memory_counters(self) -> None:
        allocations: dict[str, list] = {}
        for name in self._tensors:
            tensor = self._tensors[name]
            allocator = tensor.allocator
            if allocator not in allocations:
                allocations[allocator] = []
            num_bytes = tensor.num_bytes
            allocations[allocator].append((tensor.create_time, num_bytes, name))
            allocations[allocator].append((tensor.last_unref, -num_bytes, name))

        alloc_maxes = {}
        counters = {}
        for allocator in allocations:
            alloc_list = allocations[allocator]
            alloc_list.sort()
            total_bytes = 0
            alloc_tensor_set = set()
            alloc_maxes[allocator] = AllocationMaximum(timestamp=0, num_bytes=0, tensors=set())
            series = []
            for time, num_bytes, name in sorted(alloc_list, key=lambda allocation: allocation[0]):
                total_bytes += num_bytes
                if num_bytes < 0:
                    alloc_tensor_set.discard(name)
                else:
                    alloc_tensor_set.add(name)
                if total_bytes > alloc_maxes[allocator].num_bytes:
                    alloc_maxes[allocator] = AllocationMaximum(
                        timestamp=time,
                        num_bytes=total_bytes,
                        tensors=copy.deepcopy(alloc_tensor_set),
                    )
                # emit_counter("Memory", allocator, pid, time, allocator, total_bytes)
                series.append((time, num_bytes, total_bytes, name))
            counters[allocator] = series
        self._allocator_maximums = alloc_maxes
        self._counters = counters

    def analyze_step_stats(self):
        self._analyze_tensors()
        self._show_compute()
        self._show_memory_counters()
        return self

    @property
    def allocator_maximums(self) -> dict[str, AllocationMaximum]:
        return self._allocator_maximums

    @property
    def tensors(self) -> dict[str, TensorTracker]:
        return self._tensors

    @property
    def counters(self) -> dict[str, list]:
        """allocator -> [(time_us, delta_bytes, total_after, tensor_name)] in processing order."""
        return self._counters


def analyze(msg, *, from_nanos: bool = False) -> Timeline:
    """Run the model on a StepStats or RunMetadata message.

    from_nanos=True first derives the micro fields from the nanosecond ones (micros_from_nanos).
    """
    ss = as_step_stats(msg)
    if from_nanos:
        ss = micros_from_nanos(ss)
    return Timeline(ss).analyze_step_stats()


def allocator_maximums(msg, *, from_nanos: bool = False) -> dict[str, tuple[int, int, set]]:
    """{allocator: (num_bytes, timestamp_us, set_of_tensor_names)} as timeline.py reports it."""
    tl = analyze(msg, from_nanos=from_nanos)
    return {
        a: (m.num_bytes, m.timestamp, set(m.tensors)) for a, m in tl.allocator_maximums.items()
    }


def load_message(path: str):
    """Parse a seed text dump with protobuf's text_format (StepStats or RunMetadata)."""
    from google.protobuf import text_format

    import tfproto

    with open(path, encoding="utf-8") as f:
        text = f.read()
    head = text.lstrip()
    cls = tfproto.RunMetadata if head.startswith("step_stats") else tfproto.StepStats
    msg = cls()
    text_format.Parse(text, msg)
    return msg


if __name__ == "__main__":  # pragma: no cover - manual check against the issue's figures
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)
    for seed in ("seed000_stepstats.pbtxt", "seed001_runmetadata.pbtxt"):
        m = load_message(os.path.join(here, "data", seed))
        for alloc, (nbytes, ts, names) in sorted(allocator_maximums(m).items()):
            print(seed, repr(alloc), nbytes, ts, len(names))
