"""Property tests and seed figures for the tracecore queries (docs/queries.md).

Random small traces are written as StepStats text files (nanosecond fields, all_start_nanos != 0
so that the ns values are exact), opened with tracecore, and every query result is compared
exactly with the brute-force oracles of tests/query_oracle.py, which in turn uses the faithful
timeline.py model of tests/tf_timeline_model.py for source="tensors".
"""

from __future__ import annotations

import contextlib
import math
import os
import random
import shutil
import tempfile
import warnings
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pytest
from google.protobuf import text_format
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import query_oracle as qo
import tf_timeline_model as tfm
import tfproto
from oracle import derive_op, device_kind

tracecore = pytest.importorskip("tracecore")

# On a failing example hypothesis' pytest plugin imports hypothesis.extra._patching (libcst ->
# mypy_extensions.TypedDict), which emits a DeprecationWarning; with the project's
# filterwarnings = ["error"] that turns every hypothesis failure into a pytest INTERNALERROR that
# aborts the session. Import it once here, warnings silenced, so failures are reported normally.
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    with contextlib.suppress(Exception):  # an optional dependency (libcst) may be missing
        import hypothesis.extra._patching  # noqa: F401

HERE = os.path.dirname(os.path.abspath(__file__))
SEED0 = os.path.join(HERE, "data", "seed000_stepstats.pbtxt")
SEED1 = os.path.join(HERE, "data", "seed001_runmetadata.pbtxt")

PROPS = settings(max_examples=60, deadline=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _has_queries() -> bool:
    t = tracecore.open(SEED0)
    return all(hasattr(t, q) for q in ("overlaps", "window", "occupancy", "replay", "op_stats"))


needs_queries = pytest.mark.skipif(not _has_queries(), reason="tracecore queries not built yet")


# ---------------------------------------------------------------------------------------------
# Writing random traces
# ---------------------------------------------------------------------------------------------
DEVICE_POOL = [
    "/job:localhost/replica:0/task:0/device:CPU:0",
    "/job:localhost/replica:0/task:0/device:GPU:0",
    "/device:GPU:0/stream:all",
    "/device:GPU:0/stream:13",
    "/device:GPU:0/memcpy",
    "/host:CPU",  # kind "other"
]
OFFSETS = [1, 10**6, -(10**9), 2**50, -(2**50), 10**15, -7]
NONNEG_OFFSETS = [1, 10**6, 2**50, 10**15]
NEG_OFFSETS = [-(10**9), -(2**50), -7, -1500]
ALLOCATORS = ["GPU_0_bfc", "cpu", "cuda_host_bfc"]
TENSOR_ALLOCATORS = ["GPU_0_bfc", "cpu", "", None]  # None: no allocation_description
TENSOR_NAMES = ["a", "b", "a:1", "c/_3", "RecvTensor", "d"]
EXTRA_INPUTS = ["a/_5", "b:1", "^a", "zz/_1", "/_x", "a:1/_2", "c/_3/_9", "d:2"]

_tmpdir = tempfile.mkdtemp(prefix="tracecore_q_")
_counter = [0]


def teardown_module(module):  # noqa: ARG001
    shutil.rmtree(_tmpdir, ignore_errors=True)


@dataclass
class Case:
    msg: object
    devices: list = field(default_factory=list)     # (device_index, device, kind)
    starts: list = field(default_factory=list)
    ends: list = field(default_factory=list)
    dev: list = field(default_factory=list)         # device_index per event
    node_names: list = field(default_factory=list)
    labels: list = field(default_factory=list)
    records: list = field(default_factory=list)     # (event_id, allocator, time_ns, bytes)
    allocations: list = field(default_factory=list)  # (event_id, allocator, bytes_in_use)

    @property
    def ops(self):
        return [derive_op(lb, nn) for lb, nn in zip(self.labels, self.node_names, strict=True)]

    def open(self):
        _counter[0] += 1
        path = os.path.join(_tmpdir, f"case{_counter[0]}.pbtxt")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text_format.MessageToString(self.msg))
        t = tracecore.open(path)
        # preconditions (parser, tested elsewhere): the events are the ones written
        ev = t.events
        assert ev.column("start_ns").to_pylist() == self.starts
        assert ev.column("end_ns").to_pylist() == self.ends
        assert ev.column("device_index").to_pylist() == self.dev
        return t


