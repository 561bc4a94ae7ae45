"""Profiler / TensorBoard log directories (issue 21): ``tracecore.open(logdir)``, ``open_many``,
the Dask reader and the CLI on every ``plugins/profile/<run>/<host>.xplane.pb`` below a
directory, and ``tracecore info`` / ``top`` on an XSpace.

The log directories are built in tmp_path from the fixtures of tests/data/xspace/ (copied, one
gzip-compressed); expected counts come from the protobuf oracle (tests/xspace_oracle.py).
"""

from __future__ import annotations

import gzip
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

import tracecore
import xspace_oracle as xo
import xspace_proto as xp
from tracecore import cli

DATA = Path(__file__).resolve().parent / "data"
XSPACE = DATA / "xspace"
TF = XSPACE / "tf_keras_mlp_fit.xplane.pb"
KERAS = XSPACE / "keras_tensorboard_cb_mlp.xplane.pb"
JAX = XSPACE / "jax_mlp2_tanh.xplane.pb"
A100 = XSPACE / "tf_keras_mlp_fit_a100_node.xplane.pb"
RUN1, RUN2 = "2026_11_25_10_00_00", "2026_11_25_11_30_00"


def _oracle(path: Path) -> xo.XSpaceTables:
    return xo.expected_xspace(xp.XSpace.FromString(path.read_bytes()))


def _copy(source: Path, target: Path, *, gz: bool = False) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    if gz:
        target.write_bytes(gzip.compress(source.read_bytes()))
    else:
        shutil.copy(source, target)
    return target


@pytest.fixture
def logdir(tmp_path: Path) -> Path:
    """Two runs x two hosts below ``train/``, with what a real log directory has beside them:
    an event file, the tools' data the profiler writes next to a profile, a hidden file."""
    root = tmp_path / "logs"
    profile = root / "train" / "plugins" / "profile"
    _copy(TF, profile / RUN1 / "vm.xplane.pb")
    _copy(JAX, profile / RUN1 / "tpu-host.xplane.pb")
    _copy(KERAS, profile / RUN2 / "vm.xplane.pb")
    _copy(A100, profile / RUN2 / "tpu-host.xplane.pb.gz", gz=True)
    _copy(DATA / "tfevents" / "keras_tensorboard_cb_mlp" / "train"
          / "events.out.tfevents.1795619473.vm.28628.0.v2",
          root / "train" / "events.out.tfevents.1795619473.vm.28628.0.v2")
    (profile / RUN1 / "vm.overview_page.pb").write_bytes(b"not a trace")
    (profile / RUN1 / ".tpu-host.xplane.pb").write_bytes(b"hidden")
    return root


# (run, host, fixture) in the order the set lists them: sorted paths
MEMBERS = [(RUN1, "tpu-host", JAX), (RUN1, "vm", TF), (RUN2, "tpu-host", A100),
           (RUN2, "vm", KERAS)]


def _expected_paths(root: Path) -> list[str]:
    profile = root / "train" / "plugins" / "profile"
    return [str(profile / RUN1 / "tpu-host.xplane.pb"), str(profile / RUN1 / "vm.xplane.pb"),
            str(profile / RUN2 / "tpu-host.xplane.pb.gz"), str(profile / RUN2 / "vm.xplane.pb")]


def test_fixture_event_counts() -> None:
    """The per-file counts the set's figures are sums of (the oracle's timed events)."""
    assert [len(_oracle(p).events) for p in (JAX, TF, A100, KERAS)] == [242, 2548, 2548, 872]
    assert [len(_oracle(p).lines) for p in (JAX, TF, A100, KERAS)] == [2, 11, 11, 10]


