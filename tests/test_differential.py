"""Differential tests: tracecore's tables against an oracle computed from protobuf's own parse.

Every input is parsed twice: by tracecore and by the `protobuf` package (with the hand-built
TensorFlow descriptors of tests/tfproto.py). tests/oracle.py turns the protobuf message into
the rows docs/tables.md and docs/api.md promise and compares every column of every table.
"""

from __future__ import annotations

import gzip
import itertools
import os
import re
from pathlib import Path

import pyarrow as pa
import pytest
from google.protobuf import text_format
from google.protobuf.message import DecodeError
from google.protobuf.unknown_fields import UnknownFieldSet
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import oracle
import strategies as S
import tfproto as tp
import tracecore

DATA = Path(__file__).parent / "data"
SEEDS = {
    "seed000": (DATA / "seed000_stepstats.pbtxt", tp.StepStats),
    "seed001": (DATA / "seed001_runmetadata.pbtxt", tp.RunMetadata),
}
# Headline numbers of the seeds (events, tensors, allocation records, devices).
SEED_COUNTS = {
    "seed000": {"events": 2087, "tensors": 987, "alloc_records": 2128, "devices": 7},
    "seed001": {"events": 292, "tensors": 285, "alloc_records": 328, "devices": 2},
}

# When a hypothesis test fails, the hypothesis pytest plugin imports a module that triggers
# this DeprecationWarning from mypy_extensions; with filterwarnings=error it would turn the
# failure report into an INTERNALERROR.
pytestmark = pytest.mark.filterwarnings(
    "ignore:mypy_extensions.TypedDict is deprecated:DeprecationWarning")

# TRACECORE_HYPOTHESIS_EXAMPLES=N runs a longer campaign (default 100 examples per test).
HYPOTHESIS = settings(
    max_examples=int(os.environ.get("TRACECORE_HYPOTHESIS_EXAMPLES", "100")),
    deadline=None,
    database=None,  # do not write a .hypothesis directory into the repository
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.filter_too_much, HealthCheck.large_base_example],
)


# ------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------
def parse_text(cls, text: str):
    msg = cls()
    text_format.Parse(text, msg)
    return msg


def messages_equal(a, b) -> bool:
    # NaN-safe (AggregatedCost.cost may be NaN) and independent of map iteration order.
    return (type(a) is type(b)
            and text_format.MessageToString(a) == text_format.MessageToString(b))


def count_unknown(msg) -> int:
    n = len(UnknownFieldSet(msg))
    for fd, value in msg.ListFields():
        if fd.type == fd.TYPE_MESSAGE and not fd.message_type.GetOptions().map_entry:
            for sub in (value if fd.is_repeated else [value]):
                n += count_unknown(sub)
    return n


_counter = itertools.count()


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("differential")


def write(workdir: Path, data: bytes | str, suffix: str) -> Path:
    path = workdir / f"input{next(_counter)}{suffix}"
    if isinstance(data, str):
        data = data.encode("utf-8")
    path.write_bytes(data)
    return path


def only_blank_or_comments(text: str) -> bool:
    return all(not line.split("#", 1)[0].strip(" \t\r\n\f\v") for line in text.split("\n"))


# t.stats count keys -> table they count (the contract's "counts" are flat keys of t.stats)
STATS_COUNT_KEYS = {"devices": "devices", "events": "events", "tensors": "tensors",
                    "allocations": "allocations", "alloc_records": "alloc_records",
                    "cost_graph_nodes": "cost_graph", "cost_graph": "cost_graph",
                    "graph_nodes": "graph_nodes", "thread_names": "thread_names",
                    "persistent_tensors": "persistent_tensors"}


def check_stats(trace, path: Path, expected: dict) -> None:
    stats = trace.stats
    assert isinstance(stats, dict), stats
    for k in ("bytes", "parse_seconds", "unknown_fields"):
        assert k in stats, f"t.stats lacks {k!r}: {stats!r}"
    assert stats["bytes"] == path.stat().st_size, (stats["bytes"], path.stat().st_size)
    counts = stats.get("counts", stats)
    assert isinstance(counts, dict), counts
    seen = 0
    for key_, table in STATS_COUNT_KEYS.items():
        if key_ in counts:
            seen += 1
            assert counts[key_] == len(expected[table]), \
                f"t.stats[{key_!r}] = {counts[key_]}, expected {len(expected[table])}: {stats!r}"
    assert seen >= 3, f"t.stats has no table counts: {stats!r}"


def expect_open(path: Path, msg, fmt: str, open_format: str, context: str = "",
                check_stat: bool = True):
    """Open `path` with tracecore and compare with the oracle for `msg` (or expect
    TraceFormatError when a derived nanosecond value overflows int64)."""
    try:
        expected = oracle.expected_tables(msg)
    except oracle.OracleOutOfRange:
        with pytest.raises(tracecore.TraceFormatError, match="out of range"):
            tracecore.open(path, format=open_format)
        return None
    t = tracecore.open(path, format=open_format)
    oracle.assert_trace_matches(t, msg, expected_format=fmt, context=context)
    if check_stat:
        check_stats(t, path, expected)
    return t


def expect_open_text(workdir: Path, text: str, msg, context: str = "", *,
                     open_formats=("text", "auto")):
    path = write(workdir, text, ".pbtxt")
    if only_blank_or_comments(text):
        for f in open_formats:
            with pytest.raises(tracecore.TraceFormatError):
                tracecore.open(path, format=f)
        return
    for f in open_formats:
        expect_open(path, msg, "text", f, context=f"{context} (format={f!r})\ntext: {text!r}")


def _parse_binary(cls, data: bytes):
    msg = cls()
    try:
        msg.ParseFromString(data)
    except DecodeError:
        return None
    return msg


def binary_candidates(data: bytes, intended):
    """The interpretations (message objects) a binary dump may legitimately be given.

    A binary dump has no marker; a StepStats and a RunMetadata can have the very same bytes
    (e.g. b'\\n\\x00'). Of the readings protobuf accepts that have a known top-level field, the
    ones with the fewest unknown fields are accepted (tracecore breaks a tie with its guess of
    the kind; values out of range do not disqualify a reading, they make it an error). A reading
    without any known field is no reading: when no other is left, [intended] comes back, and the
    dump must be rejected like an empty file."""
    other_cls = tp.RunMetadata if isinstance(intended, tp.StepStats) else tp.StepStats
    other = _parse_binary(other_cls, data)
    readings = [m for m in (intended, other) if m is not None and m.ListFields()]
    if not readings:
        return [intended]
    fewest = min(count_unknown(m) for m in readings)
    return [m for m in readings if count_unknown(m) == fewest]


_TEXT_WHITESPACE = b" \t\r\n\f\v"
EMPTY_WITH_UNKNOWN = re.compile(r": 0 events and [1-9][0-9]* unknown fields")


