"""Decompression speed and peak memory of tracecore's gzip decoder next to Python's zlib / gzip.

    python bench/inflate.py [--size-mb 64] [--repeat 5] [--cpp-bench PATH] [--json OUT]

Generates trace-like inputs in a temporary directory (deleted afterwards):

  stepstats-l1/l6/l9   tests/data/seed000_stepstats.pbtxt repeated to --size-mb, gzip level 1/6/9
                       (a text StepStats dump: about 22:1 at level 6)
  chrome-json-l6       generated Chrome trace JSON events ({"ph": "X", ...}), gzip level 6
                       (random numbers and names: about 6:1)
  stepstats-members    the stepstats text as gzip members of 1 MB each (what pigz and
                       concatenated logs make), level 6

Rows, all on the same bytes in the same process, rounds interleaved, best of --repeat:

  zlib.decompress      zlib.decompress(data, wbits=31) (first member only; the members row
                       uses zlib.decompressobj in a loop)
  gzip.decompress      Python's gzip module: what tracecore used before decoding in C++
  zlib stream 1MiB     zlib.decompressobj(31).decompress(data, 1 MiB) in a loop, each piece
                       dropped: zlib's decoding and CRC with little memory traffic (compare
                       with tracecore-cpp stream 1MiB)
  tracecore            tracecore._core.inflate(data): InflateAll into an anonymous mapping,
                       returned without a copy (page faults of the output included)
  tracecore-cpp        bench/cpp/inflate_bench (--cpp-bench, built with
                       -DTRACECORE_BUILD_BENCH=ON), if given: InflateAll, and the streaming
                       Inflater into a reused 1 MiB buffer (decoding + CRC only)

MB/s = decompressed bytes / seconds / 1e6, with seconds of process CPU time (the decoders are
single-threaded; CPU time is steadier than wall time on a shared machine) and of wall time.
+RSS: the peak RSS of a fresh child doing one decompression, minus its RSS just before (the
compressed input already read, the peak reset through /proc/self/clear_refs).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SEED = REPO / "tests" / "data" / "seed000_stepstats.pbtxt"
MB = 1_000_000


def stepstats_text(size: int) -> bytes:
    text = SEED.read_bytes()
    return (text * (size // len(text) + 1))[:size]


def chrome_json(size: int) -> bytes:
    rng = random.Random(1)
    out = bytearray(b'{"traceEvents": [\n')
    while len(out) < size:
        name = f"void at::native::kernel_{rng.randrange(400)}"
        event = {"ph": "X", "cat": "kernel", "name": name,
                 "pid": rng.randrange(8), "tid": rng.randrange(64),
                 "ts": rng.randrange(10**12) / 1000, "dur": rng.randrange(10**6) / 1000,
                 "args": {"stream": rng.randrange(32), "correlation": rng.randrange(10**7)}}
        out += json.dumps(event).encode() + b",\n"
    return bytes(out[:size])


def make_inputs(directory: Path, size: int) -> dict[str, Path]:
    text = stepstats_text(size)
    js = chrome_json(size)
    members = b"".join(gzip.compress(text[i:i + MB], 6) for i in range(0, len(text), MB))
    files = {
        "stepstats-l1": gzip.compress(text, 1),
        "stepstats-l6": gzip.compress(text, 6),
        "stepstats-l9": gzip.compress(text, 9),
        "chrome-json-l6": gzip.compress(js, 6),
        "stepstats-members": members,
    }
    paths = {}
    for name, data in files.items():
        path = directory / f"{name}.gz"
        path.write_bytes(data)
        paths[name] = path
    return paths


def zlib_all_members(data: bytes) -> bytes:
    out = []
    while data:
        d = zlib.decompressobj(31)
        out.append(d.decompress(data))
        data = d.unused_data.lstrip(b"\0")
    return b"".join(out)


class _Length:
    """What zlib_stream returns: the output's length only (the pieces are dropped)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n


def zlib_stream(data: bytes) -> _Length:
    """zlib's inflate into pieces of 1 MiB (each dropped): decoding and CRC, little memory."""
    n = 0
    while data:
        d = zlib.decompressobj(31)
        n += len(d.decompress(data, 1 << 20))
        while d.unconsumed_tail:
            n += len(d.decompress(d.unconsumed_tail, 1 << 20))
        data = d.unused_data.lstrip(b"\0")
    return _Length(n)