@st.composite
def cases(draw, *, offsets=OFFSETS, scales=(1, 3, 1000, 1500), max_blocks=4, max_events=7,
          tensors=False, records=False, records_always=False, corrupt=False):
    n_blocks = draw(st.integers(1, max_blocks))
    offset = draw(st.sampled_from(offsets))
    scale = draw(st.sampled_from(scales))
    msg = tfproto.StepStats()
    c = Case(msg=msg)
    eid = 0
    for di in range(n_blocks):
        dname = draw(st.sampled_from(DEVICE_POOL))
        kind = device_kind(dname)
        c.devices.append((di, dname, kind))
        ds = msg.dev_stats.add()
        ds.device = dname
        for _ in range(draw(st.integers(0, max_events))):
            modes = ["fresh", "fresh", "same", "touch", "zero"] + (
                ["corrupt"] * 2 if corrupt else []
            )
            mode = draw(st.sampled_from(modes))
            if mode == "same" and c.starts:
                j = draw(st.integers(0, len(c.starts) - 1))
                start, end = c.starts[j], c.ends[j]
            elif mode == "touch" and c.starts:
                j = draw(st.integers(0, len(c.starts) - 1))
                start = c.ends[j]
                end = start + draw(st.integers(0, 12)) * scale
            elif mode == "corrupt":  # end < start: treated as zero-length at start
                start = offset + draw(st.integers(-12, 12)) * scale
                end = start - draw(st.integers(1, 12)) * scale
            else:
                start = offset + draw(st.integers(-12, 12)) * scale
                end = start if mode == "zero" else start + draw(st.integers(0, 12)) * scale
            if start == 0:  # all_start_nanos == 0 would mean "use the micro fields"
                end += 1
                start = 1
            ns = ds.node_stats.add()
            ns.all_start_nanos = start
            ns.all_end_rel_nanos = end - start
            base = draw(st.sampled_from(TENSOR_NAMES)) if tensors else f"n{draw(st.integers(0, 4))}"
            k = draw(st.integers(0, 3))
            if kind in ("stream", "stream_all", "memcpy"):
                name = f"{base}:Op{k}"
                label = draw(st.sampled_from(["", f"kernel{k}", f"{base} = Op{k}(x)"]))
            else:
                name = base
                if tensors:
                    inputs = draw(st.lists(st.sampled_from(TENSOR_NAMES + EXTRA_INPUTS),
                                           max_size=4))
                    label = draw(st.sampled_from([
                        f"{name} = Op{k}({', '.join(inputs)})",
                        f"[GPU_0_bfc 0.5MB 0.5MB] {name} = Op{k}({', '.join(inputs)})",
                        f"{name} = Op{k}({','.join(inputs)})",
                        f"{name} = Op{k}({', '.join(inputs)}",  # old Send/Recv: no ')'
                        # '.' does not match a newline: only the first line can match
                        f"{name} = Op{k}({', '.join(inputs)})\nq = Z(a, b)",
                        f"{name} = Op{k}\n({', '.join(inputs)})",
                        # greedy groups: the last " = " before the last '(' wins
                        f"q = Z(a) = Op{k}({', '.join(inputs)}) tail",
                        "",
                    ]))
                else:
                    label = draw(st.sampled_from([f"{name} = Op{k}(x, y)", f"{name} = Op{k}()",
                                                  "", "no equals sign"]))
            ns.node_name = name
            ns.timeline_label = label
            if tensors:
                for slot in range(draw(st.integers(0, 3))):
                    out = ns.output.add()
                    out.slot = slot
                    td = out.tensor_description
                    td.dtype = draw(st.sampled_from([1, 3, 9, 101, 19]))
                    for d in draw(st.lists(st.integers(-1, 4), max_size=2)):
                        td.shape.dim.add().size = d
                    alloc = draw(st.sampled_from(TENSOR_ALLOCATORS))
                    if alloc is not None:
                        ad = td.allocation_description
                        ad.allocator_name = alloc
                        ad.requested_bytes = draw(st.sampled_from(
                            [0, 4, 8, 100, 4096, 10**9, -16]))
                        ad.allocated_bytes = ad.requested_bytes + draw(st.integers(0, 3))
            if records:
                for _m in range(draw(st.integers(0, 2))):
                    mem = ns.memory.add()
                    al = draw(st.sampled_from(ALLOCATORS))
                    mem.allocator_name = al
                    mem.allocator_bytes_in_use = draw(st.integers(-50, 5000))
                    c.allocations.append((eid, al, mem.allocator_bytes_in_use))
                    base_us = (start // 1000) + draw(st.integers(-3, 3))
                    for _r in range(draw(st.integers(1 if records_always else 0, 4))):
                        rec = mem.allocation_records.add()
                        rec.alloc_micros = base_us + draw(st.integers(-4, 4))
                        rec.alloc_bytes = draw(st.sampled_from(
                            [-300, -100, -8, 0, 8, 100, 256, 300, 7000]))
                        c.records.append((eid, al, rec.alloc_micros * 1000, rec.alloc_bytes))
            c.starts.append(start)
            c.ends.append(end)
            c.dev.append(di)
            c.node_names.append(name)
            c.labels.append(label)
            eid += 1
    return c


# ---------------------------------------------------------------------------------------------
# Comparison helpers
# ---------------------------------------------------------------------------------------------
def is_dict_string(ty) -> bool:
    return pa.types.is_dictionary(ty) and pa.types.is_string(ty.value_type)


TYPE_CHECKS = {
    "int32": pa.types.is_int32,
    "int64": pa.types.is_int64,
    "float64": pa.types.is_float64,
    "string": pa.types.is_string,
    "dict": is_dict_string,
    "list<int64>": lambda ty: pa.types.is_list(ty) and pa.types.is_int64(ty.value_type),
}


def check_schema(table, spec):
    names = [n for n, _ in spec]
    assert table.column_names == names, (table.column_names, names)
    for name, ty in spec:
        if ty is not None:
            assert TYPE_CHECKS[ty](table.schema.field(name).type), (
                name,
                table.schema.field(name).type,
            )


def rows(table, columns=None):
    cols = columns or table.column_names
    data = {c: table.column(c).to_pylist() for c in cols}
    return [{c: data[c][i] for c in cols} for i in range(table.num_rows)]


OVERLAPS_SPEC = [("left", "int64"), ("right", "int64"), ("overlap_ns", "int64")]
OCC_SPEC = [("device_index", "int32"), ("device", "dict"), ("kind", "string"),
            ("n_events", "int64"), ("busy_ns", "int64"), ("span_ns", "int64"),
            ("utilization", "float64"), ("max_concurrency", "int64"), ("idle_gaps", "int64")]
# types of the binned form are not spelled out in the contract: names only (values compared)
BINS_SPEC = [("device_index", None), ("device", None), ("bin_start_ns", None),
             ("busy_ns", None), ("busy_fraction", None)]
TIMELINE_SPEC = [("allocator", "dict"), ("time_ns", "int64"), ("delta_bytes", "int64"),
                 ("bytes_in_use", "int64")]
PEAKS_SPEC = [("allocator", "dict"), ("peak_bytes", "int64"), ("peak_time_ns", "int64"),
              ("live_tensors", "int64"), ("n_changes", "int64")]
LIVE_TENSORS_SPEC = [("tensor_name", "string"), ("event_id", "int64"), ("node_name", "dict"),
                     ("output_index", "int32"), ("dtype", "dict"), ("shape", "list<int64>"),
                     ("requested_bytes", "int64"), ("allocated_bytes", "int64")]
LIVE_RECORDS_COLS = ["event_id", "node_name", "allocator", "time_ns", "bytes"]
# compared by value in the replay tests (the allocator column is checked on its own below)
LIVE_RECORDS_VALUE_COLS = ["event_id", "node_name", "time_ns", "bytes"]
OPSTATS_SPEC = [("key", "string"), ("n_events", "int64"), ("total_ns", "int64"),
                ("mean_ns", "float64"), ("max_ns", "int64"), ("busy_ns", "int64"),
                ("share", "float64"), ("executor_ns", "int64"), ("stream_ns", "int64"),
                ("time_ns", "int64")]


def as_triples(table):
    check_schema(table, OVERLAPS_SPEC)
    return list(zip(table.column("left").to_pylist(), table.column("right").to_pylist(),
                    table.column("overlap_ns").to_pylist(), strict=True))


# ---------------------------------------------------------------------------------------------
# Oracle self-checks (no tracecore needed beyond the import)
# ---------------------------------------------------------------------------------------------
@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(-20, 20), st.integers(0, 6)), max_size=8))
def test_oracle_max_concurrency_start_instants_suffice(ivs):
    intervals = [(s, s + d) for s, d in ivs]
    assert qo.max_concurrency(intervals) == qo.max_concurrency_dense(intervals)


