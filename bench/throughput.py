"""Parse throughput and peak memory of tracecore.open(), next to protobuf's own parsers.

    python bench/throughput.py FILE [FILE...] [--repeat N] [--no-peer] [--json OUT]
    python bench/throughput.py --generate SIZE_MB [...]     (make_trace.py text + binary first)

Every measurement runs in a fresh subprocess, so its peak RSS is its own (the child's VmHWM,
cross-checked with the rusage of that one child from os.wait4). +RSS is that peak minus the RSS
just before the call, after a warm-up on the bundled sample (so pyarrow's one-time loading of
its compute kernels is in the baseline, not in the figure). Rows:

  tracecore  threads=1 / threads=0   tracecore.open(FILE, threads=T); best of --repeat runs
  protobuf-py (upb)                  text_format.Parse (text) / ParseFromString (binary) of the
                                     same bytes; text files over --peer-full-mb are measured on a
                                     prefix cut at a top-level `dev_stats {` (the row says so)
  protobuf-cpp                       the program named by --cpp-peer-bin (or $TRACECORE_CPP_PEER),
                                     if given: protobuf C++ generated code, not part of this
                                     repository (see bench/README.md); its own parse-time figure

MB/s = bytes parsed / seconds / 1e6; the file is read once beforehand so every run starts with
a warm page cache. Seconds are wall time of the parse call only (the peers get their input
already in memory; tracecore gets a path and maps/reads the file itself).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
MB = 1_000_000


# --------------------------------------------------------------------------------------------
# Child side: one measurement, result printed as one JSON line on stdout.


def _kib_status() -> dict[str, int]:
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("VmHWM", "VmRSS", "RssAnon", "RssFile"):
                out[key] = int(rest.split()[0])
    return out


def _child_tracecore(spec: dict) -> dict:
    import tracecore  # imports pyarrow too: part of the baseline RSS

    # Warm-up on the bundled sample: pyarrow loads its compute kernels (about 50 MB resident)
    # the first time a table is built; that is the library's one-time cost, not the parse's.
    _ = tracecore.open(tracecore.sample_path()).events
    base = _kib_status()
    t0 = time.perf_counter()
    trace = tracecore.open(spec["path"], threads=spec["threads"])
    t1 = time.perf_counter()
    n_events = len(trace)
    t2 = time.perf_counter()
    events_rows = trace.events.num_rows
    t3 = time.perf_counter()
    after = _kib_status()
    stats = dict(getattr(trace, "stats", {}) or {})
    tables = _table_bytes(trace)  # after the RSS readings: it builds every table
    return {
        "seconds": t1 - t0,
        "events_table_seconds": t3 - t2,
        "events": n_events,
        "events_rows": events_rows,
        "kind": getattr(trace, "kind", None),
        "format": getattr(trace, "format", None),
        "parse_seconds_reported": stats.get("parse_seconds"),
        "unknown_fields": stats.get("unknown_fields"),
        "baseline_rss_kib": base["VmRSS"],
        "baseline_anon_kib": base.get("RssAnon"),
        "peak_rss_kib": after["VmHWM"],
        "anon_rss_after_kib": after.get("RssAnon"),
        "file_rss_after_kib": after.get("RssFile"),
        "tracecore_version": getattr(tracecore, "__version__", None),
        "tables_bytes": tables,
    }


def _table_bytes(trace) -> int:
    """Bytes of the distinct Arrow buffers of every table (``trace.table(name)``, the contract's
    columns; the string pool behind the dictionaries counts once): what the parsed trace
    holds, against the target of 0.2x the text. The same figure as ``tracecore bench``."""
    from tracecore._arrow import buffer_bytes

    return buffer_bytes(trace.table(name) for name in trace.table_names)


def _message_classes():
    """(StepStats, RunMetadata or None). StepStats from bench/_tfproto_min.py (self-contained);
    RunMetadata from tests/tfproto.py if that module is there."""
    sys.path.insert(0, str(BENCH_DIR))
    from _tfproto_min import StepStats

    run_metadata = None
    try:
        sys.path.insert(0, str(REPO_DIR / "tests"))
        import tfproto

        run_metadata = getattr(tfproto, "RunMetadata", None)
    except Exception:  # noqa: BLE001  (an unfinished helper module must not break the bench)
        pass
    return StepStats, run_metadata


def _child_peer_py(spec: dict) -> dict:
    from google.protobuf import __version__ as pb_version
    from google.protobuf import text_format
    from google.protobuf.internal import api_implementation

    step_stats_cls, run_metadata_cls = _message_classes()
    cls = run_metadata_cls if spec["kind"] == "RunMetadata" else step_stats_cls
    if cls is None:
        return {"error": "no RunMetadata class (tests/tfproto.py missing)"}
    path = spec["path"]
    opener = gzip.open if path.endswith(".gz") else open
    if spec.get("prefix_bytes"):
        sys.path.insert(0, str(BENCH_DIR))
        from make_trace import text_prefix

        data = text_prefix(path, spec["prefix_bytes"])
    else:
        with opener(path, "rb") as f:
            data = f.read()
    text = data.decode("utf-8") if spec["format"] == "text" else None
    base = _kib_status()
    msg = cls()
    t0 = time.perf_counter()
    if text is not None:
        # NodeDef.attr and such may be undeclared in the test messages: skip them in text too.
        text_format.Parse(text, msg, allow_unknown_field=spec["kind"] == "RunMetadata")
    else:
        msg.ParseFromString(data)
    t1 = time.perf_counter()
    stats = msg.step_stats if spec["kind"] == "RunMetadata" else msg
    n_events = sum(len(d.node_stats) for d in stats.dev_stats)
    after = _kib_status()
    return {
        "seconds": t1 - t0,
        "bytes_parsed": len(data),
        "events": n_events,
        "baseline_rss_kib": base["VmRSS"],
        "baseline_anon_kib": base.get("RssAnon"),
        "peak_rss_kib": after["VmHWM"],
        "anon_rss_after_kib": after.get("RssAnon"),
        "protobuf_version": pb_version,
        "protobuf_impl": api_implementation.Type(),
    }


def _child_main(spec_json: str) -> int:
    spec = json.loads(spec_json)
    try:
        result = {"tracecore": _child_tracecore, "peer_py": _child_peer_py}[spec["engine"]](spec)
    except Exception as e:  # noqa: BLE001  (report it as a row, keep benchmarking)
        result = {"error": f"{type(e).__name__}: {e}"[:500]}
    sys.stdout.write("\n@@RESULT@@" + json.dumps(result) + "\n")
    return 0


# --------------------------------------------------------------------------------------------
# Parent side


def _run_child(argv: list[str], timeout: float | None = None) -> tuple[str, str, int, int]:
    """Run argv; return (stdout, stderr, exit code, max RSS in KiB of this child alone)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(argv, stdout=out, stderr=err, cwd=str(REPO_DIR))
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            pid, status, rusage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if deadline is not None and time.monotonic() > deadline:
                proc.kill()
                pid, status, rusage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.005)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode(errors="replace")
        stderr = err.read().decode(errors="replace")
        return stdout, stderr, proc.returncode, rusage.ru_maxrss


