"""Export throughput: Trace.to_chrome_trace (Chrome JSON) with the C++ writer and with the
Python writer (engine="python", the generator it replaced), and Trace.to_perfetto (Perfetto
protobuf, C++ writer), on the same parsed trace.

    python bench/export_throughput.py FILE [--repeat N] [--perfetto-only] [--no-python]
                                      [--json OUT]

The file is parsed once (tracecore.open, not timed) and step_times() called once (pyarrow's
one-time loading of compute kernels, not timed); each row writes its export to a temporary
directory --repeat times (best wins) and reports: seconds (wall, and the process's CPU time:
the dev VM is shared), output MB (1 MB = 1e6 bytes), output MB/s, input events/s, JSON objects
(or packets) written per second where known, the peak resident memory above the level before
the write (sampled every 2 ms by a thread: the C++ writers release the GIL, the Python writer
yields it every few ms), and the size over the JSON export's. Every export includes the memory
counters (record replay) and step slices, as `tracecore export` writes them. The writers run
on one core (the calling thread).

Rows:
  chrome-py     to_chrome_trace(OUT.json, engine="python")  (skipped with --perfetto-only or
                --no-python)
  chrome-cpp    to_chrome_trace(OUT.json)                   (skipped with --perfetto-only)
  perfetto      to_perfetto(OUT.pftrace)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import tracecore
from tracecore import chrome

MB = 1_000_000
_PAGE = os.sysconf("SC_PAGE_SIZE")


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * _PAGE


class _PeakRss:
    """The largest RSS seen while the block runs, sampled by a thread."""

    def __init__(self, interval: float = 0.002) -> None:
        self.interval = interval
        self.base = self.peak = 0
        self._stop = threading.Event()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.peak = max(self.peak, _rss())

    def __enter__(self) -> _PeakRss:
        self.base = self.peak = _rss()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _rss())


def _count_json_events(path: Path) -> int:
    """The objects of traceEvents: one per line after the header (the writers' layout)."""
    n = 0
    with path.open("rb") as f:
        for line in f:
            n += line.startswith(b"{\"ph\"")
    return n


def _measure(
    write: Callable[[Path], object], out: Path, repeat: int, count: bool
) -> tuple[float, float, int, int, int | None]:
    best: tuple[float, float, int, int, int | None] = (float("inf"), 0.0, 0, 0, None)
    for _ in range(repeat):
        with _PeakRss() as mem:
            wall, cpu = time.perf_counter(), time.process_time()
            write(out)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        size = out.stat().st_size
        objects = _count_json_events(out) if count else None
        out.unlink()
        if wall < best[0]:
            best = (wall, cpu, size, mem.peak - mem.base, objects)
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("file", help="a trace tracecore.open reads")
    ap.add_argument("--repeat", type=int, default=1, help="runs per row (best wins)")
    ap.add_argument("--perfetto-only", action="store_true", help="skip the Chrome JSON rows")
    ap.add_argument("--no-python", action="store_true", help="skip the Python writer's row")
    ap.add_argument("--json", metavar="OUT", help="write the rows as JSON")
    args = ap.parse_args(argv)

    start = time.perf_counter()
    t = tracecore.open(args.file)
    parse_s = time.perf_counter() - start
    events = len(t)
    print(f"{args.file}: {events} events, parsed in {parse_s:.2f} s")
    t.step_times()  # warm-up: pyarrow loads its compute kernels on the first call (~0.25 s)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        writers: list[tuple[str, Callable[[Path], object], Path, bool]] = []
        if not args.perfetto_only and not args.no_python:
            writers.append(
                (
                    "chrome-py",
                    lambda p: chrome.to_chrome_trace(t, p, engine="python"),
                    Path(tmp) / "t.json",
                    True,
                )
            )
        if not args.perfetto_only:
            writers.append(("chrome-cpp", t.to_chrome_trace, Path(tmp) / "t.json", True))
        writers.append(("perfetto", t.to_perfetto, Path(tmp) / "t.pftrace", False))
        for name, write, out, count in writers:
            wall, cpu, size, peak, objects = _measure(write, out, args.repeat, count)
            rows.append(
                {
                    "row": name,
                    "seconds": round(wall, 3),
                    "cpu_seconds": round(cpu, 3),
                    "output_mb": round(size / MB, 1),
                    "output_mb_per_s": round(size / MB / wall, 1),
                    "events_per_s": round(events / wall),
                    "json_objects_per_s": None if objects is None else round(objects / wall),
                    "peak_rss_mb": round(peak / MB, 1),
                }
            )
    json_mb = next((r["output_mb"] for r in rows if r["row"].startswith("chrome")), None)
    head = [
        ("s", 7),
        ("cpu s", 7),
        ("MB", 8),
        ("MB/s", 7),
        ("events/s", 10),
        ("objects/s", 10),
        ("peak MB", 8),
        ("size/JSON", 9),
    ]
    print(f"{'row':<11} " + " ".join(f"{h:>{w}}" for h, w in head))
    for r in rows:
        ratio = f"{r['output_mb'] / json_mb:.2f}" if json_mb else "-"
        r["size_over_json"] = None if not json_mb else round(r["output_mb"] / json_mb, 3)
        objects = "-" if r["json_objects_per_s"] is None else str(r["json_objects_per_s"])
        print(
            f"{r['row']:<11} {r['seconds']:>7.2f} {r['cpu_seconds']:>7.2f} {r['output_mb']:>8.1f}"
            f" {r['output_mb_per_s']:>7.1f} {r['events_per_s']:>10} {objects:>10}"
            f" {r['peak_rss_mb']:>8.1f} {ratio:>9}"
        )
    if args.json:
        Path(args.json).write_text(
            json.dumps({"file": args.file, "events": events, "rows": rows}, indent=1) + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
