"""Many traces as one dataset (issue 8): open_many, cross-rank queries, Parquet, Dask.

The run directory comes from tests/make_run_dir.py: 8 ranks x 8 steps of seed 000's first
2.5 ms plus a Horovod allreduce; rank 5 is delayed by 3 ms in step 2 and 1.25 ms in step 6.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import tracecore
from make_run_dir import ALLREDUCE, COLLECTIVE0_US, COLLECTIVE1_US, make_run_dir
from tracecore.collectives import collective_kind

RANKS, STEPS, DELAYED = 8, 8, 5
DELAYS_US = {2: 3_000, 6: 1_250}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return make_run_dir(
        tmp_path_factory.mktemp("run"),
        ranks=RANKS,
        steps=STEPS,
        delayed_rank=DELAYED,
        delays_us=DELAYS_US,
    )


@pytest.fixture(scope="module")
def glob_pattern(run):
    return os.path.join(run.path, "rank*", "step*.pbtxt")


@pytest.fixture(scope="module")
def ts(glob_pattern):
    return tracecore.open_many(glob_pattern)


@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    # dashboard_address=None still binds 8787 and warns (an error here) when that port is taken,
    # e.g. by another test run on the machine: ":0" takes any free port.
    with (
        distributed.LocalCluster(
            n_workers=2, processes=True, threads_per_worker=1, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster) as c,
    ):
        yield c


def _rows(table, **eq):
    mask = None
    for col, value in eq.items():
        m = pc.equal(table[col], value)
        mask = m if mask is None else pc.and_(mask, m)
    return table.filter(mask).to_pylist()


# -- open_many -------------------------------------------------------------------------------------
def test_every_table_the_core_lists_is_an_attribute(ts):
    from tracecore import _core

    for name in _core.TABLE_NAMES:
        assert getattr(ts, name) is ts.table(name)
        assert name in dir(ts)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        ts.nope  # noqa: B018


def test_listing_keys_and_tables(ts, run):
    traces = ts.traces
    assert traces.num_rows == RANKS * STEPS
    assert set(traces["status"].to_pylist()) == {"ok"}
    assert traces["error"].null_count == RANKS * STEPS
    assert traces.schema.field("trace_id").type == pa.int32()
    assert traces.schema.field("rank").type == pa.int64()
    assert traces.schema.field("step").type == pa.int64()
    assert sorted(zip(traces["rank"].to_pylist(), traces["step"].to_pylist(), strict=True)) == [
        (r, s) for r in range(RANKS) for s in range(STEPS)
    ]
    assert traces["n_events"].to_pylist() == [run.events_per_trace] * (RANKS * STEPS)
    assert set(traces["kind"].to_pylist()) == {"StepStats"}
    for row in traces.to_pylist()[:3]:
        assert row["size"] == os.stat(row["path"]).st_size
        assert row["path"].endswith(f"rank{row['rank']}/step{row['step']}.pbtxt")

    events = ts.events
    assert len(ts) == events.num_rows == RANKS * STEPS * run.events_per_trace
    assert events.column_names[:3] == ["trace_id", "rank", "step"]
    # one dictionary per column after concatenation
    node_names = events["node_name"]
    assert all(c.dictionary.equals(node_names.chunk(0).dictionary) for c in node_names.chunks)

    # one trace's rows are that trace's table with its clock shifted
    row = _rows(traces, rank=3, step=4)[0]
    single = tracecore.open(row["path"])
    mine = events.filter(pc.equal(events["trace_id"], row["trace_id"]))
    assert mine["node_name"].to_pylist() == single.events["node_name"].to_pylist()
    assert [s - row["offset_ns"] for s in single.events["start_ns"].to_pylist()] == mine[
        "start_ns"
    ].to_pylist()
    assert row["offset_ns"] == run.clock_offsets_ns[3] + 4 * run.period_ns
    assert ts.devices.num_rows == RANKS * STEPS * single.devices.num_rows
    assert ts.tensors.num_rows == RANKS * STEPS * single.tensors.num_rows
    records = ts.alloc_records
    assert pc.min(records["time_ns"]).as_py() >= -(10**9)  # aligned, not 1.6e18


def test_alignment_modes(glob_pattern, run, ts):
    def first_start(t):
        grouped = t.events.group_by(["rank", "step"]).aggregate([("start_ns", "min")])
        return {
            (r, s): v
            for r, s, v in zip(
                grouped["rank"].to_pylist(),
                grouped["step"].to_pylist(),
                grouped["start_ns_min"].to_pylist(),
                strict=True,
            )
        }

    assert set(first_start(ts).values()) == {0}
    raw = tracecore.open_many(glob_pattern, align=None, threads=1)
    assert first_start(raw)[(2, 3)] == run.clock_offsets_ns[2] + 3 * run.period_ns
    by_dict = tracecore.open_many(glob_pattern, align=run.clock_offsets_ns)
    expected = {(r, s): s * run.period_ns for r in range(RANKS) for s in range(STEPS)}
    assert first_start(by_dict) == expected
    table = pa.table(
        {"rank": list(run.clock_offsets_ns), "offset_ns": list(run.clock_offsets_ns.values())}
    )
    assert first_start(tracecore.open_many(glob_pattern, align=table)) == expected
    # waits do not depend on which common clock is used
    assert by_dict.collectives()["wait_ns"].to_pylist() == ts.collectives()["wait_ns"].to_pylist()
    with pytest.raises(ValueError, match="no clock offset for rank 7"):
        tracecore.open_many(glob_pattern, align={r: 0 for r in range(7)})
    with pytest.raises(ValueError, match="align must be"):
        tracecore.open_many(glob_pattern, align="first_collective")


def test_rank_and_step_from_regex_or_callable(run):
    paths = [p for p in run.files if "step1." in p][:3]
    named = tracecore.open_many(paths, rank=r"rank(?P<rank>\d+)/", step=lambda p: 100 + int(p[-7]))
    assert named.traces["rank"].to_pylist() == [0, 1, 2]
    assert named.traces["step"].to_pylist() == [101, 101, 101]
    as_text = tracecore.open_many(paths, rank=r"(rank\d+)", step=r"nomatch(\d+)")
    assert as_text.traces.schema.field("rank").type == pa.string()
    assert as_text.events["rank"].unique().to_pylist() == ["rank0", "rank1", "rank2"]
    assert as_text.traces["step"].null_count == 3


# -- cross-trace queries ---------------------------------------------------------------------------
def test_bad_arguments_name_themselves(ts, glob_pattern):
    n = ts.traces.num_rows
    with pytest.raises(IndexError, match=f"trace_id {n} out of range: this set has {n} files"):
        ts.trace(n)
    with pytest.raises(TypeError, match="trace_id must be an int"):
        ts.trace("0")
    assert ts.trace(0).events.num_rows > 0
    assert ts.trace(-1) is ts.trace(n - 1)  # negative ids count from the end
    with pytest.raises(IndexError, match="out of range"):
        ts.trace(-n - 1)
    with pytest.raises(ValueError, match=r"^rank: .* is not a valid regex \(missing \)"):
        tracecore.open_many(glob_pattern, rank=r"(rank\d+")
    with pytest.raises(TypeError, match="strict must be True or False"):
        tracecore.open_many(glob_pattern, strict="yes")
    with pytest.raises(TypeError, match="threads must be an int"):
        tracecore.open_many(glob_pattern, threads=2.0)
    with pytest.raises(ValueError, match="compression must be one of"):
        ts.to_parquet("never-written", compression="bogus")
    with pytest.raises(ValueError, match="compression must be one of"):
        ts.to_parquet("never-written", compression={"start_ns": "bogus"})
    assert not os.path.exists("never-written")
    with pytest.raises(TypeError, match="start_ns must be an int"):
        ts.window(0.5, 10)


def test_step_times(ts, run):
    st = ts.step_times()
    assert st.num_rows == RANKS * STEPS
    collective_ns = (COLLECTIVE0_US + COLLECTIVE1_US) * 1000
    for row in st.to_pylist():
        delay = run.delay_ns(row["step"])
        assert row["start_ns"] == 0
        # the collective ends together everywhere, so every rank's step takes the delay
        assert row["duration_ns"] == run.step_ns + delay
        if row["rank"] == DELAYED:
            assert (row["wait_ns"], row["compute_ns"]) == (0, run.step_ns + delay)
            assert row["collective_ns"] == collective_ns
        else:
            assert (row["wait_ns"], row["compute_ns"]) == (delay, run.step_ns)
            assert row["collective_ns"] == collective_ns + delay


def test_stragglers_find_the_injected_rank_and_lag(ts, run):
    s = ts.stragglers()
    assert s["step"].to_pylist() == list(range(STEPS))
    assert s["n_ranks"].to_pylist() == [RANKS] * STEPS
    lagging = {
        row["step"]: (row["slowest_rank"], row["lag_ns"])
        for row in s.to_pylist()
        if row["lag_ns"] > 0
    }
    assert lagging == {step: (DELAYED, d * 1000) for step, d in DELAYS_US.items()}
    assert s["median_ns"].to_pylist() == [float(run.step_ns)] * STEPS
    flagged = ts.stragglers(min_lag_ns=100_000)
    assert flagged["step"].to_pylist() == [2, 6]
    assert flagged["slowest_rank"].to_pylist() == [DELAYED, DELAYED]
    assert flagged["lag_ns"].to_pylist() == [3_000_000.0, 1_250_000.0]
    assert flagged["wait_ns"].to_pylist() == [0, 0]
    # by wall-clock duration the ranks are indistinguishable: they all finish with the allreduce
    assert set(ts.stragglers(by="duration")["lag_ns"].to_pylist()) == {0.0}


def test_collectives_waits_match_injected_delays(ts, run):
    c = ts.collectives()
    assert c.num_rows == RANKS * STEPS * 2
    assert set(c["op"].to_pylist()) == {"HorovodAllreduce"}
    assert set(c["collective"].to_pylist()) == {"allreduce"}
    assert set(c["n_ranks"].to_pylist()) == {RANKS}
    assert set(c["device"].to_pylist()) == {"/job:localhost/replica:0/task:0/device:GPU:0"}
    for row in c.to_pylist():
        delay = run.delay_ns(row["step"])
        if row["node_name"] == ALLREDUCE.format(0):
            assert row["wait_ns"] == (0 if row["rank"] == DELAYED else delay)
            assert row["last_rank"] == (DELAYED if delay else 0)
            assert row["duration_ns"] == COLLECTIVE0_US * 1000 + (
                0 if row["rank"] == DELAYED else delay
            )
        else:
            assert row["node_name"] == ALLREDUCE.format(1)
            assert row["wait_ns"] == 0
    # every rank's allreduce ends at the same instant
    for step in range(STEPS):
        ends = {r["end_ns"] for r in _rows(c, step=step, node_name=ALLREDUCE.format(0))}
        assert len(ends) == 1


def test_collective_detection_rules():
    assert collective_kind("HorovodAllreduce") == "allreduce"
    assert collective_kind("HorovodAllreduce_grads_3") == "allreduce"
    assert collective_kind("NcclAllReduce") == "allreduce"
    assert collective_kind("CollectiveReduceV2") == "allreduce"
    assert collective_kind("CollectiveReduceScatterV2") == "reducescatter"
    assert collective_kind("HorovodAllgather") == "allgather"
    assert collective_kind("CollectiveBcastRecvV2") == "broadcast"
    assert collective_kind("HorovodBroadcast") == "broadcast"
    assert collective_kind("MatMul") == "other"
    from tracecore.collectives import _NAME_RX, _OP_RX

    assert _OP_RX.fullmatch("HorovodAllreduce") and not _OP_RX.fullmatch("Identity")
    assert _NAME_RX.fullmatch("HorovodBroadcast_Variable_0")
    assert not _NAME_RX.fullmatch("DistributedGradientTape_Allreduce")  # a scope, not an op


def test_collectives_custom_pattern(ts):
    applies = ts.collectives(pattern=r"GradientDescent/update")
    assert applies.num_rows == RANKS * STEPS
    assert set(applies["collective"].to_pylist()) == {"other"}
    assert set(applies["wait_ns"].to_pylist()) == {0}
    assert ts.collectives().num_rows == RANKS * STEPS * 2  # the default is unchanged


# -- per-trace queries with rank/step --------------------------------------------------------------
def test_per_trace_queries(ts, run):
    per_trace = ts.op_stats()
    row = _rows(ts.traces, rank=1, step=6)[0]
    single = tracecore.open(row["path"]).op_stats()
    mine = per_trace.filter(pc.equal(per_trace["trace_id"], row["trace_id"]))
    assert mine.drop_columns(["trace_id", "rank", "step"]).to_pylist() == single.to_pylist()

    per_rank = ts.op_stats(per="rank")
    horovod = {r["rank"]: r for r in _rows(per_rank, key="HorovodAllreduce")}
    base = STEPS * (COLLECTIVE0_US + COLLECTIVE1_US) * 1000
    assert horovod[DELAYED]["total_ns"] == base
    assert horovod[0]["total_ns"] == base + sum(DELAYS_US.values()) * 1000
    assert horovod[0]["n_events"] == 2 * STEPS
    assert horovod[0]["mean_ns"] == horovod[0]["total_ns"] / (2 * STEPS)

    occ = ts.occupancy()
    assert occ.num_rows == ts.devices.num_rows
    occ_rank = ts.occupancy(per="rank")
    gpu = {
        r["rank"]: r for r in _rows(occ_rank, device="/job:localhost/replica:0/task:0/device:GPU:0")
    }
    assert gpu[0]["n_traces"] == STEPS
    per_trace_gpu = _rows(occ, rank=0, device="/job:localhost/replica:0/task:0/device:GPU:0")
    assert gpu[0]["busy_ns"] == sum(r["busy_ns"] for r in per_trace_gpu)
    assert gpu[0]["span_ns"] == sum(r["span_ns"] for r in per_trace_gpu)

    bins = ts.occupancy(bin_ns=500_000)
    first_bins = bins.group_by("trace_id").aggregate([("bin_start_ns", "min")])
    assert set(first_bins["bin_start_ns_min"].to_pylist()) == {0}  # aligned bins

    win = ts.window(0, 1_000)  # the first microsecond of every step
    trace0 = tracecore.open(ts.traces["path"][0].as_py())
    off = ts.traces["offset_ns"][0].as_py()
    assert (
        _rows(win, trace_id=0)
        and [r["event_id"] for r in _rows(win, trace_id=0)]
        == trace0.window(off, off + 1_000).to_pylist()
    )

    timeline, peaks = ts.replay()
    assert set(peaks["trace_id"].to_pylist()) == set(range(RANKS * STEPS))
    assert pc.min(timeline["time_ns"]).as_py() > -(10**9)


# -- Parquet ---------------------------------------------------------------------------------------
def test_partitioned_parquet_queried_by_duckdb(ts, run, tmp_path):
    duckdb = pytest.importorskip("duckdb")
    import pyarrow.dataset as pads

    out = ts.to_parquet(tmp_path / "pq", partition_by=("rank",))
    assert sorted(p.name for p in (out / "events").iterdir()) == [f"rank={r}" for r in range(RANKS)]
    assert (out / "traces.parquet").exists() and (out / "collectives.parquet").exists()
    with pytest.raises(FileExistsError):
        ts.to_parquet(out)

    back = pads.dataset(out / "events", partitioning="hive").to_table()
    assert back.num_rows == ts.events.num_rows

    events = str(out / "events" / "**" / "*.parquet")
    con = duckdb.connect()
    per_rank = con.execute(
        f"SELECT rank, count(*) AS n, sum(end_ns - start_ns) AS busy "
        f"FROM read_parquet('{events}', hive_partitioning = true) GROUP BY rank ORDER BY rank"
    ).fetchall()
    expected = ts.events.group_by("rank").aggregate([("event_id", "count")]).sort_by("rank")
    assert [(r, n) for r, n, _ in per_rank] == list(
        zip(expected["rank"].to_pylist(), expected["event_id_count"].to_pylist(), strict=True)
    )
    dur = pc.subtract(ts.events["end_ns"], ts.events["start_ns"])
    assert sum(b for _, _, b in per_rank) == pc.sum(dur).as_py()

    # across ranks: who reached the first allreduce last in each step, and how much later
    late = con.execute(
        f"SELECT step, arg_max(rank, start_ns), max(start_ns) - min(start_ns) "
        f"FROM read_parquet('{events}', hive_partitioning = true) "
        f"WHERE node_name = '{ALLREDUCE.format(0)}' "
        f"GROUP BY step HAVING max(start_ns) > min(start_ns) "
        f"ORDER BY step"
    ).fetchall()
    assert late == [(step, DELAYED, d * 1000) for step, d in sorted(DELAYS_US.items())]
    waits = con.execute(
        f"SELECT rank, sum(wait_ns) FROM '{out / 'collectives.parquet'}' "
        f"GROUP BY rank ORDER BY rank"
    ).fetchall()
    assert waits == [
        (r, 0 if r == DELAYED else sum(DELAYS_US.values()) * 1000) for r in range(RANKS)
    ]


def test_empty_tables_take_their_schema_from_the_core(monkeypatch):
    from tracecore import _core
    from tracecore.keying import empty_table, keyed_table

    t = tracecore.open(tracecore.sample_path())

    def no_parse(*args, **kwargs):
        raise AssertionError("an empty table's schema must not come from a parse")

    monkeypatch.setattr(_core, "open_file", no_parse)
    monkeypatch.setattr(_core, "open_bytes", no_parse)
    for name in _core.TABLE_NAMES:
        parsed = (t.events if name == "events" else t.table(name)).schema
        assert _core.schema(name) is not None
        expected = keyed_table(
            parsed.empty_table(), name, 0, None, None, 0, pa.int64(), pa.string()
        )
        empty = empty_table(name, pa.int64(), pa.string())
        assert empty.num_rows == 0
        assert empty.schema.equals(expected.schema, check_metadata=True), name
    assert {"forward_scope", "phase"} <= set(empty_table("events").column_names)
    with pytest.raises(KeyError, match="no table 'nope'"):
        empty_table("nope")
    with pytest.raises(KeyError):
        _core.schema("nope")


# -- errors ----------------------------------------------------------------------------------------
def test_corrupted_file_is_reported_and_the_rest_load(run, tmp_path):
    run_dir = Path(shutil.copytree(run.path, tmp_path / "run"))
    bad = run_dir / "rank3" / "step4.pbtxt"
    text = bad.read_text()
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if "all_start_micros" in ln)
    bad.write_text(text.replace("all_start_micros: ", "all_start_micros: oops", 1))

    ts = tracecore.open_many(run_dir)  # a directory: every *.pbtxt below it (not manifest.json)
    traces = ts.traces
    assert traces.num_rows == RANKS * STEPS
    errors = ts.errors.to_pylist()
    assert len(errors) == 1
    assert errors[0]["path"] == str(bad) and (errors[0]["rank"], errors[0]["step"]) == (3, 4)
    assert errors[0]["status"] == "error" and errors[0]["kind"] is None
    assert errors[0]["error"].startswith(f"{bad}: line {line}, column ")
    assert "expected an integer for field 'all_start_micros'" in errors[0]["error"]
    assert errors[0]["size"] == bad.stat().st_size
    assert traces["status"].to_pylist().count("ok") == RANKS * STEPS - 1
    assert len(ts) == (RANKS * STEPS - 1) * run.events_per_trace
    assert _rows(ts.stragglers(), step=4)[0]["n_ranks"] == RANKS - 1
    assert ts.stragglers(min_lag_ns=0)["lag_ns"].to_pylist()[2] == 3_000_000.0
    with pytest.raises(ValueError, match="failed to load"):
        ts.trace(errors[0]["trace_id"])

    with pytest.raises(tracecore.TraceFormatError) as info:
        tracecore.open_many(run_dir, strict=True)
    assert str(bad) in str(info.value)
    with pytest.raises(ValueError, match="no files match"):
        tracecore.open_many(str(run_dir / "nothing*.pbtxt"))


# -- Dask ------------------------------------------------------------------------------------------
def test_dask_matches_open_many(client, ts, glob_pattern, tmp_path, run):
    import tracecore.dask

    df = tracecore.dask.read_traces(glob_pattern)
    assert df.npartitions == RANKS * STEPS
    df = df.assign(duration_ns=df.end_ns - df.start_ns)
    aggs = {"event_id": "count", "duration_ns": "sum", "start_ns": "min", "end_ns": "max"}
    per_trace = df.groupby(["trace_id", "rank", "step"]).agg(aggs, split_out=1).compute()
    per_trace = per_trace.sort_index()
    # the same trace ids, ranks and steps as open_many
    assert list(per_trace.index) == list(
        zip(
            ts.traces["trace_id"].to_pylist(),
            ts.traces["rank"].to_pylist(),
            ts.traces["step"].to_pylist(),
            strict=True,
        )
    )
    got = per_trace.groupby(level="rank").agg(
        {"event_id": "sum", "duration_ns": "sum", "start_ns": "min", "end_ns": "max"}
    )

    ev = ts.events
    ev = ev.append_column("duration_ns", pc.subtract(ev["end_ns"], ev["start_ns"]))
    want = (
        ev.group_by("rank")
        .aggregate(
            [("event_id", "count"), ("duration_ns", "sum"), ("start_ns", "min"), ("end_ns", "max")]
        )
        .sort_by("rank")
    )
    assert list(got.index) == want["rank"].to_pylist() == list(range(RANKS))
    assert list(got["event_id"]) == want["event_id_count"].to_pylist()
    assert list(got["duration_ns"]) == want["duration_ns_sum"].to_pylist()
    assert list(got["start_ns"]) == want["start_ns_min"].to_pylist() == [0] * RANKS
    assert list(got["end_ns"]) == want["end_ns_max"].to_pylist()

    # a query run in the workers, and the per-file listing with a corrupted file
    two_ranks = [p for p in run.files if f"rank0{os.sep}" in p or f"rank{DELAYED}{os.sep}" in p]
    stats = tracecore.dask.read_traces(two_ranks, lambda t: t.op_stats("op")).compute()
    assert sorted(set(stats["rank"])) == [0, DELAYED]
    horovod = stats[stats.key == "HorovodAllreduce"].groupby("rank").total_ns.sum()
    assert horovod[DELAYED] == STEPS * (COLLECTIVE0_US + COLLECTIVE1_US) * 1000
    assert horovod[0] == horovod[DELAYED] + sum(DELAYS_US.values()) * 1000

    paths = run.files[:4]
    bad = tmp_path / "rank9" / "step0.pbtxt"
    bad.parent.mkdir()
    bad.write_text("dev_stats { node_stats { all_start_micros: 12 ")
    listing = tracecore.dask.read_traces(paths + [str(bad)], "traces").compute()
    assert list(listing.status) == ["ok"] * 4 + ["error"]
    assert str(bad) in listing.error.iloc[4]
    assert list(listing["rank"]) == [0, 0, 0, 0, 9]
    lenient = tracecore.dask.read_traces(paths + [str(bad)], strict=False)
    assert len(lenient) == 4 * run.events_per_trace


# --------------------------------------------------------------------------------------------
# Summed aggregates are checked: Arrow's hash sum wraps around int64 silently
REGRESSIONS = Path(__file__).resolve().parent / "data" / "regressions"


def test_summed_aggregates_that_overflow_raise(tmp_path: Path) -> None:
    # One event of 5e18 ns per trace: each trace's total fits int64, two traces' sum does not
    # (Arrow's hash sum gave -8446744073709551616).
    paths = []
    for rank in (0, 1):
        (tmp_path / f"r{rank}").mkdir()
        paths.append(tmp_path / f"r{rank}" / "a.pbtxt")
        shutil.copy(REGRESSIONS / "dataset_overflow_one_event.pbtxt", paths[-1])
    ts = tracecore.open_many(paths)
    assert ts.op_stats(per="trace")["total_ns"].to_pylist() == [5 * 10**18, 5 * 10**18]
    for per in ("all", "rank", "step"):
        with pytest.raises(OverflowError, match="total_ns sum overflows int64"):
            ts.op_stats(per=per)
        with pytest.raises(OverflowError, match="busy_ns sum overflows int64"):
            ts.occupancy(per=per)
    # One trace: the total (above 2^53) stays exact; the mean is the nearest double.
    row = tracecore.open_many(paths[:1]).op_stats(per="all").to_pylist()[0]
    assert row["total_ns"] == 5 * 10**18 and row["mean_ns"] == 5e18


def test_checked_aggregate_is_exact_at_the_int64_bounds() -> None:
    from tracecore._arrow import checked_aggregate

    big = 2**62
    table = pa.table({
        "k": ["a", "a", "b", "b", "c", "c", "d"],
        "v": pa.array([big, big - 1, -big, -big, big, big, None], pa.int64()),
    })
    agg = checked_aggregate(table.slice(0, 4), ["k"], [("v", "sum")])
    assert dict(zip(agg["k"].to_pylist(), agg["v_sum"].to_pylist(), strict=True)) == {
        "a": 2**63 - 1,
        "b": -(2**63),
    }
    assert agg.column_names == ["k", "v_sum"]
    with pytest.raises(OverflowError, match="v sum overflows int64"):
        checked_aggregate(table, ["k"], [("v", "sum")])
    nulls = checked_aggregate(table.slice(6), ["k"], [("v", "sum"), ("v", "count")])
    assert nulls.to_pylist() == [{"k": "d", "v_sum": None, "v_count": 0}]
