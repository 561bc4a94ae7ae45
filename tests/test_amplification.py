"""Inputs that amplify memory (issue 26, item 6) stay within twice their documented budget, or
are refused with the documented error, in a child process whose address space is capped.

Each case runs in its own child (``python tests/test_amplification.py CASE.json``): it makes
what the case needs first (a trace opened, a TraceSet), then caps its address space at its
current size plus twice the case's documented budget (plus ADDRESS_SLACK, below), resets its
peak resident size (``/proc/self/clear_refs``) and runs the amplifying call. The child reports
the outcome and how much its peak resident size grew as JSON; a MemoryError, another exception
type or a crash fails the test, and so does memory past twice the budget. Where a budget does
not count the input itself (a parse maps its file), the case's budget adds it. The budgets, as
documented:

- ``occupancy(bin_ns)``: ``max_output_bytes`` (1 GiB by default), 32 bytes per bin row, checked
  before any bin is made (docs/queries.md); ``TraceSet.occupancy(bin_ns)``: the same budget for
  the whole result, each row counted with its key columns (docs/many_traces.md).
- gzip: the decompressed data is held once, and is at most 1032 times the compressed size
  (docs/api.md); a gzip bomb of spaces takes that and no tables.
- The parsed tables: ``max_table_bytes``, by default 16 bytes per byte of input (of the
  decompressed data for gzip), at least 64 MiB (docs/api.md). Empty ``node_stats`` records
  (2 binary bytes or 14 text bytes, each an events row of about 96 bytes) pass it in binary and
  not in text.
- Devices and FIFOs are refused before anything is read (docs/api.md).

Address space is not memory: ADDRESS_SLACK is what a child may map beyond twice its budget
without using it. The column arena carves a parse's mid-size buffers (128 KB to 2 MB) out of
32 MB slabs and gives each buffer's pages back when it is freed, but a slab stays mapped while
one of its buffers lives: as columns grow through that range, a parse can hold some 60 to 150
MB of slab address space with little of it resident (measured on these inputs). pyarrow's
allocator is the system one in the children (ARROW_DEFAULT_MEMORY_POOL=system): mimalloc
reserves address space ahead in large arenas, which the cap would refuse for reasons that are
not tracecore's.
"""

from __future__ import annotations

import gzip
import json
import mmap
import os
import sys
import zlib
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from test_malformed import REG, run_children, varint  # noqa: E402 - after the path

MIB = 1 << 20
ADDRESS_SLACK = 192 * MIB

# 100 MiB of spaces, gzip-compressed at the deflate limit (1028.7:1, 102 KB): the gzip bomb.
# Its binary reading used to plan one 24-byte unit per 2-byte field: 2.4 GB per 200 MB.
SPACES_GZ = REG / "amplification_spaces_100mib.pbtxt.gz"
SPACES_BYTES = 100 * MIB

DEVICE = b"/device:CPU:0"
TEXT_RECORD = b"node_stats {}\n"


def empty_records_binary(n_records: int, blocks: int = 2) -> bytes:
    """A binary StepStats of `blocks` device blocks holding `n_records` empty node_stats in all
    (``12 00`` each, 2 bytes)."""
    out = []
    for b in range(blocks):
        n = n_records // blocks + (1 if b < n_records % blocks else 0)
        body = b"\x0a" + varint(len(DEVICE)) + DEVICE + b"\x12\x00" * n
        out.append(b"\x0a" + varint(len(body)) + body)
    return b"".join(out)


def empty_records_text(n_records: int) -> bytes:
    """A text StepStats of one device block holding `n_records` empty node_stats (14 bytes
    each)."""
    return b'dev_stats { device: "/device:CPU:0"\n' + TEXT_RECORD * n_records + b"}\n"