def _measure_py(spec: dict, timeout: float) -> dict:
    argv = [sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(spec)]
    stdout, stderr, rc, maxrss_kib = _run_child(argv, timeout)
    m = re.search(r"@@RESULT@@(.*)", stdout)
    if m:
        res = json.loads(m.group(1))
    else:
        tail = (stderr.strip().splitlines() or [f"exit code {rc}"])[-1]
        res = {"error": f"child failed (rc={rc}): {tail}"[:500]}
    res["wait4_maxrss_kib"] = maxrss_kib
    return res


def _detect(path: str) -> tuple[str, str]:
    """(format, kind) of a dump from its first bytes: text/binary, StepStats/RunMetadata."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        head = f.read(4096)
    stripped = re.sub(rb"(?m)^\s*#.*$", b"", head).lstrip()
    if stripped.startswith(b"dev_stats"):
        return "text", "StepStats"
    if stripped.startswith(b"step_stats") or re.match(rb"^[a-z_]+\s*[:{<]", stripped):
        return "text", "RunMetadata"
    # binary: field 1 (LEN) holds a DeviceStepStats (StepStats) or a StepStats (RunMetadata).
    # Look one level deeper: a DeviceStepStats usually starts with its device string.
    try:
        i = 1
        _, i = _varint(head, i)  # length of field 1
        if head[i] == 0x0A:
            n, j = _varint(head, i + 1)
            inner = head[j : j + min(n, 8)]
            if inner[:1] in (b"/", b"") or inner.isascii() and inner[:1].isalpha():
                return "binary", "StepStats"
            return "binary", "RunMetadata"
        return "binary", "StepStats"
    except IndexError:
        return "binary", "StepStats"


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        b = buf[i]
        value |= (b & 0x7F) << shift
        i += 1
        if b < 0x80:
            return value, i
        shift += 7


def _warm(path: str) -> int:
    """Read the file once (warm page cache); return its size, uncompressed for .gz."""
    with open(path, "rb", buffering=0) as f:
        while f.read(16 * MB):
            pass
    if not path.endswith(".gz"):
        return os.path.getsize(path)
    plain = 0
    with gzip.open(path, "rb") as f:
        while chunk := f.read(16 * MB):
            plain += len(chunk)
    return plain


def _cpp_peer(peer: Path, path: str, fmt: str, timeout: float) -> dict:
    # The peer may write FILE.pb next to a text input: give it a symlink in a temp dir.
    with tempfile.TemporaryDirectory(prefix="tc-peer-run-") as tmp:
        link = Path(tmp) / Path(path).name
        link.symlink_to(Path(path).resolve())
        stdout, stderr, rc, maxrss = _run_child([str(peer), fmt, str(link)], timeout)
    m = re.search(
        r"ok=(\d) bytes=(\d+) nodes=(\d+) recs=(\d+) parse=([\d.]+)s"
        r" \(([\d.]+) MB/s\) walk=([\d.]+)s",
        stdout,
    )
    if rc != 0 or not m:
        return {"error": f"rc={rc} {(stdout + stderr).strip()[-300:]}", "wait4_maxrss_kib": maxrss}
    return {
        "ok": m.group(1) == "1",
        "bytes_parsed": int(m.group(2)),
        "events": int(m.group(3)),
        "seconds": float(m.group(5)),
        "walk_seconds": float(m.group(7)),
        "wait4_maxrss_kib": maxrss,
        "note": "whole file in memory + message; RSS includes the input copy",
    }


def _row(file: str, size: int, fmt: str, engine: str, threads, res: dict, note: str = "") -> dict:
    row = {"file": file, "file_bytes": size, "format": fmt, "engine": engine, "threads": threads}
    row.update(res)
    if "error" not in res:
        parsed = res.get("bytes_parsed", size)
        row["bytes_parsed"] = parsed
        row["mb_per_s"] = parsed / res["seconds"] / MB if res["seconds"] > 0 else None
        row["events_per_s"] = res["events"] / res["seconds"] if res["seconds"] > 0 else None
        peak_kib = res.get("peak_rss_kib") or res.get("wait4_maxrss_kib")
        row["peak_rss_mb"] = peak_kib * 1024 / MB
        row["rss_over_file"] = peak_kib * 1024 / parsed if parsed else None
        if res.get("baseline_rss_kib") is not None:
            row["rss_growth_mb"] = (peak_kib - res["baseline_rss_kib"]) * 1024 / MB
        if res.get("tables_bytes") is not None:
            row["tables_mb"] = res["tables_bytes"] / MB
            row["tables_over_file"] = res["tables_bytes"] / parsed if parsed else None
        if res.get("baseline_anon_kib") is not None and res.get("anon_rss_after_kib") is not None:
            # anonymous memory still held once the parse returned: the result itself
            row["kept_mb"] = (res["anon_rss_after_kib"] - res["baseline_anon_kib"]) * 1024 / MB
    row["note"] = note or res.get("note", "")
    return row


def _best(results: list[dict]) -> dict:
    ok = [r for r in results if "error" not in r]
    if not ok:
        return results[-1]
    best = dict(min(ok, key=lambda r: r["seconds"]))
    best["all_seconds"] = [r["seconds"] for r in ok]
    # the peak over every repeat: a repeat that happened to peak higher still counts
    best["peak_rss_kib"] = max(r.get("peak_rss_kib") or r["wait4_maxrss_kib"] for r in ok)
    best["repeats"] = len(results)
    return best


def measure_file(path: str, args) -> list[dict]:
    size = os.path.getsize(path)
    fmt, kind = _detect(path)
    name = os.path.basename(path)
    rows = []
    plain_size = _warm(path)  # MB/s always counts uncompressed bytes (so .gz rows compare)
    for threads in args.threads:
        runs = [
            _measure_py({"engine": "tracecore", "path": path, "threads": threads}, args.timeout)
            for _ in range(args.repeat)
        ]
        best = _best(runs)
        if "error" not in best:
            best["bytes_parsed"] = plain_size
        note = "MB/s over uncompressed bytes" if path.endswith(".gz") else ""
        rows.append(_row(name, size, fmt, "tracecore", threads, best, note))
        _print_row(rows[-1])
    if args.peer:
        spec = {"engine": "peer_py", "path": path, "format": fmt, "kind": kind}
        note = ""
        too_big = fmt == "text" and plain_size > args.peer_full_mb * MB
        if too_big and kind == "StepStats":
            spec["prefix_bytes"] = int(args.peer_prefix_mb * MB)
            note = f"prefix: first {args.peer_prefix_mb:g} MB cut at a top-level dev_stats"
        if too_big and kind != "StepStats":
            err = {"error": "RunMetadata text too large for the Python peer"}
            rows.append(_row(name, size, fmt, "protobuf-py", "-", err))
        else:
            runs = [_measure_py(spec, args.timeout) for _ in range(args.peer_repeat)]
            best = _best(runs)
            engine = f"protobuf-py ({best.get('protobuf_impl', '?')})"
            rows.append(_row(name, size, fmt, engine, "-", best, note))
        _print_row(rows[-1])
        peer_bin = args.cpp_peer_path
        if peer_bin is not None and kind == "StepStats" and not path.endswith(".gz"):
            runs = [_cpp_peer(peer_bin, path, fmt, args.timeout) for _ in range(args.peer_repeat)]
            rows.append(_row(name, size, fmt, "protobuf-cpp", "-", _best(runs)))
            _print_row(rows[-1])
    # cross-check the event counts of every engine that read the whole file (and the generator's)
    whole = [r for r in rows if "error" not in r and r.get("bytes_parsed") == plain_size]
    counts = {f"{r['engine']} threads={r['threads']}": r["events"] for r in whole}
    if args.expected_events.get(path) is not None:
        counts["generator"] = args.expected_events[path]
    if len(set(counts.values())) > 1:
        print(f"  !! event counts disagree for {name}: {counts}")
        for r in whole:
            r["count_mismatch"] = True
    return rows


_HEADER = (
    f"{'file':<34} {'MB':>8} {'fmt':<6} {'engine':<18} {'thr':>3} {'sec':>8} {'MB/s':>8}"
    f" {'events/s':>9} {'events':>9} {'peakRSS':>8} {'+RSS':>7} {'kept':>6} {'RSS/file':>8}"
    f" {'tables':>6}  note"
)


def _si(x: float) -> str:
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if x >= scale:
            return f"{x / scale:.2f}{unit}"
    return f"{x:.0f}"


def _print_row(r: dict) -> None:
    if "error" in r:
        print(
            f"{r['file'][:34]:<34} {r['file_bytes'] / MB:>8.1f} {r['format']:<6}"
            f" {r['engine']:<18} {r['threads']!s:>3}  ERROR: {r['error']}"
        )
        return
    mbs = r["bytes_parsed"] / MB
    growth = f"{r['rss_growth_mb']:>7.0f}" if r.get("rss_growth_mb") is not None else f"{'-':>7}"
    kept = f"{r['kept_mb']:>6.0f}" if r.get("kept_mb") is not None else f"{'-':>6}"
    ratio = r.get("tables_over_file")
    tables = f"{ratio:>5.3f}x" if ratio is not None else f"{'-':>6}"
    notes = []
    if r.get("note") and "prefix" in r["note"]:
        notes.append(f"[{r['note']}: {mbs:.1f} MB parsed]")
    elif r.get("note"):
        notes.append(r["note"])
    if r.get("repeats", 1) > 1:
        notes.append(f"best of {r['repeats']}")
    print(
        f"{r['file'][:34]:<34} {r['file_bytes'] / MB:>8.1f} {r['format']:<6} {r['engine']:<18}"
        f" {r['threads']!s:>3} {r['seconds']:>8.3f} {r['mb_per_s']:>8.1f}"
        f" {_si(r['events_per_s']):>9} {r['events']:>9} {r['peak_rss_mb']:>8.0f} {growth} {kept}"
        f" {r['rss_over_file']:>8.2f} {tables}  " + "; ".join(notes)
    )


def _environment() -> dict:
    env = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }
    try:
        with open("/proc/cpuinfo") as f:
            models = (line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
            env["cpu_model"] = next(models, None)
    except OSError:
        pass
    try:
        import google.protobuf

        env["protobuf"] = google.protobuf.__version__
    except ImportError:
        pass
    return env


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        return _child_main(argv[1])
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", help="StepStats/RunMetadata dumps (text, binary, .gz)")
    ap.add_argument(
        "--generate",
        type=float,
        metavar="SIZE_MB",
        help="first generate a SIZE_MB text dump + its binary form (make_trace.py)",
    )
    ap.add_argument("--unique-names", action="store_true", help="with --generate")
    ap.add_argument("--out", default=str(BENCH_DIR / "data"), help="with --generate")
    ap.add_argument("--repeat", type=int, default=3, help="tracecore runs per setting (best wins)")
    ap.add_argument("--threads", default="1,0", help="tracecore thread settings (default 1,0)")
    ap.add_argument("--no-peer", dest="peer", action="store_false", help="skip the protobuf peers")
    ap.add_argument("--no-cpp-peer", dest="cpp_peer", action="store_false")
    ap.add_argument(
        "--cpp-peer-bin",
        default=os.environ.get("TRACECORE_CPP_PEER"),
        help="the protobuf C++ peer program (default: $TRACECORE_CPP_PEER; see bench/README.md)",
    )
    ap.add_argument("--peer-repeat", type=int, default=1)
    ap.add_argument(
        "--peer-full-mb",
        type=float,
        default=50,
        help="text files above this get the Python peer on a prefix only",
    )
    ap.add_argument("--peer-prefix-mb", type=float, default=20)
    ap.add_argument("--timeout", type=float, default=1800, help="per measurement, seconds")
    ap.add_argument("--json", metavar="OUT", help="write all results as JSON")
    args = ap.parse_args(argv)
    args.threads = [int(t) for t in args.threads.split(",")]
    args.expected_events = {}

    files = [str(Path(f).resolve()) for f in args.files]
    if args.generate:
        sys.path.insert(0, str(BENCH_DIR))
        from make_trace import ensure_pair

        t0 = time.perf_counter()
        infos = ensure_pair(args.generate, args.out, unique_names=args.unique_names)
        print(f"generated/reused in {time.perf_counter() - t0:.1f} s:")
        for info in infos.values():
            print(f"  {info.path}  {info.bytes / MB:.1f} MB  {info.events} events")
            files.append(info.path)
            args.expected_events[info.path] = info.events
    if not files:
        ap.error("no FILE and no --generate")
    # The protobuf-cpp row: a peer program given and present (measure_file reads cpp_peer_path).
    wanted = args.peer and args.cpp_peer
    args.cpp_peer_path = Path(args.cpp_peer_bin) if wanted and args.cpp_peer_bin else None
    if args.cpp_peer_path is not None and not args.cpp_peer_path.exists():
        print(f"(C++ peer {args.cpp_peer_path} missing: no protobuf-cpp row)")
        args.cpp_peer_path = None
    elif wanted and args.cpp_peer_path is None:
        print("(no C++ peer given: --cpp-peer-bin or $TRACECORE_CPP_PEER; no protobuf-cpp row)")

    env = _environment()
    print(
        f"{env.get('cpu_model')}, {env['cpus']} CPUs, Python {env['python']},"
        f" protobuf {env.get('protobuf')}"
    )
    print(_HEADER)
    rows = []
    for f in files:
        rows.extend(measure_file(f, args))
    print(
        "MB = 1e6 bytes. MB/s, events/s: over the bytes actually parsed (best run). peakRSS: the"
        " child's VmHWM in MB (whole process: interpreter, imports, input copy or mapped file"
        " pages); +RSS: peakRSS minus the RSS just before the parse call; kept: anonymous memory"
        " still held after the call (the parsed result); RSS/file: peakRSS / bytes parsed;"
        " tables: bytes of the distinct Arrow buffers of every table / bytes parsed (issue 4's"
        " target: at most 0.2x of a text dump)."
    )
    if args.json:
        Path(args.json).write_text(json.dumps({"environment": env, "results": rows}, indent=1))
        print(f"wrote {args.json}")
    return 0 if all("error" not in r for r in rows if r["engine"] == "tracecore") else 1


if __name__ == "__main__":
    sys.exit(main())
