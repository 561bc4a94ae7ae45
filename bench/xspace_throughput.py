"""XSpace read throughput and peak memory, next to protobuf C++ and XProf, each in a fresh process.

    python bench/xspace_throughput.py [--size-mb 1100] [--file PATH] [--data-dir DIR] [--repeat 3]
                                      [--xprof-size-mb 20] [--xprof-mem-gb 8] [--no-xprof]
                                      [--json OUT]

Input: bench/make_xspace.py's generated XSpace of --size-mb MB (made once, cached in
bench/data/), or --file. Rows, each run as its own child process (peak RSS from os.wait4 of
that child alone, which counts the input's mapped or read pages):

  xspace decoder (C++)       build/bench/xspace_bench FILE N: the XSpace decoder alone (no
                             tables), the file mapped; best of N decodes, wall and CPU time.
  tracecore.open             tracecore.open(FILE, threads=1): the whole import into tables
                             (one core), each of N runs in a fresh process; best wall time
                             (and that run's CPU time), the highest peak RSS of the N. The
                             process first opens the bundled sample (pyarrow's one-time
                             loading is then in the baseline: "+RSS" is the peak minus the RSS
                             just before the call); the peak RSS column is the process's own
                             VmHWM right after the open. After that, the run's tables are sized
                             (`tables MB`: distinct Arrow buffers, per table in --json).
                             Its CPU time is split into user (tracecore's own work) and sys
                             (the kernel, mostly clearing the fresh pages the tables fill).
  protobuf C++               bench/peers/build.sh's xplane_parse FILE N: XSpace::ParseFromString
                             of the file's bytes (read beforehand) into an arena, generated from
                             bench/peers/xplane.proto; best of N
  XProf trace_viewer         xprof's raw_to_tool_data.xspace_to_tool_data([FILE], "trace_viewer")
                             (xprof 2.24: the conversion TensorBoard's profile plugin serves),
                             once, with RLIMIT_AS = --xprof-mem-gb GB and a timeout: XProf
                             takes tens of GB on GB-sized files, which would take the machine
                             down. With --xprof-size-mb, also on a smaller generated file (the
                             decoder and protobuf rows are repeated on it, for ratios on the
                             same input).

MB/s = input bytes / seconds / 1e6; events/s = the input's events (the decoder's count: XProf's
viewer keeps at most a million of them) / seconds. The ratios printed last are each row's time
over tracecore.open's (and over the decoder's).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
sys.path.insert(0, str(BENCH_DIR))

import make_xspace  # noqa: E402
from throughput import _run_child  # noqa: E402

MB = 1_000_000
DECODER = REPO_DIR / "build" / "bench" / "xspace_bench"
PROTOBUF_PEER = Path("/tmp/tracecore-xspace-peer/xplane_parse")

TRACECORE_CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, sys.argv[2])
import tracecore
from tracecore._arrow import buffer_bytes
from throughput import _kib_status as status

_ = tracecore.open(tracecore.sample_path()).events  # pyarrow's one-time loading: baseline
base = status()
r0 = resource.getrusage(resource.RUSAGE_THREAD)
c0, t0 = time.thread_time(), time.perf_counter()
trace = tracecore.open(sys.argv[1], threads=1)
t1, c1 = time.perf_counter(), time.thread_time()
r1 = resource.getrusage(resource.RUSAGE_THREAD)
events = len(trace)
after = status()
tables = {name: buffer_bytes([trace.table(name)]) for name in trace.table_names}
print("@@RESULT@@" + json.dumps({
    "seconds": t1 - t0, "cpu_seconds": c1 - c0, "events": events,
    "user_seconds": r1.ru_utime - r0.ru_utime, "sys_seconds": r1.ru_stime - r0.ru_stime,
    "minor_faults": r1.ru_minflt - r0.ru_minflt,
    "baseline_rss_kib": base["VmRSS"], "peak_rss_after_kib": after["VmHWM"],
    "anon_rss_after_kib": after.get("RssAnon"), "file_rss_after_kib": after.get("RssFile"),
    "tables_bytes": buffer_bytes(trace.table(n) for n in trace.table_names),
    "table_bytes": tables, "rows": {n: trace.table(n).num_rows for n in trace.table_names},
    "version": getattr(tracecore, "__version__", None)}))
"""

