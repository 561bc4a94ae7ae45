"""Trace.to_perfetto / `tracecore export --perfetto`: every export of the samples decodes with
the Perfetto message definitions of tests/perfetto_proto.py, packet by packet, and holds one
slice per event on its device / line track with its name and exact times, the memory replay
as counter tracks and the steps as slices."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest
from google.protobuf import unknown_fields

import perfetto_proto as pp
import tracecore
from tracecore import cli
from tracecore.chrome import _Processes

DATA = Path(__file__).parent / "data"
SAMPLES = [
    pytest.param(None, id="sample"),
    pytest.param(DATA / "seed001_runmetadata.pbtxt", id="seed001"),
    *(pytest.param(p, id=p.name) for p in sorted((DATA / "xspace").glob("*.xplane.pb"))),
    pytest.param(DATA / "chrome" / "torch_mlp_sgd.pt.trace.json", id="kineto"),
]


def _open(path: Path | None) -> tracecore.Trace:
    return tracecore.open(tracecore.sample_path() if path is None else path)


def _uuid(pid: int, tid: int) -> int:
    return ((pid + 1) << 32) | (tid + 1)


def _no_unknown(message: object, where: str) -> None:
    assert len(unknown_fields.UnknownFieldSet(message)) == 0, where  # type: ignore[arg-type]
    for field, value in message.ListFields():  # type: ignore[attr-defined]
        if field.type != field.TYPE_MESSAGE:
            continue
        repeated = getattr(field, "is_repeated", None)
        if repeated is None:  # protobuf < 5.28
            repeated = field.label == field.LABEL_REPEATED
        for sub in value if repeated else [value]:
            _no_unknown(sub, f"{where}.{field.name}")


class Decoded:
    """The export read back as a trace processor would: tracks, interned names, slices per
    track (BEGIN / END matched per track in packet order), counter values."""

    def __init__(self, data: bytes) -> None:
        trace = pp.Trace()
        trace.ParseFromString(data)
        self.packets = list(trace.packet)
        self.tracks: dict[int, object] = {}
        self.names: dict[int, str] = {}
        self.categories: dict[int, str] = {}
        self.slices: list[tuple[int, str, str | None, int, int]] = []
        self.counters: list[tuple[str, int, int]] = []
        open_slices: dict[int, list[int]] = defaultdict(list)
        for i, packet in enumerate(self.packets):
            where = f"packet {i}"
            _no_unknown(packet, where)
            assert packet.trusted_packet_sequence_id == 1, where
            if i == 0:
                assert packet.sequence_flags & pp.SEQ_INCREMENTAL_STATE_CLEARED, where
            else:
                assert not packet.sequence_flags & pp.SEQ_INCREMENTAL_STATE_CLEARED, where
            if packet.HasField("interned_data"):
                assert packet.sequence_flags & pp.SEQ_NEEDS_INCREMENTAL_STATE, where
                for table, entries in (
                    (self.names, packet.interned_data.event_names),
                    (self.categories, packet.interned_data.event_categories),
                ):
                    for entry in entries:
                        assert entry.iid > 0 and entry.iid not in table, where  # interned once
                        table[entry.iid] = entry.name
            if packet.HasField("track_descriptor"):
                d = packet.track_descriptor
                assert d.uuid not in self.tracks, where
                if d.HasField("parent_uuid"):
                    assert d.parent_uuid in self.tracks, where  # parents come first
                else:
                    assert d.HasField("process"), where
                self.tracks[d.uuid] = d
                continue
            assert packet.HasField("track_event"), where
            e = packet.track_event
            assert e.track_uuid in self.tracks, where  # described before use
            if e.type == pp.TYPE_SLICE_BEGIN:
                if e.HasField("name_iid"):
                    assert packet.sequence_flags & pp.SEQ_NEEDS_INCREMENTAL_STATE, where
                    name = self.names[e.name_iid]  # interned on this packet or before
                else:
                    name = e.name
                category = None
                if e.category_iids:
                    (iid,) = e.category_iids
                    category = self.categories[iid]
                open_slices[e.track_uuid].append(len(self.slices))
                self.slices.append((e.track_uuid, name, category, packet.timestamp, -1))
            elif e.type == pp.TYPE_SLICE_END:
                k = open_slices[e.track_uuid].pop()
                track, name, category, start, _ = self.slices[k]
                assert packet.timestamp >= start, where
                self.slices[k] = (track, name, category, start, packet.timestamp)
            else:
                assert e.type == pp.TYPE_COUNTER, where
                d = self.tracks[e.track_uuid]
                assert d.HasField("counter"), where  # type: ignore[attr-defined]
                assert d.counter.unit == pp.UNIT_SIZE_BYTES  # type: ignore[attr-defined]
                self.counters.append((d.name, packet.timestamp, e.counter_value))  # type: ignore[attr-defined]
        assert not any(open_slices.values())

    def process_of(self, uuid: int) -> object:
        d = self.tracks[uuid]
        while d.HasField("parent_uuid"):  # type: ignore[attr-defined]
            d = self.tracks[d.parent_uuid]  # type: ignore[attr-defined]
        return d


@pytest.mark.parametrize("path", SAMPLES)
def test_every_event_is_a_slice_on_its_track(path: Path | None, tmp_path: Path) -> None:
    t = _open(path)
    out = t.to_perfetto(tmp_path / "t.pftrace")
    assert out == tmp_path / "t.pftrace"
    assert [p.name for p in tmp_path.iterdir()] == ["t.pftrace"]  # no temporary file left
    decoded = Decoded(out.read_bytes())

    events = t.table("events").to_pydict()
    processes = _Processes(t)
    n = len(events["node_name"])
    event_slices = [s for s in decoded.slices if decoded.process_of(s[0]).name != "Steps"]  # type: ignore[attr-defined]
    assert len(event_slices) == n
    thread_names: dict[int, str] = {}
    for i in range(n):
        start, end = events["start_ns"][i], max(events["end_ns"][i], events["start_ns"][i])
        pid, tid, announce = processes.place(events["device_index"][i], start, end)
        if announce is not None:
            thread_names[_uuid(pid, tid)] = announce
        track, name, category, s_start, s_end = event_slices[i]
        assert track == _uuid(pid, tid)
        assert name == events["node_name"][i]
        assert category == events["op"][i]
        assert (s_start, s_end) == (start, end)
        d = decoded.tracks[track]
        assert d.parent_uuid == _uuid(pid, -1)  # type: ignore[attr-defined]
        process = decoded.tracks[d.parent_uuid]  # type: ignore[attr-defined]
        assert process.process.process_name == processes.names[pid]  # type: ignore[attr-defined]
        assert process.process.pid == pid + 1  # type: ignore[attr-defined]
    for uuid, name in thread_names.items():  # tracks of lines are named as the Chrome threads
        assert decoded.tracks[uuid].name == name  # type: ignore[attr-defined]

    # Slices of one track never overlap: Perfetto nests them correctly.
    per_track: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for track, _, _, start, end in decoded.slices:
        per_track[track].append((start, end))
    for spans in per_track.values():
        spans.sort()
        for (_, a_end), (b_start, _) in zip(spans, spans[1:], strict=False):
            assert b_start > a_end  # timeline.py's lanes: strictly after the previous end

    # Interning: every name and category sent once, each iid one string.
    used = {name for _, name, _, _, _ in event_slices}
    assert used == set(decoded.names.values())
    assert len(decoded.names) == len(set(decoded.names.values()))

    # Memory: the record replay's bytes_in_use per allocator, row by row.
    timeline = t.replay(source="records").timeline.to_pydict()
    expected = list(
        zip(timeline["allocator"], timeline["time_ns"], timeline["bytes_in_use"], strict=True)
    )
    assert decoded.counters == expected
    for d in decoded.tracks.values():
        if d.HasField("counter"):  # type: ignore[attr-defined]
            assert decoded.process_of(d.uuid).name == "Allocators"  # type: ignore[attr-defined]

    # Steps: one slice "step N" per step_times row.
    steps = t.step_times().to_pydict()
    step_slices = [s for s in decoded.slices if decoded.process_of(s[0]).name == "Steps"]  # type: ignore[attr-defined]
    assert [(s[1], s[3], s[4]) for s in step_slices] == [
        (f"step {k}", a, max(b, a))
        for k, a, b in zip(steps["step"], steps["start_ns"], steps["end_ns"], strict=True)
    ]


def test_options_leave_out_memory_and_steps(tmp_path: Path) -> None:
    t = tracecore.open(tracecore.sample_path())
    decoded = Decoded(
        t.to_perfetto(tmp_path / "t.pb", show_memory=False, show_steps=False).read_bytes()
    )
    assert decoded.counters == []
    assert len(decoded.slices) == len(t)
    names = {d.name for d in decoded.tracks.values()}  # type: ignore[attr-defined]
    assert "Allocators" not in names and "Steps" not in names


def test_output_errors_name_the_file(tmp_path: Path) -> None:
    t = tracecore.open(tracecore.sample_path())
    with pytest.raises(FileNotFoundError, match="no such directory"):
        t.to_perfetto(tmp_path / "missing" / "t.pb")
    with pytest.raises(IsADirectoryError):
        t.to_perfetto(tmp_path)
    with pytest.raises(OSError) as info:  # the temporary file cannot be made in /sys
        t.to_perfetto("/sys/x.pftrace")
    assert "/sys/x.pftrace" in str(info.value) and ".tmp" not in str(info.value)


def test_cli_export_perfetto(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "t.pftrace"
    seed = DATA / "seed001_runmetadata.pbtxt"
    assert cli.main(["export", str(seed), "--perfetto", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "wrote Perfetto trace" in printed and str(out) in printed
    t = tracecore.open(seed)
    decoded = Decoded(out.read_bytes())
    assert len(decoded.slices) == len(t) + t.step_times().num_rows
    assert len(decoded.counters) == t.replay(source="records").timeline.num_rows


def test_perfetto_packages_own_definitions_decode_it(tmp_path: Path) -> None:
    """With the `perfetto` package installed (not a test dependency), its generated
    perfetto_trace_pb2 reads every packet with no unknown field. (Its TraceProcessor needs to
    download trace_processor_shell, which an offline machine cannot.)"""
    pb = pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2")
    t = tracecore.open(tracecore.sample_path())
    trace = pb.Trace()
    trace.ParseFromString(t.to_perfetto(tmp_path / "t.pftrace").read_bytes())
    for i, packet in enumerate(trace.packet):
        _no_unknown(packet, f"packet {i}")
    assert sum(p.track_event.type == pb.TrackEvent.TYPE_SLICE_BEGIN for p in trace.packet) == (
        len(t) + t.step_times().num_rows
    )


def test_overlapping_events_of_one_thread_get_separate_tracks(tmp_path: Path) -> None:
    """A Chrome trace whose thread has events that overlap without nesting: Perfetto nests the
    slices of one track by time, so they go to lanes (separate child tracks of the line)."""
    src = tmp_path / "overlap.json"
    src.write_text(
        '{"traceEvents":['
        '{"ph":"X","name":"a","pid":1,"tid":7,"ts":10,"dur":10},'
        '{"ph":"X","name":"b","pid":1,"tid":7,"ts":15,"dur":10},'
        '{"ph":"X","name":"c","pid":1,"tid":7,"ts":30,"dur":1},'
        '{"ph":"X","name":"d","pid":1,"tid":7,"ts":30,"dur":0}]}'
    )
    t = tracecore.open(src)
    decoded = Decoded(t.to_perfetto(tmp_path / "t.pftrace", show_steps=False).read_bytes())
    slices = {name: (track, start, end) for track, name, _, start, end in decoded.slices}
    assert slices["a"][1:] == (10_000, 20_000) and slices["b"][1:] == (15_000, 25_000)
    assert slices["a"][0] != slices["b"][0]  # overlapping: two tracks
    assert slices["c"][0] == slices["a"][0]  # after a's end: back on the first lane
    assert slices["d"][0] == slices["b"][0]  # c holds lane 0 at 30 us: d (zero length) on lane 1
    parents = {decoded.tracks[track].parent_uuid for track, _, _ in slices.values()}  # type: ignore[attr-defined]
    assert len(parents) == 1  # one device's tracks
    names = sorted(decoded.tracks[track].name for track in {s[0] for s in slices.values()})  # type: ignore[attr-defined]
    assert names[1] == names[0] + " (1)"


def test_a_trace_read_back_from_parquet_exports_the_same(tmp_path: Path) -> None:
    t = tracecore.open(DATA / "seed001_runmetadata.pbtxt")
    stored = tracecore.open(t.to_parquet(tmp_path / "pq"))
    a = Decoded(t.to_perfetto(tmp_path / "a.pftrace").read_bytes())
    b = Decoded(stored.to_perfetto(tmp_path / "b.pftrace").read_bytes())
    assert a.slices == b.slices and a.counters == b.counters
    assert len(a.slices) == len(t) + t.step_times().num_rows
