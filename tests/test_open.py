"""tracecore.open, the Trace object, its table schemas and lifetimes, and the command line."""

from __future__ import annotations

import gc
import gzip
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

import tracecore

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

DATA = HERE / "data"
SEED000 = DATA / "seed000_stepstats.pbtxt"
SEED001 = DATA / "seed001_runmetadata.pbtxt"

DICT = pa.dictionary(pa.int32(), pa.string())

# The exact schema of every table, from docs/tables.md.
_STAT_COLUMNS = [
    ("name", DICT), ("metadata_id", pa.int64()), ("value_kind", DICT),
    ("int64_value", pa.int64()), ("uint64_value", pa.uint64()), ("double_value", pa.float64()),
    ("str_value", DICT), ("bytes_value", pa.binary()),
]
SCHEMAS = {
    "devices": pa.schema([
        ("device_index", pa.int32()), ("device", DICT), ("line", DICT), ("line_id", pa.int64()),
        ("kind", pa.string()), ("n_events", pa.int64()),
    ]),
    "events": pa.schema([
        ("event_id", pa.int64()), ("device_index", pa.int32()), ("device", DICT),
        ("node_name", DICT), ("op", DICT), ("timeline_label", DICT),
        ("start_ns", pa.int64()), ("end_ns", pa.int64()), ("op_start_ns", pa.int64()),
        ("op_end_ns", pa.int64()), ("scheduled_ns", pa.int64()), ("thread_id", pa.uint32()),
        ("temp_memory_size", pa.int64()), ("persistent_memory_size", pa.int64()),
        ("cat", DICT), ("step_id", pa.int64()),
    ]),
    "tensors": pa.schema([
        ("event_id", pa.int64()), ("output_index", pa.int32()), ("slot", pa.int32()),
        ("dtype", DICT), ("shape", pa.list_(pa.int64())), ("unknown_rank", pa.bool_()),
        ("num_elements", pa.int64()), ("requested_bytes", pa.int64()),
        ("allocated_bytes", pa.int64()), ("allocator", DICT), ("allocation_id", pa.int64()),
        ("ptr", pa.uint64()), ("has_single_reference", pa.bool_()),
    ]),
    "allocations": pa.schema([
        ("event_id", pa.int64()), ("allocator", DICT), ("total_bytes", pa.int64()),
        ("peak_bytes", pa.int64()), ("live_bytes", pa.int64()),
        ("allocator_bytes_in_use", pa.int64()),
    ]),
    "alloc_records": pa.schema([
        ("event_id", pa.int64()), ("allocator", DICT), ("time_ns", pa.int64()),
        ("bytes", pa.int64()),
        # XSpace memory events' stats (all null for StepStats)
        ("is_allocation", pa.bool_()), ("heap_allocated", pa.int64()),
        ("stack_reserved", pa.int64()), ("free", pa.int64()), ("fragmentation", pa.float64()),
        ("peak_bytes_in_use", pa.int64()), ("requested_bytes", pa.int64()),
        ("allocation_bytes", pa.int64()), ("address", pa.uint64()), ("tf_op", DICT),
        ("shape", pa.list_(pa.int64())), ("dtype", DICT), ("region", DICT),
        ("step_id", pa.int64()), ("reserved", pa.int64()),
    ]),
    "cost_graph": pa.schema([
        ("name", DICT), ("device", DICT), ("id", pa.int32()), ("compute_cost", pa.int64()),
        ("compute_time", pa.int64()), ("memory_time", pa.int64()),
        ("temporary_memory_size", pa.int64()), ("persistent_memory_size", pa.int64()),
        ("is_final", pa.bool_()), ("inaccurate", pa.bool_()),
        ("input_nodes", pa.list_(pa.int32())), ("control_inputs", pa.list_(pa.int32())),
        ("output_sizes", pa.list_(pa.int64())),
    ]),
    "graph_nodes": pa.schema([
        ("graph_index", pa.int32()), ("name", DICT), ("op", DICT), ("device", DICT),
        ("inputs", pa.list_(pa.string())),
    ]),
    "thread_names": pa.schema([
        ("device_index", pa.int32()), ("thread_id", pa.uint32()), ("name", pa.string()),
    ]),
    "persistent_tensors": pa.schema([
        ("event_id", pa.int64()), ("allocation_id", pa.int64()),
    ]),
    # XSpace's own tables (empty for StepStats)
    "event_stats": pa.schema([
        ("event_id", pa.int64()), *_STAT_COLUMNS, ("inherited", pa.bool_()),
    ]),
    "plane_stats": pa.schema([
        ("plane_index", pa.int32()), ("plane", DICT), *_STAT_COLUMNS,
    ]),
    "aggregate_events": pa.schema([
        ("device_index", pa.int32()), ("device", DICT), ("node_name", DICT),
        ("timeline_label", DICT), ("op", DICT), ("num_occurrences", pa.int64()),
        ("duration_ps", pa.int64()),
    ]),
    # Chrome trace tables (empty for StepStats)
    "counters": pa.schema([
        ("device_index", pa.int32()), ("device", DICT), ("name", DICT), ("series", DICT),
        ("time_ns", pa.int64()), ("value", pa.float64()), ("int_value", pa.int64()),
    ]),
    "links": pa.schema([
        ("from_device_index", pa.int32()), ("to_device_index", pa.int32()), ("cat", DICT),
        ("flow_id", DICT), ("name", DICT), ("from_ns", pa.int64()), ("to_ns", pa.int64()),
        ("to_phase", DICT), ("from_event_id", pa.int64()), ("to_event_id", pa.int64()),
    ]),
}

