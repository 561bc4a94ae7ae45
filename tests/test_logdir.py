"""Event files and TensorBoard log directories as one TraceSet (tracecore.logdir, issue 22).

``tracecore.open(event_file)`` gives one trace per RunMetadata of the file and
``tracecore.open(logdir)`` every event file's RunMetadata and every XSpace profile below it,
with run, host, tag, wall_time and source key columns. Expectations come from the protobuf
readings of tests/tfevents_oracle.py (records, tags, steps, per RunMetadata the NodeExecStats
count) and tests/xspace_oracle.py (the profile's events).
"""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import pytest

import tfevents_oracle as oracle
import tracecore
import xspace_oracle as xo
import xspace_proto as xp
from tracecore import cli
from tracecore.tfevents import HOW_TO_RECORD

DATA = Path(__file__).resolve().parent / "data" / "tfevents"
TF1 = DATA / "tf1_small_convnet" / "events.out.tfevents.1795619468.vm"
PROFILE = (DATA / "keras_tensorboard_cb_mlp" / "train" / "plugins" / "profile"
           / "2026_11_25_15_11_13" / "vm.xplane.pb")


def test_an_event_file_opens_as_a_set_of_its_run_metadata() -> None:
    ts = tracecore.open(TF1)
    assert isinstance(ts, tracecore.TraceSet)
    expected = [f for f in oracle.scan_bytes(TF1.read_bytes()).run_metadata if f.payload]
    rows = ts.traces.select(["rank", "step", "run", "host", "tag", "wall_time", "source",
                             "size", "n_events", "kind", "status"]).to_pylist()
    assert rows == [
        {"rank": ".", "step": f.step, "run": ".", "host": None, "tag": f.tag,
         "wall_time": f.wall_time, "source": f.source, "size": len(f.payload),
         "n_events": oracle.node_stats_count(f.payload), "kind": "RunMetadata", "status": "ok"}
        for f in expected]
    assert [r["tag"] for r in rows] == ["step_0", "step_2"]
    # every table carries the keys; the events of each trace are its RunMetadata's
    events = ts.events
    assert events.column_names[:8] == ["trace_id", "rank", "step", "run", "host", "tag",
                                       "wall_time", "source"]
    assert events["tag"].value_counts().to_pylist() == [
        {"values": "step_0", "counts": 38}, {"values": "step_2", "counts": 38}]


def test_detected_by_content_not_by_name(tmp_path: Path) -> None:
    renamed = tmp_path / "run.log"
    shutil.copy(TF1, renamed)
    assert tracecore.open(renamed).n_traces == 2
    not_events = tmp_path / "events.out.tfevents.fake"
    not_events.write_bytes(
        b"dev_stats {\n  device: \"/cpu:0\"\n  node_stats { node_name: \"a\" }\n}\n")
    t = tracecore.open(not_events)  # a StepStats dump named like an event file
    assert isinstance(t, tracecore.Trace) and len(t) == 1


def test_graph_only_run_metadata_holds_graphs_and_no_step_stats() -> None:
    path = DATA / "tf2_trace_graph_conv1d" / "events.out.tfevents.1795619470.vm.28600.0.v2"
    ts = tracecore.open(path)
    assert ts.traces.select(["tag", "source", "n_events"]).to_pylist() == [
        {"tag": "train_step_trace", "source": "graph_run_metadata_graph", "n_events": 0}]
    payload = oracle.scan_bytes(path.read_bytes()).run_metadata[0].payload
    assert ts.trace(0).graph_nodes.num_rows > 0
    assert ts.graph_nodes.num_rows == ts.trace(0).graph_nodes.num_rows
    assert len(payload) == ts.traces["size"][0].as_py()


def test_a_log_directory_is_one_set_of_run_metadata_and_profiles() -> None:
    ts = tracecore.open(DATA)
    found = [f for _, scan in oracle.scan_logdir(DATA) for f in scan.run_metadata if f.payload]
    want_profile = xo.expected_xspace(xp.XSpace.FromString(PROFILE.read_bytes()))
    rows = ts.traces.select(["run", "host", "tag", "step", "source", "n_events",
                             "status"]).to_pylist()
    assert rows == [
        *({"run": f.run, "host": None, "tag": f.tag, "step": str(f.step), "source": f.source,
           "n_events": oracle.node_stats_count(f.payload), "status": "ok"} for f in found),
        {"run": "2026_11_25_15_11_13", "host": "vm", "tag": None, "step": "2026_11_25_15_11_13",
         "source": "xplane", "n_events": len(want_profile.events), "status": "ok"},
    ]
    assert len(rows) == 4 and len(ts) == sum(r["n_events"] for r in rows) == 948
    # the ranks: a RunMetadata's run, a profile's host
    assert ts.traces["rank"].to_pylist() == ["tf1_small_convnet", "tf1_small_convnet",
                                             "tf2_trace_graph_conv1d", "vm"]


