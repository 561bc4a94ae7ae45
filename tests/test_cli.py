"""The command line on the seeds (exit codes and key lines), its errors (one line, no traceback),
the plots it writes, and the progress line of long opens."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import tracecore
from tracecore import cli, plots
from tracecore.progress import Progress

HERE = Path(__file__).resolve().parent
SEED0 = str(HERE / "data" / "seed000_stepstats.pbtxt")
SEED1 = str(HERE / "data" / "seed001_runmetadata.pbtxt")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(autouse=True)
def cache_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TRACECORE_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def line_with(text: str, *needles: str) -> str:
    for line in text.splitlines():
        if all(n in line for n in needles):
            return line
    raise AssertionError(f"no line with {needles!r} in:\n{text}")


def columns(line: str) -> list[str]:
    return line.split()


# --------------------------------------------------------------------------------------------
# Commands


def test_info_seed0(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "info", SEED0)
    assert code == 0 and err == ""
    assert line_with(out, "kind").split(None, 1)[1] == "StepStats (text), 1.45 MB"
    assert re.search(
        r"parsed    2087 events, 987 tensors, 2128 allocation records in [\d.]+ ms "
        r"\(\d+ MB/s, [\d,]+ events/s\)",
        out,
    )
    assert "devices (7 blocks)" in out
    assert columns(line_with(out, "/device:GPU:0/stream:all")) == [
        "/device:GPU:0/stream:all",
        "stream_all",
        "1",
        "729",
        "7.485",
        "57.5",
        "1",
    ]
    assert columns(line_with(out, "/job:localhost/replica:0/task:0/device:GPU:0")) == [
        "/job:localhost/replica:0/task:0/device:GPU:0",
        "executor",
        "1",
        "556",
        "10.711",
        "82.3",
        "8",
    ]
    # records peak, at ms, live; tensors peak, at ms, live (contract figures for seed 000).
    # Trace start 1532145303703343 us; peaks at ...715104 us (records), ...715193 us (tensors).
    assert columns(line_with(out, "GPU_0_bfc")) == [
        "GPU_0_bfc",
        "66.36",
        "MB",
        "11.761",
        "112",
        "77.22",
        "MB",
        "11.850",
        "127",
    ]
    assert columns(line_with(out, "cuda_host_bfc"))[-1] == "41"
    assert columns(line_with(out, "cpu_pool"))[-1] == "5"


def test_info_sample_and_runmetadata(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "info", "--sample")
    assert code == 0 and "sample_lstm_step.pbtxt.gz" in out and "2087 events" in out
    code, out, _ = run(capsys, "info", SEED1)
    assert code == 0
    assert "RunMetadata (text)" in out and "292 events" in out
    gpu = columns(line_with(out, "GPU_0_bfc"))
    assert gpu[1:3] == ["829.91", "MB"] and gpu[5:7] == ["874.35", "MB"] and gpu[-1] == "50"


def test_info_through_the_cache(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "t.pbtxt"
    shutil.copy(SEED1, path)
    assert run(capsys, "info", str(path), "--cache")[0] == 0
    code, out, _ = run(capsys, "info", str(path), "--cache")
    assert code == 0
    assert re.search(r"loaded    from cache in [\d.]+ ms", out)
    assert columns(line_with(out, "GPU_0_bfc"))[1:3] == ["829.91", "MB"]


def test_top_by_op_node_device(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "top", SEED0, "-n", "3")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == (
        "top 3 of 43 by op (sorted by time counted once: stream, else executor records)"
    )
    assert columns(lines[1])[:3] == ["op", "events", "time"]
    assert [columns(line)[0] for line in lines[2:]] == [
        "MatMul", "SparseSoftmaxCrossEntropyWithLogits", "LSTMBlockCell"]
    # MatMul: 3.071 ms on stream:13, counted once (not 7.406 = executor + stream + stream:all)
    assert columns(lines[2]) == [
        "MatMul",
        "249",
        "3.071",
        "29.7",
        "584.0",
        "3.761",
        "28.9",
        "1.264",
        "3.071",
        "7.406",
    ]
    code, out, _ = run(capsys, "top", SEED0, "--by", "node", "-n", "1", "--width", "200")
    assert code == 0
    node = "Train/Model/sequence_loss/SparseSoftmaxCrossEntropyWithLogits/" + (
        "SparseSoftmaxCrossEntropyWithLogits"
    )
    assert columns(out.splitlines()[2])[:3] == [node, "19", "1.007"]
    # The API's name for it (Trace.op_stats(by="node_name")) gives the same table.
    code, same, _ = run(capsys, "top", SEED0, "--by", "node_name", "-n", "1", "--width", "200")
    assert code == 0 and same.splitlines()[0] == out.splitlines()[0].replace(
        "by node", "by node_name"
    )
    assert columns(same.splitlines()[1])[0] == "node_name"
    assert same.splitlines()[2:] == out.splitlines()[2:]
    code, out, _ = run(capsys, "top", SEED0, "--by", "device")
    assert code == 0 and out.splitlines()[0] == "top 7 of 7 by device (sorted by total time)"
    assert columns(out.splitlines()[2])[:3] == [
        "/job:localhost/replica:0/task:0/device:GPU:0",
        "556",
        "13.494",
    ]


def test_memory(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "memory", SEED0, "-n", "2")
    assert code == 0
    assert (
        "live at the GPU_0_bfc peak (tensor model): 127 tensors, 77.22 MB requested; largest 2:"
        in out
    )
    assert columns(line_with(out, "Model/softmax_w")) == [
        "Model/softmax_w",
        "DT_FLOAT",
        "200x10000",
        "8.00",
        "MB",
    ]
    assert "allocation records up to the GPU_0_bfc record peak: 1019 positive records" in out
    code, out, _ = run(capsys, "memory", SEED0, "--allocator", "cuda_host_bfc")
    assert code == 0
    assert "GPU_0_bfc" not in out
    assert "live at the cuda_host_bfc peak (tensor model): 41 tensors, 19.72 MB requested" in out


def test_occupancy_timeline(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "occupancy", SEED0, "--bin-us", "1000")
    assert code == 0
    assert columns(line_with(out, "/device:GPU:0/stream:13")) == [
        "/device:GPU:0/stream:13",
        "stream",
        "1",
        "739",
        "7.495",
        "11.740",
        "63.8",
        "57.6",
        "1",
    ]
    assert "utilization timeline, 1000 us bins (14 bins;" in out
    strip = line_with(out, "|", "/job:localhost/replica:0/task:0/device:GPU:0").split("|")[1]
    assert len(strip) == 14 and strip.count(" ") == 0  # the GPU executor is busy in every bin
    t = tracecore.open(SEED0)
    _, grid, _ = plots.device_bins(t, 1_000_000)
    bins = t.occupancy(bin_ns=1_000_000)
    assert grid.shape == (7, 14)
    assert grid.sum() == pytest.approx(sum(bins["busy_fraction"].to_pylist()))


def test_export_parquet_and_chrome(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = run(capsys, "export", SEED1, "--parquet", str(tmp_path / "pq"))
    assert code == 0 and out.startswith(
        f"wrote 14 Parquet files + tracecore.json to {tmp_path / 'pq'}"
    )
    assert len(tracecore.open(tmp_path / "pq")) == 292
    code, out, _ = run(capsys, "export", SEED1, "--chrome", str(tmp_path / "t.json"), "--no-memory")
    assert code == 0 and "292 events" in out
    doc = json.loads((tmp_path / "t.json").read_text())
    assert sum(e["ph"] == "X" and e["cat"] == "Op" for e in doc["traceEvents"]) == 292
    assert not any(e["ph"] == "C" for e in doc["traceEvents"])


def test_bench(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "bench", SEED1, "--repeat", "2")
    assert code == 0
    assert re.search(r"size      0\.33 MB; 292 events; best of 2 runs", out)
    for threads in ("threads=1", "threads=0"):
        row = columns(line_with(out, threads))
        assert float(row[-3]) > 0 and float(row[-2]) > 0  # best ms, MB/s
        assert int(row[-1].replace(",", "")) > 0  # events/s
    assert re.search(r"peak RSS  \d+ MiB", out)
    # The tables' own size: the bytes of their Arrow buffers (130,067 for this trace at the
    # contract's column widths, each dictionary column's own dictionary, and per table one
    # buffer of zeros that its all-null columns share), against the bytes parsed.
    assert os.path.getsize(SEED1) == 330_438
    assert out.rstrip().endswith("tables    0.13 MB of Arrow buffers, 0.394x the input")


# --------------------------------------------------------------------------------------------
# Errors: one line on stderr, non-zero exit, no traceback


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (["info", "/no/such/file.pbtxt"], 1, "tracecore: [Errno 2] No such file or directory"),
        (["info"], 2, "tracecore info: error: give a trace FILE or --sample"),
        (
            ["memory", SEED0, "--allocator", "nope"],
            2,
            (
                "tracecore memory: error: no allocator 'nope'; allocators: '' (tensors without an "
                "allocator), 'GPU_0_bfc', 'cpu', 'cpu_pool', 'cuda_host_bfc'"
            ),
        ),
        (["info", SEED0, "--input-format", "binary"], 2, "tracecore: invalid trace: "),
    ],
)
def test_errors_are_one_line(capsys, argv, code, message) -> None:
    got, _, err = run(capsys, *argv)
    assert got == code
    assert err.startswith(message) and err.count("\n") == 1
    assert "Traceback" not in err


def test_bad_arguments_are_usage_errors_not_internal_ones(capsys, tmp_path: Path) -> None:
    # A thread count beyond C int used to reach the binding, whose TypeError quoted the whole
    # decompressed sample (1.4 MB) as an "internal error".
    code, out, err = run(capsys, "info", "--sample", "--threads", str(10**12))
    assert code == 0 and err == "" and "2087 events" in out
    with pytest.raises(SystemExit) as exited:  # argparse's own usage error
        cli.main(["export", "--sample", "--parquet", str(tmp_path / "p"), "--compression", "bogus"])
    err = capsys.readouterr().err
    assert exited.value.code == 2 and "invalid choice: 'bogus'" in err and "zstd" in err
    assert not (tmp_path / "p").exists()
    code, _, err = run(
        capsys, "export", "--sample", "--parquet", str(tmp_path / "p"), "--compression", "none"
    )
    assert code == 0 and err == "" and len(list((tmp_path / "p").glob("events.*.parquet"))) == 1
    code, _, err = run(
        capsys, "export", "--sample", "--parquet", str(tmp_path / "q"), "--compression", "ZSTD"
    )
    assert code == 0 and err == "" and len(list((tmp_path / "q").glob("events.*.parquet"))) == 1


REGRESSIONS = HERE / "data" / "regressions"


@pytest.mark.parametrize(
    ("name", "command", "message"),
    [
        ("query_overflow_scopes_total.pbtxt", "info", "total_ns overflows int64"),
        ("query_overflow_scopes_total.pbtxt", "top", "total_ns overflows int64"),
        ("query_overflow_scopes_total.pbtxt", "occupancy", "total_ns overflows int64"),
        ("query_overflow_tower_bytes.pbtxt", "info", "memory replay level overflows int64"),
        ("query_overflow_tower_bytes.pbtxt", "memory", "memory replay level overflows int64"),
    ],
)
def test_int64_overflow_is_a_one_line_error(capsys, name, command, message) -> None:
    # Two events of 5e18 ns each (their total is not an int64) and two tensors of 6e18 bytes:
    # the queries raise OverflowError, which the CLI used to print as an "internal error".
    code, _, err = run(capsys, command, str(REGRESSIONS / name))
    assert code == 1
    assert err == (
        f"tracecore {command}: error: {message} (the trace's values are too large for 64-bit "
        f"sums)\n"
    )


def test_int64_overflow_raises_in_every_query() -> None:
    total = tracecore.open(REGRESSIONS / "query_overflow_scopes_total.pbtxt")
    for query in (total.op_stats, total.scopes):
        with pytest.raises(OverflowError, match="total_ns overflows int64"):
            query()
    assert total.towers().num_rows == 0  # no tower_N names: nothing to sum
    tower = tracecore.open(REGRESSIONS / "query_overflow_tower_bytes.pbtxt")
    for query in (tower.scopes, tower.towers):
        with pytest.raises(OverflowError, match="weight sum overflows int64"):
            query()
    with pytest.raises(OverflowError, match="memory replay level overflows int64"):
        tower.replay(source="tensors")
    # Sums that fit are exact: two events of 5 us (one tensor each, 6e18 bytes).
    assert tower.op_stats().to_pylist()[0]["total_ns"] == 10_000


def test_internal_errors_are_clipped(capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(args):
        raise RuntimeError("x" * 100_000)

    monkeypatch.setattr(cli, "_cmd_info", boom)  # build_parser() reads it at each main()
    code, _, err = run(capsys, "info", "--sample")
    assert code == 3 and err.startswith("tracecore: internal error: RuntimeError: xxx")
    assert len(err) < 500 and "(100000 characters)" in err and err.count("\n") == 1


def test_files_that_are_no_trace_say_so(capsys, tmp_path: Path) -> None:
    png = tmp_path / "pic.png"
    png.write_bytes(PNG_MAGIC + bytes(40))
    code, _, err = run(capsys, "info", str(png))
    assert code == 2
    assert err == (
        f"tracecore: invalid trace: {png}: not a TensorFlow trace dump: the file is a PNG image\n"
    )
    # Text that does not start like protobuf text: format detection reads it as binary, but the
    # error is the text parser's, at line 1.
    script = tmp_path / "notes.py"
    script.write_text('"""A module."""\nimport os\n')
    code, _, err = run(capsys, "info", str(script))
    assert code == 2
    assert err.startswith(
        f"tracecore: invalid trace: {script}: line 1, column 1: expected a field name"
    )
    assert "(the file is text, but not protobuf text format)" in err
    # A text dump read as binary: a hint.
    code, _, err = run(capsys, "info", SEED0, "--input-format", "binary")
    assert code == 2 and "byte offset" in err
    assert err.rstrip().endswith(
        "(the file looks like text, not a binary dump: use format 'text' or 'auto')"
    )


def test_output_paths_are_checked_and_named(capsys, tmp_path: Path) -> None:
    missing = tmp_path / "no" / "x.json"
    code, _, err = run(capsys, "export", "--sample", "--chrome", str(missing))
    assert code == 1 and err == f"tracecore: {missing.parent}: no such directory (for {missing})\n"
    code, _, err = run(capsys, "export", "--sample", "--chrome", str(tmp_path))
    assert code == 1 and err == f"tracecore: {tmp_path}: is a directory; give a file name\n"
    if os.path.isdir("/sys/kernel"):  # sysfs: no new files there, not even for root
        code, _, err = run(capsys, "export", "--sample", "--chrome", "/sys/x.json")
        assert code == 1 and "'/sys/x.json'" in err and ".tmp" not in err
    a_file = tmp_path / "pic.png"
    a_file.write_bytes(b"x")
    code, _, err = run(capsys, "export", "--sample", "--parquet", str(a_file))
    assert code == 1 and "exists and is not a directory" in err and str(a_file) in err
    assert not list(tmp_path.glob(".*.tmp"))


def test_plot_paths_are_checked_before_the_work(capsys, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    code, out, err = run(capsys, "memory", "--sample", "--plot", str(tmp_path / "out.txt"))
    assert code == 2 and out == "" and "use one of" in err and ".png" in err
    code, out, err = run(capsys, "occupancy", "--sample", "--plot", str(tmp_path / "no" / "x.png"))
    assert code == 2 and out == "" and "no such directory" in err


def test_invalid_trace_error_says_where(capsys, tmp_path: Path) -> None:
    bad = tmp_path / "bad.pbtxt"
    bad.write_text('dev_stats {\n  device: "x"\n  node_stats { all_start_micros: "nope" }\n}\n')
    code, _, err = run(capsys, "info", str(bad))
    assert code == 2
    assert err.startswith(f"tracecore: invalid trace: {bad}") and re.search(
        r"line 3, column \d+", err
    )


def test_console_script_and_module_entry_points(tmp_path: Path) -> None:
    env = dict(os.environ, TRACECORE_CACHE_DIR=str(tmp_path / "cache"))
    exe = shutil.which("tracecore")
    commands = [[sys.executable, "-m", "tracecore"]] + ([[exe]] if exe else [])
    for command in commands:
        done = subprocess.run(
            command + ["top", SEED0, "-n", "1"],
            capture_output=True,
            text=True,
            check=False,
            env=env,
            cwd=tmp_path,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines()[0] == (
            "top 1 of 43 by op (sorted by time counted once: stream, else executor records)"
        )
        done = subprocess.run(
            command + ["info", str(tmp_path / "missing.pb")],
            capture_output=True,
            text=True,
            check=False,
            env=env,
            cwd=tmp_path,
            timeout=60,
        )
        assert done.returncode == 1 and done.stdout == ""
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
        assert "missing.pb" in done.stderr


# --------------------------------------------------------------------------------------------
# Plots


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def test_memory_plot(capsys, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    out_png = tmp_path / "memory.png"
    code, out, _ = run(capsys, "memory", SEED0, "--plot", str(out_png))
    assert code == 0 and f"wrote {out_png}" in out
    # 8 in wide at 100 dpi; one 1.6 in panel per allocator holding memory (4 in seed 000).
    assert png_size(out_png) == (800, 700)
    assert out_png.stat().st_size > 20_000
    from PIL import Image

    with Image.open(out_png) as image:
        assert image.size == (800, 700)
        colours = image.convert("RGB").getcolors(maxcolors=1 << 16)
        assert colours is not None and len(colours) > 20  # lines, text, not a blank canvas


def test_occupancy_plot(capsys, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    out_png = tmp_path / "occupancy.png"
    code, out, _ = run(capsys, "occupancy", SEED0, "--bin-us", "200", "--plot", str(out_png))
    assert code == 0 and f"wrote {out_png}" in out
    width, height = png_size(out_png)
    assert width == 900 and height == round(100 * (0.8 + 0.28 * 7))
    assert out_png.stat().st_size > 10_000


def test_plot_single_allocator_and_errors(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    t = tracecore.open(SEED1)
    path = plots.plot_memory(t, tmp_path / "one.png", allocator="GPU_0_bfc")
    assert png_size(path) == (800, 220)
    with pytest.raises(KeyError, match="no allocator 'nope'"):
        plots.plot_memory(t, tmp_path / "x.png", allocator="nope")
    assert plots.default_bin_ns(t) % 1000 == 0 and plots.default_bin_ns(t) >= 1000


# --------------------------------------------------------------------------------------------
# Progress


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_draws_on_a_terminal_after_the_delay() -> None:
    stream = FakeTerminal()
    with Progress("parsing big.pbtxt", 200_000_000, delay=0.05, interval=0.01, stream=stream):
        time.sleep(0.2)
    text = stream.getvalue()
    assert "\r\033[K" in text
    assert re.search(r"parsing big\.pbtxt: 200\.0 MB  0\.\d s  \(<= \d+ MB/s\)", text)
    final = text.rsplit("\033[K", 1)[1]
    assert re.fullmatch(r"parsing big\.pbtxt: 200\.0 MB done in 0\.\d s \(\d+ MB/s\)\n", final)


def test_progress_bar_when_the_fraction_is_known() -> None:
    p = Progress("reading", 100_000_000, stream=io.StringIO())
    p.update(25_000_000)
    assert p.line(0.5) == "reading: [######------------------]  25% of 100.0 MB  0.5 s  50 MB/s"


def test_progress_is_silent_for_fast_work_and_off_a_terminal() -> None:
    stream = FakeTerminal()
    with Progress("fast", 10, delay=1.0, stream=stream):
        pass
    assert stream.getvalue() == ""
    log = io.StringIO()  # not a terminal: only the final line, and only for slow work
    with Progress("slow", 50_000_000, delay=0.0, stream=log):
        time.sleep(0.01)
    assert re.fullmatch(r"slow: 50\.0 MB done in 0\.\d s \(\d+ MB/s\)\n", log.getvalue())


def test_open_with_progress_is_quiet_when_fast(capsys: pytest.CaptureFixture[str]) -> None:
    t = tracecore.open(SEED1, progress=True)
    assert len(t) == 292
    assert capsys.readouterr().err == ""


def test_slow_open_shows_progress_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    from tracecore import parsing

    real_open_file = parsing._core.open_file

    def slow_open_file(*args):
        time.sleep(1.3)
        return real_open_file(*args)

    monkeypatch.setattr(parsing._core, "open_file", slow_open_file)
    terminal = FakeTerminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    t = tracecore.open(SEED1, progress=True)
    assert len(t) == 292
    text = terminal.getvalue()
    head = r"\r\033\[Kparsing seed001_runmetadata\.pbtxt: 0\.3 MB"
    assert re.search(head + r"  1\.\d s  \(<= 0\.3 MB/s\)", text)  # while parsing
    assert re.search(head + r" done in 1\.\d s \(0\.\d MB/s\)\n$", text)  # the final line


def test_device_summary_spans_take_extreme_times_as_values(tmp_path):
    """A device's span runs from its first start to its last end, whatever those values are:
    INT64_MAX nanoseconds is a legal start, not a marker for "no events"."""
    path = tmp_path / "edge.pbtxt"
    path.write_text(
        'dev_stats { device: "/device:CPU:0" node_stats { node_name: "a" all_start_micros: 1000 '
        'all_end_rel_micros: 5 } }\n'
        'dev_stats { device: "/device:CPU:0" node_stats { node_name: "b" '
        "all_start_nanos: 9223372036854775807 } }\n"
    )
    t = tracecore.open(path)
    assert t.events.column("start_ns").to_pylist() == [1_000_000, 2**63 - 1]
    (row,) = cli.device_summary(t)
    assert row["device"] == "/device:CPU:0"
    assert row["blocks"] == 2 and row["events"] == 2
    assert row["span_ns"] == 2**63 - 1 - 1_000_000


def test_integer_arguments_are_range_checked(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        run(capsys, "top", "--sample", "-n", "99999999999999999999999")
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "expected a positive integer up to 2**63 - 1, not '99999999999999999999999'" in err
    with pytest.raises(SystemExit) as exit_info:
        run(capsys, "info", "--sample", "--threads", str(2**63))
    assert exit_info.value.code == 2
    assert f"expected an integer from 0 to 2**63 - 1, not '{2**63}'" in capsys.readouterr().err


def test_one_share_in_info_top_and_occupancy(capsys: pytest.CaptureFixture[str]) -> None:
    """Busy time over the trace's span, under one header ("% of trace"), is the same figure in
    info, top --by device and occupancy, and it is op_stats' share."""
    t = tracecore.open(SEED0)
    share = {r["key"]: r["share"] for r in t.op_stats(by="device").to_pylist()}
    outputs = {}
    for command in (["info"], ["top", "--by", "device", "-n", "99"], ["occupancy"]):
        code, out, _ = run(capsys, command[0], SEED0, *command[1:])
        assert code == 0
        outputs[command[0]] = out
    for device, value in share.items():
        figures = []
        for name, out in outputs.items():
            header = line_with(out, "busy ms", "% of trace")
            at = header.index("% of trace") + len("% of trace")
            row = line_with(out, device + " ")
            figures.append((name, row[:at].split()[-1]))
        assert {f for _, f in figures} == {f"{value * 100:.1f}"}, (device, figures)