SEED000_DEVICES = [
    ("/device:GPU:0/stream:15", "stream", 8),
    ("/device:GPU:0/stream:14", "stream", 8),
    ("/job:localhost/replica:0/task:0/device:CPU:0", "executor", 21),
    ("/device:GPU:0/memcpy", "memcpy", 26),
    ("/device:GPU:0/stream:all", "stream_all", 729),
    ("/job:localhost/replica:0/task:0/device:GPU:0", "executor", 556),
    ("/device:GPU:0/stream:13", "stream", 739),
]


@pytest.fixture(scope="module")
def seed000():
    return tracecore.open(SEED000)


@pytest.fixture(scope="module")
def seed001():
    return tracecore.open(SEED001)


@pytest.fixture(scope="module")
def binary_seeds(tmp_path_factory):
    """Binary (SerializeToString) forms of seeds 000 and 001, made with protobuf."""
    from google.protobuf import text_format

    from tfproto import RunMetadata, StepStats

    out = tmp_path_factory.mktemp("binary")
    paths = {}
    for name, src, cls in (("000", SEED000, StepStats), ("001", SEED001, RunMetadata)):
        msg = cls()
        text_format.Parse(src.read_text(), msg)
        path = out / f"seed{name}.pb"
        path.write_bytes(msg.SerializeToString())
        paths[name] = path
    return paths


# --------------------------------------------------------------------------------------------
# open(): seeds, formats, gzip
# --------------------------------------------------------------------------------------------
def test_open_seed000(seed000):
    assert seed000.kind == "StepStats"
    assert seed000.format == "text"
    assert len(seed000) == 2087
    assert seed000.events.num_rows == 2087
    assert seed000.source == str(SEED000)


def test_open_seed001(seed001):
    assert seed001.kind == "RunMetadata"
    assert seed001.format == "text"
    assert len(seed001) == 292
    assert seed001.devices.num_rows == 2


def test_open_accepts_str_and_pathlike():
    a = tracecore.open(str(SEED001))
    b = tracecore.open(SEED001)
    assert len(a) == len(b) == 292
    assert a.events.equals(b.events)


def test_gzip_is_transparent(tmp_path, seed000):
    raw = SEED000.read_bytes()
    gz = tmp_path / "seed000.pbtxt.gz"
    gz.write_bytes(gzip.compress(raw))
    t = tracecore.open(gz)
    assert (t.kind, t.format, len(t)) == ("StepStats", "text", 2087)
    for name in t.table_names:
        assert t.table(name).equals(seed000.table(name)), name
    # stats["bytes"] counts the decompressed input the parser read
    assert t.stats["bytes"] == len(raw)
    # gzip detection is by magic number, not by file name
    plain_name = tmp_path / "compressed_but_named.pbtxt"
    plain_name.write_bytes(gzip.compress(raw))
    assert len(tracecore.open(plain_name)) == 2087