def test_oracle_interval_rules_by_hand():
    # zero-length strictly inside overlaps; touching does not; zero-length at a start does not
    assert qo.overlaps_all([0, 5, 10, 0], [10, 5, 20, 0], [0, 0, 0, 0]) == [(0, 1, 0)]
    assert qo.window([0, 5, 10], [10, 5, 20], 10, 10) == []
    assert qo.window([0, 5, 10], [10, 5, 20], 5, 6) == [0]  # zero-length at the window start: no
    assert qo.window([0, 5, 10], [10, 5, 20], 4, 6) == [0, 1]
    assert qo.max_concurrency([(0, 10), (5, 5), (5, 5), (10, 12)]) == 3
    assert qo.union_periods([(0, 5), (5, 7), (9, 9), (10, 11)]) == [(0, 7), (10, 11)]


# ---------------------------------------------------------------------------------------------
# (a) property tests against the oracles
# ---------------------------------------------------------------------------------------------
@needs_queries
@PROPS
@given(cases(), st.booleans())
def test_overlaps_unordered(c, same_device):
    t = c.open()
    got = as_triples(t.overlaps(same_device=same_device))
    assert got == qo.overlaps_all(c.starts, c.ends, c.dev, same_device=same_device)
    if same_device:
        assert as_triples(t.overlaps()) == got  # default is same_device=True


def _selection(draw_data, n, kind):
    if kind == "none":
        return None
    if kind == "mask":
        return np.array(draw_data.draw(st.lists(st.booleans(), min_size=n, max_size=n)),
                        dtype=bool)
    ids = draw_data.draw(st.lists(st.integers(0, max(n - 1, 0)), max_size=2 * n)) if n else []
    if kind == "list":
        return ids
    return np.array(ids, dtype=np.int64)


@needs_queries
@PROPS
@given(cases(), st.sampled_from(["none", "list", "numpy", "mask"]),
       st.sampled_from(["none", "list", "numpy", "mask"]), st.booleans(), st.data())
def test_overlaps_join(c, lkind, rkind, same_device, data):
    assume(not (lkind == "none" and rkind == "none"))
    t = c.open()
    n = len(c.starts)
    left = _selection(data, n, lkind)
    right = _selection(data, n, rkind)
    kwargs = {"same_device": same_device}
    if left is not None:
        kwargs["left"] = left
    if right is not None:
        kwargs["right"] = right
    got = as_triples(t.overlaps(**kwargs))
    assert got == qo.overlaps_join(c.starts, c.ends, c.dev, left, right, same_device=same_device)


@needs_queries
@PROPS
@given(cases(), st.data())
def test_window(c, data):
    t = c.open()
    pts = sorted(set(c.starts + c.ends)) or [1]
    for _ in range(4):
        a = data.draw(st.sampled_from(pts)) + data.draw(st.sampled_from([0, 0, -1, 1]))
        b = max(a, data.draw(st.sampled_from(pts)) + data.draw(st.sampled_from([0, 0, -1, 1])))
        got = t.window(a, b)
        assert pa.types.is_int64(got.type)
        assert got.to_pylist() == qo.window(c.starts, c.ends, a, b), (a, b)


