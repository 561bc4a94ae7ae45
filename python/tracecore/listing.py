"""Reading the two listing formats found among TensorFlow trace dumps (``docs/names.md``).

**Shape listing** (seed 002; also what :meth:`tracecore.Trace.shape_listing` writes): one record
per line, fields separated by ``", "``::

    name, input..., output, DEVICE_TYPE, integer

* ``name``: a node name, or a GPU record's ``name:Op`` / ``edge_N_name:MEMCPYDtoH``;
* each ``input``: a shape or ``^name`` (a control input); nodes without inputs have ``(1)``,
  GPU records ``(no input)``;
* ``output``: a shape, ``(no output)`` or ``(output N bytes)`` (a copy);
* a shape is ``(`` [dtype `` ``] dims ``)``: dims joined by ``x`` (a vector ``[n]`` is ``nx1``, a
  scalar ``1x1``, an unknown dim or rank ``?``), the dtype lower-case without ``DT_`` and omitted
  for float: ``(128x224x224x3)``, ``(int32 4x1)``; ``(?)`` is an unknown input;
* ``DEVICE_TYPE`` upper-case (``GPU``, ``CPU``), then an integer (the device ordinal).

Read as columns ``name`` string, ``inputs`` list<string> (the raw fields), ``output`` string,
``device`` string, ``value`` int64.

**Name listing** (seed 004): one node name per line. Read as ``name`` string plus ``scope`` (the
name without its last component, ``""`` at the root), ``forward_scope`` and ``phase`` as defined
in :mod:`tracecore.names` (dict<string> columns, like those of ``Trace.events``).

The format is told by the first non-blank line (a shape listing has ``", "`` in it). Blank lines
are skipped; anything else that does not fit raises :class:`tracecore.TraceFormatError` with
``line`` and ``column`` (1-based) set. ``.gz`` files are decompressed transparently. The table's
schema metadata ``tracecore.listing`` is ``shape`` or ``names``.
"""

from __future__ import annotations

import bisect
import gzip
import os
import re
import zlib
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

import pyarrow as pa

from ._core import TraceFormatError
from .names import names_table

if TYPE_CHECKING:
    from .trace import Trace

_NAME = r"[A-Za-z0-9_.\-/>:]+"
_DIMS = r"(?:\d+|\?)(?:x(?:\d+|\?))*"
_SHAPE = r"\((?:no input|no output|output \d+ bytes|(?:[a-z][a-z0-9_]* )?" + _DIMS + r")\)"
_re_name = re.compile(_NAME + r"\Z")
_re_input = re.compile(r"(?:\^" + _NAME + "|" + _SHAPE + r")\Z")
_re_output = re.compile(_SHAPE + r"\Z")
_re_device = re.compile(r"[A-Z][A-Z0-9_]*\Z")
_re_value = re.compile(r"-?\d+\Z")
_re_trace = re.compile(r"\s*(?:dev_stats|step_stats|node_stats|cost_graph|partition_graphs)\b")

_SHAPE_SCHEMA = pa.schema(
    [("name", pa.string()), ("inputs", pa.list_(pa.string())), ("output", pa.string()),
     ("device", pa.string()), ("value", pa.int64())],
    metadata={"tracecore.listing": "shape"},
)


def format_shape(
    dtype: str | None, shape: Sequence[int | None] | None, unknown_rank: bool = False
) -> str:
    """A tensor description in the shape listing's notation: ``(128x64x56x56)``, ``(int32 4x1)``."""
    prefix = ""
    if dtype:
        name = dtype.removeprefix("DT_")
        name = name.removesuffix("_REF")
        name = name.lower()
        if name and not name[0].isalpha():
            name = "dt_" + name
        if name != "float":
            prefix = name + " "
    if unknown_rank or shape is None:
        dims = "?"
    else:
        sizes = ["?" if d is None or d < 0 else str(d) for d in shape]
        if len(sizes) == 0:
            sizes = ["1", "1"]
        elif len(sizes) == 1:
            sizes.append("1")
        dims = "x".join(sizes)
    return f"({prefix}{dims})"


def _error(path: str, line: int, column: int, message: str) -> TraceFormatError:
    err = TraceFormatError(f"{path}:{line}:{column}: {message}")
    err.line = line
    err.column = column
    err.offset = None
    err.path = path
    return err


