"""A Parquet export and a cache entry are complete traces: after the source is deleted, every
query and every CLI command gives on them what it gave on the source. The native core of a
stored trace is built from its tables (``tracecore.stored.core_from_tables``), which checks
every value it takes: tables that tracecore did not write are TraceFormatErrors naming the
table and column."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tracecore
from tracecore import cli, stored
from tracecore.parquet import META_FILE, _meta_checksum
from tracecore.stored import compact_dictionaries

DATA = Path(__file__).parent / "data"
SOURCES = {
    "stepstats_sample": Path(tracecore.sample_path()),
    "runmetadata": DATA / "seed001_runmetadata.pbtxt",
    "xspace": DATA / "xspace" / "tf_keras_mlp_fit.xplane.pb",
    "kineto": DATA / "chrome" / "torch_mlp_sgd.pt.trace.json",
}


@pytest.fixture(autouse=True)
def cache_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TRACECORE_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def outcome(f: Callable[[], Any]) -> Any:
    """What a query gives, as plain values (tables by their rows: two traces' dictionaries
    number their strings differently), or the error it raises."""
    try:
        value = f()
    except Exception as e:  # noqa: BLE001 - the same error on both sides is the same answer
        return ("raises", type(e).__name__, str(e))
    if isinstance(value, (pa.Table, pa.Array, pa.ChunkedArray)):
        return value.to_pylist()
    if isinstance(value, tracecore.MemoryReplay):
        return (value.source, value.peaks.to_pylist(), value.timeline.to_pylist())
    return value


# The queries that raise on the source, by fixture (a replay a format has no records for): any
# other error on the source is a failure, not an answer to compare.
EXPECTED_RAISES: dict[str, set[str]] = {
    "stepstats_sample": set(),
    "runmetadata": set(),
    "xspace": set(),
    "kineto": set(),
}


def answers(t: tracecore.Trace) -> dict[str, Any]:
    """Every table and query result of ``t``."""
    out: dict[str, Any] = {name: outcome(lambda n=name: t.table(n)) for name in t.table_names}
    out["events_with_names"] = outcome(lambda: t.events)
    for by in ("op", "node_name", "device"):
        out[f"op_stats/{by}"] = outcome(lambda b=by: t.op_stats(by=b))
    out["occupancy"] = outcome(t.occupancy)
    out["occupancy/bins"] = outcome(lambda: t.occupancy(bin_ns=1_000_000))
    out["overlaps"] = outcome(t.overlaps)
    out["window"] = outcome(lambda: t.window(0, 2**62))
    for source in ("records", "tensors", "in_use"):
        out[f"replay/{source}"] = outcome(lambda s=source: t.replay(source=s))
    out["scopes"] = outcome(t.scopes)
    out["op_stats/kind"] = outcome(lambda: t.op_stats(by="kind"))
    steps = outcome(t.step_times)
    out["step_times"] = steps
    if isinstance(steps, list) and steps:
        step = steps[-1]["step"]
        for source in ("records", "tensors"):
            out[f"replay/{source}/step"] = outcome(lambda s=source: t.replay(source=s, step=step))
    out["kind/format"] = (t.kind, t.format)
    return out


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_queries_on_stored_tables_match_the_source_once_it_is_gone(
    name: str, tmp_path: Path
) -> None:
    source = tmp_path / SOURCES[name].name
    shutil.copy(SOURCES[name], source)
    original = tracecore.open(source, cache=True)  # parses and writes the cache entry
    expected = answers(original)
    assert expected["events"] and expected["op_stats/op"], "the fixture has events"
    raised = {k for k, v in expected.items() if isinstance(v, tuple) and v[:1] == ("raises",)}
    assert raised == EXPECTED_RAISES[name], {k: expected[k] for k in raised}
    out = original.to_parquet(tmp_path / "pq")
    cached = tracecore.open(source, cache=True)
    assert cached.stats["loaded_from"] == "cache"
    source.unlink()
    for reopened in (tracecore.open(out), cached):
        assert reopened._core is None
        got = answers(reopened)
        assert reopened._core is not None
        for key in expected:
            assert got[key] == expected[key], f"{name}: {key} differs on the stored trace"


def normalized_info(text: str) -> list[str]:
    # The header names the file and how it was loaded: the rest must be the same.
    return [
        line for line in text.splitlines() if not line.startswith(("file ", "parsed ", "loaded "))
    ]


COMMANDS = [
    ["info"],
    ["top"],
    ["top", "--by", "node_name"],
    ["top", "--by", "device"],
    ["top", "--by", "kind"],
    ["top", "--by", "scope"],
    ["top", "--by", "phase"],
    ["top", "--by", "tower"],
    ["memory"],
    ["occupancy"],
    ["steps"],
    ["stragglers"],
    ["collectives"],
    ["steps", "--format", "json"],
    ["memory", "--format", "csv"],
]


def run_commands(
    capsys: pytest.CaptureFixture[str], path: Path, chrome: Path, *extra: str
) -> list[Any]:
    """Every command's exit code and output on ``path`` (``extra``: options for each)."""
    results: list[Any] = []
    capsys.readouterr()
    for command in COMMANDS:
        code = cli.main([command[0], str(path), *command[1:], *extra])
        out, err = capsys.readouterr()
        out = out.replace(str(path), "<PATH>")  # rows of --format csv/json name what was opened
        results.append((command, code, normalized_info(out) if command == ["info"] else out))
    code = cli.main(["diff", str(path), str(path), "--format", "json"])
    results.append(("diff", code, capsys.readouterr()[0]))
    code = cli.main(["export", str(path), "--chrome", str(chrome), *extra])
    capsys.readouterr()
    results.append(("chrome", code, json.loads(chrome.read_text())))
    return results