def spaces_gz() -> bytes:
    """SPACES_GZ's content (tests/data/regressions holds it; this remakes it)."""
    co = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = b" " * MIB
    return b"".join([co.compress(chunk) for _ in range(SPACES_BYTES // MIB)] + [co.flush()])


# --------------------------------------------------------------------------------------------
# Child side
# --------------------------------------------------------------------------------------------
def _status(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field}")


def _setup(case: dict) -> Any:
    """What the case works on, made before the cap: a Trace, a TraceSet or None."""
    import tracecore

    if case["setup"] in ("sample", "sample_set"):
        if case["setup"] == "sample":
            subject = tracecore.open(tracecore.sample_path())
        else:
            subject = tracecore.open_many(case["paths"], threads=1)
        # Once with one bin per device block, for the code it loads (pyarrow.compute: 40 MB).
        subject.occupancy(bin_ns=2**62)
        return subject
    return None


def _action(case: dict, subject: Any) -> dict:
    import tracecore

    kind = case["action"]
    if kind == "occupancy":
        table = subject.occupancy(bin_ns=case["bin_ns"], max_output_bytes=case["budget"])
        return {"rows": table.num_rows}
    if kind == "open":
        t = tracecore.open(case["path"], **case.get("kwargs", {}))
        return {"events": len(t), "format": t.format}
    raise ValueError(kind)


def _child_main(case_path: str) -> int:
    import resource

    import tracecore

    case = json.loads(Path(case_path).read_text())
    subject = _setup(case)
    vm0 = _status("VmSize")
    out: dict = {"vm0": vm0}
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (vm0 + case["limit"], hard))
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # the peak resident size (VmHWM) starts again from the current one
    rss0 = _status("VmRSS")
    try:
        try:
            # A mapping of its own (a malloc of it could leave a reserved arena behind).
            mmap.mmap(-1, case["limit"] + MIB).close()
            out["limit_effective"] = False
        except OSError:
            out["limit_effective"] = True
        try:
            out.update(r="ok", **_action(case, subject))
        except tracecore.TraceFormatError as e:
            out.update(
                r="TraceFormatError", msg=str(e), offset=e.offset, line=e.line, column=e.column
            )
        except OSError as e:
            out.update(r="OSError", msg=str(e), errno=e.errno)
        except ValueError as e:
            out.update(r="ValueError", msg=str(e))
        except BaseException as e:  # noqa: BLE001 - MemoryError or any other: a finding
            out.update(r="other", type=type(e).__name__, msg=str(e)[:500])
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    out["rss_growth"] = _status("VmHWM") - rss0
    out["vm_growth"] = _status("VmPeak") - vm0  # at least: VmPeak may predate the cap
    Path(case["result"]).write_text(json.dumps(out))
    return 0


# --------------------------------------------------------------------------------------------
# Parent side
# --------------------------------------------------------------------------------------------
def run_cases(cases: dict[str, dict], workdir: Path) -> dict[str, dict]:
    """Runs every case in its own child at once; fails the test if one crashes or hangs."""
    env = dict(os.environ, ARROW_DEFAULT_MEMORY_POOL="system")
    outs = run_children(list(cases.values()), workdir, Path(__file__).resolve(), env)
    return dict(zip(cases, outs, strict=True))


def _budget_message(size: int) -> str:
    """The default table budget's message for an input of `size` bytes (after its location)."""
    budget = max(16 * size, 64 * MIB)
    return (
        f"the tables would take more than {budget} bytes of memory, the budget for this input "
        f"(max_table_bytes: by default 16 times its {size} bytes, at least 67108864; traces "
        f"take under 8 times their size, records of one or two bytes up to 50); pass a larger "
        f"max_table_bytes to tracecore.open to allow more"
    )


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> tuple[dict[str, dict], dict[str, dict]]:
    import tracecore

    work = tmp_path_factory.mktemp("amplification")
    sample = tracecore.sample_path()
    ranks = []
    for r in range(3):
        p = work / f"rank{r}.pbtxt.gz"
        p.write_bytes(sample.read_bytes())
        ranks.append(str(p))

    binary20 = work / "empty_records_20mib.pb"
    binary20.write_bytes(empty_records_binary(10 * MIB))
    binary4 = work / "empty_records_4mib.pb"
    binary4.write_bytes(empty_records_binary(2 * MIB, blocks=1))
    text20 = work / "empty_records_20mib.pbtxt"
    text20.write_bytes(empty_records_text(20 * MIB // len(TEXT_RECORD)))
    text20_gz = work / "empty_records_20mib.pbtxt.gz"
    text20_gz.write_bytes(gzip.compress(text20.read_bytes(), 6))
    fifo = work / "fifo.pbtxt"
    os.mkfifo(fifo)

    def case(budget: int, **spec: object) -> dict:
        return {
            "setup": None,
            "action": "open",
            **spec,
            "budget": budget,
            "limit": 2 * budget + ADDRESS_SLACK,
        }

    def table_case(path: Path, **kwargs: int) -> dict:
        # The tables' budget, and the input the parse maps besides.
        size = path.stat().st_size
        budget = kwargs.get("max_table_bytes") or max(16 * size, 64 * MIB)
        return case(size + budget, path=str(path), kwargs=kwargs)

    def occupancy_case(setup: str, bin_ns: int, budget: int) -> dict:
        return case(budget, setup=setup, paths=ranks, action="occupancy", bin_ns=bin_ns)

    inflated = 1032 * SPACES_GZ.stat().st_size
    inflated20 = min(1032 * text20_gz.stat().st_size, text20.stat().st_size)
    cases: dict[str, dict] = {
        "occupancy_bins_1ns": occupancy_case("sample", 1, tracecore._core.DEFAULT_MAX_OUTPUT_BYTES),
        "occupancy_bins_100ns": occupancy_case("sample", 100, 64 * MIB),
        "set_occupancy_bins_1000ns": occupancy_case("sample_set", 1000, 10_000_000),
        "set_occupancy_bins_100ns": occupancy_case("sample_set", 100, 256 * MIB),
        # The decompressed bytes are the budget: no tables come of spaces.
        "gzip_bomb": case(inflated, path=str(SPACES_GZ)),
        # The decompressed data (at most 1032 times the compressed) and its tables' budget.
        "gzip_empty_records": case(inflated20 + 16 * inflated20, path=str(text20_gz)),
        "empty_records_binary": table_case(binary20),
        "empty_records_binary_small": table_case(binary4),
        "empty_records_binary_raised": table_case(binary4, max_table_bytes=512 * MIB),
        "empty_records_text": table_case(text20),
        "empty_records_text_lowered": table_case(text20, max_table_bytes=32 * MIB),
        # Refused before anything is read: nothing to spend.
        "dev_zero": case(0, path="/dev/zero"),
        "fifo": case(0, path=str(fifo)),
    }
    return cases, run_cases(cases, work)


def test_the_regression_input_is_the_gzip_bomb() -> None:
    data = SPACES_GZ.read_bytes()
    assert data == spaces_gz()
    assert len(zlib.decompress(data, 31)) == SPACES_BYTES
    assert SPACES_BYTES / len(data) > 1000


def refused(res: dict, error: str, message: str) -> None:
    """``res`` is the outcome of a call refused with `error` and `message`."""
    assert (res["r"], res["msg"]) == (error, message), res


def completed(res: dict, **values: object) -> None:
    """``res`` is the outcome of a call that completed with `values`."""
    assert res["r"] == "ok", res
    assert {k: res[k] for k in values} == values


def test_every_child_ran_within_twice_its_budget(results) -> None:
    cases, out = results
    for name, res in out.items():
        assert res["limit_effective"], name
        assert res["r"] != "other", (name, res)
        # Resident memory: twice the budget (a few MB for what Python does around the call).
        assert res["rss_growth"] <= 2 * cases[name]["budget"] + 8 * MIB, (name, res)


@pytest.mark.parametrize(
    "name, message",
    [
        (
            "occupancy_bins_1ns",
            "occupancy(bin_ns=1) would make 74016000 rows of 32 bytes, over the output budget "
            "of 1073741824 bytes (the bins over the spans of 7 device blocks; choose a larger "
            "bin_ns, or raise max_output_bytes)",
        ),
        # Each trace's 74016 bins (2.4 MB) are within the 10 MB budget; the three are not.
        (
            "set_occupancy_bins_1000ns",
            "TraceSet.occupancy(bin_ns=1000) would make 222048 rows over 3 traces, 11768544 "
            "bytes with their key columns, over the output budget of 10000000 bytes (choose a "
            "larger bin_ns, or raise max_output_bytes)",
        ),
    ],
)
def test_bins_past_the_output_budget_are_refused_before_any_is_made(
    results, name: str, message: str
) -> None:
    _, out = results
    refused(out[name], "ValueError", message)
    # Not one of the bins asked for was made (2.4 GB for bin_ns=1).
    assert out[name]["rss_growth"] < 8 * MIB


def test_bins_within_the_output_budget_are_made(results) -> None:
    _, out = results
    completed(out["occupancy_bins_100ns"], rows=740160)
    completed(out["set_occupancy_bins_100ns"], rows=3 * 740160)


def test_gzip_bomb_is_decompressed_once(results) -> None:
    _, out = results
    res = out["gzip_bomb"]
    refused(
        res,
        "TraceFormatError",
        f"{SPACES_GZ}: line 1, column {SPACES_BYTES + 1}: empty input: expected a StepStats "
        "('dev_stats {') or a RunMetadata ('step_stats {') (in the decompressed gzip data)",
    )
    assert (res["line"], res["column"]) == (1, SPACES_BYTES + 1)
    completed(out["gzip_empty_records"], events=20 * MIB // len(TEXT_RECORD), format="text")


def test_empty_records_past_the_table_budget_are_refused(results) -> None:
    cases, out = results
    for name in ("empty_records_binary", "empty_records_binary_small"):
        res = out[name]
        size = Path(cases[name]["path"]).stat().st_size
        # Located where the parse had got to: a record's end, inside the input.
        assert 0 < res["offset"] < size and res["offset"] % 2 == 0, (name, res)
        assert res["line"] is None
        refused(
            res,
            "TraceFormatError",
            f"{cases[name]['path']}: byte offset {res['offset']}: {_budget_message(size)}",
        )
    completed(out["empty_records_binary_raised"], events=2 * MIB, format="binary")


def test_empty_text_records_are_within_the_table_budget(results) -> None:
    cases, out = results
    completed(out["empty_records_text"], events=20 * MIB // len(TEXT_RECORD), format="text")
    res = out["empty_records_text_lowered"]
    assert res["offset"] is None and res["line"] > 2 and res["column"] == 14
    refused(
        res,
        "TraceFormatError",
        f"{cases['empty_records_text_lowered']['path']}: line {res['line']}, column 14: the "
        f"tables would take more than {32 * MIB} bytes of memory (max_table_bytes); pass a "
        "larger max_table_bytes to tracecore.open to allow more",
    )


def test_devices_and_fifos_are_refused_at_once(results) -> None:
    cases, out = results
    for name, what in (("dev_zero", "a character device"), ("fifo", "a FIFO")):
        assert out[name]["errno"] == 22
        refused(
            out[name],
            "OSError",
            f"[Errno 22] not a regular file ({what}): tracecore reads regular files: "
            f"'{cases[name]['path']}'",
        )


def test_table_budget_argument_is_checked() -> None:
    import tracecore

    with pytest.raises(TypeError, match="max_table_bytes must be an int"):
        tracecore.open(tracecore.sample_path(), max_table_bytes=1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_table_bytes must be a number of bytes from 1"):
        tracecore.open(tracecore.sample_path(), max_table_bytes=0)
    t = tracecore.open(tracecore.sample_path(), max_table_bytes=2**64 - 1)
    assert len(t) == 2087


if __name__ == "__main__":
    sys.exit(_child_main(sys.argv[1]))