@needs_queries
@PROPS
@given(cases())
def test_occupancy(c):
    t = c.open()
    occ = t.occupancy()
    check_schema(occ, OCC_SPEC)
    assert rows(occ) == qo.occupancy(c.starts, c.ends, c.dev, c.devices)
    assert rows(t.occupancy(by="device")) == rows(occ)


@needs_queries
@PROPS
@given(cases(), st.sampled_from([1, 2, 3, 7, 1000, 1500, 10**4, 10**7]))
def test_occupancy_bins(c, bin_ns):
    t = c.open()
    occ = t.occupancy(bin_ns=bin_ns)
    check_schema(occ, BINS_SPEC)
    expected = qo.occupancy_bins(c.starts, c.ends, c.dev, c.devices, bin_ns)
    assume(len(expected) <= 20000)
    got = rows(occ)
    # the contract does not fix the row order of the binned form: compare as sorted lists
    key = lambda r: (r["device_index"], r["bin_start_ns"])  # noqa: E731
    assert sorted(got, key=key) == sorted(expected, key=key)


@needs_queries
@PROPS
@given(cases(records=True), st.data())
def test_replay_records(c, data):
    t = c.open()
    node_names = dict(enumerate(c.node_names))
    rp = t.replay(source="records")
    exp = qo.replay_records(c.records, node_names=node_names)
    check_schema(rp.timeline, TIMELINE_SPEC)
    check_schema(rp.peaks, PEAKS_SPEC)
    assert rows(rp.timeline) == exp.timeline
    assert rows(rp.peaks) == exp.peaks
    for a, live in exp.live.items():
        tab = rp.live_at_peak(a)
        got = rows(tab, LIVE_RECORDS_VALUE_COLS)
        want = [{k: r[k] for k in LIVE_RECORDS_VALUE_COLS} for r in live]
        key = lambda r: (r["time_ns"], r["event_id"], r["bytes"])  # noqa: E731
        assert sorted(got, key=key) == sorted(want, key=key), a
    # allocator filter
    if exp.peaks:
        a = data.draw(st.sampled_from([p["allocator"] for p in exp.peaks]))
        rpa = t.replay(source="records", allocator=a)
        one = qo.replay_records(c.records, node_names=node_names, allocator=a)
        assert rows(rpa.peaks) == one.peaks
        assert rows(rpa.timeline) == one.timeline


@needs_queries
@PROPS
@given(cases(records=True, records_always=True))
def test_replay_records_snapshot_baseline(c):
    t = c.open()
    rp = t.replay(source="records", baseline="snapshot")
    exp = qo.replay_records(c.records, node_names=dict(enumerate(c.node_names)),
                            allocations=c.allocations, event_start=dict(enumerate(c.starts)),
                            baseline="snapshot")
    assert rows(rp.timeline) == exp.timeline
    assert rows(rp.peaks) == exp.peaks


def _check_tensor_replay(c, t, rp, exp):
    check_schema(rp.timeline, TIMELINE_SPEC)
    check_schema(rp.peaks, PEAKS_SPEC)
    assert rows(rp.timeline) == exp.timeline
    assert rows(rp.peaks) == exp.peaks
    tens = t.tensors
    by_key = {}
    for r in rows(tens, ["event_id", "output_index", "dtype", "shape"]):
        by_key[(r["event_id"], r["output_index"])] = (r["dtype"], r["shape"])
    for a, live in exp.live.items():
        tab = rp.live_at_peak(a)
        check_schema(tab, LIVE_TENSORS_SPEC)
        got = rows(tab)
        want = []
        for r in live:
            dtype, shape = by_key[(r["event_id"], r["output_index"])]
            want.append({"tensor_name": r["tensor_name"], "event_id": r["event_id"],
                         "node_name": r["node_name"], "output_index": r["output_index"],
                         "dtype": dtype, "shape": shape,
                         "requested_bytes": r["requested_bytes"],
                         "allocated_bytes": r["allocated_bytes"]})
        assert got == want, a


@needs_queries
@PROPS
@given(cases(offsets=NONNEG_OFFSETS, scales=(1000, 1, 499, 999, 2500), tensors=True))
def test_replay_tensors(c):
    t = c.open()
    _check_tensor_replay(c, t, t.replay(source="tensors"), qo.replay_tensors(c.msg))


@needs_queries
@PROPS
@given(cases(offsets=NEG_OFFSETS, scales=(1000, 1, 499, 999, 2500), tensors=True))
def test_replay_tensors_negative_times(c):
    # micros = ns / 1000 truncating toward zero (TensorFlow's C++ division; the contract's
    # "start_ns // 1000 truncating toward zero")
    t = c.open()
    _check_tensor_replay(c, t, t.replay(source="tensors"), qo.replay_tensors(c.msg))


@needs_queries
@PROPS
@given(cases(offsets=NONNEG_OFFSETS, scales=(1000, 1, 999), tensors=True), st.data())
def test_replay_tensors_allocator_filter(c, data):
    exp_all = qo.replay_tensors(c.msg)
    assume(exp_all.peaks)
    a = data.draw(st.sampled_from([p["allocator"] for p in exp_all.peaks]))
    t = c.open()
    _check_tensor_replay(c, t, t.replay(source="tensors", allocator=a),
                         qo.replay_tensors(c.msg, allocator=a))


