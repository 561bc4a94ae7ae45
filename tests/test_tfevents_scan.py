"""The event file scan (``_core.tfevents_scan``) against the oracle of tests/tfevents_oracle.py.

Every real event file in tests/data/tfevents/ (TensorFlow 2.21: a TF1-style FileWriter with
tagged RunMetadata, a TF2 trace_export, a Keras TensorBoard callback log directory) gives the
RunMetadata and content that protobuf reads; damaged files (a CRC broken anywhere, a truncated
tail at every length, absurd lengths, random bytes) give TraceFormatError with the record's
offset, or the warnings and skips of non-strict mode. Hypothesis builds Events (merged from
several partial messages, so oneof switches and merges happen) and mutates their bytes; protobuf
and tracecore must accept and reject the same payloads and read the same values.
"""

from __future__ import annotations

import math
import os
import random
import struct
from pathlib import Path

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, given, settings

import tfevents_oracle as oracle
import tfevents_proto as tep
from tracecore import _core

DATA = Path(__file__).resolve().parent / "data" / "tfevents"
EVENT_FILES = sorted(p for p in DATA.rglob("*") if oracle.is_event_file(p))
TF1 = DATA / "tf1_small_convnet" / "events.out.tfevents.1795619468.vm"
TF2 = DATA / "tf2_trace_graph_conv1d" / "events.out.tfevents.1795619470.vm.28600.0.v2"
KERAS = DATA / "keras_tensorboard_cb_mlp"
KERAS_TRAIN = KERAS / "train" / "events.out.tfevents.1795619473.vm.28628.0.v2"
KERAS_VALIDATION = KERAS / "validation" / "events.out.tfevents.1795619473.vm.28628.1.v2"

