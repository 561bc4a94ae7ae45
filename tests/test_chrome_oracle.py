"""The Chrome trace reference implementation (tests/chrome_oracle.py) on the real samples and
on small documents, and the C++ event decoder (tracecore._core.chrome_json_events) against
Python's json on every sample, event by event and field by field.
"""

from __future__ import annotations

import gzip
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

import chrome_oracle as oracle
from tracecore import _core as core

DATA = Path(__file__).parent / "data" / "chrome"
SAMPLES = sorted(p for p in DATA.iterdir() if ".trace.json" in p.name)
KINETO = DATA / "torch_mlp_sgd.pt.trace.json"
INT64 = (-(2**63), 2**63 - 1)


def _bytes(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if path.suffix == ".gz" else data


# ------------------------------------------------------------------------------------------
# The decoder against json, event by event
# ------------------------------------------------------------------------------------------
def _decoded_value(value: Any, decoded: Any) -> bool:
    """The decoder's value of one arg against json's (floats as Decimal)."""
    if isinstance(value, (dict, list)):  # raw JSON text
        return isinstance(decoded, str) and json.loads(decoded, parse_float=Decimal) == value
    if isinstance(value, Decimal):
        return isinstance(decoded, float) and decoded == float(value)
    if isinstance(value, int) and not isinstance(value, bool) and not INT64[0] <= value <= INT64[1]:
        return isinstance(decoded, float) and decoded == float(value)
    return type(decoded) is type(value) and decoded == value


def _expected_event(e: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in ("ph", "name", "cat", "s", "bp", "pid", "tid", "id", "bind_id"):
        if e.get(key) is not None:
            out[key] = e[key]
    for key in ("ts", "dur", "tts", "tdur"):
        if e.get(key) is not None:
            out[key + "_ns"] = oracle.to_ns(e[key])
    return out


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_decoder_matches_json_event_by_event(path: Path) -> None:
    data = _bytes(path)
    doc = json.loads(data, parse_float=Decimal)
    events, top_level, summary = core.chrome_json_events(data)
    expected_events = [e for e in doc["traceEvents"] if e]
    assert summary["events"] == len(events) == len(expected_events)
    assert summary["empty_objects"] == len(doc["traceEvents"]) - len(expected_events)
    assert [k for k, _ in top_level] == [k for k in doc if k != "traceEvents"]
    for (key, value) in top_level:
        assert _decoded_value(doc[key], value), key
    for got, want in zip(events, expected_events, strict=True):
        fields = {k: v for k, v in got.items() if k not in ("args", "offset")}
        assert fields == _expected_event(want), (got, want)
        assert data[got["offset"]:got["offset"] + 1] == b"{"
        want_args = want.get("args")
        if want_args is None:
            assert "args" not in got
            continue
        assert [k for k, _ in got["args"]] == list(want_args)
        for k, v in got["args"]:
            assert _decoded_value(want_args[k], v), (k, v, want_args[k])


def test_every_sample_is_detected_and_the_memory_profile_is_not() -> None:
    for path in SAMPLES:
        assert core.looks_like_chrome_json(_bytes(path)[:65536]), path.name
    profile = gzip.decompress((DATA / "tf_keras_mlp_fit.memory_profile.json.gz").read_bytes())
    assert not core.looks_like_chrome_json(profile)


# ------------------------------------------------------------------------------------------
# The reference implementation on the samples
# ------------------------------------------------------------------------------------------
def test_kineto_sample() -> None:
    o = oracle.read_file(KINETO)
    assert o.kind == "Kineto"
    assert o.metadata["baseTimeNanoseconds"] == 1790857026000000000
    host = o.tracks[(28777, 28777)]
    assert (host.device, host.line, host.kind) == ("python", "thread 28777 (python)", "host_thread")
    assert o.tracks[("Spans", "PyTorch Profiler")].kind == "annotation"
    assert len(o.alloc_records) == 130
    assert {r.allocator for r in o.alloc_records} == {"cpu"}
    assert sum(r.bytes for r in o.alloc_records) == o.alloc_records[-1].total_allocated
    assert len(o.flows) == 32 and len(o.links()) == 16
    assert {(a.cat, a.ph, b.ph) for a, b in o.links()} == {("fwdbwd", "s", "f")}
    assert o.unmatched_begin == o.unmatched_end == 0
    ops = [e for e in o.events if e.cat == "cpu_op"]
    assert len(ops) == 338 and all(e.op == e.node_name == e.name for e in ops)
    first = next(e for e in o.events if e.name == "aten::linear")
    assert (first.start_ns, first.end_ns) == (4762454534627543, 4762454534627543 + 116960)


def test_kineto_memory_replay_matches_total_allocated() -> None:
    o = oracle.read_file(KINETO)
    replay = o.replay_in_use()["cpu"]
    totals = [(r.ts_ns, r.total_allocated) for r in o.alloc_records]
    assert replay == totals
    assert max(t for _, t in totals) == 5596 and totals[-1][1] == 3604


def test_xprof_samples() -> None:
    for name in ("tf_keras_mlp_fit.trace.json.gz", "keras_tensorboard_cb_mlp.trace.json.gz"):
        o = oracle.read_file(DATA / name)
        assert o.kind == "ChromeTrace"
        assert {t.device for t in o.tracks.values()} == {"/host:CPU"}
        assert {t.kind for t in o.tracks.values()} == {"host_thread"}
        assert "python" in {t.line for t in o.tracks.values()}
        assert not o.alloc_records and not o.counters and not o.flows
        instants = [e for e in o.events if e.ph == "i"]
        assert instants and all(e.start_ns == e.end_ns for e in instants)


def test_jax_trace_and_perfetto_trace_hold_the_same_events() -> None:
    # trace.json.gz writes 17 significant digits (15.449999999999999), the perfetto file the
    # short form (15.45): the nanoseconds, rounded half to even, are the same.
    a = oracle.read_file(DATA / "jax_mlp2_tanh.trace.json.gz")
    b = oracle.read_file(DATA / "jax_mlp2_tanh.perfetto_trace.json.gz")
    assert a.events == b.events and a.tracks == b.tracks
    assert len(a.events) == 242
    assert a.per_track() == b.per_track()
    ea, _, _ = core.chrome_json_events(_bytes(DATA / "jax_mlp2_tanh.trace.json.gz"))
    eb, _, _ = core.chrome_json_events(_bytes(DATA / "jax_mlp2_tanh.perfetto_trace.json.gz"))
    assert [(e.get("ts_ns"), e.get("dur_ns")) for e in ea] == [
        (e.get("ts_ns"), e.get("dur_ns")) for e in eb]


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_decoder_times_give_the_oracle_events(path: Path) -> None:
    """X and instant events built from the decoder's fields equal the oracle's, per track."""
    events, _, _ = core.chrome_json_events(_bytes(path))
    built = []
    for e in events:
        if e.get("ph") in ("X", "i", "I"):
            start = e.get("ts_ns", 0)
            end = start + e.get("dur_ns", 0) if e["ph"] == "X" else start
            built.append(((e.get("pid"), e.get("tid")), e["ph"], e.get("name", ""), start, end))
    o = oracle.read_file(path)
    assert built == [(x.track, x.ph, x.name, x.start_ns, x.end_ns) for x in o.events]


# ------------------------------------------------------------------------------------------
# The rules on small documents
# ------------------------------------------------------------------------------------------
def _doc(events: list[dict[str, Any]], **top: Any) -> bytes:
    return json.dumps({"traceEvents": events, **top}).encode()


def test_begin_end_pairs_nest_and_unmatched_ones_are_counted() -> None:
    o = oracle.read(_doc([
        {"ph": "E", "pid": 1, "tid": 1, "ts": 0.5},
        {"ph": "B", "pid": 1, "tid": 1, "ts": 1, "name": "outer", "args": {"a": 1}},
        {"ph": "B", "pid": 1, "tid": 1, "ts": 2, "name": "inner"},
        {"ph": "B", "pid": 1, "tid": 2, "ts": 2.5, "name": "other thread"},
        {"ph": "E", "pid": 1, "tid": 1, "ts": 3},
        {"ph": "E", "pid": 1, "tid": 1, "ts": 4, "args": {"b": 2}},
        {"ph": "B", "pid": 1, "tid": 1, "ts": 5, "name": "never closed"},
    ]))
    assert [(e.name, e.start_ns, e.end_ns) for e in o.events] == [
        ("outer", 1000, 4000), ("inner", 2000, 3000)]
    assert o.events[0].args == {"a": 1, "b": 2}
    assert o.events[0].arg_list == [("a", 1), ("b", 2)]
    assert (o.unmatched_begin, o.unmatched_end) == (2, 1)


def test_timeline_py_document() -> None:
    o = oracle.read(json.dumps([
        {"name": "process_name", "ph": "M", "pid": 1,
         "args": {"name": "/job:localhost/replica:0/task:0/device:GPU:0 Compute"}},
        {"name": "process_name", "ph": "M", "pid": 2, "args": {"name": "Allocators"}},
        {"ph": "X", "cat": "Op", "name": "MatMul", "pid": 1, "tid": 0, "ts": 10, "dur": 5,
         "args": {"name": "dense/MatMul", "op": "MatMul"}},
        {"ph": "C", "cat": "Memory", "name": "GPU_0_bfc", "pid": 2, "tid": 0, "ts": 10,
         "args": {"GPU_0_bfc": 256}},
        {"ph": "C", "cat": "Memory", "name": "GPU_0_bfc", "pid": 2, "tid": 0, "ts": 12,
         "args": {"GPU_0_bfc": 128}},
    ]).encode())
    assert o.kind == "ChromeTrace"
    (event,) = o.events
    assert (event.op, event.node_name, event.cat) == ("MatMul", "dense/MatMul", "Op")
    assert o.tracks[(1, 0)].kind == "stream"
    assert [(c.series, c.value) for c in o.counters] == [("GPU_0_bfc", 256), ("GPU_0_bfc", 128)]
    assert [(r.allocator, r.bytes, r.total_allocated) for r in o.alloc_records] == [
        ("GPU_0_bfc", 256, 256), ("GPU_0_bfc", -128, 128)]


def test_kineto_gpu_tracks_flows_and_memory() -> None:
    o = oracle.read(_doc([
        {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "GPU 0"}},
        {"ph": "M", "name": "thread_name", "pid": 0, "tid": 7, "args": {"name": "stream 7"}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 9, "tid": 9,
         "ts": "100.000", "dur": "5.5"},
        {"ph": "s", "id": 31, "pid": 9, "tid": 9, "ts": 100, "cat": "ac2g", "name": "ac2g"},
        {"ph": "X", "cat": "kernel", "name": "sgemm", "pid": 0, "tid": 7, "ts": 104.25,
         "dur": 2},
        {"ph": "f", "id": 31, "pid": 0, "tid": 7, "ts": 104.25, "cat": "ac2g", "name": "ac2g",
         "bp": "e"},
        {"ph": "i", "s": "t", "name": "[memory]", "pid": 9, "tid": 9, "ts": 99,
         "args": {"Bytes": 512, "Total Allocated": 512, "Total Reserved": 2097152,
                  "Addr": 7, "Device Type": 1, "Device Id": 0}},
        {"ph": "i", "s": "t", "name": "[memory]", "pid": 9, "tid": 9, "ts": 107,
         "args": {"Bytes": -512, "Total Allocated": 0, "Total Reserved": 2097152,
                  "Addr": 7, "Device Type": 1, "Device Id": 0}},
    ], schemaVersion=1, deviceProperties=[]))
    assert o.kind == "Kineto"
    assert o.tracks[(0, 7)].kind == "stream" and o.tracks[(0, 7)].line == "stream 7"
    assert o.tracks[(9, 9)] == oracle.Track(9, 9, "9", "9", "host_thread")
    assert [(e.name, e.start_ns, e.end_ns) for e in o.events] == [
        ("cudaLaunchKernel", 100000, 105500), ("[memory]", 99000, 99000),
        ("[memory]", 107000, 107000), ("sgemm", 104250, 106250)]  # grouped by track
    assert [r.event_id for r in o.alloc_records] == [1, 2]
    ((src, dst),) = o.links()
    assert (src.track, dst.track, dst.bp) == ((9, 9), (0, 7), "e")
    assert [(r.allocator, r.bytes) for r in o.alloc_records] == [("cuda:0", 512), ("cuda:0", -512)]
    assert o.replay_in_use() == {"cuda:0": [(99000, 512), (107000, 0)]}


def test_times_are_exact_decimal_arithmetic() -> None:
    o = oracle.read(b'{"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, '
                    b'"ts": 4762454534497.4975, "dur": 0.0015}]}')
    (e,) = o.events
    # 4762454534497497.5 ns rounds to even; the duration is computed on its own (1.5 -> 2).
    assert (e.start_ns, e.end_ns) == (4762454534497498, 4762454534497498 + 2)


def test_not_a_trace() -> None:
    with pytest.raises(ValueError, match="not a Chrome trace"):
        oracle.read(b'{"displayTimeUnit": "ns"}')


def test_generated_kineto_trace(tmp_path: Path) -> None:
    """bench/make_kineto.py's output: valid, the decoder agrees with json on it, and each
    allocator's replay matches its Total Allocated series."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    from make_kineto import make_kineto

    out = tmp_path / "gen.pt.trace.json"
    info = make_kineto(0.5, out)
    assert info["steps"] >= 1 and out.stat().st_size == info["bytes"]
    data = out.read_bytes()
    o = oracle.read(data)
    assert o.kind == "Kineto"
    events, _, summary = core.chrome_json_events(data)
    assert summary["events"] == len(json.loads(data)["traceEvents"]) == info["events"]
    replay = o.replay_in_use()
    assert set(replay) == {"cpu", "cuda:0"}
    for allocator, series in replay.items():
        totals = [(r.ts_ns, r.total_allocated) for r in o.alloc_records if r.allocator == allocator]
        assert series == totals, allocator
    kernels = [e for e in o.events if e.cat == "kernel"]
    assert kernels and o.tracks[(0, 7)].kind == "stream"
    assert sum(1 for a, _ in o.links() if a.cat == "ac2g") == len(kernels)
