"""Malformed input gets only TraceFormatError (a ValueError) -- never a crash, a hang or another
exception type.

Inputs: the tiny fixtures in tests/data/regressions/ (made by tests/make_fixtures.py from seeds
000/001): a StepStats (4.8 KB text, 1.4 KB binary) and a RunMetadata (2.2 KB text, 0.7 KB binary).

The heavy loops (truncation at every offset, thousands of byte flips) and every hand-made hostile
input run in child processes (``python tests/test_malformed.py JOB.json``), so a segfault, an abort
or a stack overflow fails the test that caused it instead of killing pytest; the child reports
outcomes as JSON and the assertions are made here. The child prints each input's label to stderr
just before opening it, so a crash report names the input.

What "agreement with protobuf" is asserted, and why:
- Truncation, binary and text: tracecore raises if and only if protobuf (upb ParseFromString /
  text_format.Parse, with the message classes of tests/tfproto.py) raises on the same bytes, and
  when both accept they see the same numbers of devices, events, tensors and allocation records.
  This is exact because a prefix of a valid dump can only be (a) cut inside a field -> invalid for
  both, or (b) cut at a top-level field boundary -> a valid, smaller message for both. The known
  deliberate differences do not arise for these prefixes but are still encoded: tracecore rejects
  a message with no StepStats/RunMetadata content (protobuf accepts an empty message); every
  prefix here starts with a complete top-level key, and the checker demands an error where
  protobuf yields an empty message.
- Byte flips, binary: "protobuf rejects => tracecore rejects" (every reason upb has -- truncation,
  a bad varint, field number 0, wire type 6/7, unbalanced groups, bad UTF-8 in a string field --
  is a reason tracecore must reject too), with one documented exception: trials whose mutated
  bytes all lie inside the payload of a sub-message tracecore does not export and skips unread
  like an unknown field (NodeExecStats.referenced_tensor, CostGraphDef.cost,
  RunMetadata.session_metadata in these fixtures; see _UNREAD). tracecore checks only the length
  of such a field, so e.g. a truncated varint or invalid UTF-8 inside it is accepted where upb
  rejects it. The converse is NOT asserted: tracecore also rejects on purpose what protobuf
  accepts (a file without any StepStats content, a nanosecond value that overflows int64 -- the
  overflow rule of the contract). When both accept and tracecore detects the expected kind, the
  counts must agree.
- Byte flips, text: tracecore skips unknown fields (protobuf's strict text parser rejects them) and
  rejects int64-overflowing times, so neither implication holds in general; only "both accept =>
  same counts" is asserted.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

REG = HERE / "data" / "regressions"
FIXTURES = {
    # name: (forced format, protobuf message class name, kind, events, devices, tensors, records)
    "small_stepstats.pbtxt": ("text", "StepStats", 9, 2, 5, 2),
    "small_stepstats.pb": ("binary", "StepStats", 9, 2, 5, 2),
    "small_runmetadata.pbtxt": ("text", "RunMetadata", 2, 1, 0, 0),
    "small_runmetadata.pb": ("binary", "RunMetadata", 2, 1, 0, 0),
}
CHILD_TIMEOUT = 240  # seconds; a hang fails the test instead of blocking the run

# Every error message must say what was wrong / expected (vocabulary of the contract's messages).
TEXT_ERROR_WORDS = re.compile(
    r"expected|unterminated|inside a string|ends inside|unknown enum value|out of (\w+ )?range|"
    r"not valid UTF-8|"
    r"nesting deeper|empty input|no StepStats|invalid|unexpected",
)
BINARY_ERROR_WORDS = re.compile(
    r"runs past the end|truncated|input ends|varint longer than 10 bytes|invalid field number|"
    r"invalid wire type|group|not valid UTF-8|out of (\w+ )?range|empty input|no StepStats|"
    r"expected",
)


# --------------------------------------------------------------------------------------------
# Tiny protobuf wire encoder (independent of tracecore and of tfproto)
# --------------------------------------------------------------------------------------------
def varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def key(field: int, wire_type: int) -> bytes:
    return varint(field << 3 | wire_type)


def ld(field: int, payload: bytes) -> bytes:
    """A length-delimited field."""
    return key(field, 2) + varint(len(payload)) + payload


def vf(field: int, value: int) -> bytes:
    """A varint field."""
    return key(field, 0) + varint(value)


def node(name: bytes = b"n", start_micros: int = 5, extra: bytes = b"") -> bytes:
    return ld(1, name) + vf(2, start_micros) + vf(5, 2) + extra


def stepstats(*nodes: bytes, device: bytes = b"/device:CPU:0", extra: bytes = b"") -> bytes:
    """A StepStats with one DeviceStepStats holding ``nodes`` (NodeExecStats payloads)."""
    return ld(1, ld(1, device) + b"".join(ld(2, n) for n in nodes) + extra)


# --------------------------------------------------------------------------------------------
# Child-process side
# --------------------------------------------------------------------------------------------
def _outcome(path: str, fmt: str) -> dict:
    import tracecore

    try:
        t = tracecore.open(path, format=fmt)
    except tracecore.TraceFormatError as e:
        return {
            "r": "err",
            "msg": str(e),
            "valueerror": isinstance(e, ValueError),
            "line": getattr(e, "line", "missing"),
            "column": getattr(e, "column", "missing"),
            "offset": getattr(e, "offset", "missing"),
        }
    except BaseException as e:  # noqa: BLE001 - any other exception type is a finding
        return {"r": "other", "type": type(e).__name__, "msg": str(e)[:500]}
    rows = {}
    for name in t.table_names:
        table = t.table(name)
        table.validate(full=True)  # the exported Arrow data must be well formed
        rows[name] = table.num_rows
    out = {
        "r": "ok",
        "kind": t.kind,
        "format": t.format,
        "events": len(t),
        "rows": rows,
        "unknown_fields": t.stats["unknown_fields"],
    }
    ev = t.table("events")  # the core's table (t.events adds Python-derived name columns)
    out["node_name"] = ev["node_name"].to_pylist()[:5]
    out["device"] = ev["device"].to_pylist()[:5]
    out["timeline_label"] = ev["timeline_label"].to_pylist()[:5]
    out["start_ns"] = ev["start_ns"].to_pylist()[:5]
    return out


def _pb_counts(msg, cls_name: str) -> dict:
    ss = msg.step_stats if cls_name == "RunMetadata" else msg
    nodes = [n for d in ss.dev_stats for n in d.node_stats]
    present = msg.ByteSize() > 0 and (cls_name == "StepStats" and len(msg.dev_stats) > 0
                                      or cls_name == "RunMetadata" and msg.HasField("step_stats"))
    return {
        "ok": True,
        "content": bool(present),
        "devices": len(ss.dev_stats),
        "events": len(nodes),
        "tensors": sum(len(n.output) for n in nodes),
        "alloc_records": sum(len(m.allocation_records) for n in nodes for m in n.memory),
    }


def _pb(data: bytes, encoding: str, cls_name: str) -> dict:
    from google.protobuf import text_format

    import tfproto

    msg = getattr(tfproto, cls_name)()
    try:
        if encoding == "binary":
            msg.ParseFromString(data)
        else:
            text_format.Parse(data.decode("utf-8"), msg)
    except Exception as e:  # noqa: BLE001 - DecodeError, ParseError, UnicodeDecodeError, ...
        return {"ok": False, "msg": f"{type(e).__name__}: {e}"[:300]}
    return _pb_counts(msg, cls_name)


class _Writer:
    """Writes each input to a fresh file (a new inode each time, so no earlier mapping of the
    same path can be invalidated under tracecore) and logs its label to stderr first."""

    def __init__(self, workdir: str) -> None:
        self.workdir = workdir
        self.n = 0

    def __call__(self, label: str, data: bytes) -> str:
        self.n += 1
        path = os.path.join(self.workdir, f"in{self.n % 2}.bin")
        tmp = path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
        # The input goes to a side file too, so a crash leaves the exact bytes behind.
        with open(os.path.join(self.workdir, "last_input.bin"), "wb") as f:
            f.write(data)
        sys.stderr.write(f"open {label}\n")
        sys.stderr.flush()
        return path


def _job_truncate(job: dict, write: _Writer) -> dict:
    name = job["fixture"]
    fmt, cls_name = FIXTURES[name][0], FIXTURES[name][1]
    data = (REG / name).read_bytes()
    out = []
    for k in range(1 + job["phase"], len(data), job["stride"]):
        prefix = data[:k]
        path = write(f"{name}[:{k}] format={fmt}", prefix)
        forced = _outcome(path, fmt)
        auto = _outcome(path, "auto")
        out.append({"k": k, "forced": forced, "auto": auto, "pb": _pb(prefix, fmt, cls_name)})
    return {"n": len(data), "results": out}


TEXT_SYNTAX = b'{}<>[]:"\'\\#,;-. \n\t0x9eE_\xff\x00\x80'


def _mutations(rng: random.Random, data: bytes, encoding: str) -> list[tuple[int, int]]:
    """A list of (position, new byte value) for one trial."""
    mode = rng.choice(["bit", "bytes", "special"])
    if mode == "bit":
        pos = rng.randrange(len(data))
        return [(pos, data[pos] ^ (1 << rng.randrange(8)))]
    if mode == "bytes":
        return [(rng.randrange(len(data)), rng.randrange(256)) for _ in range(rng.randint(1, 4))]
    picks = TEXT_SYNTAX if encoding == "text" else bytes([0x00, 0x7F, 0x80, 0xFF, 0x0F, 0x0E,
                                                          0x0B, 0x0C, 0x07, 0x3F, 0xF8, 0x02])
    return [(rng.randrange(len(data)), rng.choice(picks)) for _ in range(rng.randint(1, 2))]


def _job_flip(job: dict, write: _Writer) -> dict:
    name = job["fixture"]
    fmt, cls_name = FIXTURES[name][0], FIXTURES[name][1]
    data = (REG / name).read_bytes()
    rng = random.Random(job["seed"])
    out = []
    for trial in range(job["trials"]):
        muts = _mutations(rng, data, fmt)
        buf = bytearray(data)
        for pos, val in muts:
            buf[pos] = val
        mutated = bytes(buf)
        if mutated == data:
            continue
        path = write(f"{name} trial {trial} mutations {muts}", mutated)
        out.append({
            "trial": trial,
            "muts": muts,
            "forced": _outcome(path, fmt),
            "auto": _outcome(path, "auto"),
            "pb": _pb(mutated, fmt, cls_name),
        })
    return {"results": out}


def _vm_size() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmSize")


def _job_cases(job: dict, write: _Writer) -> dict:
    """Opens each case under an address-space limit of (current size + 512 MB), so an input that
    merely claims a huge size cannot make tracecore reserve or allocate it (that would surface as
    MemoryError, an "other" outcome)."""
    import resource

    import tracecore  # noqa: F401 - loaded before the limit is measured

    out = {}
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = _vm_size() + (512 << 20)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        try:
            bytearray(1 << 30)
            out["__limit_effective__"] = False
        except MemoryError:
            out["__limit_effective__"] = True
        for case in job["cases"]:
            data = bytes.fromhex(case["hex"])
            path = write(case["name"], data)
            res = _outcome(path, case["format"])
            if case.get("pb"):
                res["pb"] = _pb(data, case["pb"][0], case["pb"][1])
            out[case["name"]] = res
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    return out


def _child_main(job_path: str) -> int:
    job = json.loads(Path(job_path).read_text())
    write = _Writer(job["workdir"])
    fn = {"truncate": _job_truncate, "flip": _job_flip, "cases": _job_cases}[job["kind"]]
    result = fn(job, write)
    Path(job["result"]).write_text(json.dumps(result))
    return 0


# --------------------------------------------------------------------------------------------
# Parent side
# --------------------------------------------------------------------------------------------
def run_children(
    jobs: list[dict], workdir: Path, script: Path | None = None, env: dict | None = None
) -> list[dict]:
    """Runs the jobs in concurrent child processes (``python SCRIPT JOB.json``, this file by
    default, with environment `env`); fails the test if any crashes or hangs."""
    procs = []
    for i, job in enumerate(jobs):
        wd = workdir / f"child{i}"
        wd.mkdir(parents=True, exist_ok=True)
        job = dict(job, workdir=str(wd), result=str(wd / "result.json"))
        (wd / "job.json").write_text(json.dumps(job))
        stderr = open(wd / "stderr.txt", "w")  # noqa: SIM115 - closed below
        proc = subprocess.Popen(
            [sys.executable, str(script or Path(__file__).resolve()), str(wd / "job.json")],
            stdout=subprocess.DEVNULL, stderr=stderr, cwd=str(wd), env=env,
        )
        procs.append((proc, wd, stderr))
    problems = []
    for proc, wd, stderr in procs:
        try:
            proc.wait(timeout=CHILD_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            problems.append(f"child {wd.name} timed out after {CHILD_TIMEOUT}s (a hang?)")
        finally:
            stderr.close()
        if proc.returncode != 0:
            tail = "\n".join((wd / "stderr.txt").read_text(errors="replace").splitlines()[-25:])
            problems.append(
                f"child {wd.name} ended with return code {proc.returncode} (negative = killed by "
                f"a signal: a crash); its last input is saved at {wd / 'last_input.bin'}; "
                f"stderr tail:\n{tail}"
            )
    if problems:
        pytest.fail("\n\n".join(problems))
    return [json.loads((wd / "result.json").read_text()) for _, wd, _ in procs]


def run_child(job: dict, workdir: Path) -> dict:
    return run_children([job], workdir)[0]


def _line_col_ok(data: bytes, line, column) -> bool:
    if not (isinstance(line, int) and isinstance(column, int)) or line < 1 or column < 1:
        return False
    lines = data.split(b"\n")
    if line > len(lines):
        return False
    return column <= len(lines[line - 1]) + 1


def check_error(res: dict, data: bytes, encoding: str) -> list[str]:
    """Problems with one TraceFormatError outcome (empty list when it is well formed)."""
    problems = []
    msg = res["msg"]
    if not res["valueerror"]:
        problems.append("TraceFormatError is not a ValueError")
    if encoding == "text":
        line, col = res["line"], res["column"]
        if not _line_col_ok(data, line, col):
            problems.append(f"line/column {line}:{col} not inside the input")
        elif f"line {line}, column {col}" not in msg:
            problems.append(f"message lacks 'line {line}, column {col}'")
        if not TEXT_ERROR_WORDS.search(msg):
            problems.append("message does not say what was expected")
    else:
        off = res["offset"]
        if not isinstance(off, int) or not 0 <= off <= len(data):
            problems.append(f"offset {off!r} not inside the input")
        elif f"byte offset {off}" not in msg:
            problems.append(f"message lacks 'byte offset {off}'")
        if not BINARY_ERROR_WORDS.search(msg):
            problems.append("message does not say what was expected")
    return [f"{p}: {msg!r}" for p in problems]


def _same_counts(res: dict, pb: dict) -> bool:
    return (
        res["events"] == pb["events"]
        and res["rows"]["devices"] == pb["devices"]
        and res["rows"]["tensors"] == pb["tensors"]
        and res["rows"]["alloc_records"] == pb["alloc_records"]
    )


def _fmt_failures(failures: list[str], limit: int = 15) -> str:
    return f"{len(failures)} problems, first {min(limit, len(failures))}:\n" + "\n".join(
        failures[:limit]
    )


# --------------------------------------------------------------------------------------------
# Fixtures are what make_fixtures.py makes
# --------------------------------------------------------------------------------------------
def test_fixtures_parse_fully_and_match_protobuf(tmp_path):
    cases = []
    for name, (fmt, cls_name, *_counts) in FIXTURES.items():
        data = (REG / name).read_bytes()
        assert 500 < len(data) < 50_000, name
        for f in (fmt, "auto"):
            cases.append({"name": f"{name}/{f}", "hex": data.hex(), "format": f,
                          "pb": [fmt, cls_name]})
    results = run_child({"kind": "cases", "cases": cases}, tmp_path / "w")
    for name, (fmt, cls_name, events, devices, tensors, records) in FIXTURES.items():
        for f in (fmt, "auto"):
            res = results[f"{name}/{f}"]
            assert res["r"] == "ok", res
            assert res["kind"] == cls_name and res["format"] == fmt
            assert res["events"] == events
            assert res["rows"]["devices"] == devices
            assert res["rows"]["tensors"] == tensors
            assert res["rows"]["alloc_records"] == records
            assert res["unknown_fields"] == 0
            assert _same_counts(res, res["pb"]), (res, res["pb"])
    ss = results["small_stepstats.pb/binary"]
    assert ss["node_name"][0] == "edge_2141_Train/Model/Variable/read:MEMCPYDtoH"
    assert ss["start_ns"][0] == 1532145303704429000
    assert results["small_stepstats.pbtxt/text"]["rows"] == ss["rows"]


def test_committed_fixtures_are_up_to_date():
    import make_fixtures

    built = make_fixtures.build()
    for name, data in built.items():
        assert (REG / name).read_bytes() == data, f"{name}: run python tests/make_fixtures.py"


# --------------------------------------------------------------------------------------------
# Truncation at every offset
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fixture", list(FIXTURES))
def test_truncation_at_every_offset(fixture, tmp_path):
    fmt, cls_name, full_events = FIXTURES[fixture][0], FIXTURES[fixture][1], FIXTURES[fixture][2]
    data = (REG / fixture).read_bytes()
    # Two interleaved halves of the offsets (equal cost) in two concurrent children.
    outs = run_children(
        [{"kind": "truncate", "fixture": fixture, "phase": p, "stride": 2} for p in (0, 1)],
        tmp_path,
    )
    results = sorted(outs[0]["results"] + outs[1]["results"], key=lambda r: r["k"])
    assert [r["k"] for r in results] == list(range(1, len(data)))

    failures: list[str] = []
    n_ok = 0
    for rec in results:
        k, forced, auto, pb = rec["k"], rec["forced"], rec["auto"], rec["pb"]
        prefix = data[:k]
        where = f"{fixture}[:{k}]"
        if forced["r"] == "other":
            failures.append(
                f"{where}: {forced['type']} instead of TraceFormatError: {forced['msg']}"
            )
            continue
        if auto["r"] == "other":
            failures.append(f"{where} auto: {auto['type']}: {auto['msg']}")
            continue
        expect_ok = pb["ok"] and pb["content"]
        if forced["r"] == "err":
            failures += [f"{where}: {p}" for p in check_error(forced, prefix, fmt)]
            if expect_ok:
                failures.append(f"{where}: tracecore rejects a prefix protobuf accepts "
                                f"({pb['events']} events): {forced['msg']}")
        else:
            n_ok += 1
            if not expect_ok:
                failures.append(f"{where}: tracecore accepts ({forced['events']} events) a "
                                f"prefix protobuf rejects: {pb.get('msg')}")
            elif not _same_counts(forced, pb):
                failures.append(f"{where}: counts {forced['rows']} != protobuf {pb}")
            if forced["kind"] != cls_name or forced["events"] > full_events:
                failures.append(f"{where}: kind {forced['kind']}, {forced['events']} events")
        # Format detection must not change the outcome of a prefix.
        if auto["r"] != forced["r"] or (auto["r"] == "ok" and auto["events"] != forced["events"]):
            failures.append(f"{where}: format=auto gives {auto} but format={fmt} gives {forced}")
    assert not failures, _fmt_failures(failures)
    # Sanity: the valid prefixes are exactly the cuts at top-level field boundaries.
    assert 1 <= n_ok < 20


# --------------------------------------------------------------------------------------------
# Flipped bytes
# --------------------------------------------------------------------------------------------
FLIP_TRIALS = {"text": 700, "binary": 1500}


# Sub-messages tracecore does not export and skips unread, like unknown fields: only their length
# is checked, not their contents (protobuf validates them). message -> {field: sub-message or None}
_UNREAD = {
    "StepStats": {1: "DeviceStepStats"},
    "DeviceStepStats": {2: "NodeExecStats"},
    "NodeExecStats": {11: None},  # referenced_tensor
    "RunMetadata": {1: "StepStats", 2: "CostGraphDef", 5: None},  # session_metadata
    "CostGraphDef": {2: None},  # cost (AggregatedCost)
}


def _read_varint(data: bytes, i: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        b = data[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, i


def unread_payload_ranges(data: bytes, message: str, start: int = 0, end: int | None = None):
    """Byte ranges of a valid message holding the payloads of the fields in _UNREAD."""
    end = len(data) if end is None else end
    ranges = []
    i = start
    groups = 0
    while i < end:
        k, i = _read_varint(data, i)
        field, wire_type = k >> 3, k & 7
        if wire_type == 0:
            _, i = _read_varint(data, i)
        elif wire_type == 1:
            i += 8
        elif wire_type == 5:
            i += 4
        elif wire_type == 3:
            groups += 1
        elif wire_type == 4:
            groups -= 1
        elif wire_type == 2:
            n, i = _read_varint(data, i)
            sub = _UNREAD.get(message, {}) if groups == 0 else {}
            if field in sub:
                if sub[field] is None:
                    ranges.append(range(i, i + n))
                else:
                    ranges += unread_payload_ranges(data, sub[field], i, i + n)
            i += n
        else:
            raise AssertionError(f"wire type {wire_type} in a valid message")
    assert i == end and groups == 0
    return ranges


def rejection_is_inside_unread_payloads(data: bytes, muts, cls_name: str) -> bool:
    """True when protobuf's rejection of ``data`` with ``muts`` applied is caused only by bytes
    inside unread sub-message payloads: the input with just the other mutations applied is valid
    for protobuf, and in it every remaining mutated byte lies inside such a payload (so lengths
    and framing are untouched and only the contents of a skipped field differ)."""
    import tfproto

    original = unread_payload_ranges(data, cls_name)
    muts = [(p, v) for p, v in muts]
    outside = [(p, v) for p, v in muts if not any(p in r for r in original)]
    if len(outside) == len(muts):
        return False
    buf = bytearray(data)
    for pos, val in outside:
        buf[pos] = val
    partial = bytes(buf)
    msg = getattr(tfproto, cls_name)()
    try:
        msg.ParseFromString(partial)
        ranges = unread_payload_ranges(partial, cls_name)
    except Exception:  # noqa: BLE001 - the other mutations already break it
        return False
    inside = [p for p, v in muts if (p, v) not in outside]
    return all(any(p in r for r in ranges) for p in inside)


def test_unread_payload_ranges_of_the_fixtures():
    ss = (REG / "small_stepstats.pb").read_bytes()
    (r,) = unread_payload_ranges(ss, "StepStats")  # the one referenced_tensor
    assert ss[r.start:r.stop] == b"\x08\x08\x1a\x03cpu"
    rm = (REG / "small_runmetadata.pb").read_bytes()
    cost, session = unread_payload_ranges(rm, "RunMetadata")
    assert rm[cost.start:cost.stop].endswith(b"flops") and rm[session.start:session.stop] == (
        b"\x0a\x04sess\x10\x02")


@pytest.mark.parametrize("fixture", list(FIXTURES))
def test_flipped_bytes(fixture, tmp_path):
    fmt, cls_name = FIXTURES[fixture][0], FIXTURES[fixture][1]
    data = (REG / fixture).read_bytes()
    seed = 1000 + list(FIXTURES).index(fixture)
    out = run_child(
        {"kind": "flip", "fixture": fixture, "seed": seed, "trials": FLIP_TRIALS[fmt]},
        tmp_path / "w",
    )
    results = out["results"]
    assert len(results) > FLIP_TRIALS[fmt] * 0.9

    failures: list[str] = []
    n_err = n_ok = 0
    for rec in results:
        buf = bytearray(data)
        for pos, val in rec["muts"]:
            buf[pos] = val
        mutated = bytes(buf)
        where = f"{fixture} seed {seed} trial {rec['trial']} mutations {rec['muts']}"
        for mode in ("forced", "auto"):
            res = rec[mode]
            if res["r"] == "other":
                failures.append(f"{where} [{mode}]: {res['type']}: {res['msg']}")
        forced, pb = rec["forced"], rec["pb"]
        if forced["r"] == "err":
            n_err += 1
            failures += [f"{where}: {p}" for p in check_error(forced, mutated, fmt)]
        elif forced["r"] == "ok":
            n_ok += 1
            if (
                fmt == "binary"
                and not pb["ok"]
                and not rejection_is_inside_unread_payloads(data, rec["muts"], cls_name)
            ):
                failures.append(f"{where}: tracecore accepts what protobuf rejects ({pb['msg']})")
            if pb["ok"] and forced["kind"] == cls_name and not _same_counts(forced, pb):
                failures.append(f"{where}: counts {forced['rows']} != protobuf {pb}")
    assert not failures, _fmt_failures(failures)
    # Both branches must be exercised for the test to mean anything.
    assert n_err > 0.1 * len(results) and n_ok + n_err == len(results)


# --------------------------------------------------------------------------------------------
# Hand-made hostile inputs, all opened in one child process
# --------------------------------------------------------------------------------------------
N = node()
DEEP = 100_000

# name: (bytes, format, expectation) with expectation ("err", regex) or ("ok", events)
CASES: dict[str, tuple[bytes, str, tuple]] = {
    # -- absurd lengths ------------------------------------------------------------------
    "len_2_31": (
        b"\x0a" + varint(2**31) + ld(1, b"/gpu"),
        "binary",
        ("err", r"length 2147483648 runs past the end"),
    ),
    "len_2_31_auto": (
        b"\x0a" + varint(2**31) + ld(1, b"/gpu"),
        "auto",
        ("err", r"length 2147483648 runs past the end"),
    ),
    "len_2_63": (
        b"\x0a" + varint(2**63) + ld(1, b"/gpu"),
        "binary",
        ("err", r"length 9223372036854775808 runs past the end"),
    ),
    "len_2_64_minus_1": (
        b"\x0a" + varint(2**64 - 1) + ld(1, b"/gpu"),
        "binary",
        ("err", r"runs past the end"),
    ),
    "string_len_minus_1": (
        stepstats(key(1, 2) + varint(-1) + b"abc"),
        "binary",
        ("err", r"runs past the end"),
    ),
    # 20 bytes claiming a 2 GB node_stats: must fail without trying to allocate it.
    "node_stats_2GB": (
        ld(1, ld(1, b"/device:GPU:0") + key(2, 2) + varint(2_000_000_000) + b"x"),
        "binary",
        ("err", r"length 2000000000 runs past the end"),
    ),
    "output_2GB_inside_node": (
        stepstats(node(extra=key(7, 2) + varint(2**31 - 1))),
        "binary",
        ("err", r"runs past the end"),
    ),
    "thread_names_entry_2GB": (
        ld(1, ld(1, b"/gpu") + key(3, 2) + varint(2**31)),
        "binary",
        ("err", r"runs past the end"),
    ),
    # -- varints -------------------------------------------------------------------------
    "value_varint_11_bytes": (
        stepstats(ld(1, b"n") + key(2, 0) + b"\x80" * 10 + b"\x00"),
        "binary",
        ("err", r"varint longer than 10 bytes"),
    ),
    "key_varint_11_bytes": (
        stepstats(N + b"\x80" * 10 + b"\x00"),
        "binary",
        ("err", r"varint longer than 10 bytes"),
    ),
    "length_varint_11_bytes": (
        b"\x0a" + b"\xff" * 10 + b"\x01" + b"\x00" * 8,
        "binary",
        ("err", r"varint longer than 10 bytes"),
    ),
    "varint_truncated": (
        stepstats(N) + key(20, 0) + b"\xff\xff",
        "binary",
        ("err", r"truncated varint"),
    ),
    # a non-minimal but legal 10-byte varint (5) is accepted, as by protobuf
    "value_varint_10_bytes_nonminimal": (
        stepstats(ld(1, b"n") + key(2, 0) + b"\x85" + b"\x80" * 8 + b"\x00"),
        "binary",
        ("ok", 1),
    ),
    # -- field numbers and wire types ----------------------------------------------------
    "field_number_0_top": (b"\x00" + stepstats(N), "binary", ("err", r"invalid field number 0")),
    "field_number_0_in_node": (
        stepstats(N + key(0, 0) + b"\x01"),
        "binary",
        ("err", r"invalid field number 0"),
    ),
    "field_number_0_wire_2": (
        stepstats(N + b"\x02\x00"),
        "binary",
        ("err", r"invalid field number 0"),
    ),
    "field_number_2_29": (
        stepstats(N + key(1 << 29, 0) + b"\x01"),
        "binary",
        ("err", r"invalid field number 536870912"),
    ),
    "wire_type_6": (stepstats(N + key(20, 6)), "binary", ("err", r"invalid wire type 6")),
    "wire_type_7": (stepstats(N + key(20, 7)), "binary", ("err", r"invalid wire type 7")),
    "wire_type_6_top": (
        stepstats(N) + key(3, 6) + b"\x00",
        "binary",
        ("err", r"invalid wire type 6"),
    ),
    "wire_type_7_in_device": (
        ld(1, ld(1, b"/gpu") + key(9, 7)),
        "binary",
        ("err", r"invalid wire type 7"),
    ),
    "fixed64_truncated": (
        stepstats(N + key(20, 1) + b"abc"),
        "binary",
        ("err", r"truncated fixed64"),
    ),
    "fixed32_truncated": (
        stepstats(N + key(20, 5) + b"ab"),
        "binary",
        ("err", r"truncated fixed32"),
    ),
    # -- groups --------------------------------------------------------------------------
    "group_unterminated_in_node": (
        stepstats(N + key(20, 3) + vf(1, 1)),
        "binary",
        ("err", r"group \(field 20\) is not closed"),
    ),
    "group_unterminated_top": (
        stepstats(N) + key(20, 3),
        "binary",
        ("err", r"group \(field 20\) is not closed"),
    ),
    "group_end_mismatch": (
        stepstats(N + key(20, 3) + key(21, 4)),
        "binary",
        ("err", r"end of group 21 does not match"),
    ),
    "group_end_stray": (
        stepstats(N + key(20, 4)),
        "binary",
        ("err", r"end-group marker without a matching start-group"),
    ),
    "groups_nested_1e5": (
        stepstats(N + key(20, 3) * DEEP + key(20, 4) * DEEP),
        "binary",
        ("err", r"nested deeper"),
    ),
    "groups_nested_1e5_unclosed": (
        stepstats(N + key(20, 3) * DEEP),
        "binary",
        ("err", r"nested deeper|not closed"),
    ),
    "groups_nested_1e5_top": (
        key(20, 3) * DEEP + key(20, 4) * DEEP + stepstats(N),
        "binary",
        ("err", r"nested deeper"),
    ),
    # a small well-formed unknown group is skipped (and counted)
    "group_ok_skipped": (
        stepstats(N + key(20, 3) + vf(1, 1) + ld(2, b"zz") + key(20, 4)),
        "binary",
        ("ok", 1),
    ),
    # -- invalid UTF-8 in names (binary) -------------------------------------------------
    "bin_node_name_ff": (stepstats(node(name=b"ab\xffcd")), "binary", ("err", r"UTF-8")),
    "bin_node_name_truncated_seq": (stepstats(node(name=b"ab\xc3")), "binary", ("err", r"UTF-8")),
    "bin_node_name_overlong": (stepstats(node(name=b"\xc0\xaf")), "binary", ("err", r"UTF-8")),
    "bin_node_name_surrogate": (stepstats(node(name=b"\xed\xa0\x80")), "binary", ("err", r"UTF-8")),
    "bin_node_name_above_10ffff": (
        stepstats(node(name=b"\xf4\x90\x80\x80")),
        "binary",
        ("err", r"UTF-8"),
    ),
    "bin_device_ff": (stepstats(N, device=b"/device:\xff"), "binary", ("err", r"UTF-8")),
    "bin_timeline_label_ff": (
        stepstats(node(extra=ld(8, b"x = Op(\xfe)"))),
        "binary",
        ("err", r"UTF-8"),
    ),
    "bin_allocator_name_ff": (
        stepstats(node(extra=ld(6, ld(1, b"\xff")))),
        "binary",
        ("err", r"UTF-8"),
    ),
    "bin_thread_name_ff": (
        ld(1, ld(1, b"/gpu") + ld(3, vf(1, 1) + ld(2, b"\xff"))),
        "binary",
        ("err", r"UTF-8"),
    ),
    "bin_runmetadata_node_def_input_ff": (
        ld(1, stepstats(N)) + ld(3, ld(1, ld(1, b"a") + ld(3, b"\xff"))),
        "binary",
        ("err", r"UTF-8"),
    ),
    # valid multi-byte UTF-8 is fine (U+FFFF, U+10FFFF, e-acute)
    "bin_node_name_valid_utf8": (
        stepstats(node(name="é\uffff\U0010ffff".encode())),
        "binary",
        ("ok", 1),
    ),
    # -- empty / content-free files -------------------------------------------------------
    "empty_auto": (b"", "auto", ("err", r"empty input")),
    "empty_text": (b"", "text", ("err", r"empty input")),
    "empty_binary": (b"", "binary", ("err", r"empty input")),
    "whitespace_only": (b"  \n\t\r\n   \n", "auto", ("err", r"empty input")),
    "comment_only": (b"# a comment\n  # another\n", "auto", ("err", r"empty input")),
    "comment_only_no_newline": (b"# dev_stats {", "text", ("err", r"empty input")),
    "text_only_unknown_fields": (b'foo: 1\nbar { baz: "x" }\n', "auto", ("err", r"no StepStats")),
    "binary_only_unknown_fields": (
        vf(7, 1) + ld(9, b"abc"),
        "binary",
        ("err", r"no StepStats|empty|expected"),
    ),
    # -- text: bad scalars ---------------------------------------------------------------
    "text_uint32_range": (
        b"dev_stats { node_stats { thread_id: 4294967296 } }",
        "text",
        ("err", r"out of uint32 range for field 'thread_id'"),
    ),
    "text_int32_range": (
        b"dev_stats { node_stats { output { slot: 2147483648 } } }",
        "text",
        ("err", r"out of int32 range for field 'slot'"),
    ),
    "text_int64_range": (
        b"dev_stats { node_stats { all_start_micros: 9223372036854775808 } }",
        "text",
        ("err", r"out of int64 range for field 'all_start_micros'"),
    ),
    "text_micros_overflow_ns": (
        b"dev_stats { node_stats { all_start_micros: 9223372036854776 } }",
        "text",
        ("err", r"out of range"),
    ),
    "text_missing_colon_scalar": (b'dev_stats { device "x" }', "text", ("err", r"expected ':'")),
    # -- text: deep / wrong nesting -------------------------------------------------------
    "text_unknown_nested_1e5": (
        b'dev_stats { node_stats { node_name: "a" } }\n' + b"a { " * DEEP + b"}" * DEEP,
        "text",
        ("err", r"nesting"),
    ),
    "text_unknown_nested_1e5_inside_node": (
        b'dev_stats { node_stats { node_name: "a" ' + b"a { " * DEEP + b"}" * DEEP + b"} }",
        "text",
        ("err", r"nesting"),
    ),
    "text_unknown_nested_1e5_angle": (
        b'dev_stats { node_stats { node_name: "a" } }\n' + b"a < " * DEEP + b">" * DEEP,
        "text",
        ("err", r"nesting"),
    ),
    "text_unknown_nested_1e5_unclosed": (
        b'dev_stats { node_stats { node_name: "a" } }\n' + b"a: { " * DEEP,
        "text",
        ("err", r"nesting"),
    ),
    "text_known_nested_1e5": (
        b"dev_stats { " + b"node_stats { " * DEEP + b"}" * (DEEP + 1),
        "text",
        ("err", r"nesting"),
    ),
    # dev_stats inside dev_stats is an unknown field there: skipped (and counted), not an error
    # 0 events and an unknown field: another kind of message, never an empty success (issue 21)
    "text_known_field_misplaced": (
        b'dev_stats { dev_stats { device: "x" } }',
        "text",
        ("err", r"0 events and 1 unknown fields \(expected events"),
    ),
    "text_known_field_misplaced_beside_an_event": (
        b'dev_stats { node_stats { node_name: "n" } dev_stats { device: "x" } }',
        "text",
        ("ok", 1),
    ),
    "text_message_given_scalar": (
        b"dev_stats { node_stats: 5 }",
        "text",
        ("err", r"expected '\{' or '<' to open message field 'node_stats'"),
    ),
    "text_scalar_given_message": (
        b"dev_stats { node_stats { node_name { } } }",
        "text",
        ("err", r"expected ':' after field 'node_name', got '\{'"),
    ),
    "text_close_without_open": (
        b"dev_stats { }\n}\n",
        "text",
        ("err", r"line 2, column 1: expected a field name, got '\}'"),
    ),
    "text_mismatched_brackets": (
        b'dev_stats { node_stats < node_name: "a" } }',
        "text",
        ("err", r"expected"),
    ),
    # -- text: invalid UTF-8 in names ------------------------------------------------------
    "text_node_name_hex_escape_ff": (
        b'dev_stats { node_stats { node_name: "a\\xffb" } }',
        "text",
        ("err", r"not valid UTF-8 in field 'node_name'"),
    ),
    "text_node_name_octal_377": (
        b'dev_stats { node_stats { node_name: "\\377" } }',
        "text",
        ("err", r"not valid UTF-8 in field 'node_name'"),
    ),
    "text_node_name_raw_ff": (
        b'dev_stats { node_stats { node_name: "a\xffb" } }',
        "auto",
        ("err", r"UTF-8"),
    ),
    "text_device_escape_overlong": (
        b'dev_stats { device: "\\xc0\\xaf" }',
        "text",
        ("err", r"not valid UTF-8 in field 'device'"),
    ),
    "text_timeline_label_raw_c3": (
        b'dev_stats { node_stats { timeline_label: "x\xc3" } }',
        "text",
        ("err", r"UTF-8"),
    ),
    "text_split_literal_bad": (
        b'dev_stats { node_stats { node_name: "a\\xc3" "(" } }',
        "text",
        ("err", r"UTF-8"),
    ),
    "text_raw_ff_outside_string": (
        b"dev_stats { \xffnode_stats { } }",
        "text",
        ("err", r"expected a field name"),
    ),
    # valid escapes: UTF-8 for e-acute written in octal, adjacent literals joined
    "text_node_name_valid_escapes": (
        b'dev_stats { node_stats { node_name: "\\303\\251" "\\xc3" "\\xa9" } }',
        "text",
        ("ok", 1),
    ),
}


@pytest.fixture(scope="module")
def case_results(tmp_path_factory):
    cases = []
    for name, (data, fmt, _exp) in CASES.items():
        pb = None
        if fmt == "binary" and data:
            pb = ["binary", "RunMetadata" if name.startswith("bin_runmetadata") else "StepStats"]
        cases.append({"name": name, "hex": data.hex(), "format": fmt, "pb": pb})
    return run_child({"kind": "cases", "cases": cases}, tmp_path_factory.mktemp("cases"))


# Binary inputs that protobuf (upb) accepts but tracecore rejects on purpose.
PB_ACCEPTS = {"empty_binary", "binary_only_unknown_fields"}


@pytest.mark.parametrize("name", list(CASES))
def test_hostile_input(name, case_results):
    data, fmt, (expect, arg) = CASES[name]
    res = case_results[name]
    assert res["r"] != "other", f"{res['type']} instead of TraceFormatError: {res['msg']}"
    if expect == "err":
        assert res["r"] == "err", f"accepted: {res}"
        assert re.search(arg, res["msg"]), res["msg"]
        encoding = "text" if res["line"] is not None else "binary"
        if fmt != "auto":
            assert encoding == fmt, res
        assert not check_error(res, data, encoding)
        if res.get("pb") and name not in PB_ACCEPTS:
            # grounds the hand-made input: protobuf rejects it too
            assert not res["pb"]["ok"], f"protobuf accepts {name}: {res['pb']}"
    else:
        assert res["r"] == "ok", res["msg"]
        assert res["events"] == arg
        if res.get("pb"):
            assert res["pb"]["ok"] and res["pb"]["events"] == arg


def test_hostile_input_values(case_results):
    """The accepted controls carry the right values (so the errors above are not blanket)."""
    assert case_results["__limit_effective__"] is True  # the memory cap was really in force
    r = case_results["text_known_field_misplaced_beside_an_event"]
    assert r["unknown_fields"] == 1 and r["rows"]["devices"] == 1 and r["node_name"] == ["n"]
    r = case_results["value_varint_10_bytes_nonminimal"]
    assert r["start_ns"] == [5000] and r["node_name"] == ["n"]
    r = case_results["group_ok_skipped"]
    assert r["unknown_fields"] == 1 and r["start_ns"] == [5000]
    r = case_results["bin_node_name_valid_utf8"]
    assert r["node_name"] == ["é\uffff\U0010ffff"] and r["device"] == ["/device:CPU:0"]
    r = case_results["text_node_name_valid_escapes"]
    assert r["node_name"] == ["éé"]


def test_bad_integer_reports_exact_line_and_column(tmp_path):
    import tracecore

    text = (
        b"dev_stats {\n"
        b'  device: "/job:localhost/replica:0/task:0/device:CPU:0"\n'
        b"  node_stats {\n"
        b'    node_name: "a"\n'
        b"    all_start_micros: 12x4\n"
        b"  }\n"
        b"}\n"
    )
    path = tmp_path / "bad.pbtxt"
    path.write_bytes(text)
    with pytest.raises(tracecore.TraceFormatError) as info:
        tracecore.open(path)
    e = info.value
    assert isinstance(e, ValueError)
    assert (e.line, e.column) == (5, 23)  # the '1' of "12x4"
    assert e.offset is None
    msg = str(e)
    assert "line 5, column 23" in msg
    assert "'all_start_micros'" in msg  # names the field
    assert "expected an integer" in msg  # says what was expected
    assert "12x4" in msg  # and what it got
    assert str(path) in msg


def test_binary_error_reports_offset(tmp_path):
    import tracecore

    data = stepstats(N) + key(20, 7)  # invalid wire type right after a valid dev_stats
    path = tmp_path / "bad.pb"
    path.write_bytes(data)
    with pytest.raises(tracecore.TraceFormatError) as info:
        tracecore.open(path)
    e = info.value
    assert e.line is None and e.column is None
    assert isinstance(e.offset, int) and len(stepstats(N)) <= e.offset <= len(data)
    assert f"byte offset {e.offset}" in str(e)
    assert "invalid wire type 7 (field 20)" in str(e)


def test_truncated_gzip_is_a_format_error(tmp_path):
    import gzip

    import tracecore

    full = gzip.compress((REG / "small_stepstats.pbtxt").read_bytes())
    for cut in (3, 10, len(full) // 2, len(full) - 4):
        path = tmp_path / f"cut{cut}.pbtxt.gz"
        path.write_bytes(full[:cut])
        with pytest.raises(tracecore.TraceFormatError, match="gzip"):
            tracecore.open(path)


def test_a_replaced_timeline_label_is_still_validated():
    # Found by review (issue "nothing crashes ..." item 7): a label that a second label of the
    # same node_stats replaces was never interned, so its invalid UTF-8 passed unnoticed where
    # protobuf rejects the message. The error points at the first label.
    import tracecore

    with pytest.raises(tracecore.TraceFormatError) as info:
        tracecore.open(REG / "label_invalid_utf8_then_second_label.pbtxt")
    assert (info.value.line, info.value.column) == (5, 21)
    assert "string is not valid UTF-8 in field 'timeline_label'" in str(info.value)
    data = (REG / "label_invalid_utf8_then_second_label.pb").read_bytes()
    with pytest.raises(tracecore.TraceFormatError) as info:
        tracecore.open(REG / "label_invalid_utf8_then_second_label.pb")
    assert info.value.offset == data.index(b"bad \xff") - 1  # the first label's length
    assert "string is not valid UTF-8" in str(info.value)


@pytest.mark.parametrize(
    ("name", "line", "column", "message"),
    [
        ("unknown_field_malformed_message.pbtxt", 5, 11, "expected a field name, got '$$$'"),
        ("unknown_field_list_without_commas.pbtxt", 5, 13,
         "expected ',' or ']' in the list of field 'foo', got '2'"),
    ],
)
def test_unknown_fields_follow_the_text_grammar(name, line, column, message):
    # Found by review (item 7 of the robustness issue): the value of a field tracecore does not
    # know was skipped by bracket balance only, so "foo { $$$ %%% }" and "foo: [1 2 3]" were
    # accepted where protobuf's text parser rejects them.
    import tracecore

    with pytest.raises(tracecore.TraceFormatError) as info:
        tracecore.open(REG / name)
    assert (info.value.line, info.value.column) == (line, column)
    assert message in str(info.value)


def test_well_formed_unknown_fields_are_skipped_and_counted(tmp_path):
    import tracecore

    unknown = (
        b'    foo: [1, -2, 3.5e3, inf, ENUM_VALUE, "s" \'t\']\n'
        b"    bar { x: \"}\" y [ {a: 1}, <a: 2> ] z: -1.5e3; w < q: X >, [ext.type/Name] { } }\n"
        b"    baz: { }\n"
        b"    qux [ ]\n"
        b"    # a comment { [\n"
    )
    text = (REG / "unknown_field_list_without_commas.pbtxt").read_bytes().replace(
        b"    foo: [1 2 3]\n", unknown
    )
    path = tmp_path / "ok.pbtxt"
    path.write_bytes(text)
    t = tracecore.open(path)
    assert t.events["node_name"].to_pylist() == ["a"]
    assert t.stats["unknown_fields"] == 4



def test_corrupt_gzip_errors_say_where():
    # The gzip data is decompressed by the core: an error in it names the byte offset in the
    # compressed file (Python's gzip module gave none), an error in the decompressed trace its
    # line and column there.
    import gzip

    import tracecore

    with pytest.raises(tracecore.TraceFormatError) as info:
        tracecore.open(REG / "gzip_corrupt_block.pbtxt.gz")  # one byte of a deflate block flipped
    assert info.value.offset == 76
    assert "byte offset 76 of the gzip data: the literal/length code is incomplete" in str(
        info.value
    )
    data = gzip.compress(b"dev_stats {\n  device: 12x\n}\n", mtime=0)
    with pytest.raises(tracecore.TraceFormatError) as info:
        tracecore._core.open_bytes(data, "auto", 1)
    assert (info.value.line, info.value.column) == (2, 11)
    assert str(info.value).endswith(
        "expected a string for field 'device', got '12x' (in the decompressed gzip data)"
    )

if __name__ == "__main__":
    raise SystemExit(_child_main(sys.argv[1]))
