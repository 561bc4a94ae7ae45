"""Exports: Parquet round trip, DuckDB / Polars / pandas / pyarrow.dataset on the files and the
tables, Chrome trace-event JSON (lanes, counters, escaping, gzip), Trace.sql."""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

import tracecore
from tracecore import chrome, export, parquet

HERE = Path(__file__).resolve().parent
SEED0 = HERE / "data" / "seed000_stepstats.pbtxt"
SEED1 = HERE / "data" / "seed001_runmetadata.pbtxt"

# A RunMetadata that fills every table: overlapping executor events (lanes), a memcpy stream,
# labels with inputs, a node without a derivable op, escapes and non-ASCII names, allocation
# records on two allocators, thread names, persistent tensor ids, a cost graph and a partition
# graph. Times are micros, so timeline.py's lane rule applies to them unchanged.
RICH = r"""
step_stats {
  dev_stats {
    device: "/job:w/replica:0/task:0/device:GPU:0"
    node_stats {
      node_name: "a/MatMul"
      all_start_micros: 1000100
      op_end_rel_micros: 90
      all_end_rel_micros: 100
      timeline_label: "a/MatMul = MatMul(x, w:1)"
      scheduled_micros: 1000090
      memory {
        allocator_name: "GPU_0_bfc"
        total_bytes: 4096
        peak_bytes: 4096
        live_bytes: 4096
        allocator_bytes_in_use: 1048576
        allocation_records { alloc_micros: 1000110 alloc_bytes: 4096 }
        allocation_records { alloc_micros: 1000400 alloc_bytes: -4096 }
      }
      output {
        slot: 0
        tensor_description {
          dtype: DT_FLOAT
          shape { dim { size: 32 } dim { size: 32 } }
          allocation_description {
            requested_bytes: 4096
            allocated_bytes: 4096
            allocator_name: "GPU_0_bfc"
            allocation_id: 7
            ptr: 123456789
          }
        }
      }
      memory_stats {
        temp_memory_size: 256
        persistent_memory_size: 64
        persistent_tensor_alloc_ids: 7
        persistent_tensor_alloc_ids: 9
      }
    }
    node_stats {
      node_name: "b/Relu"
      all_start_micros: 1000150
      all_end_rel_micros: 100
      timeline_label: "b/Relu = Relu(a/MatMul)"
      memory {
        allocator_name: "cpu"
        allocation_records { alloc_micros: 1000160 alloc_bytes: 128 }
      }
    }
    node_stats {
      node_name: "c/Add"
      all_start_micros: 1000200
      all_end_rel_micros: 100
      timeline_label: "c/Add = Add()"
    }
    node_stats {
      node_name: "d/\"quoted\"\\back"
      all_start_micros: 1000260
      all_end_rel_micros: 10
      timeline_label: "something without the usual form"
      thread_id: 3
    }
    node_stats {
      node_name: "e/gr\303\266\303\237e/\345\220\215\345\211\215"
      all_start_micros: 1000500
      all_end_rel_micros: 20
      timeline_label: "e/gr\303\266\303\237e/\345\220\215\345\211\215 = Identity(b/Relu)"
    }
    thread_names { key: 3 value: "worker thread 3" }
    thread_names { key: 5 value: "worker thread 5" }
  }
  dev_stats {
    device: "/device:GPU:0/memcpy"
    node_stats {
      node_name: "edge_1_x:MEMCPYHtoD"
      all_start_micros: 1000050
      all_end_rel_micros: 30
      timeline_label: "MEMCPYHtoD 4096 bytes"
    }
    node_stats {
      node_name: "edge_2_y:MEMCPYHtoD"
      all_start_micros: 1000060
      all_end_rel_micros: 5
      timeline_label: "MEMCPYHtoD 16 bytes"
    }
  }
}
cost_graph {
  node {
    name: "a/MatMul"
    device: "/job:w/replica:0/task:0/device:GPU:0"
    id: 1
    input_info { preceding_node: 0 }
    output_info { size: 4096 }
    compute_cost: 90
    is_final: true
  }
  node {
    name: "b/Relu"
    device: "/job:w/replica:0/task:0/device:GPU:0"
    id: 2
    input_info { preceding_node: 1 }
    control_input: 1
    temporary_memory_size: 128
    inaccurate: true
  }
}
partition_graphs {
  node { name: "a/MatMul" op: "MatMul" input: "x" input: "w:1" device: "/device:GPU:0" }
  node { name: "b/Relu" op: "Relu" input: "a/MatMul" }
}
"""

