"""Chrome trace JSON: tracecore's C++ decoder against the Python JSON loaders, same file.

    python bench/json_throughput.py FILE [--repeat N] [--no-json] [--out OUT.json]
    python bench/json_throughput.py --generate SIZE_MB [...]   (bench/make_kineto.py first)

Every row runs in a fresh process, so its peak RSS is its own:

  tracecore.open   tracecore.open(FILE, cache=False) and its events table in Python: the whole
                   import into the tables (one thread; event_stats, built on first use, is
                   not asked for). Its peak RSS less the interpreter's after `import
                   tracecore` is "+RSS", what the open adds. Best of --repeat, each fresh.
  tracecore-json   bench/cpp/json_bench (built here with -DTRACECORE_BUILD_BENCH=ON into
                   build/bench if missing): the file memory-mapped and decoded by
                   chrome_json::DecodeChromeTrace with a visitor that reads every field and
                   arg; pages behind the decoder are released every 64 MB. Best of --repeat.
  orjson           orjson.loads(bytes) of the same file (the bytes read beforehand), with the
                   garbage collector on (as users run it), and once more with it off.
  json             json.loads(bytes), likewise (--no-json skips it: it needs ~10x the file).

Columns: MB/s (1 MB = 1e6 bytes) over wall time and over the process's CPU time (the dev VM is
shared: CPU time is the steadier figure), events/s, peak RSS (VmHWM) and that over the file
size. The loaders' figures include building the Python objects: that is what loading costs
them; tracecore-json is the decoder alone, tracecore.open the decoder and the tables.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
sys.path.insert(0, str(BENCH_DIR))
from throughput import _kib_status  # noqa: E402  (the same VmHWM / VmRSS reading)

BENCH_BUILD = REPO_DIR / "build" / "bench"
MB = 1_000_000


def _child_loader(spec: dict[str, Any]) -> dict[str, Any]:
    import importlib

    module = importlib.import_module(spec["loader"])
    data = Path(spec["path"]).read_bytes()
    if not spec["gc"]:
        gc.disable()
    base = _kib_status()
    w0, c0 = time.perf_counter(), time.process_time()
    doc = module.loads(data)
    w1, c1 = time.perf_counter(), time.process_time()
    after = _kib_status()
    events = len(doc["traceEvents"]) if isinstance(doc, dict) else len(doc)
    return {"seconds": w1 - w0, "cpu_seconds": c1 - c0, "events": events,
            "baseline_rss_kib": base["VmRSS"], "peak_rss_kib": after["VmHWM"],
            "version": getattr(module, "__version__", sys.version.split()[0])}


def _child_open(spec: dict[str, Any]) -> dict[str, Any]:
    import tracecore

    base = _kib_status()
    w0, c0 = time.perf_counter(), time.process_time()
    t = tracecore.open(spec["path"], cache=False)
    events = len(t.events)
    w1, c1 = time.perf_counter(), time.process_time()
    after = _kib_status()
    return {"seconds": w1 - w0, "cpu_seconds": c1 - c0, "events": events,
            "baseline_rss_kib": base["VmRSS"], "peak_rss_kib": after["VmHWM"],
            "added_rss_kib": after["VmHWM"] - base["VmRSS"], "version": tracecore.__version__}


def _run_open(path: str, repeat: int) -> dict[str, Any]:
    best: dict[str, Any] = {}
    for _ in range(repeat):
        r = _run_child({"open": True, "path": path})
        if "error" in r:
            return r
        if not best or r["cpu_seconds"] < best["cpu_seconds"]:
            best = r
    return best


def _run_child(spec: dict[str, Any]) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, __file__, "--child", json.dumps(spec)],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr else "failed"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _json_bench() -> Path:
    exe = BENCH_BUILD / "json_bench"
    if not exe.exists():
        subprocess.run(["cmake", "-S", str(REPO_DIR), "-B", str(BENCH_BUILD),
                        "-DTRACECORE_BUILD_BENCH=ON", "-DCMAKE_BUILD_TYPE=Release"],
                       check=True, capture_output=True)
        subprocess.run(["cmake", "--build", str(BENCH_BUILD), "-j", "2", "--target", "json_bench"],
                       check=True, capture_output=True)
    return exe


def _run_tracecore(path: str, repeat: int) -> dict[str, Any]:
    proc = subprocess.run([str(_json_bench()), path, str(repeat)], capture_output=True, text=True,
                          check=False)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip()}
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["peak_rss_kib"] = int(out.pop("peak_rss_mb") * 1024)
    return out


def _row(name: str, size: int, r: dict[str, Any]) -> str:
    if "error" in r:
        return f"{name:<18} error: {r['error']}"
    peak_mb = r["peak_rss_kib"] * 1024 / MB
    added = r.get("added_rss_kib")
    extra = f"  +RSS {added * 1024 / MB:.0f} MB = {added * 1024 / size:.2f}x" if added else ""
    return (f"{name:<18} {size / r['seconds'] / MB:9.0f} {size / r['cpu_seconds'] / MB:9.0f} "
            f"{r['events'] / r['cpu_seconds'] / 1e6:9.2f} {peak_mb:9.0f} "
            f"{peak_mb * MB / size:7.2f}x{extra}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", nargs="?")
    parser.add_argument("--generate", type=float, metavar="SIZE_MB",
                        help="generate a Kineto trace of this size with make_kineto.py first")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-json", action="store_true", help="skip json.loads")
    parser.add_argument("--no-orjson", action="store_true", help="skip orjson.loads")
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        spec = json.loads(args.child)
        print(json.dumps(_child_open(spec) if spec.get("open") else _child_loader(spec)))
        return 0
    path = args.file
    if args.generate:
        from make_kineto import make_kineto

        path = path or f"/tmp/kineto_{args.generate:g}MB.pt.trace.json"
        if not Path(path).exists():
            print(f"generating {path} ...", flush=True)
            print(json.dumps(make_kineto(args.generate, Path(path))), flush=True)
    if not path:
        parser.error("a FILE or --generate SIZE_MB is needed")
    size = os.path.getsize(path)
    with open(path, "rb") as f:  # warm the page cache, a piece at a time (the children inherit
        while f.read(64 << 20):  # this process's peak RSS in their rusage; VmHWM is theirs)
            pass
    results: dict[str, Any] = {"file": path, "bytes": size}
    print(f"{path}: {size / MB:.0f} MB")
    print(f"{'':<18} {'MB/s':>9} {'MB/s cpu':>9} {'Mev/s cpu':>9} {'peak MB':>9} {'/file':>8}")
    rows = [("tracecore.open", lambda: _run_open(path, args.repeat)),
            ("tracecore-json", lambda: _run_tracecore(path, args.repeat))]
    if not args.no_orjson:
        rows += [("orjson", lambda: _run_child({"loader": "orjson", "path": path, "gc": True})),
                 ("orjson (gc off)", lambda: _run_child({"loader": "orjson", "path": path,
                                                          "gc": False}))]
    if not args.no_json:
        rows += [("json", lambda: _run_child({"loader": "json", "path": path, "gc": True})),
                 ("json (gc off)", lambda: _run_child({"loader": "json", "path": path,
                                                        "gc": False}))]
    for name, run in rows:
        r = run()
        results[name] = r
        print(_row(name, size, r), flush=True)
    for mine in ("tracecore.open", "tracecore-json"):
        ours = results[mine]
        for peer in ("orjson", "orjson (gc off)", "json"):
            if peer in results and "error" not in results[peer] and "error" not in ours:
                cpu = results[peer]["cpu_seconds"] / ours["cpu_seconds"]
                wall = results[peer]["seconds"] / ours["seconds"]
                print(f"{mine} / {peer}: {cpu:.1f}x (CPU), {wall:.1f}x (wall)")
    if args.out:
        args.out.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
