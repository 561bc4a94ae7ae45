"""Fault injection on the stored forms of a trace (the cache, Parquet exports): corrupted bytes,
files truncated under a reader, writers killed with SIGKILL at random points.

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
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from tracecore import _core

HERE = Path(__file__).resolve().parent
SEED0 = HERE / "data" / "seed000_stepstats.pbtxt"
OFFSETS = 100  # corruptions per file
KILLS = 20  # kill points per writer


# --- helpers of the subprocess side ----------------------------------------------------------


def check(condition: object, what: object = None) -> None:
    """``assert`` that ``python -O`` does not strip (the scenarios run in a subprocess that
    inherits PYTHONOPTIMIZE)."""
    if not condition:
        raise AssertionError(what)


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
    25th open writes the entry again after the parse (the other writes are the same)."""
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
            cache._store = store if opens % 25 == 0 else (lambda *args: None)  # type: ignore
            t = tracecore.open(source, cache=True)
            check(clean.same(t), f"{path.name}: {what}: other values")
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
    named = json.loads((out / "tracecore.json").read_text())["tables"].values()
    pristine = {name: (out / name).read_bytes() for name in sorted([*named, "tracecore.json"])}
    rng = random.Random(f"parquet-{which}")
    report: dict[str, dict[str, int]] = {}
    for name, data in pristine.items():
        key = re.sub(r"\.[0-9a-f]{16}\.parquet$", ".parquet", name)  # the table's name
        seen = report.setdefault(key, {"error": 0, "same": 0, "checksum": 0})
        for _ in range(OFFSETS):
            what = corrupt(out / name, data, rng)
            try:
                back = tracecore.open(out)
            except tracecore.TraceFormatError as e:
                check(name in str(e), f"{name}: {what}: {e}")
                seen["error"] += 1
                seen["checksum"] += "checksum does not match" in str(e)
            else:
                check(clean.same(back), f"{name}: {what}: other values")
                seen["same"] += 1
        (out / name).write_bytes(data)
    check(clean.same(tracecore.open(out)))
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
    check(cached.stats["loaded_from"] == "cache")
    out = cached.to_parquet(work / "pq")
    exported = tracecore.open(out)
    tables = [*cache.entry_dir(source).glob("*.arrow"), *out.glob("*.parquet")]
    for path in tables:
        os.truncate(path, path.stat().st_size // 2)
    check(clean.same(cached) and clean.same(exported))
    again = tracecore.open(source, cache=True)
    check("loaded_from" not in again.stats and clean.same(again))
    try:
        tracecore.open(out)
    except tracecore.TraceFormatError as e:
        message = str(e)
    else:
        raise AssertionError("a truncated export was read")
    return {"truncated": len(tables), "export_error": message}


def _kill_at(k: int, write: Callable[[], object], marker: str = "") -> tuple[int, int]:
    """Runs ``write``, killing this process with SIGKILL at its ``k``-th Python line event
    (counting every frame, tracecore's and the libraries' alike); returns the number of line
    events if it gets to the end, and how many came before the first call of a function named
    ``marker`` (where the write starts to put its result in place)."""
    count = 0
    before_marker = -1

    def local(frame: Any, event: str, arg: Any) -> Any:
        nonlocal count
        if event == "line":
            count += 1
            if count == k:
                os.kill(os.getpid(), signal.SIGKILL)
        return local

    def on_call(frame: Any, event: str, arg: Any) -> Any:
        nonlocal before_marker
        if before_marker < 0 and frame.f_code.co_name == marker:
            before_marker = count
        return local

    sys.settrace(on_call)
    try:
        write()
    finally:
        sys.settrace(None)
    return count, before_marker


def kill_points(write: Callable[[], object], marker: str, rng: random.Random) -> list[int]:
    """KILLS points among the line events of one whole run of ``write`` (counted in a forked
    child, so the state it leaves is not this process's): half drawn over the whole write, half
    from the first call of ``marker`` on (the few steps that put the result in place), the last
    line event among them."""
    read, written = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            os.write(written, json.dumps(_kill_at(0, write, marker)).encode())
        finally:
            os._exit(0)
    os.close(written)
    with os.fdopen(read) as f:
        total, before_marker = json.loads(f.read())
    os.waitpid(pid, 0)
    check(0 < before_marker < total - KILLS, (before_marker, total))
    points = set(rng.sample(range(1, total + 1), KILLS // 2))
    points.add(total)  # the last step: the result is in place
    while len(points) < KILLS:
        points.add(rng.randint(before_marker + 1, total))
    return sorted(points)


def kill_once(k: int, write: Callable[[], object]) -> None:
    """Runs ``write`` in a forked child that kills itself (SIGKILL) at line event ``k``."""
    pid = os.fork()
    if pid == 0:
        try:
            _kill_at(k, write)
        finally:
            os._exit(3)  # got to the end: the parent reports it
    _, status = os.waitpid(pid, 0)
    check(os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, (k, status))


def killed(
    reset: Callable[[], None], write: Callable[[], object], marker: str, seed: str
) -> Iterator[int]:
    """For each of the KILLS points of :func:`kill_points`: puts the old state back, runs
    ``write`` killed at that point, and yields the point (the state is then the killed one)."""
    reset()
    for k in kill_points(write, marker, random.Random(seed)):
        reset()
        kill_once(k, write)
        yield k


def kill_cache_writes(work: Path) -> dict[str, Any]:
    """The file changes from A to B; an open with cache=True (parse, cache write replacing A's
    entry) is killed at KILLS points. The next open gives B's values; the next write leaves one
    entry and no temporary directory."""
    import tracecore

    root = Path(os.environ["TRACECORE_CACHE_DIR"])
    a_text = two_device_dump(work / "a.pbtxt").read_text()
    b_text = SEED0.read_text()
    source = work / "source.pbtxt"
    source.write_text(b_text)
    clean_b = Clean(tracecore.open(source))

    def reset() -> None:
        shutil.rmtree(root, ignore_errors=True)
        source.write_text(a_text)
        os.utime(source, ns=(1_000_000_000, 1_000_000_000))
        tracecore.open(source, cache=True)
        source.write_text(b_text)
        os.utime(source, ns=(2_000_000_000, 2_000_000_000))

    def write() -> object:
        return tracecore.open(source, cache=True, threads=1)

    outcomes = []
    # From the first look at the cache directory for stale entries: the manifest is written.
    for k in killed(reset, write, "iterdir", "kill-cache"):
        left = sorted(p.name for p in root.iterdir())
        t = tracecore.open(source, cache=True)
        check(clean_b.same(t), k)
        outcomes.append({"k": k, "left": left, "hit": t.stats.get("loaded_from") == "cache"})
        os.utime(source, ns=(3_000_000_000, 3_000_000_000))  # the next write
        t = tracecore.open(source, cache=True)
        check(clean_b.same(t), k)
        names = sorted(p.name for p in root.iterdir() if not p.name.startswith("."))
        # Temporaries of ours left: only those of a writer killed before it made its lock
        # file or after it removed it (kept for STALE_UNLOCKED_SECONDS: no lock tells).
        temps = [p for p in root.iterdir() if p.name.startswith(".")]
        locked = [p.name for p in temps if (p / ".lock").exists()]
        check(len(names) == 1 and not locked, (k, names, locked))
    return {"outcomes": outcomes}


def ours(out: Path) -> tuple[list[str], list[str]]:
    """The files of the export ``out``: those its tracecore.json names (with it), and the
    others of our naming (left by a killed export)."""
    named = set(json.loads((out / "tracecore.json").read_text())["tables"].values())
    pattern = r"\w+\.[0-9a-f]{16}\.parquet|\.tracecore\.json\.[0-9a-f]{16}\.tmp"
    others = sorted(p.name for p in out.iterdir() if p.name not in named)
    left = [n for n in others if re.fullmatch(pattern, n)]
    return sorted(named), left


def kill_exports(work: Path) -> dict[str, Any]:
    """A directory holds the export of trace A and a file of the user's; the export of trace B
    into it is killed at KILLS points. The next open gives all of A or all of B; the next
    export leaves only its own files and the user's, in the same directory (same inode)."""
    import tracecore

    a = tracecore.open(two_device_dump(work / "a.pbtxt"))
    b = tracecore.open(SEED0)
    # The export writes the events property, computed once per Trace: computed here, so that
    # every write below (counted, then killed at a counted point) does the same steps.
    assert b.events.num_rows == 2087
    clean_a, clean_b = Clean(a), Clean(b)
    out = work / "pq"

    def reset() -> None:
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir()
        (out / "notes.txt").write_text("mine")
        a.to_parquet(out)

    def write() -> object:
        return b.to_parquet(out, overwrite=True)

    outcomes = []
    for k in killed(reset, write, "_commit", "kill-export"):
        inode = out.stat().st_ino
        left = ours(out)[1]
        back = tracecore.open(out)
        seen = "A" if clean_a.same(back) else "B" if clean_b.same(back) else None
        check(seen is not None, (k, "a mix"))
        outcomes.append({"k": k, "left": left, "seen": seen})
        b.to_parquet(out, overwrite=True)  # the next write
        check(clean_b.same(tracecore.open(out)), k)
        named, left = ours(out)
        everything = sorted(p.name for p in out.iterdir())
        expected = sorted([*named, ".tracecore.lock", "notes.txt", "tracecore.json"])
        check(left == [] and everything == expected, (k, everything))
        check(out.stat().st_ino == inode and (out / "notes.txt").read_text() == "mine", k)
        check(sorted(p.name for p in work.iterdir()) == ["a.pbtxt", "pq"], k)
    return {"outcomes": outcomes}


SCENARIOS: dict[str, Callable[..., dict[str, Any]]] = {
    "corrupt_cache": corrupt_cache,
    "corrupt_parquet": corrupt_parquet,
    "truncate": truncate_under_reader,
    "kill_cache": kill_cache_writes,
    "kill_export": kill_exports,
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
    pattern = r"/pq/\w+\.[0-9a-f]{16}\.parquet: \d+ bytes where \d+ were written"
    assert re.search(pattern, report["export_error"])


def test_killed_cache_writes(tmp_path: Path) -> None:
    report = run("kill_cache", tmp_path)
    assert len({o["k"] for o in report["outcomes"]}) == KILLS
    # Killed before the entry was in place (parsed again) and after (a hit): both were seen.
    assert {o["hit"] for o in report["outcomes"]} == {False, True}, report["outcomes"]


def test_killed_exports(tmp_path: Path) -> None:
    report = run("kill_export", tmp_path)
    assert len({o["k"] for o in report["outcomes"]}) == KILLS
    seen = {o["seen"] for o in report["outcomes"]}
    # Points all over the write: some before the swap (A), some after it (B).
    assert seen == {"A", "B"}, report["outcomes"]


def test_stale_temporaries_are_those_whose_lock_is_free(tmp_path: Path) -> None:
    """A temporary directory is stale when its lock file can be locked (whatever pid its name
    gives, however old it is), or when it has no lock file and is older than an hour."""
    import fcntl

    import tracecore.stored as stored

    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    dead_pid = int(dead.stdout)
    names = {
        "locked_dead_pid_old": f".tmp-{dead_pid}-aaaa",  # a live writer elsewhere
        "unlocked_live_pid_new": f".tmp-{os.getpid()}-bbbb",  # a killed writer's
        "no_lock_new": ".tmp-cccc",
        "no_lock_old": ".tmp-dddd",
        "other": "entry-dir",
    }
    for name in names.values():
        (tmp_path / name).mkdir()
        (tmp_path / name / "events.arrow").write_bytes(b"x")
    for key in ("locked_dead_pid_old", "unlocked_live_pid_new"):
        (tmp_path / names[key] / stored.LOCK_FILE).write_bytes(b"")
    held = os.open(tmp_path / names["locked_dead_pid_old"] / stored.LOCK_FILE, os.O_RDWR)
    try:
        fcntl.flock(held, fcntl.LOCK_EX)
        old = os.stat(tmp_path).st_mtime - 2 * stored.STALE_UNLOCKED_SECONDS
        for key in ("no_lock_old", "locked_dead_pid_old"):
            os.utime(tmp_path / names[key], (old, old))
        removed = stored.remove_stale_temps(tmp_path, [".tmp-"])
    finally:
        os.close(held)
    gone = {names[k] for k in ("unlocked_live_pid_new", "no_lock_old")}
    assert sorted(p.name for p in removed) == sorted(gone)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(set(names.values()) - gone)


def test_a_writers_temporary_is_locked_and_private(tmp_path: Path) -> None:
    """While a cache write runs, another process's cleanup keeps its temporary directory; the
    directory (and so the entry renamed from it) has mode 0o700."""
    import tracecore.stored as stored

    path, lock = stored.new_temp_dir(tmp_path, ".tmp-")
    try:
        assert os.stat(path).st_mode & 0o777 == 0o700
        other = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys; from pathlib import Path; import tracecore.stored as s; "
                "print(len(s.remove_stale_temps(Path(sys.argv[1]), ['.tmp-'])))",
                str(tmp_path),
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        assert other.stdout.strip() == "0" and path.is_dir()
    finally:
        os.close(lock)
    assert stored.remove_stale_temps(tmp_path, [".tmp-"]) == [path]


def test_cache_entries_are_private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tracecore
    from tracecore import cache

    monkeypatch.setenv("TRACECORE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(os, "umask", os.umask)  # restored below whatever happens
    before = os.umask(0o022)
    try:
        tracecore.open(SEED0, cache=True)
    finally:
        os.umask(before)
    entry = cache.entry_dir(SEED0)
    assert os.stat(entry).st_mode & 0o777 == 0o700
    assert sorted(p.name for p in entry.iterdir()) == sorted(
        [f"{n}.arrow" for n in TABLE_NAMES] + ["manifest.json"]
    )


def test_cache_under_a_non_utf8_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cache directory whose name is not UTF-8 (Latin-1 here) is written and read back."""
    import tracecore

    root = os.fsdecode(os.fsencode(tmp_path) + b"/caf\xe9")
    monkeypatch.setenv("TRACECORE_CACHE_DIR", root)
    first = tracecore.open(SEED0, cache=True)
    second = tracecore.open(SEED0, cache=True)
    assert "loaded_from" not in first.stats
    assert second.stats["loaded_from"] == "cache"
    assert Clean(first).same(second)


def test_export_replaces_an_export_in_place(tmp_path: Path) -> None:
    """Over an existing export: the new tables, in the same directory (inode and mode kept),
    the old export's files removed, the user's files kept, nothing written beside it."""
    import tracecore

    a = tracecore.open(two_device_dump(tmp_path / "a.pbtxt"))
    b = tracecore.open(SEED0)
    out = tmp_path / "pq"
    out.mkdir(mode=0o750)
    os.chmod(out, 0o750)
    (out / "notes.txt").write_text("mine")
    (out / "events.parquet").write_bytes(b"not ours: no tracecore.json names it")
    inode = out.stat().st_ino
    assert a.to_parquet(out) == out
    first = set(json.loads((out / "tracecore.json").read_text())["tables"].values())
    assert Clean(a).same(tracecore.open(out))
    assert b.to_parquet(out, overwrite=True) == out
    second = set(json.loads((out / "tracecore.json").read_text())["tables"].values())
    assert Clean(b).same(tracecore.open(out))
    assert not first & second
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [*second, ".tracecore.lock", "events.parquet", "notes.txt", "tracecore.json"]
    )
    assert (out / "notes.txt").read_text() == "mine"
    assert out.stat().st_ino == inode and out.stat().st_mode & 0o777 == 0o750
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.pbtxt", "pq"]


def test_export_into_the_working_directory_and_through_a_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tracecore

    t = tracecore.open(SEED0)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    assert t.to_parquet(".") == Path(".")
    assert os.getcwd() == str(work) and os.path.samefile(".", work)
    assert Clean(t).same(tracecore.open("."))
    (tmp_path / "link").symlink_to(work)
    assert t.to_parquet(tmp_path / "link", overwrite=True) == tmp_path / "link"
    assert (tmp_path / "link").is_symlink()
    assert Clean(t).same(tracecore.open(work))


def test_export_into_a_directory_whose_parent_is_read_only(tmp_path: Path) -> None:
    """The user may write the export directory but not its parent (as root, who may write
    anything, the export runs in a forked child that becomes another user)."""
    import pyarrow.parquet  # noqa: F401 - imported before the fork: the child may not read it

    import tracecore

    t = tracecore.open(SEED0)
    base = Path(tempfile.mkdtemp(prefix="tracecore-ro-"))
    parent = base / "parent"
    out = parent / "pq"
    try:
        os.chmod(base, 0o755)
        out.mkdir(parents=True)
        user = 65534 if os.geteuid() == 0 else None
        if user is not None:
            os.chown(out, user, user)
        os.chmod(parent, 0o555)
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                if user is not None:
                    os.setgroups([])
                    os.setgid(user)
                    os.setuid(user)
                t.to_parquet(out)
                t.to_parquet(out, overwrite=True)
                code = 0 if Clean(t).same(tracecore.open(out)) else 2
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
        assert sorted(p.name for p in parent.iterdir()) == ["pq"]
    finally:
        os.chmod(parent, 0o755)
        shutil.rmtree(base)


def _rewrite_meta(out: Path, change: Callable[[dict[str, Any]], None]) -> None:
    from tracecore import parquet

    meta = json.loads((out / "tracecore.json").read_text())
    change(meta)
    meta["checksum"] = parquet._meta_checksum(meta)
    (out / "tracecore.json").write_text(json.dumps(meta))


@pytest.mark.parametrize(
    "bad",
    ["outside", "absolute", "not_a_string", "size_text", "crc_float", "crc_bool", "no_bytes"],
)
def test_export_metadata_naming_bad_files(bad: str, tmp_path: Path) -> None:
    """A tracecore.json (with a right checksum) whose table files are not plain names in the
    directory, or whose checksums are not integers, is a TraceFormatError; nothing outside the
    directory is read."""
    import tracecore

    t = tracecore.open(SEED0)
    outside = t.to_parquet(tmp_path / "other")
    out = t.to_parquet(tmp_path / "pq")
    other_events = json.loads((outside / "tracecore.json").read_text())["tables"]["events"]

    def change(meta: dict[str, Any]) -> None:
        events = meta["tables"]["events"]
        info = meta["files"][events]
        if bad == "outside":  # the same bytes, in the sibling export
            meta["tables"]["events"] = f"../other/{other_events}"
            meta["files"][other_events] = meta["files"][events]
            meta["files"][other_events]["crc32c"] = json.loads(
                (outside / "tracecore.json").read_text()
            )["files"][other_events]["crc32c"]
        elif bad == "absolute":
            meta["tables"]["events"] = str(outside / other_events)
            meta["files"][other_events] = info
        elif bad == "not_a_string":
            meta["tables"]["events"] = 5
        elif bad == "size_text":
            info["bytes"] = str(info["bytes"])
        elif bad == "crc_float":
            info["crc32c"] = float(info["crc32c"])
        elif bad == "crc_bool":
            info["crc32c"] = True
        else:
            del info["bytes"]

    _rewrite_meta(out, change)
    with pytest.raises(tracecore.TraceFormatError, match="tracecore.json: "):
        tracecore.open(out)


def test_export_replaced_while_it_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader that read the old tracecore.json and then finds a file gone says why."""
    import tracecore
    from tracecore import parquet

    a = tracecore.open(two_device_dump(tmp_path / "a.pbtxt"))
    b = tracecore.open(SEED0)
    out = a.to_parquet(tmp_path / "pq")
    read = parquet.read_verified
    calls = []

    def replacing(path: Any, size: int, crc: int) -> Any:
        calls.append(path)
        if len(calls) == 2:
            b.to_parquet(out, overwrite=True)  # between the reads of two of the old export's files
        return read(path, size, crc)

    monkeypatch.setattr(parquet, "read_verified", replacing)
    with pytest.raises(
        tracecore.TraceFormatError, match="missing .*; the export was replaced while it was read"
    ):
        tracecore.open(out)
    monkeypatch.setattr(parquet, "read_verified", read)
    assert Clean(b).same(tracecore.open(out))


def test_export_refuses_a_file(tmp_path: Path) -> None:
    import tracecore

    (tmp_path / "f").write_text("x")
    with pytest.raises(NotADirectoryError, match="exists and is not a directory"):
        tracecore.open(SEED0).to_parquet(tmp_path / "f")
    assert (tmp_path / "f").read_text() == "x"


if __name__ == "__main__":
    main(sys.argv[1:])