def _read_text(path: str) -> str:
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as e:
            raise _error(path, 1, 1, f"corrupt or truncated gzip data ({e})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        column = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise _error(path, line, column, "not UTF-8 text: not a listing") from None


def _lines(text: str) -> Iterator[tuple[int, str]]:
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if line.strip() == "":
            continue
        yield number, line


def _bad_column(line: str, pattern: str) -> int:
    """1-based column of the first character of ``line`` not in the name alphabet."""
    for i, ch in enumerate(line):
        if not re.match(pattern, ch):
            return i + 1
    return 1


def _read_shape_listing(path: str, lines: Iterable[tuple[int, str]]) -> pa.Table:
    names: list[str] = []
    inputs: list[list[str]] = []
    outputs: list[str] = []
    devices: list[str] = []
    values: list[int] = []
    for number, line in lines:
        fields = line.split(", ")
        columns = []
        col = 1
        for field in fields:
            columns.append(col)
            col += len(field) + 2
        if len(fields) < 4:
            raise _error(path, number, len(line) + 1,
                         "expected 'name, input..., output, DEVICE, integer' "
                         f"(a shape listing line), found {len(fields)} field(s)")
        name, ins, out, device, value = fields[0], fields[1:-3], fields[-3], fields[-2], fields[-1]
        if not _re_name.match(name):
            where = _bad_column(name, r"[A-Za-z0-9_.\-/>:]") if name else 1
            raise _error(path, number, where, f"bad node name {name!r}")
        for k, field in enumerate(ins):
            if not _re_input.match(field):
                raise _error(path, number, columns[1 + k],
                             f"bad input {field!r}: expected a shape like (2x3) or ^name")
        if not _re_output.match(out):
            raise _error(path, number, columns[-3],
                         f"bad output {out!r}: expected a shape, (no output) or (output N bytes)")
        if not _re_device.match(device):
            raise _error(path, number, columns[-2], f"bad device type {device!r}")
        if not _re_value.match(value):
            raise _error(path, number, columns[-1], f"bad integer {value!r}")
        number_value = int(value)
        if not -(2**63) <= number_value < 2**63:
            raise _error(path, number, columns[-1], f"integer {value} out of range")
        names.append(name)
        inputs.append(ins)
        outputs.append(out)
        devices.append(device)
        values.append(number_value)
    return pa.table([pa.array(names, pa.string()), pa.array(inputs, pa.list_(pa.string())),
                     pa.array(outputs, pa.string()), pa.array(devices, pa.string()),
                     pa.array(values, pa.int64())], schema=_SHAPE_SCHEMA)


def _read_name_listing(path: str, lines: Iterable[tuple[int, str]]) -> pa.Table:
    names: list[str] = []
    for number, line in lines:
        if not _re_name.match(line):
            raise _error(path, number, _bad_column(line, r"[A-Za-z0-9_.\-/>:]"),
                         f"bad node name {line[:80]!r} (a name listing has one node name per line)")
        names.append(line)
    return names_table(names)


def read_listing(path: str | os.PathLike[str]) -> pa.Table:
    """Reads a shape listing or a node-name listing (see the module docstring) into a Table.

    Raises:
        TraceFormatError: the file is neither (``line`` / ``column`` say where).
        OSError: the file cannot be read.
    """
    path = os.fspath(path)
    text = _read_text(path)
    lines = list(_lines(text))
    if not lines:
        raise _error(path, 1, 1, "empty listing: no names")
    number, first = lines[0]
    if _re_trace.match(first):
        raise _error(path, number, 1, "this is a trace dump, not a listing: use tracecore.open()")
    if ", " in first:
        return _read_shape_listing(path, lines)
    return _read_name_listing(path, lines)


# -- shape listing -------------------------------------------------------------------------------
_LABEL_RE = re.compile(r"^(?P<name>.*?) = (?P<op>[^(]*)\((?P<args>.*)\)$", re.DOTALL)
_DEVICE_RE = re.compile(r"(?:^|/)(?:device:)?(?P<type>[A-Za-z_]+):(?P<ordinal>\d+)(?=/|$)")
_BYTES_RE = re.compile(r"(\d+) bytes")
_RECV_RE = re.compile(r"^(.*)/_\d+$")


def _device_type_ordinal(device: str) -> tuple[str, int]:
    found = None
    for m in _DEVICE_RE.finditer(device):
        if m.group("type").lower() not in ("job", "replica", "task", "stream"):
            found = m
    if found is None:
        return "UNKNOWN", -1
    return found.group("type").upper(), int(found.group("ordinal"))


def _parse_inputs(label: str | None) -> list[str] | None:
    if not label:
        return None
    m = _LABEL_RE.match(label)
    if m is None:
        return None
    args = m.group("args").strip()
    return [a.strip() for a in args.split(",") if a.strip()] if args else []


def shape_listing(trace: Trace) -> str:
    """Per-node shape listing in the line format of seed 002 (see ``docs/names.md``).

    One line per executor record: ``name, <input>..., <output>, <device type>, <ordinal>``. Each
    data input ``x`` / ``x:k`` of the record's label is the shape of output slot ``k`` of the
    latest record of ``x`` that started no later than this one (``(?)`` when the trace has none);
    control inputs are ``^x``; a node without inputs has the single input field ``(1)``, as in
    seed 002. The output is the lowest-slot tensor the record produced, ``(no output)`` if none.
    GPU stream and copy records (non-executor blocks, duplicates across ``stream:N``,
    ``stream:all`` and ``memcpy`` dropped) follow as ``name:Op, (no input), (no output)`` and, for
    copies, ``(output N bytes)``. Lines are sorted by name (then file order).
    """
    events = trace.events
    devices = trace.devices
    kinds = dict(
        zip(
            devices.column("device_index").to_pylist(),
            devices.column("kind").to_pylist(),
            strict=True,
        )
    )
    ev = events.select(["event_id", "device_index", "device", "node_name", "op", "timeline_label",
                        "start_ns", "end_ns"]).to_pydict()
    tensors = trace.tensors.select(
        ["event_id", "slot", "dtype", "shape", "unknown_rank"]
    ).to_pydict()

    outputs: dict[int, dict[int, str]] = {}
    for eid, slot, dtype, shape, unknown in zip(tensors["event_id"], tensors["slot"],
                                                tensors["dtype"], tensors["shape"],
                                                tensors["unknown_rank"], strict=True):
        outputs.setdefault(eid, {}).setdefault(slot, format_shape(dtype, shape, unknown))

    n = len(ev["event_id"])
    executor = [kinds.get(ev["device_index"][i]) == "executor" for i in range(n)]
    producers: dict[str, tuple[list[int], list[int]]] = {}
    for i in sorted((i for i in range(n) if executor[i]), key=lambda i: (ev["start_ns"][i], i)):
        starts, ids = producers.setdefault(ev["node_name"][i], ([], []))
        starts.append(ev["start_ns"][i])
        ids.append(ev["event_id"][i])

    def producer_outputs(name: str, at: int) -> dict[int, str] | None:
        found = producers.get(name)
        if found is None:
            return None
        starts, ids = found
        k = bisect.bisect_right(starts, at) - 1
        return outputs.get(ids[max(k, 0)], {})

    def producer_shape(name: str, slot: int, at: int) -> str:
        outs = producer_outputs(name, at)
        if outs is None:
            # ``x/_N`` is the receiving end of a partitioned edge from ``x``: when the trace has
            # no record of it, it carries x's tensor (known only when x has a single output).
            recv = _RECV_RE.match(name)
            if recv is not None:
                outs = producer_outputs(recv.group(1), at)
                if outs is not None and len(outs) == 1 and slot == 0:
                    return next(iter(outs.values()))
            return "(?)"
        return outs.get(slot, "(?)")

    lines: list[tuple[str, int, str]] = []
    seen: set[tuple[str, int, int, str, int]] = set()
    for i in range(n):
        name = ev["node_name"][i] or ""
        dev_type, ordinal = _device_type_ordinal(ev["device"][i] or "")
        tail = f"{dev_type}, {ordinal}"
        if executor[i]:
            inputs = _parse_inputs(ev["timeline_label"][i]) or []
            fields = []
            for inp in inputs:
                if inp.startswith("^"):
                    fields.append(inp)
                    continue
                src, _, slot = inp.partition(":")
                fields.append(producer_shape(src, int(slot) if slot.isdigit() else 0,
                                             ev["start_ns"][i]))
            if not fields:
                fields = ["(1)"]
            outs = outputs.get(ev["event_id"][i])
            out = outs[min(outs)] if outs else "(no output)"
            lines.append((name, i, ", ".join([name, *fields, out, tail])))
            continue
        key = (name, ev["start_ns"][i], ev["end_ns"][i], dev_type, ordinal)
        if key in seen:
            continue
        seen.add(key)
        op = ev["op"][i] or ""
        out = "(no output)"
        if op.startswith("MEMCPY"):
            m = _BYTES_RE.search(ev["timeline_label"][i] or "")
            if m:
                out = f"(output {m.group(1)} bytes)"
        lines.append((name, i, f"{name}, (no input), {out}, {tail}"))
    lines.sort(key=lambda x: (x[0], x[1]))
    return "".join(line + "\n" for _, _, line in lines)
