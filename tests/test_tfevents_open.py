"""The event file / log directory prototype (tracecore.tfevents) on the real samples, against
tests/tfevents_oracle.py: runs, tags, steps and each RunMetadata's event count."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import tfevents_oracle as oracle
from tracecore import TraceFormatError, _core, tfevents
from tracecore._arrow import table_from_capsules

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


def _event_file(*run_metadata: tuple[str, int, bytes]) -> bytes:
    """An event file of Events each holding a TaggedRunMetadata (tag, step, payload)."""
    import tfevents_proto as tp

    out = b""
    for tag, step, payload in run_metadata:
        event = tp.Event(wall_time=1.5, step=step)
        event.tagged_run_metadata.tag = tag
        event.tagged_run_metadata.run_metadata = payload
        out += oracle.frame(event.SerializeToString())
    return out


def test_a_bad_run_metadata_is_located_in_the_file(tmp_path: Path) -> None:
    """Each RunMetadata is parsed in place: an error in one names it and its offset in the
    event file (the scan's offset of its bytes plus the offset inside them)."""
    good = (DATA / "tf1_small_convnet" / "events.out.tfevents.1795619468.vm").read_bytes()
    payload = oracle.scan_bytes(good).run_metadata[0].payload
    # step_stats holding one empty dev_stats, then field 1 with wire type 7 (invalid)
    bad_payload = b"\x0a\x02\x0a\x00" + b"\x0f"
    bad_at = 5  # the binary importer's offset for a bad key: just after it
    assert _core.open_bytes(b"\x0a\x02\x0a\x00", "binary", 1).num_events == 0
    with pytest.raises(TraceFormatError, match=f"^byte offset {bad_at}: invalid wire type 7"):
        _core.open_bytes(bad_payload, "binary", 1)
    data = _event_file(("step_0", 0, payload), ("step_1", 1, bad_payload))
    path = tmp_path / "events.out.tfevents.2.vm"
    path.write_bytes(data)
    offset = _core.tfevents_scan(data)["run_metadata"][1]["offset"]
    assert data[offset:offset + len(bad_payload)] == bad_payload
    with pytest.raises(TraceFormatError) as info:
        tfevents.open_event_file(path)
    message = str(info.value)
    assert message.startswith(f"{path}: byte offset {offset + bad_at}: the RunMetadata of tag "
                              f"'step_1', step 1 ({len(bad_payload)} bytes from byte {offset}), "
                              f"at its byte {bad_at}: "), message
    assert "wire type 7" in message
    assert info.value.offset == offset + bad_at


@pytest.mark.parametrize("threads", [1, 2])
def test_event_file_traces_equal_separate_parses(threads: int) -> None:
    """The in-place, parallel parse gives each RunMetadata the tables a parse of its bytes
    alone gives (bytes input too)."""
    path = DATA / "tf1_small_convnet" / "events.out.tfevents.1795619468.vm"
    data = path.read_bytes()
    expected = oracle.scan_bytes(data).run_metadata
    for source in (path, data):
        result = _core.open_event_file(source, threads=threads)
        assert len(result["traces"]) == len(expected) == 2
        for core, found in zip(result["traces"], expected, strict=True):
            alone = _core.open_bytes(found.payload, "binary", 1)
            assert core.num_events == alone.num_events == oracle.node_stats_count(found.payload)
            for name in ("events", "devices", "tensors", "alloc_records"):
                assert (table_from_capsules(core.export_table(name)).to_pylist()
                        == table_from_capsules(alone.export_table(name)).to_pylist())
