"""Dictionary columns hold exactly their column's values (issue 24, point 3).

Every dictionary column of every table a user is handed (the parsed tables, the name columns of
``events``, query results, tables read back from Parquet) has as its dictionary the distinct
values the column holds, once each: pandas' categories, Polars' and DuckDB's groups are the
column's values, not the trace's whole string pool. Nullable integer columns reach pandas
without loss through ``Trace.to_pandas``. Tables go to Polars, DuckDB and pandas directly
(Arrow PyCapsule interface).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import tracecore

DATA = Path(__file__).resolve().parent / "data"
FIXTURES = [
    tracecore.sample_path(),
    DATA / "seed000_stepstats.pbtxt",
    DATA / "seed001_runmetadata.pbtxt",
    *sorted(p for p in DATA.glob("chrome/*.json*") if "memory_profile" not in p.name),
    *sorted(DATA.glob("xspace/*.xplane.pb")),
]


@pytest.fixture(scope="module", params=FIXTURES, ids=lambda p: p.name)
def trace(request: pytest.FixtureRequest) -> tracecore.Trace:
    return tracecore.open(request.param)


def _tables(t: tracecore.Trace) -> dict[str, pa.Table]:
    """Every table of ``t`` as a user gets it (``t.events`` with its name columns)."""
    return {name: getattr(t, name) for name in t.table_names}


def _dictionary_columns(table: pa.Table) -> list[str]:
    return [f.name for f in table.schema if pa.types.is_dictionary(f.type)]


def check_exact_dictionaries(table: pa.Table, what: str) -> int:
    """Asserts that each chunk's dictionary of each dictionary column is the distinct values of
    its valid rows, once each, and that pandas counts exactly those; returns the columns
    checked."""
    checked = 0
    frame = table.to_pandas() if table.num_columns else None
    for name in _dictionary_columns(table):
        column = table.column(name)
        values = column.cast(pa.string()).to_pylist()
        occurring = Counter(v for v in values if v is not None)
        for chunk in column.chunks:
            dictionary = chunk.dictionary.to_pylist()
            assert None not in dictionary, (what, name)
            assert len(dictionary) == len(set(dictionary)), (what, name, "duplicates")
            used = {v for v in chunk.cast(pa.string()).to_pylist() if v is not None}
            assert set(dictionary) == used, (what, name, sorted(set(dictionary) - used)[:5])
        assert frame is not None
        counts = frame[name].value_counts()
        assert {str(k): int(v) for k, v in counts.items()} == dict(occurring), (what, name)
        assert len(counts) == len(occurring), (what, name)
        if column.num_chunks == 1:
            categories = column.chunk(0).dictionary.to_pylist()
            assert list(frame[name].cat.categories) == categories, (what, name)
        checked += 1
    return checked


def test_every_table_has_exact_dictionaries(trace: tracecore.Trace) -> None:
    checked = 0
    for name, table in _tables(trace).items():
        checked += check_exact_dictionaries(table, name)
    # events alone has op, node_name, forward_scope, phase...: the check ran on something.
    assert checked >= 4


def test_op_value_counts_are_the_distinct_ops(trace: tracecore.Trace) -> None:
    ops = trace.events.column("op").cast(pa.string()).to_pylist()
    expected = Counter(op for op in ops if op is not None)
    counts = trace.events.to_pandas()["op"].value_counts()
    assert dict(counts) == dict(expected)
    # groupby over the categorical makes one group per op that occurs, no empty ones.
    groups = trace.events.to_pandas().groupby("op", observed=False).size()
    assert dict(groups) == dict(expected)


def test_query_results_have_exact_dictionaries(trace: tracecore.Trace) -> None:
    checked = check_exact_dictionaries(trace.op_stats("op"), "op_stats")
    checked += check_exact_dictionaries(trace.op_stats("device"), "op_stats device")
    checked += check_exact_dictionaries(trace.occupancy(), "occupancy")
    r = trace.replay()
    checked += check_exact_dictionaries(r.peaks, "peaks")
    assert checked >= 1


def test_sample_dictionaries_are_small() -> None:
    """The sample's pool holds ~1700 strings; its op column only its 40-odd ops."""
    t = tracecore.open(tracecore.sample_path())
    ops = set(t.events.column("op").cast(pa.string()).to_pylist()) - {None}
    (chunk,) = t.events.column("op").chunks
    assert len(chunk.dictionary) == len(ops)
    assert 30 < len(ops) < 60
    names = set(t.events.column("node_name").cast(pa.string()).to_pylist())
    assert len(t.events.column("node_name").chunk(0).dictionary) == len(names - {None})
    assert len(t.events.to_pandas()["op"].cat.categories) == len(ops)
    phases = set(t.events.column("phase").cast(pa.string()).to_pylist())
    assert t.events.column("phase").chunk(0).dictionary.to_pylist() == [
        p for p in ("forward", "backward", "optimizer", "other") if p in phases
    ]


