"""tracecore.open on Chrome trace JSON (issue 23): every table against the reference
implementation (tests/chrome_oracle.py, on Python's json module), on the real samples and on
small and hypothesis-generated documents."""

from __future__ import annotations

import gzip
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import chrome_oracle as oracle
import tracecore
from tracecore import _core
from tracecore._arrow import schema_from_capsule

DATA = Path(__file__).parent / "data" / "chrome"
SAMPLES = sorted(p for p in DATA.iterdir() if ".trace.json" in p.name)
KINETO = DATA / "torch_mlp_sgd.pt.trace.json"


def _open_bytes(tmp_path: Path, data: bytes, name: str = "t.json") -> tracecore.Trace:
    path = tmp_path / name
    path.write_bytes(data)
    return tracecore.open(path)


def _id_text(v: Any) -> str:
    return "" if v is None else str(v)


def _value(v: Any) -> tuple[str, Any]:
    """(value_kind, value) of an args value as event_stats holds it."""
    if isinstance(v, bool):
        return "bool", int(v)
    if isinstance(v, int):
        if -(2**63) <= v < 2**63:
            return "int64", v
        return "double", float(v)
    if isinstance(v, Decimal):
        return "double", float(v)
    if isinstance(v, str):
        return "str", v
    if v is None:
        return "null", None
    return ("object" if isinstance(v, dict) else "list"), v


def check_against_oracle(t: tracecore.Trace, data: bytes) -> oracle.ChromeOracle:
    o = oracle.read(data)
    assert t.kind == o.kind
    assert t.format == "json"
    # devices: one per track, in order of first use
    devices = t.devices.to_pylist()
    keys = list(o.tracks)
    assert len(devices) == len(keys)
    index = {}
    for i, (key, d) in enumerate(zip(keys, devices, strict=True)):
        tr = o.tracks[key]
        assert d["device_index"] == i
        assert (d["device"], d["line"], d["kind"]) == (tr.device, tr.line, tr.kind), key
        assert d["line_id"] == (tr.tid if isinstance(tr.tid, int) else None)
        index[key] = i
    # events, row by row
    rows = t.events.to_pylist()
    assert len(rows) == len(o.events) == t.stats["events"]
    for r, e in zip(rows, o.events, strict=True):
        got = (r["device_index"], r["device"], r["node_name"], r["op"], r["timeline_label"],
               r["cat"], r["start_ns"], r["end_ns"], r["op_start_ns"], r["op_end_ns"])
        want = (index[e.track], o.tracks[e.track].device, e.node_name, e.op, e.name, e.cat,
                e.start_ns, e.end_ns, e.start_ns, e.end_ns)
        assert got == want
        tid = e.track[1]
        assert r["thread_id"] == (tid if isinstance(tid, int) and 0 <= tid < 2**32 else 0)
    per_track = o.per_track()
    for key, (n, total) in per_track.items():
        d = devices[index[key]]
        assert d["n_events"] == n
        mine = [r for r in rows if r["device_index"] == index[key]]
        assert sum(r["end_ns"] - r["start_ns"] for r in mine) == total
    assert t.stats["unmatched_begin"] == o.unmatched_begin
    assert t.stats["unmatched_end"] == o.unmatched_end
    assert t.stats["other_events"] == sum(o.other_phases.values())
    # event_stats: every args entry (a B/E pair: the B's, then the E's)
    stats = t.event_stats.to_pylist()
    want_stats = []
    for i, e in enumerate(o.events):
        for pos, (k, v) in enumerate(e.arg_list):
            want_stats.append((i, k, pos, *_value(v)))
    got_stats = []
    for s in stats:
        kind = s["value_kind"]
        if kind in ("int64", "bool"):
            v: Any = s["int64_value"]
        elif kind == "double":
            v = s["double_value"]
        elif kind == "str":
            v = s["str_value"]
        elif kind in ("list", "object"):
            v = json.loads(s["str_value"], parse_float=Decimal)
        else:
            v = None
        got_stats.append((s["event_id"], s["name"], s["metadata_id"], kind, v))
    assert sorted(got_stats, key=lambda x: (x[0], x[2])) == sorted(
        want_stats, key=lambda x: (x[0], x[2]))
    # counters
    counters = t.counters.to_pylist()
    assert len(counters) == len(o.counters)
    for c, w in zip(counters, o.counters, strict=True):
        assert (c["device_index"], c["name"], c["series"], c["time_ns"]) == (
            index[w.track], w.name, w.series, w.ts_ns)
        if isinstance(w.value, (int, Decimal)) and not isinstance(w.value, bool):
            assert c["value"] == float(w.value)
            exact = isinstance(w.value, int) and -(2**63) <= w.value < 2**63
            assert c["int_value"] == (w.value if exact else None)
        else:
            assert c["value"] is None and c["int_value"] is None
    # links
    links = t.links.to_pylist()
    want_links = o.links()
    assert len(links) == len(want_links)
    for lk, (a, b) in zip(links, want_links, strict=True):
        assert (lk["from_device_index"], lk["to_device_index"], lk["cat"], lk["flow_id"],
                lk["name"], lk["from_ns"], lk["to_ns"], lk["to_phase"]) == (
            index[a.track], index[b.track], a.cat or "", _id_text(a.id), a.name or "",
            a.ts_ns, b.ts_ns, b.ph)
    # alloc_records
    records = t.alloc_records.to_pylist()
    assert len(records) == len(o.alloc_records)
    for r, w in zip(records, o.alloc_records, strict=True):
        assert (r["event_id"], r["allocator"], r["time_ns"], r["bytes"], r["heap_allocated"],
                r["reserved"]) == (w.event_id, w.allocator, w.ts_ns, w.bytes, w.total_allocated,
                                   w.total_reserved)
        addr = None if w.addr is None else w.addr % 2**64
        assert r["address"] == addr
    assert t.metadata == o.metadata
    return o