RICH_COUNTS = {
    "devices": 2,
    "events": 7,
    "tensors": 1,
    "allocations": 2,
    "alloc_records": 3,
    "cost_graph": 2,
    "graph_nodes": 2,
    "thread_names": 2,
    "persistent_tensors": 2,
    # XSpace's own tables: a RunMetadata has none of their rows
    "event_stats": 0,
    "plane_stats": 0,
    "aggregate_events": 0,
    # Chrome trace tables likewise
    "counters": 0,
    "links": 0,
}


def table_file(out: Path, table: str) -> Path:
    """The file of ``table`` in the export ``out`` (as its tracecore.json names it)."""
    meta = json.loads((out / "tracecore.json").read_text())
    return out / meta["tables"][table]


@pytest.fixture
def rich_path(tmp_path: Path) -> Path:
    path = tmp_path / "rich.pbtxt"
    path.write_text(RICH, encoding="utf-8")
    return path


def decoded(table: pa.Table) -> pa.Table:
    """``table`` with dictionary columns as plain strings (values, not dictionary indices)."""
    columns = [
        column.cast(column.type.value_type) if pa.types.is_dictionary(column.type) else column
        for column in table.columns
    ]
    return pa.Table.from_arrays(columns, names=table.column_names)


def assert_same_tables(a: tracecore.Trace, b: tracecore.Trace) -> None:
    for name in a.table_names:
        left, right = a.table(name), b.table(name)
        assert right.schema.equals(left.schema), name
        assert decoded(right).equals(decoded(left)), name


# --------------------------------------------------------------------------------------------
# Parquet


def test_rich_fixture_fills_every_table(rich_path: Path) -> None:
    t = tracecore.open(rich_path)
    assert {n: t.table(n).num_rows for n in t.table_names} == RICH_COUNTS
    assert t.kind == "RunMetadata"


@pytest.mark.parametrize("which", ["rich", "seed0", "seed1"])
def test_parquet_round_trip_every_table(which: str, rich_path: Path, tmp_path: Path) -> None:
    source = {"rich": rich_path, "seed0": SEED0, "seed1": SEED1}[which]
    t = tracecore.open(source)
    out = t.to_parquet(tmp_path / "pq")
    names = sorted(p.name for p in out.iterdir())
    files = sorted(table_file(out, n).name for n in t.table_names)
    assert names == sorted([*files, ".tracecore.lock", "tracecore.json"])
    for n in t.table_names:
        assert re.fullmatch(rf"{n}\.[0-9a-f]{{16}}\.parquet", table_file(out, n).name)

    back = tracecore.open(out)
    assert isinstance(back, tracecore.Trace)
    assert back._core is None  # tables from the files, no parse
    assert_same_tables(t, back)
    if which == "rich":
        assert {n: back.table(n).num_rows for n in back.table_names} == RICH_COUNTS
    assert (back.kind, back.format, len(back)) == (t.kind, t.format, len(t))
    assert back.stats["events"] == t.stats["events"]
    assert back.stats["loaded_from"] == "parquet"
    assert back.events.num_rows == len(t)


