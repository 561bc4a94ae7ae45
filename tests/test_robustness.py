"""Robustness: no input, thread interleaving or file truncation may take the process down.

(a) Mutated seeds. TRACECORE_FUZZ_CASES (default 40; set 1000 for the acceptance run) inputs are
    derived from small seeds (the fixtures in tests/data/regressions/, synthetic StepStats /
    RunMetadata dumps from fuzz/make_corpus.py in both encodings, listing excerpts) by byte
    flips, truncations, splices, random bytes, deep nesting, huge declared lengths / numbers,
    repeated runs and gzip wrapping (TRACECORE_FUZZ_SEED picks another deterministic set).
    Each is opened (tracecore.open with a random format and thread count; listings through
    tracecore.read_listing) in a child process and every table is materialized and validated
    by pyarrow. Allowed outcomes: success or TraceFormatError. A crash, a hang (per-case
    timeout) or another exception type fails the test. Cases run in batches of up to 50 per
    child; when a batch child dies, its unfinished cases are re-run one per child to name the
    culprit, whose bytes are saved under the test's tmp dir (minimize them and add them to
    tests/data/regressions/).
(a2) The parallel parser (used only for multi-MB inputs): mutated 9-13 MB dumps, edited mostly
    near the chunk boundaries, give the same outcome and identical tables with threads=1 and 4.
(b) Concurrency: the same Trace used from 8 threads (tables, overlaps, occupancy, window,
    replay, op_stats; the lazy table cache and interval index are built under contention) gives
    results identical to a sequential run on a fresh Trace.
(c) A file truncated by another thread while tracecore maps and parses it: each open either
    succeeds or raises TraceFormatError, never crashes (SIGBUS) -- in a child process.
(d) Leaks: opening and dropping 100 traces with all their tables and queries grows RSS by less
    than 50 MB after warm-up -- in a child process.
(e) Every file in tests/data/regressions/ opens (auto/text/binary) with success or
    TraceFormatError, and when it opens, its queries either raise a ValueError or give values
    that did not wrap around int64 (busy/span/total >= 0, replay levels = exact running sums).
    REGRESSION_NOTES says what each fuzz finding saved there was.
(f) Parse time stays linear in the number of repeated entries (thread_names map).

Children are this file run as a script: ``python tests/test_robustness.py MODE ARGS``.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import gzip
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = HERE / "data"
REG = DATA / "regressions"

FUZZ_CASES = int(os.environ.get("TRACECORE_FUZZ_CASES", "40"))
FUZZ_SEED = int(os.environ.get("TRACECORE_FUZZ_SEED", "20240521"))  # vary to explore further
BATCH = 50
CASE_TIMEOUT = 20.0  # seconds for one input in isolation: longer is a hang
INT64_MAX = (1 << 63) - 1
INT64_MIN = -(1 << 63)


# =========================================================================================
# Seeds and mutations (parent side)
# =========================================================================================
@functools.cache
def _make_corpus_module():
    sys.path.insert(0, str(ROOT / "fuzz"))
    try:
        import make_corpus  # noqa: PLC0415

        return make_corpus
    finally:
        sys.path.pop(0)


def _seeds() -> list[tuple[str, bytes]]:
    """(kind, bytes) with kind "text", "binary" or "listing"."""
    seeds: list[tuple[str, bytes]] = []
    for name in ("small_stepstats.pbtxt", "small_runmetadata.pbtxt"):
        if (REG / name).exists():
            seeds.append(("text", (REG / name).read_bytes()))
    for name in ("small_stepstats.pb", "small_runmetadata.pb"):
        if (REG / name).exists():
            seeds.append(("binary", (REG / name).read_bytes()))
    mc = _make_corpus_module()
    rng = random.Random(7)
    for i in range(6):
        kind = "StepStats" if i % 2 == 0 else "RunMetadata"
        tree = (
            mc.synth_stepstats(rng, False)
            if kind == "StepStats"
            else mc.synth_runmetadata(rng, False)
        )
        seeds.append(("text", mc.render(tree, kind).encode()))
        seeds.append(("binary", mc.encode(tree, kind, rng)))
    head = (DATA / "seed000_stepstats.pbtxt").read_bytes()[:6000]
    cut = head.rfind(b"\n  node_stats {")
    seeds.append(("text", head[:cut] + b"\n}\n"))
    for name in ("seed002_shape_listing.txt", "seed004_name_listing.txt"):
        if (DATA / name).exists():
            text = (DATA / name).read_bytes()[:3000]
            seeds.append(("listing", text[: text.rfind(b"\n") + 1]))
    return seeds


def _varint(value: int) -> bytes:
    """Base-128 varint (two's complement for negatives): the corpus generator's encoder."""
    return _make_corpus_module().varint(value)


def _length_positions(data: bytes, start: int = 0, end: int | None = None, depth: int = 0,
                      out: list | None = None) -> list[tuple[int, int, int]]:
    """(offset of a length varint, its byte size, the length) of every length-delimited field
    of a wire-format message, recursing into payloads that parse as messages."""
    out = [] if out is None else out
    end = len(data) if end is None else end
    i = start
    found: list[tuple[int, int, int]] = []
    try:
        while i < end:
            k, i = _read_varint(data, i, end)
            wt, field = k & 7, k >> 3
            if field == 0:
                return out
            if wt == 0:
                _, i = _read_varint(data, i, end)
            elif wt == 1:
                i += 8
            elif wt == 5:
                i += 4
            elif wt == 2:
                at = i
                n, i = _read_varint(data, i, end)
                if i + n > end:
                    return out
                found.append((at, i - at, n))
                i += n
            else:
                return out
            if i > end:
                return out
    except IndexError:
        return out
    out.extend(found)
    if depth < 8:
        for at, size, n in found:
            _length_positions(data, at + size, at + size + n, depth + 1, out)
    return out


def _read_varint(data: bytes, i: int, end: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if i >= end or shift > 63:
            raise IndexError
        b = data[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return value, i


MUTATIONS = ["flip", "truncate", "splice", "random", "nesting", "huge_length", "huge_number",
             "repeat", "gzip", "multi"]


def _mutate(rng: random.Random, kind: str, data: bytes, seeds: list, how: str) -> bytes:
    b = bytearray(data)
    if how == "flip":
        for _ in range(rng.randint(1, 8)):
            if b:
                b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
        return bytes(b)
    if how == "truncate":
        return bytes(b[: rng.randrange(len(b) + 1)])
    if how == "splice":
        other = rng.choice(seeds)[1]
        return bytes(b[: rng.randrange(len(b) + 1)] + other[rng.randrange(len(other) + 1):])
    if how == "random":
        blob = rng.randbytes(rng.randint(1, 3000))
        if rng.random() < 0.5:
            at = rng.randrange(len(b) + 1)
            return bytes(b[:at] + blob[: rng.randint(1, 64)] + b[at + rng.randint(0, 64):])
        return rng.choice([b"", b"dev_stats {", b"step_stats {", b"\x0a"]) + blob
    if how == "nesting":
        depth = rng.choice([31, 32, 33, 99, 100, 101, 1000, 100_000])
        if kind == "binary":
            if rng.random() < 0.5:  # nested groups in an unknown field
                run = _varint((99 << 3) | 3) * depth + _varint((99 << 3) | 4) * depth
            else:  # nested length-delimited field 1 (StepStats/DeviceStepStats/string...)
                run = b""
                for _ in range(min(depth, 3000)):
                    run = b"\x0a" + _varint(len(run)) + run
            at = rng.choice([0, len(b), rng.randrange(len(b) + 1)])
            return bytes(b[:at] + run + b[at:])
        opener = rng.choice(
            [b"x { ", b"node_stats { ", b"dev_stats { ", b"shape { dim { ", b"x: [", b"x < "]
        )
        closer = {
            b"x { ": b"} ",
            b"node_stats { ": b"} ",
            b"dev_stats { ": b"} ",
            b"shape { dim { ": b"} } ",
            b"x: [": b"] ",
            b"x < ": b"> ",
        }[opener]
        lines = [i + 1 for i, c in enumerate(b) if c == 0x0A] or [0]
        at = rng.choice(lines)
        return bytes(
            b[:at]
            + opener * depth
            + closer * (depth if rng.random() < 0.8 else depth // 2)
            + b[at:]
        )
    if how == "huge_length":
        if kind == "binary":
            positions = _length_positions(bytes(b))
            if positions:
                at, size, n = rng.choice(positions)
                huge = rng.choice(
                    [n + 1, n + 1000, 1 << 31, (1 << 32) - 1, 1 << 32, 1 << 63, (1 << 64) - 1]
                )
                return bytes(b[:at] + _varint(huge) + b[at + size:])
            return bytes(b + b"\x0a" + _varint(1 << 62))
        # Text: an enormous string literal or identifier.
        size = rng.choice([70_000, 1 << 20])
        lines = [i + 1 for i, c in enumerate(b) if c == 0x0A] or [0]
        at = rng.choice(lines)
        piece = rng.choice(
            [
                b'node_name: "' + b"a" * size + b'"\n',
                b"x" * size + b": 1\n",
                b'device: "' + b"\\\\" * (size // 2) + b'"\n',
                b'label: "' + b"\\377" * 1000 + b"\n",
            ]
        )
        return bytes(b[:at] + piece + b[at:])
    if how == "huge_number":
        numbers = [b"9223372036854775807", b"-9223372036854775808", b"9223372036854775808",
                   b"18446744073709551615", b"18446744073709551616", b"99999999999999999999999",
                   b"0x8000000000000000", b"-0x8000000000000001", b"0777777777777777777777777",
                   b"2147483648", b"-2147483649", b"4294967296", b"1e400", b"-", b"0x", b"--1"]
        if kind == "binary":
            for _ in range(rng.randint(1, 4)):
                at = rng.randrange(len(b) + 1)
                b[at : at + 1] = rng.choice(
                    [
                        _varint(INT64_MAX),
                        _varint(1 << 63),
                        _varint((1 << 64) - 1),
                        b"\xff" * 10 + b"\x01",
                        b"\x80" * 11,
                    ]
                )
            return bytes(b)
        digits = [i for i, c in enumerate(b) if 0x30 <= c <= 0x39]
        for _ in range(rng.randint(1, 3)):
            if not digits:
                break
            i = rng.choice(digits)
            j = i
            while j < len(b) and 0x30 <= b[j] <= 0x39:
                j += 1
            b[i:j] = rng.choice(numbers)
            digits = [k for k, c in enumerate(b) if 0x30 <= c <= 0x39]
        return bytes(b)
    if how == "repeat":
        if not b:
            return bytes(b)
        i = rng.randrange(len(b))
        j = min(len(b), i + rng.randint(1, 400))
        times = rng.choice([2, 10, 100, 2000])
        return bytes(b[:j] + b[i:j] * times + b[j:])
    if how == "gzip":
        z = gzip.compress(bytes(b))
        if rng.random() < 0.5:
            z = z[: rng.randrange(len(z))]
        return z
    # multi: several of the above
    for _ in range(rng.randint(2, 4)):
        b = bytearray(_mutate(rng, kind, bytes(b), seeds, rng.choice(MUTATIONS[:8])))
    return bytes(b)


def _cases(count: int, seed: int = FUZZ_SEED) -> list[dict]:
    seeds = _seeds()
    listing_seeds = [s for s in seeds if s[0] == "listing"]
    trace_seeds = [s for s in seeds if s[0] != "listing"]
    cases = []
    for i in range(count):
        rng = random.Random(f"{seed}:{i}")
        how = MUTATIONS[i % len(MUTATIONS)]
        if listing_seeds and i % 10 == 9:
            kind, data = rng.choice(listing_seeds)
        else:
            kind, data = rng.choice(trace_seeds)
        mutated = _mutate(rng, kind, data, seeds, how)
        fmt = rng.choice(["auto", "auto", "text", "binary"])
        threads = rng.choice([1, 0, 3])
        cases.append({"i": i, "how": how, "kind": kind, "format": fmt, "threads": threads,
                      "data": base64.b64encode(mutated).decode()})
    return cases


# =========================================================================================
# Child side
# =========================================================================================
def _materialize(t) -> None:
    import pyarrow as pa  # noqa: PLC0415

    for name in t.table_names:
        table = t.table(name)
        assert isinstance(table, pa.Table)
        table.validate(full=True)
    t.events.validate(full=True)
    len(t)
    t.stats  # noqa: B018
    repr(t)


def _open_case(case: dict, workdir: str) -> dict:
    import tracecore  # noqa: PLC0415

    data = base64.b64decode(case["data"])
    suffix = ".gz" if data[:2] == b"\x1f\x8b" else (".txt" if case["kind"] == "listing" else ".bin")
    path = os.path.join(workdir, f"case{case['i']}{suffix}")
    with open(path, "wb") as f:
        f.write(data)
    try:
        if case["kind"] == "listing":
            try:
                reader = tracecore.read_listing
                from tracecore import listing  # noqa: F401, PLC0415
            except (ImportError, AttributeError):
                return {"outcome": "skipped"}
            table = reader(path)
            table.validate(full=True)
        else:
            t = tracecore.open(path, format=case["format"], threads=case["threads"])
            _materialize(t)
            del t
        return {"outcome": "ok"}
    except tracecore.TraceFormatError as e:
        return {"outcome": "TraceFormatError", "detail": str(e)[:200]}
    except Exception as e:  # noqa: BLE001 - any other type is the finding
        return {
            "outcome": "unexpected",
            "detail": f"{type(e).__module__}.{type(e).__name__}: {e}"[:500],
        }
    finally:
        os.unlink(path)


def _child_cases(job_path: str) -> int:
    cases = json.loads(Path(job_path).read_text())
    workdir = tempfile.mkdtemp(prefix="tc_robust_")
    for case in cases:
        sys.stderr.write(f"BEGIN {case['i']}\n")
        sys.stderr.flush()
        if case["kind"] == "crash-for-test":  # test_mutation_runner_catches_a_crash
            os.kill(os.getpid(), signal.SIGSEGV)
        result = _open_case(case, workdir)
        result["i"] = case["i"]
        sys.stdout.write(json.dumps(result) + "\n")
        sys.stdout.flush()
    os.rmdir(workdir)
    return 0


def _run_batch(cases: list[dict], timeout: float) -> tuple[dict[int, dict], int | None, str]:
    """Runs cases in one child. Returns (results by case index, returncode or None on
    timeout, stderr tail)."""
    with tempfile.TemporaryDirectory(prefix="tc_batch_") as d:
        job = Path(d) / "job.json"
        job.write_text(json.dumps(cases))
        proc = subprocess.Popen(
            [sys.executable, __file__, "cases", str(job)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            out, err = proc.communicate(timeout=timeout)
            rc: int | None = proc.returncode
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            rc = None
    results = {}
    for line in out.splitlines():
        try:
            r = json.loads(line)
        except ValueError:
            continue
        results[r["i"]] = r
    return results, rc, err[-3000:]


def _describe_rc(rc: int | None) -> str:
    if rc is None:
        return "hang (timeout)"
    if rc < 0:
        try:
            return f"killed by {signal.Signals(-rc).name}"
        except ValueError:
            return f"killed by signal {-rc}"
    return f"exit status {rc}"


def run_cases(cases: list[dict], save_dir: Path) -> tuple[dict[int, dict], list[str]]:
    """Runs every case; returns (results, failures). A case whose child dies or hangs is
    re-run alone to confirm; its bytes are saved to save_dir."""
    results: dict[int, dict] = {}
    failures: list[str] = []

    def isolate(case: dict) -> None:
        res, rc, err = _run_batch([case], CASE_TIMEOUT)
        if case["i"] in res and rc == 0:
            results[case["i"]] = res[case["i"]]
            return
        save_dir.mkdir(parents=True, exist_ok=True)
        path = save_dir / f"case{case['i']:04d}_{case['how']}_{case['kind']}.bin"
        path.write_bytes(base64.b64decode(case["data"]))
        failures.append(f"case {case['i']} ({case['how']} of a {case['kind']} seed, format="
                        f"{case['format']}, threads={case['threads']}): {_describe_rc(rc)}; input "
                        f"saved to {path}\n    stderr: {err.strip()[-800:]}")
        results[case["i"]] = {"i": case["i"], "outcome": "crash"}

    def run(batch: list[dict]) -> None:
        if not batch:
            return
        res, rc, err = _run_batch(batch, 60.0 + 3.0 * len(batch))
        results.update(res)
        if rc == 0 and len(res) == len(batch):
            return
        # The child died or hung: the first unfinished case is the suspect; re-run it alone,
        # then the rest of the batch.
        pending = [c for c in batch if c["i"] not in res]
        isolate(pending[0])
        run(pending[1:])

    batches = [cases[k:k + BATCH] for k in range(0, len(cases), BATCH)]
    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(run, batches))
    return results, failures


# =========================================================================================
# (a) mutated seeds
# =========================================================================================
def test_mutated_seeds_only_raise_trace_format_error(tmp_path):
    cases = _cases(FUZZ_CASES)
    t0 = time.monotonic()
    results, failures = run_cases(cases, tmp_path / "crashers")
    unexpected = [
        f"case {i} ({cases[i]['how']} of a {cases[i]['kind']} seed, format={cases[i]['format']}): "
        f"{r.get('detail')}"
        for i, r in sorted(results.items())
        if r["outcome"] == "unexpected"
    ]
    for i, r in results.items():
        if r["outcome"] == "unexpected":
            (tmp_path / "unexpected").mkdir(exist_ok=True)
            (tmp_path / "unexpected" / f"case{i:04d}.bin").write_bytes(
                base64.b64decode(cases[i]["data"])
            )
    outcomes: dict[str, int] = {}
    for r in results.values():
        outcomes[r["outcome"]] = outcomes.get(r["outcome"], 0) + 1
    print(f"{len(cases)} mutated inputs in {time.monotonic() - t0:.1f}s: {outcomes}")
    assert len(results) == len(cases)
    assert not failures, "crashes/hangs:\n  " + "\n  ".join(failures)
    assert not unexpected, "exceptions other than TraceFormatError:\n  " + "\n  ".join(
        unexpected[:20]
    )
    # The mutations must not all be trivially rejected: some inputs still parse.
    assert outcomes.get("ok", 0) > 0 or len(cases) < 20


def test_mutation_runner_catches_a_crash(tmp_path):
    """The batch runner notices a child that dies and isolates the culprit (guards the test)."""
    cases = _cases(3)
    cases[1] = dict(cases[1], kind="crash-for-test")
    results, failures = run_cases(cases, tmp_path)
    # Under a sanitizer runtime (.ci/asan.sh) the SIGSEGV is reported and turned into SIGABRT.
    assert len(failures) == 1 and "case 1 " in failures[0]
    assert "SIGSEGV" in failures[0] or "SIGABRT" in failures[0], failures[0]
    assert results[0]["outcome"] != "crash" and results[2]["outcome"] != "crash"


# -----------------------------------------------------------------------------------------
# (a2) the parallel parser on mutated multi-MB dumps: threads=1 and threads=4 must agree
# -----------------------------------------------------------------------------------------
# ParseTrace splits only inputs of several MB across threads, far above the fuzz targets'
# input sizes, so the chunked text parser and the table merge are exercised here: a valid seed
# repeated to 9-13 MB (a concatenation of StepStats dumps is one valid, larger StepStats), then
# a few point mutations, most of them near the chunk boundaries (multiples of size/2..size/4).
BIG_EDITS = [b"}", b"{", b"\n}\n", b"\ndev_stats {\n", b"\n  node_stats {\n", b'"', b"#", b"\x00",
             b"\n  device: \"x\"\n", b"<", b"\\"]


BIG_BASES = [
    "small_stepstats.pbtxt",
    "small_stepstats.pb",
    "small_runmetadata.pbtxt",
    "small_runmetadata.pb",
]


def _big_unit(base: str) -> bytes:
    if (REG / base).exists():
        return (REG / base).read_bytes()
    return (DATA / "seed000_stepstats.pbtxt").read_bytes()[:200_000]  # fixtures missing


def _big_cases(count: int, seed: int = FUZZ_SEED) -> list[dict]:
    cases = []
    for i in range(count):
        rng = random.Random(f"big:{seed}:{i}")
        base = BIG_BASES[i % len(BIG_BASES)]
        unit = _big_unit(base)
        binary = base.endswith(".pb")
        target = rng.randint(9, 13) << 20
        reps = target // len(unit) + 1
        edits = []
        for _ in range(rng.randint(0, 3)):
            chunks = rng.choice([2, 3, 4])
            near = (reps * len(unit)) * rng.randint(1, chunks - 1) // chunks
            pos = (
                max(0, near + rng.randint(-70_000, 70_000))
                if rng.random() < 0.8
                else rng.randrange(reps * len(unit))
            )
            if binary or rng.random() < 0.3:
                edits.append((pos, "flip", rng.randrange(256)))
            else:
                edits.append((pos, "insert", rng.randrange(len(BIG_EDITS))))
            if rng.random() < 0.2:
                edits.append((pos, "delete", rng.randint(1, 300)))
        cases.append({"i": i, "kind": base, "reps": reps, "edits": edits})
    return cases


def _big_bytes(case: dict) -> bytes:
    b = bytearray(_big_unit(case["kind"]) * case["reps"])
    for pos, op, arg in sorted(case["edits"], reverse=True):
        pos = min(pos, len(b) - 1)
        if op == "flip":
            b[pos] ^= arg or 1
        elif op == "insert":
            b[pos:pos] = BIG_EDITS[arg]
        else:
            del b[pos:pos + arg]
    return bytes(b)


def _child_big(job_path: str) -> int:
    import tracecore  # noqa: PLC0415

    directory = tempfile.mkdtemp(prefix="tc_big_")
    path = os.path.join(directory, "big.dump")
    for case in json.loads(Path(job_path).read_text()):
        sys.stderr.write(f"BEGIN {case['i']}\n")
        sys.stderr.flush()
        Path(path).write_bytes(_big_bytes(case))
        results = []
        for threads in (1, 4):
            try:
                t = tracecore.open(path, threads=threads)
                results.append(("ok", t, t.stats.get("threads")))
            except tracecore.TraceFormatError as e:
                results.append(("TraceFormatError", str(e).split(": ", 1)[-1][:200], None))
            except Exception as e:  # noqa: BLE001
                results.append(("unexpected", f"{type(e).__name__}: {e}"[:300], None))
        (o1, v1, _), (o4, v4, used) = results
        report = {"i": case["i"], "outcomes": [o1, o4], "threads_used": used, "problems": []}
        if "unexpected" in (o1, o4):
            report["problems"].append(f"unexpected exception: {v1 if o1 == 'unexpected' else v4}")
        elif o1 != o4:
            report["problems"].append(
                f"threads=1 -> {o1} ({v1 if o1 != 'ok' else 'parsed'}), threads=4 -> "
                f"{o4} ({v4 if o4 != 'ok' else 'parsed'})"
            )
        elif o1 == "ok":
            for name in v1.table_names:
                if not v1.table(name).equals(v4.table(name)):
                    report["problems"].append(
                        f"table {name} differs between threads=1 and threads=4"
                    )
        sys.stdout.write(json.dumps(report) + "\n")
        sys.stdout.flush()
        del results, v1, v4
    os.unlink(path)
    os.rmdir(directory)
    return 0


def test_parallel_parse_agrees_with_sequential_on_mutated_big_dumps(tmp_path):
    cases = _big_cases(max(4, FUZZ_CASES // 50))
    job = tmp_path / "big.json"
    job.write_text(json.dumps(cases))
    proc = subprocess.run(
        [sys.executable, __file__, "big", str(job)],
        capture_output=True,
        text=True,
        timeout=120 + 20 * len(cases),
    )
    reports = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0:
        culprit = cases[len(reports)]
        path = tmp_path / f"big_case{culprit['i']}.dump"
        path.write_bytes(_big_bytes(culprit))
        raise AssertionError(
            f"child died ({_describe_rc(proc.returncode)}) on big case {culprit}; input "
            f"saved to {path}\n{proc.stderr[-2000:]}"
        )
    problems = []
    for r in reports:
        if r["problems"]:
            case = cases[r["i"]]
            path = tmp_path / f"big_case{case['i']}.dump"
            path.write_bytes(_big_bytes(case))
            problems.append(f"case {case['i']} ({case['kind']}, edits {case['edits']}): "
                            f"{'; '.join(r['problems'])} -- input saved to {path}")
    print("big cases:", [(r["outcomes"], r["threads_used"]) for r in reports])
    assert len(reports) == len(cases)
    assert not problems, "\n".join(problems)
    # At least one case must really have been parsed on several threads.
    assert any((r["threads_used"] or 1) > 1 for r in reports), reports


# =========================================================================================
# (b) concurrency
# =========================================================================================
def _operations(t) -> dict:
    ev = t.events
    starts = ev["start_ns"].to_pylist()
    ends = ev["end_ns"].to_pylist()
    lo, hi = min(starts), max(ends)
    windows = [
        (lo, hi),
        (lo, lo + (hi - lo) // 3),
        ((lo + hi) // 2, (lo + hi) // 2 + 1000),
        (hi, hi + 1),
    ]
    ops = {
        "events": lambda: t.events,
        "tensors": lambda: t.tensors,
        "alloc_records": lambda: t.alloc_records,
        "overlaps": lambda: t.overlaps(),
        "overlaps_cross": lambda: t.overlaps(same_device=False),
        "occupancy": lambda: t.occupancy(),
        "occupancy_bins": lambda: t.occupancy(bin_ns=max(1, (hi - lo) // 50)),
        "replay_tensors_peaks": lambda: t.replay(source="tensors").peaks,
        "replay_records_timeline": lambda: t.replay(source="records").timeline,
        "op_stats": lambda: t.op_stats(),
        "op_stats_node": lambda: t.op_stats(by="node_name"),
    }
    for k, (a, b) in enumerate(windows):
        ops[f"window{k}"] = (lambda a=a, b=b: t.window(a, b))
    return ops


def _same(a, b) -> bool:
    return a.equals(b)


def test_concurrent_queries_match_sequential():
    import tracecore  # noqa: PLC0415

    for seed in ("seed001_runmetadata.pbtxt", "seed000_stepstats.pbtxt"):
        path = DATA / seed
        reference = {name: op() for name, op in _operations(tracecore.open(path)).items()}
        shared = tracecore.open(path)  # fresh: caches and indexes are built under contention
        ops = _operations(shared)
        names = sorted(ops) * 4
        random.Random(3).shuffle(names)
        with ThreadPoolExecutor(max_workers=8) as pool:
            got = list(pool.map(lambda n, ops=ops: (n, ops[n]()), names))
        bad = sorted({n for n, value in got if not _same(value, reference[n])})
        assert not bad, f"{seed}: results differ from the sequential run under 8 threads: {bad}"


def test_concurrent_opens_of_one_file_agree():
    import tracecore  # noqa: PLC0415

    path = DATA / "seed001_runmetadata.pbtxt"
    ref = tracecore.open(path)
    with ThreadPoolExecutor(max_workers=8) as pool:
        traces = list(pool.map(lambda k: tracecore.open(path, threads=k % 3), range(16)))
    for t in traces:
        assert t.events.equals(ref.events)
        assert t.tensors.equals(ref.tensors)


# =========================================================================================
# (c) truncation while mapped
# =========================================================================================
def _big_copy(kind: str, directory: str) -> str:
    """A ~10 MB dump (concatenated copies of seed 000: a valid, larger StepStats)."""
    seed = (DATA / "seed000_stepstats.pbtxt").read_bytes()
    if kind == "binary":
        mc = _make_corpus_module()
        seed = mc.encode(mc.parse_text(seed.decode()), "StepStats")
    data = seed * max(1, (10 << 20) // len(seed))
    path = os.path.join(directory, f"big.{kind}")
    with open(path, "wb") as f:
        f.write(data)
    return path


def _child_truncate(kind: str, iterations: str) -> int:
    import threading  # noqa: PLC0415

    import tracecore  # noqa: PLC0415

    directory = tempfile.mkdtemp(prefix="tc_trunc_")
    original = _big_copy(kind, directory)
    data = Path(original).read_bytes()
    target = os.path.join(directory, "victim")
    Path(target).write_bytes(data)
    t0 = time.perf_counter()
    tracecore.open(target, threads=1)
    parse_s = time.perf_counter() - t0
    rng = random.Random(11)
    outcomes = {"ok": 0, "TraceFormatError": 0}
    for _ in range(int(iterations)):
        Path(target).write_bytes(data)
        delay = rng.uniform(0, parse_s * 1.2)
        new_size = rng.choice([0, 1, 4095, 4096, len(data) // 3, len(data) // 2, len(data) - 1])

        def truncate(delay=delay, new_size=new_size):
            time.sleep(delay)
            os.truncate(target, new_size)

        th = threading.Thread(target=truncate)
        th.start()
        try:
            t = tracecore.open(target, threads=rng.choice([1, 0]))
            _ = t.events, t.tensors
            outcomes["ok"] += 1
        except tracecore.TraceFormatError:
            outcomes["TraceFormatError"] += 1
        except OSError:
            outcomes.setdefault("OSError", 0)
            outcomes["OSError"] += 1
        th.join()
    print(json.dumps({"parse_seconds": parse_s, "outcomes": outcomes}))
    for name in os.listdir(directory):
        os.unlink(os.path.join(directory, name))
    os.rmdir(directory)
    return 0


def test_file_truncated_while_parsing_never_crashes():
    iterations = "40" if FUZZ_CASES >= 1000 else "12"
    for kind in ("text", "binary"):
        proc = subprocess.run([sys.executable, __file__, "truncate", kind, iterations],
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, (
            f"{kind}: opening a file while another thread truncates it: "
            f"{_describe_rc(proc.returncode)}\n{proc.stderr[-2000:]}"
        )
        report = json.loads(proc.stdout.strip().splitlines()[-1])
        # Truncations land before, during and after the parse: both outcomes are seen.
        assert sum(report["outcomes"].values()) == int(iterations), report


# =========================================================================================
# (d) leaks
# =========================================================================================
def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _child_leak(count: str) -> int:
    import gc  # noqa: PLC0415

    import tracecore  # noqa: PLC0415

    path = DATA / "seed001_runmetadata.pbtxt"
    bad = REG / "small_stepstats.pb"
    rss = []
    for k in range(int(count)):
        t = tracecore.open(path)
        tables = [t.table(name) for name in t.table_names] + [t.events]
        queries = [
            t.overlaps(),
            t.occupancy(),
            t.replay(source="tensors").peaks,
            t.replay().timeline,
            t.op_stats(),
            t.window(0, 1 << 62),
        ]
        del t, tables, queries
        with contextlib.suppress(tracecore.TraceFormatError):  # the error path must not leak
            tracecore.open(bad, format="text")
        gc.collect()
        if k in (9, int(count) - 1):
            rss.append(_rss_bytes())
    print(json.dumps({"rss_after_warmup": rss[0], "rss_end": rss[1]}))
    return 0


def _child_leak_mid(path: str, count: str) -> int:
    """Opens and drops a dump whose columns are mid-size (128 KB to 2 MB: carved from the column
    arena's shared huge-page slabs on a sequential parse), keeping one table of each open
    alive until the next open, so slabs are freed from Arrow's release callbacks."""
    import gc

    import tracecore

    rss = []
    kept = None
    for k in range(int(count)):
        t = tracecore.open(path, threads=1)
        table = t.table("tensors")
        kept = (table, table.column("shape").combine_chunks().values.to_numpy().sum())
        del t, table
        gc.collect()
        if k in (4, int(count) - 1):
            rss.append(_rss_bytes())
    del kept
    print(json.dumps({"rss_after_warmup": rss[0], "rss_end": rss[1]}))
    return 0


UNDER_ASAN = "libasan" in os.environ.get("LD_PRELOAD", "")


def _child_rss_growth(*args: str) -> tuple[int, dict]:
    """Runs this file's child mode `args` (a leak child printing rss_after_warmup and rss_end)
    and returns (growth in bytes, the child's report)."""
    if UNDER_ASAN:
        import pytest  # noqa: PLC0415

        pytest.skip(
            "RSS is meaningless under AddressSanitizer (quarantine); LeakSanitizer/valgrind "
            "cover leaks"
        )
    proc = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True,
                          timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    return report["rss_end"] - report["rss_after_warmup"], report


def test_open_and_drop_100_traces_does_not_grow_rss():
    growth, report = _child_rss_growth("leak", "100")
    assert growth < 50 << 20, (
        f"RSS grew by {growth / 2**20:.1f} MB over 90 open/drop cycles: {report}"
    )


def test_open_and_drop_mid_size_dumps_does_not_grow_rss(tmp_path):
    """A 10 MB dump's columns come from the column arena's slabs (up to 32 MB of address space
    each, its written 2 MB pages resident): each slab must go when its last column does. A slab
    kept per open would add about 2 MB per cycle here (80 MB over the 40 cycles measured)."""
    path = tmp_path / "mid.pbtxt"
    path.write_bytes((DATA / "seed000_stepstats.pbtxt").read_bytes() * 7)
    growth, report = _child_rss_growth("leak_mid", str(path), "45")
    assert growth < 30 << 20, (
        f"RSS grew by {growth / 2**20:.1f} MB over 40 open/drop cycles: {report}"
    )


# =========================================================================================
# (e) regression files
# =========================================================================================
def _query_problems(t) -> list[str]:
    """Queries on a trace whose times / bytes sit near the int64 limits: each must raise a
    ValueError (TraceFormatError is one) or OverflowError, or return values that did not wrap."""
    problems = []

    def attempt(name, fn):
        try:
            return fn()
        except (ValueError, OverflowError):
            return None

    occ = attempt("occupancy", t.occupancy)
    if occ is not None:
        for row in occ.to_pylist():
            if row["busy_ns"] < 0 or row["span_ns"] < 0 or row["busy_ns"] > row["span_ns"]:
                problems.append(f"occupancy row wrapped around int64: {row}")
    bins = attempt("occupancy(bin_ns)", lambda: t.occupancy(bin_ns=1 << 61))
    if bins is not None:
        per_device: dict[int, int] = {}
        for row in bins.to_pylist():
            if not (0 <= row["busy_ns"] <= 1 << 61) or not (0.0 <= row["busy_fraction"] <= 1.0):
                problems.append(f"occupancy(bin_ns=2**61) row out of range: {row}")
            per_device[row["device_index"]] = (
                per_device.get(row["device_index"], 0) + row["busy_ns"]
            )
        if occ is not None:  # the bins partition each device's busy time
            for row in occ.to_pylist():
                if per_device.get(row["device_index"], 0) != row["busy_ns"]:
                    problems.append(
                        f"occupancy(bin_ns=2**61) busy_ns of device {row['device_index']} sums "
                        f"to {per_device.get(row['device_index'], 0)}, occupancy() says "
                        f"{row['busy_ns']}"
                    )
    stats = attempt("op_stats", t.op_stats)
    if stats is not None:
        for row in stats.to_pylist():
            if row["total_ns"] < 0 or row["busy_ns"] < 0 or row["max_ns"] < 0:
                problems.append(f"op_stats row wrapped around int64: {row}")
    for source in ("records", "tensors"):
        replay = attempt(f"replay({source})", lambda source=source: t.replay(source=source))
        if replay is None:
            continue
        level: dict[str, int] = {}
        for row in replay.timeline.to_pylist():
            level[row["allocator"]] = level.get(row["allocator"], 0) + row["delta_bytes"]
            if level[row["allocator"]] != row["bytes_in_use"]:
                problems.append(f"replay({source}) level wrapped around int64: {row} "
                                f"(exact running sum {level[row['allocator']]})")
                break
    return problems


def _replay_tensors_exact(t) -> list[str]:
    """query_overflow_replay_tensors.pbtxt: both outputs (INT64_MAX requested bytes each) are
    created at 1000 ns, so the first timeline row's delta is exactly 2 * INT64_MAX: not an
    int64, hence replay(source="tensors") must raise."""
    try:
        timeline = t.replay(source="tensors").timeline
    except (ValueError, OverflowError):
        return []
    first = timeline.to_pylist()[0]
    if first["delta_bytes"] != 2 * INT64_MAX:
        return [
            f"replay(tensors) first change wrapped around int64: {first} "
            f"(exact delta {2 * INT64_MAX})"
        ]
    return []


def _devices_without_events_exact(t) -> list[str]:
    """query_devices_without_events.pb: two device blocks, no node stats. op_stats(by="device")
    keeps one zero row per block; by op or node it has no rows."""
    problems = []
    rows = t.op_stats("device").to_pylist()
    keys = [r["key"] for r in rows]
    if keys != ["/device:CPU:0", "/device:GPU:0/stream:all"]:
        problems.append(f"op_stats(by='device') keys {keys}")
    for r in rows:
        if any(r[c] != 0 for c in ("n_events", "total_ns", "busy_ns", "executor_ns", "stream_ns")):
            problems.append(f"op_stats(by='device') row not zero: {r}")
    for by in ("op", "node_name"):
        if t.op_stats(by).num_rows != 0:
            problems.append(f"op_stats(by={by!r}) has rows on a trace without events")
    return problems


# Extra exact checks for single regression files (name -> checker returning problems).
EXACT_CHECKS = {
    "query_overflow_replay_tensors.pbtxt": _replay_tensors_exact,
    "query_devices_without_events.pb": _devices_without_events_exact,
}


# Findings saved in tests/data/regressions/ (minimized by hand). The query_overflow_* files
# come from the fuzz_queries target: signed int64 overflows in the queries (UBSan reports; in a
# release build the values wrap around).
REGRESSION_NOTES = {
    "query_overflow_occupancy_span.pbtxt": "occupancy.cc: span_ns = max end - min start overflows "
    "(an event at all_start_nanos = INT64_MIN next to one at +2000 ns)",
    "query_overflow_busy_union.pbtxt": "intervals.h UnionPeriods: busy += end - begin overflows "
    "(two touching events covering [-9e18, 9e18+1))",
    "query_overflow_op_stats_total.pbtxt": "op_stats.cc: total_ns sum of two ~9.2e18 ns events "
    "overflows",
    "query_overflow_replay_records.pbtxt": "memory_replay.cc ReplayAllocator: level += delta "
    "overflows (alloc_bytes INT64_MAX then +412)",
    "query_overflow_replay_tensors.pbtxt": "memory_replay.cc ReplayTensors: per-time delta sum "
    "overflows (two outputs of INT64_MAX requested_bytes)",
    "query_overflow_occupancy_bins.pbtxt": "occupancy.cc OccupancyBins: the last bin's end "
    "t0 + bin_ns * (k + 1) is cast from __int128 to int64 and wraps when it passes INT64_MAX "
    "(occupancy(bin_ns=2**61) here); busy += stop - pos then overflows (wrong busy_ns in release)",
    "query_overflow_scopes_total.pbtxt": "names.py scopes(): total_ns of two 5e18 ns events "
    "summed with numpy int64 wrapped to -8446744073709551616 (now the checked group_stats "
    "engine raises OverflowError; the CLI printed it as an internal error)",
    "query_overflow_tower_bytes.pbtxt": "names.py towers(): two tensors of 6e18 bytes gave "
    "negative tower bytes (now OverflowError); replay(tensors) overflows too",
    "dataset_overflow_one_event.pbtxt": "dataset.py TraceSet.op_stats/occupancy(per=...): "
    "Arrow's hash sum of two traces' 5e18 ns wrapped around int64 (now checked_aggregate "
    "raises OverflowError); mean_ns's cast of a total above 2^53 raised ArrowInvalid",
    "label_invalid_utf8_then_second_label.pbtxt": "text_parser.cc: a timeline_label replaced "
    "by a second one was never validated (invalid UTF-8 accepted; protobuf rejects it)",
    "label_invalid_utf8_then_second_label.pb": "binary_parser.cc: the same in the wire format",
    "unknown_field_malformed_message.pbtxt": "text_cursor.cc SkipValue: an unknown field's "
    "message was skipped by bracket balance only ('foo { $$$ %%% }' accepted; protobuf: 5:11 "
    "Expected identifier or number)",
    "unknown_field_list_without_commas.pbtxt": "text_cursor.cc SkipValue: 'foo: [1 2 3]' "
    "accepted (protobuf: 5:13 Expected \",\")",
    "gzip_corrupt_block.pbtxt.gz": "parsing.py: Python's gzip module reported a corrupt "
    "deflate block without its offset (now decompressed by the core: byte offset 76)",
    "query_devices_without_events.pb": "group_stats.cc: with no rows the category column is "
    "an empty vector's null data(), so no per-category sums were made and op_stats(by='device') "
    "read category_ns[g * 2] past the end (UBSan: reference binding to null pointer)",
    # Found by the mutation test (a): the text parser echoes a bracketed field name ("[...]",
    # any bytes up to ']') raw into the TraceFormatError message; the binding's conversion of a
    # non-UTF-8 message to str raised UnicodeDecodeError instead of TraceFormatError (since
    # fixed in the binding: the message is decoded with backslashreplace).
    "error_message_invalid_utf8.pbtxt": "text_cursor FieldName + error message: b'[\\xff] x' "
    "gives UnicodeDecodeError, not TraceFormatError",
    # Found by fuzz_text (message check added to the harness): "invalid escape sequence '\<byte>'"
    # echoes the raw byte after a backslash in a string literal.
    "error_message_invalid_utf8_escape.pbtxt": "text_cursor string unescape: "
    "b'device: \"\\\\\\xff\"' gives UnicodeDecodeError, not TraceFormatError",
}


def _child_regression(path: str) -> int:
    import tracecore  # noqa: PLC0415

    report = {}
    for fmt in ("auto", "text", "binary"):
        try:
            t = tracecore.open(path, format=fmt)
            _materialize(t)
            problems = _query_problems(t)
            if Path(path).name in EXACT_CHECKS:
                problems += EXACT_CHECKS[Path(path).name](t)
            report[fmt] = {"outcome": "ok", "problems": problems}
        except tracecore.TraceFormatError as e:
            report[fmt] = {"outcome": "TraceFormatError", "detail": str(e)[:200]}
        except Exception as e:  # noqa: BLE001
            report[fmt] = {"outcome": "unexpected", "detail": f"{type(e).__name__}: {e}"[:300]}
    print(json.dumps(report))
    return 0


def _regression_files() -> list[Path]:
    return (
        sorted(p for p in REG.iterdir() if p.is_file() and not p.name.endswith(".md"))
        if REG.is_dir()
        else []
    )


def pytest_generate_tests(metafunc):
    if "regression_file" in metafunc.fixturenames:
        files = _regression_files()
        metafunc.parametrize("regression_file", files, ids=[p.name for p in files])


def test_regression_file(regression_file):
    proc = subprocess.run([sys.executable, __file__, "regression", str(regression_file)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, (
        f"{regression_file.name}: {_describe_rc(proc.returncode)}\n{proc.stderr[-2000:]}"
    )
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    for fmt, r in report.items():
        assert r["outcome"] in ("ok", "TraceFormatError"), (
            f"{regression_file.name} format={fmt}: {r}"
        )
        assert not r.get("problems"), f"{regression_file.name} format={fmt}: " + "; ".join(
            r["problems"]
        )


# =========================================================================================
# (f) input size scaling: a hang found by review of the fuzz targets' slow inputs
# =========================================================================================
def _thread_names_dump(n: int, duplicate: bool) -> bytes:
    """A binary StepStats with one device block holding n thread_names entries (keys 0..n-1,
    plus key 0 again at the end when `duplicate`): 6 bytes per entry."""
    entries = bytearray()
    for k in range(n):
        payload = b"\x08" + _varint(k)
        entries += b"\x1a" + _varint(len(payload)) + payload
    if duplicate:
        entries += b"\x1a\x05\x08\x00\x12\x01d"
    node = b"\x0a\x01n\x10\x05"
    device = b"\x0a\x0d/device:CPU:0" + b"\x12" + _varint(len(node)) + node + bytes(entries)
    return b"\x0a" + _varint(len(device)) + device


def _child_thread_names(n: str, duplicate: str) -> int:
    import tracecore  # noqa: PLC0415

    directory = tempfile.mkdtemp(prefix="tc_tn_")
    path = os.path.join(directory, "thread_names.pb")
    Path(path).write_bytes(_thread_names_dump(int(n), duplicate == "1"))
    t0 = time.perf_counter()
    t = tracecore.open(path)
    seconds = time.perf_counter() - t0
    rows = t.thread_names.num_rows
    os.unlink(path)
    os.rmdir(directory)
    print(json.dumps({"seconds": seconds, "rows": rows}))
    return 0


def test_many_thread_names_do_not_take_quadratic_time():
    """300k thread_names entries (1.8 MB) in one device block, the last repeating a key: a
    linear-time parse takes well under a second; the quadratic duplicate-key handling of
    TraceSink::EndDevice takes about a minute (without the repeated key, ~20 s). Limit: 20 s."""
    try:
        proc = subprocess.run([sys.executable, __file__, "thread_names", "300000", "1"],
                              capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        raise AssertionError(
            "opening a dump with 300000 thread_names entries in one device block took over 20 s: "
            "the map's duplicate-key handling is quadratic") from None
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["rows"] == 300000


# =========================================================================================
if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "cases":
        sys.exit(_child_cases(sys.argv[2]))
    if mode == "truncate":
        sys.exit(_child_truncate(sys.argv[2], sys.argv[3]))
    if mode == "leak":
        sys.exit(_child_leak(sys.argv[2]))
    if mode == "leak_mid":
        sys.exit(_child_leak_mid(sys.argv[2], sys.argv[3]))
    if mode == "big":
        sys.exit(_child_big(sys.argv[2]))
    if mode == "thread_names":
        sys.exit(_child_thread_names(sys.argv[2], sys.argv[3]))
    if mode == "regression":
        sys.exit(_child_regression(sys.argv[2]))
    sys.exit(f"unknown mode {mode}")