def _bytes(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if path.suffix == ".gz" else data


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_sample_tables_equal_the_oracle(path: Path) -> None:
    t = tracecore.open(path)
    o = check_against_oracle(t, _bytes(path))
    assert len(o.events) > 0


def test_kineto_sample_kind_memory_and_replay() -> None:
    t = tracecore.open(KINETO)
    assert (t.kind, t.format) == ("Kineto", "json")
    assert t.metadata["schemaVersion"] == 1
    o = oracle.read(KINETO.read_bytes())
    assert t.stats["alloc_records"] == len(o.alloc_records) == 130
    # The records replay reaches the file's own Total Allocated after every record.
    r = t.replay(source="in_use")
    timeline = r.timeline.to_pylist()
    want = o.replay_in_use()
    for allocator, series in want.items():
        got = [(x["time_ns"], x["bytes_in_use"]) for x in timeline if x["allocator"] == allocator]
        assert got == sorted(series, key=lambda p: p[0])
    (peak,) = r.peaks.to_pylist()
    assert peak["allocator"] == "cpu"
    assert peak["peak_bytes"] == max(v for _, v in want["cpu"])
    records = t.replay(source="records").peaks.to_pylist()
    assert [p["allocator"] for p in records] == ["cpu"]


def test_a_json_object_that_is_no_trace_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(tracecore.TraceFormatError, match=r"line 1, column 1: .*traceEvents"):
        _open_bytes(tmp_path, b'{"displayTimeUnit": "ns", "foo": 1}')
    with pytest.raises(tracecore.TraceFormatError, match=r"line 2, column"):
        _open_bytes(tmp_path, b'{"traceEvents": [\n{"ph": "X", "ts": 1,, }]}')


def test_time_overflow_is_located(tmp_path: Path) -> None:
    doc = b'{"traceEvents": [\n {"ph": "X", "pid": 1, "tid": 1, "ts": 9223372036854775, "dur": 9}]}'
    with pytest.raises(tracecore.TraceFormatError, match=r"line 2, column 2: .*overflows int64"):
        _open_bytes(tmp_path, doc)


def test_kineto_memory_values_must_be_integers(tmp_path: Path) -> None:
    doc = json.dumps({"traceEvents": [
        {"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": 1, "args": {"Bytes": "12"}},
    ]}).encode()
    with pytest.raises(tracecore.TraceFormatError, match=r'"Bytes" is not an integer'):
        _open_bytes(tmp_path, doc)


def test_unmatched_begin_is_no_event_and_ids_follow(tmp_path: Path) -> None:
    doc = json.dumps({"traceEvents": [
        {"ph": "B", "pid": 1, "tid": 1, "ts": 1, "name": "never closed", "args": {"x": 1}},
        {"ph": "E", "pid": 1, "tid": 2, "ts": 1},
        {"ph": "X", "pid": 1, "tid": 1, "ts": 2, "dur": 1, "name": "a", "args": {"y": 2}},
        {"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": 3,
         "args": {"Bytes": 8, "Total Allocated": 8}},
    ]}).encode()
    t = _open_bytes(tmp_path, doc)
    check_against_oracle(t, doc)
    assert t.events["node_name"].to_pylist() == ["a", "[memory]"]
    assert t.event_stats["event_id"].to_pylist() == [0, 1, 1]
    assert t.alloc_records["event_id"].to_pylist() == [1]
    assert (t.stats["unmatched_begin"], t.stats["unmatched_end"]) == (1, 1)


def test_timeline_py_trace(tmp_path: Path) -> None:
    doc = json.dumps({"traceEvents": [
        {"name": "process_name", "ph": "M", "pid": 1,
         "args": {"name": "/job:localhost/replica:0/task:0/device:GPU:0 Compute"}},
        {"name": "process_name", "ph": "M", "pid": 2, "args": {"name": "Allocators"}},
        {"ph": "X", "cat": "Op", "name": "MatMul", "pid": 1, "tid": 0, "ts": 10, "dur": 5,
         "args": {"name": "dense/MatMul", "op": "MatMul", "input0": "x"}},
        {"ph": "C", "cat": "Memory", "name": "GPU_0_bfc", "pid": 2, "tid": 0, "ts": 10,
         "args": {"GPU_0_bfc": 256}},
        {"ph": "C", "cat": "Memory", "name": "GPU_0_bfc", "pid": 2, "tid": 0, "ts": 12,
         "args": {"GPU_0_bfc": 128}},
        {"ph": "s", "cat": "DataFlow", "id": 0, "pid": 1, "tid": 0, "ts": 11, "name": "t"},
        {"ph": "t", "cat": "DataFlow", "id": 0, "pid": 1, "tid": 0, "ts": 12, "name": "t"},
        {"ph": "f", "cat": "DataFlow", "id": 0, "pid": 1, "tid": 0, "ts": 14, "name": "t"},
    ]}).encode()
    t = _open_bytes(tmp_path, doc)
    check_against_oracle(t, doc)
    assert t.kind == "ChromeTrace"
    assert t.events.to_pylist()[0]["op"] == "MatMul"
    assert t.devices["kind"].to_pylist() == ["stream", "host_thread"]
    assert t.alloc_records["bytes"].to_pylist() == [256, -128]
    assert t.links["to_phase"].to_pylist() == ["t", "f"]
    assert t.links["from_event_id"].to_pylist() == [0, 0]


def test_kineto_flow_binds_launch_to_kernel(tmp_path: Path) -> None:
    doc = json.dumps({"schemaVersion": 1, "traceEvents": [
        {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "GPU 0"}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 9, "tid": 9,
         "ts": "100.000", "dur": "5.5"},
        {"ph": "s", "id": 31, "pid": 9, "tid": 9, "ts": 100, "cat": "ac2g", "name": "ac2g"},
        {"ph": "X", "cat": "kernel", "name": "sgemm", "pid": 0, "tid": 7, "ts": 104.25, "dur": 2},
        {"ph": "f", "id": 31, "pid": 0, "tid": 7, "ts": 104.25, "cat": "ac2g", "name": "ac2g",
         "bp": "e"},
    ]}).encode()
    t = _open_bytes(tmp_path, doc)
    check_against_oracle(t, doc)
    (link,) = t.links.to_pylist()
    assert (link["from_event_id"], link["to_event_id"]) == (0, 1)
    assert t.devices["kind"].to_pylist() == ["host_thread", "stream"]


