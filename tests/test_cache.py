"""The persisted index: open(path, cache=True) reads an unchanged file's tables from the cache,
reparses a changed one, and never serves stale or corrupt entries."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pyarrow as pa
import pytest

import tracecore
from tracecore import cache

HERE = Path(__file__).resolve().parent
SEED0 = HERE / "data" / "seed000_stepstats.pbtxt"
SEED1 = HERE / "data" / "seed001_runmetadata.pbtxt"
BIG = HERE.parent / "bench" / "data" / "seed000_stepstats_200MB.pbtxt"


@pytest.fixture(autouse=True)
def cache_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("TRACECORE_CACHE_DIR", str(root))
    return root


@pytest.fixture
def seed1(tmp_path: Path) -> Path:
    path = tmp_path / "seed1.pbtxt"
    shutil.copy(SEED1, path)
    return path


def decoded(table: pa.Table) -> pa.Table:
    columns = [
        c.cast(c.type.value_type) if pa.types.is_dictionary(c.type) else c for c in table.columns
    ]
    return pa.Table.from_arrays(columns, names=table.column_names)


def assert_same_tables(a: tracecore.Trace, b: tracecore.Trace) -> None:
    for name in a.table_names:
        assert b.table(name).schema.equals(a.table(name).schema), name
        assert decoded(b.table(name)).equals(decoded(a.table(name))), name


def entries(root: Path) -> list[Path]:
    return sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []


def test_second_open_reads_the_cache(seed1: Path, cache_root: Path) -> None:
    first = tracecore.open(seed1, cache=True)
    assert first._core is not None and "loaded_from" not in first.stats  # parsed
    [entry] = entries(cache_root)
    assert entry == cache.entry_dir(seed1)
    assert sorted(p.name for p in entry.iterdir()) == sorted(
        [f"{n}.arrow" for n in first.table_names] + ["manifest.json"]
    )

    second = tracecore.open(seed1, cache=True)
    assert isinstance(second, tracecore.Trace) and second._rebuild_core is not None  # stored
    assert second._core is None
    assert second.stats["loaded_from"] == "cache"
    assert second.stats["events"] == 292 and len(second) == 292
    assert (second.kind, second.format, second.source) == ("RunMetadata", "text", str(seed1))
    assert_same_tables(first, second)
    assert "from cache" in repr(second)
    # Read, not mapped (a cache file truncated later cannot fault the trace): no mapping of
    # the cache files is left behind.
    with open("/proc/self/maps") as f:
        assert not any(str(entry) in line for line in f)


def test_cached_trace_queries_run_on_the_stored_tables(seed1: Path) -> None:
    parsed = tracecore.open(seed1, cache=True)
    cached = tracecore.open(seed1, cache=True)
    assert cached.occupancy().to_pylist() == parsed.occupancy().to_pylist()
    assert cached._core is not None
    by_node = cached.op_stats(by="node_name").to_pylist()
    assert by_node == parsed.op_stats(by="node_name").to_pylist()
    peaks = cached.replay(source="tensors").peak("GPU_0_bfc")
    assert (peaks["peak_bytes"], peaks["peak_time_ns"], peaks["live_tensors"]) == (
        874346764,
        1552507523229828000,
        50,
    )
    assert cached.replay().peak("GPU_0_bfc")["peak_bytes"] == 829911552
    assert cached.overlaps().num_rows == parsed.overlaps().num_rows


def test_cached_trace_answers_for_its_tables_once_the_source_changed(seed1: Path) -> None:
    parsed = tracecore.open(seed1, cache=True)
    cached = tracecore.open(seed1, cache=True)
    st = seed1.stat()
    os.utime(seed1, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    assert cached.events.num_rows == 292  # the mapped tables are still the ones opened
    assert cached.window(0, 2**62).to_pylist() == parsed.window(0, 2**62).to_pylist()


def test_touching_the_file_reparses_and_replaces_the_entry(seed1: Path, cache_root: Path) -> None:
    tracecore.open(seed1, cache=True)
    [old_entry] = entries(cache_root)
    st = seed1.stat()
    os.utime(seed1, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    reopened = tracecore.open(seed1, cache=True)
    assert reopened._core is not None and "loaded_from" not in reopened.stats  # parsed again
    [new_entry] = entries(cache_root)  # the stale entry of the same path is gone
    assert new_entry != old_entry
    assert tracecore.open(seed1, cache=True).stats["loaded_from"] == "cache"


def test_changed_content_is_never_served_stale(seed1: Path) -> None:
    tracecore.open(seed1, cache=True)
    st = seed1.stat()
    seed1.write_text(SEED0.read_text())  # different trace, new size and mtime
    t = tracecore.open(seed1, cache=True)
    assert t.kind == "StepStats" and len(t) == 2087
    again = tracecore.open(seed1, cache=True)
    assert again.stats["loaded_from"] == "cache" and len(again) == 2087
    # Same size and mtime as before the rewrite would be needed to hit the old key.
    assert cache.cache_key(str(seed1), st.st_size, st.st_mtime_ns) != cache.cache_key(
        str(seed1), seed1.stat().st_size, seed1.stat().st_mtime_ns
    )


def _corrupt_truncate(entry: Path) -> None:
    path = entry / "tensors.arrow"
    path.write_bytes(path.read_bytes()[:100])


def _corrupt_same_size(entry: Path) -> None:
    path = entry / "events.arrow"
    data = bytearray(path.read_bytes())
    data[-40:] = b"\0" * 40  # destroys the IPC footer, keeps the size
    path.write_bytes(bytes(data))


def _corrupt_manifest_json(entry: Path) -> None:
    (entry / "manifest.json").write_text("{")


def _corrupt_manifest_counts(entry: Path) -> None:
    manifest = json.loads((entry / "manifest.json").read_text())
    manifest["files"]["events"]["rows"] = 1  # checksum left as it was
    (entry / "manifest.json").write_text(json.dumps(manifest))


def _corrupt_counts_with_checksum(entry: Path) -> None:
    manifest = json.loads((entry / "manifest.json").read_text())
    manifest["files"]["events"]["rows"] = 1
    manifest["checksum"] = cache._checksum(manifest)
    (entry / "manifest.json").write_text(json.dumps(manifest))


def _corrupt_missing_file(entry: Path) -> None:
    (entry / "alloc_records.arrow").unlink()


def _corrupt_swapped_file(entry: Path) -> None:
    shutil.copy(entry / "allocations.arrow", entry / "alloc_records.arrow")
    manifest = json.loads((entry / "manifest.json").read_text())
    manifest["files"]["alloc_records"]["bytes"] = (entry / "alloc_records.arrow").stat().st_size
    manifest["checksum"] = cache._checksum(manifest)
    (entry / "manifest.json").write_text(json.dumps(manifest))


@pytest.mark.parametrize(
    "corrupt",
    [
        _corrupt_truncate,
        _corrupt_same_size,
        _corrupt_manifest_json,
        _corrupt_manifest_counts,
        _corrupt_counts_with_checksum,
        _corrupt_missing_file,
        _corrupt_swapped_file,
    ],
)
def test_corrupt_entries_fall_back_to_parsing(corrupt, seed1: Path, cache_root: Path) -> None:
    parsed = tracecore.open(seed1, cache=True)
    [entry] = entries(cache_root)
    corrupt(entry)
    t = tracecore.open(seed1, cache=True)
    assert t._core is not None and "loaded_from" not in t.stats  # parsed, not served
    assert_same_tables(parsed, t)
    # The entry was rewritten and is valid again.
    again = tracecore.open(seed1, cache=True)
    assert again.stats["loaded_from"] == "cache"
    assert_same_tables(parsed, again)


def test_a_new_version_does_not_read_old_entries(
    seed1: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tracecore.open(seed1, cache=True)
    monkeypatch.setattr(tracecore._version, "__version__", "999.0")
    t = tracecore.open(seed1, cache=True)
    assert "loaded_from" not in t.stats
    assert tracecore.open(seed1, cache=True).stats["loaded_from"] == "cache"


def test_format_must_match_a_cached_entry(seed1: Path) -> None:
    tracecore.open(seed1, cache=True)
    assert tracecore.open(seed1, cache=True, format="text").stats["loaded_from"] == "cache"
    with pytest.raises(tracecore.TraceFormatError):
        tracecore.open(seed1, cache=True, format="binary")


def test_gzip_sample_is_cached() -> None:
    path = tracecore.sample_path()
    parsed = tracecore.open(path, cache=True)
    cached = tracecore.open(path, cache=True)
    assert cached.stats["loaded_from"] == "cache"
    assert cached.stats["bytes"] == parsed.stats["bytes"] == 1449348
    assert_same_tables(parsed, cached)


def test_unwritable_cache_still_opens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("TRACECORE_CACHE_DIR", str(blocker / "cache"))
    t = tracecore.open(SEED1, cache=True)
    assert len(t) == 292
    assert len(tracecore.open(SEED1, cache=True)) == 292


def test_no_temporary_directories_are_left(seed1: Path, cache_root: Path) -> None:
    tracecore.open(seed1, cache=True)
    tracecore.open(SEED0, cache=True)
    names = [p.name for p in cache_root.iterdir()]
    assert len(names) == 2 and not any(n.startswith(".tmp") for n in names)
    assert cache.clear() == 2
    assert list(cache_root.iterdir()) == []


def test_cache_dir_resolution(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TRACECORE_CACHE_DIR", str(tmp_path / "explicit"))
    assert cache.cache_dir() == tmp_path / "explicit"
    monkeypatch.delenv("TRACECORE_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_dir() == tmp_path / "xdg" / "tracecore"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache.cache_dir() == tmp_path / "home" / ".cache" / "tracecore"


@pytest.mark.big
@pytest.mark.skipif(
    not (os.environ.get("TRACECORE_BIG_TESTS") and BIG.exists()),
    reason="TRACECORE_BIG_TESTS=1 and bench/data/seed000_stepstats_200MB.pbtxt "
    "(python bench/make_trace.py 200) needed",
)
def test_cache_hit_is_20x_faster_on_200mb() -> None:
    start = time.perf_counter()
    first = tracecore.open(BIG, cache=True)
    first_seconds = time.perf_counter() - start
    start = time.perf_counter()
    second = tracecore.open(BIG, cache=True)
    second_seconds = time.perf_counter() - start
    assert second.stats["loaded_from"] == "cache" and len(second) == len(first)
    assert first_seconds >= 20 * second_seconds, (first_seconds, second_seconds)
