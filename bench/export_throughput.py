"""Export throughput: Trace.to_chrome_trace (Chrome JSON, Python writer) against
Trace.to_perfetto (Perfetto protobuf, C++ writer) on the same parsed trace.

    python bench/export_throughput.py FILE [--repeat N] [--perfetto-only] [--json OUT]

The file is parsed once (tracecore.open, not timed) and step_times() called once (pyarrow's
one-time loading of compute kernels, not timed); each row writes its export to a temporary
directory --repeat times (best wins) and reports: seconds (wall, and the process's CPU time:
the dev VM is shared), output MB (1 MB = 1e6 bytes), output MB/s, input events/s, and the size
over the JSON export's. Both exports include the memory counters (record replay) and step
slices, as `tracecore export` writes them.

Rows:
  chrome-json   Trace.to_chrome_trace(OUT.json)   (skipped with --perfetto-only)
  perfetto      Trace.to_perfetto(OUT.pftrace)
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import tracecore

MB = 1_000_000


def _measure(write, out: Path, repeat: int) -> tuple[float, float, int]:
    best = (float("inf"), float("inf"), 0)
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        write(out)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        size = out.stat().st_size
        out.unlink()
        if wall < best[0]:
            best = (wall, cpu, size)
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("file", help="a trace tracecore.open reads")
    ap.add_argument("--repeat", type=int, default=1, help="runs per row (best wins)")
    ap.add_argument("--perfetto-only", action="store_true", help="skip the Chrome JSON row")
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
        writers = []
        if not args.perfetto_only:
            writers.append(("chrome-json", t.to_chrome_trace, Path(tmp) / "t.json"))
        writers.append(("perfetto", t.to_perfetto, Path(tmp) / "t.pftrace"))
        for name, write, out in writers:
            wall, cpu, size = _measure(write, out, args.repeat)
            rows.append(
                {
                    "row": name,
                    "seconds": round(wall, 3),
                    "cpu_seconds": round(cpu, 3),
                    "output_mb": round(size / MB, 1),
                    "output_mb_per_s": round(size / MB / wall, 1),
                    "events_per_s": round(events / wall),
                }
            )
    json_mb = next((r["output_mb"] for r in rows if r["row"] == "chrome-json"), None)
    head = [("s", 7), ("cpu s", 7), ("MB", 8), ("MB/s", 7), ("events/s", 10), ("size/JSON", 9)]
    print(f"{'row':<12} " + " ".join(f"{h:>{w}}" for h, w in head))
    for r in rows:
        ratio = f"{r['output_mb'] / json_mb:.2f}" if json_mb else "-"
        r["size_over_json"] = None if not json_mb else round(r["output_mb"] / json_mb, 3)
        print(
            f"{r['row']:<12} {r['seconds']:>7.2f} {r['cpu_seconds']:>7.2f} {r['output_mb']:>8.1f}"
            f" {r['output_mb_per_s']:>7.1f} {r['events_per_s']:>10} {ratio:>9}"
        )
    if args.json:
        Path(args.json).write_text(
            json.dumps({"file": args.file, "events": events, "rows": rows}, indent=1) + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
