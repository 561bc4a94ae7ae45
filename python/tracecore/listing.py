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

import gzip
import os
import re
import zlib

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ._core import TraceFormatError

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


def format_shape(dtype: str | None, shape, unknown_rank: bool = False) -> str:
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


def _lines(text: str):
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


def _read_shape_listing(path: str, lines) -> pa.Table:
    names, inputs, outputs, devices, values = [], [], [], [], []
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


def _read_name_listing(path: str, lines) -> pa.Table:
    names = []
    for number, line in lines:
        if not _re_name.match(line):
            raise _error(path, number, _bad_column(line, r"[A-Za-z0-9_.\-/>:]"),
                         f"bad node name {line[:80]!r} (a name listing has one node name per line)")
        names.append(line)
    return names_table(names)


def names_table(names) -> pa.Table:
    """``name`` plus the derived ``scope``, ``forward_scope`` and ``phase`` for node names."""
    from .names import _DICT_TYPE, _OTHER, PHASES, _NameInfo

    arr = pa.array(list(names) if not isinstance(names, pa.Array) else names, pa.string())
    info = _NameInfo(arr.dictionary_encode())
    scope = pc.replace_substring_regex(info.norm, r"/?[^/]*$", "", max_replacements=1)
    phase_codes = info.gather(info.phase.astype(np.int32), _OTHER)
    phase = pa.DictionaryArray.from_arrays(pa.array(phase_codes, pa.int32()),
                                           pa.array(PHASES, pa.string()))
    table = pa.table({
        "name": arr,
        "scope": pa.chunked_array([info.encode_rows(scope)], _DICT_TYPE),
        "forward_scope": pa.chunked_array([info.encode_rows(info.forward_scope)], _DICT_TYPE),
        "phase": pa.chunked_array([phase], _DICT_TYPE),
    })
    return table.replace_schema_metadata({"tracecore.listing": "names"})


def read_listing(path) -> pa.Table:
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
