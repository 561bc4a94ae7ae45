"""Opening XSpace profiles (``*.xplane.pb``, issue 21).

The regression of issue 21: the ``a100-node`` XSpace (``tests/data/xspace/
tf_keras_mlp_fit_a100_node.xplane.pb``, made by tests/make_xspace_fixtures.py) was read as a
RunMetadata with 0 events and exit status 0. A reading with zero events (and no graph) that
skipped unknown fields read another kind of message: it is a TraceFormatError, never an empty
success.

Every XSpace fixture (tests/data/xspace/ and the Keras log directory's vm.xplane.pb) opens as
an XSpace whose tables equal the protobuf oracle's reading (tests/xspace_oracle.py): one
devices row per line, per line the event count, duration sum and distinct names, and every
timed event's name, label, op, times and step. The queries equal the brute-force query oracle
(tests/query_oracle.py) on the same events; Parquet and `tracecore info` work on an XSpace.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import query_oracle as qo
import tfproto
import tracecore
import xspace_oracle as xo
import xspace_proto as xp
from tracecore import cli

DATA = Path(__file__).resolve().parent / "data"
A100 = DATA / "xspace" / "tf_keras_mlp_fit_a100_node.xplane.pb"
ZERO_EVENTS = r"0 events and [1-9][0-9]* unknown fields"


def test_a100_node_read_as_stepstats_binary_is_an_error() -> None:
    with pytest.raises(tracecore.TraceFormatError, match=ZERO_EVENTS) as e:
        tracecore.open(A100, format="binary")
    message = str(e.value)
    assert re.search(r"byte offset 0: not a RunMetadata \(format 'binary'\): the file looks like",
                     message), message
    assert "0 events and 287 unknown fields" in message
    assert e.value.offset == 0 and e.value.line is None


def test_a100_node_info_fails(capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(["info", "--input-format", "binary", str(A100)])
    out, err = capsys.readouterr()
    assert code != 0 and out == ""
    assert "0 events and 287 unknown fields" in err


# ---- XSpace fixtures against the protobuf oracle (tests/xspace_oracle.py) ---------------------
XSPACE_FILES = sorted(DATA.glob("xspace/*.xplane.pb")) + sorted(
    DATA.glob("tfevents/**/*.xplane.pb"))


def _oracle(path: Path) -> xo.XSpaceTables:
    return xo.expected_xspace(xp.XSpace.FromString(path.read_bytes()))


@pytest.fixture(scope="module", params=XSPACE_FILES, ids=lambda p: str(p.relative_to(DATA)))
def opened(request: pytest.FixtureRequest) -> tuple[tracecore.Trace, xo.XSpaceTables]:
    path = request.param
    return tracecore.open(path), _oracle(path)


def test_xspace_fixtures_are_found() -> None:
    names = [p.name for p in XSPACE_FILES]
    assert names == ["jax_mlp2_tanh.xplane.pb", "keras_tensorboard_cb_mlp.xplane.pb",
                     "tf_keras_mlp_fit.xplane.pb", "tf_keras_mlp_fit_a100_node.xplane.pb",
                     "vm.xplane.pb"]


def test_xspace_opens_as_xspace(opened: tuple[tracecore.Trace, xo.XSpaceTables]) -> None:
    t, _ = opened
    assert (t.kind, t.format, t.stats["unknown_fields"]) == ("XSpace", "xspace", 0)


def test_xspace_lines_match_the_oracle(opened: tuple[tracecore.Trace, xo.XSpaceTables]) -> None:
    """One devices row per XLine: plane, line name and id, kind, timed events."""
    t, want = opened
    got = t.devices.select(["device_index", "device", "line", "line_id", "kind", "n_events"])
    assert got.to_pylist() == [
        {"device_index": r.line_index, "device": r.plane, "line": r.line, "line_id": r.line_id,
         "kind": r.kind, "n_events": r.n_events}
        for r in want.lines
    ]


def test_xspace_per_line_counts_durations_names(
    opened: tuple[tracecore.Trace, xo.XSpaceTables],
) -> None:
    """Per line: the number of events, the sum of their durations and of distinct names."""
    t, want = opened
    ev = t.events
    got: dict[int, list] = {}
    for d, name, s, e in zip(ev["device_index"].to_pylist(), ev["node_name"].to_pylist(),
                             ev["start_ns"].to_pylist(), ev["end_ns"].to_pylist(), strict=True):
        row = got.setdefault(d, [0, 0, set()])
        row[0] += 1
        row[1] += e - s
        row[2].add(name)
    expected: dict[int, list] = {}
    for r in want.events:
        row = expected.setdefault(r.line_index, [0, 0, set()])
        row[0] += 1
        row[1] += r.end_ns - r.start_ns
        row[2].add(r.node_name)
    assert {d: (n, dur, len(names)) for d, (n, dur, names) in got.items()} == {
        d: (n, dur, len(names)) for d, (n, dur, names) in expected.items()}
    assert got == expected


def test_xspace_events_match_the_oracle(opened: tuple[tracecore.Trace, xo.XSpaceTables]) -> None:
    """Every timed event, in file order: name, label, op, times, step, thread (line id)."""
    t, want = opened
    got = t.events.select(["event_id", "device_index", "node_name", "timeline_label", "op",
                           "start_ns", "end_ns", "op_start_ns", "op_end_ns", "scheduled_ns",
                           "step_id"]).to_pylist()
    assert got == [
        {"event_id": r.event_id, "device_index": r.line_index, "node_name": r.node_name,
         "timeline_label": r.display_name, "op": r.op, "start_ns": r.start_ns,
         "end_ns": r.end_ns, "op_start_ns": r.start_ns, "op_end_ns": r.end_ns,
         "scheduled_ns": None, "step_id": r.step}
        for r in want.events
    ]
    assert len(got) == len(want.events) > 0


def test_a100_node_opens_as_xspace() -> None:
    """Issue 21's a100-node file is detected by its structure: the same XSpace as the vm one."""
    t = tracecore.open(A100)
    vm = tracecore.open(DATA / "xspace" / "tf_keras_mlp_fit.xplane.pb")
    assert (t.kind, t.format, len(t)) == ("XSpace", "xspace", len(vm))
    assert len(t) == len(_oracle(A100).events) > 1000
    assert t.events.equals(vm.events) and t.devices.equals(vm.devices)


