"""The persisted index behind ``tracecore.open(path, cache=True)``.

Each parsed file gets one cache entry, a directory under :func:`cache_dir`::

    <sha256(abs path)[:16]>-<key[:32]>/
        manifest.json          key, source identity, kind, format, row counts, file sizes and
                               CRC-32Cs, stats, and a sha256 of all of that ("checksum")
        events.arrow ...       one Arrow IPC file per table

``key`` = sha256 of (absolute path, size, mtime_ns, tracecore version). An open with
``cache=True`` looks the key up; a hit reads the IPC files (no parse: the tables point into the
bytes read, no decoding). A changed file (size or mtime) has a different key and is parsed
again; the entry it replaces, found by the path prefix, is removed.

The cache never serves stale or corrupt data: a hit needs the manifest to parse, carry its own
checksum, name the same key, source, size, mtime and version, and list files of exactly the
recorded sizes and CRC-32Cs (checked over every byte before anything is decoded) whose IPC
footers and schemas read back with the recorded row counts. Anything else (or any exception on
the way) removes the entry and parses the file. The files are read into memory, not mapped: a
cache file truncated or rewritten while a trace uses its tables cannot fault the process. The
check and the read cost one pass over the entry's bytes at memory speed (see bench/NOTES.md).

Entries are written into a temporary directory ``.tmp-<pid>-<random>`` (mode 0o700) that is
renamed into place once complete, so a crash or a concurrent reader never sees half an entry;
its writer holds ``flock(LOCK_EX)`` on a lock file in it meanwhile, and the next write removes
the temporary directories whose lock is free (their writer is gone; see
:func:`.stored.remove_stale_temps`). The cache is best effort: if it cannot be written the
trace is still returned.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pyarrow as pa

from . import _core, _version
from .parsing import parse_core
from .stored import (
    LOCK_FILE,
    compact_dictionaries,
    file_crc32c,
    new_temp_dir,
    read_verified,
    remove_stale_temps,
    trace_meta,
)
from .trace import Trace

MANIFEST = "manifest.json"
# 2: files carry their CRC-32C. 3: events.step_id numbers StepStats and Kineto steps.
CACHE_LAYOUT_VERSION = 3
TEMP_PREFIX = ".tmp-"


def cache_dir() -> Path:
    """``$TRACECORE_CACHE_DIR``, else ``$XDG_CACHE_HOME/tracecore``, else ``~/.cache/tracecore``."""
    explicit = os.environ.get("TRACECORE_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "tracecore"


def cache_key(abs_path: str, size: int, mtime_ns: int) -> str:
    """The key of a file's entry: sha256 of its absolute path, size, mtime and the tracecore
    version (a new version never reads an older version's tables)."""
    ident = json.dumps([CACHE_LAYOUT_VERSION, abs_path, size, mtime_ns, _version.__version__])
    return hashlib.sha256(ident.encode("utf-8", "surrogateescape")).hexdigest()


def _path_prefix(abs_path: str) -> str:
    return hashlib.sha256(abs_path.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def entry_dir(path: str | os.PathLike[str]) -> Path:
    """Where the cache entry of ``path`` as it is now lives (whether or not it exists)."""
    abs_path = os.path.abspath(os.fspath(path))
    st = os.stat(abs_path)
    key = cache_key(abs_path, st.st_size, st.st_mtime_ns)
    return cache_dir() / f"{_path_prefix(abs_path)}-{key[:32]}"


def clear() -> int:
    """Removes every cache entry; returns how many were removed."""
    root = cache_dir()
    if not root.is_dir():
        return 0
    removed = 0
    for child in root.iterdir():
        if child.is_dir():
            shutil.rmtree(child, ignore_errors=True)
            removed += 1
    return removed


def _checksum(manifest: dict[str, Any]) -> str:
    body = {k: v for k, v in manifest.items() if k != "checksum"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode("utf-8")).hexdigest()


def open_cached(
    path: str,
    *,
    format: str = "auto",
    threads: int = 0,
    progress: bool = False,
    max_table_bytes: int = 0,
) -> Trace:
    """Opens ``path`` from its cache entry if there is a valid one, else parses it (within
    ``max_table_bytes``, 0 for the default budget) and writes the entry. ``format`` other than
    "auto" must match the cached format to count as a hit."""
    start = time.perf_counter()
    abs_path = os.path.abspath(path)
    st = os.stat(abs_path)
    key = cache_key(abs_path, st.st_size, st.st_mtime_ns)
    root = cache_dir()
    entry = root / f"{_path_prefix(abs_path)}-{key[:32]}"
    if entry.is_dir():
        try:
            loaded = _load(entry, key, abs_path, st, format)
        except Exception:  # noqa: BLE001 - whatever is wrong with an entry, parse instead
            # Corrupt, truncated, foreign or half-deleted: never serve it; parse instead.
            loaded = None
            shutil.rmtree(entry, ignore_errors=True)
        if loaded is not None:
            tables, meta = loaded
            # The source as given, like a parsed trace's source.
            return Trace.from_stored(
                tables,
                meta,
                source=path,
                loaded_from="cache",
                load_seconds=time.perf_counter() - start,
            )

    core, parsed = parse_core(
        path, format=format, threads=threads, progress=progress, max_table_bytes=max_table_bytes
    )
    trace = Trace.from_core(core, path, parsed)
    # Cache only what was parsed from the file as stat'ed above (it may change meanwhile).
    if (parsed.size, parsed.mtime_ns) == (st.st_size, st.st_mtime_ns):
        # Best effort: a read-only or full cache directory still gives a parsed trace.
        with contextlib.suppress(OSError):
            _store(trace, root, entry, key)
    return trace


def _load(
    entry: Path, key: str, abs_path: str, st: os.stat_result, format: str
) -> tuple[dict[str, pa.Table], dict[str, Any]] | None:
    """The tables and metadata of a valid entry; None for a valid entry of another format;
    raises otherwise."""
    manifest = json.loads((entry / MANIFEST).read_text(encoding="utf-8"))
    if manifest.get("checksum") != _checksum(manifest):
        raise ValueError("manifest checksum mismatch")
    expected = {
        "cache_layout_version": CACHE_LAYOUT_VERSION,
        "key": key,
        "source": abs_path,
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
    }
    for field, value in expected.items():
        if manifest.get(field) != value:
            raise ValueError(f"manifest {field} mismatch")
    if format != "auto" and manifest["format"] != format:
        return None
    tables: dict[str, pa.Table] = {}
    files = manifest["files"]
    for name in _core.TABLE_NAMES:
        info = files[name]
        file_path = entry / info["file"]
        # Every byte checked before any is decoded; the table's buffers point into this one.
        data = read_verified(file_path, info["bytes"], info["crc32c"])
        table = pa.ipc.open_file(data).read_all()
        if table.num_rows != info["rows"] or table.schema.to_string() != info["schema"]:
            raise ValueError(f"{file_path.name}: rows or schema mismatch")
        tables[name] = table
    meta = {k: v for k, v in manifest.items() if k not in ("files", "checksum")}
    return tables, meta


def _store(trace: Trace, root: Path, entry: Path, key: str) -> None:
    root.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(root, [TEMP_PREFIX])
    tmp, lock = new_temp_dir(root, TEMP_PREFIX)
    try:
        files = {}
        for name in trace.table_names:
            table = compact_dictionaries(trace.table(name))
            file_name = f"{name}.arrow"
            # Through a Python file: Arrow's own file system takes only UTF-8 path names.
            with (
                open(tmp / file_name, "wb") as out,
                pa.PythonFile(out, mode="w") as sink,
                pa.ipc.new_file(sink, table.schema) as writer,
            ):
                writer.write_table(table)
            size, crc = file_crc32c(tmp / file_name)
            files[name] = {
                "file": file_name,
                "rows": table.num_rows,
                "bytes": size,
                "crc32c": crc,
                "schema": table.schema.to_string(),
            }
        manifest = trace_meta(trace)
        manifest.update(cache_layout_version=CACHE_LAYOUT_VERSION, key=key, files=files)
        manifest["checksum"] = _checksum(manifest)
        with open(tmp / MANIFEST, "w", encoding="utf-8") as f:
            json.dump(manifest, f, indent=1, sort_keys=True)
        # Entries of older versions of the same file are stale from now on.
        prefix = entry.name.split("-", 1)[0] + "-"
        for old in root.iterdir():
            if old.name.startswith(prefix) and old.name != entry.name:
                shutil.rmtree(old, ignore_errors=True)
        if entry.exists():
            shutil.rmtree(entry, ignore_errors=True)
        os.unlink(tmp / LOCK_FILE)  # the entry holds the tables and the manifest only
        os.replace(tmp, entry)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        os.close(lock)