def test_parquet_metadata_file(rich_path: Path, tmp_path: Path) -> None:
    t = tracecore.open(rich_path)
    meta = json.loads((t.to_parquet(tmp_path / "pq") / "tracecore.json").read_text())
    st = os.stat(rich_path)
    assert meta["source"] == str(rich_path.resolve())
    assert (meta["size"], meta["mtime_ns"]) == (st.st_size, st.st_mtime_ns)
    assert (meta["kind"], meta["format"]) == ("RunMetadata", "text")
    assert meta["tracecore_version"] == tracecore.__version__
    assert meta["counts"] == RICH_COUNTS
    assert meta["stats"]["bytes"] == st.st_size


def test_parquet_keeps_dictionary_encoding(tmp_path: Path) -> None:
    t = tracecore.open(SEED0)
    out = t.to_parquet(tmp_path / "pq", compression="snappy")
    schema = pq.read_schema(table_file(out, "events"))
    for column in ("device", "node_name", "op"):
        assert schema.field(column).type == pa.dictionary(pa.int32(), pa.string())
    # Parquet-level dictionary pages too, not only the stored Arrow schema.
    metadata = pq.ParquetFile(table_file(out, "events")).metadata
    encodings = metadata.row_group(0).column(3).encodings
    assert any("DICTIONARY" in e for e in encodings)
    back = tracecore.open(out)
    node_name = back.events["node_name"].chunk(0)
    # The shared string pool is cut down to the names the column uses.
    assert len(node_name.dictionary) == len(pc.unique(t.events["node_name"].cast(pa.string())))


def test_parquet_stores_events_with_their_name_columns(tmp_path: Path) -> None:
    t = tracecore.open(SEED0)
    out = t.to_parquet(tmp_path / "pq")
    stored = pq.read_table(table_file(out, "events"))
    assert stored.column_names == t.events.column_names  # a file that stands alone
    back = tracecore.open(out)
    assert back.table("events").column_names == t.table("events").column_names
    assert back.events.column_names == t.events.column_names
    for column in ("forward_scope", "phase"):
        assert stored[column].to_pylist() == t.events[column].to_pylist(), column
        assert back.events[column].to_pylist() == t.events[column].to_pylist(), column


def test_compact_dictionaries_keeps_values_and_nulls() -> None:
    dictionary = pa.array(["unused", "b", "a", "never"])
    column = pa.DictionaryArray.from_arrays(pa.array([2, None, 1, 2], pa.int32()), dictionary)
    table = export.compact_dictionaries(pa.table({"x": column}))
    chunk = table["x"].chunk(0)
    assert chunk.dictionary.to_pylist() == ["b", "a"]
    assert table["x"].to_pylist() == ["a", None, "b", "a"]
    assert table.schema == pa.schema([("x", pa.dictionary(pa.int32(), pa.string()))])


def test_parquet_reopen_queries_run_on_the_stored_tables(rich_path: Path, tmp_path: Path) -> None:
    t = tracecore.open(rich_path)
    back = tracecore.open(t.to_parquet(tmp_path / "pq"))
    assert back._core is None
    assert back.occupancy().to_pylist() == t.occupancy().to_pylist()  # builds the core
    assert back._core is not None
    assert back.op_stats().to_pylist() == t.op_stats().to_pylist()
    assert back.window(1000150_000, 1000151_000).to_pylist() == [0, 1]
    assert (
        back.replay().peaks["peak_bytes"].to_pylist() == t.replay().peaks["peak_bytes"].to_pylist()
    )


def test_parquet_reopen_queries_ignore_a_changed_or_missing_source(tmp_path: Path) -> None:
    source = tmp_path / "trace.pbtxt"
    shutil.copy(SEED1, source)
    t = tracecore.open(source)
    out = t.to_parquet(tmp_path / "pq")
    # The source rewritten as another trace: the export still answers for the one it holds.
    shutil.copy(SEED0, source)
    back = tracecore.open(out)
    assert back.events.num_rows == 292
    assert back.occupancy().to_pylist() == t.occupancy().to_pylist()
    source.unlink()
    assert tracecore.open(out).overlaps().to_pylist() == t.overlaps().to_pylist()
    # Arguments are checked before the source is looked for.
    stored = tracecore.open(out)
    with pytest.raises(TypeError, match="start_ns must be an int"):
        stored.window(0.5, 1)
    with pytest.raises(TypeError, match="bin_ns must be an int"):
        stored.occupancy(bin_ns=1.5)
    with pytest.raises(ValueError, match="source must be"):
        stored.replay(source="nope")
    with pytest.raises(TypeError, match="same_device must be True or False"):
        stored.overlaps(same_device="no")