def test_event_stats_are_read_again_from_the_file(tmp_path: Path) -> None:
    path = tmp_path / "k.pt.trace.json"
    path.write_bytes(KINETO.read_bytes())
    t = tracecore.open(path)
    path.write_bytes(KINETO.read_bytes()[:-10] + b"          ")  # same size, another mtime
    import os
    os.utime(path, ns=(1, 1))
    with pytest.raises(tracecore.TraceFormatError, match="changed since it was opened"):
        t.event_stats  # noqa: B018


def test_gzip_and_bytes(tmp_path: Path) -> None:
    data = KINETO.read_bytes()
    gz = tmp_path / "k.pt.trace.json.gz"
    gz.write_bytes(gzip.compress(data))
    a = tracecore.open(gz)
    b = tracecore.open(KINETO)
    assert a.events.equals(b.events)
    assert a.event_stats.equals(b.event_stats)


# ------------------------------------------------------------------------------------------
# Generated documents
# ------------------------------------------------------------------------------------------
ids = st.one_of(st.integers(-3, 3), st.sampled_from(["a", "Spans", "", "é"]))
times = st.one_of(
    st.integers(-10**9, 10**12),
    st.decimals(min_value=-10**6, max_value=10**9, places=4, allow_nan=False),
)
scalars = st.one_of(
    st.integers(-(2**70), 2**70), st.booleans(), st.none(),
    st.text(max_size=6), st.floats(allow_nan=False, allow_infinity=False),
)
arg_values = st.recursive(scalars, lambda c: st.lists(c, max_size=3) | st.dictionaries(
    st.text(max_size=3), c, max_size=3), max_leaves=6)


@st.composite
def events(draw: st.DrawFn) -> dict[str, Any]:
    ph = draw(st.sampled_from(["X", "X", "B", "E", "i", "I", "C", "s", "t", "f", "M", "b", "P"]))
    e: dict[str, Any] = {"ph": ph, "pid": draw(ids)}
    if draw(st.booleans()):
        e["tid"] = draw(ids)
    e["ts"] = draw(times)
    if ph == "X" and draw(st.booleans()):
        e["dur"] = draw(st.integers(0, 10**6))
    if ph == "M":
        e["name"] = draw(st.sampled_from(["process_name", "thread_name", "process_labels"]))
        e["args"] = {"name": draw(st.one_of(st.text(max_size=8), st.integers()))}
        return e
    if ph == "i" and draw(st.integers(0, 3)) == 0:
        e["name"] = "[memory]"
        e["args"] = {"Bytes": draw(st.integers(-(2**40), 2**40)),
                     "Total Allocated": draw(st.integers(0, 2**40)),
                     "Addr": draw(st.integers(-(2**63), 2**63 - 1)),
                     "Device Type": draw(st.sampled_from([0, 1, 3])),
                     "Device Id": draw(st.integers(-1, 2))}
        return e
    if draw(st.booleans()):
        e["name"] = draw(st.text(max_size=8))
    if draw(st.booleans()):
        e["cat"] = draw(st.sampled_from(["kernel", "cpu_op", "ac2g", "Memory", "é"]))
    if ph in "stf":
        e["id"] = draw(st.one_of(st.integers(0, 3), st.sampled_from(["x", "y"])))
        if ph == "f" and draw(st.booleans()):
            e["bp"] = "e"
    if draw(st.booleans()):
        e["args"] = draw(st.dictionaries(st.text(max_size=4), arg_values, max_size=4))
    return e


def _dumps(doc: Any, draw_ws: bool) -> bytes:
    text = json.dumps(doc, default=str, ensure_ascii=draw_ws, indent=1 if draw_ws else None)
    return text.encode()


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(evs=st.lists(events(), max_size=25), pretty=st.booleans(), bare=st.booleans(),
       kineto=st.booleans())