def test_open_logdir_is_a_traceset_keyed_by_host_and_run(logdir: Path) -> None:
    ts = tracecore.open(logdir)
    assert isinstance(ts, tracecore.dataset.TraceSet)
    traces = ts.traces
    assert traces["path"].to_pylist() == _expected_paths(logdir)
    assert traces["rank"].to_pylist() == [host for _, host, _ in MEMBERS]
    assert traces["step"].to_pylist() == [run for run, _, _ in MEMBERS]
    assert traces.schema.field("rank").type == pa.string()
    assert traces.schema.field("step").type == pa.string()
    assert traces["kind"].to_pylist() == ["XSpace"] * 4
    assert traces["format"].to_pylist() == ["xspace"] * 4
    assert traces["status"].to_pylist() == ["ok"] * 4
    assert traces["n_events"].to_pylist() == [242, 2548, 2548, 872]
    assert traces["size"].to_pylist() == [os.stat(p).st_size for p in _expected_paths(logdir)]
    # row counts are the sums of the per-file counts
    assert len(ts) == ts.events.num_rows == 242 + 2548 + 2548 + 872
    assert ts.devices.num_rows == 2 + 11 + 11 + 10
    per_key: dict[tuple[str, str], int] = {}
    for r, s in zip(ts.events["rank"].to_pylist(), ts.events["step"].to_pylist(), strict=True):
        per_key[(r, s)] = per_key.get((r, s), 0) + 1
    assert per_key == {(host, run): len(_oracle(f).events) for run, host, f in MEMBERS}
    # each member is the file opened on its own
    for i, (_, _, fixture) in enumerate(MEMBERS):
        assert ts.trace(i).events.equals(tracecore.open(fixture).events), i
        assert ts.trace(i).devices["line"].to_pylist() == [r.line for r in _oracle(fixture).lines]
    # aligned: every trace's first event starts at 0
    starts = ts.events.group_by("trace_id").aggregate([("start_ns", "min")])
    assert sorted(starts["start_ns_min"].to_pylist()) == [0, 0, 0, 0]


def test_open_many_of_a_logdir_is_the_same_set(logdir: Path) -> None:
    ts = tracecore.open(logdir)
    many = tracecore.open_many(logdir)
    # open adds a log directory's key columns (tracecore.logdir), open_many has none
    labels = ["run", "host", "tag", "wall_time", "source"]
    assert many.traces.equals(ts.traces.drop_columns(labels))
    assert many.events.equals(ts.events.drop_columns(labels))
    assert ts.traces.select(labels).to_pylist() == [
        {"run": run, "host": host, "tag": None, "wall_time": None, "source": "xplane"}
        for run, host in zip(ts.traces["step"].to_pylist(), ts.traces["rank"].to_pylist(),
                             strict=True)]
    assert [m[:2] for m in MEMBERS] == list(zip(ts.traces["step"].to_pylist(),
                                               ts.traces["rank"].to_pylist(), strict=True))
    # the keys of a profile are its host and run by default; an explicit regex still wins
    keyed = tracecore.open_many(logdir, rank=r"/([a-z-]+)\.xplane", step=r"(\d\d)_\d\d_00/")
    assert keyed.traces["rank"].to_pylist() == ["tpu-host", "vm", "tpu-host", "vm"]
    assert keyed.traces["step"].to_pylist() == [10, 10, 11, 11]
    # a list of profile files and a glob are keyed the same way
    globbed = tracecore.open_many(str(logdir / "**" / "*.xplane.pb*"))
    assert globbed.traces.select(["path", "rank", "step"]).equals(
        ts.traces.select(["path", "rank", "step"]))


def test_any_directory_above_the_profiles_opens_them(logdir: Path) -> None:
    profile = logdir / "train" / "plugins" / "profile"
    for directory, n in ((logdir / "train", 4), (profile, 4), (profile / RUN2, 2)):
        ts = tracecore.open(directory)
        assert ts.traces["path"].to_pylist() == _expected_paths(logdir)[4 - n:], directory
        assert ts.traces["step"].to_pylist() == [run for run, _, _ in MEMBERS][4 - n:]
    # a run directory named as ".": its name comes from the absolute path
    cwd = os.getcwd()
    try:
        os.chdir(profile / RUN1)
        ts = tracecore.open(".")
        assert ts.traces["rank"].to_pylist() == ["tpu-host", "vm"]
        assert ts.traces["step"].to_pylist() == [RUN1, RUN1]
    finally:
        os.chdir(cwd)