XPROF_CHILD = r"""
import json, re, resource, sys, time
limit = int(float(sys.argv[2]) * (1 << 30))
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
from xprof.convert import raw_to_tool_data
t0 = time.perf_counter()
data, _ = raw_to_tool_data.xspace_to_tool_data([sys.argv[1]], "trace_viewer",
                                               {"use_saved_result": False})
seconds = time.perf_counter() - t0
if data is None:
    raise SystemExit("xprof returned no data")
text = data if isinstance(data, str) else data.decode()
events = len(re.findall(r'"ph": ?"[Xi]"', text))
print("@@RESULT@@" + json.dumps({"seconds": seconds, "output_bytes": len(text),
                                 "output_events": events}))
"""


def build_decoder() -> Path:
    # CONTRIBUTING's `cmake -B build` puts it in build/; this script's own build in build/bench.
    if not DECODER.exists() and (REPO_DIR / "build" / "xspace_bench").exists():
        return REPO_DIR / "build" / "xspace_bench"
    if not DECODER.exists():
        build = REPO_DIR / "build" / "bench"
        subprocess.run(["cmake", "-S", str(REPO_DIR), "-B", str(build),
                        "-DTRACECORE_BUILD_BENCH=ON", "-DCMAKE_BUILD_TYPE=Release"],
                       check=True, capture_output=True)
        subprocess.run(["cmake", "--build", str(build), "--target", "xspace_bench", "-j", "2"],
                       check=True, capture_output=True)
    return DECODER


def build_protobuf_peer() -> Path | None:
    if not PROTOBUF_PEER.exists():
        done = subprocess.run([str(BENCH_DIR / "peers" / "build.sh"), str(PROTOBUF_PEER.parent)],
                              capture_output=True, text=True, check=False)
        if done.returncode != 0:
            print(f"protobuf C++ peer not built: {done.stderr.strip()[-300:]}", file=sys.stderr)
            return None
    return PROTOBUF_PEER