def test_generated_documents_equal_the_oracle(tmp_path: Path, evs: list[dict[str, Any]],
                                              pretty: bool, bare: bool, kineto: bool) -> None:
    def encode(v: Any) -> Any:
        return float(v) if isinstance(v, Decimal) else v
    # Decimals are written as their exact text by a custom encoder.
    # In time order, as tracers write them: an E never precedes its B (that is an error,
    # tested on its own).
    evs = sorted(evs, key=lambda e: Decimal(e["ts"]))
    docs: Any = evs if bare else {"traceEvents": evs, **({"schemaVersion": 1} if kineto else {})}
    text = json.dumps(docs, indent=1 if pretty else None, ensure_ascii=pretty,
                      default=lambda d: f"@@{d}@@")
    text = text.replace('"@@', "").replace('@@"', "")
    data = text.encode()
    if bare and not evs:
        return  # an empty array is no trace tracecore recognises
    try:
        o = oracle.read(data)
    except (OverflowError, ValueError):
        o = None
    path = tmp_path / "g.json"
    path.write_bytes(data)
    if o is not None and not any(
        e.start_ns >= 2**63 or e.start_ns < -(2**63) or e.end_ns >= 2**63 or e.end_ns < -(2**63)
        for e in o.events
    ):
        t = tracecore.open(path, cache=False)
        check_against_oracle(t, data)
    else:
        with pytest.raises(tracecore.TraceFormatError):
            tracecore.open(path, cache=False)


def test_arrow_tables_have_the_declared_schema() -> None:
    t = tracecore.open(KINETO)
    for name in ("counters", "links", "event_stats", "alloc_records", "devices"):
        table = getattr(t, name)
        assert isinstance(table, pa.Table)
        assert table.schema == schema_from_capsule(_core.schema(name)), name


# ------------------------------------------------------------------------------------------
# Round trip: what to_chrome_trace writes reads back into the same events
# ------------------------------------------------------------------------------------------
ROUND_TRIP = [
    Path(__file__).parent / "data" / "seed000_stepstats.pbtxt",
    Path(__file__).parent / "data" / "xspace" / "tf_keras_mlp_fit.xplane.pb",
    Path(__file__).parent / "data" / "xspace" / "jax_mlp2_tanh.xplane.pb",
    KINETO,
]


def _event_rows(t: tracecore.Trace) -> list[tuple[Any, ...]]:
    e = t.events
    return sorted(zip(e["device"].to_pylist(), e["node_name"].to_pylist(),
                      [op or "" for op in e["op"].to_pylist()], e["start_ns"].to_pylist(),
                      e["end_ns"].to_pylist(), strict=True))


@pytest.mark.parametrize("path", ROUND_TRIP, ids=lambda p: p.name)
def test_chrome_export_reads_back_into_the_same_events(path: Path, tmp_path: Path) -> None:
    t = tracecore.open(path)
    out = tmp_path / "round.json"
    t.to_chrome_trace(out, show_steps=False)  # the step slices would read back as events
    back = tracecore.open(out)
    assert back.kind == "ChromeTrace" and back.format == "json"
    assert len(back.events) == len(t.events) > 0
    assert _event_rows(back) == _event_rows(t)


# ------------------------------------------------------------------------------------------
# Mutated samples: an error with its place, or tables; never a crash or a hang
# ------------------------------------------------------------------------------------------
_MUTATE_CHILD = r"""
import json, random, re, sys
from pathlib import Path
import tracecore
src, workdir, n, seed = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
data = Path(src).read_bytes()
rng = random.Random(seed)
tokens = [b"{", b"}", b"[", b"]", b",", b":", b'"', b"\\", b"\\u", b"\\ud800", b"0", b"-",
          b"1e999", b"null", b"\xff", b"\xc3", b"\x00", b'"ph":"B"', b'"ph":"E"', b'"ts":',
          b'"dur":-', b"99999999999999999999", b'{"ph":"X"}', b"{}"]
out = {"ok": 0, "error": 0, "bad": []}
for i in range(n):
    d = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(4)
        at = rng.randrange(len(d) + 1)
        if op == 0 and d:
            d[min(at, len(d) - 1)] = rng.randrange(256)
        elif op == 1:
            d[at:at] = rng.choice(tokens)
        elif op == 2:
            del d[at:at + rng.randint(1, 64)]
        else:
            d = d[:at]
    path = workdir / "m.json"
    path.write_bytes(bytes(d))
    (workdir / "last_input.bin").write_bytes(bytes(d))
    try:
        t = tracecore.open(path, cache=False)
        t.events, t.event_stats, t.links, t.counters, t.alloc_records
        out["ok"] += 1
    except tracecore.TraceFormatError as e:
        out["error"] += 1
        if not re.search(r"line \d+, column \d+|byte offset \d+", str(e)):
            out["bad"].append(str(e)[:200])
print(json.dumps(out))
"""


