"""Parallel parsing gives exactly the tables of a single-threaded parse (issue 4), and a large
generated dump opens (TRACECORE_BIG_TESTS=1)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import tracecore

DATA = Path(__file__).parent / "data"
sys.path.insert(0, str(Path(__file__).parent))


def _assert_identical(a: tracecore.Trace, b: tracecore.Trace) -> None:
    assert a.kind == b.kind and a.format == b.format
    for name in a.table_names:
        ta, tb = a.table(name), b.table(name)
        assert ta.num_rows == tb.num_rows, name
        # equals() also compares dictionary indices: string ids must come out identical
        assert ta.equals(tb), name
    sa, sb = a.stats, b.stats
    for key in ("events", "tensors", "alloc_records", "unknown_fields", "distinct_strings"):
        assert sa[key] == sb[key], key


@pytest.fixture(scope="module")
def stepstats_text(tmp_path_factory) -> Path:
    # ~10 MB: seven copies of seed 000 (repeated dev_stats blocks are a valid StepStats)
    path = tmp_path_factory.mktemp("par") / "steps.pbtxt"
    path.write_bytes((DATA / "seed000_stepstats.pbtxt").read_bytes() * 7)
    return path


@pytest.fixture(scope="module")
def runmetadata_text(tmp_path_factory) -> Path:
    # seed 001's step_stats body repeated 30 times inside one step_stats
    lines = (DATA / "seed001_runmetadata.pbtxt").read_text().splitlines(keepends=True)
    assert lines[0].startswith("step_stats {") and lines[-1].rstrip() == "}"
    body = "".join(lines[1:-1])
    path = tmp_path_factory.mktemp("par") / "run.pbtxt"
    path.write_text("step_stats {\n" + body * 30 + "}\n")
    return path


def test_text_stepstats_parallel_is_identical(stepstats_text):
    one = tracecore.open(stepstats_text, threads=1)
    two = tracecore.open(stepstats_text, threads=2)
    assert one.stats["threads"] == 1
    assert two.stats["threads"] == 2  # the input was really split
    assert len(one) == 7 * 2087
    _assert_identical(one, two)
    four = tracecore.open(stepstats_text, threads=4)
    assert four.stats["threads"] >= 2
    _assert_identical(one, four)


def test_text_runmetadata_parallel_is_identical(runmetadata_text):
    one = tracecore.open(runmetadata_text, threads=1)
    two = tracecore.open(runmetadata_text, threads=2)
    assert two.stats["threads"] == 2
    assert one.kind == "RunMetadata" and len(one) == 30 * 292
    _assert_identical(one, two)


def test_binary_parallel_is_identical(tmp_path, stepstats_text):
    from google.protobuf import text_format

    from tfproto import RunMetadata, StepStats

    msg = text_format.Parse((DATA / "seed000_stepstats.pbtxt").read_text(), StepStats())
    path = tmp_path / "steps.pb"
    path.write_bytes(msg.SerializeToString() * 20)  # concatenated StepStats = one StepStats
    one = tracecore.open(path, threads=1)
    two = tracecore.open(path, threads=2)
    assert two.stats["threads"] == 2
    assert len(one) == 20 * 2087
    _assert_identical(one, two)

    run = text_format.Parse((DATA / "seed001_runmetadata.pbtxt").read_text(), RunMetadata())
    path = tmp_path / "run.pb"
    path.write_bytes(run.SerializeToString() * 150)  # step_stats fields merge
    one = tracecore.open(path, threads=1)
    two = tracecore.open(path, threads=2)
    assert one.kind == "RunMetadata" and len(one) == 150 * 292
    assert two.stats["threads"] == 2
    _assert_identical(one, two)


def test_room_calibrated_on_a_changing_dump_matches_the_oracle(tmp_path):
    """Columns get room for a first stretch of a large input (about 2.2 MB of binary), then for
    all of it at the rates measured there, re-checked each time the parse has gone four times
    further (CapacityPlanner::Reserve / Calibrate). This dump changes on the way: its first 3.3 MB
    hold events without outputs or memory records (the first measure finds no tensors at all),
    the rest whole steps, so the later checks must give the tensor and allocation tables their
    room with rows already in them (fuzz/column_room_check.cc checks the room itself). Every
    column equals the oracle's; two threads (whose first chunk measures too) give the same
    tables."""
    from google.protobuf import text_format

    import oracle
    from tfproto import StepStats

    full = text_format.Parse((DATA / "seed000_stepstats.pbtxt").read_text(), StepStats())
    bare = StepStats()
    bare.CopyFrom(full)
    for dev in bare.dev_stats:
        for node in dev.node_stats:
            del node.output[:]
            del node.memory[:]
    bare_bytes, full_bytes = bare.SerializeToString(), full.SerializeToString()
    data = bare_bytes * (3_300_000 // len(bare_bytes) + 1) + full_bytes * 30
    assert len(data) > 8 * 220 * 10_000  # large enough to be calibrated (kCalibrateMinStretches)
    path = tmp_path / "changing.pb"
    path.write_bytes(data)
    msg = StepStats.FromString(data)
    one = tracecore.open(path, threads=1)
    assert one.stats["threads"] == 1
    oracle.assert_trace_matches(one, msg, expected_format="binary")
    two = tracecore.open(path, threads=2)
    assert two.stats["threads"] == 2
    _assert_identical(one, two)


def test_misleading_split_point_falls_back(tmp_path, stepstats_text):
    # A "dev_stats {" line at column 0 inside an unknown field, placed where the splitter looks
    # first: the chunk parse notices it is not a record boundary and the result is still exact.
    seed = (DATA / "seed000_stepstats.pbtxt").read_bytes() * 3
    pre = b"extra {\n#" + b"x" * 4000 + b"\n"
    fake = b'dev_stats {\n  device: "fake"\n}\n'
    post = b"#" + b"y" * 10 + b"\n}\n"
    path = tmp_path / "tricky.pbtxt"
    path.write_bytes(seed + pre + fake + post + seed)
    one = tracecore.open(path, threads=1)
    two = tracecore.open(path, threads=2)
    assert one.stats["unknown_fields"] == 1
    assert "fake" not in two.devices["device"].to_pylist()
    assert len(two) == 6 * 2087
    _assert_identical(one, two)


def test_parallel_error_is_the_sequential_error(tmp_path, stepstats_text):
    data = bytearray(stepstats_text.read_bytes())
    # break an integer deep in the second half
    at = data.index(b"all_start_micros: 1", len(data) * 3 // 4) + len("all_start_micros: ")
    data[at] = ord("x")
    path = tmp_path / "bad.pbtxt"
    path.write_bytes(bytes(data))
    errors = []
    for threads in (1, 2):
        with pytest.raises(tracecore.TraceFormatError) as e:
            tracecore.open(path, threads=threads)
        errors.append((e.value.line, e.value.column, str(e.value)))
    assert errors[0] == errors[1]
    assert "expected an integer" in errors[0][2]


@pytest.mark.big
@pytest.mark.skipif(
    os.environ.get("TRACECORE_BIG_TESTS") != "1", reason="set TRACECORE_BIG_TESTS=1"
)
def test_open_dump_over_1gb(tmp_path):
    sys.path.insert(0, str(Path(__file__).parents[1] / "bench"))
    from make_trace import make_text

    path = tmp_path / "big.pbtxt"
    info = make_text(1100, path)
    assert path.stat().st_size > 1_000_000_000
    t = tracecore.open(path)
    assert len(t) == info.events
    assert t.devices.num_rows == info.steps * 7
    peaks = t.replay(source="records").peaks
    assert peaks.num_rows == 4


_PEAK_CHILD = """
import sys
import tracecore

