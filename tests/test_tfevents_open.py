"""The event file / log directory prototype (tracecore.tfevents) on the real samples, against
tests/tfevents_oracle.py: runs, tags, steps and each RunMetadata's event count."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import tfevents_oracle as oracle
from tracecore import TraceFormatError, tfevents

DATA = Path(__file__).resolve().parent / "data" / "tfevents"


def test_log_directory_matches_the_oracle() -> None:
    logdir = tfevents.open_logdir(DATA)
    expected = [found for _, scan in oracle.scan_logdir(DATA) for found in scan.run_metadata]
    got = [(t.run, t.tag, t.step, t.wall_time, t.source) for t in logdir.traces]
    assert got == [(e.run, e.tag, e.step, e.wall_time, e.source) for e in expected]
    for t, e in zip(logdir.traces, expected, strict=True):
        if not e.payload:
            assert t.trace is None  # Keras' empty RunMetadata
            continue
        assert t.trace is not None
        assert len(t.trace) == oracle.node_stats_count(e.payload)
        assert t.has_step_stats == (len(t.trace) > 0)
    assert [t.has_step_stats for t in logdir.traces] == [False, True, True, False]
    assert logdir.warnings == []
    assert len(logdir.scans) == 4


def test_scalars_only_directory_says_what_it_holds(tmp_path: Path) -> None:
    shutil.copytree(DATA / "keras_tensorboard_cb_mlp" / "validation", tmp_path / "validation")
    with pytest.raises(TraceFormatError, match="no RunMetadata in its 1 event files, which hold "
                                               "4 scalars only") as info:
        tfevents.open_logdir(tmp_path)
    assert "FULL_TRACE" in str(info.value)
    with pytest.raises(TraceFormatError, match="no event files"):
        tfevents.open_logdir(tmp_path / "validation" / "nothing_here")


def test_describe_content() -> None:
    assert tfevents.describe_content({}) == "no summaries"
    assert tfevents.describe_content({"simple_values": 2, "plugins": {"scalars": 1}}) == \
        "3 scalars only"
    assert tfevents.describe_content({"graph_def": 1, "plugins": {"graph_keras_model": 1,
                                                                  "text": 2}}) == \
        "2 graphs, 2 text summaries"


def test_damaged_file_names_itself(tmp_path: Path) -> None:
    data = bytearray((DATA / "tf1_small_convnet" / "events.out.tfevents.1795619468.vm")
                     .read_bytes())
    data[100] ^= 1
    bad = tmp_path / "events.out.tfevents.1.bad"
    bad.write_bytes(bytes(data))
    with pytest.raises(TraceFormatError, match=r"events\.out\.tfevents\.1\.bad: byte offset 78: "
                                               r"record data CRC mismatch") as info:
        tfevents.open_event_file(bad)
    assert info.value.offset == 78
    lenient = tfevents.open_event_file(bad, strict=False)
    assert [t.tag for t in lenient] == ["step_0", "step_2"]
