"""The XSpace oracle (tests/xspace_oracle.py) against XProf's own conversions of the real samples.

tests/data/xspace/ holds three real XSpaces with XProf 2.24.2's memory_profile and trace_viewer
JSON beside them. Memory: every memory record, the peak, its time, the allocations live then
and the lifetime peak equal XProf's figures. Timeline: per line, the events equal XProf's trace
viewer events once XProf's own additions and removals (listed in XPROF_TRACE_VIEWER_DIFFERENCES)
are accounted for, and every stat XProf shows as an event argument has the oracle's value.
Plus the oracle's rules on hand-made messages (time rounding and overflow, op, step, stats).
"""

from __future__ import annotations

import collections
import gzip
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import xspace_oracle as xo
import xspace_proto as xp

DATA = Path(__file__).parent / "data" / "xspace"
SAMPLES = ["tf_keras_mlp_fit", "keras_tensorboard_cb_mlp", "jax_mlp2_tanh"]
INT64_MAX = 2**63 - 1

# XProf's trace viewer against the raw XSpace (xprof 2.24.2, seen on these samples):
#  - MemoryAllocation / MemoryDeallocation events are left out (shown by the memory profile);
#  - tf.data producer/consumer events (PrefetchProduce/Consume, ParallelMapProduce/Consume) are
#    left out (turned into flow arrows between the iterator events);
#  - a ThreadpoolListener::Region event is added for each StartRegion/StopRegion pair;
#  - an event is named by its metadata's display_name when it has one (TF ops by their type,
#    tf.data iterators by their short name);
#  - a step marker (an event with both XProf's root marker stat _r and a step_num) is renamed
#    "<name> <step_num>" (JAX's "train" events: "train 0", "train 1", ...);
#  - ts/dur are microseconds as doubles (picoseconds / 1e6);
#  - internal stats (_c, _ct, _p, _pt, _r, _src: flow/context ids) become flows, not arguments,
#    and XProf's grouping adds a group_id argument (raw files carry no group_id stat).
XPROF_DROPPED = {"MemoryAllocation", "MemoryDeallocation", "PrefetchProduce", "PrefetchConsume",
                 "ParallelMapProduce", "ParallelMapConsume"}
XPROF_ADDED = {"ThreadpoolListener::Region"}
XPROF_TRACE_VIEWER_DIFFERENCES = (XPROF_DROPPED, XPROF_ADDED)

# TensorFlow's DataTypeString names (XProf's memory profile) of the DataType names the oracle
# gives, for the types in the samples.
XPROF_DTYPE = {"DT_FLOAT": "float", "DT_INT64": "int64", "DT_INT32": "int32",
               "DT_DOUBLE": "double", "DT_INVALID": "INVALID"}


def load(name: str):
    return xp.XSpace.FromString((DATA / f"{name}.xplane.pb").read_bytes())


def load_json(name: str):
    return json.loads(gzip.decompress((DATA / name).read_bytes()))


@pytest.fixture(scope="module", params=SAMPLES)
def sample(request):
    return request.param, xo.expected_xspace(load(request.param))


# ---- memory: XProf's memory_profile ---------------------------------------------------------
def xprof_snapshot_key(s) -> tuple:
    a, m = s["aggregationStats"], s["activityMetadata"]
    return (int(s["timeOffsetPs"]), m["memoryActivity"], int(m["address"]),
            int(a["heapAllocatedBytes"]), int(a["stackReservedBytes"]), int(a["freeMemoryBytes"]),
            float(a["fragmentation"]), int(a["peakBytesInUse"]), int(m["requestedBytes"]),
            int(m["allocationBytes"]), m["tfOpName"], m["regionType"], m["dataType"],
            m["tensorShape"])


