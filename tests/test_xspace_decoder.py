"""The C++ XSpace decoder against protobuf: the same visits, or both fail.

cpp/tests/xspace_dump (built with the C++ unit tests) prints the decoder's visits of a file;
``expected_dump`` derives the same lines from protobuf's parse (tests/xspace_proto.py): plane,
line and event fields, metadata names (an absent id: ""), every stat (own, then the metadata's
not overridden; names and refs resolved; compressed values as their bytes), and the counts,
unknown fields included (protobuf's UnknownFieldSet, recursively). Inputs: the real samples,
hypothesis-generated XSpace messages in random valid encodings (tests/xspace_strategies.py),
and mutations of both (bit flips, truncations, splices): the decoder must fail exactly when
protobuf fails, and agree when it does not.
"""

from __future__ import annotations

import random
import struct
import subprocess
from pathlib import Path

import pytest
from google.protobuf import unknown_fields
from google.protobuf.message import DecodeError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xspace_proto as xp
import xspace_strategies as xs
from test_cpp_units import BUILD, CONFIGURE, _cmake

DATA = Path(__file__).parent / "data" / "xspace"
SAMPLES = sorted(DATA.glob("*.xplane.pb"))
INT64_MAX = 2**63 - 1


@pytest.fixture(scope="module")
def dump_tool() -> Path:
    cmake = _cmake()
    # The configuration test_cpp_units builds with: after it, xspace_dump is already built
    # (another one would rebuild the whole tree, over two minutes of the default run).
    subprocess.run([cmake, "-S", str(BUILD.parent.parent), "-B", str(BUILD), *CONFIGURE],
                   check=True, capture_output=True, text=True)
    build = subprocess.run([cmake, "--build", str(BUILD), "-j", "2", "--target", "xspace_dump"],
                           check=False, capture_output=True, text=True)
    assert build.returncode == 0, build.stdout[-4000:] + build.stderr[-4000:]
    return BUILD / "cpp" / "tests" / "xspace_dump"


def run_dump(tool: Path, paths: list[Path]) -> dict[str, list[str]]:
    out = subprocess.run([str(tool), *map(str, paths)], capture_output=True, check=True).stdout
    result: dict[str, list[str]] = {}
    current: list[str] = []
    for line in out.decode("ascii").splitlines():
        if line.startswith("FILE "):
            current = result.setdefault(line[5:], [])
        else:
            current.append(line)
    return result


# ---- what the dump must print, from protobuf's parse -----------------------------------------
def h(s: str | bytes) -> str:
    return "x" + (s.encode() if isinstance(s, str) else s).hex()


def stat_line(tag: str, s, stat_names: dict[int, str], inherited: bool) -> str:
    kind = s.WhichOneof("value")
    value = "-"
    short = {None: "none", "double_value": "double", "uint64_value": "uint64",
             "int64_value": "int64", "str_value": "str", "bytes_value": "bytes",
             "ref_value": "ref", "compressed_str_value": "compressed"}[kind]
    if short == "double":
        value = f"{struct.unpack('<Q', struct.pack('<d', s.double_value))[0]:016x}"
    elif short in ("uint64", "int64"):
        value = str(getattr(s, kind))
    elif short == "ref":
        key = s.ref_value - 2**64 if s.ref_value > INT64_MAX else s.ref_value
        value = h(stat_names.get(key, ""))
    elif short != "none":
        value = h(getattr(s, kind))
    return f"{tag} {int(inherited)} {s.metadata_id} {h(stat_names.get(s.metadata_id, ''))} " \
           f"{short} {value}"


def count_unknown(msg) -> int:
    n = len(unknown_fields.UnknownFieldSet(msg))
    for fd, value in msg.ListFields():
        if fd.message_type is None:
            continue
        if fd.message_type.GetOptions().map_entry:
            n += sum(count_unknown(v) for v in value.values())
        else:
            n += sum(count_unknown(v) for v in value)
    return n


