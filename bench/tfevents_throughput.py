"""Reading TensorBoard event files: tracecore's scan next to TensorBoard's own loader.

    python bench/tfevents_throughput.py PATH [PATH...] [--repeat N] [--peer-repeat N]
                                        [--no-peer] [--no-raw-peer] [--no-cpp] [--json OUT]
    python bench/tfevents_throughput.py --generate SIZE_MB [--logdir] [...]

PATH is an event file or a log directory (every `*tfevents*` file under it, one pass reads them
all). --generate writes the input first with bench/make_tfevents.py (to bench/data/). Every
measurement runs in a fresh subprocess after one read of the files (warm page cache). Rows:

  tracecore scan        _core.tfevents_scan(path) on every file: framing, both CRC-32Cs of
                        every record, every Event decoded, RunMetadata listed (best of --repeat)
  tracecore open t=N    _core.open_event_file(path, threads=N): the scan, then every
                        RunMetadata parsed into tables in place (t=1: one thread; t=all: every
                        core); what tracecore.open of an event file costs
  cpp records / scan /  bench/cpp/tfevents_bench (if built, see bench/README.md): the C++ core
  portable              alone; `records` = framing + CRCs only, `portable` = the same with the
                        table CRC instead of the SSE4.2 instruction
  tensorboard           tensorboard.backend.event_processing.event_file_loader.EventFileLoader
                        (what TensorBoard's backend iterates), every event of every file
                        (--peer-repeat runs, default 1: it is slow)
  tensorboard raw       RawEventFileLoader: its framing and CRC checks only, no Event parsing

MB/s = bytes of the files / wall seconds / 1e6 (CPU MB/s: / CPU seconds of the process, less
sensitive to other load on the machine); records/s; RunMetadata found (tracecore) or events
holding one (tensorboard: summary values of plugin graph_run_metadata(_graph) or
graph_tagged_run_metadata, into which its loader turns Event.tagged_run_metadata).
Peak RSS is the child's VmHWM. Without TensorFlow installed, TensorBoard reads records with its
pure-Python stub (tensorboard.compat.tensorflow_stub), which is what this measures.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
sys.path.insert(0, str(BENCH_DIR))

from throughput import _run_child, _warm  # noqa: E402

CPP_BENCH = REPO_DIR / "build" / "bench" / "tfevents_bench"
MB = 1_000_000
# EventFileLoader turns Event.tagged_run_metadata into a summary value of the last plugin.
RUN_METADATA_PLUGINS = ("graph_run_metadata_graph", "graph_run_metadata",
                        "graph_tagged_run_metadata")


def event_files(path: str) -> list[str]:
    p = Path(path)
    if p.is_dir():
        return sorted(str(f) for f in p.rglob("*") if f.is_file() and "tfevents" in f.name)
    return [str(p)]


# --------------------------------------------------------------------------------------------
# Child side: one measurement, printed as one JSON line.

def _hwm_kib() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def _child_tracecore(spec: dict) -> dict:
    from tracecore import _core

    files = spec["files"]
    threads = spec.get("threads")  # None: the scan alone; else open_event_file's threads

    def read(f: str) -> tuple[dict, int]:
        if threads is None:
            return _core.tfevents_scan(f), 0
        result = _core.open_event_file(f, threads=threads)
        return result, sum(t.num_events for t in result["traces"] if t is not None)

    read(files[0])  # first call: module and page warm-up
    best = best_cpu = float("inf")
    records = run_metadata = events = 0
    for _ in range(spec["repeat"]):
        t0, c0 = time.perf_counter(), time.process_time()
        records = run_metadata = events = 0
        for f in files:
            scan, n = read(f)
            records += scan["records"]
            run_metadata += len(scan["run_metadata"])
            events += n
            del scan
        best = min(best, time.perf_counter() - t0)
        best_cpu = min(best_cpu, time.process_time() - c0)
    return {"seconds": best, "cpu_seconds": best_cpu, "records": records,
            "run_metadata": run_metadata, "events": events, "peak_rss_kib": _hwm_kib()}


def _child_tensorboard(spec: dict) -> dict:
    import logging

    from tensorboard.backend.event_processing import event_file_loader

    logging.getLogger("tensorboard").setLevel(logging.ERROR)
    raw = spec["engine"] == "tensorboard_raw"
    best = best_cpu = float("inf")
    records = run_metadata = 0
    for _ in range(spec["repeat"]):
        records = run_metadata = 0
        t0, c0 = time.perf_counter(), time.process_time()
        for f in spec["files"]:
            if raw:
                for _record in event_file_loader.RawEventFileLoader(f).Load():
                    records += 1
                continue
            for event in event_file_loader.EventFileLoader(f).Load():
                records += 1
                what = event.WhichOneof("what")
                if what == "tagged_run_metadata":
                    run_metadata += 1
                elif what == "summary":
                    run_metadata += sum(
                        1 for v in event.summary.value
                        if v.metadata.plugin_data.plugin_name in RUN_METADATA_PLUGINS
                        and v.WhichOneof("value") == "tensor" and v.tensor.string_val)
        best = min(best, time.perf_counter() - t0)
        best_cpu = min(best_cpu, time.process_time() - c0)
    import tensorboard
    return {"seconds": best, "cpu_seconds": best_cpu, "records": records,
            "run_metadata": None if raw else run_metadata, "peak_rss_kib": _hwm_kib(),
            "version": tensorboard.__version__}


def _child_main(spec_json: str) -> int:
    spec = json.loads(spec_json)
    child = _child_tracecore if spec["engine"] == "tracecore" else _child_tensorboard
    try:
        result = child(spec)
    except Exception as e:  # noqa: BLE001  (report it as a row, keep benchmarking)
        result = {"error": f"{type(e).__name__}: {e}"[:500]}
    sys.stdout.write("\n@@RESULT@@" + json.dumps(result) + "\n")
    return 0


# --------------------------------------------------------------------------------------------
# Parent side

def _measure(spec: dict) -> dict:
    argv = [sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(spec)]
    stdout, stderr, rc, maxrss = _run_child(argv)
    m = re.search(r"@@RESULT@@(.*)", stdout)
    if not m:
        tail = (stderr.strip().splitlines() or [f"exit code {rc}"])[-1]
        return {"error": f"child failed (rc={rc}): {tail}"[:500]}
    res = json.loads(m.group(1))
    res.setdefault("peak_rss_kib", maxrss)
    return res


def _cpp(files: list[str], repeat: int) -> list[dict]:
    if not CPP_BENCH.exists():
        return []
    out = subprocess.run([str(CPP_BENCH), "-n", str(repeat), *files], capture_output=True,
                         text=True, check=False)
    rows = []
    for line in out.stdout.splitlines():
        r = json.loads(line)
        rows.append({"engine": f"cpp {r['mode']}", "seconds": r["best_seconds"],
                     "cpu_seconds": r["best_cpu_seconds"],
                     "records": r["records"],
                     "run_metadata": r["run_metadata"] if r["mode"] == "scan" else None,
                     "hardware_crc": r["hardware_crc"]})
    if out.returncode != 0:
        rows.append({"engine": "cpp", "error": out.stderr.strip()[-300:]})
    return rows


def measure(path: str, args) -> list[dict]:
    files = event_files(path)
    size = sum(_warm(f) for f in files)
    rows = [{"engine": "tracecore scan", **_measure(
        {"engine": "tracecore", "files": files, "repeat": args.repeat})}]
    for threads in (1, 0):
        rows.append({"engine": f"tracecore open t={threads or 'all'}", **_measure(
            {"engine": "tracecore", "files": files, "repeat": args.repeat, "threads": threads})})
    if not args.no_cpp:
        rows += _cpp(files, args.repeat)
    if not args.no_peer:
        for engine in ("tensorboard",) if args.no_raw_peer else ("tensorboard", "tensorboard_raw"):
            rows.append({"engine": engine.replace("_", " "), **_measure(
                {"engine": engine, "files": files, "repeat": args.peer_repeat})})
    for r in rows:
        r.update(path=path, files=len(files), bytes=size)
        if "seconds" in r:
            r["mb_per_s"] = size / r["seconds"] / MB
            r["cpu_mb_per_s"] = size / r["cpu_seconds"] / MB
            r["records_per_s"] = r["records"] / r["seconds"]
    peer = next((r for r in rows if r["engine"] == "tensorboard" and "seconds" in r), None)
    if peer is not None:
        for r in rows:
            if "seconds" in r:
                r["x_tensorboard"] = peer["seconds"] / r["seconds"]
                r["x_tensorboard_cpu"] = peer["cpu_seconds"] / r["cpu_seconds"]
    return rows


def _print(rows: list[dict]) -> None:
    head = rows[0]
    print(f"\n{head['path']}: {head['files']} file(s), {head['bytes'] / MB:.1f} MB")
    print(f"  {'engine':<20}{'seconds':>10}{'MB/s':>10}{'CPU MB/s':>10}{'records/s':>12}"
          f"{'records':>10}{'RunMeta':>9}{'peak MB':>9}{'x TB':>8}{'x TB CPU':>9}")
    for r in rows:
        if "error" in r:
            print(f"  {r['engine']:<20}ERROR {r['error']}")
            continue
        rm = "" if r.get("run_metadata") is None else str(r["run_metadata"])
        peak = f"{r['peak_rss_kib'] / 1024:.0f}" if r.get("peak_rss_kib") else ""
        x = f"{r['x_tensorboard']:.0f}" if "x_tensorboard" in r else ""
        x_cpu = f"{r['x_tensorboard_cpu']:.0f}" if "x_tensorboard_cpu" in r else ""
        print(f"  {r['engine']:<20}{r['seconds']:>10.4f}{r['mb_per_s']:>10.1f}"
              f"{r['cpu_mb_per_s']:>10.1f}{r['records_per_s']:>12.0f}{r['records']:>10}{rm:>9}"
              f"{peak:>9}{x:>8}{x_cpu:>9}")


def main() -> int:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        return _child_main(sys.argv[2])
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="*")
    parser.add_argument("--generate", type=float, metavar="SIZE_MB")
    parser.add_argument("--logdir", action="store_true", help="with --generate: a log directory")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--peer-repeat", type=int, default=1)
    parser.add_argument("--no-peer", action="store_true")
    parser.add_argument("--no-raw-peer", action="store_true",
                        help="skip the tensorboard raw row (another slow pass)")
    parser.add_argument("--no-cpp", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    paths = list(args.paths)
    if args.generate:
        gen = [sys.executable, str(BENCH_DIR / "make_tfevents.py"), str(args.generate)]
        if args.logdir:
            gen.append("--logdir")
        info = json.loads(subprocess.run(gen, check=True, capture_output=True, text=True).stdout)
        print("generated:", json.dumps(info))
        paths.append(info["path"])
    if not paths:
        parser.error("no input (PATH or --generate)")
    print(f"# {platform.node()} {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} CPUs, python {platform.python_version()}")
    all_rows = []
    for p in paths:
        rows = measure(p, args)
        _print(rows)
        all_rows += rows
    if args.json:
        args.json.write_text(json.dumps(all_rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
