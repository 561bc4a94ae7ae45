"""Events columns a format has no values for are not stored (EmptyFills, trace_tables.h).

XSpace and Chrome trace events have no op times of their own, no scheduling time and no memory
sizes: their importers leave those columns empty, and the export gives `op_start_ns` and
`op_end_ns` the buffers of `start_ns` and `end_ns`, `scheduled_ns` nulls and the two memory
sizes zeros, without a byte per row. The values are what the columns documented before; what
tracecore stores (Parquet, the cache) holds them in full and reads back the same.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import tracecore

DATA = Path(__file__).parent / "data"
UNSTORED = [
    DATA / "xspace" / "tf_keras_mlp_fit.xplane.pb",
    DATA / "xspace" / "jax_mlp2_tanh.xplane.pb",
    DATA / "chrome" / "torch_mlp_sgd.pt.trace.json",
    DATA / "chrome" / "jax_mlp2_tanh.trace.json.gz",
    DATA / "chrome" / "tf_keras_mlp_fit.trace.json.gz",
]


def _buffer(table: pa.Table, name: str, index: int) -> pa.Buffer | None:
    chunks = table.column(name).chunks
    assert len(chunks) == 1
    return chunks[0].buffers()[index]


def _check_values(events: pa.Table) -> None:
    n = events.num_rows
    assert n > 0
    assert events.column("op_start_ns").to_pylist() == events.column("start_ns").to_pylist()
    assert events.column("op_end_ns").to_pylist() == events.column("end_ns").to_pylist()
    assert events.column("scheduled_ns").null_count == n
    assert events.column("temp_memory_size").to_pylist() == [0] * n
    assert events.column("persistent_memory_size").to_pylist() == [0] * n
    assert events.column("temp_memory_size").null_count == 0


@pytest.mark.parametrize("path", UNSTORED, ids=lambda p: p.name)
def test_unstored_columns_share_or_zero(path: Path) -> None:
    t = tracecore.open(path)
    events = t.events
    _check_values(events)
    # The op times are the times' own buffers; the zero columns read one buffer of zeros.
    assert _buffer(events, "op_start_ns", 1).address == _buffer(events, "start_ns", 1).address
    assert _buffer(events, "op_end_ns", 1).address == _buffer(events, "end_ns", 1).address
    assert (_buffer(events, "temp_memory_size", 1).address
            == _buffer(events, "persistent_memory_size", 1).address)
    assert _buffer(events, "temp_memory_size", 0) is None  # no validity: zeros, not nulls
    zeros = _buffer(events, "temp_memory_size", 1)
    assert zeros.size >= 8 * events.num_rows
    assert bytes(zeros)[: 8 * events.num_rows] == bytes(8 * events.num_rows)


@pytest.mark.parametrize("path", UNSTORED[:3], ids=lambda p: p.name)
def test_stored_forms_hold_the_same_values(
    path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = tracecore.open(path)
    t.to_parquet(tmp_path / "pq")
    monkeypatch.setenv("TRACECORE_CACHE_DIR", str(tmp_path / "cache"))
    tracecore.open(path, cache=True)
    cached = tracecore.open(path, cache=True)
    assert cached.stats["loaded_from"] == "cache"
    for stored in (tracecore.open(tmp_path / "pq"), cached):
        _check_values(stored.events)
        assert stored.events.equals(t.events)
        assert stored.occupancy().equals(t.occupancy())


def test_stepstats_keeps_its_own_op_times() -> None:
    t = tracecore.open(DATA / "seed000_stepstats.pbtxt")
    events = t.events
    assert _buffer(events, "op_start_ns", 1).address != _buffer(events, "start_ns", 1).address
    assert events.column("scheduled_ns").null_count < events.num_rows
    # seed000 has events whose op end differs from their end: the column is its own.
    assert events.column("op_end_ns").to_pylist() != events.column("end_ns").to_pylist()