def test_parquet_compression_choices(tmp_path: Path) -> None:
    t = tracecore.open(SEED1)
    for i, codec in enumerate([None, "lz4_raw", "ZSTD", {"start_ns": "snappy"}]):
        out = t.to_parquet(tmp_path / f"pq{i}", compression=codec)
        assert_same_tables(t, tracecore.open(out))
    with pytest.raises(ValueError, match="compression must be one of"):
        t.to_parquet(tmp_path / "bad", compression="bogus")
    assert not (tmp_path / "bad").exists()


def test_open_dir_errors(tmp_path: Path) -> None:
    with pytest.raises(tracecore.TraceFormatError, match="no tracecore.json"):
        tracecore.open(tmp_path)
    out = tracecore.open(SEED1).to_parquet(tmp_path / "pq")
    good = (out / "tracecore.json").read_text()
    meta = json.loads(good)
    meta["counts"]["events"] = 1
    (out / "tracecore.json").write_text(json.dumps(meta))
    with pytest.raises(tracecore.TraceFormatError, match="tracecore.json: the checksum does not"):
        tracecore.open(out)
    meta["checksum"] = parquet._meta_checksum(meta)  # a consistent but wrong count
    (out / "tracecore.json").write_text(json.dumps(meta))
    with pytest.raises(tracecore.TraceFormatError, match="292 rows where tracecore.json says 1"):
        tracecore.open(out)
    (out / "tracecore.json").write_text("{not json")
    with pytest.raises(tracecore.TraceFormatError, match="unreadable"):
        tracecore.open(out)
    (out / "tracecore.json").write_text(good)
    assert len(tracecore.open(out)) == 292
    table_file(out, "tensors").unlink()
    missing = r"missing tensors\.[0-9a-f]{16}\.parquet \(named by tracecore.json"
    with pytest.raises(tracecore.TraceFormatError, match=missing):
        tracecore.open(out)


def test_cached_trace_exports_to_parquet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRACECORE_CACHE_DIR", str(tmp_path / "cache"))
    tracecore.open(SEED1, cache=True)
    cached = tracecore.open(SEED1, cache=True)
    assert cached.stats["loaded_from"] == "cache"
    back = tracecore.open(cached.to_parquet(tmp_path / "pq"))
    assert_same_tables(tracecore.open(SEED1), back)


# --------------------------------------------------------------------------------------------
# DuckDB, Polars, pandas, pyarrow.dataset


def test_duckdb_reads_the_parquet_files(tmp_path: Path) -> None:
    duckdb = pytest.importorskip("duckdb")
    t = tracecore.open(SEED0)
    out = t.to_parquet(tmp_path / "pq")
    con = duckdb.connect()
    n, total = con.execute(
        f"SELECT count(*), sum(end_ns - start_ns) FROM read_parquet('{table_file(out, 'events')}')"
    ).fetchone()
    assert (n, int(total)) == (
        2087,
        int(pc.sum(pc.subtract(t.events["end_ns"], t.events["start_ns"])).as_py()),
    )
    rows = con.execute(
        f"SELECT op, count(*) AS n FROM read_parquet('{table_file(out, 'events')}') "
        "GROUP BY op ORDER BY n DESC, op LIMIT 2"
    ).fetchall()
    assert rows == [("LSTMBlockCellGrad", 360), ("LSTMBlockCell", 280)]
    # Joins across files: bytes allocated per op on GPU_0_bfc.
    (gpu_bytes,) = con.execute(
        f"SELECT sum(r.bytes) FROM read_parquet('{table_file(out, 'alloc_records')}') r "
        f"JOIN read_parquet('{table_file(out, 'events')}') e USING (event_id) "
        "WHERE r.allocator = 'GPU_0_bfc' AND r.bytes > 0"
    ).fetchone()
    records = t.alloc_records
    mask = pc.and_(
        pc.equal(records["allocator"].cast(pa.string()), "GPU_0_bfc"),
        pc.greater(records["bytes"], 0),
    )
    assert int(gpu_bytes) == pc.sum(records.filter(mask)["bytes"]).as_py()
    con.close()