def oracle_snapshot_keys(records: list[xo.AllocRecord]) -> list[tuple]:
    """The oracle's records as XProf's snapshots: XProf copies an allocation's op, region,
    dtype and shape onto the next deallocation of its address (in time order)."""
    keys = []
    last_alloc: dict[int, xo.AllocRecord] = {}
    for r in sorted(records, key=lambda r: r.offset_ps):
        meta = r
        if r.is_allocation:
            last_alloc.setdefault(r.address, r)
        elif r.address in last_alloc:
            meta = last_alloc.pop(r.address)
        shape = "" if meta.shape is None else "[" + ",".join(map(str, meta.shape)) + "]"
        keys.append((
            r.offset_ps, "ALLOCATION" if r.is_allocation else "DEALLOCATION", r.address,
            r.heap_allocated, r.stack_reserved, r.free, r.fragmentation, r.peak_bytes_in_use,
            r.requested_bytes, r.allocation_bytes, meta.tf_op or "", meta.region or "",
            XPROF_DTYPE[meta.dtype], shape))
    return keys


def test_memory_matches_xprof_memory_profile(sample):
    name, t = sample
    profile = load_json(f"{name}.memory_profile.json.gz")
    per_allocator = profile["memoryProfilePerAllocator"]
    assert sorted(per_allocator) == sorted(t.peaks)
    assert profile["memoryIds"] == sorted(t.peaks)
    for allocator, xprof in per_allocator.items():
        records = [r for r in t.alloc_records if r.allocator == allocator]
        # Every record, as XProf's timeline holds them all (fewer than its 1000-snapshot cap).
        timeline = xprof["sampledTimelineSnapshots"]
        assert len(timeline) == len(records)
        assert sorted(map(xprof_snapshot_key, timeline)) == sorted(oracle_snapshot_keys(records))

        peak = t.peaks[allocator]
        summary = xprof["profileSummary"]
        stats = summary["peakStats"]
        assert int(summary["peakBytesUsageLifetime"]) == peak.lifetime_peak_bytes
        assert int(stats["peakBytesInUse"]) == peak.peak_bytes
        assert int(stats["heapAllocatedBytes"]) == peak.peak_record.heap_allocated
        assert int(stats["stackReservedBytes"]) == peak.peak_record.stack_reserved
        assert int(stats["freeMemoryBytes"]) == peak.peak_record.free
        assert float(stats["fragmentation"]) == peak.peak_record.fragmentation
        assert int(summary["peakStatsTimePs"]) == peak.peak_record.offset_ps
        assert int(summary["memoryCapacity"]) == peak.peak_bytes + peak.peak_record.free

        # Allocations live at the peak: XProf's active allocations index its
        # memoryProfileSnapshots; nothing is left unmapped (no special allocations).
        assert xprof["specialAllocations"] == []
        snapshots = xprof["memoryProfileSnapshots"]
        active = [snapshots[int(a["snapshotIndex"])] for a in xprof["activeAllocations"]
                  for _ in range(int(a["numOccurrences"]))]
        assert sorted((int(s["timeOffsetPs"]), int(s["activityMetadata"]["address"]))
                      for s in active) == [(r.offset_ps, r.address) for r in peak.live]
        assert sum(r.allocation_bytes for r in peak.live) == peak.peak_record.heap_allocated


def test_memory_records_of_the_tf_sample():
    t = xo.expected_xspace(load("tf_keras_mlp_fit"))
    assert len(t.alloc_records) == 48
    assert {r.allocator for r in t.alloc_records} == {"mklcpu"}
    assert sum(r.is_allocation for r in t.alloc_records) == 24
    assert all(r.bytes == (524288 if r.is_allocation else -524288) for r in t.alloc_records)
    first = min(t.alloc_records, key=lambda r: r.time_ns)
    assert (first.time_ns, first.heap_allocated, first.shape, first.dtype, first.region) == (
        7916 + 31538270, 524288, (128, 1024), "DT_FLOAT", "output")
    assert first.tf_op.endswith("stateless_random_uniform/StatelessRandomUniformV2")
    # Raw TF files carry no group_id: the step column stays empty for memory records.
    assert {r.step for r in t.alloc_records} == {None}


def test_the_jax_sample_has_no_memory_records():
    profile = load_json("jax_mlp2_tanh.memory_profile.json.gz")
    assert profile["memoryProfilePerAllocator"] == {}
    t = xo.expected_xspace(load("jax_mlp2_tanh"))
    assert t.alloc_records == [] and t.peaks == {}