def _check_op_stats(c, t, by, include_empty_devices=True):
    tab = t.op_stats(by=by)
    check_schema(tab, OPSTATS_SPEC)
    got = rows(tab)
    exp = qo.op_stats(c.starts, c.ends, c.dev, c.ops, c.node_names, c.devices, by=by,
                      include_empty_devices=include_empty_devices)
    assert [(r["total_ns"], r["key"]) for r in got] == [(r["total_ns"], r["key"]) for r in exp]
    assert len(got) == len(exp)
    # rows with equal (total_ns, key) (by="device", repeated device strings) may come in any order
    remaining = list(exp)
    for g in got:
        match = None
        for e in remaining:
            if (e["total_ns"], e["key"]) != (g["total_ns"], g["key"]):
                continue
            ok = all(g[k] == e[k] for k in ("n_events", "total_ns", "max_ns", "busy_ns",
                                           "executor_ns", "stream_ns"))
            # mean of an empty group (by="device", block without events) and share with a zero
            # overall span are undefined in the contract: accept 0.0 or NaN there
            if e["mean_ns"] is None:
                ok = ok and (
                    g["mean_ns"] == 0.0 or g["mean_ns"] is None or math.isnan(g["mean_ns"])
                )
            else:
                ok = ok and g["mean_ns"] == e["mean_ns"]
            if e["share"] is None:
                ok = ok and (g["share"] == 0.0 or g["share"] is None or math.isnan(g["share"]))
            else:
                ok = ok and g["share"] == e["share"]
            if ok:
                match = e
                break
        assert match is not None, (by, g, exp)
        remaining.remove(match)
    # time_ns: each node's time counted once (tests/test_optime.py states the rule)
    if by == "device":
        assert [r["time_ns"] for r in got] == [r["total_ns"] for r in got]
    else:
        from test_optime import reference

        want = reference(t, by)
        assert {r["key"]: r["time_ns"] for r in got if r["time_ns"]} == {
            k: v for k, v in want.items() if v}


@needs_queries
@PROPS
@given(cases(), st.sampled_from(["op", "node_name", "device"]))
def test_op_stats(c, by):
    t = c.open()
    # by="device": one row per device block, blocks without events included
    _check_op_stats(c, t, by)
    if by == "op":
        assert rows(t.op_stats()) == rows(t.op_stats(by="op"))


@needs_queries
@PROPS
@given(cases(corrupt=True), st.data())
def test_corrupt_clocks_are_zero_length(c, data):
    # contract note: an event whose end_ns < start_ns is treated as a zero-length event at its
    # start in every query
    t = c.open()
    assert as_triples(t.overlaps()) == qo.overlaps_all(c.starts, c.ends, c.dev)
    assert as_triples(t.overlaps(same_device=False)) == qo.overlaps_all(
        c.starts, c.ends, c.dev, same_device=False)
    n = len(c.starts)
    left = _selection(data, n, "list")
    assert as_triples(t.overlaps(left=left)) == qo.overlaps_join(c.starts, c.ends, c.dev, left)
    pts = sorted(set(c.starts + c.ends)) or [1]
    a = data.draw(st.sampled_from(pts))
    b = max(a, data.draw(st.sampled_from(pts)))
    assert t.window(a, b).to_pylist() == qo.window(c.starts, c.ends, a, b)
    assert rows(t.occupancy()) == qo.occupancy(c.starts, c.ends, c.dev, c.devices)
    bin_ns = data.draw(st.sampled_from([1, 7, 1000, 10**6]))
    expected = qo.occupancy_bins(c.starts, c.ends, c.dev, c.devices, bin_ns)
    assume(len(expected) <= 20000)
    key = lambda r: (r["device_index"], r["bin_start_ns"])  # noqa: E731
    assert sorted(rows(t.occupancy(bin_ns=bin_ns)), key=key) == sorted(expected, key=key)
    for by in ("op", "node_name"):
        _check_op_stats(c, t, by)


# ---------------------------------------------------------------------------------------------
# Hand-written corner cases (each with its exact expected values)
# ---------------------------------------------------------------------------------------------
def _case_from(intervals, devices=None):
    """intervals: [(device_index, start, end)]; devices: names per block."""
    devices = devices or ["/job:localhost/replica:0/task:0/device:CPU:0"]
    msg = tfproto.StepStats()
    c = Case(msg=msg)
    blocks = []
    for di, d in enumerate(devices):
        ds = msg.dev_stats.add()
        ds.device = d
        blocks.append(ds)
        c.devices.append((di, d, device_kind(d)))
    for di in range(len(devices)):
        for k, (dj, s, e) in enumerate(intervals):
            if dj != di:
                continue
            ns = blocks[di].node_stats.add()
            ns.node_name = f"n{k}"
            ns.timeline_label = f"n{k} = Op{k % 2}(x)"
            ns.all_start_nanos = s
            ns.all_end_rel_nanos = e - s
            c.starts.append(s)
            c.ends.append(e)
            c.dev.append(di)
            c.node_names.append(ns.node_name)
            c.labels.append(ns.timeline_label)
    return c


