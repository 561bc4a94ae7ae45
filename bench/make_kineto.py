"""Generate a large PyTorch profiler (Kineto) trace JSON from the small real sample.

    python bench/make_kineto.py SIZE_MB [--out PATH] [--seed-file PATH] [--gzip]

The seed (default tests/data/chrome/torch_mlp_sgd.pt.trace.json: PyTorch 2.13 on CPU, two
training steps of an MLP with record_shapes and profile_memory) gives the host side of one
*step*: its cpu_op / user_annotation events with their args (Input Dims, Input type, External
id, ...), its [memory] instants and its fwdbwd flows. Each generated step adds what a CUDA run
of the same step has: for each cpu_op without children, a cudaLaunchKernel (cuda_runtime) on
the host thread, a kernel on GPU 0 stream 7 with Kineto's kernel args (grid, block, stream,
correlation, ...), the ac2g flow pair linking them, and a CUDA allocation and free around the
kernel ([memory] instants with Device Type 1). Steps follow one another in time (each shifted
by the seed's span plus a gap); ids, correlations, flow ids and External ids are renumbered per
step; each allocator's Total Allocated runs on across steps as a real allocator's counter does
(the sum of its records' Bytes, so a memory replay of the file matches it).

The text is written the way Kineto's ChromeTraceLogger writes it (two-space event indent, one
key per line, `"dur": 1.234\n    ,`, timestamps as microseconds with exactly three fraction
digits), event by event, so memory stays small. 1 MB = 1e6 bytes.

Importable: make_kineto(size_mb, out_path, seed_file=...) -> dict (steps, events, bytes).
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from pathlib import Path
from typing import IO, Any

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
DEFAULT_SEED = REPO_DIR / "tests" / "data" / "chrome" / "torch_mlp_sgd.pt.trace.json"
MB = 1_000_000

GPU_PID = 0
GPU_STREAM = 7
KERNELS = (
    ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctorOnSelf_add<float>, "
     "at::detail::Array<char*, 2> >(int, at::native::CUDAFunctorOnSelf_add<float>, "
     "at::detail::Array<char*, 2>)"),
    "ampere_sgemm_32x32_sliced1x4_tn",
    ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(int, "
     "float, float const*, float const*, float const*, float*, float*, float*)"),
    ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, "
     "at::native::MeanOps<float, float, float, float>, unsigned int, float, 4> >("
     "at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, unsigned int, "
     "float, 4>)"),
)


def _ns(ts_us: Any) -> int:
    """Exact nanoseconds of a Kineto timestamp (microseconds with 3 fraction digits)."""
    text = repr(ts_us) if isinstance(ts_us, float) else str(ts_us)
    whole, _, frac = text.partition(".")
    sign = -1 if whole.startswith("-") else 1
    return int(whole) * 1000 + sign * int((frac + "000")[:3])


def _us(ns: int) -> str:
    sign = "-" if ns < 0 else ""
    ns = abs(ns)
    return f"{sign}{ns // 1000}.{ns % 1000:03d}"


def _arg_text(value: Any) -> str:
    return json.dumps(value, separators=(", ", ": "))


def _args_block(args: dict[str, Any]) -> str:
    # Kineto's cpu_op layout: the args on one line after a newline and indent.
    items = [f"{json.dumps(k)}: {_arg_text(v)}" for k, v in args.items()]
    return ',\n    "args": {\n      ' + ", ".join(items) + "\n    }"


def _event(ph: str, cat: str | None, name: str, pid: Any, tid: Any, ts_ns: int,
           dur_ns: int | None = None, args: dict[str, Any] | None = None,
           extra: str = "") -> str:
    lines = [f'  {{\n    "ph": "{ph}",']
    if cat is not None:
        lines.append(f'\n    "cat": {json.dumps(cat)},')
    lines.append(f'\n    "name": {json.dumps(name)},\n    "pid": {json.dumps(pid)},'
                 f'\n    "tid": {json.dumps(tid)},\n    "ts": {_us(ts_ns)}')
    if dur_ns is not None:
        lines.append(f',\n    "dur": {_us(dur_ns)}\n    ')
    lines.append(extra)
    if args:
        lines.append(_args_block(args))
    lines.append("\n  }")
    return "".join(lines)


def _kernel(name: str, ts_ns: int, dur_ns: int, ext_id: int, corr: int) -> str:
    return (
        f'  {{\n    "ph": "X", "cat": "kernel", "name": {json.dumps(name)}, "pid": {GPU_PID},'
        f' "tid": {GPU_STREAM},\n    "ts": {_us(ts_ns)}, "dur": {_us(dur_ns)},\n    "args": {{\n'
        f'      "External id": {ext_id},\n      "queued": 0, "device": 0, "context": 1,\n'
        f'      "stream": {GPU_STREAM}, "correlation": {corr},\n'
        f'      "registers per thread": 32,\n      "shared memory": 0,\n'
        f'      "blocks per SM": 0.044643,\n      "warps per SM": 0.178571,\n'
        f'      "grid": [5, 1, 1],\n      "block": [128, 1, 1],\n'
        f'      "est. achieved occupancy %": 0\n    }}\n  }}'
    )


def _runtime(pid: Any, tid: Any, ts_ns: int, dur_ns: int, ext_id: int, corr: int) -> str:
    return (
        f'  {{\n    "ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": {pid},'
        f' "tid": {tid},\n    "ts": {_us(ts_ns)}, "dur": {_us(dur_ns)},\n    "args": {{\n'
        f'      "External id": {ext_id},\n      "cbid": 211, "correlation": {corr}\n    }}\n  }}'
    )


def _flow(ph: str, corr: int, pid: Any, tid: Any, ts_ns: int) -> str:
    bp = ', "bp": "e"' if ph == "f" else ""
    return (f'  {{\n    "ph": "{ph}", "id": {corr}, "pid": {pid}, "tid": {tid},'
            f' "ts": {_us(ts_ns)},\n    "cat": "ac2g", "name": "ac2g"{bp}\n  }}')


def _memory(pid: Any, tid: Any, ts_ns: int, nbytes: int, total: int, addr: int,
            device_type: int, device_id: int, ev_idx: int) -> str:
    return (
        f'  {{\n    "ph": "i", \n    "cat": "cpu_instant_event", \n    "s": "t", \n'
        f'    "name": "[memory]",\n    "pid": {pid},\n    "tid": {tid},\n    "ts": {_us(ts_ns)}\n'
        f'    ,\n    "args": {{\n      "Total Reserved": {max(total, 2097152)}, '
        f'"Total Allocated": {total}, "Bytes": {nbytes}, "Device Id": {device_id}, '
        f'"Device Type": {device_type}, "Addr": {addr}, "Ev Idx": {ev_idx}\n    }}\n  }}'
    )


def _leaf_ops(events: list[dict[str, Any]]) -> set[int]:
    """Indexes of cpu_op events that contain no other cpu_op on their thread."""
    ops = [(i, e) for i, e in enumerate(events) if e.get("ph") == "X" and e.get("cat") == "cpu_op"]
    ops.sort(key=lambda ie: (str(ie[1]["tid"]), _ns(ie[1]["ts"]), -_ns(ie[1]["dur"])))
    leaves = set()
    for k, (i, e) in enumerate(ops):
        end = _ns(e["ts"]) + _ns(e["dur"])
        nxt = ops[k + 1][1] if k + 1 < len(ops) else None
        if nxt is None or str(nxt["tid"]) != str(e["tid"]) or _ns(nxt["ts"]) >= end:
            leaves.add(i)
    return leaves


def make_kineto(size_mb: float, out_path: Path, seed_file: Path = DEFAULT_SEED,
                compress: bool = False) -> dict[str, Any]:
    seed = json.loads(Path(seed_file).read_text())
    events: list[dict[str, Any]] = seed["traceEvents"]
    host = [e for e in events if e.get("ph") != "M" and "ts" in e and e.get("cat") != "Trace"]
    meta = [e for e in events if e.get("ph") == "M"]
    t0 = min(_ns(e["ts"]) for e in host)
    t1 = max(_ns(e["ts"]) + _ns(e.get("dur", 0)) for e in host)
    period = (t1 - t0) + 1_000_000  # the span plus 1 ms
    leaves = _leaf_ops(events)
    max_ext = max((e.get("args", {}).get("External id", 0) for e in events), default=0) + 1
    max_flow = max((e.get("id", 0) for e in events if e.get("ph") in "sf"), default=0) + 1
    host_pid, host_tid = next((e["pid"], e["tid"]) for e in host if e.get("cat") == "cpu_op")

    opener = gzip.open if compress else open
    target = int(size_mb * MB)
    written = 0
    steps = 0
    count = 0
    cpu_total = 0  # Total Allocated of the seed's CPU allocator, running on across steps
    cuda_total = 1 << 20  # of the generated CUDA allocator (1 MiB in use before the trace)
    with opener(out_path, "wt", encoding="utf-8", newline="") as f:  # type: ignore[operator]
        out: IO[str] = f

        def put(text: str) -> None:
            nonlocal written, count
            out.write(text)
            written += len(text)
            count += 1

        header = {k: v for k, v in seed.items() if k not in ("traceEvents", "traceName")}
        head = "{\n" + "".join(f'  "{k}": {json.dumps(v)},\n' for k, v in header.items())
        head += '  "traceEvents": [\n'
        out.write(head)
        written += len(head)
        first = True
        for m in meta + [
            {"ph": "M", "name": "process_name", "pid": GPU_PID, "tid": 0, "ts": events[0]["ts"],
             "args": {"name": "GPU 0"}},
            {"ph": "M", "name": "thread_name", "pid": GPU_PID, "tid": GPU_STREAM,
             "ts": events[0]["ts"], "args": {"name": f"stream {GPU_STREAM}"}},
        ]:
            put(("" if first else ",\n") + _event("M", None, m["name"], m["pid"], m["tid"],
                                                   _ns(m["ts"]), args=m.get("args")))
            first = False
        while written < target:
            shift = steps * period
            ext_base = steps * max_ext * 2
            flow_base = steps * max_flow
            corr = steps * 100_000
            ev_idx = 0
            for i, e in enumerate(events):
                if e.get("ph") == "M" or "ts" not in e or e.get("cat") == "Trace":
                    continue
                ts = _ns(e["ts"]) + shift
                args = dict(e.get("args", {}))
                if "External id" in args:
                    args["External id"] += ext_base
                if "Ev Idx" in args:
                    args["Ev Idx"] = ev_idx
                    ev_idx += 1
                if e.get("name") == "[memory]":
                    cpu_total += int(args.get("Bytes", 0))
                    args["Total Allocated"] = cpu_total
                ph = e["ph"]
                if ph in ("s", "f"):
                    extra = ', "bp": "e"' if ph == "f" else ""
                    put(",\n" + (f'  {{\n    "ph": "{ph}",\n    "id": {e["id"] + flow_base},\n'
                                 f'    "pid": {e["pid"]},\n    "tid": {e["tid"]},\n'
                                 f'    "ts": {_us(ts)},\n    "cat": "{e["cat"]}",\n'
                                 f'    "name": "{e["name"]}"\n    {extra}\n  }}'))
                    continue
                dur = _ns(e["dur"]) if "dur" in e else None
                extra = f',\n    "s": "{e["s"]}"' if "s" in e else ""
                put(",\n" + _event(ph, e.get("cat"), e["name"], e["pid"], e["tid"], ts, dur,
                                   args, extra))
                if i in leaves:
                    corr += 1
                    ext = args.get("External id", 0)
                    launch = ts + (dur or 2000) // 2
                    kernel_ts = launch + 4_000 + (corr % 7) * 100
                    kernel_dur = 1_500 + (corr % 13) * 250
                    addr = 139_800_000_000_000 + (corr % 4096) * 512
                    size = 512 * (1 + corr % 64)
                    cuda_total += size
                    put(",\n" + _memory(host_pid, host_tid, launch - 300, size, cuda_total,
                                        addr, 1, 0, ev_idx))
                    put(",\n" + _runtime(e["pid"], e["tid"], launch, 3_000 + corr % 1000,
                                         ext, corr))
                    put(",\n" + _flow("s", corr, e["pid"], e["tid"], launch))
                    put(",\n" + _kernel(KERNELS[corr % len(KERNELS)], kernel_ts, kernel_dur,
                                        ext, corr))
                    put(",\n" + _flow("f", corr, GPU_PID, GPU_STREAM, kernel_ts))
                    cuda_total -= size
                    put(",\n" + _memory(host_pid, host_tid, kernel_ts + kernel_dur + 500, -size,
                                        cuda_total, addr, 1, 0, ev_idx + 1))
                    ev_idx += 2
            steps += 1
        tail = '\n  ],\n  "traceName": "generated.pt.trace.json"\n}\n'
        out.write(tail)
        written += len(tail)
    return {"steps": steps, "events": count, "bytes": written, "path": str(out_path)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size_mb", type=float)
    parser.add_argument("--out", type=Path, default=None,
                        help="output path (default /tmp/kineto_<SIZE>MB.pt.trace.json)")
    parser.add_argument("--seed-file", type=Path, default=DEFAULT_SEED)
    parser.add_argument("--gzip", action="store_true", help="write .gz (level 9 default)")
    args = parser.parse_args(argv)
    out = args.out or Path(f"/tmp/kineto_{args.size_mb:g}MB.pt.trace.json" +
                           (".gz" if args.gzip else ""))
    start = time.perf_counter()
    info = make_kineto(args.size_mb, out, args.seed_file, args.gzip)
    info["seconds"] = round(time.perf_counter() - start, 1)
    json.dump(info, sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