def test_mutated_samples_error_or_open(tmp_path: Path) -> None:
    import subprocess
    import sys

    child = tmp_path / "child.py"
    child.write_text(_MUTATE_CHILD)
    results = []
    for i, src in enumerate([KINETO, DATA / "jax_mlp2_tanh.trace.json.gz"]):
        data = _bytes(src)
        plain = tmp_path / f"src{i}.json"
        plain.write_bytes(data)
        proc = subprocess.run([sys.executable, str(child), str(plain), str(tmp_path), "75", str(i)],
                              capture_output=True, text=True, timeout=300, check=False)
        assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
        results.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    for r in results:
        assert r["bad"] == []
        assert r["ok"] + r["error"] == 75
        assert r["error"] > 0


# ------------------------------------------------------------------------------------------
# Many ranks: the rank from distributedInfo, NCCL collectives
# ------------------------------------------------------------------------------------------
def _kineto_rank(rank: int, late_us: int) -> bytes:
    events = [
        {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "GPU 0"}},
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 5, "tid": 5,
         "ts": 1000, "dur": 900},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 5, "tid": 5, "ts": 1010,
         "dur": 100 + late_us},
        {"ph": "X", "cat": "cpu_op", "name": "nccl:all_reduce", "pid": 5, "tid": 5,
         "ts": 1200 + late_us, "dur": 50},
        {"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce_RING_LL_Sum_float",
         "pid": 0, "tid": 7, "ts": 1300 + late_us, "dur": 400 - late_us},
    ]
    return json.dumps({"schemaVersion": 1, "distributedInfo": {"backend": "nccl", "rank": rank,
                                                                "world_size": 2},
                       "traceEvents": events}).encode()


def test_open_many_takes_the_rank_from_distributed_info(tmp_path: Path) -> None:
    # Paths that name no rank, and one that names another: the trace's own rank wins.
    a = tmp_path / "host_a" / "x.pt.trace.json"
    b = tmp_path / "worker_7" / "y.pt.trace.json"
    for p, data in ((a, _kineto_rank(0, 0)), (b, _kineto_rank(1, 80))):
        p.parent.mkdir()
        p.write_bytes(data)
    ts = tracecore.open_many(str(tmp_path / "*" / "*.pt.trace.json"))
    assert sorted(ts.traces["rank"].to_pylist()) == [0, 1]
    c = ts.collectives()
    rows = sorted((r["rank"], r["node_name"], r["collective"], r["wait_ns"]) for r in c.to_pylist())
    assert rows == [
        (0, "nccl:all_reduce", "allreduce", 80_000),
        (0, "ncclKernel_AllReduce_RING_LL_Sum_float", "allreduce", 80_000),
        (1, "nccl:all_reduce", "allreduce", 0),
        (1, "ncclKernel_AllReduce_RING_LL_Sum_float", "allreduce", 0),
    ]
    stragglers = ts.stragglers().to_pylist()
    assert stragglers[0]["slowest_rank"] == 1
    # Dask: one partition per file, the rank from the file's head (gzip'ed too)
    pytest.importorskip("dask.dataframe")
    from tracecore import dask as tc_dask

    (b.parent / "y.pt.trace.json.gz").write_bytes(gzip.compress(b.read_bytes()))
    b.unlink()
    events = tc_dask.read_traces(str(tmp_path / "*" / "*.pt.trace.json*")).compute()
    assert sorted(set(events["rank"].tolist())) == [0, 1]
    assert len(events) == 2 * 4


def test_errors_replace_turns_bad_strings_into_u_fffd(tmp_path: Path) -> None:
    # A real PyTorch trace can hold a raw control character and cut UTF-8 in its names.
    doc = (b'{"traceEvents": [\n{"ph": "X", "pid": 1, "tid": 1, "ts": 1, "dur": 1, '
           b'"name": "a\x01b\xc3", "args": {"k": "\xff"}}]}')
    with pytest.raises(tracecore.TraceFormatError, match=r"line 2, column \d+: .*"):
        _open_bytes(tmp_path, doc)
    t = tracecore.open(tmp_path / "t.json", errors="replace", cache=True)
    assert t.events["node_name"].to_pylist() == ["a\ufffdb\ufffd"]
    assert t.event_stats["str_value"].to_pylist() == ["\ufffd"]
    assert "loaded_from" not in t.stats  # not cached
    with pytest.raises(ValueError, match="errors must be 'strict' or 'replace', not 'ignore'"):
        tracecore.open(tmp_path / "t.json", errors="ignore")


def test_timeline_py_memory_counters_replay(tmp_path: Path) -> None:
    doc = json.dumps({"traceEvents": [
        {"ph": "X", "cat": "Op", "name": "MatMul", "pid": 1, "tid": 0, "ts": 10, "dur": 5,
         "args": {"name": "dense/MatMul", "op": "MatMul"}},
        {"ph": "C", "cat": "Memory", "name": "GPU_0_bfc", "pid": 2, "tid": 0, "ts": 10,
         "args": {"GPU_0_bfc": 256}},
        {"ph": "C", "cat": "Memory", "name": "GPU_0_bfc", "pid": 2, "tid": 0, "ts": 12,
         "args": {"GPU_0_bfc": 128}},
    ]}).encode()
    t = _open_bytes(tmp_path, doc)
    records = t.replay(source="records")
    assert records.peaks.to_pylist()[0]["peak_bytes"] == 256
    live = records.live_at_peak("GPU_0_bfc").to_pylist()
    assert [(r["event_id"], r["node_name"], r["bytes"]) for r in live] == [(-1, None, 256)]
    in_use = t.replay(source="in_use")
    assert [(r["time_ns"], r["bytes_in_use"]) for r in in_use.timeline.to_pylist()] == [
        (10_000, 256), (12_000, 128)]



