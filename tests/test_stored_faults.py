"""Fault injection on the stored forms of a trace (the cache, Parquet exports): corrupted bytes,
files truncated under a reader.

Each scenario runs in a subprocess (this file run as a script), so a crash (SIGSEGV, SIGBUS) is
a failed test, not a dead pytest; the subprocess reports what it saw as JSON and asserts the
values itself. Inputs: the bundled sample (seven devices, gzip) and a two-device dump cut from
seed 000.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from tracecore import _core

HERE = Path(__file__).resolve().parent
SEED0 = HERE / "data" / "seed000_stepstats.pbtxt"
OFFSETS = 100  # corruptions per file


# --- helpers of the subprocess side ----------------------------------------------------------


def two_device_dump(path: Path) -> Path:
    """Seed 000 cut to its fourth and fifth ``dev_stats`` blocks (two devices)."""
    lines = SEED0.read_text().splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line.startswith("dev_stats {")]
    path.write_text("".join(lines[starts[3] : starts[5]]))
    return path


def make_input(which: str, directory: Path) -> Path:
    import tracecore

    directory.mkdir(parents=True, exist_ok=True)
    if which == "sample":
        path = directory / "sample.pbtxt.gz"
        shutil.copy(tracecore.sample_path(), path)
        return path
    return two_device_dump(directory / "two_devices.pbtxt")


def decoded(table: pa.Table) -> pa.Table:
    columns = [
        c.cast(c.type.value_type) if pa.types.is_dictionary(c.type) else c for c in table.columns
    ]
    return pa.Table.from_arrays(columns, names=table.column_names)


def values(trace: Any) -> dict[str, pa.Table]:
    """Every table of ``trace`` with its dictionaries decoded (a stored copy has its
    dictionaries cut down; the values must be the same)."""
    return {name: decoded(trace.table(name)) for name in trace.table_names}


class Clean:
    """The tables of a clean parse, to compare others with: a parse gives the same tables
    (compared as they are, dictionaries included: fast), a stored copy the same values."""

    def __init__(self, trace: Any) -> None:
        self.raw = {name: trace.table(name) for name in trace.table_names}
        self.decoded = values(trace)

    def same(self, trace: Any) -> bool:
        if trace.table_names != list(self.raw):
            return False
        if "loaded_from" not in trace.stats and all(
            trace.table(n).equals(self.raw[n]) for n in self.raw
        ):
            return True
        got = values(trace)
        return all(got[n].equals(self.decoded[n]) for n in self.decoded)


def corrupt(path: Path, pristine: bytes, rng: random.Random) -> str:
    """Writes ``pristine`` with one byte changed (or one bit flipped) at a random offset."""
    data = bytearray(pristine)
    offset = rng.randrange(len(data))
    if rng.random() < 0.5:
        data[offset] ^= 1 << rng.randrange(8)
        what = f"bit at {offset}"
    else:
        data[offset] = (data[offset] + rng.randrange(1, 256)) % 256
        what = f"byte at {offset}"
    path.write_bytes(bytes(data))
    return what


def corrupt_cache(which: str, work: Path) -> dict[str, Any]:
    """Corrupts each file of a cache entry at OFFSETS offsets; every open must give the clean
    values: parsed again, or (a manifest byte that does not change its JSON) from the cache.

    The entry is put back from hard links to a pristine copy; to keep this fast, only every
    tenth open writes the entry again after the parse (the other writes are the same)."""
    import tracecore
    from tracecore import cache

    source = make_input(which, work / "in")
    clean = Clean(tracecore.open(source))
    tracecore.open(source, cache=True)
    entry = cache.entry_dir(source)
    pristine = work / "pristine"
    shutil.copytree(entry, pristine)
    store = cache._store
    rng = random.Random(f"cache-{which}")
    report: dict[str, dict[str, int]] = {}
    opens = 0
    for path in sorted(pristine.iterdir()):
        data = path.read_bytes()
        seen = report.setdefault(path.name, {"parsed": 0, "cached": 0})
        for _ in range(OFFSETS):
            shutil.rmtree(entry, ignore_errors=True)
            entry.mkdir()
            for other in pristine.iterdir():
                if other.name != path.name:
                    os.link(other, entry / other.name)
            what = corrupt(entry / path.name, data, rng)
            opens += 1
            cache._store = store if opens % 10 == 0 else (lambda *args: None)  # type: ignore
            t = tracecore.open(source, cache=True)
            assert clean.same(t), f"{path.name}: {what}: other values"
            seen["cached" if t.stats.get("loaded_from") == "cache" else "parsed"] += 1
    cache._store = store
    return report


def corrupt_parquet(which: str, work: Path) -> dict[str, Any]:
    """Corrupts each file of a Parquet export at OFFSETS offsets; every open must raise a
    TraceFormatError naming the file, or (a byte of tracecore.json that does not change its
    JSON) give the clean values."""
    import tracecore

    source = make_input(which, work / "in")
    trace = tracecore.open(source)
    clean = Clean(trace)
    out = trace.to_parquet(work / "pq")
    pristine = {p.name: p.read_bytes() for p in sorted(out.iterdir())}
    rng = random.Random(f"parquet-{which}")
    report: dict[str, dict[str, int]] = {}
    for name, data in pristine.items():
        seen = report.setdefault(name, {"error": 0, "same": 0, "checksum": 0})
        for _ in range(OFFSETS):
            what = corrupt(out / name, data, rng)
            try:
                back = tracecore.open(out)
            except tracecore.TraceFormatError as e:
                assert name in str(e), f"{name}: {what}: {e}"
                seen["error"] += 1
                seen["checksum"] += "checksum does not match" in str(e)
            else:
                assert clean.same(back), f"{name}: {what}: other values"
                seen["same"] += 1
        (out / name).write_bytes(data)
    assert clean.same(tracecore.open(out))
    return report


def truncate_under_reader(which: str, work: Path) -> dict[str, Any]:
    """Truncates every table file of a cache entry and of an export while traces read from
    them are in use: the traces keep their values (their bytes are their own, not a mapping of
    the files), the next open of the cache parses again and the next open of the export raises
    a clear error."""
    import tracecore
    from tracecore import cache

    source = make_input(which, work / "in")
    clean = Clean(tracecore.open(source))
    tracecore.open(source, cache=True)
    cached = tracecore.open(source, cache=True)
    assert cached.stats["loaded_from"] == "cache"
    out = cached.to_parquet(work / "pq")
    exported = tracecore.open(out)
    tables = [*cache.entry_dir(source).glob("*.arrow"), *out.glob("*.parquet")]
    for path in tables:
        os.truncate(path, path.stat().st_size // 2)
    assert clean.same(cached) and clean.same(exported)
    again = tracecore.open(source, cache=True)
    assert "loaded_from" not in again.stats and clean.same(again)
    try:
        tracecore.open(out)
    except tracecore.TraceFormatError as e:
        message = str(e)
    else:
        raise AssertionError("a truncated export was read")
    return {"truncated": len(tables), "export_error": message}


SCENARIOS: dict[str, Callable[..., dict[str, Any]]] = {
    "corrupt_cache": corrupt_cache,
    "corrupt_parquet": corrupt_parquet,
    "truncate": truncate_under_reader,
}


def main(argv: list[str]) -> None:
    scenario, work, *rest = argv
    report = SCENARIOS[scenario](*rest, Path(work))
    print(json.dumps(report))


# --- the tests --------------------------------------------------------------------------------


def run(scenario: str, tmp_path: Path, *args: str) -> dict[str, Any]:
    """Runs a scenario in a fresh interpreter; a crash or hang is a test failure."""
    env = dict(os.environ, TRACECORE_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run(
        [sys.executable, __file__, scenario, str(tmp_path), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, (
        f"{scenario} {args}: exit {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    )
    result: dict[str, Any] = json.loads(proc.stdout.splitlines()[-1])
    return result


INPUTS = ["sample", "two_devices"]
TABLE_NAMES = list(_core.TABLE_NAMES)


# Per store: the table files' suffix, its metadata file, and how an open of a corrupt file ends
# (caught: parsed again / TraceFormatError) or may end for a metadata byte that leaves the JSON
# the same (white space): a hit of the cache, the same values from the export.
STORES = {
    "cache": (".arrow", "manifest.json", "parsed", "cached"),
    "parquet": (".parquet", "tracecore.json", "error", "same"),
}


@pytest.mark.parametrize("which", INPUTS)
@pytest.mark.parametrize("store", sorted(STORES))
def test_corrupt_stored_files(store: str, which: str, tmp_path: Path) -> None:
    """Cache: every open parses again and gives the clean values. Parquet: every open raises a
    TraceFormatError naming the file ("the checksum does not match")."""
    suffix, meta_file, caught, passed = STORES[store]
    report = run(f"corrupt_{store}", tmp_path, which)
    assert set(report) == {f"{n}{suffix}" for n in TABLE_NAMES} | {meta_file}
    for name, seen in report.items():
        assert seen[caught] + seen[passed] == OFFSETS, name
        if name != meta_file:
            # A CRC-32C catches every one-byte change: never served.
            assert seen[caught] == seen.get("checksum", OFFSETS) == OFFSETS, (name, seen)
    assert report[meta_file][caught] >= OFFSETS * 3 // 4


@pytest.mark.parametrize("which", INPUTS)
def test_files_truncated_under_a_reader(which: str, tmp_path: Path) -> None:
    report = run("truncate", tmp_path, which)
    assert report["truncated"] == 2 * len(TABLE_NAMES)
    assert re.search(r"/pq/\w+\.parquet: \d+ bytes where \d+ were written", report["export_error"])


if __name__ == "__main__":
    main(sys.argv[1:])