def test_op_counts_by_duckdb_match_pyarrow(tmp_path: Path) -> None:
    duckdb = pytest.importorskip("duckdb")
    t = tracecore.open(SEED0)
    out = t.to_parquet(tmp_path / "pq")
    con = duckdb.connect()
    got = dict(
        con.execute(
            "SELECT coalesce(op, '(none)'), count(*) "
            f"FROM read_parquet('{table_file(out, 'events')}') GROUP BY 1"
        ).fetchall()
    )
    con.close()
    expected = {r["key"]: r["n_events"] for r in t.op_stats().to_pylist()}
    assert got == expected


def test_polars_and_pyarrow_dataset_read_the_parquet_files(tmp_path: Path) -> None:
    pl = pytest.importorskip("polars")
    t = tracecore.open(SEED1)
    out = t.to_parquet(tmp_path / "pq")
    frame = pl.read_parquet(table_file(out, "tensors"))
    assert frame.height == 285
    assert frame["requested_bytes"].sum() == pc.sum(t.tensors["requested_bytes"]).as_py()
    dataset = ds.dataset(table_file(out, "alloc_records"), format="parquet")
    assert dataset.count_rows() == 328
    gpu = dataset.to_table(filter=ds.field("allocator") == "GPU_0_bfc")
    assert (
        gpu.num_rows
        == pc.sum(pc.equal(t.alloc_records["allocator"].cast(pa.string()), "GPU_0_bfc")).as_py()
    )


def test_pandas_polars_duckdb_on_the_tables_as_they_are() -> None:
    pd = pytest.importorskip("pandas")
    pl = pytest.importorskip("polars")
    duckdb = pytest.importorskip("duckdb")
    t = tracecore.open(SEED0)
    frame = t.events.to_pandas()
    assert len(frame) == 2087
    assert isinstance(frame["op"].dtype, pd.CategoricalDtype)
    assert frame["op"].value_counts()["MatMul"] == 249
    assert frame.loc[0, "node_name"] == "edge_2141_Train/Model/Variable/read:MEMCPYDtoH"
    assert int((frame["end_ns"] - frame["start_ns"]).max()) == int(
        pc.max(pc.subtract(t.events["end_ns"], t.events["start_ns"])).as_py()
    )
    shapes = t.tensors.to_pandas()["shape"]
    assert (
        list(shapes[shapes.map(len) == 2].iloc[0])
        == t.tensors.filter(pc.equal(pc.list_value_length(t.tensors["shape"]), 2))["shape"][
            0
        ].as_py()
    )

    lf = pl.from_arrow(t.events)
    by_op = lf.group_by("op").len().sort(["len", "op"], descending=[True, False])
    assert by_op.row(0) == ("LSTMBlockCellGrad", 360)
    assert by_op.height == t.op_stats().num_rows
    assert lf.filter(pl.col("op") == "MatMul").height == 249

    events = t.events  # noqa: F841 - DuckDB finds the local variable by name
    [(n,)] = duckdb.sql("SELECT count(*) FROM events WHERE op = 'MatMul'").fetchall()
    assert n == 249


