"""Makes the XSpace fixtures under tests/data/xspace/ from the real profiler samples.

    python tests/make_xspace_fixtures.py FORMATS_DIR [--xprof]

FORMATS_DIR is the directory of real trace samples (the one holding ``xplane/`` and
``tfevents/``). Each sample's ``<host>.xplane.pb`` is copied with a meaningful name, with the
XProf 2.24.2 conversions written beside it (``.memory_profile.json.gz``, ``.trace.json.gz``;
for JAX the ``.trace.json.gz`` beside the sample is JAX's own export, kept as
``.jax_trace.json.gz``). With ``--xprof`` (the ``xprof`` package installed), the JAX sample's
trace viewer conversion is made here with XProf (XProf 2.24.2 made the others the same way).

Also written: ``tf_keras_mlp_fit_a100_node.xplane.pb``, the TensorFlow sample with host name
``a100-node`` instead of ``vm`` (issue 21: that file read as a RunMetadata with 0 events,
exit 0). The hostnames field (4) is the last top-level field; protobuf reads a concatenation
of messages as their merge, so the variant is the original without its hostnames field plus a
serialised ``XSpace(hostnames=["a100-node"])``: every other byte is the original's.
"""

from __future__ import annotations

import argparse
import glob
import gzip
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import xspace_proto as xp  # noqa: E402

OUT = HERE / "data" / "xspace"

# fixture name -> the sample's run directory, relative to FORMATS_DIR (one run each).
SAMPLES = {
    "tf_keras_mlp_fit": "xplane/tf_keras_mlp_fit/plugins/profile/*",
    "keras_tensorboard_cb_mlp": "tfevents/keras_tensorboard_cb_mlp/train/plugins/profile/*",
    "jax_mlp2_tanh": "xplane/jax_mlp2_tanh/plugins/profile/*",
}
# Whose Chrome trace JSON sits beside each sample.
TRACE_WRITER = {"tf_keras_mlp_fit": "xprof", "keras_tensorboard_cb_mlp": "xprof",
                "jax_mlp2_tanh": "jax"}


def _run_dir(formats: Path, pattern: str) -> Path:
    runs = sorted(glob.glob(str(formats / pattern)))
    if len(runs) != 1:
        raise SystemExit(f"expected one run for {pattern}, found {runs}")
    return Path(runs[0])


def a100_variant(data: bytes) -> bytes:
    """The XSpace `data` with hostnames ['a100-node'] instead of ['vm']."""
    space = xp.XSpace.FromString(data)
    assert list(space.hostnames) == ["vm"], space.hostnames
    tail = xp.XSpace(hostnames=["vm"]).SerializeToString()
    assert data.endswith(tail)
    out = data[: -len(tail)] + xp.XSpace(hostnames=["a100-node"]).SerializeToString()
    renamed = xp.XSpace.FromString(out)
    assert list(renamed.hostnames) == ["a100-node"]
    del renamed.hostnames[:]
    del space.hostnames[:]
    assert renamed == space
    return out


def xprof_trace_viewer(xplane: Path) -> bytes:
    """XProf's trace viewer JSON of `xplane`, gzip-compressed (needs the xprof package)."""
    from xprof.convert import raw_to_tool_data

    with tempfile.TemporaryDirectory() as tmp:
        # XProf may cache results beside the file it reads: give it a scratch copy.
        copy = Path(tmp) / "host.xplane.pb"
        shutil.copyfile(xplane, copy)
        data, _ = raw_to_tool_data.xspace_to_tool_data(
            [str(copy)], "trace_viewer", {"use_saved_result": False})
    json.loads(data)
    return gzip.compress(data.encode() if isinstance(data, str) else data, mtime=0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("formats_dir", type=Path)
    ap.add_argument("--xprof", action="store_true", help="convert the JAX sample with XProf")
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    for name, pattern in SAMPLES.items():
        run = _run_dir(args.formats_dir, pattern)
        host = "vm"
        xplane = run / f"{host}.xplane.pb"
        xp.XSpace.FromString(xplane.read_bytes())  # a sample that protobuf reads
        shutil.copyfile(xplane, OUT / f"{name}.xplane.pb")
        shutil.copyfile(run / f"{host}.memory_profile.json.gz",
                        OUT / f"{name}.memory_profile.json.gz")
        trace = "trace" if TRACE_WRITER[name] == "xprof" else "jax_trace"
        shutil.copyfile(run / f"{host}.trace.json.gz", OUT / f"{name}.{trace}.json.gz")
        if TRACE_WRITER[name] != "xprof" and args.xprof:
            (OUT / f"{name}.trace.json.gz").write_bytes(xprof_trace_viewer(xplane))
    tf = (OUT / "tf_keras_mlp_fit.xplane.pb").read_bytes()
    (OUT / "tf_keras_mlp_fit_a100_node.xplane.pb").write_bytes(a100_variant(tf))
    for p in sorted(OUT.iterdir()):
        print(f"{os.path.getsize(p):>8}  {p.relative_to(HERE.parent)}")


if __name__ == "__main__":
    main()
