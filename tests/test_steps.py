"""Steps inside one dump (issue 24, point 2): events.step_id for every format,
Trace.step_times(), Trace.replay(step=N) and the Chrome export's processes and step slices.

The multi-step dump is built from the bundled sample as bench/make_trace.py builds its dumps:
the sample's device blocks repeated step after step with every absolute time shifted by
k * period. Step k also scales every tensor's requested bytes by (k + 1), so that the steps'
figures differ from one another, and drops the outputs of a few nodes in step 1, so that the
steps are not the same graph: a replay that mixed steps would not match.
"""

from __future__ import annotations

import copy
import gzip
import json
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from google.protobuf import text_format

import tf_timeline_model as tfm
import tfproto

tracecore = pytest.importorskip("tracecore")

DATA = Path(__file__).resolve().parent / "data"
KINETO = DATA / "chrome" / "torch_mlp_sgd.pt.trace.json"
XSPACE = DATA / "xspace" / "tf_keras_mlp_fit.xplane.pb"
STEPS = 4


def _sample() -> tfproto.StepStats:
    msg = tfproto.StepStats()
    text_format.Parse(gzip.decompress(tracecore.sample_path().read_bytes()).decode(), msg)
    return msg


def _period_us(msg: tfproto.StepStats) -> int:
    starts = [n.all_start_micros for d in msg.dev_stats for n in d.node_stats]
    ends = [n.all_start_micros + n.all_end_rel_micros for d in msg.dev_stats for n in d.node_stats]
    span = max(ends) - min(starts)
    return -(-(span + max(1000, span // 10)) // 1000) * 1000  # make_trace.py's default period


def _step(seed: tfproto.StepStats, k: int, period_us: int) -> tfproto.StepStats:
    """Step k: the seed with every absolute time shifted by k * period and every tensor's
    requested bytes times (k + 1); step 1 also loses the outputs of every 7th node."""
    msg = copy.deepcopy(seed)
    shift = k * period_us
    for dev in msg.dev_stats:
        for i, node in enumerate(dev.node_stats):
            for name in ("all_start_micros", "scheduled_micros"):
                if getattr(node, name):
                    setattr(node, name, getattr(node, name) + shift)
            for name in ("all_start_nanos", "scheduled_nanos"):
                if getattr(node, name):
                    setattr(node, name, getattr(node, name) + shift * 1000)
            for mem in node.memory:
                for rec in mem.allocation_records:
                    if rec.alloc_micros:
                        rec.alloc_micros += shift
            for out in node.output:
                desc = out.tensor_description.allocation_description
                desc.requested_bytes *= k + 1
            if k == 1 and i % 7 == 3:
                del node.output[:]
    return msg


@pytest.fixture(scope="module")
def dump(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The multi-step dump, text and binary, and each step's own StepStats."""
    seed = _sample()
    period = _period_us(seed)
    steps = [_step(seed, k, period) for k in range(STEPS)]
    root = tmp_path_factory.mktemp("steps")
    text = root / "steps.pbtxt"
    text.write_text("".join(text_format.MessageToString(s) for s in steps))
    binary = root / "steps.pb"
    binary.write_bytes(b"".join(s.SerializeToString() for s in steps))
    singles = []
    for k, s in enumerate(steps):
        p = root / f"step{k}.pb"
        p.write_bytes(s.SerializeToString())
        singles.append(p)
    return {"steps": steps, "text": text, "binary": binary, "singles": singles,
            "devices": len(seed.dev_stats)}


def _span_ns(msg: tfproto.StepStats) -> tuple[int, int]:
    nodes = [n for d in msg.dev_stats for n in d.node_stats]
    start = min(n.all_start_micros for n in nodes) * 1000
    end = max((n.all_start_micros + max(n.all_end_rel_micros, 0)) for n in nodes) * 1000
    return start, end


# ---------------------------------------------------------------------------------------------
# StepStats: step_id, step_times
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["text", "binary"])
def test_step_id_numbers_the_repeated_device_blocks(dump: dict, kind: str) -> None:
    t = tracecore.open(dump[kind])
    assert t.devices.num_rows == STEPS * dump["devices"]
    per_step = [sum(len(d.node_stats) for d in s.dev_stats) for s in dump["steps"]]
    expected = [k for k, n in enumerate(per_step) for _ in range(n)]
    assert t.events["step_id"].to_pylist() == expected
    assert t.events["step_id"].null_count == 0


@pytest.mark.parametrize("kind", ["text", "binary"])
def test_step_times_has_every_step_with_its_span(dump: dict, kind: str) -> None:
    t = tracecore.open(dump[kind])
    times = t.step_times()
    assert times.schema.names == ["step", "start_ns", "end_ns", "duration_ns"]
    assert times.num_rows == STEPS
    rows = [(r["step"], r["start_ns"], r["end_ns"], r["duration_ns"]) for r in times.to_pylist()]
    expected = []
    for k, s in enumerate(dump["steps"]):
        start, end = _span_ns(s)
        expected.append((k, start, end, end - start))
    assert rows == expected
    # the steps follow one another: no overlap
    assert all(rows[k][2] <= rows[k + 1][1] for k in range(STEPS - 1))


def test_one_step_dump_is_step_zero() -> None:
    t = tracecore.open(DATA / "seed000_stepstats.pbtxt")
    assert set(t.events["step_id"].to_pylist()) == {0}
    times = t.step_times().to_pylist()
    assert len(times) == 1 and times[0]["step"] == 0
    assert times[0]["start_ns"] == pc.min(t.events["start_ns"]).as_py()
    # RunMetadata: its blocks are one step too
    t1 = tracecore.open(DATA / "seed001_runmetadata.pbtxt")
    assert set(t1.events["step_id"].to_pylist()) == {0}


# ---------------------------------------------------------------------------------------------
# replay(step=N)
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["text", "binary"])
def test_tensor_model_per_step_equals_timeline_py_on_that_step(dump: dict, kind: str) -> None:
    t = tracecore.open(dump[kind])
    peaks_seen = []
    for k, step_msg in enumerate(dump["steps"]):
        oracle = tfm.allocator_maximums(step_msg)
        r = t.replay(source="tensors", step=k)
        got = {row["allocator"]: row for row in r.peaks.to_pylist()}
        assert set(got) == set(oracle)
        for allocator, (nbytes, ts_us, names) in oracle.items():
            assert got[allocator]["peak_bytes"] == nbytes, (k, allocator)
            assert got[allocator]["peak_time_ns"] == ts_us * 1000, (k, allocator)
            assert got[allocator]["live_tensors"] == len(names)
            live = r.live_at_peak(allocator)
            assert set(live["tensor_name"].to_pylist()) == names
            assert set(t.events["step_id"].take(live["event_id"]).to_pylist()) <= {k}
        peaks_seen.append(oracle["GPU_0_bfc"][0])
    # the steps differ (bytes scaled by k + 1), and the whole-dump model is none of them
    assert len(set(peaks_seen)) == STEPS
    whole = t.replay(source="tensors").peak("GPU_0_bfc")["peak_bytes"]
    assert whole == tfm.allocator_maximums(_concat(dump["steps"]))["GPU_0_bfc"][0]


def _concat(steps: list[tfproto.StepStats]) -> tfproto.StepStats:
    out = tfproto.StepStats()
    for s in steps:
        out.MergeFrom(s)
    return out


def test_records_and_in_use_per_step_equal_the_step_opened_alone(dump: dict) -> None:
    t = tracecore.open(dump["binary"])
    first = 0  # the step's first event id in the dump (steps are contiguous)
    for k, single in enumerate(dump["singles"]):
        alone = tracecore.open(single)
        for source in ("records", "in_use"):
            got = t.replay(source=source, step=k).peaks.to_pylist()
            want = alone.replay(source=source).peaks.to_pylist()
            for row in want:
                if row.get("peak_event_id") is not None:
                    row["peak_event_id"] += first
            assert got == want, (k, source)
            got_timeline = t.replay(source=source, step=k).timeline.to_pylist()
            assert got_timeline == alone.replay(source=source).timeline.to_pylist(), (k, source)
        got_live = t.replay(step=k).live_at_peak("GPU_0_bfc")
        want_live = alone.replay().live_at_peak("GPU_0_bfc")
        assert got_live["bytes"].to_pylist() == want_live["bytes"].to_pylist()
        assert got_live["time_ns"].to_pylist() == want_live["time_ns"].to_pylist()
        assert got_live["event_id"].to_pylist() == [
            i + first for i in want_live["event_id"].to_pylist()
        ]
        snap = t.replay(step=k, baseline="snapshot").peaks.to_pylist()
        assert snap == alone.replay(baseline="snapshot").peaks.to_pylist()
        first += len(alone)


def test_replay_step_arguments(dump: dict) -> None:
    t = tracecore.open(dump["text"])
    with pytest.raises(KeyError, match="no step 99"):
        t.replay(step=99)
    with pytest.raises(TypeError):
        t.replay(step=1.0)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        t.replay(step=True)
    assert t.replay(step=np.int64(2)).peaks.num_rows > 0


# ---------------------------------------------------------------------------------------------
# Chrome export: one process per device, steps as slices
# ---------------------------------------------------------------------------------------------
def test_chrome_export_one_process_per_device_and_step_slices(dump: dict, tmp_path: Path) -> None:
    t = tracecore.open(dump["binary"])
    doc = json.loads(t.to_chrome_trace(tmp_path / "steps.json").read_text())
    events = doc["traceEvents"]
    processes = {e["pid"]: e["args"]["name"] for e in events
                 if e["ph"] == "M" and e["name"] == "process_name"}
    devices = pc.unique(t.devices["device"].cast(pa.string())).to_pylist()
    assert len(devices) == dump["devices"] == 7
    assert sorted(processes.values()) == sorted([*devices, "Allocators", "Steps"])
    assert len(processes) == len(devices) + 2
    xs = [e for e in events if e["ph"] == "X" and e["cat"] == "Op"]
    assert len(xs) == len(t)
    names = t.events["device"].cast(pa.string()).to_pylist()
    assert [processes[e["pid"]] for e in xs] == names
    steps_pid = next(p for p, n in processes.items() if n == "Steps")
    slices = [e for e in events if e["ph"] == "X" and e["pid"] == steps_pid]
    assert [e["name"] for e in slices] == [f"step {k}" for k in range(STEPS)]
    times = t.step_times().to_pylist()
    doc_d = json.loads((tmp_path / "steps.json").read_text(), parse_float=Decimal)
    slices_d = [e for e in doc_d["traceEvents"] if e["ph"] == "X" and e["pid"] == steps_pid]
    assert [(int(e["ts"] * 1000), int(e["dur"] * 1000)) for e in slices_d] == [
        (r["start_ns"], r["duration_ns"]) for r in times
    ]
    # without steps: no Steps process
    doc2 = json.loads(t.to_chrome_trace(tmp_path / "plain.json", show_steps=False).read_text())
    assert not any(e.get("args", {}).get("name") == "Steps" for e in doc2["traceEvents"])


# ---------------------------------------------------------------------------------------------
# Kineto: ProfilerStep#N containment
# ---------------------------------------------------------------------------------------------
def _ns(v: object) -> int:
    exact = Decimal(str(v)) * 1000
    return int(exact.to_integral_value(rounding="ROUND_FLOOR"))


def test_kineto_step_id_is_profiler_step_containment(tmp_path: Path) -> None:
    # The torch fixture with its two `train_step` annotations renamed ProfilerStep#7 and #8.
    doc = json.loads(KINETO.read_text())
    n = 7
    for e in doc["traceEvents"]:
        if e.get("name") == "train_step":
            e["name"] = f"ProfilerStep#{n}"
            n += 1
    assert n == 9
    text = json.dumps(doc)
    path = tmp_path / "steps.pt.trace.json"
    path.write_text(text)
    back = json.loads(text, parse_float=Decimal)
    xs = [e for e in back["traceEvents"] if e.get("ph") == "X"]
    spans: dict[object, list[tuple[int, int, int]]] = {}
    for e in xs:
        if str(e["name"]).startswith("ProfilerStep#"):
            start = _ns(e["ts"])
            spans.setdefault(e["pid"], []).append(
                (start, start + _ns(e["dur"]), int(e["name"].split("#")[1]))
            )
    expected: dict[tuple[str, int], int | None] = {}
    for e in xs:
        start = _ns(e["ts"])
        step = None
        for lo, hi, k in spans.get(e["pid"], []):
            if lo <= start < hi:
                step = k
        expected[(e["name"], start)] = step

    t = tracecore.open(path)
    assert t.kind == "Kineto"
    ev = t.events
    got = {}
    for name, start, step in zip(ev["node_name"].to_pylist(), ev["start_ns"].to_pylist(),
                                 ev["step_id"].to_pylist(), strict=True):
        if (name, start) in expected:
            got[(name, start)] = step
    assert got == expected
    counts = {k: sum(1 for v in expected.values() if v == k) for k in (7, 8, None)}
    assert counts[7] > 10 and counts[8] > 10 and counts[None] >= 1
    times = t.step_times().to_pylist()
    assert [r["step"] for r in times] == [7, 8]
    for r in times:
        lo, hi, _ = next(s for s in spans[28777] if s[2] == r["step"])
        assert r["start_ns"] == lo and r["end_ns"] >= hi


def test_kineto_flow_gives_the_kernel_its_launch_step(tmp_path: Path) -> None:
    events = [
        {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "GPU 0"}},
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 5, "tid": 5,
         "ts": 1000, "dur": 900},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 5, "tid": 5,
         "ts": 1010, "dur": 20},
        {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": 1, "pid": 5, "tid": 5, "ts": 1010},
        {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 2000, "dur": 50},
        {"ph": "f", "bp": "e", "cat": "ac2g", "name": "ac2g", "id": 1, "pid": 0, "tid": 7,
         "ts": 2000},
        {"ph": "X", "cat": "kernel", "name": "unlaunched", "pid": 0, "tid": 7, "ts": 2100,
         "dur": 5},
        {"ph": "X", "cat": "cpu_op", "name": "after", "pid": 5, "tid": 5, "ts": 1900, "dur": 5},
    ]
    path = tmp_path / "k.pt.trace.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    t = tracecore.open(path)
    steps = dict(zip(t.events["node_name"].to_pylist(), t.events["step_id"].to_pylist(),
                     strict=True))
    assert steps == {"ProfilerStep#3": 3, "cudaLaunchKernel": 3, "gemm": 3, "unlaunched": None,
                     "after": None}
    assert t.step_times().to_pylist() == [
        {"step": 3, "start_ns": 1_000_000, "end_ns": 2_050_000, "duration_ns": 1_050_000}
    ]


