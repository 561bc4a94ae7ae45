"""The XSpace importer's tables beyond the timeline (issue 21): event and plane stats, aggregate
events, memory records and the allocator-level memory replay (``replay(source="in_use")``).

Each is checked against the protobuf oracle (tests/xspace_oracle.py) row by row, on every
XSpace fixture and on hypothesis-generated XSpace messages in random valid wire encodings
(tests/xspace_strategies.py); the memory figures also against XProf's own memory profile of the
real samples (its ``*.memory_profile.json.gz``, beside them in tests/data/xspace/).
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tracecore
import xspace_compare as xc
import xspace_oracle as xo
import xspace_proto as xp
import xspace_strategies as xs
from tracecore import _core

DATA = Path(__file__).resolve().parent / "data"
XSPACE_FILES = sorted(DATA.glob("xspace/*.xplane.pb")) + sorted(
    DATA.glob("tfevents/**/*.xplane.pb"))
MEMORY_SAMPLES = ["tf_keras_mlp_fit", "keras_tensorboard_cb_mlp", "jax_mlp2_tanh"]


def _load(path: Path):
    return xp.XSpace.FromString(path.read_bytes())


@pytest.fixture(scope="module", params=XSPACE_FILES, ids=lambda p: str(p.relative_to(DATA)))
def opened(request: pytest.FixtureRequest):
    path = request.param
    space = _load(path)
    return tracecore.open(path), xo.expected_xspace(space), xc.ref_values(space)


def test_fixture_event_stats(opened) -> None:
    t, want, (event_refs, _) = opened
    got, expected = xc.event_stats(t, want, event_refs)
    assert got == expected
    assert len(got) == sum(len(e.stats) for e in want.events) > 0


def test_fixture_plane_stats(opened) -> None:
    t, want, (_, plane_refs) = opened
    got, expected = xc.plane_stats(t, want, plane_refs)
    assert got == expected
    assert t.stats["plane_stats"] == len(expected)


def test_fixture_aggregates(opened) -> None:
    t, want, _ = opened
    got, expected = xc.aggregates(t, want)
    assert got == expected
    assert t.stats["aggregate_events"] == len(expected)


def test_fixture_alloc_records_and_peaks(opened) -> None:
    t, want, _ = opened
    got, expected = xc.alloc_records(t, want)
    assert got == expected
    got_peaks, expected_peaks = xc.peaks(t, want)
    assert got_peaks == expected_peaks


def test_tf_sample_stats_by_hand() -> None:
    """A few values read off the TensorFlow sample, so that a shared mistake of the importer
    and the oracle shows."""
    t = tracecore.open(DATA / "xspace" / "tf_keras_mlp_fit.xplane.pb")
    stats = t.event_stats
    assert stats.num_rows == 3701 and not any(stats["inherited"].to_pylist())
    first = stats.slice(0, 2).to_pylist()
    assert (first[0]["event_id"], first[0]["name"], first[0]["value_kind"],
            first[0]["uint64_value"], first[0]["str_value"]) == (7, "eager_op", "ref", 2,
                                                                 "RangeDataset")
    assert (first[1]["name"], first[1]["int64_value"]) == ("is_func", 0)
    planes = t.plane_stats.to_pylist()
    assert [(p["plane"], p["name"], p["uint64_value"]) for p in planes[:2]] == [
        ("Task Environment", "profile_start_time", 1795619473333858452),
        ("Task Environment", "profile_stop_time", 1795619473392765834)]
    records = t.alloc_records
    assert records.num_rows == 48
    first_record = records.slice(0, 1).to_pylist()[0]
    assert {k: first_record[k] for k in ("allocator", "bytes", "heap_allocated", "shape",
                                          "dtype", "region", "address")} == {
        "allocator": "mklcpu", "bytes": 524288, "heap_allocated": 524288, "shape": [128, 1024],
        "dtype": "DT_FLOAT", "region": "output", "address": 140646788542528}
    assert first_record["tf_op"].endswith("stateless_random_uniform/StatelessRandomUniformV2")


# ---- XProf's memory profile ------------------------------------------------------------------
@pytest.mark.parametrize("name", MEMORY_SAMPLES)
def test_in_use_replay_matches_xprof_memory_profile(name: str) -> None:
    """Per allocator: the records, the peak (heap + stack), its time, heap/stack/free at the
    peak, the allocations live then (by address and time) and the lifetime peak equal XProf's
    ``memory_profile`` of the same file."""
    t = tracecore.open(DATA / "xspace" / f"{name}.xplane.pb")
    profile = json.loads(gzip.decompress(
        (DATA / "xspace" / f"{name}.memory_profile.json.gz").read_bytes()))
    per_allocator = profile["memoryProfilePerAllocator"]
    replay = t.replay(source="in_use")
    assert replay.allocators == sorted(per_allocator)
    records = t.alloc_records
    for allocator, xprof in per_allocator.items():
        peak = replay.peak(allocator)
        summary = xprof["profileSummary"]
        stats = summary["peakStats"]
        mine = records.filter(pa.compute.equal(records["allocator"].cast(pa.string()), allocator))
        assert mine.num_rows == len(xprof["sampledTimelineSnapshots"]) == peak["n_changes"]
        assert peak["peak_bytes"] == int(stats["peakBytesInUse"]) > 0
        assert peak["heap_allocated"] == int(stats["heapAllocatedBytes"])
        assert peak["stack_reserved"] == int(stats["stackReservedBytes"])
        assert peak["free"] == int(stats["freeMemoryBytes"])
        assert peak["fragmentation"] == float(stats["fragmentation"])
        assert peak["lifetime_peak_bytes"] == int(summary["peakBytesUsageLifetime"])
        snapshots = xprof["memoryProfileSnapshots"]
        active = sorted(int(snapshots[int(a["snapshotIndex"])]["activityMetadata"]["address"])
                        for a in xprof["activeAllocations"]
                        for _ in range(int(a["numOccurrences"])))
        live = replay.live_at_peak(allocator)
        assert sorted(live["address"].to_pylist()) == active
        assert peak["live_tensors"] == len(active) > 0
        assert sum(live["bytes"].to_pylist()) == peak["heap_allocated"]
    if not per_allocator:
        assert records.num_rows == 0 and replay.peaks.num_rows == 0


def test_in_use_replay_of_stepstats() -> None:
    """StepStats: the allocator_bytes_in_use reports, at their events' ends."""
    t = tracecore.open(DATA / "seed001_runmetadata.pbtxt")
    replay = t.replay(source="in_use")
    allocations = t.allocations.to_pylist()
    ends = t.events["end_ns"].to_pylist()
    for allocator in replay.allocators:
        reports = [(ends[a["event_id"]], a["allocator_bytes_in_use"]) for a in allocations
                   if a["allocator"] == allocator]
        top = max(b for _, b in reports)
        at = max(i for i, (_, b) in enumerate(sorted(reports, key=lambda r: r[0])) if b == top)
        peak = replay.peak(allocator)
        assert (peak["peak_bytes"], peak["peak_time_ns"], peak["n_changes"]) == (
            top, sorted(reports, key=lambda r: r[0])[at][0], len(reports))
        assert peak["lifetime_peak_bytes"] is None and peak["live_tensors"] == 0
    assert len(replay.allocators) >= 1
    with pytest.raises(ValueError, match="'records', 'tensors' or 'in_use'"):
        t.replay(source="in-use")