def test_gzip_of_binary(tmp_path, binary_seeds):
    gz = tmp_path / "seed001.pb.gz"
    gz.write_bytes(gzip.compress(binary_seeds["001"].read_bytes()))
    t = tracecore.open(gz)
    assert (t.kind, t.format, len(t)) == ("RunMetadata", "binary", 292)


def test_binary_seeds_match_text(binary_seeds, seed000, seed001):
    for name, text_trace in (("000", seed000), ("001", seed001)):
        t = tracecore.open(binary_seeds[name])
        assert t.format == "binary" and t.kind == text_trace.kind
        assert len(t) == len(text_trace)
        assert t.events.equals(text_trace.events)
        assert t.devices.equals(text_trace.devices)


def test_format_forcing(binary_seeds):
    t = tracecore.open(SEED000, format="text")
    assert (t.format, len(t)) == ("text", 2087)
    b = tracecore.open(binary_seeds["001"], format="binary")
    assert (b.format, b.kind, len(b)) == ("binary", "RunMetadata", 292)
    b = tracecore.open(binary_seeds["001"], format="auto")
    assert b.format == "binary"


def test_forcing_binary_on_text_raises(tmp_path):
    with pytest.raises(tracecore.TraceFormatError) as info:
        tracecore.open(SEED000, format="binary")
    e = info.value
    assert isinstance(e, ValueError)
    assert isinstance(e.offset, int) and e.offset >= 0
    assert e.line is None
    assert f"byte offset {e.offset}" in str(e) and str(SEED000) in str(e)


def test_forcing_text_on_binary_raises(binary_seeds):
    with pytest.raises(tracecore.TraceFormatError) as info:
        tracecore.open(binary_seeds["000"], format="text")
    e = info.value
    assert isinstance(e.line, int) and e.line >= 1
    assert isinstance(e.column, int) and e.column >= 1
    assert f"line {e.line}, column {e.column}" in str(e)


@pytest.mark.parametrize("fmt", ["BINARY", "pbtxt", "", "txt", None, 1])
def test_invalid_format_is_value_error(fmt):
    with pytest.raises(ValueError) as info:
        tracecore.open(SEED001, format=fmt)
    assert not isinstance(info.value, tracecore.TraceFormatError)
    assert "format" in str(info.value)


@pytest.mark.parametrize("threads", [-1, -100])
def test_negative_threads_is_value_error(threads):
    with pytest.raises(ValueError) as info:
        tracecore.open(SEED001, threads=threads)
    assert not isinstance(info.value, tracecore.TraceFormatError)
    assert "threads" in str(info.value)


@pytest.mark.parametrize("threads", [1.5, None, "2", True, [2]])
def test_threads_of_another_type_is_type_error(threads):
    with pytest.raises(TypeError, match="threads must be an int"):
        tracecore.open(SEED001, threads=threads)


def test_huge_thread_counts_are_capped(seed001, tmp_path):
    # Beyond C int, the value used to reach the binding and fail there (quoting its arguments).
    for threads in (10**12, 2**63, 10**30):
        t = tracecore.open(SEED001, threads=threads)
        assert t.events.equals(seed001.events)
    with gzip.open(tmp_path / "s.pbtxt.gz", "wb") as f:  # the bytes path of the binding
        f.write(SEED001.read_bytes())
    assert tracecore.open(tmp_path / "s.pbtxt.gz", threads=10**12).events.equals(seed001.events)


def test_flags_must_be_bools(seed001):
    # A string such as "no" would otherwise turn the cache on.
    with pytest.raises(TypeError, match="cache must be True or False"):
        tracecore.open(SEED001, cache="no")
    with pytest.raises(TypeError, match="progress must be True or False"):
        tracecore.open(SEED001, progress="yes")
    with pytest.raises(TypeError, match="progress must be True or False"):
        tracecore.open(SEED001, progress=2)
    # 0 and 1, numpy integers and booleans are what they look like.
    import numpy as np

    t = tracecore.open(SEED001, progress=0, threads=np.int64(1))
    assert t.events.equals(seed001.events)
    assert tracecore.open(SEED001, progress=np.bool_(False), threads=np.uint8(2)).events.equals(
        seed001.events
    )


