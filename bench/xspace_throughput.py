"""XSpace read throughput and peak memory, next to protobuf C++ and XProf, each in a fresh process.

    python bench/xspace_throughput.py [--size-mb 1100] [--file PATH] [--data-dir DIR] [--repeat 3]
                                      [--xprof-size-mb 20] [--xprof-mem-gb 8] [--no-xprof]
                                      [--json OUT]

Input: bench/make_xspace.py's generated XSpace of --size-mb MB (made once, cached in
bench/data/), or --file. Rows, each run as its own child process (peak RSS from os.wait4 of
that child alone, which counts the input's mapped or read pages):

  xspace decoder (C++)       build/bench/xspace_bench FILE N: the XSpace decoder alone (no
                             tables), the file mapped; best of N decodes, wall and CPU time.
                             >>> STAGE B: the `tracecore.open(FILE)` row (the whole import
                             into tables) goes in `peers()` next to it, marked there. <<<
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
viewer keeps at most a million of them) / seconds.
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
    # >>> STAGE B: rows["tracecore.open"] = the whole import (tables) in a fresh process. <<<
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
        if "output_events" in r:
            extra = (f"  (viewer JSON: {r['output_events']:,} events, "
                     f"{r['output_bytes'] / MB:.0f} MB)")
        print(f"  {name:<22} {r['seconds']:>9.3f} {r['mb_per_s']:>9.1f} "
              f"{r.get('events_per_s', 0) / 1e6:>11.2f} {rss:>12}{extra}")
    base = rows.get("xspace decoder (C++)", {})
    for name, r in rows.items():
        if name != "xspace decoder (C++)" and "seconds" in r and "seconds" in base:
            print(f"  decoder / {name}: {r['seconds'] / base['seconds']:.1f}x")


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
    path = args.file or Path(make_xspace.ensure(args.size_mb, args.data_dir)["path"])
    results = {str(path): peers(path, args, not args.no_xprof)}
    report(path, results[str(path)])
    if args.xprof_size_mb and not args.no_xprof:
        small = Path(make_xspace.ensure(args.xprof_size_mb, args.data_dir)["path"])
        results[str(small)] = peers(small, args, True)
        report(small, results[str(small)])
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
