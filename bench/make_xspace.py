"""Generate a large XSpace (`*.xplane.pb`) from the real profiler samples in tests/data/xspace.

    python bench/make_xspace.py SIZE_MB [--out DIR] [--replicas N]

Writes DIR/xspace_<SIZE_MB>mb.xplane.pb (default DIR bench/data/, git-ignored) of about SIZE_MB
megabytes (1 MB = 1e6 bytes), built the way a long profile looks:
  * `/host:CPU`: the TensorFlow sample's host threads (python, tf_Compute, tf_data, Eigen
    pools), each line present `--replicas` times (other line ids and names), each replica
    holding step after step of the sample's events: step k is the sample's events with every
    offset shifted by k * period (the sample's span), step-numbered stats (iter_num,
    step_num, group_id) set to k, TensorFlow op events with their stats, and the sample's
    MemoryAllocation / MemoryDeallocation events (allocator, bytes, addr, shape, ... stats);
  * `/device:TPU:0`: the JAX sample's XLA thunk events (hlo_op / hlo_module / program_id /
    run_id refs and ints) as an `XLA Ops` line and its `train` step markers (step_num) as a
    `Steps` line, about a fifth of the bytes, steps shifted the same way;
  * the JAX sample's `/host:metadata` plane (serialised HLO modules as metadata stats) and the
    TensorFlow sample's `Task Environment` plane (profile start/stop as plane stats);
  * the metadata maps after the lines, as the profilers write them; hostnames ["vm"].

An XSpace is the concatenation of its fields (and a plane of its own), so the planes' lines are
emitted as serialised pieces: each event is encoded once per step from its template (metadata
id, shifted offset, duration, its stats' bytes); memory holds one line at a time (a big
plane's length is patched in at the end).
protobuf parses the result (checked on small sizes by bench/test_bench_xspace.py).
"""

from __future__ import annotations

import argparse
import io
import sys
import time
from collections.abc import Iterator
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
sys.path.insert(0, str(REPO_DIR / "tests"))

import numpy as np  # noqa: E402

import xspace_proto as xp  # noqa: E402

SAMPLES = REPO_DIR / "tests" / "data" / "xspace"
DEFAULT_OUT = BENCH_DIR / "data"
MB = 1_000_000
STEP_STATS = ("iter_num", "step_num", "group_id")


def varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def ld(field: int, payload: bytes) -> bytes:
    return varint(field << 3 | 2) + varint(len(payload)) + payload


class EventTemplate:
    """One sample event: per step, its metadata id, offset + shift, duration and stats, with
    its step-numbered stats (iter_num, step_num, group_id) = original + step * stride."""

    __slots__ = ("head", "offset", "step_stats", "tail")

    def __init__(self, event, step_stat_ids: set[int]):
        self.head = b"\x08" + varint(event.metadata_id)
        self.offset = event.offset_ps
        own = [s for s in event.stats if s.metadata_id not in step_stat_ids]
        self.step_stats = [(s.metadata_id, s.int64_value) for s in event.stats
                           if s.metadata_id in step_stat_ids]
        self.tail = (b"\x18" + varint(event.duration_ps) if event.duration_ps else b"") + b"".join(
            ld(4, s.SerializeToString()) for s in own)

    def slots(self, shift: int, step: int, stride: int) -> list[int]:
        """The values that change from step to step: the offset, then each step stat."""
        return [self.offset + shift] + [v + step * stride for _, v in self.step_stats]

    def encode(self, values: list[int], positions: list[int], at: int) -> bytes:
        """The event field with these slot values; appends where each slot's varint starts
        (relative to `at`, where the field will be written) to `positions`."""
        body = bytearray(self.head + b"\x10")
        slots = [len(body)]
        body += varint(values[0]) + self.tail
        for (mid, _), value in zip(self.step_stats, values[1:], strict=True):
            stat_head = b"\x08" + varint(mid) + b"\x20"
            body += varint(4 << 3 | 2) + varint(len(stat_head) + len(varint(value)))
            slots.append(len(body) + len(stat_head))
            body += stat_head + varint(value)
        prefix = varint(4 << 3 | 2) + varint(len(body))
        positions.extend(at + len(prefix) + p for p in slots)
        return prefix + body


_POW7 = np.array([1 << (7 * j) for j in range(1, 10)], dtype=np.uint64)


def varint_lengths(values: np.ndarray) -> np.ndarray:
    return 1 + (values[..., None] >= _POW7).sum(axis=-1)


