"""pytest-benchmark suite: tracecore.open() against protobuf's Python parser.

    pytest bench/                                   # benchmarks (needs pytest-benchmark)
    pytest bench/ --benchmark-disable               # each body once, as a plain test
    pytest bench/ --benchmark-json out.json         # machine-readable figures

Inputs (generated once by make_trace.py, cached under bench/data/, never committed): a ~20 MB
StepStats text dump, its binary form, and a ~2 MB prefix of the text (what the Python text
parser can do in reasonable time). Every benchmark asserts the event count, so a wrong parse
fails even with --benchmark-disable. `extra_info` carries MB/s and events/s (from the minimum
round time; MB = 1e6 bytes).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

BENCH_DIR = Path(__file__).resolve().parent
if str(BENCH_DIR) not in sys.path:
    sys.path.insert(0, str(BENCH_DIR))

import make_trace  # noqa: E402

SIZE_MB = 20
PREFIX_MB = 2
MB = 1_000_000


@pytest.fixture(scope="session")
def dumps() -> dict:
    """{"text": TraceInfo, "binary": TraceInfo}: the ~20 MB pair (cached in bench/data/)."""
    return make_trace.ensure_pair(SIZE_MB, make_trace.DEFAULT_OUT)


@pytest.fixture(scope="session")
def text_prefix(dumps) -> dict:
    """A ~2 MB prefix of the text dump, cut at a top-level dev_stats, as a file and as bytes."""
    data = make_trace.text_prefix(dumps["text"].path, PREFIX_MB * MB)
    name = f"{make_trace.default_name(SIZE_MB)}_prefix{PREFIX_MB}MB.pbtxt"
    path = Path(dumps["text"].path).with_name(name)
    if not path.exists() or path.read_bytes() != data:
        path.write_bytes(data)
    events = len(re.findall(rb"(?m)^  node_stats \{$", data))
    return {"path": str(path), "data": data, "bytes": len(data), "events": events}


@pytest.fixture(scope="session")
def tracecore():
    return pytest.importorskip("tracecore")


@pytest.fixture(scope="session")
def step_stats_cls():
    pytest.importorskip("google.protobuf")
    return make_trace.step_stats_class()


def _record(benchmark, nbytes: int, events: int) -> None:
    benchmark.extra_info["bytes"] = nbytes
    benchmark.extra_info["events"] = events
    stats = getattr(benchmark, "stats", None)
    if stats is None:  # --benchmark-disable: the body ran once, untimed
        return
    best = stats.stats.min
    benchmark.extra_info["MB_per_s"] = round(nbytes / best / MB, 2)
    benchmark.extra_info["events_per_s"] = round(events / best)


def _count_events(msg) -> int:
    return sum(len(dev.node_stats) for dev in msg.dev_stats)


# ---------------------------------------------------------------------------------- tracecore


@pytest.mark.parametrize("threads", [1, 0], ids=["threads1", "threads0"])
def test_tracecore_text(benchmark, tracecore, dumps, threads):
    info = dumps["text"]
    benchmark.group = "text ~20 MB"
    trace = benchmark.pedantic(
        tracecore.open, args=(info.path,), kwargs={"threads": threads}, rounds=5, warmup_rounds=1
    )
    assert len(trace) == info.events
    assert trace.events.num_rows == info.events
    assert trace.kind == "StepStats" and trace.format == "text"
    _record(benchmark, info.bytes, info.events)


@pytest.mark.parametrize("threads", [1, 0], ids=["threads1", "threads0"])
def test_tracecore_binary(benchmark, tracecore, dumps, threads):
    info = dumps["binary"]
    benchmark.group = "binary (same message)"
    trace = benchmark.pedantic(
        tracecore.open, args=(info.path,), kwargs={"threads": threads}, rounds=5, warmup_rounds=1
    )
    assert len(trace) == info.events
    assert trace.events.num_rows == info.events
    assert trace.kind == "StepStats" and trace.format == "binary"
    _record(benchmark, info.bytes, info.events)


def test_tracecore_text_prefix(benchmark, tracecore, text_prefix):
    benchmark.group = "text prefix ~2 MB"
    trace = benchmark.pedantic(
        tracecore.open,
        args=(text_prefix["path"],),
        kwargs={"threads": 1},
        rounds=10,
        warmup_rounds=1,
    )
    assert len(trace) == text_prefix["events"]
    _record(benchmark, text_prefix["bytes"], text_prefix["events"])


# ------------------------------------------------------------------------- protobuf (peer)


def test_protobuf_py_binary(benchmark, step_stats_cls, dumps):
    info = dumps["binary"]
    data = Path(info.path).read_bytes()
    benchmark.group = "binary (same message)"

    def parse():
        msg = step_stats_cls()
        msg.ParseFromString(data)
        return msg

    msg = benchmark.pedantic(parse, rounds=5, warmup_rounds=1)
    assert _count_events(msg) == info.events
    _record(benchmark, info.bytes, info.events)


def test_protobuf_py_text_prefix(benchmark, step_stats_cls, text_prefix):
    from google.protobuf import text_format

    text = text_prefix["data"].decode("utf-8")
    benchmark.group = "text prefix ~2 MB"

    def parse():
        msg = step_stats_cls()
        text_format.Parse(text, msg)
        return msg

    msg = benchmark.pedantic(parse, rounds=3, warmup_rounds=0)
    assert _count_events(msg) == text_prefix["events"]
    _record(benchmark, text_prefix["bytes"], text_prefix["events"])


# ------------------------------------------------------------------------ the inputs themselves


def test_generated_pair_is_one_message(step_stats_cls, dumps):
    """The text and binary dumps hold the same events (checked on the binary, which is cheap,
    and on the text's first steps, which the Python text parser can read quickly)."""
    from google.protobuf import text_format

    binary = step_stats_cls()
    binary.ParseFromString(Path(dumps["binary"].path).read_bytes())
    assert _count_events(binary) == dumps["text"].events == dumps["binary"].events
    blocks_per_step = len(binary.dev_stats) // dumps["text"].steps
    head = make_trace.text_prefix(dumps["text"].path, 1)  # exactly the first dev_stats block
    first = step_stats_cls()
    text_format.Parse(head.decode("utf-8"), first)
    assert len(first.dev_stats) == 1 and first.dev_stats[0] == binary.dev_stats[0]
    last_step_first = binary.dev_stats[-blocks_per_step].node_stats[0].all_start_micros
    first_step_first = binary.dev_stats[0].node_stats[0].all_start_micros
    assert last_step_first - first_step_first == (dumps["text"].steps - 1) * dumps["text"].period_us


def test_few_blocks_layout_holds_the_same_records(step_stats_cls, tmp_path):
    """--few-blocks: one block per seed device holding every step's records, text and binary
    the same message, the same records as the usual layout (a block per device and step)."""
    from google.protobuf import text_format

    few = {
        "text": make_trace.make_text(0, tmp_path / "few.pbtxt", steps=3, few_blocks=True),
        "binary": make_trace.make_binary(0, tmp_path / "few.pb", steps=3, few_blocks=True),
    }
    usual = make_trace.make_binary(0, tmp_path / "usual.pb", steps=3)
    text = text_format.Parse((tmp_path / "few.pbtxt").read_text(), step_stats_cls())
    binary = step_stats_cls.FromString((tmp_path / "few.pb").read_bytes())
    steps = step_stats_cls.FromString((tmp_path / "usual.pb").read_bytes())
    assert text == binary
    assert len(binary.dev_stats) == len(steps.dev_stats) // 3 == 7
    assert few["text"].events == few["binary"].events == usual.events == 3 * 2087
    for k, dev in enumerate(binary.dev_stats):
        records = [s.node_stats for s in steps.dev_stats[k::7]]
        assert dev.device == steps.dev_stats[k].device
        assert list(dev.node_stats) == [n for step in records for n in step]


def test_few_blocks_refuses_fields_after_the_records(tmp_path):
    """A block field after the node_stats (thread_names) cannot be moved: an error, not a copy
    of it per step."""
    seed = tmp_path / "seed.pbtxt"
    seed.write_bytes(
        b'dev_stats {\n  device: "d"\n  node_stats {\n    node_name: "a"\n'
        b"    all_start_micros: 5\n  }\n  thread_names {\n    key: 1\n    value: \"t\"\n  }\n}\n"
    )
    with pytest.raises(ValueError, match="a thread_names field after a block's node_stats"):
        make_trace.make_text(0, tmp_path / "out.pbtxt", seed_file=seed, steps=2, few_blocks=True)
    ok = tmp_path / "ok.pbtxt"
    names = b'  thread_names {\n    key: 1\n    value: "t"\n  }\n'
    assert names in seed.read_bytes()
    ok.write_bytes(seed.read_bytes().replace(names, b""))
    info = make_trace.make_text(0, tmp_path / "out.pbtxt", seed_file=ok, steps=2, few_blocks=True)
    assert info.events == 2
    text = (tmp_path / "out.pbtxt").read_bytes()
    assert text.count(b"dev_stats {") == 1 and text.count(b"node_stats {") == 2


# ------------------------------------------------------- throughput.py: rounds, memory written


@pytest.mark.parametrize("advice", [None, "MADV_HUGEPAGE"])
def test_written_counts_fresh_pages(advice):
    """throughput._written on memory of a known size: a fresh anonymous mapping written page by
    page is counted in full (4 KiB faults, or huge pages where advised and the kernel gives
    them), a mapped file only read is not once its own faults are taken off."""
    import mmap

    import throughput

    size = 32 << 20
    buf = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    if advice is not None and hasattr(mmap, advice):
        buf.madvise(getattr(mmap, advice))
    f0 = throughput._faults_now()
    for i in range(0, size, mmap.PAGESIZE):
        buf[i] = 1
    f1 = throughput._faults_now()
    buf.close()
    written = throughput._written(f0, f1, {})
    assert written["major_faults"] == 0
    # + a little for the interpreter's own pages; a huge page counted at its size, not at 4 KiB.
    # (written_bytes may also count other processes' huge pages: the counter is system-wide.)
    assert size <= written["written_low_bytes"] <= size + (1 << 20)
    assert written["written_bytes"] >= written["written_low_bytes"]

    path = make_trace.ensure_pair(SIZE_MB, make_trace.DEFAULT_OUT)["text"].path
    f0 = throughput._faults_now()
    with (
        open(path, "rb") as f,
        mmap.mmap(f.fileno(), 0, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ) as m,
    ):
        m.madvise(mmap.MADV_SEQUENTIAL)
        for i in range(0, len(m), mmap.PAGESIZE):
            m[i]
    f1 = throughput._faults_now()
    read_only = throughput._written(f0, f1, {}, throughput._file_faults(path))
    assert read_only["minor_faults"] > 0
    assert read_only["written_low_bytes"] <= 1 << 20


def test_throughput_paired_rounds(tmp_path, text_prefix, tracecore):
    """bench/throughput.py on the ~2 MB prefix, 2 rounds: every engine once per round in
    alternating order; medians, min/max and the paired ratios follow from the per-round
    figures in the JSON; tracecore's rows carry the tables' bytes and the memory written."""
    import json
    import mmap
    import statistics

    import throughput

    out = tmp_path / "tp.json"
    argv = [text_prefix["path"], "--repeat", "2", "--no-cpp-peer", "--json", str(out)]
    assert throughput.main(argv) == 0
    doc = json.loads(out.read_text())
    labels = ["tracecore thr=1", "tracecore thr=0", "protobuf-py"]
    assert [r["label"] for r in doc["results"]] == labels
    runs = doc["runs"]
    assert [(r["round"], r["label"]) for r in runs] == [(0, lb) for lb in labels] + [
        (1, lb) for lb in reversed(labels)
    ]
    assert all("error" not in r and r["events"] == text_prefix["events"] for r in runs)
    mbps = {lb: [r["mb_per_s"] for r in runs if r["label"] == lb] for lb in labels}
    for row in doc["results"]:
        xs = mbps[row["label"]]
        assert row["rounds"] == row["ok_rounds"] == 2
        assert row["all_mb_per_s"] == xs
        assert row["mb_per_s"] == pytest.approx(statistics.median(xs))
        assert (row["mb_per_s_min"], row["mb_per_s_max"]) == (min(xs), max(xs))
        assert row["events_per_s"] == pytest.approx(
            row["mb_per_s"] * MB / row["bytes_parsed"] * row["events"]
        )
    assert {(q["tracecore"], q["peer"]) for q in doc["ratios"]} == {
        ("tracecore thr=1", "protobuf-py"),
        ("tracecore thr=0", "protobuf-py"),
    }
    for q in doc["ratios"]:
        mine, peer = mbps[q["tracecore"]], mbps[q["peer"]]
        assert q["per_round"] == pytest.approx([a / b for a, b in zip(mine, peer, strict=True)])
        assert q["paired_median"] == pytest.approx(statistics.median(q["per_round"]))
        ratio = statistics.median(mine) / statistics.median(peer)
        assert q["ratio_of_medians"] == pytest.approx(ratio)

    from tracecore._arrow import buffer_bytes

    trace = tracecore.open(text_prefix["path"])
    tables = buffer_bytes(trace.table(name) for name in trace.table_names)
    page = mmap.PAGESIZE
    for r in runs:
        if not r["label"].startswith("tracecore"):
            continue
        assert r["tables_bytes"] == tables
        assert r["anon_faults"] == max(0, r["minor_faults"] - r["file_faults"])
        assert 0 <= r["thp_faults"] <= r["anon_faults"]
        assert r["written_bytes"] >= r["written_low_bytes"] >= r["anon_faults"] * page
        assert r["written_bytes"] % page == 0
        assert r["written_over_tables"] == pytest.approx(r["written_bytes"] / tables)
        assert r["written_with_tables_bytes"] > 0  # open() and then every table built
    peer_runs = [r for r in runs if r["label"] == "protobuf-py"]
    assert all(r["written_bytes"] > 0 and "written_over_tables" not in r for r in peer_runs)