def decoders(members: bool) -> dict[str, object]:
    from tracecore import _core

    return {
        "zlib.decompress": zlib_all_members if members else (lambda d: zlib.decompress(d, 31)),
        "gzip.decompress": gzip.decompress,
        "zlib stream 1MiB": zlib_stream,
        "tracecore": _core.inflate,
    }


def child(path: str, name: str, members: bool) -> None:
    """One decompression in a fresh process: prints its peak RSS increase in bytes."""
    data = Path(path).read_bytes()
    fn = decoders(members)[name]  # imports tracecore (and pyarrow) before the baseline
    # Resets the peak RSS (VmHWM) to the current RSS, so the imports' peak does not count.
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    before = _status_kib("VmRSS")
    out = fn(data)
    peak = _status_kib("VmHWM")
    assert len(out) > 0
    print(json.dumps({"rss_bytes": (peak - before) * 1024}))


def _status_kib(key: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def measure(paths: dict[str, Path], repeat: int) -> list[dict]:
    rows = []
    for label, path in paths.items():
        data = path.read_bytes()
        members = label.endswith("members")
        fns = decoders(members)
        expected = gzip.decompress(data)
        best = {name: [float("inf"), float("inf")] for name in fns}
        for _ in range(repeat):
            for name, fn in fns.items():
                w0, c0 = time.perf_counter(), time.process_time()
                out = fn(data)
                c1, w1 = time.process_time(), time.perf_counter()
                if len(out) != len(expected) or (name == "tracecore" and
                                                 memoryview(out) != expected):
                    raise SystemExit(f"{name} gave different bytes for {label}")
                del out
                best[name][0] = min(best[name][0], c1 - c0)
                best[name][1] = min(best[name][1], w1 - w0)
        for name in fns:
            rss = json.loads(subprocess.run(
                [sys.executable, __file__, "--child", str(path), name, str(int(members))],
                check=True, capture_output=True, text=True).stdout)["rss_bytes"]
            rows.append({"input": label, "decoder": name, "in_bytes": len(data),
                         "out_bytes": len(expected),
                         "mb_s_cpu": len(expected) / MB / best[name][0],
                         "mb_s_wall": len(expected) / MB / best[name][1], "rss_bytes": rss})
    return rows


def cpp_rows(binary: Path, paths: dict[str, Path], repeat: int) -> list[dict]:
    run = subprocess.run([str(binary), "--repeats", str(repeat), *map(str, paths.values())],
                         check=True, capture_output=True, text=True)
    rows = []
    labels = {str(p): label for label, p in paths.items()}
    for line in run.stdout.splitlines()[1:]:
        parts = line.split()
        rows.append({"input": labels[parts[0]], "decoder": "tracecore-cpp InflateAll",
                     "in_bytes": int(parts[1]), "out_bytes": int(parts[2]),
                     "mb_s_cpu": float(parts[3]), "mb_s_wall": None, "rss_bytes": None})
        rows.append({"input": labels[parts[0]], "decoder": "tracecore-cpp stream 1MiB",
                     "in_bytes": int(parts[1]), "out_bytes": int(parts[2]),
                     "mb_s_cpu": float(parts[5]), "mb_s_wall": None, "rss_bytes": None})
    return rows


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], sys.argv[4] == "1")
        return
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mb", type=float, default=64)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--cpp-bench", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tracecore-inflate-") as tmp:
        paths = make_inputs(Path(tmp), int(args.size_mb * MB))
        rows = measure(paths, args.repeat)
        if args.cpp_bench:
            rows += cpp_rows(args.cpp_bench, paths, args.repeat)
    rows.sort(key=lambda r: list(paths).index(r["input"]))
    print(f"{'input':18} {'in MB':>7} {'out MB':>7}  {'decoder':26} {'MB/s cpu':>9} "
          f"{'MB/s wall':>9} {'+RSS MB':>8}")
    for r in rows:
        wall = f"{r['mb_s_wall']:9.0f}" if r["mb_s_wall"] else f"{'':>9}"
        rss = f"{r['rss_bytes'] / MB:8.1f}" if r["rss_bytes"] is not None else f"{'':>8}"
        print(f"{r['input']:18} {r['in_bytes'] / MB:7.1f} {r['out_bytes'] / MB:7.1f}  "
              f"{r['decoder']:26} {r['mb_s_cpu']:9.0f} {wall} {rss}")
    print(f"python {sys.version.split()[0]}, zlib {zlib.ZLIB_RUNTIME_VERSION}, "
          f"{os.cpu_count()} cpus, load average {os.getloadavg()[0]:.1f}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