def test_a_failed_gzip_open_does_not_keep_the_file(tmp_path):
    # The error's traceback keeps the frames it went through (and open_many keeps the errors):
    # none of them may hold the decompressed bytes.
    bad = tmp_path / "bad.pbtxt.gz"
    payload = b"dev_stats { node_stats { all_start_micros: 1 } }\n" * 20000 + b"}"
    with gzip.open(bad, "wb") as f:
        f.write(payload)
    with pytest.raises(tracecore.TraceFormatError) as info:
        tracecore.open(bad)
    seen = []
    error = info.value
    while error is not None:
        tb = error.__traceback__
        while tb is not None:
            if "tracecore" in tb.tb_frame.f_code.co_filename:  # not this test's own frame
                seen.extend(v for v in tb.tb_frame.f_locals.values() if isinstance(v, bytes))
            tb = tb.tb_next
        error = error.__context__
    assert seen and max(len(v) for v in seen) <= 65536  # the head kept to explain errors


@pytest.mark.parametrize("threads", [1, 2, 7])
def test_thread_counts_give_identical_tables(threads, seed000):
    t = tracecore.open(SEED000, threads=threads)
    for name in t.table_names:
        assert t.table(name).equals(seed000.table(name)), (threads, name)


def test_missing_file_is_file_not_found(tmp_path):
    missing = tmp_path / "does_not_exist.pbtxt"
    with pytest.raises(FileNotFoundError) as info:
        tracecore.open(missing)
    assert isinstance(info.value, OSError)
    assert not isinstance(info.value, tracecore.TraceFormatError)


def test_directory_is_trace_format_error(tmp_path):
    """A directory is read as a Trace.to_parquet export; one that is not an export (here an
    empty one, and one holding an unrelated file) is a TraceFormatError, not an OSError."""
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("hello")
    for directory in (tmp_path / "empty", tmp_path / "other"):
        directory.mkdir(exist_ok=True)
        with pytest.raises(tracecore.TraceFormatError) as info:
            tracecore.open(directory)
        assert not isinstance(info.value, OSError)
        assert isinstance(info.value, ValueError)
        assert str(directory) in str(info.value)


def test_trace_format_error_is_value_error():
    assert issubclass(tracecore.TraceFormatError, ValueError)


# --------------------------------------------------------------------------------------------
# Lifetimes: tables outlive the Trace
# --------------------------------------------------------------------------------------------
def _churn():
    """Allocate and free memory so freed buffers would likely be reused/overwritten."""
    for _ in range(3):
        other = tracecore.open(SEED001)
        _ = [other.table(n) for n in other.table_names]
        del other, _
        junk = [bytearray(1 << 16) for _ in range(64)]
        del junk
        gc.collect()


def test_tables_survive_trace_deletion():
    t = tracecore.open(SEED000)
    events = t.events
    tensors = t.tensors
    devices = t.devices
    before = {
        "events": events.to_pydict(),
        "tensors": tensors.to_pydict(),
        "devices": devices.to_pydict(),
    }
    del t
    gc.collect()
    _churn()
    for table in (events, tensors, devices):
        table.validate(full=True)
    assert events.to_pydict() == before["events"]
    assert tensors.to_pydict() == before["tensors"]
    assert devices.to_pydict() == before["devices"]
    assert events.num_rows == 2087


def test_slices_and_columns_survive_trace_deletion():
    t = tracecore.open(SEED000)
    sl = t.events.slice(1000, 50)
    col = t.events.column("node_name")
    shapes = t.tensors.column("shape").slice(10, 20)
    sl_before = sl.to_pylist()
    col_before = col.to_pylist()
    shapes_before = shapes.to_pylist()
    first_name = col[0].as_py()
    del t
    gc.collect()
    _churn()
    sl.validate(full=True)
    assert sl.num_rows == 50
    assert sl.to_pylist() == sl_before
    assert sl["event_id"].to_pylist() == list(range(1000, 1050))
    assert col.to_pylist() == col_before
    assert col[0].as_py() == first_name == "edge_2141_Train/Model/Variable/read:MEMCPYDtoH"
    assert shapes.to_pylist() == shapes_before


