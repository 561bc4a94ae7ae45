"""tracecore.diff and `tracecore diff`: two runs compared per op and per allocator peak."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

import tracecore
from tracecore import cli
from tracecore.compare import op_times

DATA = Path(__file__).parent / "data"
A = DATA / "seed000_stepstats.pbtxt"
B = DATA / "seed001_runmetadata.pbtxt"
KINETO = DATA / "chrome" / "torch_mlp_sgd.pt.trace.json"


def test_a_run_against_itself_changes_nothing() -> None:
    t = tracecore.open(A)
    d = tracecore.diff(t, t)
    rows = d.ops.to_pylist()
    assert rows and all(r["delta_ns"] == 0 and r["only_in"] is None for r in rows)
    assert all(r["ratio"] == 1.0 for r in rows if r["a_ns"] > 0)
    assert d.a_total_ns == d.b_total_ns == sum(r["a_ns"] for r in rows)
    assert d.summary().splitlines()[0].startswith("total +0.000 ms")
    assert all(r["delta_bytes"] == 0 for r in d.allocators.to_pylist())


def test_two_runs_per_op_time_counted_once() -> None:
    ta, tb = tracecore.open(A), tracecore.open(B)
    d = tracecore.diff(A, B)
    rows = d.ops.to_pylist()
    assert [abs(r["delta_ns"]) for r in rows] == sorted((abs(r["delta_ns"]) for r in rows),
                                                        reverse=True)
    assert sum(r["delta_ns"] for r in rows) == d.b_total_ns - d.a_total_ns
    # An op's time: its stream time when it ran on streams, else its executor time (never both,
    # and stream:all is not added): MatMul in the sample is 3.071 ms on stream:13.
    stats = {r["key"]: r for r in ta.op_stats(by="op").to_pylist()}
    matmul = next(r for r in rows if r["key"] == "MatMul")
    assert matmul["a_ns"] == stats["MatMul"]["stream_ns"] == 3_071_000
    # its count: the records that count (the 83 on stream:13), not all 249 of them
    assert matmul["a_count"] == 83 < stats["MatMul"]["n_events"] == 249
    times_a, times_b = op_times(ta), op_times(tb)
    for r in rows:
        assert (r["a_ns"], r["a_count"]) == times_a.get(r["key"], (0, 0))
        assert (r["b_ns"], r["b_count"]) == times_b.get(r["key"], (0, 0))
        assert r["only_in"] == ("a" if r["key"] not in times_b else
                                "b" if r["key"] not in times_a else None)
    peaks_b = {r["allocator"]: r["peak_bytes"] for r in tb.replay().peaks.to_pylist()}
    gpu = next(r for r in d.allocators.to_pylist() if r["allocator"] == "GPU_0_bfc")
    assert gpu["b_peak_bytes"] == peaks_b["GPU_0_bfc"]
    assert gpu["delta_bytes"] == gpu["b_peak_bytes"] - gpu["a_peak_bytes"]


def test_across_formats() -> None:
    d = tracecore.diff(A, KINETO)
    keys = {r["key"]: r for r in d.ops.to_pylist()}
    assert keys["MatMul"]["only_in"] == "a"
    assert keys["aten::linear"]["only_in"] == "b" and keys["aten::linear"]["b_ns"] > 0
    with pytest.raises(TypeError, match="diff takes Traces or paths, not int"):
        tracecore.diff(1, A)
    with pytest.raises(ValueError, match="by must be one of"):
        tracecore.diff(A, A, by="scope")


def test_cli_diff_json_csv_and_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["diff", str(A), str(B), "--format", "json"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    expected = tracecore.diff(A, B).ops.to_pylist()
    assert len(lines) == len(expected)
    for got, want in zip(lines, expected, strict=True):
        assert list(got)[:4] == ["op", "a_ns", "b_ns", "delta_ns"]
        assert (got["op"], got["a_ns"], got["b_ns"], got["delta_ns"]) == (
            want["key"], want["a_ns"], want["b_ns"], want["delta_ns"])
    assert cli.main(["diff", str(A), str(B), "--format", "csv", "--by", "node"]) == 0
    table = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    assert table[0][:4] == ["node_name", "a_ns", "b_ns", "delta_ns"]
    assert len(table) - 1 == tracecore.diff(A, B, by="node_name").ops.num_rows
    assert cli.main(["diff", str(A), str(B), "-n", "3"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("total +")
    assert "Conv2D " in out and "only b" in out


# ------------------------------------------------------------------------------------------
# Known slowdowns: diff reports exactly those ops and amounts first
# ------------------------------------------------------------------------------------------
def _slowed(text: str, slow_us: dict[str, int]) -> str:
    """The dump with every record of the chosen ops (by "name = Op(" label or ":Op" name)
    made longer by the given microseconds."""
    out, block, op = [], [], None
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if stripped == "node_stats {":
            block, op = [line], None
            continue
        if block:
            block.append(line)
            for name in slow_us:
                if stripped.startswith("node_name:") and stripped.endswith(f':{name}"'):
                    op = name
                if stripped.startswith("timeline_label:") and f"= {name}(" in stripped:
                    op = name
            if line.startswith("  }"):
                for b in block:
                    key, _, value = b.strip().partition(": ")
                    if op and key in ("all_end_rel_micros", "op_end_rel_micros"):
                        indent = b[: len(b) - len(b.lstrip())]
                        b = f"{indent}{key}: {int(value) + slow_us[op]}\n"
                    out.append(b)
                block = []
            continue
        out.append(line)
    return "".join(out)


DIFF_JSON_FIELDS = {  # docs/cli.md, `tracecore diff --format json`
    "op": str, "a_ns": int, "b_ns": int, "delta_ns": int, "ratio": (float, type(None)),
    "a_count": int, "b_count": int, "a_share": (float, type(None)),
    "b_share": (float, type(None)), "only_in": (str, type(None)),
}


def test_diff_reports_the_slowed_ops_first(tmp_path: Path, capsys) -> None:
    text = A.read_text()
    slowed = tmp_path / "b.pbtxt"
    slowed.write_text(_slowed(text, {"MatMul": 7, "Const": 3}))
    ta, tb = tracecore.open(A), tracecore.open(slowed)
    stats = {r["key"]: r for r in ta.op_stats(by="op").to_pylist()}
    # MatMul runs on the GPU: its time is its stream:N records' (stream:all not added), so
    # the change is 7 us per such record; Const runs on the executor only: 3 us per record.
    stream13 = sum(1 for r in ta.events.to_pylist()
                   if r["op"] == "MatMul" and r["device"] == "/device:GPU:0/stream:13")
    expected = {"MatMul": 7_000 * stream13, "Const": 3_000 * stats["Const"]["n_events"]}
    assert stream13 > 0
    assert cli.main(["diff", str(A), str(slowed), "--format", "json"]) == 0
    rows = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    for row in rows:
        assert set(row) == set(DIFF_JSON_FIELDS)
        for key, kind in DIFF_JSON_FIELDS.items():
            assert isinstance(row[key], kind), (key, row)
    assert {r["op"]: r["delta_ns"] for r in rows[:2]} == expected
    assert all(r["delta_ns"] == 0 for r in rows[2:])
    assert tracecore.diff(ta, tb).b_total_ns - tracecore.diff(ta, tb).a_total_ns == sum(
        expected.values())