def test_trace_sql() -> None:
    pytest.importorskip("duckdb")
    t = tracecore.open(SEED0)
    result = t.sql(
        "SELECT allocator, count(*) AS n, sum(bytes) AS net FROM alloc_records "
        "GROUP BY allocator ORDER BY allocator"
    )
    assert isinstance(result, pa.Table)
    assert result["allocator"].to_pylist() == ["GPU_0_bfc", "cpu", "cpu_pool", "cuda_host_bfc"]
    assert result["n"].to_pylist() == [2096, 2, 20, 10]
    joined = t.sql(
        "SELECT e.op, sum(t.requested_bytes) AS b FROM tensors t JOIN events e USING (event_id) "
        "WHERE e.op = 'MatMul' GROUP BY e.op"
    )
    mask = pc.is_in(
        t.tensors["event_id"],
        t.events.filter(pc.equal(t.events["op"].cast(pa.string()), "MatMul"))["event_id"],
    )
    assert int(joined["b"][0].as_py()) == pc.sum(t.tensors.filter(mask)["requested_bytes"]).as_py()
    assert t.sql("SELECT count(*) AS n FROM devices")["n"].to_pylist() == [7]


# --------------------------------------------------------------------------------------------
# Chrome trace


def tf_lanes(events: pa.Table) -> list[int]:
    """TensorFlow timeline.py's _assign_lanes, transcribed, over micros: per device block, in
    file order, lanes start as [0]; an event takes the first lane l with start > lanes[l]."""
    lanes_by_device: dict[int, list[int]] = {}
    result = []
    for row in events.select(["device_index", "start_ns", "end_ns"]).to_pylist():
        start_us, end_us = row["start_ns"] // 1000, row["end_ns"] // 1000
        lanes = lanes_by_device.setdefault(row["device_index"], [0])
        lane = -1
        for i, lane_end in enumerate(lanes):
            if start_us > lane_end:
                lane = i
                lanes[i] = end_us
                break
        if lane < 0:
            lane = len(lanes)
            lanes.append(end_us)
        result.append(lane)
    return result


def load_chrome(path: Path, **kwargs) -> dict:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f, **kwargs)


def ns(value: Decimal) -> int:
    """Microseconds read exactly (Decimal) back to integer nanoseconds."""
    exact = value * 1000
    assert exact == exact.to_integral_value()
    return int(exact)


def test_chrome_trace_rich(rich_path: Path, tmp_path: Path) -> None:
    t = tracecore.open(rich_path)
    doc = load_chrome(t.to_chrome_trace(tmp_path / "trace.json"))
    events = doc["traceEvents"]
    xs = [e for e in events if e["ph"] == "X" and e["cat"] == "Op"]  # not the step slices
    assert len(xs) == 7
    # Lanes: a/MatMul 100-200 -> 0; b/Relu 150-250 -> 1; c/Add starts at 200 when lane 0 ends at
    # 200: timeline.py needs start > end, so a third lane; d 260-270 -> lane 0; e 500 -> lane 0.
    assert [(e["args"]["name"], e["pid"], e["tid"]) for e in xs] == [
        ("a/MatMul", 0, 0),
        ("b/Relu", 0, 1),
        ("c/Add", 0, 2),
        ('d/"quoted"\\back', 0, 0),
        ("e/größe/名前", 0, 0),
        ("edge_1_x:MEMCPYHtoD", 1, 0),
        ("edge_2_y:MEMCPYHtoD", 1, 1),
    ]
    first = xs[0]
    assert first["name"] == "MatMul" and first["cat"] == "Op"
    assert first["ts"] == pytest.approx(1000100.0) and first["dur"] == pytest.approx(100.0)
    assert first["args"] == {"name": "a/MatMul", "op": "MatMul", "input0": "x", "input1": "w:1"}
    assert xs[2]["args"] == {"name": "c/Add", "op": "Add"}  # "Add()" has no inputs
    # No derivable op: named by the node, the label kept as is.
    assert xs[3]["name"] == 'd/"quoted"\\back'
    assert xs[3]["args"] == {
        "name": 'd/"quoted"\\back',
        "op": "",
        "label": "something without the usual form",
    }
    assert xs[4]["args"]["input0"] == "b/Relu"
    assert xs[5]["name"] == "MEMCPYHtoD" and xs[5]["args"]["label"] == "MEMCPYHtoD 4096 bytes"

    names = {
        e["pid"]: e["args"]["name"]
        for e in events
        if e["ph"] == "M" and e["name"] == "process_name"
    }
    assert names == {
        0: "/job:w/replica:0/task:0/device:GPU:0",
        1: "/device:GPU:0/memcpy",
        2: "Allocators",
        3: "Steps",
    }

    counters = [e for e in events if e["ph"] == "C"]
    assert [(e["name"], e["ts"], e["args"]) for e in counters] == [
        ("GPU_0_bfc", 1000110.0, {"GPU_0_bfc": 4096}),
        ("GPU_0_bfc", 1000400.0, {"GPU_0_bfc": 0}),
        ("cpu", 1000160.0, {"cpu": 128}),
    ]
    assert all(e["pid"] == 2 for e in counters)