# ---- generated XSpaces -----------------------------------------------------------------------
def _open_bytes(data: bytes) -> tracecore.Trace:
    return tracecore.Trace.from_core(_core.open_bytes(data, "xspace", 1))


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_generated_xspaces_match_the_oracle(data) -> None:
    msg = data.draw(xs.xspace_messages())
    encoded = data.draw(xs.wire_encodings(msg))
    space = xp.XSpace.FromString(encoded)
    try:
        want = xo.expected_xspace(space)
    except (xo.OracleOutOfRange, xo.OracleBadValue):
        with pytest.raises(tracecore.TraceFormatError):
            _open_bytes(encoded)
        return
    try:
        t = _open_bytes(encoded)
    except tracecore.TraceFormatError as e:
        # A valid XSpace is refused only with nothing on the timeline: empty, or zero events
        # and fields skipped (it may be another kind of message).
        assert not want.events, str(e)
        assert "empty input" in str(e) or "unknown fields" in str(e), str(e)
        return
    event_refs, plane_refs = xc.ref_values(space)
    assert t.events["node_name"].to_pylist() == [e.node_name for e in want.events]
    assert [tuple(r.values()) for r in t.devices.select(["device", "line", "n_events"])
            .to_pylist()] == [(r.plane, r.line, r.n_events) for r in want.lines]
    for got, expected in (xc.event_stats(t, want, event_refs), xc.plane_stats(t, want, plane_refs),
                          xc.aggregates(t, want), xc.alloc_records(t, want), xc.peaks(t, want)):
        assert got == expected