def test_a_profile_that_fails_is_reported(logdir: Path) -> None:
    bad = logdir / "train" / "plugins" / "profile" / RUN2 / "vm.xplane.pb"
    bad.write_bytes(b"\x08\x01\x10\x02")
    ts = tracecore.open(logdir)
    assert ts.traces["status"].to_pylist() == ["ok", "ok", "ok", "error"]
    assert ts.errors["error"].to_pylist()[0].startswith(f"{bad}: byte offset 0: ")
    assert len(ts) == 242 + 2548 + 2548
    with pytest.raises(tracecore.TraceFormatError, match=re.escape(str(bad))):
        tracecore.open_many(logdir, strict=True)


def test_open_of_a_logdir_takes_format_threads_and_cache(
    logdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRACECORE_CACHE_DIR", str(tmp_path / "cache"))
    first = tracecore.open(logdir, cache=True, threads=1)
    again = tracecore.open(logdir, cache=True, format="xspace")
    assert again.events.to_pylist() == first.events.to_pylist()
    assert [again.trace(i).stats.get("loaded_from") for i in range(4)] == ["cache"] * 4
    with pytest.raises(ValueError, match="format must be one of"):
        tracecore.open(logdir, format="csv")
    # format="text" applies to each profile: each fails, and says so
    text = tracecore.open(logdir, format="text")
    assert text.traces["status"].to_pylist() == ["error"] * 4


def test_a_parquet_export_directory_still_opens_as_a_trace(logdir: Path, tmp_path: Path) -> None:
    t = tracecore.open(TF)
    # an export inside a log directory is read as the export, not as the profiles around it
    out = t.to_parquet(logdir / "train" / "plugins" / "profile" / RUN1 / "export")
    back = tracecore.open(out)
    assert isinstance(back, tracecore.Trace)
    assert (back.kind, len(back), back.stats["loaded_from"]) == ("XSpace", 2548, "parquet")
    # and the export's files are no profiles
    assert tracecore.open(logdir).traces.num_rows == 4


def test_a_directory_without_profiles_says_what_it_holds(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(tracecore.TraceFormatError) as e:
        tracecore.open(empty)
    assert str(e.value) == (
        f"{empty}: not a tracecore Parquet directory (no tracecore.json; write one with "
        f"Trace.to_parquet) and no XSpace profile (plugins/profile/<run>/<host>.xplane.pb) "
        f"below it: it holds no files")

    loose = tmp_path / "loose"
    _copy(TF, loose / "vm.xplane.pb")
    _copy(JAX, loose / "sub" / "jax.xplane.pb.gz", gz=True)
    (loose / "notes.md").write_text("x")
    with pytest.raises(tracecore.TraceFormatError) as e:
        tracecore.open(loose)
    assert str(e.value) == (
        f"{loose}: not a tracecore Parquet directory (no tracecore.json; write one with "
        f"Trace.to_parquet) and no XSpace profile (plugins/profile/<run>/<host>.xplane.pb) "
        f"below it: it holds 2 *.xplane.pb files not in a plugins/profile/<run>/<host>.xplane.pb "
        f"layout (sub/jax.xplane.pb.gz, vm.xplane.pb: open them with tracecore.open(file) or "
        f"tracecore.open_many); 1 other file")
    # An event file makes it a log directory: its RunMetadata are the set (the loose
    # XSpace files are not in a profile layout)
    _copy(DATA / "tfevents" / "tf1_small_convnet" / "events.out.tfevents.1795619468.vm",
          loose / "events.out.tfevents.1795619468.vm")
    events = tracecore.open(loose)
    assert events.traces.select(["run", "tag", "step", "n_events"]).to_pylist() == [
        {"run": ".", "tag": "step_0", "step": 0, "n_events": 38},
        {"run": ".", "tag": "step_2", "step": 2, "n_events": 38}]
    # open_many of that directory takes its *.pb files, keyed by the default regexes
    ts = tracecore.open_many(loose)
    assert ts.traces["path"].to_pylist() == [str(loose / "sub" / "jax.xplane.pb.gz"),
                                             str(loose / "vm.xplane.pb")]
    assert ts.traces["rank"].to_pylist() == [None, None]
    assert ts.traces["n_events"].to_pylist() == [242, 2548]


def test_non_utf8_host_and_run_names(tmp_path: Path) -> None:
    root = os.fsencode(tmp_path / "logs")
    run = os.path.join(root, b"plugins", b"profile", b"r\xe9")
    try:
        os.makedirs(run)
        shutil.copy(TF, os.path.join(run, b"caf\xe9.xplane.pb"))
    except OSError as e:  # pragma: no cover - a file system that refuses such names
        pytest.skip(f"cannot create a non-UTF-8 file name here: {e}")
    for form in (root, os.fsdecode(root), Path(os.fsdecode(root))):
        ts = tracecore.open(form)
        traces = ts.traces
        assert traces["rank"].to_pylist() == ["caf\\xe9"], form
        assert traces["step"].to_pylist() == ["r\\xe9"]
        assert traces["path"].to_pylist()[0].endswith("/plugins/profile/r\\xe9/caf\\xe9.xplane.pb")
        assert traces["n_events"].to_pylist() == [2548]
    proc = subprocess.run([sys.executable, "-m", "tracecore", "info", root],
                          capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert b"log directory  " + root + b"\n" in proc.stdout
    row = (rb"r\\xe9\s+caf\\xe9\s+-\s+r\\xe9\s+xplane\s+plugins/profile/r\\xe9/caf\\xe9\.xplane\.pb"
           rb"\s+2548\s+11")
    assert re.search(row, proc.stdout), proc.stdout


# ---- Dask -------------------------------------------------------------------------------------
def test_dask_reads_a_logdir_one_partition_per_profile(logdir: Path) -> None:
    pytest.importorskip("dask.dataframe")
    import tracecore.dask

    ts = tracecore.open(logdir)
    df = tracecore.dask.read_traces(logdir)
    assert df.npartitions == 4
    events = df.compute()
    assert len(events) == len(ts) == 242 + 2548 + 2548 + 872
    counts = events.groupby(["trace_id", "rank", "step"]).size().sort_index()
    assert list(counts.index) == [(i, host, run) for i, (run, host, _) in enumerate(MEMBERS)]
    assert list(counts) == [242, 2548, 2548, 872]
    got = events.sort_values(["trace_id", "event_id"])
    assert list(got["start_ns"]) == ts.events["start_ns"].to_pylist()
    assert list(got["end_ns"]) == ts.events["end_ns"].to_pylist()
    assert list(got["node_name"]) == ts.events["node_name"].to_pylist()

    listing = tracecore.dask.read_traces(logdir, "traces").compute()
    assert list(listing["kind"]) == ["XSpace"] * 4
    assert list(listing["n_events"]) == [242, 2548, 2548, 872]
    assert list(listing["rank"]) == ["tpu-host", "vm", "tpu-host", "vm"]
    lines = tracecore.dask.read_traces(
        [str(JAX), str(TF)], lambda t: t.devices.select(["device", "line", "kind", "n_events"])
    ).compute()
    assert list(lines["n_events"]) == [r.n_events for p in (JAX, TF) for r in _oracle(p).lines]
    assert list(lines["trace_id"]) == [0] * 2 + [1] * 11


# ---- the command line -------------------------------------------------------------------------
def _rows(out: str, header: str, skip: int = 2) -> list[list[str]]:
    """The rows of the table that starts ``skip`` lines below the line starting with
    ``header``, split on runs of 2+ spaces (names hold single spaces)."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[start + skip:]:
        if not line.startswith("  "):
            break
        rows.append(re.split(r"\s{2,}", line.strip()))
    return rows


def test_info_of_an_xspace_lists_planes_and_lines(capsys: pytest.CaptureFixture[str]) -> None:
    for path in (TF, JAX, KERAS):
        want = _oracle(path)
        assert cli.main(["info", str(path)]) == 0
        out, err = capsys.readouterr()
        assert err == ""
        planes = {r.plane for r in want.lines}
        assert f"planes and lines ({len(planes)} plane, {len(want.lines)} lines)" in out
        rows = _rows(out, "planes and lines")
        assert [r[:5] for r in rows] == [
            [r.plane, r.line, str(r.line_id), r.kind, str(r.n_events)] for r in want.lines
        ], path
    # the TF sample, in figures: 11 threads of /host:CPU, 2548 events
    assert cli.main(["info", str(TF)]) == 0
    out, _ = capsys.readouterr()
    rows = _rows(out, "planes and lines")
    assert len(rows) == 11 and sum(int(r[4]) for r in rows) == 2548
    assert {r[0] for r in rows} == {"/host:CPU"} and {r[3] for r in rows} == {"host_thread"}


def test_info_of_a_stepstats_trace_has_no_lines(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["info", "--sample"]) == 0
    out, _ = capsys.readouterr()
    assert "planes and lines" not in out and "devices (" in out


def test_info_of_a_logdir_lists_its_profiles(
    logdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["info", str(logdir)]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert f"log directory  {logdir}\n" in out
    assert ("traces         4 traces (4 loaded): 2 runs, 2 hosts, 0 tags, 2 steps, "
            "6210 events\n") in out
    rows = _rows(out, "  run ", skip=1)
    # run, host, tag, step, source, file, events, blocks (the lines), size, status
    assert [r[:8] + r[9:] for r in rows] == [
        [RUN1, "tpu-host", "-", RUN1, "xplane", f"train/plugins/profile/{RUN1}/tpu-host.xplane.pb",
         "242", "2", "ok"],
        [RUN1, "vm", "-", RUN1, "xplane", f"train/plugins/profile/{RUN1}/vm.xplane.pb", "2548",
         "11", "ok"],
        [RUN2, "tpu-host", "-", RUN2, "xplane",
         f"train/plugins/profile/{RUN2}/tpu-host.xplane.pb.gz", "2548", "11", "ok"],
        [RUN2, "vm", "-", RUN2, "xplane", f"train/plugins/profile/{RUN2}/vm.xplane.pb", "872",
         "10", "ok"],
    ]


def test_commands_on_a_logdir(
    logdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # export --chrome reads one trace
    assert cli.main(["export", str(logdir), "--chrome", str(logdir / "out.json")]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        f"tracecore export: error: {logdir} is a log directory with 4 traces "
        f"({', '.join(_expected_paths(logdir)[:3])} and 1 more); tracecore export reads "
        f"one trace: give one profile or dump ('tracecore info {logdir}' lists them)\n")
    # memory and occupancy: one section per profile
    for command in ("memory", "occupancy"):
        assert cli.main([command, str(logdir)]) == 0
        out, _ = capsys.readouterr()
        assert [line[3:] for line in out.splitlines() if line.startswith("== ")] == (
            _expected_paths(logdir))
    # top ranks each profile's lines as top of it alone does (no device plane in these: the
    # host threads, not the derived lines), summed over the profiles
    assert cli.main(["top", "-n", "3", str(logdir)]) == 0
    out, _ = capsys.readouterr()
    lines = out.splitlines()
    assert lines[0] == (
        f"{logdir}: 4 traces (4 loaded): 2 runs, 2 hosts, 0 tags, 2 steps, 6210 events")
    summed: dict[str, list[int]] = {}
    for _, _, path in MEMBERS:
        for op, n, total in _oracle_top(_oracle(path), {"host_thread"}, device_planes=False):
            row = summed.setdefault(op, [0, 0])
            row[0] += n
            row[1] += total
    want = sorted(((k, n, t) for k, (n, t) in summed.items()), key=lambda r: (-r[2], r[0]))
    assert lines[1] == f"top 3 of {len(want)} by op (sorted by total time)"
    assert _top_rows(out) == [(k, n, f"{t / 1e6:.3f}") for k, n, t in want[:3]]


def _oracle_top(want: xo.XSpaceTables, kinds: set[str], device_planes: bool) -> list[tuple]:
    """(op, n_events, total_ns) over the events of the chosen lines, by total desc then op."""
    lines = {r.line_index for r in want.lines
             if r.kind in kinds and (not device_planes or r.plane.startswith("/device:"))}
    groups: dict[str, list[int]] = {}
    for e in want.events:
        if e.line_index in lines:
            row = groups.setdefault(e.op if e.op is not None else "(none)", [0, 0])
            row[0] += 1
            row[1] += max(e.end_ns, e.start_ns) - e.start_ns
    return sorted(((k, n, t) for k, (n, t) in groups.items()), key=lambda r: (-r[2], r[0]))


def _top_rows(out: str) -> list[tuple]:
    return [(r[0], int(r[1]), r[2]) for r in _rows(out, "top ")]


def test_top_of_a_host_only_xspace_ranks_host_ops(capsys: pytest.CaptureFixture[str]) -> None:
    for path, n_lines in ((TF, 11), (JAX, 2)):
        want = _oracle(path)
        assert not any(r.plane.startswith("/device:") for r in want.lines)
        expected = _oracle_top(want, {"host_thread"}, device_planes=False)
        assert cli.main(["top", "-n", "1000", "--width", "200", str(path)]) == 0
        out, err = capsys.readouterr()
        assert err == ""
        assert out.splitlines()[0] == (
            f"ranking host op time (host_thread lines; no /device: plane with stream lines): "
            f"{n_lines} lines on /host:CPU")
        assert out.splitlines()[1] == (
            f"top {len(expected)} of {len(expected)} by op (sorted by total time)")
        assert _top_rows(out) == [(k, n, f"{t / 1e6:.3f}") for k, n, t in expected]
        assert sum(n for _, n, _ in expected) == len(want.events)
    # the JAX sample's XLA ops, from its tf_XLAExecute thunks
    assert cli.main(["top", "-n", "3", str(JAX)]) == 0
    out, _ = capsys.readouterr()
    assert [r[:2] for r in _top_rows(out)] == [("(none)", 170), ("ynn_fusion", 9), ("dot", 6)]


def _device_space() -> xp.XSpace:
    """A GPU profile: /host:CPU (one thread), /device:GPU:0 with two streams, an XLA Ops line and
    a Steps line; events of 1-4 us."""
    space = xp.XSpace()
    host = space.planes.add(name="/host:CPU")
    host.event_metadata[1].name = "train_step:Train"
    host.lines.add(id=7, name="python", timestamp_ns=1000).events.add(
        metadata_id=1, offset_ps=0, duration_ps=50_000_000)
    gpu = space.planes.add(name="/device:GPU:0")
    for mid, name in ((1, "volta_sgemm_128x64_nn"), (2, "void Eigen::TensorKernel<float>"),
                      (3, "dot.1"), (4, "step 1")):
        gpu.event_metadata[mid].name = name
    s1 = gpu.lines.add(id=1, name="Stream #14(Compute)", timestamp_ns=2000)
    for offset_us, dur_us, mid in ((0, 4, 1), (2, 2, 1), (10, 1, 2)):
        s1.events.add(metadata_id=mid, offset_ps=offset_us * 10**6, duration_ps=dur_us * 10**6)
    s2 = gpu.lines.add(id=2, name="Stream #15(MemcpyH2D)", timestamp_ns=2000)
    s2.events.add(metadata_id=2, offset_ps=3 * 10**6, duration_ps=3 * 10**6)
    gpu.lines.add(id=3, name="XLA Ops", timestamp_ns=2000).events.add(
        metadata_id=3, offset_ps=0, duration_ps=40 * 10**6)
    gpu.lines.add(id=4, name="Steps", timestamp_ns=2000).events.add(
        metadata_id=4, offset_ps=0, duration_ps=60 * 10**6)
    return space


def test_top_of_an_xspace_with_a_device_plane_ranks_device_streams(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "gpu-host.xplane.pb"
    path.write_bytes(_device_space().SerializeToString())
    want = xo.expected_xspace(_device_space())
    assert [(r.plane, r.line, r.kind) for r in want.lines] == [
        ("/host:CPU", "python", "host_thread"),
        ("/device:GPU:0", "Stream #14(Compute)", "stream"),
        ("/device:GPU:0", "Stream #15(MemcpyH2D)", "stream"),
        ("/device:GPU:0", "XLA Ops", "xla_ops"),
        ("/device:GPU:0", "Steps", "steps"),
    ]
    assert cli.main(["top", "--by", "node", str(path)]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert out == (
        "ranking device-stream time (stream lines of /device: planes): 2 lines on /device:GPU:0\n"
        "top 2 of 2 by node (sorted by total time)\n"
        "  node                             events  total ms  mean us  max us  busy ms"
        "  % of trace\n"
        "  volta_sgemm_128x64_nn                 2     0.006      3.0     4.0    0.004"
        "         6.6\n"
        "  void Eigen::TensorKernel<float>       2     0.004      2.0     3.0    0.004"
        "         6.6\n"
    )
    # by device: one row per stream line (plane and line name)
    assert cli.main(["top", "--by", "device", str(path)]) == 0
    out, _ = capsys.readouterr()
    assert _top_rows(out) == [("/device:GPU:0 Stream #14(Compute)", 3, "0.007"),
                              ("/device:GPU:0 Stream #15(MemcpyH2D)", 1, "0.003")]
    # the oracle's view of the same choice, by op (none of these events has one)
    assert cli.main(["top", str(path)]) == 0
    out, _ = capsys.readouterr()
    assert _top_rows(out) == [
        (k, n, f"{t / 1e6:.3f}") for k, n, t in _oracle_top(want, {"stream"}, device_planes=True)
    ] == [("(none)", 4, "0.010")]
    # info shows the five lines
    assert cli.main(["info", str(path)]) == 0
    out, _ = capsys.readouterr()
    assert [r[:5] for r in _rows(out, "planes and lines (2 planes, 5 lines)")] == [
        ["/host:CPU", "python", "7", "host_thread", "1"],
        ["/device:GPU:0", "Stream #14(Compute)", "1", "stream", "3"],
        ["/device:GPU:0", "Stream #15(MemcpyH2D)", "2", "stream", "1"],
        ["/device:GPU:0", "XLA Ops", "3", "xla_ops", "1"],
        ["/device:GPU:0", "Steps", "4", "steps", "1"],
    ]


def test_top_of_stepstats_is_unchanged(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["top", "--sample", "-n", "2"]) == 0
    out, _ = capsys.readouterr()
    assert out.splitlines()[0] == (
        "top 2 of 43 by op (sorted by time counted once: stream, else executor records)")
    assert "ranking" not in out
    assert out.splitlines()[1].split() == ["op", "events", "time", "ms", "mean", "us", "max",
                                           "us", "busy", "ms", "%", "of", "trace", "executor",
                                           "ms",
                                           "stream", "ms", "all", "records", "ms"]