# ---- timeline: XProf's trace viewer ----------------------------------------------------------
def trace_events_by_line(trace) -> dict[tuple[str, str], list[dict]]:
    events = trace["traceEvents"]
    process = {e["pid"]: e["args"]["name"] for e in events
               if e.get("ph") == "M" and e["name"] == "process_name"}
    thread = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
              if e.get("ph") == "M" and e["name"] == "thread_name"}
    by_line: dict[tuple[str, str], list[dict]] = collections.defaultdict(list)
    for e in events:
        if e.get("ph") in ("X", "i"):
            by_line[(process[e["pid"]], thread[(e["pid"], e["tid"])])].append(e)
    return by_line


def xprof_name(e: xo.EventRow) -> str:
    step = xo.find(e.stats, "step_num")
    if step is not None and xo.find(e.stats, "_r") is not None:
        return f"{e.node_name} {step.value}"
    return e.display_name or e.node_name


def stat_as_xprof_arg(s: xo.Stat) -> str | None:
    if s.kind in ("int64", "uint64", "str", "ref"):
        return str(s.value)
    return None


@pytest.mark.parametrize("trace_file", [f"{n}.trace.json.gz" for n in SAMPLES])
def test_timeline_matches_xprof_trace_viewer(trace_file):
    name = trace_file.split(".")[0]
    t = xo.expected_xspace(load(name))
    by_line = trace_events_by_line(load_json(trace_file))
    lines = {(r.plane, r.line): r for r in t.lines}
    # Every line with events is in the trace, and the trace has no other line.
    assert set(by_line) == {k for k, r in lines.items() if r.n_events}
    checked_args = 0
    for key, row in lines.items():
        ours = collections.Counter()
        stats_of = {}
        line_ts_ps = row.timestamp_ns * 1000
        for e in t.events:
            if e.line_index != row.line_index or e.node_name in XPROF_DROPPED:
                continue
            k = (xprof_name(e), line_ts_ps + e.offset_ps, e.duration_ps)
            ours[k] += 1
            stats_of[k] = e.stats
        theirs = collections.Counter()
        for e in by_line.get(key, []):
            if e["name"] in XPROF_ADDED:
                continue
            k = (e["name"], round(e["ts"] * 1e6), round(e.get("dur", 0) * 1e6))
            theirs[k] += 1
            for arg, value in e.get("args", {}).items():
                # A stat repeated on an event shows its last value (JAX's _src).
                same = [s for s in stats_of.get(k, ()) if s.name == arg]
                ours_stat = same[-1] if same else None
                if ours_stat is not None and stat_as_xprof_arg(ours_stat) is not None:
                    assert stat_as_xprof_arg(ours_stat) == value, (key, k, arg)
                    checked_args += 1
        assert ours == theirs, key
        # Event count and duration sums per line (issue 21's acceptance figures).
        assert sum(ours.values()) == sum(theirs.values())
        assert sum(k[2] * n for k, n in ours.items()) == sum(k[2] * n for k, n in theirs.items())
    assert checked_args > 0


def test_timeline_matches_jax_own_trace():
    # JAX's own export: every event of every line, named by metadata name, no additions; an
    # instant is written as a complete event of 1 ps (dur 1e-06 us).
    t = xo.expected_xspace(load("jax_mlp2_tanh"))
    by_line = trace_events_by_line(load_json("jax_mlp2_tanh.jax_trace.json.gz"))
    for row in t.lines:
        ours = collections.Counter(
            (e.node_name, row.timestamp_ns * 1000 + e.offset_ps, e.duration_ps or 1)
            for e in t.events if e.line_index == row.line_index)
        theirs = collections.Counter(
            (e["name"], round(e["ts"] * 1e6), round(e.get("dur", 0) * 1e6))
            for e in by_line[(row.plane, row.line)])
        assert ours == theirs


def test_sample_shapes(sample):
    _, t = sample
    assert t.hostnames == ["vm"] and t.errors == [] and t.warnings == []
    assert t.aggregates == []
    planes = {r.plane for r in t.plane_stats}
    assert "Task Environment" in planes
    start = next(r.stat for r in t.plane_stats if r.stat.name == "profile_start_time")
    assert start.kind == "uint64" and start.value > 1_700_000_000 * 10**9
    assert all(r.kind == "host_thread" for r in t.lines)
    assert all(e.end_ns >= e.start_ns for e in t.events)