def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) * 1024
    raise KeyError(key)

tracecore.open(tracecore.sample_path()).events  # pyarrow's one-time loading, not the parse's
base = status("VmRSS:")
t = tracecore.open(sys.argv[1], threads=int(sys.argv[2]))
print(len(t), status("VmHWM:") - base)
"""


@pytest.mark.big
@pytest.mark.skipif(
    os.environ.get("TRACECORE_BIG_TESTS") != "1", reason="set TRACECORE_BIG_TESTS=1"
)
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_binary_open_does_not_map_the_whole_file_first(tmp_path):
    """The walks that find a binary dump's kind and split it read one header every few KB; the
    kernel maps each faulting page's neighbours too, so unless the walks unmap what they have
    passed, the whole file is resident before the parse starts. Peak RSS over the baseline, as a
    share of a 377 MB binary dump: 0.98x before the walks released, 0.73x (1 thread) and 0.77x
    (2 threads) after, which is the columns."""
    sys.path.insert(0, str(Path(__file__).parents[1] / "bench"))
    from make_trace import make_binary

    path = tmp_path / "big.pb"
    info = make_binary(1000, path)
    size = path.stat().st_size
    assert size > 300_000_000
    for threads in (1, 2):
        out = subprocess.run([sys.executable, "-c", _PEAK_CHILD, str(path), str(threads)],
                             capture_output=True, text=True, check=True)
        events, grew = map(int, out.stdout.split())
        assert events == info.events
        assert grew < 0.88 * size, (
            f"threads={threads}: peak RSS grew by {grew / size:.2f}x the file"
        )
