"""Generate large TensorBoard event files (and log directories) holding RunMetadata.

    python bench/make_tfevents.py SIZE_MB [--out PATH] [--scalars-per-step N]
    python bench/make_tfevents.py SIZE_MB --logdir [--runs N] [--out DIR]

One event file (default bench/data/events.out.tfevents.<SIZE>MB.bench) of about SIZE_MB
megabytes (1 MB = 1e6 bytes), as a TF1-style training loop with FileWriter writes it: a
file_version Event, then for every step
  - a TaggedRunMetadata Event (tag step_<k>) holding a full-trace RunMetadata: alternately
    tests/data/seed001_runmetadata.pbtxt converted to the binary wire format with tests/tfproto.py
    (86 KB) and the step_0 RunMetadata of the real TF1 sample in tests/data/tfevents (8.8 KB);
  - N scalar Events (default 20): TF1 simple_value summaries and TF2 `scalars` plugin tensors;
and every 64th step a TF2 trace_export summary (plugin graph_run_metadata_graph) with the real
TF2 sample's graph-only RunMetadata (30 KB). Steps and wall times increase.

--logdir writes DIR (default bench/data/tfevents_logdir_<SIZE>MB) with RUNS runs (default 64),
each `run_NNN/train/` and `run_NNN/validation/` holding one event file; SIZE_MB is the total.

Records are framed with a pure-Python CRC-32C (tests/tfevents_oracle.py). The large RunMetadata
payloads are the last bytes of their Events, so each Event's CRC is the CRC of its short head
combined with the payload's (computed once) by a zero-byte shift: no per-record pass over the
payload in Python. Prints a JSON summary (records, RunMetadata, bytes, seconds).
"""

from __future__ import annotations

import argparse
import json
import struct
import sys
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
TESTS_DIR = REPO_DIR / "tests"
sys.path.insert(0, str(TESTS_DIR))

from google.protobuf import text_format  # noqa: E402

import tfevents_oracle as oracle  # noqa: E402
import tfevents_proto as tep  # noqa: E402
import tfproto  # noqa: E402

MB = 1_000_000
DEFAULT_OUT = BENCH_DIR / "data"
SEED_RUN_METADATA = TESTS_DIR / "data" / "seed001_runmetadata.pbtxt"
SAMPLES = TESTS_DIR / "data" / "tfevents"
TF1_SAMPLE = SAMPLES / "tf1_small_convnet" / "events.out.tfevents.1795619468.vm"
TF2_SAMPLE = SAMPLES / "tf2_trace_graph_conv1d" / "events.out.tfevents.1795619470.vm.28600.0.v2"
START_WALL_TIME = 1_795_619_468.0


# ---- CRC-32C of a concatenation -------------------------------------------------------------
# crc(A + B) = Z(crc(A)) ^ crc(B), where Z moves a CRC register over len(B) zero bytes: a
# linear map on 32 bits, kept as the images of the 32 unit vectors.

def _apply(op: list[int], v: int) -> int:
    r, i = 0, 0
    while v:
        if v & 1:
            r ^= op[i]
        v >>= 1
        i += 1
    return r


def _zero_bytes_operator(n: int) -> list[int]:
    one = [(1 << i >> 8) ^ oracle._TABLE[(1 << i) & 0xFF] for i in range(32)]
    result = [1 << i for i in range(32)]
    while n:
        if n & 1:
            result = [_apply(result, c) for c in one]
        one = [_apply(one, c) for c in one]
        n >>= 1
    return result