def test_chrome_trace_seed_one_x_per_record_and_a_counter_series_per_allocator(
    tmp_path: Path,
) -> None:
    t = tracecore.open(SEED0)
    doc = load_chrome(t.to_chrome_trace(tmp_path / "seed0.json"), parse_float=Decimal)
    events = doc["traceEvents"]
    xs = [e for e in events if e["ph"] == "X" and e["cat"] == "Op"]  # not the step slices
    assert len(xs) == len(t) == 2087
    ev = t.events
    assert [e["pid"] for e in xs] == ev["device_index"].to_pylist()
    assert [e["args"]["name"] for e in xs] == ev["node_name"].to_pylist()
    assert [ns(e["ts"]) for e in xs] == ev["start_ns"].to_pylist()
    assert [ns(e["dur"]) for e in xs] == pc.subtract(ev["end_ns"], ev["start_ns"]).to_pylist()
    assert [e["tid"] for e in xs] == tf_lanes(ev)
    assert max(e["tid"] for e in xs) >= 1  # the GPU executor block does overlap itself

    timeline = t.replay(source="records").timeline
    counters = [e for e in events if e["ph"] == "C"]
    series = {}
    for e in counters:
        series.setdefault(e["name"], []).append((ns(e["ts"]), e["args"][e["name"]]))
    assert sorted(series) == ["GPU_0_bfc", "cpu", "cpu_pool", "cuda_host_bfc"]
    for allocator, points in series.items():
        rows = timeline.filter(pc.equal(timeline["allocator"].cast(pa.string()), allocator))
        assert points == list(
            zip(rows["time_ns"].to_pylist(), rows["bytes_in_use"].to_pylist(), strict=True)
        )
    assert max(v for _, v in series["GPU_0_bfc"]) == 66359808


def test_chrome_trace_gzip_and_without_memory(tmp_path: Path) -> None:
    t = tracecore.open(SEED1)
    path = t.to_chrome_trace(tmp_path / "seed1.json.gz", show_memory=False)
    assert path.read_bytes()[:2] == b"\x1f\x8b"
    doc = load_chrome(path)
    phases = [e["ph"] for e in doc["traceEvents"]]
    assert phases.count("X") == 292 + 1 and phases.count("C") == 0  # the records, one step
    assert not (tmp_path / ".seed1.json.gz.tmp").exists()


def test_chrome_trace_is_written_in_chunks(tmp_path: Path) -> None:
    class Recorder:
        def __init__(self) -> None:
            self.writes: list[int] = []
            self.data = bytearray()

        def write(self, b: bytes) -> int:
            self.writes.append(len(b))
            self.data += b
            return len(b)

    t = tracecore.open(SEED0)
    events = export.chrome_trace_events(t, batch_rows=500)
    assert iter(events) is events  # a generator: events are produced as they are written
    sink = Recorder()
    chrome._write_json_events(sink, events, chunk=1000)  # type: ignore[arg-type]
    doc = json.loads(bytes(sink.data))
    # events, counters, 7 devices' and the Allocators' metadata, the Steps process (metadata
    # of the process and its thread, one slice)
    assert len(doc["traceEvents"]) == 2087 + 1354 + 2 * 7 + 2 + 2 + 2 + 1
    assert len(sink.writes) >= 4