def test_ops_and_steps_of_the_samples():
    tf = xo.expected_xspace(load("tf_keras_mlp_fit"))
    # TF writes each op's type as its metadata's display_name: the op rule finds the same.
    for e in tf.events:
        if e.display_name and not e.display_name.startswith("Iterator::"):
            assert e.op == e.display_name, e.node_name
        elif e.op is not None:  # a TF op without display_name (_send_range_0:_Send)
            assert not e.display_name and e.node_name.endswith(":" + e.op)
    assert sum(e.op == "ReadVariableOp" for e in tf.events) == 114
    jax = xo.expected_xspace(load("jax_mlp2_tanh"))
    xla = [e for e in jax.events if xo.find(e.stats, "hlo_op") is not None]
    assert len(xla) == 72 and all(e.op is not None for e in xla)
    assert {e.op for e in xla if e.node_name.startswith("dot")} == {"dot"}
    assert [e.step for e in jax.events if e.node_name == "train"] == [0, 1, 2]
    # The XLA events' stats resolve their ref values to names.
    fusion = next(e for e in xla if e.node_name == "add_tanh_fusion")
    assert xo.find(fusion.stats, "hlo_op").value == "add_tanh_fusion"
    assert xo.find(fusion.stats, "hlo_module").kind == "ref"
    # An event may repeat a stat (_src twice on XLA events): both are rows, first wins lookups.
    assert sum(s.name == "_src" for s in fusion.stats) == 2


def test_a100_node_variant_is_the_tf_sample_with_another_host():
    a100 = xp.XSpace.FromString((DATA / "tf_keras_mlp_fit_a100_node.xplane.pb").read_bytes())
    assert list(a100.hostnames) == ["a100-node"]
    tf = load("tf_keras_mlp_fit")
    del a100.hostnames[:]
    del tf.hostnames[:]
    assert a100 == tf
    t = xo.expected_xspace(a100)
    assert len(t.events) == 2548 and len(t.alloc_records) == 48


# ---- the rules on hand-made messages ---------------------------------------------------------
def test_event_times_floor_both_ends():
    assert xo.event_times(10, 1500, 1000) == (11, 12)
    assert xo.event_times(10, 1999, 2) == (11, 12)
    assert xo.event_times(10, -1, 0) == (9, 9)  # floor, not truncation
    assert xo.event_times(0, -1500, 499) == (-2, -2)
    # Epoch-ns line timestamps: the picoseconds exceed int64, the nanoseconds do not.
    assert xo.event_times(1_795_619_473_333_858_452, 999_999, 1) == (
        1_795_619_473_333_859_451, 1_795_619_473_333_859_452)
    with pytest.raises(xo.OracleOutOfRange):
        xo.event_times(INT64_MAX, 1000, 0)
    with pytest.raises(xo.OracleOutOfRange):
        xo.event_times(INT64_MAX - 1, 0, 2000)
    with pytest.raises(xo.OracleOutOfRange):
        xo.event_times(-(2**63), -1, 0)


@given(st.integers(-10**12, 10**12), st.integers(0, 10**7), st.integers(0, 10**7),
       st.integers(0, 10**7), st.integers(0, 10**7))
def test_rounding_keeps_nesting(ts, offset, duration, child_delay, child_slack):
    # A child inside its parent in picoseconds stays inside it in nanoseconds.
    child_offset = offset + min(child_delay, duration)
    child_duration = max(0, min(duration - (child_offset - offset), child_slack))
    ps, pe = xo.event_times(ts, offset, duration)
    cs, ce = xo.event_times(ts, child_offset, child_duration)
    assert ps <= cs <= ce <= pe


def plane_with(events, event_metadata=(), stat_metadata=(), name="/host:CPU"):
    plane = xp.XPlane(name=name)
    for mid, mname in stat_metadata:
        plane.stat_metadata[mid].id = mid
        plane.stat_metadata[mid].name = mname
    for mid, mname, display, stats in event_metadata:
        m = plane.event_metadata[mid]
        m.id, m.name, m.display_name = mid, mname, display
        m.stats.extend(stats)
    line = plane.lines.add(name="t", timestamp_ns=100)
    line.events.extend(events)
    return xp.XSpace(planes=[plane])