def empty_with_unknown_fields(msg) -> bool:
    """The zero-events rule: a reading with no event (and no graph) that skipped unknown
    fields read some other kind of message, and tracecore refuses it (TraceFormatError), in
    every format."""
    try:
        rows = oracle.expected_tables(msg)
    except oracle.OracleOutOfRange:
        return False
    empty = not rows["events"] and not rows["graph_nodes"] and not rows["cost_graph"]
    return empty and count_unknown(msg) > 0


def detected_as_text(data: bytes) -> bool:
    """Whether format="auto" takes `data` for text (DetectFormat, cpp/src/open/format_registry.cc):
    after whitespace, a letter, '_', '#' or '[', and no control byte but whitespace in the first
    64 KB; blank input counts as text."""
    i = 0
    while i < len(data) and data[i] in _TEXT_WHITESPACE:
        i += 1
    if i == len(data):
        return True
    first = data[i]
    if not (65 <= first <= 90 or 97 <= first <= 122 or first in b"_#["):
        return False
    return all(c >= 0x20 or c in _TEXT_WHITESPACE for c in data[i:65536])


def expect_open_binary(workdir: Path, data: bytes, intended, context: str = "", *,
                       open_formats=("binary", "auto")):
    path = write(workdir, data, ".pb")
    cands = binary_candidates(data, intended) if data else []
    if not any(c.ListFields() for c in cands):
        # Empty input, or input whose every field is unknown (it decodes to an empty message):
        # rejected like an empty file.
        for f in open_formats:
            with pytest.raises(tracecore.TraceFormatError):
                tracecore.open(path, format=f)
        return
    ctx = f"{context}\nbinary: {data.hex()}"
    for f in open_formats:
        if f == "auto" and detected_as_text(data) and min(count_unknown(c) for c in cands) > 0:
            # Taken for text, and it does not read as text (or it would not be a binary dump):
            # a binary reading is taken instead only when it has no unknown fields.
            with pytest.raises(tracecore.TraceFormatError):
                tracecore.open(path, format=f)
            continue
        overflow = []
        for c in cands:
            try:
                oracle.expected_tables(c)
            except oracle.OracleOutOfRange:
                overflow.append(c)
        try:
            t = tracecore.open(path, format=f)
        except tracecore.TraceFormatError as e:
            if EMPTY_WITH_UNKNOWN.search(str(e)):
                # A reading with no event and unknown fields is never a success (issue 21).
                assert any(empty_with_unknown_fields(c) for c in cands), \
                    f"tracecore.open(format={f!r}) raised {e!r}; protobuf reads events{ctx}"
                continue
            assert overflow and "out of range" in str(e), \
                f"tracecore.open(format={f!r}) raised {e!r}; protobuf reads it as " \
                f"{[oracle.message_kind(c) for c in cands]}{ctx}"
            continue
        by_kind = {oracle.message_kind(c): c for c in cands}
        assert t.kind in by_kind, \
            f"t.kind is {t.kind!r}, expected one of {sorted(by_kind)} (format={f!r}){ctx}"
        msg = by_kind[t.kind]
        assert not empty_with_unknown_fields(msg), \
            f"a reading with 0 events and unknown fields opened (format={f!r}){ctx}"
        assert msg not in overflow, \
            f"expected TraceFormatError (derived ns value out of int64 range){ctx}"
        oracle.assert_trace_matches(t, msg, expected_format="binary",
                                    context=f"{ctx} (format={f!r}, kind {t.kind})")
        check_stats(t, path, oracle.expected_tables(msg))


def normalized(table: pa.Table) -> pa.Table:
    """Dictionary columns decoded to plain strings (dictionaries may legitimately differ)."""
    cols = []
    for col in table.columns:
        if pa.types.is_dictionary(col.type):
            col = col.cast(col.type.value_type)
        cols.append(col)
    return pa.table(cols, names=table.column_names)


def assert_same_tables(a, b, what: str) -> None:
    for name in oracle.TABLES:
        ta, tb = normalized(getattr(a, name)), normalized(getattr(b, name))
        assert ta.schema == tb.schema, f"{what}: table {name!r} schemas differ"
        if not ta.equals(tb):
            d = oracle.diff_rows(name, ta.to_pylist(), tb.to_pylist())
            raise AssertionError(f"{what}: table {name!r} differs\n{d}")
        # the original (dictionary) types are identical too
        assert getattr(a, name).schema == getattr(b, name).schema, name
    assert (a.kind, len(a)) == (b.kind, len(b))


# ------------------------------------------------------------------------------------------
# seeds
# ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module", params=sorted(SEEDS))
def seed(request):
    path, cls = SEEDS[request.param]
    msg = parse_text(cls, path.read_text(encoding="utf-8"))
    return request.param, path, msg


def test_seed_oracle_headline_counts(seed):
    name, _, msg = seed
    exp = oracle.expected_tables(msg)
    want = SEED_COUNTS[name]
    assert {k: len(exp[k]) for k in want} == want


@pytest.mark.parametrize("open_format", ["auto", "text"])
def test_seed_text_matches_oracle(seed, open_format):
    name, path, msg = seed
    t = expect_open(path, msg, "text", open_format, context=f"{name} text")
    assert t is not None
    assert t.kind == msg.DESCRIPTOR.name
    assert t.format == "text"


@pytest.mark.parametrize("open_format", ["auto", "binary"])
def test_seed_binary_matches_oracle(seed, open_format, tmp_path):
    name, _, msg = seed
    path = tmp_path / f"{name}.pb"
    path.write_bytes(msg.SerializeToString())
    t = expect_open(path, msg, "binary", open_format, context=f"{name} binary")
    assert t is not None
    assert t.kind == msg.DESCRIPTOR.name
    assert t.format == "binary"


def test_seed_binary_and_text_identical(seed, tmp_path):
    name, path, msg = seed
    bpath = tmp_path / f"{name}.pb"
    bpath.write_bytes(msg.SerializeToString())
    t_text = tracecore.open(path)
    t_bin = tracecore.open(bpath)
    assert (t_text.format, t_bin.format) == ("text", "binary")
    assert_same_tables(t_text, t_bin, f"{name}: text vs binary")
    for table in oracle.TABLES:
        assert getattr(t_text, table).to_pylist() == getattr(t_bin, table).to_pylist(), table


def test_seed_headline_counts(seed, tmp_path):
    name, path, msg = seed
    want = SEED_COUNTS[name]
    bpath = tmp_path / f"{name}.pb"
    bpath.write_bytes(msg.SerializeToString())
    step_stats = msg if name == "seed000" else msg.step_stats
    per_device = [len(d.node_stats) for d in step_stats.dev_stats]
    for t in (tracecore.open(path), tracecore.open(bpath)):
        assert len(t.events) == want["events"] == len(t)
        assert len(t.tensors) == want["tensors"]
        assert len(t.alloc_records) == want["alloc_records"]
        assert len(t.devices) == want["devices"] == len(per_device)
        assert t.devices.column("n_events").to_pylist() == per_device
        counted = [0] * len(per_device)
        for i in t.events.column("device_index").to_pylist():
            counted[i] += 1
        assert counted == per_device
        assert t.kind == msg.DESCRIPTOR.name


