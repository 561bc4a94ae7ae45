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
    """The rule, record by record: per node (StepStats stream/memcpy records without their
    ':Op'), its stream records if any, else its memcpy block records, else its executor
    records, else its other records (never stream:all, XProf's derived lines or Chrome
    annotation tracks)."""
    kinds = t.devices["kind"].to_pylist()
    stepstats = t.kind in ("StepStats", "RunMetadata")
    records = []
    for e in t.events.to_pylist():
        kind = kinds[e["device_index"]]
        name = e["node_name"]
        if stepstats and kind in ("stream", "stream_all", "memcpy") and ":" in name:
            name = name.rsplit(":", 1)[0]
        cls = {"stream": 0, "memcpy": 1, "executor": 2}.get(kind, 3)
        if kind in ("stream_all", "xla_modules", "steps", "derived", "annotation"):
            cls = 4
        records.append((name, cls, e["op"] if e["op"] is not None else "(none)",
                        max(e["end_ns"], e["start_ns"]) - e["start_ns"]))
    classes = defaultdict(set)
    for name, cls, _, _ in records:
        classes[name].add(cls)
    out: dict[str, int] = defaultdict(int)
    for name, cls, op, dur in records:
        chosen = min((c for c in classes[name] if c < 4), default=3)
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


def _chrome(tmp_path: Path, events: list[dict], name: str = "t.json") -> tracecore.Trace:
    import json

    path = tmp_path / name
    path.write_text(json.dumps({"traceEvents": events}))
    return tracecore.open(path)


def test_chrome_kernel_names_keep_their_colons_and_annotations_do_not_count(
    tmp_path: Path,
) -> None:
    gpu = {"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "GPU 0"}}
    k = "void at::native::k{}<float>(int)"
    t = _chrome(tmp_path, [
        gpu,
        {"ph": "X", "name": k.format("A"), "pid": 0, "tid": 7, "ts": 1, "dur": 2},
        {"ph": "X", "name": k.format("B"), "pid": 0, "tid": 7, "ts": 4, "dur": 3},
        {"ph": "X", "name": "PyTorch Profiler (0)", "pid": "Spans", "tid": 0, "ts": 0,
         "dur": 100},
        {"ph": "X", "name": "aten::mm", "pid": 9, "tid": 9, "ts": 0, "dur": 5},
    ])
    nodes = {r["key"]: r["time_ns"] for r in t.op_stats(by="node_name").to_pylist()}
    assert nodes[k.format("A")] == 2000 and nodes[k.format("B")] == 3000
    assert nodes["PyTorch Profiler (0)"] == 0  # an annotation track spans the others
    assert nodes["aten::mm"] == 5000


def test_an_event_length_past_int64_is_an_overflow_error(tmp_path: Path) -> None:
    from tracecore.optime import counted_once

    t = _chrome(tmp_path, [
        {"ph": "B", "name": "big", "pid": 1, "tid": 1, "ts": -9000000000000000},
        {"ph": "E", "name": "big", "pid": 1, "tid": 1, "ts": 9000000000000000},
    ])
    with pytest.raises(OverflowError, match=r"end_ns - start_ns\) overflows int64"):
        counted_once(t)
    with pytest.raises(OverflowError):
        tracecore.diff(t, t)


def test_diff_matches_an_xspace_and_its_chrome_conversion_by_name() -> None:
    # The same JAX run as XProf's XSpace and as its trace.json.gz: no op is only in one run.
    xspace = DATA / "xspace" / "jax_mlp2_tanh.xplane.pb"
    chrome = DATA / "chrome" / "jax_mlp2_tanh.trace.json.gz"
    d = tracecore.diff(xspace, chrome)
    rows = {r["key"]: r for r in d.ops.to_pylist()}
    assert "(none)" not in rows
    assert rows["PjitFunction(train_step)"]["only_in"] is None
    shared = [r for r in rows.values() if r["only_in"] is None]
    assert len(shared) > 10


@pytest.mark.parametrize(
    "path", [SEED0, KINETO, DATA / "xspace" / "tf_keras_mlp_fit.xplane.pb"], ids=lambda p: p.name
)
def test_device_kind_on_every_event(path: Path, tmp_path: Path) -> None:
    """t.events.device_kind is the kind of the event's block; its dictionary holds the kinds
    that occur; events.parquet keeps it, so SQL can take one kind's time per op."""
    import duckdb

    t = tracecore.open(path)
    kinds = t.devices["kind"].to_pylist()
    expected = [kinds[i] for i in t.events["device_index"].to_pylist()]
    column = t.events["device_kind"]
    assert column.to_pylist() == expected
    assert sorted(column.combine_chunks().dictionary.to_pylist()) == sorted(set(expected))
    back = tracecore.open(t.to_parquet(tmp_path / "pq"))
    assert back.events["device_kind"].to_pylist() == expected
    events = t.events  # noqa: F841 - read by DuckDB by name
    rows = duckdb.sql(
        "SELECT op, sum(end_ns - start_ns) FROM events WHERE device_kind = 'stream' "
        "AND op IS NOT NULL GROUP BY op"
    ).fetchall()
    stats = {r["key"]: r["stream_ns"] for r in t.op_stats().to_pylist()}
    if t.kind == "StepStats":
        assert rows, "the sample has GPU stream records"
    for op, total in rows:
        assert stats[op] == total, op


@pytest.mark.parametrize("path", [SEED0, KINETO], ids=lambda p: p.name)
def test_op_stats_by_kind_splits_the_time_by_device_kind(path: Path, capsys) -> None:
    t = tracecore.open(path)
    kinds = t.devices["kind"].to_pylist()
    per: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for e in t.table("events").to_pylist():
        per[kinds[e["device_index"]]].append((e["start_ns"], max(e["end_ns"], e["start_ns"])))
    starts = [s for spans in per.values() for s, _ in spans]
    span = max(e for spans in per.values() for _, e in spans) - min(starts)

    def union(spans: list[tuple[int, int]]) -> int:
        total, reach = 0, None
        for s, e in sorted(spans):
            if reach is None or s > reach:
                total += e - s
                reach = e
            elif e > reach:
                total += e - reach
                reach = e
        return total

    rows = {r["key"]: r for r in t.op_stats(by="kind").to_pylist()}
    assert set(rows) == set(per)
    for kind, spans in per.items():
        r = rows[kind]
        assert r["n_events"] == len(spans)
        assert r["total_ns"] == r["time_ns"] == sum(e - s for s, e in spans)
        assert r["busy_ns"] == union(spans)
        assert r["share"] == pytest.approx(union(spans) / span)
        assert r["stream_ns"] == (r["total_ns"] if kind == "stream" else 0)
        assert r["executor_ns"] == (r["total_ns"] if kind == "executor" else 0)
    assert cli.main(["top", str(path), "--by", "kind"]) == 0
    out = capsys.readouterr().out
    for kind in per:
        line = next(x for x in out.splitlines() if x.split() and x.split()[0] == kind)
        assert int(line.split()[1]) == len(per[kind])
    d = tracecore.diff(t, t, by="kind")
    assert sorted(d.ops["key"].to_pylist()) == sorted(per)
    assert set(d.ops["delta_ns"].to_pylist()) == {0}