@pytest.mark.parametrize("name", ["stepstats_sample", "xspace", "kineto"])
def test_every_cli_command_on_a_parquet_export_matches_the_source(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / SOURCES[name].name
    shutil.copy(SOURCES[name], source)
    export = tmp_path / "pq"
    assert cli.main(["export", str(source), "--parquet", str(export)]) == 0

    def run_all(path: Path, chrome: Path) -> list[Any]:
        return run_commands(capsys, path, chrome)

    expected = run_all(source, tmp_path / "a.json")
    assert all(r[1] == 0 for r in expected), expected
    source.unlink()
    got = run_all(export, tmp_path / "b.json")
    for e, g in zip(expected, got, strict=True):
        assert g == e, f"{name}: {e[0]} differs on the Parquet export"


def test_events_parquet_keeps_the_name_columns(tmp_path: Path) -> None:
    t = tracecore.open(SOURCES["stepstats_sample"])
    out = t.to_parquet(tmp_path / "pq")
    meta = json.loads((out / META_FILE).read_text())
    events = pq.read_table(out / meta["tables"]["events"])
    assert events.column_names == t.events.column_names
    assert events["phase"].to_pylist() == t.events["phase"].to_pylist()
    assert events["forward_scope"].to_pylist() == t.events["forward_scope"].to_pylist()
    back = tracecore.open(out)
    assert back.table("events").column_names == t.table("events").column_names
    assert back.events["phase"].to_pylist() == t.events["phase"].to_pylist()


# --- tables tracecore did not write --------------------------------------------------------


def stored_tables(name: str = "stepstats_sample") -> tuple[dict[str, pa.Table], dict[str, Any]]:
    t = tracecore.open(SOURCES[name])
    tables = {n: t.table(n) for n in t.table_names}
    return tables, {"kind": t.kind, "format": t.format}


def with_column(table: pa.Table, column: str, values: Any) -> pa.Table:
    i = table.column_names.index(column)
    return table.set_column(i, column, values if isinstance(values, pa.Array) else pa.array(values))


def rewrite_stored_table(out: Path, name: str, change: Callable[[pa.Table], pa.Table]) -> None:
    """Rewrites table ``name`` of the Parquet export ``out`` as ``change`` makes it, with the
    file's size and CRC-32C and the metadata checksum recomputed: a hand-made export that
    passes every checksum."""
    meta = json.loads((out / META_FILE).read_text())
    file_name = meta["tables"][name]
    pq.write_table(change(pq.read_table(out / file_name)), out / file_name)
    size, crc = stored.file_crc32c(out / file_name)
    meta["files"][file_name] = {"bytes": size, "crc32c": crc}
    meta["checksum"] = _meta_checksum(meta)
    (out / META_FILE).write_text(json.dumps(meta))


def with_value(
    column: str, row: int, value: Callable[[Any], Any], type_: pa.DataType
) -> Callable[[pa.Table], pa.Table]:
    """A change setting ``column[row]`` to ``value(old)``."""

    def change(table: pa.Table) -> pa.Table:
        values = table[column].to_pylist()
        values[row] = value(values[row])
        return with_column(table, column, pa.array(values, type_))

    return change


def test_core_from_tables_answers_as_the_parse() -> None:
    tables, meta = stored_tables()
    core = stored.core_from_tables(tables, meta)
    assert core.kind == "StepStats"
    assert core.num_events == tables["events"].num_rows
    t = tracecore.Trace.from_core(core)
    for name, table in tables.items():
        assert t.table(name).to_pylist() == table.to_pylist(), name


def test_tables_in_batches_with_their_own_dictionaries() -> None:
    tables, meta = stored_tables("kineto")
    split = {}
    for name, table in tables.items():
        cut = table.num_rows // 3
        parts = [table.slice(0, cut), table.slice(cut)]
        split[name] = pa.concat_tables([compact_dictionaries(part) for part in parts])
    assert split["events"]["node_name"].num_chunks == 2
    first, second = split["events"]["node_name"].chunks
    assert first.dictionary.to_pylist() != second.dictionary.to_pylist()
    t = tracecore.Trace.from_core(stored.core_from_tables(split, meta))
    for name, table in tables.items():
        assert t.table(name).to_pylist() == table.to_pylist(), name


def mutations() -> list[tuple[str, Callable[[dict[str, pa.Table]], None], str]]:
    def device_index_out_of_range(tables: dict[str, pa.Table]) -> None:
        events = tables["events"]
        values = events["device_index"].to_pylist()
        values[3] = 10_000
        tables["events"] = with_column(events, "device_index", pa.array(values, pa.int32()))

    def negative_event_ref(tables: dict[str, pa.Table]) -> None:
        tensors = tables["tensors"]
        values = tensors["event_id"].to_pylist()
        values[0] = -1
        tables["tensors"] = with_column(tensors, "event_id", pa.array(values, pa.int64()))

    def event_id_out_of_place(tables: dict[str, pa.Table]) -> None:
        events = tables["events"]
        values = events["event_id"].to_pylist()
        values[5], values[6] = values[6], values[5]
        tables["events"] = with_column(events, "event_id", pa.array(values, pa.int64()))

    def unknown_kind(tables: dict[str, pa.Table]) -> None:
        devices = tables["devices"]
        values = devices["kind"].to_pylist()
        values[0] = "warp_drive"
        tables["devices"] = with_column(devices, "kind", pa.array(values, pa.string()))

    def wrong_type(tables: dict[str, pa.Table]) -> None:
        events = tables["events"]
        tables["events"] = with_column(
            events, "start_ns", events["start_ns"].cast(pa.float64(), safe=False)
        )

    def null_in_required(tables: dict[str, pa.Table]) -> None:
        events = tables["events"]
        values = events["end_ns"].to_pylist()
        values[2] = None
        tables["events"] = with_column(events, "end_ns", pa.array(values, pa.int64()))

    def missing_column(tables: dict[str, pa.Table]) -> None:
        tables["events"] = tables["events"].drop_columns(["timeline_label"])

    def dictionary_index_out_of_range(tables: dict[str, pa.Table]) -> None:
        events = tables["events"]
        chunk = events["op"].combine_chunks()
        indices = chunk.indices.to_pylist()
        indices[1] = len(chunk.dictionary) + 7
        bad = pa.DictionaryArray.from_arrays(
            pa.array(indices, pa.int32()), chunk.dictionary, safe=False
        )
        tables["events"] = with_column(events, "op", bad)

    def not_utf8(tables: dict[str, pa.Table]) -> None:
        devices = tables["devices"]
        names = pa.array([b"\xff\xfe"] * devices.num_rows, pa.binary()).view(pa.string())
        tables["devices"] = with_column(devices, "device", names.dictionary_encode())

    def null_inside_a_list(tables: dict[str, pa.Table]) -> None:
        tensors = tables["tensors"]
        shapes = tensors["shape"].to_pylist()
        row = next(i for i, shape in enumerate(shapes) if shape)
        shapes[row] = [None, *shapes[row][1:]]
        tables["tensors"] = with_column(tensors, "shape", pa.array(shapes, pa.list_(pa.int64())))

    def n_events_past_the_events(tables: dict[str, pa.Table]) -> None:
        devices = tables["devices"]
        values = devices["n_events"].to_pylist()
        values[0] += 10_000_000
        tables["devices"] = with_column(devices, "n_events", pa.array(values, pa.int64()))

    def n_events_negative(tables: dict[str, pa.Table]) -> None:
        devices = tables["devices"]
        values = devices["n_events"].to_pylist()
        values[0], values[1] = -1, values[1] + values[0] + 1
        tables["devices"] = with_column(devices, "n_events", pa.array(values, pa.int64()))

    def n_events_moved(tables: dict[str, pa.Table]) -> None:
        devices = tables["devices"]
        values = devices["n_events"].to_pylist()
        values[0], values[1] = values[0] - 1, values[1] + 1
        tables["devices"] = with_column(devices, "n_events", pa.array(values, pa.int64()))

    return [
        ("n_events", n_events_past_the_events, r"table devices, column n_events: row 0 holds "),
        ("n_events_negative", n_events_negative, r"table devices, column n_events: row 0 holds -1"),
        (
            "n_events_moved",
            n_events_moved,
            r"table events, column device_index: row \d+ holds 0, but devices.n_events puts it "
            r"in block 1",
        ),
        (
            "device_index",
            device_index_out_of_range,
            r"table events, column device_index: row 3 refers to 10000",
        ),
        ("event_ref", negative_event_ref, r"table tensors, column event_id: row 0 refers to -1"),
        ("event_id", event_id_out_of_place, r"table events, column event_id: row 5 holds 6"),
        ("kind", unknown_kind, r"table devices, column kind: device kind 'warp_drive'"),
        ("type", wrong_type, r"table events, column start_ns: has Arrow type 'g', expected 'l'"),
        ("null", null_in_required, r"table events, column end_ns: a null at row 2"),
        ("missing", missing_column, r"table events, column timeline_label: missing"),
        (
            "dict_index",
            dictionary_index_out_of_range,
            r"table events, column op: row 1 indexes entry",
        ),
        ("utf8", not_utf8, r"table devices, column device \(dictionary\): entry 0 is not UTF-8"),
        ("list_null", null_inside_a_list, r"table tensors, column shape \(values\): a null value"),
    ]


@pytest.mark.parametrize(
    ("what", "mutate", "message"), mutations(), ids=[m[0] for m in mutations()]
)
def test_tables_tracecore_did_not_write_are_format_errors(
    what: str, mutate: Callable[[dict[str, pa.Table]], None], message: str
) -> None:
    tables, meta = stored_tables()
    mutate(tables)
    with pytest.raises(tracecore.TraceFormatError, match=message):
        stored.core_from_tables(tables, meta)


def test_a_hostile_parquet_export_with_good_checksums_is_a_format_error(tmp_path: Path) -> None:
    """A directory rewritten by hand (checksums recomputed) opens, and its first query says
    what is wrong instead of indexing past a table."""
    t = tracecore.open(SOURCES["stepstats_sample"])
    out = t.to_parquet(tmp_path / "pq")
    bad = t.events.num_rows + 5
    rewrite_stored_table(out, "tensors", with_value("event_id", 0, lambda _: bad, pa.int64()))
    back = tracecore.open(out)
    assert back.tensors["event_id"][0].as_py() == t.events.num_rows + 5  # tables are as stored
    with pytest.raises(tracecore.TraceFormatError, match=r"table tensors, column event_id: row 0"):
        back.replay(source="tensors")


def test_unknown_kind_or_format_of_the_metadata_is_a_format_error() -> None:
    tables, meta = stored_tables()
    with pytest.raises(tracecore.TraceFormatError, match="trace kind 'Bogus'"):
        stored.core_from_tables(tables, {**meta, "kind": "Bogus"})
    with pytest.raises(tracecore.TraceFormatError, match="trace format 'yaml'"):
        stored.core_from_tables(tables, {**meta, "format": "yaml"})
    with pytest.raises(tracecore.TraceFormatError, match="trace kind '' is not"):
        stored.core_from_tables(tables, {**meta, "kind": ""})
    with pytest.raises(tracecore.TraceFormatError, match="StepStats trace is not read from xspace"):
        stored.core_from_tables(tables, {**meta, "format": "xspace"})


def test_link_event_references_are_checked() -> None:
    tables, meta = stored_tables("kineto")
    links = tables["links"]
    assert links.num_rows > 0
    values = links["to_event_id"].to_pylist()
    row = next(i for i, v in enumerate(values) if v is not None)
    values[row] = tables["events"].num_rows
    tables["links"] = with_column(links, "to_event_id", pa.array(values, pa.int64()))
    with pytest.raises(
        tracecore.TraceFormatError, match=rf"table links, column to_event_id: row {row} "
    ):
        stored.core_from_tables(tables, meta)


def test_tables_without_stepstats_steps_get_them_numbered(tmp_path: Path) -> None:
    """An export written before StepStats steps were numbered has step_id all null: the core
    built from it numbers them as the parse does (repeated device blocks)."""
    path = tmp_path / "three_steps.pbtxt"
    path.write_text((DATA / "seed000_stepstats.pbtxt").read_text() * 3)
    t = tracecore.open(path)
    assert t.step_times()["step"].to_pylist() == [0, 1, 2]
    tables = {n: t.table(n) for n in t.table_names}
    events = tables["events"]
    tables["events"] = with_column(events, "step_id", pa.nulls(events.num_rows, pa.int64()))
    meta = {"kind": t.kind, "format": t.format}
    back = tracecore.Trace.from_core(stored.core_from_tables(tables, meta))
    assert back.table("events")["step_id"].to_pylist() == events["step_id"].to_pylist()
    assert back.step_times().to_pylist() == t.step_times().to_pylist()


def test_python_paths_check_a_hostile_export_before_reading_it(tmp_path: Path) -> None:
    """Paths that read the tables in Python (time per device kind, the exports, the in_use
    replay, steps, the derived event columns, the binned occupancy) build the checked core
    first."""
    t = tracecore.open(SOURCES["stepstats_sample"])
    out = t.to_parquet(tmp_path / "pq")
    derived = ["forward_scope", "phase", "device_kind"]
    change = with_value("device_index", 0, lambda _: 99, pa.int32())
    rewrite_stored_table(out, "events", lambda e: change(e).drop_columns(derived))
    message = "table events, column device_index: row 0 refers to 99"
    queries: list[Callable[[tracecore.Trace], object]] = [
        lambda u: u.op_stats(by="kind"),
        lambda u: u.to_chrome_trace(tmp_path / "x.json"),
        lambda u: u.to_perfetto(tmp_path / "x.pftrace"),
        lambda u: u.replay(source="in_use"),
        lambda u: u.step_times(),
        lambda u: u.events,
        lambda u: u.occupancy(bin_ns=1_000_000),
    ]
    for query in queries:
        with pytest.raises(tracecore.TraceFormatError, match=message):
            query(tracecore.open(out))


def test_a_hostile_block_count_is_a_format_error_not_a_crash(tmp_path: Path) -> None:
    """devices.n_events past the events made occupancy(bin_ns=...) read past the table."""
    t = tracecore.open(SOURCES["stepstats_sample"])
    out = t.to_parquet(tmp_path / "pq")
    rewrite_stored_table(
        out, "devices", with_value("n_events", 0, lambda n: n + 10_000_000, pa.int64())
    )
    with pytest.raises(tracecore.TraceFormatError, match="table devices, column n_events: row 0"):
        tracecore.open(out).occupancy(bin_ns=1_000_000)


@pytest.mark.parametrize("name", ["stepstats_sample", "kineto"])
def test_every_cli_command_through_the_cache_matches_the_source(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--cache: the first run writes the entry, the second reads it; both print what the
    source gives."""
    source = tmp_path / SOURCES[name].name
    shutil.copy(SOURCES[name], source)
    expected = run_commands(capsys, source, tmp_path / "a.json")
    assert all(r[1] == 0 for r in expected), expected
    for attempt in ("writes", "reads"):
        got = run_commands(capsys, source, tmp_path / f"{attempt}.json", "--cache")
        for e, g in zip(expected, got, strict=True):
            assert g == e, f"{name}: {e[0]} differs when the cache {attempt}"