def test_tables_are_stable_across_accesses():
    t = tracecore.open(SEED001)
    for name in t.table_names:
        a = t.table(name)
        assert t.table(name).equals(a)
        assert getattr(t, name).equals(getattr(t, name))
    assert t.events.num_rows == t.table("events").num_rows == 292
    assert t.devices.equals(t.table("devices"))


def test_every_table_the_core_lists_is_an_attribute(monkeypatch):
    """New importers add tables (event_stats, counters, ...): each is t.table(name) and
    t.<name> with no edit of the Trace class."""
    from tracecore import _core
    from tracecore.trace import Trace
    from tracecore.traceinfo import TraceInfo

    t = tracecore.open(SEED001)
    for name in _core.TABLE_NAMES:
        assert name in dir(t)
        if name != "events":  # the events property adds the name columns
            assert getattr(t, name) is t.table(name)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        t.nope  # noqa: B018
    assert not hasattr(t, "_private_nope")

    monkeypatch.setattr(_core, "TABLE_NAMES", [*_core.TABLE_NAMES, "links"])
    links = pa.table({"src": [1], "dst": [2]})
    stored = Trace(TraceInfo("StepStats", "text", 0, {}), tables={"links": links})
    assert stored.links is links and stored.table("links") is links
    assert "links" in stored.table_names and "links" in dir(stored)


# --------------------------------------------------------------------------------------------
# repr, stats
# --------------------------------------------------------------------------------------------
def test_repr(seed000, seed001):
    r = repr(seed000)
    assert "StepStats" in r and "text" in r
    assert "2087 events" in r and "7 device blocks" in r
    assert f"{seed000.tensors.num_rows} tensors" in r
    assert f"{seed000.alloc_records.num_rows} allocation records" in r
    r1 = repr(seed001)
    assert "RunMetadata" in r1 and "292 events" in r1 and "2 device blocks" in r1


def test_repr_of_a_bytes_path(seed001):
    r = repr(tracecore.open(os.fsencode(SEED001)))
    assert f"from {str(SEED001)!r}:" in r and "b'" not in r


def test_public_namespace():
    import inspect

    assert not hasattr(tracecore, "annotations")
    params = inspect.signature(tracecore.open_many).parameters
    assert list(params)[:4] == ["paths", "rank", "step", "threads"]
    assert "Args:" in tracecore.open_many.__doc__


def test_files_that_are_no_trace_say_so(tmp_path):
    png = tmp_path / "pic.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(40))
    with pytest.raises(tracecore.TraceFormatError) as info:
        tracecore.open(png)
    assert str(info.value) == f"{png}: not a TensorFlow trace dump: the file is a PNG image"
    assert info.value.offset == 0 and info.value.path == str(png)
    # gzip-compressed: the decompressed bytes are what is named
    zipped = tmp_path / "pic.png.gz"
    zipped.write_bytes(gzip.compress(b"%PDF-1.7\n" + bytes(100)))
    with pytest.raises(tracecore.TraceFormatError, match="the file is a PDF document"):
        tracecore.open(zipped)
    # Text that format detection reads as binary (it does not start like protobuf text): the
    # text parser's error, with its line and column.
    notes = tmp_path / "notes.txt"
    notes.write_text("1. first\n2. second\n")
    with pytest.raises(tracecore.TraceFormatError) as info:
        tracecore.open(notes)
    assert str(info.value).startswith(f"{notes}: line 1, column 1: expected a field name")
    assert (info.value.line, info.value.column) == (1, 1)
    # The same file read as binary on purpose keeps the binary error, and a text dump read as
    # binary gets a hint.
    with pytest.raises(tracecore.TraceFormatError) as info:
        tracecore.open(SEED001, format="binary")
    assert info.value.offset is not None
    assert str(info.value).endswith(
        "(the file looks like text, not a binary dump: use format 'text' or 'auto')"
    )
    # A binary dump that fails is not re-explained.
    bad = tmp_path / "bad.pb"
    bad.write_bytes(b"\x0a\x05\x0a\x03abc\x12")  # truncated: a key with no value
    with pytest.raises(tracecore.TraceFormatError) as info:
        tracecore.open(bad)
    assert "byte offset" in str(info.value)
    assert "looks like" not in str(info.value) and "not protobuf text" not in str(info.value)