def test_stepstats_reading_of_an_xspace_says_what_it_is() -> None:
    with pytest.raises(tracecore.TraceFormatError, match=ZERO_EVENTS) as e:
        tracecore.open(A100, format="binary")
    assert "the file looks like a file of format 'xspace'" in str(e.value)
    vm = DATA / "xspace" / "tf_keras_mlp_fit.xplane.pb"
    with pytest.raises(tracecore.TraceFormatError) as e:
        tracecore.open(vm, format="binary")
    assert re.search(r"byte offset \d+: invalid wire type 6 \(field 14\) \(the file looks like an "
                     r"XSpace: format 'xspace' or 'auto' reads it\)", str(e.value)), str(e.value)


def test_a_protobuf_of_neither_kind_says_so(tmp_path: Path) -> None:
    path = tmp_path / "other.pb"
    path.write_bytes(b"\x08\x01\x10\x02")  # varint fields 1 and 2: no StepStats, no XSpace
    for fmt in ("auto", "binary"):
        with pytest.raises(tracecore.TraceFormatError,
                           match=r"byte offset 0: no StepStats or RunMetadata field found: every "
                                 r"top-level field is unknown"):
            tracecore.open(path, format=fmt)
    with pytest.raises(tracecore.TraceFormatError,
                       match=r"byte offset 0: not an XSpace \(format 'xspace'\): the file looks "
                             r"like no trace tracecore reads: 0 events and 2 unknown fields"):
        tracecore.open(path, format="xspace")


def test_stepstats_taken_for_an_xspace_by_its_start_is_read_as_stepstats(tmp_path: Path) -> None:
    """A StepStats whose first block starts like an XPlane (an event, then an unknown field 4,
    which only XPlane has there) is no XSpace: its XSpace reading finds no event, and the
    binary reading is taken."""
    device = b"\x12\x00" + b"\x22\x00" + b"\x0a\x02/x"  # node_stats {}, field 4 "", device
    data = b"\x0a" + bytes([len(device)]) + device
    msg = tfproto.StepStats.FromString(data)
    assert len(msg.dev_stats[0].node_stats) == 1 and msg.dev_stats[0].device == "/x"
    path = tmp_path / "looks_like_xspace.pb"
    path.write_bytes(data)
    t = tracecore.open(path)
    assert (t.kind, t.format, len(t), t.stats["unknown_fields"]) == ("StepStats", "binary", 1, 1)
    assert t.devices["device"].to_pylist() == ["/x"]
    with pytest.raises(tracecore.TraceFormatError, match="not an XSpace .* 0 events and 1 unknown"):
        tracecore.open(path, format="xspace")


