"""What a cache reopen costs: parse vs reopen of a cache entry, and the parts of a reopen.

    python bench/reopen.py FILE [--repeat N]

In one process (a scratch TRACECORE_CACHE_DIR): N parses, one cache write, N reopens
(``open(path, cache=True)``), then the parts of a reopen over the entry's table files: mapping
and reading the IPC files (the layout before checksums), the CRC-32C over the mapped bytes, and
what a reopen does now (read into memory, CRC-32C, IPC footer). Best and median of N each.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - start)
    return min(runs) * 1e3, statistics.median(runs) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("file")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    root = tempfile.mkdtemp(prefix="tracecore-reopen-")
    os.environ["TRACECORE_CACHE_DIR"] = root
    try:
        import pyarrow as pa

        import tracecore
        from tracecore import _core, cache, stored

        parse = timed(lambda: tracecore.open(args.file), args.repeat)
        tracecore.open(args.file, cache=True)
        entry = cache.entry_dir(args.file)
        assert tracecore.open(args.file, cache=True).stats["loaded_from"] == "cache"
        reopen = timed(lambda: tracecore.open(args.file, cache=True), args.repeat)
        files = json.loads((entry / "manifest.json").read_text())["files"]
        paths = {name: str(entry / info["file"]) for name, info in files.items()}

        def mapped() -> None:
            for path in paths.values():
                with pa.memory_map(path, "r") as source:
                    pa.ipc.open_file(source).read_all()

        def mapped_crc() -> None:
            for path in paths.values():
                _core.crc32c(pa.memory_map(path, "r").read_buffer())

        def read_checked() -> None:
            for name, path in paths.items():
                info = files[name]
                data = stored.read_verified(Path(path), info["bytes"], info["crc32c"])
                pa.ipc.open_file(data).read_all()

        size = sum(os.path.getsize(p) for p in paths.values()) / 1e6
        print(f"{args.file}: cache entry {size:.1f} MB; best / median of {args.repeat}, ms")
        rows = [
            ("parse", parse),
            ("reopen (open(path, cache=True))", reopen),
            ("  map + IPC, unchecked (before)", timed(mapped, args.repeat)),
            ("  CRC-32C over the mapped files", timed(mapped_crc, args.repeat)),
            ("  read + CRC-32C + IPC (now)", timed(read_checked, args.repeat)),
        ]
        for label, (best, median) in rows:
            print(f"{label:34} {best:8.1f} {median:8.1f}")
        best, median = parse[0] / reopen[0], parse[1] / reopen[1]
        print(f"parse / reopen: {best:.0f}x (best), {median:.0f}x (median)")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
