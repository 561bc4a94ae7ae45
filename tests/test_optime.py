"""Time per op counted once (tracecore.optime): op_stats' time_ns, top's ranking, diff."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

import tracecore
from tracecore import cli

DATA = Path(__file__).parent / "data"
SEED0 = DATA / "seed000_stepstats.pbtxt"
KINETO = DATA / "chrome" / "torch_mlp_sgd.pt.trace.json"


def reference(t: tracecore.Trace, by: str = "op") -> dict[str, int]:
    """The rule, record by record: per node (stream/memcpy records without their ':Op'), its
    stream records if any, else its executor records, else its other records (never
    stream:all, memcpy, or XProf's derived lines)."""
    kinds = t.devices["kind"].to_pylist()
    records = []
    for e in t.events.to_pylist():
        kind = kinds[e["device_index"]]
        name = e["node_name"]
        if kind in ("stream", "stream_all", "memcpy") and ":" in name:
            name = name.rsplit(":", 1)[0]
        cls = {"stream": 0, "executor": 1}.get(kind, 2)
        if kind in ("stream_all", "memcpy", "xla_modules", "steps", "derived"):
            cls = 3
        records.append((name, cls, e["op"] if e["op"] is not None else "(none)",
                        max(e["end_ns"], e["start_ns"]) - e["start_ns"]))
    classes = defaultdict(set)
    for name, cls, _, _ in records:
        classes[name].add(cls)
    out: dict[str, int] = defaultdict(int)
    for name, cls, op, dur in records:
        chosen = 0 if 0 in classes[name] else 1 if 1 in classes[name] else 2
        if cls == chosen:
            out[op if by == "op" else name] += dur
    return dict(out)


@pytest.mark.parametrize("path", [SEED0, KINETO], ids=lambda p: p.name)
def test_op_stats_time_ns_follows_the_rule(path: Path) -> None:
    t = tracecore.open(path)
    for by in ("op", "node_name"):
        want = reference(t, by)
        got = {r["key"]: r["time_ns"] for r in t.op_stats(by=by).to_pylist()}
        assert {k: v for k, v in got.items() if v} == {k: v for k, v in want.items() if v}, by
    devices = t.op_stats(by="device")
    assert devices["time_ns"].to_pylist() == devices["total_ns"].to_pylist()


def test_gpu_ops_count_their_stream_time_once_on_a_ten_step_dump(tmp_path: Path, capsys) -> None:
    ten = tmp_path / "ten_steps.pbtxt"
    ten.write_text(SEED0.read_text() * 10)
    t = tracecore.open(ten)
    assert t.devices.num_rows == 70
    kinds = t.devices["kind"].to_pylist()
    stream = defaultdict(int)
    gpu_ops = set()
    for e in t.events.to_pylist():
        if kinds[e["device_index"]] == "stream":
            stream[e["op"]] += e["end_ns"] - e["start_ns"]
            gpu_ops.add(e["op"])
    stats = {r["key"]: r for r in t.op_stats(by="op").to_pylist()}
    one = {r["key"]: r for r in tracecore.open(SEED0).op_stats(by="op").to_pylist()}
    # GPU ops whose every node ran on a stream: exactly their stream time.
    for op in ("MatMul", "LSTMBlockCell", "SparseSoftmaxCrossEntropyWithLogits"):
        assert stats[op]["time_ns"] == stream[op] == 10 * one[op]["stream_ns"]
    assert stats["MatMul"]["time_ns"] == 30_710_000 < stats["MatMul"]["total_ns"]
    assert all(stats[op]["time_ns"] >= stream[op] for op in gpu_ops)
    assert cli.main(["top", str(ten), "-n", "1"]) == 0
    row = capsys.readouterr().out.splitlines()[2].split()
    assert row[:3] == ["MatMul", "2490", "30.710"]