def test_a_log_directory_of_scalars_says_what_it_holds(tmp_path: Path) -> None:
    shutil.copytree(DATA / "keras_tensorboard_cb_mlp" / "validation", tmp_path / "validation")
    with pytest.raises(tracecore.TraceFormatError) as e:
        tracecore.open(tmp_path)
    assert str(e.value) == (
        f"{tmp_path}: no profile (0) and no RunMetadata in its 1 event files, which hold "
        f"4 scalars only. {HOW_TO_RECORD}")
    # Keras' train directory holds an empty RunMetadata only (and a profile, left out here)
    train = tmp_path / "train"
    (train).mkdir()
    for f in (DATA / "keras_tensorboard_cb_mlp" / "train").glob("events.out.tfevents.*"):
        shutil.copy(f, train / f.name)
    with pytest.raises(tracecore.TraceFormatError,
                       match=r"which hold only empty RunMetadata \(1\)"):
        tracecore.open(train)


def test_a_damaged_event_file_is_an_error_row_with_its_offset(tmp_path: Path) -> None:
    data = bytearray(TF1.read_bytes())
    data[100] ^= 1  # inside the first record's data: its CRC no longer matches
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "events.out.tfevents.1.vm").write_bytes(bytes(data))
    (tmp_path / "b").mkdir()
    shutil.copy(TF1, tmp_path / "b" / TF1.name)
    ts = tracecore.open(tmp_path)
    rows = ts.traces.select(["run", "tag", "status", "error"]).to_pylist()
    assert [(r["run"], r["tag"], r["status"]) for r in rows] == [
        ("a", None, "error"), ("b", "step_0", "ok"), ("b", "step_2", "ok")]
    assert "byte offset 78: record data CRC mismatch" in rows[0]["error"]
    with pytest.raises(tracecore.TraceFormatError, match="byte offset 78: record data CRC"):
        tracecore.open(tmp_path / "a" / "events.out.tfevents.1.vm")


def test_a_truncated_tail_is_skipped_with_a_warning(tmp_path: Path) -> None:
    data = TF1.read_bytes()
    records, _ = oracle.read_records(data)
    last = records[-1][0]
    cut = tmp_path / "events.out.tfevents.2.vm"
    cut.write_bytes(data[:last + 20])  # the last record cut short: a file still being written
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ts = tracecore.open(cut)
    assert any(f"byte offset {last}" in str(w.message) for w in caught), [str(w.message)
                                                                          for w in caught]
    full = [f for f in oracle.scan_bytes(data).run_metadata if f.payload]
    kept = [f.tag for f in full if f.record_offset < last]
    assert ts.traces["tag"].to_pylist() == kept


def test_cli_info_and_top_of_an_event_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["info", str(TF1)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"event file  {TF1}"
    assert out[1] == (
        "traces         2 traces (2 loaded): 1 run, 0 hosts, 2 tags, 2 steps, 76 events")
    assert [line.split()[:5] for line in out[4:6]] == [
        [".", "-", "step_0", "0", "tagged_run_metadata"],
        [".", "-", "step_2", "2", "tagged_run_metadata"]]
    assert cli.main(["top", "-n", "2", str(TF1)]) == 0
    top = capsys.readouterr().out.splitlines()
    stats = tracecore.open(TF1).op_stats(per="all")
    assert top[1] == (f"top 2 of {stats.num_rows} by op "
                      "(sorted by time counted once: stream, else executor records)")
    stats = stats.sort_by([("time_ns", "descending"), ("key", "ascending")])
    assert [line.split()[:3] for line in top[3:5]] == [
        [r["key"], str(r["n_events"]), f"{r['time_ns'] / 1e6:.3f}"]
        for r in stats.slice(0, 2).to_pylist()]