def test_seed_gzip_identical(seed, tmp_path):
    name, path, msg = seed
    gz_text = tmp_path / f"{name}.pbtxt.gz"
    gz_text.write_bytes(gzip.compress(path.read_bytes()))
    gz_bin = tmp_path / f"{name}.pb.gz"
    gz_bin.write_bytes(gzip.compress(msg.SerializeToString()))
    plain = tracecore.open(path)
    for p, fmt in ((gz_text, "text"), (gz_bin, "binary")):
        t = tracecore.open(p)
        assert t.format == fmt
        oracle.assert_trace_matches(t, msg, expected_format=fmt, context=str(p.name))
        if fmt == "text":
            assert_same_tables(plain, t, f"{name}: plain vs gzip")


@pytest.mark.parametrize("threads", [1, 2, 3, 8])
def test_seed_thread_counts_identical(seed, threads, tmp_path):
    name, path, msg = seed
    bpath = tmp_path / f"{name}.pb"
    bpath.write_bytes(msg.SerializeToString())
    for p, fmt in ((path, "text"), (bpath, "binary")):
        t = tracecore.open(p, threads=threads)
        oracle.assert_trace_matches(t, msg, expected_format=fmt,
                                    context=f"{name} {fmt} threads={threads}")


# ------------------------------------------------------------------------------------------
# random messages (hypothesis)
# ------------------------------------------------------------------------------------------
@HYPOTHESIS
@given(msg=S.trace_messages())
def test_random_text_pretty(workdir, msg):
    text = text_format.MessageToString(msg)
    assert messages_equal(parse_text(type(msg), text), msg)
    expect_open_text(workdir, text, msg, "MessageToString")


@HYPOTHESIS
@given(msg=S.trace_messages())
def test_random_text_one_line(workdir, msg):
    text = text_format.MessageToString(msg, as_one_line=True)
    assert "\n" not in text
    assert messages_equal(parse_text(type(msg), text), msg)
    expect_open_text(workdir, text, msg, "MessageToString(as_one_line=True)")


@HYPOTHESIS
@given(msg=S.trace_messages())
def test_random_text_utf8(workdir, msg):
    # raw UTF-8 instead of octal escapes for non-ASCII characters
    text = text_format.MessageToString(msg, as_utf8=True)
    assert messages_equal(parse_text(type(msg), text), msg)
    expect_open_text(workdir, text, msg, "MessageToString(as_utf8=True)")


@HYPOTHESIS
@given(msg=S.trace_messages())
def test_random_binary(workdir, msg):
    data = msg.SerializeToString()
    expect_open_binary(workdir, data, msg, "SerializeToString")


@HYPOTHESIS
@given(data=st.data())
def test_random_text_variants(workdir, data):
    """Random valid layouts of the text format (see strategies.text_renderings)."""
    msg = data.draw(S.trace_messages(), label="msg")
    text = data.draw(S.text_renderings(msg), label="text")
    reparsed = parse_text(type(msg), text)
    assert messages_equal(reparsed, msg)  # validates the renderer
    expect_open_text(workdir, text, reparsed, "text_renderings")


@HYPOTHESIS
@given(data=st.data())
def test_random_wire_variants(workdir, data):
    """Random valid binary encodings (see strategies.wire_encodings)."""
    msg = data.draw(S.trace_messages(), label="msg")
    wire = data.draw(S.wire_encodings(msg), label="wire")
    reparsed = type(msg)()
    reparsed.ParseFromString(wire)
    clean = type(msg)()
    clean.CopyFrom(reparsed)
    clean.DiscardUnknownFields()
    assert messages_equal(clean, msg)  # validates the renderer
    expect_open_binary(workdir, wire, reparsed, "wire_encodings")


@HYPOTHESIS
@given(data=st.data())
def test_random_binary_truncated(workdir, data):
    """A prefix of a binary dump: protobuf's reading of it (a shorter valid message when the cut
    falls on a field boundary, an error otherwise) is what tracecore must do."""
    msg = data.draw(S.trace_messages(), label="msg")
    full = msg.SerializeToString()
    cut = data.draw(st.integers(0, max(len(full) - 1, 0)), label="cut")
    data_ = full[:cut]
    as_intended = _parse_binary(type(msg), data_)
    if as_intended is None:
        # cut inside a field: the top-level framing is broken for either message type
        assert _parse_binary(tp.StepStats, data_) is None
        assert _parse_binary(tp.RunMetadata, data_) is None
        path = write(workdir, data_, ".pb")
        for f in ("binary", "auto"):
            with pytest.raises(tracecore.TraceFormatError):
                tracecore.open(path, format=f)
        return
    expect_open_binary(workdir, data_, as_intended, f"truncated at {cut} of {len(full)}")


@HYPOTHESIS
@given(data=st.data())
def test_random_binary_mutated(workdir, data):
    """A binary dump with a few corrupted bytes must either be read as protobuf reads it or be
    rejected with TraceFormatError when protobuf also rejects it (never another exception)."""
    msg = data.draw(S.trace_messages(), label="msg")
    buf = bytearray(msg.SerializeToString())
    for _ in range(data.draw(st.integers(1, 3), label="n_mutations")):
        op = data.draw(st.sampled_from(["set", "insert", "delete"]), label="op")
        pos = data.draw(st.integers(0, len(buf)), label="pos")
        byte = data.draw(st.sampled_from([0x00, 0x01, 0x02, 0x08, 0x0A, 0x12, 0x7F, 0x80, 0xFF])
                         | st.integers(0, 255), label="byte")
        if op == "insert":
            buf.insert(pos, byte)
        elif buf and pos < len(buf):
            if op == "set":
                buf[pos] = byte
            else:
                del buf[pos]
    mutated = bytes(buf)
    as_intended = _parse_binary(type(msg), mutated)
    if as_intended is not None:
        expect_open_binary(workdir, mutated, as_intended, "mutated")
        return
    # Not a valid message of the original type. If it is a valid message of the other type,
    # reading it as that is fine; otherwise tracecore may reject it (TraceFormatError) or, being
    # more lenient (e.g. about UTF-8 in fields it skips), read it. Any other failure is a bug.
    path = write(workdir, mutated, ".pb")
    try:
        t = tracecore.open(path, format="binary")
    except tracecore.TraceFormatError:
        return
    other = _parse_binary(tp.RunMetadata if isinstance(msg, tp.StepStats) else tp.StepStats,
                          mutated)
    if other is not None and t.kind == oracle.message_kind(other):
        try:
            oracle.expected_tables(other)
        except oracle.OracleOutOfRange:
            raise AssertionError(
                f"expected TraceFormatError (out of range): {mutated.hex()}"
            ) from None
        oracle.assert_trace_matches(t, other, expected_format="binary",
                                    context=f"mutated: {mutated.hex()}")