MEMORY_STATS = ["allocator_name", "bytes_allocated", "bytes_reserved", "bytes_available",
                "peak_bytes_in_use", "requested_bytes", "allocation_bytes", "addr", "data_type",
                "shape", "region_type", "fragmentation", "group_id", "tf_op"]


@st.composite
def memory_spaces(draw):
    """An XSpace of memory events: allocations and deallocations of a few addresses on two
    lines of a /host:CPU plane, with equal times, missing stats and the stats' other
    encodings (metadata-held, uint64, index_on_host in place of an allocator name)."""
    plane = xp.XPlane(id=0, name="/host:CPU")
    by_name = {}
    for i, name in enumerate(MEMORY_STATS + ["index_on_host"], start=1):
        plane.stat_metadata[i].name = name
        by_name[name] = i
    plane.event_metadata[1].name = "MemoryAllocation"
    plane.event_metadata[2].name = "MemoryDeallocation"
    plane.event_metadata[3].name = "MemoryAllocation"  # stats held by the metadata
    inherited = plane.event_metadata[3].stats.add(metadata_id=by_name["allocator_name"])
    inherited.str_value = "GPU_0_bfc"
    for line_id in range(draw(st.integers(1, 2))):
        line = plane.lines.add(id=line_id, name=f"thread{line_id}",
                               timestamp_ns=draw(st.sampled_from([0, 1000, 10**18])))
        for _ in range(draw(st.integers(0, 12))):
            event = line.events.add(metadata_id=draw(st.sampled_from([1, 1, 2, 2, 3])),
                                    offset_ps=draw(st.sampled_from([0, 5000, 5000, 12345678])))
            stats = draw(xs.memory_stats(by_name))
            for s in stats:
                if draw(st.integers(0, 4)) == 0 and s.WhichOneof("value") == "int64_value":
                    s.uint64_value = s.int64_value % 2**64
            if draw(st.integers(0, 5)) == 0:
                stats.append(xp.XStat(metadata_id=by_name["index_on_host"], int64_value=3))
            if draw(st.integers(0, 15)) == 0:  # at int64's edge: heap + stack may overflow
                stats.insert(0, xp.XStat(metadata_id=by_name["bytes_allocated"],
                                         int64_value=2**63 - 1))
            if draw(st.booleans()):
                stats.append(xp.XStat(metadata_id=by_name["group_id"],
                                      int64_value=draw(st.integers(0, 3))))
            event.stats.extend(draw(st.permutations(stats)))
    space = xp.XSpace()
    space.planes.append(plane)
    return space


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_generated_memory_events_match_the_oracle(data) -> None:
    """Memory records, in_use peaks and live sets on memory-heavy XSpaces."""
    msg = data.draw(memory_spaces())
    encoded = data.draw(xs.wire_encodings(msg))
    space = xp.XSpace.FromString(encoded)
    try:
        want = xo.expected_xspace(space)
    except xo.OracleOutOfRange:  # heap + stack beyond int64: the replay says so
        with pytest.raises(OverflowError, match="overflows int64"):
            _open_bytes(encoded).replay(source="in_use")
        return
    if not want.events:
        return
    t = _open_bytes(encoded)
    for got, expected in (xc.alloc_records(t, want), xc.peaks(t, want)):
        assert got == expected
    assert len(want.alloc_records) == len(want.events)