def _counter(table: pa.Table, column: str) -> Counter[Any]:
    return Counter(table.column(column).cast(pa.string()).to_pylist())


def test_polars_and_duckdb_take_tables_directly(trace: tracecore.Trace) -> None:
    pl = pytest.importorskip("polars")
    duckdb = pytest.importorskip("duckdb")
    expected = _counter(trace.events, "op")

    frame = pl.from_arrow(trace.events)
    assert frame.height == trace.events.num_rows
    counts = frame.group_by("op").len()
    assert {r["op"]: r["len"] for r in counts.iter_rows(named=True)} == dict(expected)
    assert pl.DataFrame(trace.events).height == trace.events.num_rows

    events_table = trace.events  # noqa: F841 (DuckDB finds it by its name)
    rows = duckdb.sql("select op, count(*) from events_table group by op").fetchall()
    assert dict(rows) == dict(expected)
    # The tables are Arrow PyCapsule streams: any consumer of the protocol takes them.
    streamed = pa.RecordBatchReader.from_stream(trace.events).read_all()
    assert streamed.equals(trace.events)


def test_pandas_from_arrow_takes_a_table() -> None:
    pd = pytest.importorskip("pandas")
    if not hasattr(pd.DataFrame, "from_arrow"):
        pytest.skip("pandas without DataFrame.from_arrow (pandas < 3)")
    t = tracecore.open(tracecore.sample_path())
    frame = pd.DataFrame.from_arrow(t.events)
    assert len(frame) == len(t)
    assert dict(frame["op"].value_counts()) == dict(
        Counter(v for v in t.events.column("op").cast(pa.string()).to_pylist() if v is not None))


def test_to_pandas_keeps_nullable_integers_exact() -> None:
    pd = pytest.importorskip("pandas")
    t = tracecore.open(tracecore.sample_path())
    scheduled = t.events.column("scheduled_ns").to_pylist()
    present = [v for v in scheduled if v is not None]
    assert None in scheduled and present
    # float64 (pyarrow's plain to_pandas of a column with nulls) loses some of them...
    assert t.events.to_pandas()["scheduled_ns"].dtype == "float64"
    assert any(int(float(v)) != v for v in present)
    # ...the helper keeps every one, and the nulls.
    frame = t.to_pandas("events")
    assert frame["scheduled_ns"].dtype == pd.ArrowDtype(pa.int64())
    assert [None if pd.isna(v) else int(v) for v in frame["scheduled_ns"]] == scheduled
    assert [int(v) for v in frame["start_ns"]] == t.events.column("start_ns").to_pylist()
    # Dictionary columns stay categoricals with exact categories; the name columns are there.
    assert isinstance(frame["op"].dtype, pd.CategoricalDtype)
    assert set(frame["op"].cat.categories) == set(v for v in t.events["op"].to_pylist() if v)
    assert list(frame.columns) == t.events.column_names
    devices = t.to_pandas("devices")
    assert list(devices["device_index"]) == t.devices.column("device_index").to_pylist()
    with pytest.raises(KeyError):
        t.to_pandas("no_such_table")


def test_traceset_to_pandas_and_dictionaries(tmp_path: Path) -> None:
    ts = tracecore.open_many([tracecore.sample_path(), DATA / "seed000_stepstats.pbtxt"])
    check_exact_dictionaries(ts.events, "TraceSet events")
    frame = ts.to_pandas("events")
    assert len(frame) == ts.events.num_rows
    assert frame["scheduled_ns"].dtype.pyarrow_dtype == pa.int64()


def test_parquet_round_trip_has_exact_dictionaries(tmp_path: Path) -> None:
    t = tracecore.open(tracecore.sample_path())
    t.to_parquet(tmp_path / "pq")
    back = tracecore.open(tmp_path / "pq")
    for name, table in _tables(back).items():
        check_exact_dictionaries(table, f"parquet {name}")
    assert _counter(back.events, "op") == _counter(t.events, "op")