# ---- queries, export and the command line on an XSpace -----------------------------------------
def _query_inputs(want: xo.XSpaceTables) -> tuple[list[int], list[int], list[int], list]:
    starts = [r.start_ns for r in want.events]
    ends = [r.end_ns for r in want.events]
    device_index = [r.line_index for r in want.events]
    devices = [(r.line_index, r.plane, r.kind) for r in want.lines]
    return starts, ends, device_index, devices


@pytest.mark.parametrize("by", ["op", "node_name", "device"])
def test_xspace_op_stats(opened: tuple[tracecore.Trace, xo.XSpaceTables], by: str) -> None:
    t, want = opened
    starts, ends, device_index, devices = _query_inputs(want)
    expected = qo.op_stats(starts, ends, device_index, [r.op for r in want.events],
                           [r.node_name for r in want.events], devices, by=by)
    cols = ["key", "n_events", "total_ns", "max_ns", "busy_ns", "executor_ns", "stream_ns"]
    got = t.op_stats(by=by).select(cols).to_pylist()
    assert got == [{c: row[c] for c in cols} for row in expected]
    assert sum(r["n_events"] for r in got) == len(want.events)


def test_xspace_occupancy(opened: tuple[tracecore.Trace, xo.XSpaceTables]) -> None:
    t, want = opened
    expected = qo.occupancy(*_query_inputs(want))
    cols = ["device_index", "device", "kind", "n_events", "busy_ns", "span_ns",
            "max_concurrency", "idle_gaps"]
    assert t.occupancy().select(cols).to_pylist() == [{c: r[c] for c in cols} for r in expected]


def test_xspace_overlaps(opened: tuple[tracecore.Trace, xo.XSpaceTables]) -> None:
    """Pairs of overlapping events of the first 200 events against all, on the same line."""
    t, want = opened
    starts, ends, device_index, _ = _query_inputs(want)
    left = list(range(min(200, len(starts))))
    expected = qo.overlaps_join(starts, ends, device_index, left=left)
    got = t.overlaps(left=left)
    rows = list(zip(*(got[c].to_pylist() for c in got.column_names[:3]), strict=True))
    assert rows == expected
    assert len(rows) > 0


def test_xspace_parquet_round_trip(tmp_path: Path) -> None:
    t = tracecore.open(DATA / "xspace" / "jax_mlp2_tanh.xplane.pb")
    back = tracecore.open(t.to_parquet(tmp_path / "pq"))
    assert (back.kind, back.format, len(back)) == ("XSpace", "xspace", len(t))
    for name in t.table_names:  # the same rows (dictionaries are cut to the names used)
        assert back.table(name).schema.names == t.table(name).schema.names, name
        assert back.table(name).to_pylist() == t.table(name).to_pylist(), name
    steps = back.events["step_id"].drop_null().to_pylist()
    assert steps == t.events["step_id"].drop_null().to_pylist()
    lines = back.devices["line"].to_pylist()
    assert lines == [r.line for r in _oracle(DATA / "xspace" / "jax_mlp2_tanh.xplane.pb").lines]


def test_xspace_info(capsys: pytest.CaptureFixture[str]) -> None:
    path = DATA / "xspace" / "tf_keras_mlp_fit.xplane.pb"
    want = _oracle(path)
    code = cli.main(["info", str(path)])
    out, err = capsys.readouterr()
    assert code == 0 and err == ""
    assert re.search(r"kind\s+XSpace \(xspace\), 77\.4 kB", out), out
    assert re.search(rf"parsed\s+{len(want.events)} events, 0 tensors", out), out
    assert len(want.events) == 2548 and len(want.lines) == 11
    assert f"devices ({len(want.lines)} blocks)" in out
    row = next(line.split() for line in out.splitlines() if line.strip().startswith("/host:CPU"))
    assert row[:4] == ["/host:CPU", "host_thread", "11", "2548"]
