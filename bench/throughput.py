"""Parse throughput, peak memory and memory written of tracecore.open(), next to protobuf's
own parsers, in paired rounds.

    python bench/throughput.py FILE [FILE...] [--repeat N] [--no-peer] [--json OUT]
    python bench/throughput.py --generate SIZE_MB [...]     (make_trace.py text + binary first)

--repeat N rounds; each round measures every engine once, each in a fresh subprocess, in the
engines' order on even rounds and the reverse on odd ones (A B C, C B A, ...). The machine's
speed drifts within minutes, so every figure is the median over the rounds (with the slowest
and fastest round), and tracecore's ratio to each peer is the median of the per-round ratios
(the two figures of a round come from the same minutes), next to the ratio of the medians.
Engines:

  tracecore  threads=1 / threads=0   tracecore.open(FILE, threads=T)
  protobuf-py (upb)                  text_format.Parse (text) / ParseFromString (binary) of the
                                     same bytes; text files over --peer-full-mb are measured on a
                                     prefix cut at a top-level `dev_stats {` (the row says so)
  protobuf-cpp                       the program named by --cpp-peer-bin (or $TRACECORE_CPP_PEER),
                                     if given: protobuf C++ generated code, not part of this
                                     repository (see bench/README.md); its own parse-time figure

Peak RSS is the child's own (VmHWM, cross-checked with os.wait4's rusage of that child). +RSS
is that peak minus the RSS just before the call, after a warm-up on the bundled sample (so
pyarrow's one-time loading of its compute kernels is in the baseline, not in the figure).
Memory written is the fresh memory the call faulted in, from the kernel's page fault counters
(see _written); tracecore's rows set it against the bytes of the tables the parse produced.

MB/s = bytes parsed / seconds / 1e6; the file is read once beforehand so every run starts with
a warm page cache. Seconds are wall time of the parse call only (the peers get their input
already in memory; tracecore gets a path and maps/reads the file itself).
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import os
import platform
import re
import statistics
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


# Memory written by a parse: the kernel counts page faults per process (getrusage's ru_minflt,
# all threads), transparent huge pages only system-wide (/proc/vmstat thp_fault_alloc for 2 MiB
# pages; per size in /sys/kernel/mm/transparent_hugepage/hugepages-<N>kB/stats/anon_fault_alloc).
# The first write to a fresh anonymous page faults once and the kernel clears the whole page:
# 4 KiB, or a huge page where the range is advised MADV_HUGEPAGE (tracecore's column slabs and
# large buffers; /sys/kernel/mm/transparent_hugepage/enabled decides). So
#   written ~= page size x (anonymous faults - huge page faults) + sum(huge page faults x size)
# anonymous faults = minor faults - the faults of reading the mapped input file (measured by
# mapping and reading the same file afterwards: _file_faults), huge page faults = the
# system-wide delta less the rate measured with this process asleep (_thp_rate), but at least
# the growth of this process's own AnonHugePages and at most its anonymous faults. Memory the
# process had faulted in before (a reused heap block) is not counted: this is fresh memory.
_THP_DIR = Path("/sys/kernel/mm/transparent_hugepage")


def _page_faults() -> tuple[int, int]:
    import resource

    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_minflt, ru.ru_majflt


def _thp_faults() -> dict[int, int]:
    """{huge page bytes: huge pages allocated at a fault so far}, system-wide: vmstat's
    thp_fault_alloc (PMD size) and, with multi-size THP (Linux 6.8+), the other sizes'
    anon_fault_alloc. Empty without THP."""
    out: dict[int, int] = {}
    try:
        pmd = int((_THP_DIR / "hpage_pmd_size").read_text())
    except (OSError, ValueError):
        pmd = 2 << 20
    try:
        with open("/proc/vmstat") as f:
            for line in f:
                key, _, value = line.partition(" ")
                if key == "thp_fault_alloc":
                    out[pmd] = int(value)
    except OSError:
        pass
    for d in _THP_DIR.glob("hugepages-*kB"):
        try:
            size = int(d.name[len("hugepages-") : -len("kB")]) * 1024
            if size not in out:
                out[size] = int((d / "stats" / "anon_fault_alloc").read_text())
        except (OSError, ValueError):
            continue
    return out


def _anon_huge_bytes() -> int:
    """This process's anonymous memory mapped as PMD-size huge pages now (smaps_rollup)."""
    try:
        with open("/proc/self/smaps_rollup") as f:
            for line in f:
                if line.startswith("AnonHugePages:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _faults_now() -> tuple[int, int, dict[int, int], float, int]:
    """(minor faults, major faults, system-wide THP faults per size, perf_counter, this
    process's AnonHugePages bytes)."""
    minor, major = _page_faults()
    return minor, major, _thp_faults(), time.perf_counter(), _anon_huge_bytes()


def _thp_rate(seconds: float) -> dict[int, float]:
    """System-wide THP faults per second while this process sleeps ``seconds`` (0.05 to 1 s):
    the other processes' share, taken off the deltas measured around a parse."""
    window = min(max(seconds, 0.05), 1.0)
    a = _thp_faults()
    time.sleep(window)
    b = _thp_faults()
    return {size: (n - a.get(size, n)) / window for size, n in b.items()}


def _file_faults(path: str) -> int:
    """Minor faults of reading every page of ``path`` through a private read-only mapping
    advised MADV_SEQUENTIAL, the way tracecore maps its input (the kernel maps several cached
    pages per fault: fault-around). Mapped 64 MiB at a time and unmapped, so the resident set
    stays small; run after the measurement."""
    import mmap

    window = 64 << 20
    size = os.path.getsize(path)
    before, _ = _page_faults()
    with open(path, "rb") as f:
        for offset in range(0, size, window):
            length = min(window, size - offset)
            m = mmap.mmap(
                f.fileno(), length, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ, offset=offset
            )
            try:
                if hasattr(mmap, "MADV_SEQUENTIAL"):
                    m.madvise(mmap.MADV_SEQUENTIAL)
                for i in range(0, length, mmap.PAGESIZE):
                    m[i]
            finally:
                m.close()
    return _page_faults()[0] - before


def _written(f0: tuple, f1: tuple, idle_rate: dict[int, float], file_faults: int = 0) -> dict:
    """Memory written between two _faults_now() readings of this process (see above)."""
    import mmap

    seconds = f1[3] - f0[3]
    anon = max(0, f1[0] - f0[0] - file_faults)
    thp_system = {size: n - f0[2].get(size, n) for size, n in f1[2].items()}
    # Huge pages this process still maps that it did not before: a lower bound of its own
    # huge page faults (exact unless some were freed or split within the window).
    grown = max(0, f1[4] - f0[4])
    huge_faults = huge_bytes = 0
    low_faults = low_bytes = 0
    for size, raw in sorted(thp_system.items(), reverse=True):
        # the system-wide delta less the other processes' share (their rate while we slept),
        # within [the huge pages this process gained, min(the delta, this process's faults)]
        high = max(0, min(raw, anon - huge_faults))
        low = min(grown // size if size == max(thp_system) else 0, high)
        n = min(max(round(raw - idle_rate.get(size, 0.0) * seconds), low), high)
        huge_faults += n
        huge_bytes += n * size
        low_faults += low
        low_bytes += low * size
    page = mmap.PAGESIZE
    return {
        "minor_faults": f1[0] - f0[0],
        "major_faults": f1[1] - f0[1],
        "anon_faults": anon,
        "thp_faults": huge_faults,
        "thp_faults_system": {str(size): n for size, n in thp_system.items() if n},
        "anon_huge_growth_bytes": grown,
        "written_bytes": (anon - huge_faults) * page + huge_bytes,
        # counting as huge only the pages this process gained: exact where the call frees no
        # huge page (a plain parse), too low where it does (.gz: the inflated text)
        "written_low_bytes": (anon - low_faults) * page + low_bytes,
    }


def _child_tracecore(spec: dict) -> dict:
    import tracecore  # imports pyarrow too: part of the baseline RSS

    # Warm-up on the bundled sample: pyarrow loads its compute kernels (about 50 MB resident)
    # the first time a table is built; that is the library's one-time cost, not the parse's.
    _ = tracecore.open(tracecore.sample_path()).events
    base = _kib_status()
    f0 = _faults_now()
    t0 = time.perf_counter()
    trace = tracecore.open(spec["path"], threads=spec["threads"])
    t1 = time.perf_counter()
    f1 = _faults_now()
    n_events = len(trace)
    t2 = time.perf_counter()
    events_rows = trace.events.num_rows
    t3 = time.perf_counter()
    after = _kib_status()
    stats = dict(getattr(trace, "stats", {}) or {})
    tables = _table_bytes(trace)  # after the RSS readings: it builds every table
    f2 = _faults_now()
    # after every reading: the idle THP rate, then the input file's own faults
    idle = _thp_rate(t1 - t0)
    file_faults = _file_faults(spec["path"])
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
        "file_faults": file_faults,
        "thp_idle_per_s": {str(size): rate for size, rate in idle.items() if rate},
        **_written(f0, f1, idle, file_faults),
        # open() and then every table built (t.events, t.table(name) for all)
        "written_with_tables_bytes": _written(f0, f2, idle, file_faults)["written_bytes"],
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
    f0 = _faults_now()
    t0 = time.perf_counter()
    if text is not None:
        # NodeDef.attr and such may be undeclared in the test messages: skip them in text too.
        text_format.Parse(text, msg, allow_unknown_field=spec["kind"] == "RunMetadata")
    else:
        msg.ParseFromString(data)
    t1 = time.perf_counter()
    f1 = _faults_now()
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
        **_written(f0, f1, _thp_rate(t1 - t0)),
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
    """One measurement (one engine, one round) with its derived figures."""
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
        if res.get("written_bytes") is not None:
            row["written_mb"] = res["written_bytes"] / MB
            if res.get("tables_bytes"):
                row["written_over_tables"] = res["written_bytes"] / res["tables_bytes"]
    row["note"] = note or res.get("note", "")
    return row


def _median(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


def _summarize(runs: list[dict]) -> dict:
    """One engine's row over its rounds: medians (and min/max) of the per-round figures."""
    ok = [r for r in runs if "error" not in r]
    first = runs[0]
    keep = ("file", "file_bytes", "format", "engine", "threads", "label", "note")
    row = {k: first[k] for k in keep if k in first}
    row["rounds"] = len(runs)
    row["ok_rounds"] = len(ok)
    if not ok:
        row["error"] = runs[-1]["error"]
        return row
    row["engine"] = ok[0]["engine"]
    row["bytes_parsed"] = ok[0]["bytes_parsed"]
    row["events"] = ok[0]["events"]
    for key in ("seconds", "mb_per_s", "events_per_s"):
        xs = [r[key] for r in ok if r.get(key) is not None]
        row[key] = _median(xs)
        row[key + "_min"] = min(xs, default=None)
        row[key + "_max"] = max(xs, default=None)
        row["all_" + key] = [r.get(key) for r in runs]  # by round; None for a failed one
    # the peak over every round (a round that peaked higher still counts); the rest: medians
    row["peak_rss_mb"] = max(r["peak_rss_mb"] for r in ok)
    row["rss_over_file"] = max(r["rss_over_file"] for r in ok if r["rss_over_file"] is not None)
    for key in (
        "rss_growth_mb",
        "kept_mb",
        "tables_bytes",
        "tables_mb",
        "tables_over_file",
        "written_mb",
        "written_over_tables",
        "written_low_bytes",
        "written_with_tables_bytes",
    ):
        xs = [r[key] for r in ok if r.get(key) is not None]
        if xs:
            row[key] = _median(xs)
    if "written_over_tables" in row:
        xs = [r["written_over_tables"] for r in ok if r.get("written_over_tables") is not None]
        row["written_over_tables_max"] = max(xs)
    if any(r.get("count_mismatch") for r in ok):
        row["count_mismatch"] = True
    return row


def _ratios(runs: list[dict], labels: list[str]) -> list[dict]:
    """MB/s of every tracecore setting over every peer's: the median of the per-round ratios
    (each round's two figures come from the same minutes) and the ratio of the two medians."""
    by_label: dict[str, dict[int, float]] = {label: {} for label in labels}
    for r in runs:
        if "error" not in r and r.get("mb_per_s"):
            by_label[r["label"]][r["round"]] = r["mb_per_s"]
    out = []
    for mine in (lb for lb in labels if lb.startswith("tracecore")):
        for peer in (lb for lb in labels if not lb.startswith("tracecore")):
            a, b = by_label[mine], by_label[peer]
            paired = [a[k] / b[k] for k in sorted(a) if k in b]
            if not paired:
                continue
            out.append(
                {
                    "file": runs[0]["file"],
                    "tracecore": mine,
                    "peer": peer,
                    "paired_median": _median(paired),
                    "paired_min": min(paired),
                    "paired_max": max(paired),
                    "paired_rounds": len(paired),
                    "per_round": paired,
                    "ratio_of_medians": _median(list(a.values())) / _median(list(b.values())),
                }
            )
    return out


def _engines(path: str, fmt: str, kind: str, plain_size: int, args) -> list[dict]:
    """What to measure on ``path``, in this order within a round: tracecore at each --threads
    setting, then the peers. Each: label, engine, threads, note, and ``measure()``."""
    engines = []
    gz_note = "MB/s over uncompressed bytes" if path.endswith(".gz") else ""
    for threads in args.threads:
        spec = {"engine": "tracecore", "path": path, "threads": threads}

        def measure(spec=spec) -> dict:
            res = _measure_py(spec, args.timeout)
            if "error" not in res:
                res["bytes_parsed"] = plain_size  # MB/s counts uncompressed bytes (.gz rows)
            return res

        label = f"tracecore thr={threads}"
        engines.append(
            {
                "label": label,
                "engine": "tracecore",
                "threads": threads,
                "note": gz_note,
                "measure": measure,
            }
        )
    if not args.peer:
        return engines
    spec = {"engine": "peer_py", "path": path, "format": fmt, "kind": kind}
    note = ""
    too_big = fmt == "text" and plain_size > args.peer_full_mb * MB
    if too_big and kind == "StepStats":
        spec["prefix_bytes"] = int(args.peer_prefix_mb * MB)
        note = f"prefix: first {args.peer_prefix_mb:g} MB cut at a top-level dev_stats"
    if too_big and kind != "StepStats":

        def measure_py() -> dict:
            return {"error": "RunMetadata text too large for the Python peer"}
    else:

        def measure_py() -> dict:
            return _measure_py(spec, args.timeout)

    engines.append(
        {
            "label": "protobuf-py",
            "engine": "protobuf-py",
            "threads": "-",
            "note": note,
            "measure": measure_py,
        }
    )
    peer_bin = args.cpp_peer_path
    if peer_bin is not None and kind == "StepStats" and not path.endswith(".gz"):
        engines.append(
            {
                "label": "protobuf-cpp",
                "engine": "protobuf-cpp",
                "threads": "-",
                "note": "",
                "measure": lambda: _cpp_peer(peer_bin, path, fmt, args.timeout),
            }
        )
    return engines


def measure_file(path: str, args) -> dict:
    """``--repeat`` rounds on one file; in each, every engine once (fresh processes), in the
    order of _engines on even rounds and the reverse on odd ones (A B C, C B A, ...), so
    that no engine keeps the same place while the machine's speed drifts.
    Returns {"rows": one summary row per engine, "runs": every measurement, "ratios"}."""
    size = os.path.getsize(path)
    fmt, kind = _detect(path)
    name = os.path.basename(path)
    plain_size = _warm(path)  # MB/s always counts uncompressed bytes (so .gz rows compare)
    engines = _engines(path, fmt, kind, plain_size, args)
    runs = []
    for rnd in range(args.repeat):
        order = engines if rnd % 2 == 0 else engines[::-1]
        line = []
        for position, e in enumerate(order):
            res = e["measure"]()
            engine = e["engine"]
            if engine == "protobuf-py" and "protobuf_impl" in res:
                engine = f"protobuf-py ({res['protobuf_impl']})"
            row = _row(name, size, fmt, engine, e["threads"], res, e["note"])
            row.update(label=e["label"], round=rnd, position=position)
            runs.append(row)
            line.append(
                f"{e['label']} " + (f"{row['mb_per_s']:.1f}" if "error" not in row else "ERROR")
            )
        print(f"  round {rnd + 1}/{args.repeat} (MB/s): " + ", ".join(line), flush=True)
    # cross-check the event counts of every run that read the whole file (and the generator's)
    whole = [r for r in runs if "error" not in r and r.get("bytes_parsed") == plain_size]
    counts = {f"{r['label']} round {r['round'] + 1}": r["events"] for r in whole}
    if args.expected_events.get(path) is not None:
        counts["generator"] = args.expected_events[path]
    if len(set(counts.values())) > 1:
        print(f"  !! event counts disagree for {name}: {counts}")
        for r in whole:
            r["count_mismatch"] = True
    labels = [e["label"] for e in engines]
    rows = [_summarize([r for r in runs if r["label"] == label]) for label in labels]
    return {"rows": rows, "runs": runs, "ratios": _ratios(runs, labels)}


_HEADER = (
    f"{'file':<30} {'MB':>7} {'fmt':<6} {'engine':<18} {'thr':>3} {'MB/s':>7} {'min-max':>13}"
    f" {'events/s':>8} {'events':>8} {'peakRSS':>7} {'+RSS':>5} {'kept':>5} {'tables':>6}"
    f" {'written':>7} {'wr/tab':>6}  note"
)


def _si(x: float) -> str:
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if x >= scale:
            return f"{x / scale:.2f}{unit}"
    return f"{x:.0f}"


def _opt(x: float | None, width: int, fmt: str) -> str:
    return f"{x:>{width}{fmt}}" if x is not None else f"{'-':>{width}}"


def _print_row(r: dict) -> None:
    head = f"{r['file'][:30]:<30} {r['file_bytes'] / MB:>7.1f} {r['format']:<6} {r['engine']:<18}"
    if "error" in r:
        print(f"{head} {r['threads']!s:>3}  ERROR: {r['error']}")
        return
    ratio = r.get("tables_over_file")
    tables = f"{ratio:>5.3f}x" if ratio is not None else f"{'-':>6}"
    wr_tab = r.get("written_over_tables")
    notes = []
    if r.get("note") and "prefix" in r["note"]:
        notes.append(f"[{r['note']}: {r['bytes_parsed'] / MB:.1f} MB parsed]")
    elif r.get("note"):
        notes.append(r["note"])
    if r["ok_rounds"] < r["rounds"]:
        notes.append(f"{r['rounds'] - r['ok_rounds']} of {r['rounds']} rounds failed")
    span = f"{r['mb_per_s_min']:.1f}-{r['mb_per_s_max']:.1f}"
    line = (
        f"{head} {r['threads']!s:>3} {r['mb_per_s']:>7.1f} {span:>13}"
        f" {_si(r['events_per_s']):>8} {r['events']:>8} {r['peak_rss_mb']:>7.0f}"
        f" {_opt(r.get('rss_growth_mb'), 5, '.0f')} {_opt(r.get('kept_mb'), 5, '.0f')} {tables}"
        f" {_opt(r.get('written_mb'), 7, '.1f')} {_opt(wr_tab, 5, '.2f')}{'x' if wr_tab else ' '}"
        "  " + "; ".join(notes)
    )
    print(line.rstrip())


def _print_ratios(ratios: list[dict]) -> None:
    for q in ratios:
        print(
            f"  {q['tracecore']} / {q['peer']}: paired {q['paired_median']:.2f}x"
            f" ({q['paired_min']:.2f}-{q['paired_max']:.2f} over {q['paired_rounds']} rounds),"
            f" ratio of medians {q['ratio_of_medians']:.2f}x"
        )


def _loadavg() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


def _environment() -> dict:
    env = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "loadavg_before": _loadavg(),
    }
    with contextlib.suppress(OSError):
        env["thp_enabled"] = (_THP_DIR / "enabled").read_text().strip()
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
    ap.add_argument(
        "--repeat",
        type=int,
        default=3,
        metavar="N",
        help="rounds: every engine once per round, fresh processes (default 3)",
    )
    ap.add_argument("--threads", default="1,0", help="tracecore thread settings (default 1,0)")
    ap.add_argument("--no-peer", dest="peer", action="store_false", help="skip the protobuf peers")
    ap.add_argument("--no-cpp-peer", dest="cpp_peer", action="store_false")
    ap.add_argument(
        "--cpp-peer-bin",
        default=os.environ.get("TRACECORE_CPP_PEER"),
        help="the protobuf C++ peer program (default: $TRACECORE_CPP_PEER; see bench/README.md)",
    )
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

    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    env = _environment()
    print(
        f"{env.get('cpu_model')}, {env['cpus']} CPUs, Python {env['python']},"
        f" protobuf {env.get('protobuf')}, load average {env['loadavg_before']}"
    )
    rows, runs, ratios = [], [], []
    for f in files:
        print(f"{os.path.basename(f)}: {args.repeat} rounds")
        result = measure_file(f, args)
        rows.extend(result["rows"])
        runs.extend(result["runs"])
        ratios.extend(result["ratios"])
        print(_HEADER)
        for row in result["rows"]:
            _print_row(row)
        _print_ratios(result["ratios"])
    env["loadavg_after"] = _loadavg()
    print(
        "MB = 1e6 bytes. Medians over the rounds (min-max: MB/s of the slowest and fastest"
        " round); MB/s, events/s over the bytes actually parsed. peakRSS: the child's VmHWM in MB"
        " (highest round; whole process: interpreter, imports, input copy or mapped file pages);"
        " +RSS: peakRSS minus the RSS just before the parse call; kept: anonymous memory still"
        " held after the call (the parsed result); tables: bytes of the distinct Arrow buffers"
        " of every table / bytes parsed; written: MB of fresh memory the call faulted in (4 KiB"
        " pages + huge pages, bench/README.md); wr/tab: written / the tables' bytes (issue 27:"
        " at most 1.2x). Ratios: tracecore's MB/s over the peer's, median of the per-round"
        f" ratios and ratio of the medians. Load average after: {env['loadavg_after']}."
    )
    if args.json:
        out = {"environment": env, "results": rows, "ratios": ratios, "runs": runs}
        Path(args.json).write_text(json.dumps(out, indent=1))
        print(f"wrote {args.json}")
    return 0 if all("error" not in r for r in runs if r["engine"] == "tracecore") else 1


if __name__ == "__main__":
    sys.exit(main())