# ------------------------------------------------------------------------------------------
# hand-written text grammar cases, each checked against protobuf's parse of the same text
# ------------------------------------------------------------------------------------------
GRAMMAR_CASES = {
    "angle_brackets_no_colon_comments": (
        "StepStats",
        """\
# a leading comment
dev_stats < device: "/job:localhost/replica:0/task:0/device:GPU:0"  # trailing comment
  node_stats <
    node_name: 'conv1/Conv2D'
    all_start_micros: 100 op_start_rel_micros: 1 op_end_rel_micros: 5 all_end_rel_micros: 7
    timeline_label: "conv1/Conv2D = Conv2D(input, conv1/weights)"
    output < slot: 0 tensor_description < dtype: DT_FLOAT shape { dim { size: 8 } dim < size: -1 > } > >
  >
>
""",
    ),
    "colon_before_submessages": (
        "StepStats",
        """\
dev_stats: {
  device: "/device:CPU:0"
  node_stats: {
    node_name: "a"
    memory: { allocator_name: "cpu" total_bytes: 10 allocation_records: { alloc_micros: 3 alloc_bytes: -4 } }
    memory_stats: { temp_memory_size: 1 persistent_memory_size: 2 }
  }
  thread_names: { key: 7 value: "worker" }
}
""",
    ),
    "list_syntax_repeated_scalars": (
        "StepStats",
        """\
dev_stats {
  node_stats {
    node_name: "x:MEMCPYHtoD"
    memory_stats {
      persistent_tensor_alloc_ids: [1, 2, -3]
      persistent_tensor_alloc_ids: 4
      persistent_tensor_alloc_ids: []
      persistent_tensor_alloc_ids: [ 5 ,6 ]
      device_persistent_tensor_alloc_ids: [9, 10]
    }
  }
}
""",
    ),
    "string_quotes_concat_escapes": (
        "StepStats",
        r"""
dev_stats {
  device: '/device:' "GPU:0" '/stream:' "all"
  node_stats {
    node_name: 'it\'s "quoted" \\ back\\slash'
    timeline_label: "oct\101\102 hex\x43\x44 nl\n tab\t cr\r bell\a bs\b ff\f vt\v \"dq\" \'sq\' \\"
  }
  node_stats {
    node_name: "caf\303\251" ' caf\xc3\xa9' " split-\303" "\251"
    timeline_label: "[GPU_0_bfc 0.5MB 0.5MB] " 'n = ' "Op(a, " '^b)'
  }
  node_stats { node_name: "" '' "" timeline_label: "raw UTF-8: café 日本 😀" }
}
""",
    ),
    "unicode_escapes": (
        "StepStats",
        r"""
dev_stats { node_stats { node_name: "\u00e9\u65e5\U0001F600" timeline_label: "x = \u00c9t(a)" } }
""",
    ),
    "enum_as_number": (
        "StepStats",
        """\
dev_stats { node_stats {
  output { tensor_description { dtype: 1 } }
  output { tensor_description { dtype: 101 } }
  output { tensor_description { dtype: 3000 } }
  output { tensor_description { dtype: DT_HALF_REF } }
  output { tensor_description { dtype: 0 } }
  output { tensor_description { dtype: 0x13 } }
  output { tensor_description { dtype: -7 } }
  output { tensor_description { dtype: DT_UINT4 } }
} }
""",
    ),
    "unusual_field_order": (
        "StepStats",
        """\
dev_stats {
  thread_names { value: "t1" key: 1 }
  node_stats {
    timeline_label: "b = Add(a)"
    output { tensor_description { allocation_description { allocator_name: "GPU_0_bfc" requested_bytes: 4 } shape { dim { name: "n" size: 2 } } dtype: DT_INT32 } slot: 3 }
    memory { allocation_records { alloc_bytes: 16 alloc_micros: 10 } allocator_bytes_in_use: 99 allocator_name: "GPU_0_bfc" }
    memory_stats { persistent_tensor_alloc_ids: 5 temp_memory_size: 3 }
    all_end_rel_micros: 9
    node_name: "b"
    all_start_micros: 1000
    thread_id: 4
  }
  device: "/job:w/replica:0/task:0/device:GPU:1"
}
dev_stats { device: "/device:GPU:1/memcpy" }
""",
    ),
    "everything_on_one_line_runmetadata": (
        "RunMetadata",
        (
            'step_stats { dev_stats { device: "/device:CPU:0" node_stats { node_name: "n" '
            "all_start_nanos: 1500 all_end_rel_nanos: 250 op_start_rel_nanos: 10 op_end_rel_nanos: 200 "
            'scheduled_nanos: 1400 all_start_micros: 1 timeline_label: "n = Foo()" } } } '
            'cost_graph { node { name: "n" device: "/device:CPU:0" id: 3 input_info { preceding_node: 1 '
            "preceding_port: 0 } input_info { preceding_node: 2 } output_info { size: 64 "
            "alias_input_port: -1 shape { dim { size: 4 } } dtype: DT_FLOAT } temporary_memory_size: 8 "
            "is_final: true control_input: [5, 6] compute_cost: 11 compute_time: 12 memory_time: 13 "
            "persistent_memory_size: 14 inaccurate: true host_temp_memory_size: 1 } cost { cost: 1.5 "
            'dimension: "flops" } } partition_graphs { node { name: "a" op: "Const" device: "/cpu" } '
            'node { name: "b" op: "Add" input: "a" input: "a:1" input: "^c" } } function_graphs { '
            'partition_graphs { node { name: "f" } } pre_optimization_graph { node { name: "pre" } } '
            'post_optimization_graph { node { name: "post" op: "Identity" input: ["pre"] } } } '
            'session_metadata { name: "sess" version: 7 }'
        ),
    ),
    "separators": (
        "StepStats",
        """\
dev_stats { device: "d", node_stats { node_name: "a"; all_start_micros: 5, thread_id: 2; };
  node_stats { node_name: "b", }, thread_names { key: 2, value: "w"; }; }
""",
    ),
    "map_duplicate_keys_last_wins": (
        "StepStats",
        """\
dev_stats {
  thread_names { key: 1 value: "first" }
  thread_names { value: "second" key: 1 }
  thread_names { }
  thread_names { key: 4294967295 value: "max" }
  thread_names: [ { key: 2 value: "l1" }, < key: 3 > ]
}
dev_stats { thread_names { key: 1 value: "other device" } }
""",
    ),
    "integer_bases_and_extremes": (
        "StepStats",
        """\
dev_stats { node_stats {
  all_start_micros: 0x10 op_end_rel_micros: 017 all_end_rel_micros: 0X1F thread_id: 0xFFFFFFFF
  scheduled_micros: -0x2
  memory { allocation_records { alloc_micros: 9223372036854775 alloc_bytes: -9223372036854775808 } }
  output { tensor_description {
    shape { dim { size: -9223372036854775808 } dim { size: 9223372036854775807 } }
    allocation_description { ptr: 18446744073709551615 allocation_id: 0x7fffffffffffffff
                             requested_bytes: -0x8000000000000000 }
  } }
  output { tensor_description { shape { dim { size: 3037000500 } dim { size: 3037000500 } } } }
  output { tensor_description { shape { unknown_rank: true dim { size: 2 } } } }
  output { tensor_description { shape { dim { size: 0 } dim { size: -1 } } } }
  output { tensor_description { shape { } } }
  output { }
} }
""",
    ),
    "num_elements_zero_dim_after_huge_dims": (
        "StepStats",
        """\
dev_stats { node_stats {
  output { tensor_description { shape { dim { size: 4611686018427387904 } dim { size: 4 } dim { size: 0 } } } }
  output { tensor_description { shape { dim { size: 0 } dim { size: 4611686018427387904 } dim { size: 4 } } } }
  output { tensor_description { shape { dim { size: 3037000499 } dim { size: 3037000499 } } } }
} }
""",
    ),
    "bool_spellings": (
        "StepStats",
        """\
dev_stats { node_stats {
  output { tensor_description { shape { unknown_rank: t } allocation_description { has_single_reference: True } } }
  output { tensor_description { shape { unknown_rank: 1 } allocation_description { has_single_reference: false } } }
  output { tensor_description { shape { unknown_rank: False } allocation_description { has_single_reference: 1 } } }
} }
""",
    ),
    "message_lists": (
        "StepStats",
        """\
dev_stats [ { device: "a" node_stats [ { node_name: "x" }, < node_name: "y" > ] },
            < device: "b" node_stats: [] > ]
dev_stats: [{ node_stats: [{ node_name: "z" }] }]
""",
    ),
    "float_forms_in_costs": (
        "RunMetadata",
        """\
cost_graph {
  cost { cost: inf dimension: "a" } cost { cost: -1.5e3f } cost { cost: nan } cost { cost: 2 }
  cost { cost: -Infinity } cost { cost: 1e-3 } cost { cost: .5 } cost { cost: 0.0 }
  node { name: "only" id: -1 control_input: -2 control_input: [2147483647, -2147483648] }
}
""",
    ),
    "comments_everywhere": (
        "StepStats",
        """\
#c0
dev_stats #c1
{ #c2 { < > } "not a string
  device #c3
  : #c4
  "has # inside" #c5
  node_stats#c6
  {node_name:"n"#c7
   all_start_micros:5#c8
   timeline_label: "x = Op(a) # not a comment"
  }#c9
}#c10""",
    ),
    "no_whitespace": (
        "StepStats",
        (
            'dev_stats{device:"x"node_stats{node_name:"a"all_start_micros:5 thread_id:3 '
            "output{slot:1 tensor_description{dtype:DT_INT32 shape{dim{size:2}dim{size:3}}}}}"
            "node_stats<node_name:'b:Op'>}"
        ),
    ),
    "crlf_and_tabs": (
        "StepStats",
        (
            'dev_stats {\r\n\tdevice: "/device:GPU:0/stream:7"\r\n\tnode_stats {\r\n'
            '\t\tnode_name: "k:Kernel"\r\n\t\tall_start_micros: 12\r\n\t}\r\n}\r\n'
        ),
    ),
    "empty_submessages": (
        "StepStats",
        """\
dev_stats { }
dev_stats { node_stats { memory_stats { } output { tensor_description < > } memory { } referenced_tensor { } } }
dev_stats { node_stats { } }
""",
    ),
    "nanos_and_scheduled": (
        "StepStats",
        """\
dev_stats { device: "/device:GPU:0/stream:all"
  node_stats { node_name: "a" all_start_micros: 1 all_end_rel_micros: 2 all_start_nanos: 1234
               all_end_rel_nanos: 1766 op_start_rel_nanos: 5 op_end_rel_nanos: 6 scheduled_nanos: 1000 }
  node_stats { node_name: "b" all_start_micros: 7 scheduled_micros: 3 scheduled_nanos: 0 }
  node_stats { node_name: "c" all_start_micros: -7 op_start_rel_micros: -1 }
}
""",
    ),
    "runmetadata_comment_first_cost_graph_first": (
        "RunMetadata",
        """\
# RunMetadata, but the first field is not step_stats
cost_graph { node { name: "c" output_info { size: 4 } output_info { size: -1 } } }
step_stats { dev_stats { device: "/device:CPU:0" node_stats { node_name: "s" } } }
partition_graphs { }
partition_graphs { node { name: "p" } }
function_graphs { post_optimization_graph { node { name: "q" input: "p" } } }
""",
    ),
    "deprecated_and_unused_fields": (
        "RunMetadata",
        """\
step_stats { dev_stats { node_stats {
  memory_stats { device_temp_memory_size: 1 device_persistent_memory_size: 2
                 device_persistent_tensor_alloc_ids: 3 temp_memory_size: 4 }
  referenced_tensor { requested_bytes: 1 allocator_name: "x" ptr: 5 }
  memory { allocator_name: "m" peak_bytes: 1 live_bytes: 2 }
} } }
session_metadata { name: "s" version: -1 }
cost_graph { cost { dimension: "d" } node { device_temp_memory_size: 1 device_persistent_memory_size: 2 } }
""",
    ),
    "op_derivation_labels": (
        "StepStats",
        """\
dev_stats {
  node_stats { node_name: "a" timeline_label: "a = MatMul(x, y)" }
  node_stats { node_name: "b" timeline_label: "[GPU_0_bfc 0.5MB 0.5MB] b = Conv2D(x)" }
  node_stats { node_name: "c" timeline_label: "c = _Recv" }
  node_stats { node_name: "d" timeline_label: "d = _Send " }
  node_stats { node_name: "e:MEMCPYDtoH" timeline_label: "MEMCPYDtoH 4 bytes" }
  node_stats { node_name: "f" timeline_label: "no equals here" }
  node_stats { node_name: "g:h:Kernel" }
  node_stats { node_name: "i" timeline_label: "[x]i = Op(a)" }
  node_stats { node_name: "j" timeline_label: "[p] q] j = Op(a)" }
  node_stats { node_name: "k" timeline_label: "k = (a)" }
  node_stats { node_name: "l" timeline_label: "l = Op (a) = B(c)" }
  node_stats { node_name: "m:" timeline_label: "" }
  node_stats { node_name: "n" timeline_label: "n =Op(a)" }
  node_stats { node_name: "o" timeline_label: "[a]] = Conv2D()" }
  node_stats { node_name: "p:Q" timeline_label: "[x]p = A(b] c)" }
}
""",
    ),
    "graphs_out_of_field_order": (
        "RunMetadata",
        """\
function_graphs {
  post_optimization_graph { node { name: "c1" op: "NoOp" } node { name: "c2" } }
  pre_optimization_graph { node { name: "b" } }
  partition_graphs { node { name: "p" input: "b" input: "^c1" } }
}
partition_graphs { node { name: "a" device: "/cpu:0" } }
function_graphs { partition_graphs { node { name: "q" } } }
partition_graphs { }
""",
    ),
}