def test_stats_union_refs_and_compressed_strings():
    space = plane_with(
        events=[xp.XEvent(metadata_id=1, offset_ps=0, stats=[
            xp.XStat(metadata_id=10, int64_value=5),
            xp.XStat(metadata_id=11, ref_value=12),
            xp.XStat(metadata_id=13, compressed_str_value=gzip.compress("héllo".encode())),
            xp.XStat(metadata_id=14, ref_value=2**64 - 1),
            xp.XStat(metadata_id=99),
        ])],
        event_metadata=[(1, "scope/MatMul_1:MatMul", "MatMul", [
            xp.XStat(metadata_id=10, int64_value=7),  # the event's own wins
            xp.XStat(metadata_id=15, double_value=0.5),
        ])],
        stat_metadata=[(10, "group_id"), (11, "kind"), (12, "gemm"), (13, "long_name"),
                       (14, "minus_one"), (15, "ratio"), (-1, "the -1 key")])
    t = xo.expected_xspace(space)
    (e,) = t.events
    assert [(s.name, s.kind, s.value, s.inherited) for s in e.stats] == [
        ("group_id", "int64", 5, False), ("kind", "ref", "gemm", False),
        ("long_name", "compressed", "héllo", False), ("minus_one", "ref", "the -1 key", False),
        ("", "none", None, False), ("ratio", "double", 0.5, True)]
    assert (e.op, e.step, e.start_ns, e.end_ns) == ("MatMul", 5, 100, 100)


def test_bad_compressed_string_is_an_error():
    space = plane_with(events=[xp.XEvent(metadata_id=1, stats=[
        xp.XStat(metadata_id=1, compressed_str_value=b"not gzip")])])
    with pytest.raises(xo.OracleBadValue):
        xo.expected_xspace(space)
    space = plane_with(events=[xp.XEvent(metadata_id=1, stats=[
        xp.XStat(metadata_id=1, compressed_str_value=gzip.compress(b"\xff\xfe"))])])
    with pytest.raises(xo.OracleBadValue):
        xo.expected_xspace(space)


def test_aggregates_and_missing_metadata():
    space = plane_with(events=[
        xp.XEvent(metadata_id=1, num_occurrences=4, duration_ps=9000),
        xp.XEvent(metadata_id=2, offset_ps=2500, duration_ps=1000),
        xp.XEvent(metadata_id=1, num_occurrences=0),  # set to 0: still an aggregate
        xp.XEvent(metadata_id=1),  # neither member: a timed event at offset 0
    ], event_metadata=[(1, "a", "", [])])
    t = xo.expected_xspace(space)
    assert [(a.node_name, a.num_occurrences, a.duration_ps) for a in t.aggregates] == [
        ("a", 4, 9000), ("a", 0, 0)]
    assert [(e.event_id, e.node_name, e.start_ns, e.end_ns) for e in t.events] == [
        (0, "", 102, 103), (1, "a", 100, 100)]
    assert (t.lines[0].n_events, t.lines[0].n_aggregates) == (2, 2)


def test_oneof_last_member_wins():
    wire = (xp.XEvent(metadata_id=1, num_occurrences=3).SerializeToString()
            + xp.XEvent(offset_ps=7000).SerializeToString())
    space = plane_with(events=[xp.XEvent.FromString(wire)])
    t = xo.expected_xspace(space)
    assert t.aggregates == [] and t.events[0].start_ns == 107


@pytest.mark.parametrize(("name", "stats", "op"), [
    ("scope/name:OpType", [], "OpType"),
    ("a::b:C", [], "C"),
    ("Iterator::Root::Prefetch", [], None),
    ("ThreadpoolListener::Record", [], None),
    ("$profiler.py:553 __init__", [], None),
    (":Leading", [], None),
    ("trailing:", [], None),
    ("dot.1", [("hlo_op", "dot.1")], "dot"),
    ("fusion", [("hlo_op", "add_tanh_fusion"), ("hlo_category", "")], "add_tanh_fusion"),
    ("x:MatMul", [("hlo_op", "dot.12"), ("hlo_category", "convolution")], "convolution"),
])
def test_derive_op(name, stats, op):
    as_stats = tuple(xo.Stat(n, 0, "str", v) for n, v in stats)
    assert xo.derive_op(name, as_stats) == op