def test_unchanged_source_is_checked_when_stats_are_built(tmp_path: Path) -> None:
    """event_stats are read from the source on first use: a source that has changed so that
    it holds other events is an error, not stats of the wrong events."""
    path = tmp_path / "x.xplane.pb"
    source = (DATA / "xspace" / "keras_tensorboard_cb_mlp.xplane.pb").read_bytes()
    path.write_bytes(source)
    t = tracecore.open(path)
    n = len(t)
    space = xp.XSpace.FromString(source)
    for plane in space.planes:
        for line in plane.lines:
            del line.events[1:]
    # The same size (a hostname pads it), written in place: the open trace's mapping sees it.
    pad = len(source) - len(space.SerializeToString()) - 4  # a 0x22 key and a 3-byte length
    space.hostnames.append("x" * pad)
    changed = space.SerializeToString()
    assert len(changed) == len(source) and 2**14 <= pad < 2**21
    before = path.stat()
    with open(path, "r+b") as f:
        f.write(changed)
    with pytest.raises(tracecore.TraceFormatError) as e:
        t.event_stats  # noqa: B018
    assert str(e.value) == (
        "the XSpace's event_stats are read from its file when first asked for, and the file "
        "changed since it was opened (another size, mtime or inode): open it again")
    # The same size, inode and mtime (put back): the events it holds tell it apart
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    with pytest.raises(tracecore.TraceFormatError, match="changed since") as e:
        t.event_stats  # noqa: B018
    assert f"timed events now, not the {n} it held when it was opened" in str(e.value)
    # Gone: also an error, not stats of nothing
    path.unlink()
    with pytest.raises(tracecore.TraceFormatError, match="the file is gone: open it again"):
        t.event_stats  # noqa: B018