class LineEncoder:
    """A line's events, step after step. One step is encoded in Python (recording where each
    slot's varint lies); the following steps are that block tiled and patched with numpy, as
    long as every slot's varint keeps its length (else the block is encoded again)."""

    def __init__(self, events: list[EventTemplate], period: int, stride: int):
        self.events, self.period, self.stride = events, period, stride

    def values(self, steps: np.ndarray) -> np.ndarray:
        """(len(steps), slots) uint64: each step's slot values."""
        base, per_step = [], []
        for e in self.events:
            base.append(e.offset)
            per_step.append(self.period)
            for _, v in e.step_stats:
                base.append(v)
                per_step.append(self.stride)
        return (np.array(base, dtype=np.int64)[None, :]
                + steps[:, None].astype(np.int64) * np.array(per_step, dtype=np.int64)[None, :]
                ).astype(np.uint64)

    def block(self, step: int) -> tuple[bytes, np.ndarray, np.ndarray]:
        """Step `step` encoded, with the positions and varint lengths of its slots."""
        out, positions = bytearray(), []
        for e in self.events:
            out += e.encode(e.slots(step * self.period, step, self.stride), positions, len(out))
        vals = self.values(np.array([step]))[0]
        return bytes(out), np.array(positions, dtype=np.int64), varint_lengths(vals)

    def encode(self, steps: range, chunk: int = 256) -> Iterator[bytes]:
        k = steps.start
        while k < steps.stop:
            block, pos, lens = self.block(k)
            k0 = k
            while k < steps.stop:
                rows = np.arange(k, min(k + chunk, steps.stop))
                vals = self.values(rows)
                same = (varint_lengths(vals) == lens[None, :]).all(axis=1)
                n = len(rows) if same.all() else int(np.argmin(same))
                if n == 0:
                    break
                buf = np.tile(np.frombuffer(block, dtype=np.uint8), n)
                at = (pos[None, :] + (np.arange(n) * len(block))[:, None]).ravel()
                v = vals[:n].ravel()
                ln = np.broadcast_to(lens, (n, len(lens))).ravel()
                for j in range(int(lens.max()) if len(lens) else 0):
                    m = ln > j
                    byte = ((v[m] >> np.uint64(7 * j)) & np.uint64(0x7F)).astype(np.uint8)
                    byte |= np.where(ln[m] > j + 1, 0x80, 0).astype(np.uint8)
                    buf[at[m] + j] = byte
                yield buf.tobytes()
                k += n
                if n < len(rows):
                    break
            if k == k0:  # a block whose own next step changes a length: encode it alone
                yield block
                k += 1


def line_header(line_id: int, name: str, timestamp_ns: int) -> bytes:
    return b"\x08" + varint(line_id) + ld(2, name.encode()) + b"\x18" + varint(timestamp_ns)


def line_field(header: bytes, events: list[EventTemplate], steps: range, period: int,
               stride: int, display_name: str) -> bytearray:
    """One XLine field (key, length, payload): the line's events for every step."""
    body = bytearray(header)
    for piece in LineEncoder(events, period, stride).encode(steps):
        body += piece
    body += ld(11, display_name.encode())
    return bytearray(varint(3 << 3 | 2) + varint(len(body))) + body


def plane_maps(plane) -> bytes:
    """The plane's event_metadata and stat_metadata fields (written after its lines)."""
    out = bytearray()
    for k in sorted(plane.event_metadata):
        entry = b"\x08" + varint(k) + ld(2, plane.event_metadata[k].SerializeToString())
        out += ld(4, entry)
    for k in sorted(plane.stat_metadata):
        entry = b"\x08" + varint(k) + ld(2, plane.stat_metadata[k].SerializeToString())
        out += ld(5, entry)
    return bytes(out)


def span_ps(plane) -> int:
    lo = min((e.offset_ps for line in plane.lines for e in line.events), default=0)
    hi = max((e.offset_ps + e.duration_ps for line in plane.lines for e in line.events), default=1)
    return hi - lo + 1_000_000  # a microsecond between steps


def step_ids(plane) -> set[int]:
    return {k for k, m in plane.stat_metadata.items() if m.name in STEP_STATS}


def step_stride(plane) -> int:
    """1 + the largest step number of the sample: step k's numbers follow step k-1's."""
    ids = step_ids(plane)
    values = [s.int64_value for line in plane.lines for e in line.events for s in e.stats
              if s.metadata_id in ids]
    return max(values, default=0) + 1


def write_plane(out, plane_id: int, name: str, lines: list[tuple[bytes, list, str]],
                steps: int, period: int, stride: int, maps: bytes, estimate: int) -> int:
    """Writes one XPlane field; `lines`: (header, event templates, display name). Returns bytes.

    The plane's length goes before its lines, which are encoded one at a time: a plane of
    2**28 bytes or more has a 5-byte length varint, written as a placeholder and patched at
    the end; a smaller one is assembled in memory first."""
    head = b"\x08" + varint(plane_id) + ld(2, name.encode())
    big = estimate >= 1.1 * 2**28
    sink = out if big else io.BytesIO()
    start = out.tell()
    if big:
        out.write(b"\x0a" + bytes(5))
    length = sink.write(head)
    for header, events, display in lines:
        length += sink.write(line_field(header, events, range(steps), period, stride, display))
    length += sink.write(maps)
    if big:
        assert 2**28 <= length < 2**35, length
        end = out.tell()
        out.seek(start + 1)
        out.write(varint(length))
        out.seek(end)
        return 1 + 5 + length
    return out.write(varint(1 << 3 | 2) + varint(length) + sink.getvalue())