@pytest.mark.parametrize("case", sorted(GRAMMAR_CASES))
def test_text_grammar(case, workdir):
    kind, text = GRAMMAR_CASES[case]
    cls = tp.StepStats if kind == "StepStats" else tp.RunMetadata
    msg = parse_text(cls, text)  # protobuf's reading of the text is the reference
    assert msg.ByteSize() > 0
    expect_open_text(workdir, text, msg, f"grammar case {case!r}")


def _node(name: str) -> bytes:  # GraphDef.node { name: <name> }, one-byte name
    return b"\x0a\x03\x0a\x01" + name.encode()


# Hand-made binary inputs (found by the random tests, or outside what protobuf ever writes),
# each checked against protobuf's parse of the same bytes.
BINARY_CASES = {
    # step_stats { <unknown 2: ""> } (which reads as a StepStats' first DeviceStepStats with an
    # empty node_stats, so StepStats is guessed), 70 more empty step_stats, then three
    # partition_graphs: past the first 64 top-level fields that the kind guess looks at. The
    # StepStats reading has 3 unknown fields, the RunMetadata reading 1: RunMetadata it is.
    "runmetadata_graphs_after_64_top_level_fields": (
        b"\x0a\x02\x12\x00" + b"\x0a\x00" * 70 + b"\x1a\x05\x0a\x03\x0a\x01a" * 3
    ),
    # The same start, then a step_stats whose DeviceStepStats' device is 128 bytes of "a" behind
    # a length that makes the StepStats reading a device name of bytes 0x0a 0x80 ... (not UTF-8),
    # then a partition graph. Guessed StepStats from the first 64 fields, that reading fails on
    # a bad value; the whole walk guesses RunMetadata (found by review), which reads.
    "runmetadata_graph_after_64_fields_behind_a_bad_stepstats_string": (
        b"\x0a\x02\x12\x00"
        + b"\x0a\x00" * 70
        + b"\x0a\x86\x01\x0a\x83\x01\x0a\x80\x01"
        + b"a" * 128
        + b"\x1a\x05\x0a\x03\x0a\x01a"
    ),
    # function_graphs { post_optimization_graph {} post_optimization_graph { node { name: "a" } } }:
    # a singular message field seen twice is one GraphDef (protobuf merges), graph_index 0.
    "singular_graph_twice_is_one_graph": bytes.fromhex("22091a001a050a030a0161"),
    # step_stats { dev_stats { device: "/cpu" <unknown 4: 1> } } cost_graph { node { name: "n" } }:
    # a RunMetadata although its first DeviceStepStats holds an unknown varint field.
    "runmetadata_with_unknown_field_in_device": bytes.fromhex(
        "0a0a0a080a042f637075200112050a030a016e"
    ),
    # step_stats { dev_stats { <unknown 16: 0> } }: read as a StepStats its device name would be
    # the bytes 80 01 00 (not UTF-8).
    "runmetadata_device_of_unknown_field_only": bytes.fromhex("0a050a03800100"),
    # step_stats { dev_stats { thread_names { key: 1 } } } written with unknown varint fields
    # around it (found by test_random_wire_variants). Read as a StepStats, a device name would
    # be bytes with an 0x81 (not UTF-8), on which protobuf's StepStats parse fails: the kind
    # guessed must be RunMetadata, or the UTF-8 error of the wrong reading is reported.
    "runmetadata_whose_stepstats_reading_has_a_bad_string": bytes.fromhex(
        "0a0208000a0b0a091a030881000800100008001000"
    ),
    # Fields out of protobuf's order: function_graphs { post, pre, partition } before the top-level
    # partition_graphs. graph_index follows protobuf's order: top-level partition graphs, then
    # per function_graphs its partition graphs, pre-, post-optimization graph.
    "graphs_out_of_field_order": (
        b"\x22\x15"
        + b"\x1a\x05"
        + _node("c")
        + b"\x12\x05"
        + _node("b")
        + b"\x0a\x05"
        + _node("p")
        + b"\x1a\x05"
        + _node("a")
    ),
}


