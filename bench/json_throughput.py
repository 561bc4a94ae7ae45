"""Chrome trace JSON: tracecore's C++ decoder against the Python JSON loaders, same file.

    python bench/json_throughput.py FILE [--repeat N] [--no-json] [--no-orjson] [--no-simdjson]
                                         [--out OUT.json]
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
  simdjson parse   pysimdjson's simdjson.Parser().parse(bytes) alone (the bytes read
                   beforehand): simdjson copying the input into its padded buffer, then its
                   C++ stage 1 and stage 2 building its tape; Python objects are made lazily,
                   so none are (the events are counted after the clock stops). The first
                   parse in a fresh process and a fresh Parser, as a user sees it: it pays the
                   page faults of the buffer and the tape. Best of --repeat, each fresh.
  simdjson parse (warm)  the same Parser parsing the same bytes again (--repeat more times in
                   each of those processes), reusing its tape: the best of them, simdjson's
                   speed once its memory is in place (peak RSS: the process's after them all).
  simdjson loads   simdjson.loads(bytes), which builds the Python objects, like orjson's row
                   (gc on). pysimdjson missing: these rows are skipped with a note on stderr
                   (--no-simdjson skips them too).
  json             json.loads(bytes), like orjson's rows, gc on and off (--no-json skips it: it
                   needs ~10x the file).

Columns: MB/s (1 MB = 1e6 bytes) over wall time and over the process's CPU time (the dev VM is
shared: CPU time is the steadier figure), events/s, peak RSS (VmHWM) and that over the file
size. The loaders' figures include building the Python objects: that is what loading costs
them; tracecore-json is the decoder alone, tracecore.open the decoder and the tables, simdjson
parse simdjson's parser alone (its tape, no Python objects). The ratios at the end are speeds:
"A / B: 2.0x" is A twice as fast as B (B's time over A's); against simdjson's parse both ways.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
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
            "version": _version(module)}


def _version(module: Any) -> str:
    if hasattr(module, "__version__"):
        return str(module.__version__)
    if module.__name__ == "simdjson":  # pysimdjson has no __version__
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("pysimdjson")
        except PackageNotFoundError:  # a simdjson module from another distribution
            return "unknown"
    return sys.version.split()[0]


def _child_simdjson_parse(spec: dict[str, Any]) -> dict[str, Any]:
    """simdjson.Parser().parse(bytes) alone: the first parse, then spec["warm"] more with the
    same Parser (its tape reused). The first parse's figures at the top level, the best later
    one's under "warm"."""
    import simdjson

    data = Path(spec["path"]).read_bytes()
    parser = simdjson.Parser()
    base = _kib_status()
    w0, c0 = time.perf_counter(), time.process_time()
    doc = parser.parse(data)
    w1, c1 = time.perf_counter(), time.process_time()
    out: dict[str, Any] = {"seconds": w1 - w0, "cpu_seconds": c1 - c0,
                           "baseline_rss_kib": base["VmRSS"],
                           "peak_rss_kib": _kib_status()["VmHWM"], "version": _version(simdjson)}
    out["events"] = len(doc["traceEvents"]) if isinstance(doc, simdjson.Object) else len(doc)
    del doc  # the parser refuses to parse again while a proxy into its tape is alive
    warm: dict[str, Any] = {}
    for _ in range(spec["warm"]):
        w0, c0 = time.perf_counter(), time.process_time()
        doc = parser.parse(data)
        w1, c1 = time.perf_counter(), time.process_time()
        del doc
        if not warm or c1 - c0 < warm["cpu_seconds"]:
            warm = {"seconds": w1 - w0, "cpu_seconds": c1 - c0}
    if warm:
        warm.update(events=out["events"], baseline_rss_kib=base["VmRSS"],
                    peak_rss_kib=_kib_status()["VmHWM"], version=out["version"])
    out["warm"] = warm
    return out


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


