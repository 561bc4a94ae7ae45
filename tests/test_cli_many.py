"""The command line over several traces (issue 25): every row-printing command on two files, a
glob of them and ``--format json|csv``, checked against the Python API; ``steps``,
``stragglers`` and ``collectives`` on a generated multi-rank run; ``top --by
scope|phase|tower|kind``; the ``--input-format`` rename."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import tracecore
from tracecore import cli

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from make_run_dir import make_run_dir  # noqa: E402

SEED0 = HERE / "data" / "seed000_stepstats.pbtxt"
SEED1 = HERE / "data" / "seed001_runmetadata.pbtxt"
DELAYED, DELAYS_US = 1, {1: 2_000}


@pytest.fixture(autouse=True)
def cache_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRACECORE_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def two(tmp_path: Path) -> list[str]:
    """seed 000 and the bundled sample, copied side by side (sorted as a glob sorts them)."""
    d = tmp_path / "two"
    d.mkdir()
    shutil.copy(SEED0, d / "a.pbtxt")
    shutil.copy(tracecore.sample_path(), d / "b.pbtxt.gz")
    return [str(d / "a.pbtxt"), str(d / "b.pbtxt.gz")]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return make_run_dir(tmp_path_factory.mktemp("run"), ranks=3, steps=3, delayed_rank=DELAYED,
                        delays_us=DELAYS_US)


@pytest.fixture(scope="module")
def run_glob(run: Any) -> str:
    return os.path.join(run.path, "rank*", "step*.pbtxt")


def main(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    assert (code, err) == (0, ""), err
    return out


def json_rows(capsys: pytest.CaptureFixture[str], *argv: str) -> list[dict[str, Any]]:
    """The rows of ``--format json``, checked to equal those of ``--format csv``."""
    out = main(capsys, *argv, "--format", "json")
    rows = [json.loads(line) for line in out.splitlines()]
    table = list(csv.reader(io.StringIO(main(capsys, *argv, "--format", "csv"))))
    if rows:
        assert table[0] == list(rows[0])
    assert table[1:] == [["" if v is None else str(v) for v in r.values()] for r in rows]
    return rows


def glob_of(two: list[str]) -> str:
    return os.path.join(os.path.dirname(two[0]), "*")


def same_for_glob(capsys: pytest.CaptureFixture[str], two: list[str], *argv: str
                  ) -> list[dict[str, Any]]:
    """The json rows of ``argv`` on the two files, equal to those of their glob."""
    rows = json_rows(capsys, *argv[:1], *two, *argv[1:])
    assert json_rows(capsys, *argv[:1], glob_of(two), *argv[1:]) == rows
    return rows


def summed(tables: list[pa.Table], key: str, columns: list[str]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for table in tables:
        for r in table.to_pylist():
            row = out.setdefault(r[key], dict.fromkeys(columns, 0))
            for c in columns:
                row[c] += r[c]
    return out


# -- every command, two files and a glob ------------------------------------------------------
def test_info(capsys: pytest.CaptureFixture[str], two: list[str]) -> None:
    rows = same_for_glob(capsys, two, "info")
    assert [r["path"] for r in rows] == two
    for r, path in zip(rows, two, strict=True):
        t = tracecore.open(path)
        assert (r["kind"], r["format"], r["n_events"], r["blocks"], r["size"], r["status"]) == (
            t.kind, t.format, len(t), t.devices.num_rows, os.path.getsize(path), "ok")
        events = t.table("events")
        assert r["span_ns"] == pc.max(events["end_ns"]).as_py() - pc.min(events["start_ns"]).as_py()
    # One file: one row with the same columns (no set keys)
    (one,) = json_rows(capsys, "info", two[0])
    assert one == {k: rows[0][k] for k in one}
    out = main(capsys, "info", glob_of(two))
    assert "2 traces (2 loaded)" in out and "b.pbtxt.gz" in out


def test_top(capsys: pytest.CaptureFixture[str], two: list[str]) -> None:
    rows = same_for_glob(capsys, two, "top")
    columns = ["n_events", "total_ns", "busy_ns", "executor_ns", "stream_ns", "time_ns"]
    want = summed([tracecore.open(p).op_stats("op") for p in two], "key", columns)
    assert {r["op"]: {c: r[c] for c in columns} for r in rows} == want
    assert len(rows) == len(want)  # every row, not the table's 20
    times = [r["time_ns"] for r in rows]
    assert times == sorted(times, reverse=True)
    assert all(isinstance(r["total_ns"], int) for r in rows)
    # -n limits json too; the table shows the same first rows
    assert json_rows(capsys, "top", *two, "-n", "3") == rows[:3]
    table = main(capsys, "top", *two, "-n", "3")
    assert table.splitlines()[0] == "2 paths: 2 traces (2 loaded): 0 ranks, 0 steps, 4174 events"
    assert table.splitlines()[3].split()[:2] == [rows[0]["op"], str(rows[0]["n_events"])]


def test_top_by_kind_and_scope(capsys: pytest.CaptureFixture[str], two: list[str]) -> None:
    traces = [tracecore.open(p) for p in two]
    rows = same_for_glob(capsys, two, "top", "--by", "kind")
    want = summed([t.op_stats("kind") for t in traces], "key", ["n_events", "total_ns",
                                                                 "busy_ns"])
    assert {r["kind"]: {c: r[c] for c in ("n_events", "total_ns", "busy_ns")} for r in rows} \
        == want
    rows = same_for_glob(capsys, two, "top", "--by", "scope")
    want = summed([t.scopes() for t in traces], "scope", ["n_events", "total_ns", "busy_ns"])
    assert {r["scope"]: {c: r[c] for c in ("n_events", "total_ns", "busy_ns")} for r in rows} \
        == want
    # one trace: the same columns as top's other rows, share = busy / the trace's span
    one = json_rows(capsys, "top", two[0], "--by", "scope")
    span = next(iter(json_rows(capsys, "info", two[0])))["span_ns"]
    assert list(one[0]) == ["scope", "n_events", "total_ns", "mean_ns", "max_ns", "busy_ns",
                            "share"]
    for r in one:
        assert r["share"] == pytest.approx(r["busy_ns"] / span)
        assert r["mean_ns"] == pytest.approx(r["total_ns"] / r["n_events"])
        assert {c: r[c] for c in ("n_events", "total_ns", "busy_ns")} == {
            c: v // 2 for c, v in want[r["scope"]].items()}  # the two copies are equal


def test_top_by_phase(capsys: pytest.CaptureFixture[str], two: list[str]) -> None:
    rows = same_for_glob(capsys, two, "top", "--by", "phase")
    want: dict[str, list[int]] = {}
    for path in two:
        events = tracecore.open(path).events
        phase = events["phase"].cast(pa.string()).to_pylist()
        length = np.maximum(events["end_ns"].to_numpy() - events["start_ns"].to_numpy(), 0)
        for p, n in zip(phase, length.tolist(), strict=True):
            row = want.setdefault(p, [0, 0])
            row[0] += 1
            row[1] += n
    assert {r["phase"]: [r["n_events"], r["total_ns"]] for r in rows} == want
    assert set(want) >= {"forward", "backward"}


def test_top_by_tower(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    two = [str(tmp_path / "a.pbtxt"), str(tmp_path / "b.pbtxt")]
    for path in two:
        shutil.copy(SEED1, path)
    rows = same_for_glob(capsys, two, "top", "--by", "tower")
    want = summed([tracecore.open(p).towers() for p in two], "tower", ["n_events", "busy_ns"])
    assert want  # seed 001 has towers
    assert {r["tower"]: {c: r[c] for c in ("n_events", "busy_ns")} for r in rows} == want


def test_memory(capsys: pytest.CaptureFixture[str], two: list[str]) -> None:
    rows = same_for_glob(capsys, two, "memory")
    assert list(rows[0]) == ["trace", "allocator", "source", "peak_bytes", "peak_time_ns",
                             "live_tensors"]
    want = []
    for path in two:
        t = tracecore.open(path)
        for source in ("records", "tensors"):
            replay = t.replay(source=source)
            for a in replay.allocators:
                p = replay.peak(a)
                if p["peak_bytes"] > 0:
                    want.append((path, a, source, p["peak_bytes"], p["peak_time_ns"],
                                 p["live_tensors"]))
    assert sorted(tuple(r.values()) for r in rows) == sorted(want)
    gpu = [r for r in rows if r["allocator"] == "GPU_0_bfc" and r["source"] == "records"]
    assert [r["peak_bytes"] for r in gpu] == [66_359_808, 66_359_808]
    only = json_rows(capsys, "memory", *two, "--allocator", "cpu")
    assert [(r["trace"], r["source"]) for r in only] == [
        (p, s) for p in two for s in ("records", "tensors")]
    # the table: one section per trace
    out = main(capsys, "memory", *two)
    assert [line for line in out.splitlines() if line.startswith("== ")] == [
        f"== {p}" for p in two]


def test_occupancy(capsys: pytest.CaptureFixture[str], two: list[str]) -> None:
    rows = same_for_glob(capsys, two, "occupancy")
    want = [{"trace": p, **d} for p in two for d in cli.device_summary(tracecore.open(p))]
    assert rows == [{k: d[k] for k in rows[0]} for d in want]
    for path in two:
        busy = tracecore.open(path).occupancy()["busy_ns"].to_pylist()
        assert sum(r["busy_ns"] for r in rows if r["trace"] == path) == sum(busy)
    out = main(capsys, "occupancy", *two)
    assert sum(line.startswith("== ") for line in out.splitlines()) == 2
    code = cli.main(["occupancy", *two, "--plot", str(Path(two[0]).parent / "o.png")])
    assert code == 2
    assert "--plot draws one trace" in capsys.readouterr().err


def test_steps_of_files(capsys: pytest.CaptureFixture[str], two: list[str]) -> None:
    rows = same_for_glob(capsys, two, "steps")
    assert rows == tracecore.open_many(two).step_times().to_pylist()
    assert rows[0]["n_traces"] == 2 and rows[0]["n_events"] == 2 * 2087
    one = json_rows(capsys, "steps", two[0])
    assert one == tracecore.open(two[0]).step_times().to_pylist()
    assert one == [{"step": 0, "start_ns": 1532145303703343000,
                    "end_ns": 1532145303716357000, "duration_ns": 13_014_000}]


# -- multi-rank run ----------------------------------------------------------------------------
def test_steps_of_a_run(capsys: pytest.CaptureFixture[str], run: Any, run_glob: str) -> None:
    rows = json_rows(capsys, "steps", run_glob)
    assert rows == tracecore.open_many(run_glob).step_times().to_pylist()
    assert [(r["rank"], r["step"]) for r in rows] == [(r, s) for r in range(3) for s in range(3)]
    for r in rows:
        assert r["duration_ns"] == run.step_ns + run.delay_ns(r["step"])
    # the run directory gives the same set as the glob
    assert json_rows(capsys, "steps", run.path) == rows
    table = main(capsys, "steps", run_glob, "-n", "2")
    assert "9 rows, first 2 shown (-n)" in table.splitlines()[0]


def test_stragglers(capsys: pytest.CaptureFixture[str], run: Any, run_glob: str) -> None:
    rows = json_rows(capsys, "stragglers", run_glob)
    assert rows == tracecore.open_many(run_glob).stragglers().to_pylist()
    delayed = rows[1]
    assert (delayed["step"], delayed["slowest_rank"], delayed["lag_ns"]) == (
        1, DELAYED, DELAYS_US[1] * 1000)
    lagging = json_rows(capsys, "stragglers", run_glob, "--min-lag-us", "1000")
    assert [r["step"] for r in lagging] == [1]
    by_duration = json_rows(capsys, "stragglers", run_glob, "--by", "duration")
    assert by_duration == tracecore.open_many(run_glob).stragglers(by="duration").to_pylist()


def test_collectives(capsys: pytest.CaptureFixture[str], run: Any, run_glob: str) -> None:
    rows = json_rows(capsys, "collectives", run_glob)
    ts = tracecore.open_many(run_glob)
    assert rows == ts.collectives().to_pylist()
    waits = [r["wait_ns"] for r in rows
             if r["step"] == 1 and r["node_name"].endswith("grads_0") and r["rank"] != DELAYED]
    assert waits == [DELAYS_US[1] * 1000] * 2
    some = json_rows(capsys, "collectives", run_glob, "--pattern", "grads_1")
    assert some == ts.collectives("grads_1").to_pylist() and len(some) == 9


# -- usage ------------------------------------------------------------------------------------
def test_glob_matching_nothing(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    pattern = str(tmp_path / "nothing*.pbtxt")
    for command in ("info", "top", "steps", "stragglers", "collectives", "memory"):
        assert cli.main([command, pattern]) == 2
        out, err = capsys.readouterr()
        assert out == ""
        assert err == f"tracecore {command}: error: no file matches {pattern!r}\n"


def test_input_format_rename(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["top", str(SEED0), "--input-format", "binary"]) == 2
    assert capsys.readouterr().err.startswith("tracecore: invalid trace: ")
    out = main(capsys, "top", str(SEED0), "--input-format", "text", "-n", "1", "--format",
               "json")
    assert json.loads(out)["op"] == "MatMul"
    with pytest.raises(SystemExit) as e:
        cli.main(["info", str(SEED0), "--format", "text"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "invalid output format 'text' (choose from table, json, csv)" in err
    assert "is --input-format text" in err


def test_diff_csv_equals_json(capsys: pytest.CaptureFixture[str], two: list[str]) -> None:
    rows = json_rows(capsys, "diff", *two)
    assert rows and all(r["delta_ns"] == 0 and r["a_ns"] == r["b_ns"] for r in rows)
    d = tracecore.diff(tracecore.open(two[0]), tracecore.open(two[1]))
    assert rows == [{"op": r.pop("key"), **r} for r in d.ops.to_pylist()]


def test_memory_of_xspace_profiles(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    two = [str(tmp_path / "a.xplane.pb"), str(tmp_path / "b.xplane.pb")]
    for path in two:
        shutil.copy(HERE / "data" / "xspace" / "tf_keras_mlp_fit.xplane.pb", path)
    rows = same_for_glob(capsys, two, "memory")
    want = []
    for path in two:
        replay = tracecore.open(path).replay(source="in_use")
        for a in replay.allocators:
            p = replay.peak(a)
            want.append({"trace": path, "allocator": a, "source": "in_use",
                         "peak_bytes": p["peak_bytes"], "peak_time_ns": p["peak_time_ns"],
                         "live_tensors": p["live_tensors"]})
    assert rows == want
    assert [r["allocator"] for r in rows] == ["mklcpu", "mklcpu"]


def test_a_file_that_fails_is_skipped(capsys: pytest.CaptureFixture[str], two: list[str],
                                      tmp_path: Path) -> None:
    bad = tmp_path / "bad.pbtxt"
    bad.write_text("node_stats { this is not a trace")
    assert cli.main(["top", two[0], str(bad), "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert err.startswith(f"tracecore: skipped {bad}: ")
    rows = [json.loads(line) for line in out.splitlines()]
    want = tracecore.open(two[0]).op_stats("op")
    assert {r["op"]: r["total_ns"] for r in rows} == dict(
        zip(want["key"].to_pylist(), want["total_ns"].to_pylist(), strict=True))
    info = json_rows(capsys, "info", two[0], str(bad))
    assert [(r["path"], r["status"]) for r in info] == [(two[0], "ok"), (str(bad), "error")]
    assert info[1]["error"] and info[1]["n_events"] is None


def test_one_file_is_a_set_of_one(capsys: pytest.CaptureFixture[str], run: Any) -> None:
    path = os.path.join(run.path, "rank1", "step1.pbtxt")
    ts = tracecore.open_many(path)
    assert json_rows(capsys, "stragglers", path) == ts.stragglers().to_pylist()
    rows = json_rows(capsys, "collectives", path)
    assert rows == ts.collectives().to_pylist()
    assert {(r["rank"], r["step"], r["n_ranks"]) for r in rows} == {(1, 1, 1)}
    # export --chrome reads one trace: a directory of traces is a usage error that lists them
    assert cli.main(["export", run.path, "--chrome", os.path.join(run.path, "out.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"tracecore export: error: {run.path} is a directory with 9 traces (")


def test_export_of_a_glob_of_several_files_is_a_usage_error_before_any_parse(
    two: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch
) -> None:
    from tracecore import cli

    def no_parse(*args: object, **kwargs: object) -> None:
        raise AssertionError("export parsed a file before refusing the glob")

    monkeypatch.setattr(tracecore, "open", no_parse)
    pattern = os.path.join(os.path.dirname(two[0]), "*")
    assert cli.main(["export", pattern, "--chrome", str(tmp_path / "x.json")]) == 2
    err = capsys.readouterr().err
    assert "2 files match" in err and "a.pbtxt" in err and "reads one trace" in err
    assert not (tmp_path / "x.json").exists()


def test_export_parquet_of_several_files_is_one_dataset(
    two: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import pyarrow.dataset as ds

    from tracecore import cli

    pattern = os.path.join(os.path.dirname(two[0]), "*")
    out = tmp_path / "dataset"
    assert cli.main(["export", pattern, "--parquet", str(out)]) == 0
    assert "wrote a dataset of 2 traces" in capsys.readouterr().out
    events = ds.dataset(out / "events", format="parquet", partitioning="hive").to_table()
    assert events.num_rows == sum(len(tracecore.open(p)) for p in two)
    ts = tracecore.open_many(two)
    assert sorted(events["node_name"].to_pylist()) == sorted(
        ts.table("events")["node_name"].to_pylist()
    )
    # An existing dataset is refused without --overwrite, replaced whole with it: a dataset of
    # one trace after one of two has no partition of the other left.
    assert cli.main(["export", *two, "--parquet", str(out)]) == 1
    assert "exists and is not empty" in capsys.readouterr().err
    assert cli.main(["export", *two, "--parquet", str(out), "--overwrite"]) == 0
    assert cli.main(["export", os.path.dirname(two[0]) + "/a*", "--parquet", str(out),
                     "--overwrite"]) == 0
    capsys.readouterr()
    ts = tracecore.open_many([two[0]])
    ts.to_parquet(out, partition_by=("trace_id",), overwrite=True)
    events = ds.dataset(out / "events", format="parquet", partitioning="hive").to_table()
    assert events.num_rows == len(tracecore.open(two[0]))
    # A single-trace export is never mixed with a dataset.
    single = tmp_path / "single"
    tracecore.open(two[0]).to_parquet(single)
    assert cli.main(["export", *two, "--parquet", str(single)]) == 1
    assert "holds a single-trace export" in capsys.readouterr().err
    assert tracecore.open(single).events.num_rows == len(tracecore.open(two[0]))
    assert cli.main(["export", *two, "--parquet", str(single), "--overwrite"]) == 0
    assert not (single / "tracecore.json").exists()
    assert sorted(p.name for p in single.iterdir() if p.suffix == ".parquet") == [
        "collectives.parquet", "step_times.parquet", "traces.parquet"]


def test_bench_of_two_files_and_a_glob_as_json_and_csv(
    two: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    from tracecore import cli

    pattern = os.path.join(os.path.dirname(two[0]), "*")
    for argv in ([*two], [pattern]):
        assert cli.main(["bench", *argv, "--threads", "1", "--repeat", "1", "--format",
                         "json"]) == 0
        rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        assert [r["file"] for r in rows] == two
        for r in rows:
            t = tracecore.open(r["file"])
            assert r["events"] == len(t) and r["threads"] == 1
            assert r["parsed_bytes"] == t.stats["bytes"] and r["best_ms"] > 0
    assert cli.main(["bench", *two, "--threads", "1", "--repeat", "1", "--format", "csv"]) == 0
    table = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    assert table[0][:3] == ["file", "threads", "threads_used"]
    assert [row[0] for row in table[1:]] == two