def test_derive_step_priority():
    def s(n, v, k="int64"):
        return xo.Stat(n, 0, k, v)

    assert xo.derive_step((s("iter_num", 1), s("step_num", 2))) == 2
    assert xo.derive_step((s("iter_num", 1), s("group_id", 3), s("step_num", 2))) == 3
    assert xo.derive_step((s("iter_num", 7, "uint64"),)) == 7
    assert xo.derive_step((s("group_id", 2**63, "uint64"),)) is None
    assert xo.derive_step((s("group_id", "x", "str"), s("step_num", 2))) is None


@pytest.mark.parametrize(("text", "shape"), [
    ("[128,1024]", (128, 1024)), ("[]", ()), ("[ 3 , -1 ]", (3, -1)), ("[5]", (5,)),
    ("[128,24] [128]", None), ("[?,3]", None), ("128", None), (None, None),
    (f"[{2**63}]", None),
])
def test_parse_shape(text, shape):
    assert xo.parse_shape(text) == shape


def memory_event(name, offset_ps, heap, addr, size=100, stack=0, peak=None, allocator="a"):
    stats = [xp.XStat(metadata_id=1, str_value=allocator),
             xp.XStat(metadata_id=2, int64_value=heap),
             xp.XStat(metadata_id=3, int64_value=stack),
             xp.XStat(metadata_id=4, int64_value=addr),
             xp.XStat(metadata_id=5, int64_value=size)]
    if peak is not None:
        stats.append(xp.XStat(metadata_id=6, int64_value=peak))
    return xp.XEvent(metadata_id=1 if name == "MemoryAllocation" else 2, offset_ps=offset_ps,
                     stats=stats)


def memory_space(events):
    return plane_with(
        events=events,
        event_metadata=[(1, "MemoryAllocation", "", []), (2, "MemoryDeallocation", "", [])],
        stat_metadata=[(1, "allocator_name"), (2, "bytes_allocated"), (3, "bytes_reserved"),
                       (4, "addr"), (5, "allocation_bytes"), (6, "peak_bytes_in_use")])


def test_memory_peak_last_reaching_and_live_set():
    A, D = "MemoryAllocation", "MemoryDeallocation"
    t = xo.expected_xspace(memory_space([
        memory_event(A, 5000, 100, 0x10, peak=100),
        memory_event(A, 1000, 200, 0x20, peak=200),  # out of time order in the file
        memory_event(D, 6000, 100, 0x20, peak=300),
        memory_event(A, 7000, 200, 0x30, stack=100, peak=300),  # in_use 300: the peak
        memory_event(D, 8000, 100, 0x10, stack=200, peak=300),  # 300 again, later: the peak
        memory_event(D, 9000, 0, 0x30, peak=250),
    ]))
    (peak,) = t.peaks.values()
    assert peak.peak_bytes == 300 and peak.peak_record.time_ns == 108
    assert [r.address for r in peak.live] == [0x30]  # 0x10 freed at the peak, 0x20 before
    assert peak.lifetime_peak_bytes == 300
    assert [r.bytes for r in t.alloc_records] == [100, 100, -100, 100, -100, -100]


def test_memory_allocator_and_address_fallbacks():
    space = memory_space([memory_event("MemoryAllocation", 0, 5, -1)])
    ev = space.planes[0].lines[0].events[0]
    del ev.stats[0]
    space.planes[0].stat_metadata[7].name = "device_ordinal"
    ev.stats.append(xp.XStat(metadata_id=7, int64_value=3))
    (r,) = xo.expected_xspace(space).alloc_records
    assert (r.allocator, r.address, r.step, r.shape, r.dtype) == ("3", 2**64 - 1, None, None,
                                                                  None)


def test_line_kinds():
    assert xo.line_kind("/host:CPU", "tf_Compute/1") == "host_thread"
    assert xo.line_kind("/device:GPU:0", "Stream #13(MemcpyH2D)") == "stream"
    assert xo.line_kind("/device:GPU:0", "XLA Ops") == "xla_ops"
    assert xo.line_kind("/device:TPU:0", "Steps") == "steps"
    assert xo.line_kind("/device:TPU:0", "Framework Name Scope") == "derived"
    assert xo.line_kind("Task Environment", "x") == "other"