@needs_queries
def test_op_stats_device_rows_for_empty_blocks():
    # contract: by="device": key = device string of the block, one row per device_index
    c = _case_from([(1, 5, 15)], devices=["/job:localhost/replica:0/task:0/device:CPU:0",
                                          "/job:localhost/replica:0/task:0/device:GPU:0"])
    t = c.open()
    _check_op_stats(c, t, "device")
    got = rows(t.op_stats(by="device"))
    assert [(r["key"], r["n_events"], r["total_ns"]) for r in got] == [
        ("/job:localhost/replica:0/task:0/device:GPU:0", 1, 10),
        ("/job:localhost/replica:0/task:0/device:CPU:0", 0, 0)]


@needs_queries
def test_corner_zero_length_and_touching():
    c = _case_from([(0, 10, 20), (0, 15, 15), (0, 10, 10), (0, 20, 30), (0, 10, 20)])
    t = c.open()
    assert as_triples(t.overlaps()) == [(0, 1, 0), (0, 4, 10), (1, 4, 0)]
    assert t.window(20, 20).to_pylist() == []
    assert t.window(15, 15).to_pylist() == [0, 4]
    assert t.window(10, 11).to_pylist() == [0, 4]  # zero-length [10,10) is not in [10,11)
    occ = rows(t.occupancy())[0]
    assert occ["busy_ns"] == 20 and occ["span_ns"] == 20 and occ["utilization"] == 1.0
    assert occ["max_concurrency"] == 3  # at t=10: events 0, 4 and the zero-length event 2
    assert occ["idle_gaps"] == 0


@needs_queries
def test_overlaps_takes_a_single_id():
    c = _case_from([(0, 10, 20), (0, 15, 15), (0, 10, 10), (0, 20, 30), (0, 10, 20)])
    t = c.open()
    assert as_triples(t.overlaps(0)) == as_triples(t.overlaps([0])) == [(0, 1, 0), (0, 4, 10)]
    assert as_triples(t.overlaps(right=4)) == [(0, 4, 10), (1, 4, 0)]


@needs_queries
def test_corner_idle_gaps_and_bins():
    c = _case_from([(0, 100, 110), (0, 120, 130), (0, 125, 125), (1, 140, 141)],
                   devices=["/job:localhost/replica:0/task:0/device:CPU:0",
                            "/device:GPU:0/stream:13"])
    t = c.open()
    occ = rows(t.occupancy())
    assert [(r["busy_ns"], r["span_ns"], r["idle_gaps"], r["max_concurrency"]) for r in occ] == [
        (20, 30, 1, 2), (1, 1, 0, 1)]
    bins = rows(t.occupancy(bin_ns=15))
    # T0 = 100, grid 100 115 130 ...; each device over its own span: device 0 (100 .. 130) in
    # ceil(30/15) = 2 bins, device 1 (140 .. 141) in the one bin holding it.
    key = lambda r: (r["device_index"], r["bin_start_ns"])  # noqa: E731
    assert [(r["device_index"], r["bin_start_ns"], r["busy_ns"]) for r in sorted(bins, key=key)
            ] == [(0, 100, 10), (0, 115, 10), (1, 130, 1)]
    assert bins == qo.occupancy_bins(c.starts, c.ends, c.dev, c.devices, 15)