def test_chrome_trace_without_steps_is_one_step(tmp_path: Path) -> None:
    t = tracecore.open(KINETO)
    assert t.events["step_id"].null_count == len(t)
    times = t.step_times().to_pylist()
    start = pc.min(t.events["start_ns"]).as_py()
    end = pc.max(pc.max_element_wise(t.events["end_ns"], t.events["start_ns"])).as_py()
    assert times == [{"step": 0, "start_ns": start, "end_ns": end, "duration_ns": end - start}]
    assert t.replay(step=0).peaks.to_pylist() == t.replay().peaks.to_pylist()
    with pytest.raises(KeyError, match="no step 1"):
        t.replay(step=1)


# ---------------------------------------------------------------------------------------------
# XSpace: the importer's step_id
# ---------------------------------------------------------------------------------------------
def test_xspace_step_times_one_row_per_step_id() -> None:
    t = tracecore.open(XSPACE)
    steps = t.events["step_id"]
    known = sorted(set(steps.drop_null().to_pylist()))
    times = t.step_times()
    assert times["step"].to_pylist() == known
    assert len(known) >= 1
    for row in times.to_pylist():
        mask = pc.fill_null(pc.equal(steps, row["step"]), False)
        assert row["start_ns"] == pc.min(t.events["start_ns"].filter(mask)).as_py()


def test_a_step_longer_than_int64_is_an_overflow_error_and_exports_still_work(
    tmp_path: Path,
) -> None:
    """Two events 10^16 us apart: step_times() names the overflowing duration; the Chrome and
    Perfetto exports draw the step from its start and end, as before."""
    path = tmp_path / "far.json"
    path.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": -5e15, "dur": 1},
        {"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": 5e15, "dur": 1},
    ]}))
    t = tracecore.open(path)
    with pytest.raises(OverflowError, match=r"step 0: duration_ns \(end_ns .* overflows int64"):
        t.step_times()
    chrome = t.to_chrome_trace(tmp_path / "far.trace.json")
    events = json.loads(chrome.read_text())["traceEvents"]
    step = next(e for e in events if e.get("cat") == "Step")
    assert step["ts"] == -5e15 and step["dur"] == pytest.approx(1e16 + 1)
    assert t.to_perfetto(tmp_path / "far.pftrace").stat().st_size > 0
    # The plots' step overlay draws the spans too.
    pytest.importorskip("matplotlib")
    assert t.plot.occupancy() is not None and t.plot.timeline() is not None