# Hand-made binary StepStats inputs, as above.
BINARY_STEPSTATS_CASES = {
    # dev_stats { device: "#\"\"\"\"\"\"\"\"" } (found by test_random_binary with 1000
    # examples): every byte is whitespace or text ("\n\v\n\t#..."), so format detection says
    # text, and as text it is one comment, an empty input. As a binary dump it is a StepStats:
    # format "auto" reads it so (tracecore rejected it).
    "binary_dump_that_looks_like_a_text_comment": bytes.fromhex("0a0b0a09232222222222222222"),
    # dev_stats { device: "/job:localhost/..." thread_names { key: 2^31 value: " " } }
    # dev_stats { thread_names { <unknown 5: 0> value: "" } } (found by
    # test_random_binary_mutated with 1000 examples): protobuf (upb) keeps a map entry that
    # holds an unknown field as one unknown field of the DeviceStepStats, not as an entry.
    "thread_names_entry_with_an_unknown_field_is_not_an_entry": bytes.fromhex(
        "0a390a2c2f6a6f623a6c6f63616c686f73742f7265706c6963613a302f7461736b3a302f6465766963653a47"
        "50553a301a090880808080081201200a061a0428001200"),
    # dev_stats { device: "x: 1" node_stats { node_name: "a" all_start_micros: 1
    # op_end_rel_micros: 10^18 } device: "/job" } (found by test_random_wire_variants): the
    # device name "x: 1" also reads as a DeviceStepStats, so RunMetadata is guessed, and that
    # reading breaks on "/job". The StepStats reading's time out of range is the error to report.
    "stepstats_out_of_range_behind_a_wrong_guess": bytes.fromhex(
        "0a1d0a04783a2031120f0a0161100120808090bbbad6adf00d0a042f6a6f62"),
    # Found by test_random_binary_mutated. The device name "x: 1" reads as a DeviceStepStats
    # again, so RunMetadata is guessed, and that reading is sound, with 3 unknown fields; the
    # StepStats reading has none, and a time out of range (scheduled_micros = 2^63 - 1): it
    # fits better, so its error is the one to report (tracecore used to keep the guess).
    "stepstats_out_of_range_fits_better_than_a_sound_guess": bytes.fromhex(
        "0a80010a04783a2031127820ffffffffffffffffff0128ffffffffffffffffff01322218ffffffffffffffff"
        "ff0120ffffffffffffffffff013200320610ffffffff07320032250a094750555f305f62666310ffffffffff"
        "ffffffff013200320b10ffffffffffffffffff013a0b0880808080f8ffffffff0148ffffffffffffffff7f"),
    # Found by test_random_binary_mutated: every field is unknown to StepStats (a fixed32 field
    # 2, a group, a length-delimited field 2), but field 2 is RunMetadata's cost_graph, so the
    # RunMetadata reading, with more unknown fields, is the only one with a known field.
    "stepstats_reading_empty_runmetadata_reading_not": bytes.fromhex(
        "150a04686f7374120d28ffffffffffffffffff014801"),
}


@pytest.mark.parametrize("case", sorted(BINARY_CASES) + sorted(BINARY_STEPSTATS_CASES))
def test_binary_cases(case, workdir):
    cls, data = ((tp.RunMetadata, BINARY_CASES[case]) if case in BINARY_CASES
                 else (tp.StepStats, BINARY_STEPSTATS_CASES[case]))
    msg = cls.FromString(data)
    assert msg.ByteSize() > 0
    expect_open_binary(workdir, data, msg, f"binary case {case!r}")