def test_stats(seed000, seed001):
    for t, path in ((seed000, SEED000), (seed001, SEED001)):
        s = t.stats
        assert s["bytes"] == os.path.getsize(path)
        assert s["events"] == len(t)
        assert s["devices"] == t.devices.num_rows
        assert s["tensors"] == t.tensors.num_rows
        assert s["allocations"] == t.allocations.num_rows
        assert s["alloc_records"] == t.alloc_records.num_rows
        assert s["unknown_fields"] == 0
        assert isinstance(s["parse_seconds"], float) and s["parse_seconds"] >= 0.0
    s = seed000.stats
    assert (s["events"], s["devices"], s["tensors"], s["alloc_records"]) == (2087, 7, 987, 2128)
    # a fresh dict each time: mutating it does not change the trace
    s["events"] = -1
    assert seed000.stats["events"] == 2087


# --------------------------------------------------------------------------------------------
# Schemas and values
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(SCHEMAS))
def test_schema_is_exactly_the_contract(name, seed000, seed001):
    """Both t.table(name) and the attribute t.<name> have exactly the contract's columns."""
    for t in (seed000, seed001):
        for how, table in (("table()", t.table(name)), ("attribute", getattr(t, name))):
            want_schema = SCHEMAS[name]
            if name == "events" and how == "attribute":
                # t.events also carries the name-derived columns and the device kind
                want_schema = pa.schema(list(want_schema) + [pa.field("forward_scope", DICT),
                                                             pa.field("phase", DICT),
                                                             pa.field("device_kind", DICT)])
            schema = table.schema
            assert schema.names == want_schema.names, (name, how)
            for got, want in zip(schema, want_schema, strict=True):
                assert got.type == want.type, (name, how, got.name, got.type, want.type)
            assert schema.equals(want_schema), (name, how, schema)


def test_table_names(seed000):
    assert sorted(seed000.table_names) == sorted(SCHEMAS)


def test_first_event_of_seed000(seed000):
    ev = seed000.events
    row = ev.slice(0, 1).to_pylist()[0]
    assert row["event_id"] == 0
    assert row["device_index"] == 0
    assert row["node_name"] == "edge_2141_Train/Model/Variable/read:MEMCPYDtoH"
    assert row["op"] == "MEMCPYDtoH"
    assert row["device"] == "/device:GPU:0/stream:15"
    assert row["timeline_label"] == "MEMCPYDtoH 4 bytes (Device to Pinned)"
    assert row["start_ns"] == 1532145303704429000
    assert row["end_ns"] == row["start_ns"] + 1000
    assert row["op_start_ns"] == row["start_ns"]
    assert row["op_end_ns"] == row["start_ns"] + 1000
    assert row["scheduled_ns"] is None
    assert row["thread_id"] == 0
    assert (row["temp_memory_size"], row["persistent_memory_size"]) == (0, 0)


def test_dictionary_columns_decode(seed000):
    ev = seed000.events
    for col in ("device", "node_name", "op"):
        chunked = ev.column(col)
        assert pa.types.is_dictionary(chunked.type)
        decoded = chunked.cast(pa.string())
        assert decoded.to_pylist() == chunked.to_pylist()
        for chunk in chunked.chunks:
            idx = chunk.indices.to_numpy(zero_copy_only=False)
            valid = ~chunk.is_null().to_numpy(zero_copy_only=False)
            assert (idx[valid] >= 0).all() and (idx[valid] < len(chunk.dictionary)).all()
    names = ev.column("node_name").to_pylist()
    assert names.count("_SOURCE") >= 1
    devices = set(ev.column("device").to_pylist())
    assert devices == {d for d, _, _ in SEED000_DEVICES}
    # event_id is 0..n-1 and device_index/device agree with the devices table
    assert ev.column("event_id").to_pylist() == list(range(2087))
    dev_of_index = dict(zip(seed000.devices["device_index"].to_pylist(),
                            seed000.devices["device"].to_pylist(), strict=True))
    for di, d in zip(
        ev.column("device_index").to_pylist(), ev.column("device").to_pylist(), strict=True
    ):
        assert dev_of_index[di] == d


def test_devices_of_seed000(seed000):
    d = seed000.devices
    assert d["device_index"].to_pylist() == list(range(7))
    got = list(
        zip(d["device"].to_pylist(), d["kind"].to_pylist(), d["n_events"].to_pylist(), strict=True)
    )
    assert got == SEED000_DEVICES
    assert sum(n for _, _, n in SEED000_DEVICES) == 2087


