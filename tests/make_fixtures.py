"""Makes the tiny committed fixtures under tests/data/regressions/ (each well under 50 KB).

    python tests/make_fixtures.py          # (re)writes the files; deterministic output
    python tests/make_fixtures.py --check  # exits 1 if a committed file differs from what it makes

Fixtures:
- small_stepstats.pbtxt / .pb: a StepStats cut from seed 000 (the first 4 records of the
  "/device:GPU:0/stream:15" block and 4 records of the CPU executor block, one of them with
  allocation records and a fully populated allocation description), plus one synthetic record
  that uses the nanosecond fields, thread_id, referenced_tensor, persistent_tensor_alloc_ids, a
  dim of size -1 (a 10-byte varint on the wire) and an unknown-rank shape, and a thread_names
  entry. Used by the truncation / byte-flip suites in test_malformed.py.
- small_runmetadata.pbtxt / .pb: a RunMetadata with the first 2 records of seed 001's GPU block,
  a small synthetic cost graph (input_info, output_info, packed control_input), one partition
  graph and one function graph.

The text files are printed by protobuf's text_format (two-space indentation, one field per line,
like TensorFlow's own dumps); the binary files are SerializeToString() of the same messages.
"""

from __future__ import annotations

import sys
from pathlib import Path

from google.protobuf import text_format

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from tfproto import RunMetadata, StepStats  # noqa: E402

DATA = HERE / "data"
OUT = DATA / "regressions"


def _small_stepstats() -> StepStats:
    seed = StepStats()
    text_format.Parse((DATA / "seed000_stepstats.pbtxt").read_text(), seed)
    small = StepStats()

    stream = small.dev_stats.add()
    stream.CopyFrom(seed.dev_stats[0])
    del stream.node_stats[4:]

    cpu_src = seed.dev_stats[2]
    assert cpu_src.device == "/job:localhost/replica:0/task:0/device:CPU:0"
    wanted = [
        "_SOURCE",
        "Train/Model/embedding_lookup/axis",
        "_arg_Train/Model/MultiRNNCellZeroState/LSTMBlockCellZeroState/zeros_0_0",
        "Train/TrainInput/input_producer",
    ]
    by_name = {n.node_name: n for n in cpu_src.node_stats}
    cpu = small.dev_stats.add()
    cpu.device = cpu_src.device
    for name in wanted:
        cpu.node_stats.add().CopyFrom(by_name[name])
    cpu.thread_names[7] = "worker_7"

    # One synthetic record exercising the remaining NodeExecStats fields.
    n = cpu.node_stats.add()
    n.node_name = "synthetic/nanos"
    n.all_start_micros = 1532145303703500
    n.all_end_rel_micros = 3
    n.all_start_nanos = 1532145303703500123
    n.op_start_rel_nanos = 250
    n.op_end_rel_nanos = 2500
    n.all_end_rel_nanos = 3000
    n.scheduled_nanos = 1532145303703499001
    n.thread_id = 4242
    n.timeline_label = "synthetic/nanos = Fill(a, b)"
    out = n.output.add()
    out.slot = 0
    td = out.tensor_description
    td.dtype = 101  # DT_FLOAT_REF
    td.shape.dim.add().size = -1
    td.shape.dim.add().size = 3
    td.allocation_description.requested_bytes = 48
    td.allocation_description.allocator_name = "cpu"
    out2 = n.output.add()
    out2.slot = 1
    out2.tensor_description.dtype = 3
    out2.tensor_description.shape.unknown_rank = True
    ref = n.referenced_tensor.add()
    ref.requested_bytes = 8
    ref.allocator_name = "cpu"
    n.memory_stats.temp_memory_size = 64
    n.memory_stats.persistent_memory_size = 16
    n.memory_stats.persistent_tensor_alloc_ids.extend([3, 300, 30000])
    return small


def _small_runmetadata() -> RunMetadata:
    seed = RunMetadata()
    text_format.Parse((DATA / "seed001_runmetadata.pbtxt").read_text(), seed)
    rm = RunMetadata()
    dev = rm.step_stats.dev_stats.add()
    dev.CopyFrom(seed.step_stats.dev_stats[0])
    del dev.node_stats[2:]

    cg = rm.cost_graph
    a = cg.node.add()
    a.name = "tower_0/v/xentropy/Const_1"
    a.device = "/job:localhost/replica:0/task:0/device:GPU:0"
    a.id = 1
    a.compute_cost = 3
    a.compute_time = 2
    a.memory_time = 1
    a.is_final = True
    a.output_info.add().size = 4
    b = cg.node.add()
    b.name = "tower_0/v/xentropy/zeros_like"
    b.device = a.device
    b.id = 2
    b.temporary_memory_size = 256
    b.persistent_memory_size = 512
    b.inaccurate = True
    ii = b.input_info.add()
    ii.preceding_node = 1
    ii.preceding_port = 0
    b.control_input.extend([1, 7])
    oi = b.output_info.add()
    oi.size = 16
    oi.dtype = 1
    oi.shape.dim.add().size = 4
    c = cg.cost.add()
    c.cost = 1.5
    c.dimension = "flops"

    g = rm.partition_graphs.add()
    nd = g.node.add()
    nd.name = "tower_0/v/xentropy/Const_1"
    nd.op = "Const"
    nd.device = a.device
    nd = g.node.add()
    nd.name = "tower_0/v/xentropy/zeros_like"
    nd.op = "ZerosLike"
    nd.input.extend(["tower_0/v/xentropy/Const_1", "^_SOURCE"])
    nd.device = a.device
    fg = rm.function_graphs.add()
    fnd = fg.partition_graphs.add().node.add()
    fnd.name = "f/add"
    fnd.op = "AddV2"
    fnd.input.extend(["f/x", "f/y:1"])
    rm.session_metadata.name = "sess"
    rm.session_metadata.version = 2
    return rm


def build() -> dict[str, bytes]:
    ss = _small_stepstats()
    rm = _small_runmetadata()
    files = {
        "small_stepstats.pbtxt": text_format.MessageToString(ss).encode(),
        "small_stepstats.pb": ss.SerializeToString(deterministic=True),
        "small_runmetadata.pbtxt": text_format.MessageToString(rm).encode(),
        "small_runmetadata.pb": rm.SerializeToString(deterministic=True),
    }
    for name, data in files.items():
        assert len(data) < 50_000, (name, len(data))
    return files


def main(argv: list[str]) -> int:
    files = build()
    if "--check" in argv:
        bad = [n for n, d in files.items() if not (OUT / n).exists() or (OUT / n).read_bytes() != d]
        for n in bad:
            print(f"out of date: {OUT / n}")
        return 1 if bad else 0
    OUT.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (OUT / name).write_bytes(data)
        print(f"wrote {OUT / name} ({len(data)} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