def test_map_entry_with_unknown_fields_is_one_unknown_field(workdir):
    # thread_names entries: key 1 "a" with an unknown varint field 5 (twice) in the middle,
    # then a plain entry key 2 "b"; and one (empty) event, as a reading with 0 events and
    # unknown fields is an error (issue 21).
    entry_unknown = bytes.fromhex("0801" "2800" "2801" "120161")
    entry_plain = bytes.fromhex("0802120162")
    no_event = (b"\x0a\x02/x" + b"\x1a" + bytes([len(entry_unknown)]) + entry_unknown
                + b"\x1a" + bytes([len(entry_plain)]) + entry_plain)
    device = no_event + b"\x12\x00"
    data = b"\x0a" + bytes([len(device)]) + device
    msg = tp.StepStats.FromString(data)
    assert dict(msg.dev_stats[0].thread_names) == {2: "b"} and count_unknown(msg) == 1
    t = tracecore.open(write(workdir, data, ".pb"))
    assert t.thread_names.to_pylist() == [{"device_index": 0, "thread_id": 2, "name": "b"}]
    assert t.stats["unknown_fields"] == 1 and len(t) == 1
    with pytest.raises(tracecore.TraceFormatError, match="0 events and 1 unknown fields"):
        tracecore.open(write(workdir, b"\x0a" + bytes([len(no_event)]) + no_event, ".pb"))


def test_graph_index_follows_protobuf_order(workdir):
    t = tracecore.open(write(workdir, BINARY_CASES["graphs_out_of_field_order"], ".pb"))
    assert t.graph_nodes.column("name").to_pylist() == ["a", "p", "b", "c"]
    assert t.graph_nodes.column("graph_index").to_pylist() == [0, 1, 2, 3]
    t = tracecore.open(write(workdir, BINARY_CASES["singular_graph_twice_is_one_graph"], ".pb"))
    assert t.graph_nodes.column("graph_index").to_pylist() == [0]


# ------------------------------------------------------------------------------------------
# large inputs: the parallel parsers (tracecore splits inputs of >= 8 MB into chunks)
# ------------------------------------------------------------------------------------------
def _grammar_dev_stats():
    """Every DeviceStepStats block of the StepStats grammar cases (edge values, maps, ...)."""
    blocks = []
    for kind, text in GRAMMAR_CASES.values():
        if kind == "StepStats":
            blocks.extend(parse_text(tp.StepStats, text).dev_stats)
        else:
            blocks.extend(parse_text(tp.RunMetadata, text).step_stats.dev_stats)
    return blocks


def _big_step_stats(seed_msgs, min_bytes: int, size_of):
    """A StepStats of the seeds' device blocks repeated (interleaved with the grammar cases'
    blocks) until size_of(message) is at least min_bytes."""
    seed000 = seed_msgs["seed000"]
    seed001 = seed_msgs["seed001"]
    extra = _grammar_dev_stats()

    # A repeated field's text and wire forms are the concatenation of its elements' forms:
    # the message's size is the sum of its blocks' sizes, each measured once (measuring the
    # whole message after every round made the fixture quadratic).
    def block_size(ds) -> int:
        one = tp.StepStats()
        one.dev_stats.add().CopyFrom(ds)
        return size_of(one)

    seeds = list(seed000.dev_stats) + list(seed001.step_stats.dev_stats)
    seed_sizes = [block_size(ds) for ds in seeds]
    extra_sizes = [block_size(ds) for ds in extra]
    big = tp.StepStats()
    total = 0
    i = 0
    while total < min_bytes:
        for ds, size in zip(seeds, seed_sizes, strict=True):
            big.dev_stats.add().CopyFrom(ds)
            big.dev_stats.add().CopyFrom(extra[i % len(extra)])
            total += size + extra_sizes[i % len(extra)]
            i += 1
    assert size_of(big) == total
    return big


@pytest.fixture(scope="module")
def big_inputs(tmp_path_factory):
    seed_msgs = {name: parse_text(cls, path.read_text(encoding="utf-8"))
                 for name, (path, cls) in SEEDS.items()}
    rm_extra = parse_text(tp.RunMetadata, GRAMMAR_CASES["everything_on_one_line_runmetadata"][1])
    msgs, files = {}, {}
    d = tmp_path_factory.mktemp("big")
    for fmt, size_of in (("text", lambda m: len(text_format.MessageToString(m))),
                         ("bin", lambda m: m.ByteSize())):
        ss = _big_step_stats(seed_msgs, 17 << 20, size_of)
        rm = tp.RunMetadata()
        rm.CopyFrom(rm_extra)
        rm.step_stats.CopyFrom(ss)
        msgs["ss_" + fmt], msgs["rm_" + fmt] = ss, rm
        if fmt == "bin":
            outputs = {"ss_bin": ss.SerializeToString(), "rm_bin": rm.SerializeToString()}
        else:
            rm_text = text_format.MessageToString(rm)
            # the same RunMetadata with step_stats closed by '>' (split-boundary bracket check)
            head, sep, tail = rm_text.partition("step_stats {\n")
            assert sep and not head
            body, sep2, rest = tail.partition("\n}\ncost_graph {")
            assert sep2
            msgs["rm_angle"] = msgs["rm_late_steps"] = rm
            outputs = {"ss_text": text_format.MessageToString(ss), "rm_text": rm_text,
                       "rm_angle": "step_stats <\n" + body + "\n>\ncost_graph {" + rest,
                       # the other RunMetadata fields first, step_stats last
                       "rm_late_steps": "cost_graph {" + rest + "step_stats {\n" + body + "\n}\n"}
        for name, data in outputs.items():
            p = d / name
            p.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
            assert p.stat().st_size >= 16 << 20
            files[name] = p
    return files, msgs


@pytest.mark.parametrize("name", ["ss_text", "rm_text", "rm_angle", "rm_late_steps", "ss_bin",
                                  "rm_bin"])
def test_large_inputs_parallel(big_inputs, name):
    files, msgs = big_inputs
    msg = msgs[name]
    fmt = "binary" if name.endswith("bin") else "text"
    expected = oracle.expected_tables(msg)
    traces = {}
    for threads in (1, 4, 0):
        t = tracecore.open(files[name], threads=threads)
        assert t.format == fmt
        assert len(t) == len(expected["events"])
        if threads == 4 and "threads" in t.stats:
            # make sure the parallel parser (not its sequential fallback) is what was tested
            assert t.stats["threads"] > 1, t.stats
        traces[threads] = t
    assert_same_tables(traces[1], traces[4], f"{name}: threads=1 vs threads=4")
    assert_same_tables(traces[1], traces[0], f"{name}: threads=1 vs threads=0")
    oracle.assert_trace_matches(traces[4], msg, expected_format=fmt, context=f"{name} threads=4")