def expected_dump(data: bytes) -> dict:
    """The visits as a structure (plane stats and lines apart: their wire interleaving is
    not in protobuf's parse), or {"error": ...} when protobuf does not read `data`."""
    try:
        space = xp.XSpace.FromString(data)
    except DecodeError as e:
        return {"error": str(e)}
    out: dict = {"H": [h(s) for s in space.hostnames], "R": [h(s) for s in space.errors],
                 "W": [h(s) for s in space.warnings], "planes": []}
    counts = [len(space.planes), 0, 0, 0, 0, count_unknown(space)]
    for index, plane in enumerate(space.planes):
        names = {k: v.name for k, v in plane.stat_metadata.items()}
        stats = [stat_line("PS", s, names, False) for s in plane.stats]
        counts[4] += len(stats)
        lines = []
        for li, line in enumerate(plane.lines):
            block = [(f"L {li} {line.id} {line.display_id} {h(line.name)} "
                      f"{h(line.display_name)} {line.timestamp_ns} {line.duration_ps}")]
            counts[1] += 1
            for ev in line.events:
                md = plane.event_metadata.get(ev.metadata_id)
                aggregate = ev.WhichOneof("data") == "num_occurrences"
                counts[3 if aggregate else 2] += 1
                block.append(f"E {int(aggregate)} {ev.metadata_id} {h(md.name if md else '')} "
                             f"{h(md.display_name if md else '')} "
                             f"{ev.num_occurrences if aggregate else ev.offset_ps} "
                             f"{ev.duration_ps}")
                own = {s.metadata_id for s in ev.stats}
                block += [stat_line("S", s, names, False) for s in ev.stats]
                inherited = [s for s in (md.stats if md else []) if s.metadata_id not in own]
                block += [stat_line("S", s, names, True) for s in inherited]
                counts[4] += len(ev.stats) + len(inherited)
            lines.append(block)
        out["planes"].append({"P": f"P {index} {plane.id} {h(plane.name)}", "PS": stats,
                              "lines": lines})
    out["END"] = "END " + " ".join(map(str, counts))
    return out


def parse_dump(lines: list[str]) -> dict:
    """The dump's lines as expected_dump's structure."""
    if lines and lines[-1].startswith("ERROR "):
        return {"error": lines[-1]}
    out: dict = {"H": [], "R": [], "W": [], "planes": []}
    for line in lines:
        tag = line.split(" ", 1)[0]
        if tag in ("H", "R", "W"):
            out[tag].append(line[2:])
        elif tag == "P":
            out["planes"].append({"P": line, "PS": [], "lines": []})
        elif tag == "PS":
            out["planes"][-1]["PS"].append(line)
        elif tag == "LB":
            out["planes"][-1]["lines"].append([None])
        elif tag == "LR":  # the line is handed again, from its LB
            out["planes"][-1]["lines"].pop()
        elif tag == "L":
            out["planes"][-1]["lines"][-1][0] = line
        elif tag in ("E", "S"):
            out["planes"][-1]["lines"][-1].append(line)
        elif tag == "END":
            out["END"] = line
        else:
            raise AssertionError(line)
    return out


def assert_same(got_lines: list[str], data: bytes) -> None:
    want = expected_dump(data)
    got = parse_dump(got_lines)
    if "error" in want or "error" in got:
        assert ("error" in want) == ("error" in got), (want.get("error"), got.get("error"))
        return
    assert got == want


# ---- tests -----------------------------------------------------------------------------------
def test_samples(dump_tool):
    dumps = run_dump(dump_tool, SAMPLES)
    for path in SAMPLES:
        assert_same(dumps[str(path)], path.read_bytes())
        assert dumps[str(path)][-1].startswith("END ")


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_generated_xspaces(dump_tool, tmp_path_factory, data):
    msg = data.draw(xs.xspace_messages())
    encoded = data.draw(xs.wire_encodings(msg))
    parsed = xp.XSpace.FromString(encoded)
    parsed.DiscardUnknownFields()
    assert parsed == msg  # the renderer is valid
    path = tmp_path_factory.mktemp("gen") / "x.xplane.pb"
    path.write_bytes(encoded)
    assert_same(run_dump(dump_tool, [path])[str(path)], encoded)


def test_mutated_inputs_fail_exactly_when_protobuf_fails(dump_tool, tmp_path):
    rng = random.Random(20261125)
    seeds = [p.read_bytes() for p in SAMPLES]
    # small seeds too: mutations of a small message reach more of its structure
    small = xp.XSpace.FromString(seeds[0])
    for plane in small.planes:
        for line in plane.lines:
            del line.events[3:]
    seeds.append(small.SerializeToString())
    paths, inputs = [], {}
    for n in range(400):
        data = xs.mutate(rng, rng.choice(seeds))
        path = tmp_path / f"m{n}.pb"
        path.write_bytes(data)
        paths.append(path)
        inputs[str(path)] = data
    dumps = run_dump(dump_tool, paths)
    outcomes = {"error": 0, "ok": 0}
    for name, data in inputs.items():
        assert_same(dumps[name], data)
        outcomes["error" if dumps[name][-1].startswith("ERROR") else "ok"] += 1
    assert outcomes["error"] > 20 and outcomes["ok"] > 20, outcomes