# ------------------------------------------------------------------------------------------
# Review findings, each with its input
# ------------------------------------------------------------------------------------------
def _union_ns(intervals: list[tuple[int, int]]) -> int:
    total, end = 0, None
    start = None
    for a, b in sorted(intervals):
        if end is None or a > end:
            if end is not None:
                total += end - start
            start, end = a, b
        else:
            end = max(end, b)
    return total + (end - start if end is not None else 0)


def test_interleaved_tracks_are_grouped_and_queries_see_each(tmp_path: Path) -> None:
    # Events of two tracks alternate in the file; the queries take a device's rows as a run.
    evs = []
    for k in range(4):
        evs.append({"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 10 * k, "dur": 1})
        evs.append({"ph": "X", "name": "b", "pid": 2, "tid": 1, "ts": 10 * k, "dur": 5})
    doc = json.dumps({"traceEvents": evs}).encode()
    t = _open_bytes(tmp_path, doc)
    check_against_oracle(t, doc)
    assert t.events["device_index"].to_pylist() == [0, 0, 0, 0, 1, 1, 1, 1]
    busy = {r["device"]: r["busy_ns"] for r in t.occupancy().to_pylist()}
    rows = t.events.to_pylist()
    for dev in ("1", "2"):
        want = _union_ns([(r["start_ns"], r["end_ns"]) for r in rows if r["device"] == dev])
        assert busy[dev] == want
    assert busy == {"1": 4000, "2": 20000}


def test_kineto_sample_occupancy_equals_the_interval_union() -> None:
    t = tracecore.open(KINETO)
    rows = t.events.to_pylist()
    for r in t.occupancy().to_pylist():
        mine = [(e["start_ns"], e["end_ns"]) for e in rows if e["device"] == r["device"]]
        assert r["busy_ns"] == _union_ns(mine), r["device"]


def test_a_binary_dump_that_starts_like_a_json_object_opens(tmp_path: Path) -> None:
    # StepStats { dev_stats { device: <121 bytes> } }: 0a 7b 0a 79 ... ('\n', '{', '\n', 'y')
    name = b"/device:GPU:0/" + b"x" * 107
    dev = b"\x0a" + bytes([len(name)]) + name
    data = b"\x0a" + bytes([len(dev)]) + dev
    assert data[:2] == b"\n{"
    t = _open_bytes(tmp_path, data, "ss.pb")
    assert (t.kind, t.format) == ("StepStats", "binary")
    assert t.devices["device"].to_pylist() == [name.decode()]
    # A binary dump whose first bytes read '\n{"' is taken for JSON first, then read as binary.
    name2 = b'"' + b"y" * 120
    dev2 = b"\x0a" + bytes([len(name2)]) + name2
    data2 = b"\x0a" + bytes([len(dev2)]) + dev2
    t2 = _open_bytes(tmp_path, data2, "ss2.pb")
    assert t2.format == "binary" and t2.devices["device"].to_pylist() == [name2.decode()]


@pytest.mark.parametrize(("events", "message"), [
    ([{"ph": "X", "pid": 1, "tid": 1, "ts": 5, "dur": -1}], r"line 2, column 1: a negative dur"),
    ([{"ph": "B", "pid": 1, "tid": 1, "ts": 5, "name": "x"},
      {"ph": "E", "pid": 1, "tid": 1, "ts": 4}], r"line 3, column 1: an E event earlier"),
    ([{"ph": "b", "pid": 1, "tid": 1, "ts": 5, "id": 1, "name": "async"}],
     r"line 2, column 1: no event tracecore reads .*1 events of other phases"),
    ([{"ph": "B", "pid": 1, "tid": 1, "ts": 5, "name": "x"}],
     r"line 2, column 1: no event tracecore reads .*1 B never closed"),
])
def test_malformed_timing_and_unreadable_traces_are_errors(
    tmp_path: Path, events: list[dict[str, Any]], message: str
) -> None:
    doc = ("{\"traceEvents\": [\n" + ",\n".join(json.dumps(e) for e in events) + "]}").encode()
    with pytest.raises(tracecore.TraceFormatError, match=message):
        _open_bytes(tmp_path, doc)
    with pytest.raises(ValueError):
        oracle.read(doc)


def test_flow_binds_to_the_enclosing_slice_not_an_instant(tmp_path: Path) -> None:
    doc = json.dumps({"traceEvents": [
        {"ph": "X", "name": "launch", "pid": 1, "tid": 1, "ts": 10, "dur": 5},
        {"ph": "i", "name": "mark", "pid": 1, "tid": 1, "ts": 12},
        {"ph": "s", "id": 1, "cat": "ac2g", "pid": 1, "tid": 1, "ts": 12},
        {"ph": "X", "name": "kernel", "pid": 2, "tid": 7, "ts": 20, "dur": 3},
        {"ph": "f", "id": 1, "cat": "ac2g", "pid": 2, "tid": 7, "ts": 20, "bp": "e"},
    ]}).encode()
    t = _open_bytes(tmp_path, doc)
    (link,) = t.links.to_pylist()
    names = t.events["node_name"].to_pylist()
    assert (names[link["from_event_id"]], names[link["to_event_id"]]) == ("launch", "kernel")


def test_memory_addresses_past_int64_and_args_of_b_e_pairs(tmp_path: Path) -> None:
    doc = (b'{"traceEvents": [{"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": 1, '
           b'"args": {"Bytes": 8, "Addr": 18446744073709551615, "Total Allocated": 8}},'
           b'{"ph": "B", "pid": 1, "tid": 1, "ts": 2, "name": "x", "args": {"a": 1, "b": 2}},'
           b'{"ph": "E", "pid": 1, "tid": 1, "ts": 3, "args": {"c": 3}}]}')
    t = _open_bytes(tmp_path, doc)
    assert t.alloc_records["address"].to_pylist() == [2**64 - 1]
    stats = [(r["event_id"], r["name"], r["metadata_id"]) for r in t.event_stats.to_pylist()]
    assert sorted(x for x in stats if x[0] == 1) == [(1, "a", 0), (1, "b", 1), (1, "c", 2)]
    bad = doc.replace(b"18446744073709551615", b"18446744073709551616")
    with pytest.raises(tracecore.TraceFormatError, match='"Addr" is not an integer'):
        _open_bytes(tmp_path, bad, "bad.json")


def _bind_reference(events: list[dict[str, Any]], device: int, ts: int,
                    enclosing: bool) -> int | None:
    """The event a flow point binds to, from the events table (docs/api.md, links): with
    `enclosing`, of the track's 4096 events that start last at or before ts, the innermost
    holding ts with a non-zero length (start <= ts <= end, end > start; innermost: the latest
    start, then the earliest end, then the latest row); otherwise the first event (by start,
    then end descending, then row) to start at or after ts."""
    track = [r for r, e in enumerate(events) if e["device_index"] == device]

    def order(r: int) -> tuple[int, int, int]:
        return (events[r]["start_ns"], -events[r]["end_ns"], r)

    if not enclosing:
        later = [r for r in track if events[r]["start_ns"] >= ts]
        return min(later, key=order) if later else None
    window = sorted((r for r in track if events[r]["start_ns"] <= ts), key=order)[-4096:]
    holding = [r for r in window
               if events[r]["start_ns"] <= ts <= events[r]["end_ns"]
               and events[r]["end_ns"] > events[r]["start_ns"]]
    return max(holding, key=order) if holding else None


def _check_binds(t: tracecore.Trace, doc: bytes) -> int:
    """Each link's events against _bind_reference; returns the number of links."""
    rows = t.events.to_pylist()
    lines = t.devices["line_id"].to_pylist()
    index = {tid: d for d, tid in enumerate(lines)}
    want = oracle.read(doc).links()
    links = t.links.to_pylist()
    assert len(links) == len(want)
    for lk, (a, b) in zip(links, want, strict=True):
        assert lk["from_event_id"] == _bind_reference(rows, index[a.track[1]], a.ts_ns, True)
        to_device = index[b.track[1]]
        assert lk["to_event_id"] == _bind_reference(rows, to_device, b.ts_ns, b.bp == "e")
    return len(links)


# A small range: flow points often fall on an event's start or end.
_flow_times = st.integers(min_value=0, max_value=12)
_flow_points = st.tuples(st.integers(0, 2), _flow_times, st.booleans())  # tid, ts, bp "e"


@settings(max_examples=100, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    spans=st.lists(st.tuples(st.integers(0, 2), _flow_times, st.integers(0, 8)), min_size=1,
                   max_size=25),
    # Chains (an s, then t points, then maybe an f) and stray points of any phase.
    chains=st.lists(st.tuples(st.integers(0, 3), st.lists(_flow_points, min_size=2, max_size=5),
                              st.booleans()), min_size=1, max_size=5),
    strays=st.lists(st.tuples(st.integers(0, 3), _flow_points, st.sampled_from(["s", "t", "f"])),
                    max_size=8),
)
def test_flow_points_bind_as_the_reference_does(
        tmp_path: Path, spans: list[tuple[int, int, int]],
        chains: list[tuple[int, list[tuple[int, int, bool]], bool]],
        strays: list[tuple[int, tuple[int, int, bool], str]]) -> None:
    # Flow points out of time order on a track, events nested, zero-length and interleaved
    # across tracks: each link's events are the reference's, computed from the events table.
    events: list[dict[str, Any]] = [
        {"ph": "X", "name": f"e{i}", "pid": 1, "tid": tid, "ts": ts, "dur": dur}
        for i, (tid, ts, dur) in enumerate(spans)]
    points: list[tuple[int, tuple[int, int, bool], str]] = []
    for fid, chain, closed in chains:
        phases = ["s"] + ["t"] * (len(chain) - 2) + ["f" if closed else "t"]
        points += [(fid, p, ph) for p, ph in zip(chain, phases, strict=True)]
    for fid, (tid, ts, enclosing), ph in points + strays:
        point: dict[str, Any] = {"ph": ph, "id": fid, "pid": 1, "tid": tid, "ts": ts,
                                 "cat": "c", "name": "n"}
        if enclosing:
            point["bp"] = "e"
        events.append(point)
    doc = json.dumps({"traceEvents": events}).encode()
    t = _open_bytes(tmp_path, doc)
    check_against_oracle(t, doc)
    n = _check_binds(t, doc)
    assert n >= sum(len(chain) - 1 for _, chain, _ in chains)  # strays come after: only add


@pytest.mark.parametrize("nested", [4094, 4095, 4096])
def test_flow_bind_window_is_4096_events(tmp_path: Path, nested: int) -> None:
    # One long event, then `nested` zero-length ones inside it: the long event is among the
    # 4096 that start last at or before the flow point only while nested <= 4095.
    events: list[dict[str, Any]] = [
        {"ph": "X", "name": "long", "pid": 1, "tid": 1, "ts": 0, "dur": 10**6}]
    events += [{"ph": "X", "name": "z", "pid": 1, "tid": 1, "ts": 1 + i, "dur": 0}
               for i in range(nested)]
    events += [{"ph": "s", "id": 7, "pid": 1, "tid": 1, "ts": nested + 5, "cat": "c", "name": "n"},
               {"ph": "f", "id": 7, "pid": 1, "tid": 2, "ts": nested + 6, "cat": "c", "name": "n"},
               {"ph": "X", "name": "k", "pid": 1, "tid": 2, "ts": nested + 6, "dur": 1}]
    doc = json.dumps({"traceEvents": events}).encode()
    t = _open_bytes(tmp_path, doc)
    assert _check_binds(t, doc) == 1
    (link,) = t.links.to_pylist()
    assert link["from_event_id"] == (0 if nested <= 4095 else None)
    assert link["to_event_id"] == nested + 1


def _colliding_ids(n: int) -> list[int]:
    """Integer ids that an unsalted version of the pairing's hash (Mix((id * golden) ^ (cat << 8)
    ^ kind), with no cat: 0) sends to one slot of any table up to 2^32 slots: the input that
    made the pairing quadratic."""
    mask = (1 << 64) - 1
    c, g = 0xFF51AFD7ED558CCD, 0x9E3779B97F4A7C15
    c_inv, g_inv = pow(c, -1, 1 << 64), pow(g, -1, 1 << 64)

    def unmix(h: int) -> int:
        h ^= h >> 33
        h = (h * c_inv) & mask
        return h ^ (h >> 33)

    out = []
    for j in range(1, n + 1):
        v = ((unmix(j << 32) ^ 1) * g_inv) & mask
        out.append(v - (1 << 64) if v >= 1 << 63 else v)
    return out


def test_flow_ids_chosen_to_collide_pair_as_the_oracle_does(tmp_path: Path) -> None:
    # 3000 flows open at once with ids crafted against an unsalted hash (no "cat": a cat
    # would move them apart), then closed in reverse: the same links as the reference's, in
    # the file order of their second point. Nothing is timed: this keeps the input and checks
    # the pairing with many flows open, the table grown and erased in reverse.
    ids = _colliding_ids(3000)
    events: list[dict[str, Any]] = [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0,
                                     "dur": 10**6}]
    events += [{"ph": "s", "id": i, "pid": 1, "tid": 1, "ts": k, "name": "n"}
               for k, i in enumerate(ids)]
    events += [{"ph": "f", "id": i, "pid": 1, "tid": 1, "ts": 5000 + k, "name": "n"}
               for k, i in enumerate(reversed(ids))]
    doc = json.dumps({"traceEvents": events}).encode()
    t = _open_bytes(tmp_path, doc)
    check_against_oracle(t, doc)
    links = t.links.to_pylist()
    assert len(links) == 3000
    assert [lk["flow_id"] for lk in links] == [str(i) for i in reversed(ids)]
    assert {lk["from_event_id"] for lk in links} == {0}


def _colliding_tracks(n: int) -> list[tuple[int, int]]:
    """(pid, tid) pairs, integers, that an unsalted version of the track hash
    (Mix(Mix(pid * 4 + 1) * 31 + Mix(tid * 4 + 1))) gives one and the same hash: the input that
    made every track lookup walk all the tracks before it."""
    mask = (1 << 64) - 1
    c = 0xFF51AFD7ED558CCD
    c_inv = pow(c, -1, 1 << 64)

    def mix(h: int) -> int:
        h ^= h >> 33
        h = (h * c) & mask
        return h ^ (h >> 33)

    def unmix(h: int) -> int:
        h ^= h >> 33
        h = (h * c_inv) & mask
        return h ^ (h >> 33)

    out: list[tuple[int, int]] = []
    pid = 0
    while len(out) < n:
        pid += 1
        x = unmix((12345 - 31 * mix(pid * 4 + 1)) & mask)
        if x % 4 == 1 and (x - 1) // 4 < 2**63:
            out.append((pid, (x - 1) // 4))
    return out


def test_track_ids_chosen_to_collide_read_as_the_oracle_does(tmp_path: Path) -> None:
    # 3000 tracks whose (pid, tid) were crafted against an unsalted hash: each its own device
    # row, with the events and spans the reference gives. Nothing is timed: this keeps the input.
    events = [{"ph": "X", "name": f"op{k}", "pid": pid, "tid": tid, "ts": k, "dur": 1}
              for k, (pid, tid) in enumerate(_colliding_tracks(3000))]
    doc = json.dumps({"traceEvents": events}).encode()
    t = _open_bytes(tmp_path, doc)
    check_against_oracle(t, doc)
    assert len(t.devices) == 3000
    assert t.devices["line_id"].to_pylist() == [e["tid"] for e in events]