def test_cli_memory_of_an_xspace(capsys: pytest.CaptureFixture[str]) -> None:
    """`tracecore memory` on an XSpace prints the in_use replay: XProf's peak and its live
    allocations, largest first."""
    from tracecore import cli

    assert cli.main(["memory", str(DATA / "xspace" / "tf_keras_mlp_fit.xplane.pb")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("peak memory per allocator (heap + stack in use")
    assert out[2].split() == ["mklcpu", "1.57", "MB", "45.713", "1.57", "MB", "0", "B",
                              "25.27", "GB", "1.57", "MB", "3"]
    assert out[4] == "live at the mklcpu peak: 3 allocations, 1.57 MB; largest 3:"
    assert [line.split()[-3:] for line in out[6:9]] == [["128x1024", "524.3", "kB"]] * 3
    assert cli.main(["memory", str(DATA / "xspace" / "jax_mlp2_tanh.xplane.pb")]) == 0
    assert capsys.readouterr().out == (
        "no memory held (no MemoryAllocation / MemoryDeallocation events)\n")
    assert cli.main(["memory", "--allocator", "GPU_0_bfc",
                     str(DATA / "xspace" / "tf_keras_mlp_fit.xplane.pb")]) != 0
    assert "no allocator 'GPU_0_bfc'; allocators: 'mklcpu'" in capsys.readouterr().err


def test_mutated_samples_are_read_or_refused() -> None:
    """Mutations of the real samples (xspace_strategies.mutate: bit flips, wire bytes, cut
    tails, spliced and deleted bytes) either open, with every table (event_stats too)
    exportable, or raise TraceFormatError with a byte offset: never another exception, never
    a crash."""
    import random

    rng = random.Random(20261126)
    seeds = [(DATA / "xspace" / f"{n}.xplane.pb").read_bytes() for n in MEMORY_SAMPLES]
    outcomes = {"ok": 0, "error": 0}
    for _ in range(400):  # mutate's wire-byte edits fail more often than they read
        data = xs.mutate(rng, rng.choice(seeds))
        try:
            t = _open_bytes(data)
        except tracecore.TraceFormatError as e:
            assert e.offset is not None or "gzip" in str(e), str(e)
            outcomes["error"] += 1
            continue
        for name in t.table_names:
            t.table(name).validate(full=True)
        outcomes["ok"] += 1
    assert outcomes["ok"] > 10 and outcomes["error"] > 10, outcomes


def _space_with_stats(stats: list, compressed: bytes | None = None) -> bytes:
    """One /host:CPU line with one MemoryAllocation event holding ``stats`` (name, int) and,
    with ``compressed``, a compressed_str_value stat "note"."""
    plane = xp.XPlane(id=0, name="/host:CPU")
    plane.event_metadata[1].name = "MemoryAllocation"
    names = [n for n, _ in stats] + ["note"]
    for i, name in enumerate(names, start=1):
        plane.stat_metadata[i].name = name
    line = plane.lines.add(id=1, name="python", timestamp_ns=1000)
    event = line.events.add(metadata_id=1, offset_ps=0, duration_ps=10)
    for i, (_, value) in enumerate(stats, start=1):
        event.stats.add(metadata_id=i, int64_value=value)
    if compressed is not None:
        event.stats.add(metadata_id=len(names), compressed_str_value=compressed)
    space = xp.XSpace()
    space.planes.append(plane)
    return space.SerializeToString()


def test_in_use_level_beyond_int64_is_an_overflow_error() -> None:
    data = _space_with_stats([("bytes_allocated", 2**63 - 1), ("bytes_reserved", 1)])
    t = _open_bytes(data)
    assert t.alloc_records["heap_allocated"].to_pylist() == [2**63 - 1]
    with pytest.raises(OverflowError, match="heap_allocated \\+ stack_reserved overflows int64"):
        t.replay(source="in_use")


def test_compressed_stats_are_read_and_bad_ones_located() -> None:
    good = _space_with_stats([], gzip.compress("caf\u00e9 n\u00f6te".encode(), mtime=0))
    t = _open_bytes(good)
    assert t.event_stats.select(["name", "value_kind", "str_value"]).to_pylist() == [
        {"name": "note", "value_kind": "compressed", "str_value": "caf\u00e9 n\u00f6te"}]
    for bad, what in ((b"not gzip at all", "is not gzip data"),
                      (gzip.compress(b"\xff\xfe", mtime=0), "is not UTF-8 once decompressed")):
        data = _space_with_stats([], bad)
        at = data.index(bad)
        with pytest.raises(tracecore.TraceFormatError) as e:
            _open_bytes(data)
        assert e.value.offset == at, (str(e.value), at)
        assert f"byte offset {at}: compressed_str_value of stat 'note' {what}" in str(e.value)


def test_an_export_older_than_the_xspace_tables_opens(tmp_path: Path) -> None:
    """A Parquet export written before event_stats, plane_stats, aggregate_events and the
    memory columns of alloc_records existed reads back with those tables empty and those
    columns null (its tracecore.json names no file for them)."""
    import pyarrow.parquet as pq

    from tracecore import parquet

    t = tracecore.open(DATA / "seed001_runmetadata.pbtxt")
    out = t.to_parquet(tmp_path / "pq")
    meta_path = out / "tracecore.json"
    meta = json.loads(meta_path.read_text())
    for name in parquet.ADDED_TABLES:
        file_name = meta["tables"].pop(name)
        meta["files"].pop(file_name)
        meta["counts"].pop(name)
        (out / file_name).unlink()
    # alloc_records as the first layout wrote it: its four columns only
    records_file = out / meta["tables"]["alloc_records"]
    old = pq.read_table(records_file).select(["event_id", "allocator", "time_ns", "bytes"])
    pq.write_table(old, records_file)
    data = records_file.read_bytes()
    meta["files"][records_file.name] = {"bytes": len(data), "crc32c": _core.crc32c(data)}
    meta["checksum"] = parquet._meta_checksum(meta)
    meta_path.write_text(json.dumps(meta))
    back = tracecore.open(out)
    for name in parquet.ADDED_TABLES:
        assert back.table(name).num_rows == 0
        assert back.table(name).schema == t.table(name).schema
    assert back.alloc_records.schema.names == t.alloc_records.schema.names
    assert back.alloc_records.select(["event_id", "time_ns", "bytes"]).equals(
        t.alloc_records.select(["event_id", "time_ns", "bytes"]))
    assert back.alloc_records["heap_allocated"].null_count == t.alloc_records.num_rows > 0