@needs_queries
def test_occupancy_bins_of_blocks_far_apart():
    # 600 device blocks one second apart (a step each), a few microseconds of events in each:
    # 1 us bins over the whole 600 s trace would be 600 x 6e8 rows, far past the budget; each
    # block's own span takes a few bins.
    intervals, devices = [], []
    rng = random.Random(27)
    for b in range(600):
        devices.append(f"/job:localhost/replica:0/task:0/device:GPU:{b % 8}")
        base = b * 1_000_000_000 + rng.randrange(0, 5000)
        for _ in range(rng.randrange(0, 4)):  # some blocks are empty
            start = base + rng.randrange(0, 7000)
            intervals.append((b, start, start + rng.choice([0, 1, 999, 1000, 2500])))
    c = _case_from(intervals, devices)
    t = c.open()
    for bin_ns in (1000, 777, 10**6):
        expected = qo.occupancy_bins(c.starts, c.ends, c.dev, c.devices, bin_ns)
        got = t.occupancy(bin_ns=bin_ns)
        assert rows(got) == expected
        assert t._occupancy_bin_rows(bin_ns) == len(expected)
    # One grid over the whole trace for every block would pass the default budget.
    whole_grid = 600 * -(-(max(c.ends) - min(c.starts)) // 1000)
    assert whole_grid > tracecore._core.DEFAULT_MAX_OUTPUT_BYTES // 32
    assert 0 < t.occupancy(bin_ns=1000).num_rows < 600 * 20


# ---------------------------------------------------------------------------------------------
# (b), (c) the issue's seed figures
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def seeds():
    return {
        0: (tracecore.open(SEED0), tfm.load_message(SEED0)),
        1: (tracecore.open(SEED1), tfm.load_message(SEED1)),
    }


def _peak(rp, allocator):
    for r in rows(rp.peaks):
        if r["allocator"] == allocator:
            return r["peak_bytes"], r["peak_time_ns"], r["live_tensors"]
    raise AssertionError(f"no peaks row for {allocator!r}")


def test_model_matches_issue_figures(seeds):
    m0 = tfm.allocator_maximums(seeds[0][1])
    assert {a: (b, ts, len(s)) for a, (b, ts, s) in m0.items() if a} == {
        "GPU_0_bfc": (77223232, 1532145303715193, 127),
        "cuda_host_bfc": (19718688, 1532145303704237, 41),
        "cpu": (64144, 1532145303703465, 7),
        "cpu_pool": (6408, 1532145303704619, 5),
    }
    m1 = tfm.allocator_maximums(seeds[1][1])
    assert m1["GPU_0_bfc"][:2] == (874346764, 1552507523229828)
    assert len(m1["GPU_0_bfc"][2]) == 50


@needs_queries
def test_seed_tensor_peaks(seeds):
    rp0 = seeds[0][0].replay(source="tensors")
    assert _peak(rp0, "GPU_0_bfc") == (77223232, 1532145303715193 * 1000, 127)
    assert _peak(rp0, "cuda_host_bfc") == (19718688, 1532145303704237 * 1000, 41)
    assert _peak(rp0, "cpu")[0] == 64144 and _peak(rp0, "cpu")[2] == 7
    assert _peak(rp0, "cpu_pool")[0] == 6408 and _peak(rp0, "cpu_pool")[2] == 5
    rp1 = seeds[1][0].replay(source="tensors")
    assert _peak(rp1, "GPU_0_bfc") == (874346764, 1552507523229828 * 1000, 50)


@needs_queries
@pytest.mark.parametrize("seed", [0, 1])
def test_seed_tensor_replay_matches_model(seeds, seed):
    t, msg = seeds[seed]
    rp = t.replay(source="tensors")
    exp = qo.replay_tensors(msg, from_nanos=False)
    check_schema(rp.peaks, PEAKS_SPEC)
    assert rows(rp.peaks) == exp.peaks
    assert rows(rp.timeline) == exp.timeline


@needs_queries
def test_seed_records_peaks(seeds):
    rp0 = seeds[0][0].replay(source="records")
    assert _peak(rp0, "GPU_0_bfc")[:2] == (66359808, 1532145303715104 * 1000)
    rp1 = seeds[1][0].replay(source="records")
    assert _peak(rp1, "GPU_0_bfc")[:2] == (829911552, 1552507523203442 * 1000)


@needs_queries
@pytest.mark.parametrize("seed", [0, 1])
def test_seed_records_replay_matches_oracle(seeds, seed):
    t, _msg = seeds[seed]
    recs = [(r["event_id"], r["allocator"], r["time_ns"], r["bytes"])
            for r in rows(t.alloc_records)]
    names = dict(enumerate(t.events.column("node_name").to_pylist()))
    exp = qo.replay_records(recs, node_names=names)
    rp = t.replay(source="records")
    assert rows(rp.peaks) == exp.peaks
    assert rows(rp.timeline) == exp.timeline
    got = rows(rp.live_at_peak("GPU_0_bfc"), LIVE_RECORDS_VALUE_COLS)
    want = [{k: r[k] for k in LIVE_RECORDS_VALUE_COLS} for r in exp.live["GPU_0_bfc"]]
    key = lambda r: (r["time_ns"], r["event_id"], r["bytes"])  # noqa: E731
    assert sorted(got, key=key) == sorted(want, key=key)


@needs_queries
def test_seed_records_live_at_peak_columns(seeds):
    # contract: "live_at_peak lists the event rows (event_id, node_name, allocator, time_ns,
    # bytes) of the positive records with time_ns <= peak_time"
    t, _msg = seeds[0]
    tab = t.replay(source="records").live_at_peak("GPU_0_bfc")
    assert tab.column_names == LIVE_RECORDS_COLS
    assert set(tab.column("allocator").to_pylist()) == {"GPU_0_bfc"}


@needs_queries
def test_seed_live_at_peak_tensors(seeds):
    t, msg = seeds[0]
    tab = t.replay(source="tensors").live_at_peak("GPU_0_bfc")
    check_schema(tab, LIVE_TENSORS_SPEC)
    assert tab.num_rows == 127
    names = tab.column("tensor_name").to_pylist()
    assert names == sorted(names)
    assert set(names) == tfm.allocator_maximums(msg)["GPU_0_bfc"][2]
    exp = qo.replay_tensors(msg, allocator="GPU_0_bfc", from_nanos=False).live["GPU_0_bfc"]
    got = rows(tab, ["tensor_name", "event_id", "node_name", "output_index", "requested_bytes",
                     "allocated_bytes"])
    assert got == exp


@needs_queries
@pytest.mark.parametrize("by", ["op", "node_name", "device"])
def test_seed_op_stats(seeds, by):
    t, _ = seeds[0]
    ev = t.events
    starts = ev.column("start_ns").to_pylist()
    ends = ev.column("end_ns").to_pylist()
    c = Case(msg=None, starts=starts, ends=ends,
             dev=ev.column("device_index").to_pylist(),
             node_names=ev.column("node_name").to_pylist(),
             labels=ev.column("timeline_label").to_pylist(),
             devices=list(zip(t.devices.column("device_index").to_pylist(),
                              t.devices.column("device").to_pylist(),
                              t.devices.column("kind").to_pylist(), strict=True)))
    _check_op_stats(c, t, by)


@needs_queries
def test_seed_occupancy(seeds):
    t, _ = seeds[0]
    ev = t.events
    starts = ev.column("start_ns").to_pylist()
    ends = ev.column("end_ns").to_pylist()
    dev = ev.column("device_index").to_pylist()
    devices = list(zip(t.devices.column("device_index").to_pylist(),
                       t.devices.column("device").to_pylist(),
                       t.devices.column("kind").to_pylist(), strict=True))
    assert rows(t.occupancy()) == qo.occupancy(starts, ends, dev, devices)


def test_query_arguments_are_checked(seeds):
    import numpy as np

    t = seeds[0][0]
    # Bounds are int64 nanoseconds: a float would be truncated, 2**64 does not fit.
    with pytest.raises(TypeError, match="start_ns must be an int"):
        t.window(0.5, 10)
    with pytest.raises(TypeError, match="end_ns must be an int"):
        t.window(0, True)
    with pytest.raises(ValueError, match="end_ns must fit in int64"):
        t.window(0, 2**64)
    assert t.window(np.int64(0), np.int64(2**62)).to_pylist() == list(range(len(t)))
    first = t.events["start_ns"][0]  # a pyarrow scalar
    assert t.window(first, first.as_py() + 1).equals(t.window(first.as_py(), first.as_py() + 1))
    with pytest.raises(TypeError, match="bin_ns must be an int"):
        t.occupancy(bin_ns=1.5)
    with pytest.raises(ValueError, match="bin_ns must be a positive"):
        t.occupancy(bin_ns=0)
    assert t.occupancy(bin_ns=np.int64(10**6)).equals(t.occupancy(bin_ns=10**6))
    with pytest.raises(TypeError, match="same_device must be True or False"):
        t.overlaps(same_device="no")
    assert t.overlaps(same_device=np.bool_(False)).equals(t.overlaps(same_device=False))
    assert t.overlaps(same_device=0).equals(t.overlaps(same_device=False))
    # An allocator the trace does not have is a KeyError naming those it has, in both replays
    # (it used to give empty tables), and a list is a TypeError.
    for source in ("records", "tensors"):
        with pytest.raises(
            KeyError, match=f"no allocator 'nosuch' in the {source}; allocators: .*GPU_0_bfc"
        ):
            t.replay(source=source, allocator="nosuch")
        with pytest.raises(TypeError, match="allocator must be a str or None"):
            t.replay(source=source, allocator=["cpu"])
        peaks = t.replay(source=source, allocator="GPU_0_bfc").peaks
        assert peaks["allocator"].to_pylist() == ["GPU_0_bfc"]


# --------------------------------------------------------------------------------------------
# Output budgets: pairs and time bins are not bounded by the input
def _bins_over_block_spans(t, bin_ns: int) -> int:
    """The rows of ``t.occupancy(bin_ns=bin_ns)``, from the events: per device block with
    events, the bins of the grid from the trace's first start that cover the block's span."""
    starts = t.events["start_ns"].to_numpy()
    ends = np.maximum(t.events["end_ns"].to_numpy(), starts)
    block = t.events["device_index"].to_numpy()
    t0 = int(starts.min())
    total = 0
    for b in np.unique(block):
        first = (int(starts[block == b].min()) - t0) // bin_ns
        last = -(-(int(ends[block == b].max()) - t0) // bin_ns)
        total += max(last - first, 1)
    return total


def test_occupancy_bins_past_the_budget_are_refused_before_any_is_made() -> None:
    # occupancy(bin_ns=1) of the 1.45 MB sample used to build 91 M rows (3 GB, 15 s).
    t = tracecore.open(tracecore.sample_path())
    with pytest.raises(ValueError) as e:
        t.occupancy(bin_ns=1)
    assert _bins_over_block_spans(t, 1) == 74016000
    assert str(e.value) == (
        "occupancy(bin_ns=1) would make 74016000 rows of 32 bytes, over the output budget of "
        "1073741824 bytes (the bins over the spans of 7 device blocks; choose a larger bin_ns, "
        "or raise max_output_bytes)"
    )
    rows = t.occupancy(bin_ns=1000).num_rows
    assert rows == _bins_over_block_spans(t, 1000) == 74016
    assert t.occupancy(bin_ns=1000, max_output_bytes=32 * rows).num_rows == rows
    with pytest.raises(ValueError, match="would make 74016 rows of 32 bytes"):
        t.occupancy(bin_ns=1000, max_output_bytes=32 * rows - 1)
    with pytest.raises(TypeError, match="max_output_bytes must be an int"):
        t.occupancy(bin_ns=1000, max_output_bytes=1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_output_bytes must be a number of bytes"):
        t.occupancy(bin_ns=1000, max_output_bytes=-1)


def test_overlaps_stop_at_the_budget() -> None:
    t = tracecore.open(tracecore.sample_path())
    pairs = t.overlaps(same_device=False)
    n = pairs.num_rows
    assert n == 3071
    assert t.overlaps(same_device=False, max_output_bytes=24 * n).equals(pairs)
    with pytest.raises(ValueError) as e:
        t.overlaps(same_device=False, max_output_bytes=24 * n - 1)
    assert str(e.value) == (
        f"overlaps would make more than {n - 1} rows of 24 bytes, over the output budget of "
        f"{24 * n - 1} bytes (narrow left/right, or use same_device=True, or raise "
        f"max_output_bytes)"
    )
    left = np.zeros(len(t), dtype=bool)
    left[:10] = True
    joined = t.overlaps(left, ~left, same_device=False)
    assert t.overlaps(left, ~left, same_device=False, max_output_bytes=24 * joined.num_rows).equals(
        joined
    )