HYPOTHESIS = settings(
    max_examples=int(os.environ.get("TRACECORE_HYPOTHESIS_EXAMPLES", "100")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _same_float(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def assert_scan_matches(result: dict, data: bytes, expected: oracle.FileScan) -> None:
    """The binding's scan of `data` equals the oracle's, RunMetadata bytes included."""
    assert result["bytes"] == len(data)
    assert result["records"] == expected.records
    assert result["truncated_tail"] == expected.truncated_tail
    assert result["skipped_records"] == 0
    got = result["run_metadata"]
    assert len(got) == len(expected.run_metadata)
    for g, e in zip(got, expected.run_metadata, strict=True):
        assert g["tag"] == e.tag
        assert g["step"] == e.step
        assert _same_float(g["wall_time"], e.wall_time)
        assert g["source"] == e.source
        assert g["record_offset"] == e.record_offset
        assert data[g["offset"]:g["offset"] + g["length"]] == e.payload
    content = dict(result["content"])
    want = dict(expected.content)
    for key in ("min_wall_time", "max_wall_time"):
        assert _same_float(content.pop(key), want.pop(key)), key
    assert content == want


# ---- the real files ------------------------------------------------------------------------

@pytest.mark.parametrize("path", EVENT_FILES, ids=lambda p: p.relative_to(DATA).as_posix())
def test_real_event_files_match_protobuf(path: Path) -> None:
    data = path.read_bytes()
    expected = oracle.scan_bytes(data)
    assert_scan_matches(_core.tfevents_scan(str(path)), data, expected)
    assert_scan_matches(_core.tfevents_scan(path), data, expected)  # os.PathLike
    assert_scan_matches(_core.tfevents_scan(data), data, expected)  # bytes, read in place
    assert_scan_matches(_core.tfevents_scan(bytearray(data)), data, expected)
    assert _core.tfevents_scan(data)["warnings"] == []


def test_real_event_files_hold_what_tensorflow_wrote() -> None:
    tf1 = _core.tfevents_scan(TF1)
    assert [(f["tag"], f["step"], f["source"]) for f in tf1["run_metadata"]] == [
        ("step_0", 0, "tagged_run_metadata"), ("step_2", 2, "tagged_run_metadata")]
    assert [f["length"] for f in tf1["run_metadata"]] == [8817, 8792]
    c = tf1["content"]
    assert (c["graph_def"], c["meta_graph_def"], c["simple_values"], c["plugins"]) == (1, 1, 3, {})

    tf2 = _core.tfevents_scan(TF2)
    assert [(f["tag"], f["step"], f["length"], f["source"]) for f in tf2["run_metadata"]] == [
        ("train_step_trace", 0, 30531, "graph_run_metadata_graph")]
    assert tf2["content"]["plugins"] == {"graph_run_metadata_graph": 1, "scalars": 3}

    train = _core.tfevents_scan(KERAS_TRAIN)  # Keras writes an empty RunMetadata
    assert [(f["tag"], f["step"], f["length"]) for f in train["run_metadata"]] == [
        ("batch_3", 3, 0)]
    assert train["content"]["plugins"] == {
        "graph_keras_model": 1, "graph_run_metadata_graph": 1, "scalars": 3}

    validation = _core.tfevents_scan(KERAS_VALIDATION)  # scalars only
    assert validation["run_metadata"] == []
    assert validation["content"]["plugins"] == {"scalars": 4}
    assert validation["content"]["file_version_string"] == "brain.Event:2"


def test_run_metadata_parse_in_place_with_the_binary_importer() -> None:
    """Each non-empty RunMetadata opens with the binary importer; its event count is protobuf's
    node_stats count (TF1: full traces; TF2 trace_export: graphs only, no step stats)."""
    seen = 0
    for path in EVENT_FILES:
        data = path.read_bytes()
        for f in _core.tfevents_scan(data)["run_metadata"]:
            if f["length"] == 0:
                continue
            payload = data[f["offset"]:f["offset"] + f["length"]]
            trace = _core.open_bytes(payload, format="binary")
            assert trace.kind == "RunMetadata"
            assert trace.num_events == oracle.node_stats_count(payload)
            seen += 1
    assert seen == 3
    assert [oracle.node_stats_count(f.payload) for f in oracle.scan_bytes(TF1.read_bytes())
            .run_metadata] == [38, 38]


def test_oracle_log_directory_runs() -> None:
    runs = [(found.run, found.tag, found.step) for _, scan in oracle.scan_logdir(DATA)
            for found in scan.run_metadata]
    assert runs == [
        ("keras_tensorboard_cb_mlp/train", "batch_3", 3),
        ("tf1_small_convnet", "step_0", 0),
        ("tf1_small_convnet", "step_2", 2),
        ("tf2_trace_graph_conv1d", "train_step_trace", 0),
    ]


# ---- damaged files -------------------------------------------------------------------------

def _record_spans(data: bytes) -> list[tuple[int, int]]:
    records, tail = oracle.read_records(data)
    assert tail is None
    return [(offset, 16 + len(payload)) for offset, payload in records]


def _expect_error(source, offset: int, text: str, strict: bool = True) -> None:
    with pytest.raises(_core.TraceFormatError) as info:
        _core.tfevents_scan(source, strict=strict)
    assert info.value.offset == offset, str(info.value)
    assert text in str(info.value)


def test_every_record_with_a_broken_crc() -> None:
    data = TF1.read_bytes()
    spans = _record_spans(data)
    full = _core.tfevents_scan(data)
    for index, (start, size) in enumerate(spans):
        for at, text in ((start + 3, "record length CRC mismatch"),
                         (start + 9, "record length CRC mismatch"),
                         (start + 12 + (size - 16) // 2, "record data CRC mismatch"),
                         (start + size - 1, "record data CRC mismatch")):
            if text == "record data CRC mismatch" and size == 16:
                continue
            broken = bytearray(data)
            broken[at] ^= 0x10
            _expect_error(bytes(broken), start, text)
            lenient = _core.tfevents_scan(bytes(broken), strict=False)
            assert lenient["records"] == len(spans) - 1
            assert lenient["skipped_records"] == 1
            assert lenient["skipped_bytes"] == size
            assert [w[0] for w in lenient["warnings"] if "skipped" in w[1]] == [start]
            kept = [f for f in full["run_metadata"] if f["record_offset"] != start]
            assert lenient["run_metadata"] == kept, index


def test_truncated_tail_at_every_length() -> None:
    data = TF1.read_bytes()
    spans = _record_spans(data)
    last_start = spans[-1][0]
    full = _core.tfevents_scan(data)
    for cut in range(last_start + 1, len(data)):
        result = _core.tfevents_scan(data[:cut])
        assert result["truncated_tail"] == last_start
        assert result["records"] == len(spans) - 1
        assert result["run_metadata"] == full["run_metadata"]
        assert [w[0] for w in result["warnings"]] == [last_start]
        assert "truncated record" in result["warnings"][0][1]
    # Inside the first record nothing is complete: an error, not an empty scan.
    for cut in (1, 11, 12, 30, spans[0][1] - 1):
        _expect_error(data[:cut], 0, "no complete record")


def test_absurd_length() -> None:
    data = KERAS_VALIDATION.read_bytes()
    first = _record_spans(data)[0][1]
    length = struct.pack("<Q", 2**40)
    header = length + struct.pack("<I", oracle.masked_crc32c(length))
    broken = data[:first] + header + data[first:]
    _expect_error(broken, first, "absurd record length 1099511627776")
    lenient = _core.tfevents_scan(broken, strict=False)
    assert lenient["records"] == _core.tfevents_scan(data)["records"]
    assert lenient["skipped_bytes"] == 12
    # A plausible length with a valid CRC past the end: a record being written.
    tail = data + struct.pack("<Q", 100) + struct.pack(
        "<I", oracle.masked_crc32c(struct.pack("<Q", 100))) + b"partial"
    assert _core.tfevents_scan(tail)["truncated_tail"] == len(data)


def test_non_event_inputs() -> None:
    _expect_error(b"", 0, "empty input")
    _expect_error(b"hello", 0, "no complete record")
    _expect_error(b"node_stats { node_name: 'x' }", 0, "record length CRC mismatch")
    _expect_error(b"node_stats { node_name: 'x' }", 0, "no intact record", strict=False)
    with pytest.raises(OSError):
        _core.tfevents_scan(DATA / "no such file")


@HYPOTHESIS
@given(st.binary(max_size=200), st.booleans())
def test_random_bytes_fail_with_an_offset(data: bytes, strict: bool) -> None:
    try:
        result = _core.tfevents_scan(data, strict=strict)
    except _core.TraceFormatError as e:
        assert e.offset is not None and 0 <= e.offset <= len(data)
        return
    assert strict  # random bytes never pass both CRCs: only non-strict could, and no record is left
    assert_scan_matches(result, data, oracle.scan_bytes(data))


@HYPOTHESIS
@given(st.data())
def test_a_flipped_byte_anywhere_names_its_record(data: st.DataObject) -> None:
    raw = TF2.read_bytes()
    spans = _record_spans(raw)
    at = data.draw(st.integers(0, len(raw) - 1))
    bit = data.draw(st.integers(0, 7))
    broken = bytearray(raw)
    broken[at] ^= 1 << bit
    start = next(s for s, size in spans if s <= at < s + size)
    try:
        result = _core.tfevents_scan(bytes(broken))
    except _core.TraceFormatError as e:
        assert e.offset == start
    else:
        # A flip in the length's high bytes can make the last record look cut short.
        assert start == spans[-1][0] and result["truncated_tail"] == start


# ---- Events built by protobuf, merged and mutated -------------------------------------------

_texts = st.one_of(st.text(max_size=8), st.sampled_from(["", "step_0", "\u65e5\u672c", "a\x00b"]))
_plugins = st.sampled_from(["", "scalars", "graph_run_metadata_graph", "graph_run_metadata",
                            "graph_keras_model", "images"])


@st.composite
def _values(draw: st.DrawFn):
    v = tep.Summary.Value()
    if draw(st.booleans()):
        v.tag = draw(_texts)
    plugin = draw(_plugins)
    if plugin or draw(st.booleans()):
        v.metadata.plugin_data.plugin_name = plugin
    if draw(st.booleans()):
        v.metadata.plugin_data.content = draw(st.binary(max_size=4))
    kind = draw(st.sampled_from(["tensor", "tensor", "simple_value", "image", "histo", "audio",
                                 "obsolete_old_style_histogram", None]))
    if kind == "tensor":
        v.tensor.dtype = 7
        v.tensor.string_val.extend(draw(st.lists(st.binary(max_size=12), max_size=3)))
        v.tensor.SetInParent()
    elif kind == "simple_value":
        v.simple_value = draw(st.floats(width=32, allow_nan=False))
    elif kind == "obsolete_old_style_histogram":
        v.obsolete_old_style_histogram = draw(st.binary(max_size=4))
    elif kind is not None:
        getattr(v, kind).SetInParent()
    return v


@st.composite
def _events(draw: st.DrawFn):
    e = tep.Event()
    if draw(st.booleans()):
        e.wall_time = draw(st.floats(allow_nan=False))
    if draw(st.booleans()):
        e.step = draw(st.integers(-(2**63), 2**63 - 1))
    what = draw(st.sampled_from(["file_version", "graph_def", "summary", "summary", "log_message",
                                 "session_log", "tagged_run_metadata", "tagged_run_metadata",
                                 "meta_graph_def", "source_metadata", None]))
    if what == "file_version":
        e.file_version = draw(st.sampled_from(["brain.Event:2", "brain.Event:1", ""]))
    elif what in ("graph_def", "meta_graph_def"):
        setattr(e, what, draw(st.binary(max_size=8)))
    elif what == "summary":
        e.summary.value.extend(draw(st.lists(_values(), max_size=3)))
        e.summary.SetInParent()
    elif what == "tagged_run_metadata":
        if draw(st.booleans()):
            e.tagged_run_metadata.tag = draw(_texts)
        if draw(st.booleans()):
            e.tagged_run_metadata.run_metadata = draw(st.binary(max_size=16))
        e.tagged_run_metadata.SetInParent()
    elif what is not None:
        getattr(e, what).SetInParent()
    return e


# An Event's bytes: one or more serialized Events concatenated (protobuf reads that as their
# merge: oneof members replace one another, message fields merge, scalars keep the last).
_event_bytes = st.lists(_events(), min_size=1, max_size=3).map(
    lambda events: b"".join(e.SerializeToString() for e in events))


@HYPOTHESIS
@given(st.lists(_event_bytes, min_size=1, max_size=6))
def test_built_events_match_protobuf(payloads: list[bytes]) -> None:
    data = b"".join(oracle.frame(p) for p in payloads)
    assert_scan_matches(_core.tfevents_scan(data), data, oracle.scan_bytes(data))


def _mutate(payload: bytes, rng: random.Random) -> bytes:
    b = bytearray(payload)
    for _ in range(rng.randint(1, 3)):
        op = rng.randrange(4)
        if op == 0 and b:
            b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
        elif op == 1 and b:
            b[rng.randrange(len(b))] = rng.choice([0x00, 0x07, 0x0F, 0x80, 0xFF, 0xFE, 0x0C])
        elif op == 2:
            b.insert(rng.randrange(len(b) + 1), rng.randrange(256))
        elif b:
            del b[rng.randrange(len(b))]
    return bytes(b)


@HYPOTHESIS
@given(st.lists(_event_bytes, min_size=1, max_size=4), st.randoms(use_true_random=False))
def test_mutated_events_accepted_and_rejected_like_protobuf(
        payloads: list[bytes], rng: random.Random) -> None:
    """Payloads with damaged bytes, framed with valid CRCs: the Event decoder rejects exactly
    what protobuf rejects (at an offset inside the record), and reads the rest the same."""
    bad = rng.randrange(len(payloads))
    payloads[bad] = _mutate(payloads[bad], rng)
    data = b"".join(oracle.frame(p) for p in payloads)
    try:
        expected = oracle.scan_bytes(data)
    except oracle.RecordError as e:
        with pytest.raises(_core.TraceFormatError) as info:
            _core.tfevents_scan(data)
        start = e.offset
        assert start + 12 <= info.value.offset <= start + 12 + len(payloads[bad]), str(info.value)
        assert f"the record at byte {start} is not a tensorflow.Event" in str(info.value)
        if len(payloads) == 1:  # nothing intact is left
            with pytest.raises(_core.TraceFormatError, match="no intact record") as info:
                _core.tfevents_scan(data, strict=False)
            assert start + 12 <= info.value.offset <= start + 12 + len(payloads[bad])
            return
        lenient = _core.tfevents_scan(data, strict=False)
        assert lenient["skipped_records"] == 1
        assert lenient["records"] == len(payloads) - 1
        return
    assert_scan_matches(_core.tfevents_scan(data), data, expected)


def test_crc32c_binding_matches_the_oracle(tmp_path: Path) -> None:
    """_core.crc32c (the content checksum of the cache and Parquet export): the standard check
    value, the pure-Python oracle at every length and alignment around the 8-byte and
    three-stream blocks, chaining through `seed`, and any buffer read in place."""
    import mmap

    import pyarrow as pa

    assert _core.crc32c(b"123456789") == 0xE3069283
    assert _core.crc32c(b"") == 0
    rng = random.Random(26)
    data = rng.randbytes(5000)
    for start in range(9):
        for n in (0, 1, 7, 8, 9, 63, 64, 65, 255, 256, 257, 1000, 3000, 4991 - start):
            piece = data[start : start + n]
            assert _core.crc32c(piece) == oracle.crc32c(piece), (start, n)
            cut = n // 3
            assert _core.crc32c(piece[cut:], _core.crc32c(piece[:cut])) == oracle.crc32c(piece)
    view = memoryview(data)[3:4000]
    expected = oracle.crc32c(bytes(view))
    assert _core.crc32c(view) == _core.crc32c(bytearray(view)) == expected
    assert _core.crc32c(pa.py_buffer(bytes(view))) == expected
    path = tmp_path / "f"
    path.write_bytes(data)
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        assert _core.crc32c(m) == oracle.crc32c(data)  # a read-only mapping, in place
    with pytest.raises(ValueError, match="contiguous"):
        _core.crc32c(memoryview(data)[::2])
    with pytest.raises(TypeError):
        _core.crc32c("text")  # type: ignore[arg-type]