def test_op_derivation_examples(seed000):
    ev = seed000.events
    names = ev.column("node_name").to_pylist()
    ops = ev.column("op").to_pylist()
    by_name = {}
    for n, o in zip(names, ops, strict=True):
        by_name.setdefault(n, o)
    assert by_name["_SOURCE"] == "NoOp"  # from the label "_SOURCE = NoOp()"
    assert by_name["Train/TrainInput/input_producer"] == "FIFOQueueV2"
    assert by_name["Train/Model/embedding_lookup/axis"] == "Const"


# --------------------------------------------------------------------------------------------
# sample_path and the command line
# --------------------------------------------------------------------------------------------
def test_sample_path_exists_and_opens():
    p = tracecore.sample_path()
    assert isinstance(p, Path)
    assert p.exists() and p.is_file()
    t = tracecore.open(p)
    assert t.kind == "StepStats"
    assert len(t) > 0 and t.devices.num_rows > 0


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tracecore", *args],
        capture_output=True, text=True, timeout=120,
    )


def test_cli_info_sample():
    p = _cli("info", "--sample")
    assert p.returncode == 0, p.stderr
    assert "StepStats" in p.stdout
    assert "Traceback" not in p.stderr


def test_cli_info_file():
    p = _cli("info", str(SEED001))
    assert p.returncode == 0, p.stderr
    assert "RunMetadata" in p.stdout
    assert "292 events" in p.stdout


def test_cli_info_missing_file():
    p = _cli("info", "/nonexistent")
    assert p.returncode != 0
    assert "Traceback" not in p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    assert "/nonexistent" in lines[0]


def test_cli_info_malformed_file(tmp_path):
    bad = tmp_path / "bad.pbtxt"
    bad.write_text('dev_stats {\n  device: "x"\n  node_stats { all_start_micros: 1z }\n}\n')
    p = _cli("info", str(bad))
    assert p.returncode == 2
    assert "Traceback" not in p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    assert "line 3" in lines[0] and "all_start_micros" in lines[0]


def test_pandas_is_not_needed(tmp_path):
    """Everything works with pandas made unimportable."""
    code = f"""
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name == "pandas" or name.startswith("pandas."):
            raise ImportError("pandas is blocked")
        return None
sys.meta_path.insert(0, Block())
import tracecore
t = tracecore.open({str(SEED000)!r})
for n in t.table_names:
    t.table(n).to_pylist()
repr(t); t.stats
from tracecore.cli import main
assert main(["info", {str(DATA / "regressions" / "small_runmetadata.pb")!r}]) == 0
assert "pandas" not in sys.modules
print("ok", len(t))
"""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip().splitlines()[-1] == "ok 2087"


def test_open_reads_a_binary_file_object(tmp_path):
    import io

    data = SEED000.read_bytes()
    from_path = tracecore.open(SEED000)
    with open(SEED000, "rb") as f:
        t = tracecore.open(f)
    assert t.source == str(SEED000)
    assert t.events.equals(from_path.events)
    assert tracecore.open(io.BytesIO(data)).events.equals(from_path.events)
    assert tracecore.open(io.BytesIO(data)).source is None
    with pytest.raises(ValueError, match="cache=True needs a path"):
        tracecore.open(io.BytesIO(data), cache=True)
    with pytest.raises(TypeError, match=r"binary mode \('rb'\): its read\(\) gave str"):
        tracecore.open(io.StringIO("dev_stats {}"))
    with pytest.raises(tracecore.TraceFormatError, match=r"^line 1, column 7: "):
        tracecore.open(io.BytesIO(b'{"a": ]}'))
    bad = tmp_path / "bad.pbtxt"
    bad.write_bytes(b"dev_stats { x: }")
    with bad.open("rb") as f, pytest.raises(tracecore.TraceFormatError, match=r"bad.pbtxt: line 1"):
        tracecore.open(f)


def test_public_names_are_importable_from_the_package():
    from tracecore import MemoryReplay, TraceSet

    assert isinstance(tracecore.open(SEED000).replay(), MemoryReplay)
    assert TraceSet.__module__ == "tracecore.dataset"