def test_chrome_timestamps_keep_nanoseconds() -> None:
    assert chrome._us(1532145303703500123) == "1532145303703500.123"
    assert chrome._us(2500) == "2.500"
    assert chrome._us(7) == "0.007"
    assert chrome._us(-1500) == "-1.500"
    assert re.fullmatch(r"\d+\.\d{3}", chrome._us(0))


# --------------------------------------------------------------------------------------------
# The in-place commit never removes what it cannot vouch for (review findings)
def _sample_and_other():
    import tracecore

    a = tracecore.open(tracecore.sample_path())
    b = tracecore.open(Path(__file__).resolve().parent / "data" / "seed001_runmetadata.pbtxt")
    return a, b


def test_an_unreadable_tracecore_json_removes_nothing(tmp_path: Path) -> None:
    import tracecore
    from tracecore.parquet import parquet_files

    a, b = _sample_and_other()
    a.to_parquet(tmp_path)
    old_files = parquet_files(tmp_path)
    (tmp_path / "tracecore.json").write_text("{ not json")
    b.to_parquet(tmp_path, overwrite=True)
    assert all(p.exists() for p in old_files)  # what the broken file named is unknown: kept
    back = tracecore.open(tmp_path)
    assert back.events.num_rows == b.events.num_rows == len(b)


def test_only_our_files_are_removed_after_the_commit(tmp_path: Path) -> None:
    import tracecore

    a, b = _sample_and_other()
    a.to_parquet(tmp_path)
    meta = json.loads((tmp_path / "tracecore.json").read_text())
    (tmp_path / "results.parquet").write_bytes(b"user data")
    meta["tables"]["events"] = "results.parquet"  # a hand-edited file naming a user's file
    (tmp_path / "tracecore.json").write_text(json.dumps(meta))
    b.to_parquet(tmp_path, overwrite=True)
    assert (tmp_path / "results.parquet").read_bytes() == b"user data"
    assert tracecore.open(tmp_path).events.num_rows == len(b)


def test_an_interruption_after_the_commit_keeps_the_new_export(tmp_path: Path, monkeypatch) -> None:
    import tracecore
    from tracecore import parquet

    a, b = _sample_and_other()
    a.to_parquet(tmp_path)
    commit = parquet._commit

    def commit_then_interrupt(out, meta):
        commit(out, meta)
        raise KeyboardInterrupt  # e.g. Ctrl-C during the directory fsync after the rename

    monkeypatch.setattr(parquet, "_commit", commit_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        b.to_parquet(tmp_path, overwrite=True)
    back = tracecore.open(tmp_path)  # the committed export, with all its files
    assert back.events.num_rows == len(b)
    assert back.kind == b.kind


def test_to_parquet_refuses_an_existing_export_unless_overwrite(tmp_path: Path, capsys) -> None:
    """As TraceSet.to_parquet: an export is never replaced by accident."""
    import tracecore
    from tracecore import cli

    a, b = _sample_and_other()
    out = a.to_parquet(tmp_path / "pq")
    with pytest.raises(FileExistsError, match="holds a tracecore export already"):
        b.to_parquet(out)
    assert tracecore.open(out).events.num_rows == len(a)  # untouched
    assert cli.main(["export", str(SEED1), "--parquet", str(out)]) == 1
    assert "holds a tracecore export already" in capsys.readouterr().err
    assert tracecore.open(out).events.num_rows == len(a)
    assert cli.main(["export", str(SEED1), "--parquet", str(out), "--overwrite"]) == 0
    assert tracecore.open(out).events.num_rows == tracecore.open(SEED1).events.num_rows
    b.to_parquet(out, overwrite=True)
    assert tracecore.open(out).events.num_rows == len(b)