def make_xspace(size_mb: float, out_path: Path, replicas: int = 8) -> dict:
    tf = xp.XSpace.FromString((SAMPLES / "tf_keras_mlp_fit.xplane.pb").read_bytes())
    jax = xp.XSpace.FromString((SAMPLES / "jax_mlp2_tanh.xplane.pb").read_bytes())
    tf_host = next(p for p in tf.planes if p.name == "/host:CPU")
    jax_host = next(p for p in jax.planes if p.name == "/host:CPU")
    tf_ids, jax_ids = step_ids(tf_host), step_ids(jax_host)

    host_lines = []
    for r in range(replicas):
        for line in tf_host.lines:
            name = line.name if r == 0 else f"{line.name}#{r}"
            host_lines.append((line_header(line.id + r, name, line.timestamp_ns),
                               [EventTemplate(e, tf_ids) for e in line.events], line.display_name))
    xla = next(line for line in jax_host.lines if line.name.startswith("tf_XLAExecute"))
    python = next(line for line in jax_host.lines if line.name == "python")
    # the XLA line in a few copies (one line stays within tens of MB in memory while written)
    device_lines = [
        (line_header(1 + r, "XLA Ops" if r == 0 else f"XLA Ops#{r}", xla.timestamp_ns),
         [EventTemplate(e, jax_ids) for e in xla.events], "XLA Ops")
        for r in range(replicas // 2 or 1)
    ] + [
        (line_header(100, "Steps", python.timestamp_ns),
         [EventTemplate(e, jax_ids) for e in python.events
          if jax_host.event_metadata[e.metadata_id].name == "train"], "Steps"),
    ]
    host_step = sum(len(e.encode(e.slots(0, 0, 1), [], 0)) for _, evs, _ in host_lines for e in evs)
    device_step = sum(len(e.encode(e.slots(0, 0, 1), [], 0))
                      for _, evs, _ in device_lines for e in evs)
    # about 4/5 of the bytes on the host plane, 1/5 on the device plane
    target = size_mb * MB
    host_steps = max(1, int(target * 0.8 / host_step))
    device_steps = max(1, int(target * 0.2 / device_step))
    host_events = host_steps * sum(len(evs) for _, evs, _ in host_lines)
    device_events = device_steps * sum(len(evs) for _, evs, _ in device_lines)

    t0 = time.perf_counter()
    out_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_path.with_suffix(".tmp")
    with open(tmp, "wb", buffering=8 << 20) as out:
        size = write_plane(out, 0, "/host:CPU", host_lines, host_steps, span_ps(tf_host),
                           step_stride(tf_host), plane_maps(tf_host), host_steps * host_step)
        size += write_plane(out, 1, "/device:TPU:0", device_lines, device_steps,
                            span_ps(jax_host), step_stride(jax_host), plane_maps(jax_host),
                            device_steps * device_step)
        for plane in (p for p in jax.planes if p.name == "/host:metadata"):
            size += out.write(ld(1, plane.SerializeToString()))
        for plane in (p for p in tf.planes if p.name == "Task Environment"):
            size += out.write(ld(1, plane.SerializeToString()))
        size += out.write(ld(4, b"vm"))
    tmp.replace(out_path)
    return {"path": str(out_path), "bytes": size, "events": host_events + device_events,
            "host_steps": host_steps, "device_steps": device_steps,
            "lines": len(host_lines) + len(device_lines), "seconds": time.perf_counter() - t0}


def ensure(size_mb: float, out_dir: Path = DEFAULT_OUT, replicas: int = 8) -> dict:
    """The generated file of that size, made if missing (its figures recomputed either way)."""
    path = out_dir / f"xspace_{size_mb:g}mb.xplane.pb"
    if path.exists():
        return {"path": str(path), "bytes": path.stat().st_size, "cached": True}
    return make_xspace(size_mb, path, replicas)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("size_mb", type=float)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--replicas", type=int, default=8, help="copies of each host line")
    args = ap.parse_args()
    info = make_xspace(args.size_mb, args.out / f"xspace_{args.size_mb:g}mb.xplane.pb",
                       args.replicas)
    print(f"{info['path']}: {info['bytes'] / MB:.1f} MB, {info['events']:,} events, "
          f"{info['lines']} lines, {info['host_steps']} host / {info['device_steps']} device "
          f"steps, {info['seconds']:.1f} s")


if __name__ == "__main__":
    main()
