"""bench/make_xspace.py makes an XSpace that protobuf reads, shaped like a long profile.

    pytest bench/test_bench_xspace.py

A ~3 MB file (written under pytest's tmp dir): protobuf parses it, its planes, lines and event
count are what the generator says, every line's offsets increase step after step, the step
numbers continue from step to step, and the memory events keep the sample's peak.
"""

from __future__ import annotations

import sys
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))
sys.path.insert(0, str(BENCH_DIR.parent / "tests"))

import make_xspace  # noqa: E402
import xspace_oracle as xo  # noqa: E402
import xspace_proto as xp  # noqa: E402


def test_generated_xspace(tmp_path):
    info = make_xspace.make_xspace(3, tmp_path / "x.xplane.pb", replicas=2)
    data = Path(info["path"]).read_bytes()
    assert len(data) == info["bytes"] and 2.5e6 < len(data) < 3.5e6
    space = xp.XSpace.FromString(data)
    assert [p.name for p in space.planes] == ["/host:CPU", "/device:TPU:0", "/host:metadata",
                                              "Task Environment"]
    assert list(space.hostnames) == ["vm"]
    assert sum(len(line.events) for p in space.planes for line in p.lines) == info["events"]
    host = space.planes[0]
    assert len(host.lines) == 2 * 11 and host.lines[11].name == host.lines[0].name + "#1"
    for plane in space.planes[:2]:
        for line in plane.lines:
            offsets = [e.offset_ps for e in line.events]
            steps = info["host_steps"] if plane is host else info["device_steps"]
            template = len(offsets) // steps
            # step k + 1 starts after step k ends
            assert all(offsets[i + template] > offsets[i] for i in range(len(offsets) - template))
    t = xo.expected_xspace(space)
    steps = sorted({e.step for e in t.events if e.node_name == "train"})
    assert steps == list(range(3 * info["device_steps"]))
    (peak,) = t.peaks.values()
    assert (peak.peak_bytes, peak.lifetime_peak_bytes, len(peak.live)) == (1572864, 1572864, 3)
    assert len(t.alloc_records) == 48 * info["host_steps"] * 2