def _run_best(spec: dict[str, Any], repeat: int) -> dict[str, Any]:
    """The child with the least CPU time of `repeat`, each fresh; a child's "warm" result (the
    simdjson parse's later parses) is replaced by the best "warm" of them all."""
    best: dict[str, Any] = {}
    warm: dict[str, Any] = {}
    for _ in range(repeat):
        r = _run_child(spec)
        if "error" in r:
            return r
        w = r.pop("warm", None)
        if w and (not warm or w["cpu_seconds"] < warm["cpu_seconds"]):
            warm = w
        if not best or r["cpu_seconds"] < best["cpu_seconds"]:
            best = r
    if warm:
        best["warm"] = warm
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
        return f"{name:<21} error: {r['error']}"
    peak_mb = r["peak_rss_kib"] * 1024 / MB
    added = r.get("added_rss_kib")
    extra = f"  +RSS {added * 1024 / MB:.0f} MB = {added * 1024 / size:.2f}x" if added else ""
    return (f"{name:<21} {size / r['seconds'] / MB:9.0f} {size / r['cpu_seconds'] / MB:9.0f} "
            f"{r['events'] / r['cpu_seconds'] / 1e6:9.2f} {peak_mb:9.0f} "
            f"{peak_mb * MB / size:7.2f}x{extra}")


def _x(ratio: float) -> str:
    return f"{ratio:.2f}x" if ratio < 1 else f"{ratio:.1f}x"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", nargs="?")
    parser.add_argument("--generate", type=float, metavar="SIZE_MB",
                        help="generate a Kineto trace of this size with make_kineto.py first")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-json", action="store_true", help="skip json.loads")
    parser.add_argument("--no-orjson", action="store_true", help="skip orjson.loads")
    parser.add_argument("--no-simdjson", action="store_true",
                        help="skip simdjson's parse and simdjson.loads")
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        spec = json.loads(args.child)
        child = (_child_open if spec.get("open") else
                 _child_simdjson_parse if spec.get("simdjson_parse") else _child_loader)
        print(json.dumps(child(spec)))
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
    print(f"{'':<21} {'MB/s':>9} {'MB/s cpu':>9} {'Mev/s cpu':>9} {'peak MB':>9} {'/file':>8}")
    rows = [("tracecore.open", lambda: _run_best({"open": True, "path": path}, args.repeat)),
            ("tracecore-json", lambda: _run_tracecore(path, args.repeat))]
    if not args.no_orjson:
        rows += [("orjson", lambda: _run_child({"loader": "orjson", "path": path, "gc": True})),
                 ("orjson (gc off)", lambda: _run_child({"loader": "orjson", "path": path,
                                                          "gc": False}))]
    if not args.no_simdjson and importlib.util.find_spec("simdjson") is None:
        print("simdjson not importable (pip install pysimdjson): its rows skipped", file=sys.stderr)
    elif not args.no_simdjson:
        rows += [("simdjson parse", lambda: _run_best({"simdjson_parse": True, "path": path,
                                                       "warm": args.repeat}, args.repeat)),
                 ("simdjson parse (warm)", lambda: results["simdjson parse"].pop("warm", None)
                  or {"error": results["simdjson parse"].get("error", "no later parse")}),
                 ("simdjson loads", lambda: _run_child({"loader": "simdjson", "path": path,
                                                         "gc": True}))]
    if not args.no_json:
        rows += [("json", lambda: _run_child({"loader": "json", "path": path, "gc": True})),
                 ("json (gc off)", lambda: _run_child({"loader": "json", "path": path,
                                                        "gc": False}))]
    for name, run in rows:
        r = run()
        results[name] = r
        print(_row(name, size, r), flush=True)
    print("speed ratios: A / B is B's time over A's (above 1, A is the faster)")
    for mine in ("tracecore.open", "tracecore-json"):
        ours = results[mine]
        for peer in ("orjson", "orjson (gc off)", "json", "simdjson loads", "simdjson parse",
                     "simdjson parse (warm)"):
            if peer in results and "error" not in results[peer] and "error" not in ours:
                cpu = results[peer]["cpu_seconds"] / ours["cpu_seconds"]
                wall = results[peer]["seconds"] / ours["seconds"]
                print(f"{mine} / {peer}: {_x(cpu)} (CPU), {_x(wall)} (wall)")
                if peer.startswith("simdjson parse"):  # both ways: simdjson's own speed
                    print(f"  {peer} / {mine}: {_x(1 / cpu)} (CPU), {_x(1 / wall)} (wall)")
    if args.out:
        args.out.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