def json_line(stdout: str) -> dict:
    for line in reversed(stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise ValueError(f"no JSON in {stdout[-300:]!r}")


def run_decoder(path: Path, repeat: int) -> dict:
    stdout, stderr, rc, rss = _run_child([str(build_decoder()), str(path), str(repeat), "--json"])
    if rc != 0:
        return {"error": stderr.strip()[-300:]}
    r = json_line(stdout)
    return {"seconds": r["seconds"], "cpu_seconds": r["cpu_seconds"], "events": r["events"],
            "peak_rss_kib": rss}


def run_protobuf(path: Path, repeat: int) -> dict:
    peer = build_protobuf_peer()
    if peer is None:
        return {"error": "not built (bench/peers/build.sh)"}
    stdout, stderr, rc, rss = _run_child([str(peer), str(path), str(repeat)])
    if rc != 0:
        return {"error": stderr.strip()[-300:]}
    r = json_line(stdout)
    return {"seconds": r["seconds"], "events": r["events"], "peak_rss_kib": rss}


def _ensure(size_mb: float, out_dir: Path) -> Path:
    """make_xspace.py's file of that size, generated in a child process if missing: the
    generator holds several times the file, and a child forked from a large parent starts
    with the parent's RSS as its wait4 peak."""
    path = out_dir / f"xspace_{size_mb:g}mb.xplane.pb"
    if not path.exists():
        subprocess.run([sys.executable, str(BENCH_DIR / "make_xspace.py"), f"{size_mb:g}",
                        "--out", str(out_dir)], check=True)
    return path


def run_tracecore(path: Path, repeat: int, timeout: float = 1800.0) -> dict:
    """tracecore.open(path, threads=1) in `repeat` fresh processes: the fastest run's figures,
    with the highest peak RSS of all runs (the child's own VmHWM right after the open)."""
    runs = []
    for _ in range(max(repeat, 1)):
        stdout, stderr, rc, rss = _run_child([sys.executable, "-c", TRACECORE_CHILD, str(path),
                                              str(BENCH_DIR)],
                                             timeout)
        m = re.search(r"@@RESULT@@(.*)", stdout)
        if rc != 0 or not m:
            tail = [ln for ln in stderr.strip().splitlines() if ln.strip()][-1:] or [f"exit {rc}"]
            return {"error": f"rc={rc}: {tail[0][-300:]}", "peak_rss_kib": rss}
        r = json.loads(m.group(1))
        r["peak_rss_kib"] = r["peak_rss_after_kib"]
        r["wait4_peak_rss_kib"] = rss
        runs.append(r)
    best = dict(min(runs, key=lambda r: r["seconds"]))
    best["peak_rss_kib"] = max(r["peak_rss_kib"] for r in runs)
    best["plus_rss_kib"] = max(r["peak_rss_after_kib"] - r["baseline_rss_kib"] for r in runs)
    best["runs_seconds"] = [r["seconds"] for r in runs]
    return best


def run_xprof(path: Path, mem_gb: float, timeout: float) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        # XProf may write cached results beside the file it reads: give it a link of its own.
        link = Path(tmp) / "host.xplane.pb"
        os.symlink(path.resolve(), link)
        stdout, stderr, rc, rss = _run_child(
            [sys.executable, "-c", XPROF_CHILD, str(link), str(mem_gb)], timeout)
    m = re.search(r"@@RESULT@@(.*)", stdout)
    if rc != 0 or not m:
        tail = [ln for ln in stderr.strip().splitlines() if ln.strip()][-1:] or [f"exit {rc}"]
        return {"error": f"rc={rc} (RLIMIT_AS {mem_gb:g} GB, timeout {timeout:g} s): "
                         f"{tail[0][-200:]}", "peak_rss_kib": rss}
    r = json.loads(m.group(1))
    r["peak_rss_kib"] = rss
    return r


def peers(path: Path, args, with_xprof: bool) -> dict[str, dict]:
    rows = {"xspace decoder (C++)": run_decoder(path, args.repeat)}
    rows["tracecore.open"] = run_tracecore(path, args.repeat)
    rows["protobuf C++"] = run_protobuf(path, args.repeat)
    if with_xprof:
        rows["XProf trace_viewer"] = run_xprof(path, args.xprof_mem_gb, args.xprof_timeout)
    events = rows["xspace decoder (C++)"].get("events")
    for row in rows.values():
        if "seconds" in row:
            row["mb_per_s"] = path.stat().st_size / row["seconds"] / MB
            if events:
                row["events_per_s"] = events / row["seconds"]
    return rows


def report(path: Path, rows: dict[str, dict]) -> None:
    size = path.stat().st_size
    print(f"\n{path} ({size / MB:.1f} MB)")
    print(f"  {'peer':<22} {'seconds':>9} {'MB/s':>9} {'M events/s':>11} {'peak RSS MB':>12}")
    for name, r in rows.items():
        rss = f"{r['peak_rss_kib'] / 1024:.0f}" if r.get("peak_rss_kib") else "?"
        if "error" in r:
            print(f"  {name:<22} {'failed':>9}   {r['error']}  (peak RSS {rss} MB)")
            continue
        extra = ""
        if "cpu_seconds" in r:
            extra = f"  (CPU {r['cpu_seconds']:.3f} s: {size / r['cpu_seconds'] / MB:.0f} MB/s)"
        if "sys_seconds" in r:
            extra += f"  (user {r['user_seconds']:.2f} s, sys {r['sys_seconds']:.2f} s)"
        if "plus_rss_kib" in r:
            extra += (f"  (+RSS {r['plus_rss_kib'] / 1024:.0f} MB, peak/file "
                      f"{r['peak_rss_kib'] * 1024 / size:.2f}, tables "
                      f"{r['tables_bytes'] / MB:.0f} MB, {r['events']:,} events)")
        if "output_events" in r:
            extra = (f"  (viewer JSON: {r['output_events']:,} events, "
                     f"{r['output_bytes'] / MB:.0f} MB)")
        print(f"  {name:<22} {r['seconds']:>9.3f} {r['mb_per_s']:>9.1f} "
              f"{r.get('events_per_s', 0) / 1e6:>11.2f} {rss:>12}{extra}")
    for ref in ("tracecore.open", "xspace decoder (C++)"):
        base = rows.get(ref, {})
        for name, r in rows.items():
            if name != ref and "seconds" in r and "seconds" in base:
                print(f"  {name} / {ref} (time): {r['seconds'] / base['seconds']:.2f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=float, default=1100)
    ap.add_argument("--file", type=Path, help="an XSpace to measure instead of the generated one")
    ap.add_argument("--data-dir", type=Path, default=make_xspace.DEFAULT_OUT,
                    help="where generated files are cached (default bench/data/)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-xprof", action="store_true")
    ap.add_argument("--xprof-mem-gb", type=float, default=8.0)
    ap.add_argument("--xprof-timeout", type=float, default=1800.0)
    ap.add_argument("--xprof-size-mb", type=float, default=0,
                    help="also run every peer on a generated file of this size")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    path = args.file or _ensure(args.size_mb, args.data_dir)
    results = {str(path): peers(path, args, not args.no_xprof)}
    report(path, results[str(path)])
    if args.xprof_size_mb and not args.no_xprof:
        small = _ensure(args.xprof_size_mb, args.data_dir)
        results[str(small)] = peers(small, args, True)
        report(small, results[str(small)])
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