class _Payload:
    """A payload that ends many Events, with its CRC and zero-shift operator computed once."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.crc = oracle.crc32c(data)
        self.shift = _zero_bytes_operator(len(data))

    def crc_after(self, head: bytes) -> int:
        return _apply(self.shift, oracle.crc32c(head)) ^ self.crc


def _mask(crc: int) -> int:
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def _frame_with_crc(event: bytes, crc: int) -> bytes:
    length = struct.pack("<Q", len(event))
    return (length + struct.pack("<I", oracle.masked_crc32c(length)) + event
            + struct.pack("<I", _mask(crc)))


# ---- payloads --------------------------------------------------------------------------------

def seed_run_metadata() -> bytes:
    msg = tfproto.RunMetadata()
    text_format.Parse(SEED_RUN_METADATA.read_text(), msg)
    return msg.SerializeToString()


def sample_payloads() -> tuple[bytes, bytes]:
    """The TF1 sample's step_0 RunMetadata and the TF2 sample's graph-only one."""
    tf1 = oracle.scan_bytes(TF1_SAMPLE.read_bytes()).run_metadata[0].payload
    tf2 = oracle.scan_bytes(TF2_SAMPLE.read_bytes()).run_metadata[0].payload
    return tf1, tf2


class EventWriter:
    """Writes the Events of a training loop to one file; counts what it wrote."""

    def __init__(self, path: Path, payloads: list[_Payload], graph_payload: bytes,
                 scalars_per_step: int) -> None:
        self.f = open(path, "wb")  # noqa: SIM115 (closed by close())
        self.payloads = payloads
        self.graph_payload = graph_payload
        self.scalars_per_step = scalars_per_step
        self.bytes = 0
        self.records = 0
        self.run_metadata = 0
        self.step = 0
        self._write(oracle.frame(tep.Event(wall_time=START_WALL_TIME,
                                           file_version="brain.Event:2").SerializeToString()))

    def _write(self, record: bytes) -> None:
        self.f.write(record)
        self.bytes += len(record)
        self.records += 1

    def write_step(self) -> None:
        k = self.step
        wall = START_WALL_TIME + 0.05 * k
        payload = self.payloads[k % len(self.payloads)]
        event = tep.Event(wall_time=wall, step=k)
        event.tagged_run_metadata.tag = f"step_{k}"
        event.tagged_run_metadata.run_metadata = payload.data
        data = event.SerializeToString()
        assert data.endswith(payload.data)
        self._write(_frame_with_crc(data, payload.crc_after(data[:-len(payload.data)])))
        self.run_metadata += 1
        if k % 64 == 0:
            value = tep.Summary.Value(tag="train_step_trace")
            value.metadata.plugin_data.plugin_name = "graph_run_metadata_graph"
            value.tensor.dtype = 7
            value.tensor.string_val.append(self.graph_payload)
            graph = tep.Event(wall_time=wall, step=k, summary=tep.Summary(value=[value]))
            self._write(oracle.frame(graph.SerializeToString()))
            self.run_metadata += 1
        self.write_scalars(k, wall)
        self.step += 1

    def write_scalars(self, k: int, wall: float, count: int | None = None) -> None:
        for i in range(self.scalars_per_step if count is None else count):
            value = tep.Summary.Value(tag=f"loss_{i}")
            if i % 2:
                value.simple_value = 1.0 / (k + i + 1)
            else:
                value.metadata.plugin_data.plugin_name = "scalars"
                value.tensor.dtype = 1
                value.tensor.tensor_content = struct.pack("<f", 1.0 / (k + i + 1))
            event = tep.Event(wall_time=wall + 1e-4 * i, step=k, summary=tep.Summary(value=[value]))
            self._write(oracle.frame(event.SerializeToString()))

    def close(self) -> None:
        self.f.close()


def _payloads() -> tuple[list[_Payload], bytes]:
    tf1, tf2 = sample_payloads()
    return [_Payload(seed_run_metadata()), _Payload(tf1)], tf2


def make_file(size_mb: float, path: Path, scalars_per_step: int = 20) -> dict:
    t0 = time.perf_counter()
    payloads, graph = _payloads()
    w = EventWriter(path, payloads, graph, scalars_per_step)
    while w.bytes < size_mb * MB:
        w.write_step()
    w.close()
    return {"path": str(path), "bytes": w.bytes, "records": w.records,
            "run_metadata": w.run_metadata, "steps": w.step,
            "seconds": round(time.perf_counter() - t0, 1)}


def make_logdir(size_mb: float, root: Path, runs: int = 64, scalars_per_step: int = 20) -> dict:
    """RUNS runs of train (RunMetadata + scalars) and validation (scalars only) event files."""
    t0 = time.perf_counter()
    payloads, graph = _payloads()
    per_run = size_mb * MB / runs
    totals = {"files": 0, "bytes": 0, "records": 0, "run_metadata": 0}
    for r in range(runs):
        writers = []
        for sub in ("train", "validation"):
            d = root / f"run_{r:03d}" / sub
            d.mkdir(parents=True, exist_ok=True)
            name = f"events.out.tfevents.{int(START_WALL_TIME) + r}.bench.{r}.{len(writers)}.v2"
            writers.append(EventWriter(d / name, payloads, graph, scalars_per_step))
        train, validation = writers
        while train.bytes + validation.bytes < per_run:
            train.write_step()
            validation.write_scalars(train.step, START_WALL_TIME + 0.05 * train.step, 4)
        for w in writers:
            w.close()
            totals["files"] += 1
            totals["bytes"] += w.bytes
            totals["records"] += w.records
            totals["run_metadata"] += w.run_metadata
    return {"path": str(root), **totals, "seconds": round(time.perf_counter() - t0, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("size_mb", type=float)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--scalars-per-step", type=int, default=20)
    parser.add_argument("--logdir", action="store_true")
    parser.add_argument("--runs", type=int, default=64)
    args = parser.parse_args()
    tag = f"{args.size_mb:g}MB"
    if args.logdir:
        out = args.out or DEFAULT_OUT / f"tfevents_logdir_{tag}"
        info = make_logdir(args.size_mb, out, args.runs, args.scalars_per_step)
    else:
        out = args.out or DEFAULT_OUT / f"events.out.tfevents.{tag}.bench"
        out.parent.mkdir(parents=True, exist_ok=True)
        info = make_file(args.size_mb, out, args.scalars_per_step)
    print(json.dumps(info))


if __name__ == "__main__":
    main()