# ------------------------------------------------------------------------------------------
# inputs that must be rejected
# ------------------------------------------------------------------------------------------
TEXT_REJECTS = {
    "missing_colon_before_scalar": "dev_stats { node_stats { thread_id 5 } }",
    "uint32_negative": "dev_stats { node_stats { thread_id: -1 } }",
    "uint32_too_big": "dev_stats { node_stats { thread_id: 4294967296 } }",
    "uint32_too_big_hex": "dev_stats { node_stats { thread_id: 0x100000000 } }",
    "int32_too_big": "dev_stats { node_stats { output { slot: 2147483648 } } }",
    "int32_too_small": "dev_stats { node_stats { output { slot: -2147483649 } } }",
    "int64_too_big": "dev_stats { node_stats { all_start_micros: 9223372036854775808 } }",
    "int64_too_small": "dev_stats { node_stats { all_start_micros: -9223372036854775809 } }",
    "uint64_negative": "dev_stats { node_stats { output { tensor_description { "
    "allocation_description { ptr: -1 } } } } }",
    "uint64_too_big": "dev_stats { node_stats { output { tensor_description { "
    "allocation_description { ptr: 18446744073709551616 } } } } }",
    "thread_names_key_negative": 'dev_stats { thread_names { key: -1 value: "x" } }',
    "unterminated_string": 'dev_stats { node_stats { node_name: "a } }',
    "raw_newline_in_string": 'dev_stats { device: "a\nb" }',
    "unclosed_brace": "dev_stats { node_stats { }",
    "mismatched_brackets": "dev_stats { node_stats < } >",
    "extra_closer": "dev_stats { } }",
    "unknown_enum_name": "dev_stats { node_stats { output { tensor_description "
    "{ dtype: DT_NOPE } } } }",
    "bad_bool": "dev_stats { node_stats { output { tensor_description "
    "{ shape { unknown_rank: 2 } } } } }",
    "float_for_int": "dev_stats { node_stats { all_start_micros: 1.5 } }",
    "string_for_int": 'dev_stats { node_stats { all_start_micros: "5" } }',
    "int_for_string": "dev_stats { device: 5 }",
    "scalar_for_message": "dev_stats: 5",
}


@pytest.mark.parametrize("case", sorted(TEXT_REJECTS))
def test_text_rejects(case, tmp_path):
    """Inputs protobuf's text parser rejects for a reason the contract makes an error too."""
    text = TEXT_REJECTS[case]
    with pytest.raises(text_format.ParseError):
        parse_text(tp.StepStats, text)
    path = tmp_path / "bad.pbtxt"
    path.write_text(text, encoding="utf-8")
    for f in ("text", "auto"):
        with pytest.raises(tracecore.TraceFormatError) as info:
            tracecore.open(path, format=f)
        assert re.search(r"\d+:\d+|line \d+, column \d+", str(info.value)), \
            f"no line and column in the error message: {info.value}"


@pytest.mark.parametrize("content", [b"", b"   \n\t\n", b"# only a comment\n", b"\n# a\n  # b"])
def test_empty_inputs_rejected(tmp_path, content):
    path = tmp_path / "empty.pbtxt"
    path.write_bytes(content)
    with pytest.raises(tracecore.TraceFormatError):
        tracecore.open(path)


@pytest.mark.parametrize("content, error", [
    (b"\n" + b" " * 33, "empty input"),  # as wire bytes: a StepStats with 16 unknown fields
    (b"\n" + b"\t" * 10, "empty input"),  # 1 unknown field
    (b"#$\n\n#$#$#$#$#$", "empty input"),  # 6 unknown fields
    (b"x \n\n          ", "expected ':' or '{' after field 'x'"),  # broken text
])
def test_auto_keeps_the_text_error_when_the_wire_reading_has_unknown_fields(
    tmp_path, content, error
):
    # These bytes are taken for text and fail as text; they also decode as wire format, but
    # with unknown fields, which no dump TensorFlow writes has: the text error is reported.
    path = tmp_path / "blank.pbtxt"
    path.write_bytes(content)
    assert detected_as_text(content)
    for fmt in ("auto", "text"):
        with pytest.raises(tracecore.TraceFormatError, match=re.escape(error)) as info:
            tracecore.open(path, format=fmt)
        assert re.search(r"line \d+, column \d+", str(info.value)), str(info.value)


def test_auto_reads_text_looking_bytes_without_unknown_fields_as_binary(tmp_path):
    # dev_stats { device: "         " } serialised is "\n\v\n\t" and nine spaces: whitespace
    # only, taken for text (an empty input there), and a StepStats with no unknown field.
    msg = tp.StepStats()
    msg.dev_stats.add().device = " " * 9
    data = msg.SerializeToString()
    assert data == b"\n\x0b\n\t" + b" " * 9 and detected_as_text(data)
    path = tmp_path / "blank_looking.pb"
    path.write_bytes(data)
    t = tracecore.open(path)
    assert (t.format, t.kind, len(t), t.stats["unknown_fields"]) == ("binary", "StepStats", 0, 0)
    assert t.devices.column("device").to_pylist() == [" " * 9]
    with pytest.raises(tracecore.TraceFormatError, match="empty input"):
        tracecore.open(path, format="text")


def test_auto_reads_text_with_a_raw_control_byte_as_text(tmp_path):
    # A raw control byte in a string literal is valid text (protobuf's text parser takes it),
    # but detection takes the file for binary; that reading fails, the text one is sound.
    content = b'dev_stats { device: "a\x01b" }\n'
    assert not detected_as_text(content)
    path = tmp_path / "control.pbtxt"
    path.write_bytes(content)
    expected = parse_text(tp.StepStats, content.decode())
    assert expected.dev_stats[0].device == "a\x01b"
    t = tracecore.open(path)
    assert (t.format, t.kind, t.stats["unknown_fields"]) == ("text", "StepStats", 0)
    assert t.devices.column("device").to_pylist() == ["a\x01b"]
    with pytest.raises(tracecore.TraceFormatError, match="byte offset"):
        tracecore.open(path, format="binary")


def test_overflow_rejected(tmp_path):
    # 9223372036854776 us * 1000 overflows int64; 9223372036854775 us does not.
    ok = 'dev_stats { node_stats { all_start_micros: 9223372036854775 } }'
    bad = 'dev_stats { node_stats { all_start_micros: 9223372036854776 } }'
    p_ok, p_bad = tmp_path / "ok.pbtxt", tmp_path / "bad.pbtxt"
    p_ok.write_text(ok)
    p_bad.write_text(bad)
    t = tracecore.open(p_ok)
    assert t.events.column("start_ns").to_pylist() == [9223372036854775000]
    with pytest.raises(tracecore.TraceFormatError, match="out of range"):
        tracecore.open(p_bad)
    p_bin = tmp_path / "bad.pb"
    p_bin.write_bytes(parse_text(tp.StepStats, bad).SerializeToString())
    with pytest.raises(tracecore.TraceFormatError, match="out of range"):
        tracecore.open(p_bin)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(pytest.main([os.path.abspath(__file__), "-q"]))
