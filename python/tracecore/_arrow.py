"""Imports tables the native core exports through the Arrow PyCapsule interface, and builds
small arrays without pyarrow's pandas import."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .intervals import union_length


class _Capsules:
    """An (arrow_schema, arrow_array) capsule pair behind the Arrow PyCapsule interface
    (``__arrow_c_array__``), for pyarrow's public import (``pa.record_batch``)."""

    def __init__(self, capsules: tuple[object, object]) -> None:
        self._capsules: tuple[object, object] | None = capsules

    def __arrow_c_array__(self, requested_schema: object = None) -> tuple[object, object]:
        if requested_schema is not None:
            raise NotImplementedError("the native core's tables are imported with their own schema")
        if self._capsules is None:
            raise RuntimeError("these capsules were imported already")
        capsules, self._capsules = self._capsules, None
        return capsules


class _SchemaCapsule:
    """An arrow_schema capsule behind ``__arrow_c_schema__``, for ``pa.schema``."""

    def __init__(self, capsule: object) -> None:
        self._capsule = capsule

    def __arrow_c_schema__(self) -> object:
        return self._capsule


def table_from_capsules(capsules: tuple[object, object]) -> pa.Table:
    """A pyarrow Table over a (arrow_schema, arrow_array) capsule pair of a struct array,
    imported through the Arrow PyCapsule interface.

    The buffers are not copied: they stay owned by the native core until pyarrow releases them.
    """
    return pa.Table.from_batches([pa.record_batch(_Capsules(capsules))])


def schema_from_capsule(capsule: object) -> pa.Schema:
    """A pyarrow Schema from an arrow_schema PyCapsule."""
    return pa.schema(_SchemaCapsule(capsule))


def _pandas_type(type: pa.DataType) -> Any:
    """The pandas dtype :func:`to_pandas` gives a column of Arrow type ``type``; None for
    pyarrow's default (a dictionary column becomes a Categorical)."""
    import pandas as pd

    if pa.types.is_integer(type) or pa.types.is_boolean(type):
        return pd.ArrowDtype(type)
    return None


def to_pandas(table: pa.Table) -> Any:
    """``table`` as a pandas DataFrame without loss: integer and boolean columns become
    Arrow-backed dtypes (``int64[pyarrow]``...), so a column with nulls keeps its exact values
    instead of turning into float64 (which rounds past 2^53: nanosecond times lose up to
    128 ns); dictionary columns become Categoricals whose categories are the column's values;
    other columns convert as pyarrow's ``Table.to_pandas()`` does. (``table.to_pandas(
    types_mapper=pd.ArrowDtype)`` keeps every column Arrow-backed, dictionaries included.)"""
    return table.to_pandas(types_mapper=_pandas_type)


def buffer_bytes(tables: Iterable[pa.Table]) -> int:
    """Bytes of the memory behind ``tables``: the union of the address ranges of every buffer
    of every chunk, children and dictionaries (at any depth) included, so memory that several
    columns, tables or slices share counts once. What the tables hold, unlike
    ``Table.nbytes``, which counts a dictionary shared by several columns once per column."""
    starts: list[int] = []
    ends: list[int] = []
    stack: list[pa.Array] = [
        chunk for table in tables for column in table.columns for chunk in column.chunks
    ]
    while stack:
        array = stack.pop()
        # buffers() lists the children's buffers too, but not the dictionaries under them
        for b in array.buffers():
            if b is not None and b.size:
                starts.append(b.address)
                ends.append(b.address + b.size)
        stack.extend(_dictionaries(array))
    # Address ranges are intervals like any other (user-space addresses fit int64).
    return union_length(starts, ends)


def _dictionaries(array: pa.Array) -> list[pa.Array]:
    """The dictionaries of ``array`` and of its children, nearest first (not under them)."""
    found: list[pa.Array] = []
    stack = [array]
    while stack:
        a = stack.pop()
        t = a.type
        if pa.types.is_dictionary(t):
            found.append(a.dictionary)
        elif isinstance(a, pa.StructArray):
            stack.extend(a.field(i) for i in range(t.num_fields))
        elif isinstance(a, (pa.ListArray, pa.LargeListArray, pa.FixedSizeListArray, pa.MapArray)):
            stack.append(a.values)
    return found


def _numeric(type: pa.DataType | None) -> bool:
    return type is None or pa.types.is_integer(type) or pa.types.is_floating(type)


def _text(type: pa.DataType | None) -> bool:
    return type is None or pa.types.is_string(type) or pa.types.is_large_string(type)


def array(values: Any, type: pa.DataType | None = None, mask: np.ndarray | None = None) -> pa.Array:
    """``pa.array(values, type, mask=mask)`` built straight from buffers for native-order 1-d
    numpy arrays of numbers or booleans and for lists (or tuples) of ints or of strings and
    Nones, asked for as numbers or strings; anything else goes to ``pa.array`` itself.

    ``pa.array`` imports pandas the first time it runs when pandas is installed: about 0.2 s,
    more than parsing a 200 MB trace, paid by the first ``Trace.events`` otherwise.
    """
    if isinstance(values, (list, tuple)):
        if not values:
            plain = type is not None and (_numeric(type) or _text(type))
            return (
                pa.nulls(0, type) if plain and mask is None else pa.array(values, type, mask=mask)
            )
        if _text(type) and all(v is None or isinstance(v, str) for v in values):
            nones = np.array([v is None for v in values])
            if nones.all():
                return pa.array(values, type, mask=mask)
            if nones.any():
                mask = nones if mask is None else nones | np.asarray(mask, dtype=bool)
            encoded = [b"" if v is None else v.encode("utf-8") for v in values]
            offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
            np.cumsum([len(b) for b in encoded], out=offsets[1:])
            if offsets[-1] >= 2**31:
                return pa.array(values, type, mask=mask)
            data = pa.py_buffer(b"".join(encoded))
            out = pa.Array.from_buffers(pa.string(), len(encoded),
                                        [None, pa.py_buffer(offsets.astype(np.int32)), data])
            return _finish(out, type, mask)
        if not (
            _numeric(type) and all(isinstance(v, int) and not isinstance(v, bool) for v in values)
        ):
            return pa.array(values, type, mask=mask)
        try:
            values = np.asarray(values, dtype=np.int64)
        except OverflowError:
            return pa.array(values, type, mask=mask)
    if (isinstance(values, np.ndarray) and values.ndim == 1 and values.dtype.isnative
            and ((values.dtype.kind == "b" and type in (None, pa.bool_()))
                 or (values.dtype.kind in "iuf" and _numeric(type)))):
        n = len(values)
        if values.dtype.kind == "b":
            data = pa.py_buffer(np.packbits(values, bitorder="little"))
            out = pa.Array.from_buffers(pa.bool_(), n, [None, data])
        else:
            values = np.ascontiguousarray(values)
            out = pa.Array.from_buffers(
                pa.from_numpy_dtype(values.dtype), n, [None, pa.py_buffer(values)]
            )
        return _finish(out, type, mask)
    return pa.array(values, type, mask=mask)


def _finish(out: pa.Array, type: pa.DataType | None, mask: np.ndarray | None) -> pa.Array:
    """`out` with the rows of `mask` null, then cast to `type` (checked, as pa.array would, on
    the rows that are not null)."""
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)
        if mask.shape != (len(out),):
            raise ValueError("mask and values differ in length")
        if mask.any():
            validity = pa.py_buffer(np.packbits(~mask, bitorder="little"))
            out = pa.Array.from_buffers(out.type, len(out), [validity] + out.buffers()[1:],
                                        null_count=int(mask.sum()))
    if type is not None and out.type != type:
        out = out.cast(type)
    return out


def _bits(buf: pa.Buffer, offset: int, n: int) -> np.ndarray:
    """Bits [offset, offset + n) of a bitmap (Arrow's LSB-first order) as a bool array."""
    raw = np.frombuffer(buf, dtype=np.uint8, count=(offset + n + 7) // 8)
    return np.unpackbits(raw, bitorder="little", count=offset + n)[offset:].view(bool)


def to_numpy(arr: pa.Array | pa.ChunkedArray, fill: Any = None) -> np.ndarray:
    """``arr`` as a numpy array, nulls replaced by ``fill`` when given. Numeric and boolean
    columns are read from their buffers (a view when possible) without pyarrow's pandas import
    (see :func:`array`); other types, and nulls without a ``fill``, go through pyarrow."""
    if isinstance(arr, pa.ChunkedArray):
        parts = [to_numpy(c, fill) for c in arr.chunks]
        if len(parts) == 1:
            return parts[0]
        return np.concatenate(parts) if parts else to_numpy(pa.nulls(0, arr.type), fill)
    t, n, offset = arr.type, len(arr), arr.offset
    numeric = pa.types.is_integer(t) or pa.types.is_floating(t)
    dtype = (
        np.dtype(bool)
        if pa.types.is_boolean(t)
        else np.dtype(t.to_pandas_dtype())
        if numeric
        else None
    )
    if dtype is None or (arr.null_count and not _fits(fill, dtype)):
        if fill is not None and arr.null_count:
            arr = pc.fill_null(arr, fill)
        converted: np.ndarray = arr.to_numpy(zero_copy_only=False)
        return converted
    if n == 0:
        return np.zeros(0, dtype=dtype)
    if dtype.kind == "b":
        out = _bits(arr.buffers()[1], offset, n)
    else:
        out = np.frombuffer(arr.buffers()[1], dtype=dtype, count=n, offset=offset * dtype.itemsize)
        out.flags.writeable = False  # a view of the Arrow buffer, like pyarrow's own
    if arr.null_count:
        out = np.where(_bits(arr.buffers()[0], offset, n), out, np.array(fill, dtype=dtype))
    return out


def _fits(fill: Any, dtype: np.dtype) -> bool:
    """Whether ``fill`` is a value of ``dtype`` as pc.fill_null would accept it."""
    if isinstance(fill, (bool, np.bool_)):
        return dtype.kind == "b"
    if isinstance(fill, (int, np.integer)):
        if dtype.kind in "iu":
            info = np.iinfo(dtype)
            return bool(info.min <= fill <= info.max)
        return dtype.kind == "f"
    return isinstance(fill, (float, np.floating)) and dtype.kind == "f"


def scalar(value: Any, type: pa.DataType | None = None) -> pa.Scalar:
    """``pa.scalar(value, type)`` for an int or a string, without pyarrow's pandas import (see
    :func:`array`): compute functions given a plain Python value make one through pa.scalar."""
    return array([value], type)[0]


def checked_aggregate(
    table: pa.Table, keys: list[str], aggregations: list[tuple[str, str]]
) -> pa.Table:
    """``table.group_by(keys).aggregate(aggregations)`` whose integer ``"sum"`` aggregations are
    checked: Arrow's hash sum wraps around int64 silently, so each such column is also summed
    as its high and low 32-bit halves (sums that cannot wrap below 2^31 rows) and a group whose
    exact sum does not fit int64 raises OverflowError naming the column."""
    checked = [
        c for c, fn in aggregations
        if fn == "sum" and pa.types.is_integer(table.schema.field(c).type)
    ]
    extra: list[tuple[str, str]] = []
    for c in checked:
        x = pc.cast(table[c], pa.int64())
        table = table.append_column(f"__hi_{c}", pc.shift_right(x, 32))
        table = table.append_column(f"__lo_{c}", pc.bit_wise_and(x, 0xFFFFFFFF))
        extra += [(f"__hi_{c}", "sum"), (f"__lo_{c}", "sum")]
    agg = table.group_by(keys, use_threads=False).aggregate(aggregations + extra)
    for c in checked:
        hi = agg[f"__hi_{c}_sum"].to_pylist()
        lo = agg[f"__lo_{c}_sum"].to_pylist()
        for h, low in zip(hi, lo, strict=True):
            if h is not None and not -(1 << 63) <= (h << 32) + low < (1 << 63):
                raise OverflowError(f"{c} sum overflows int64")
    return agg.drop_columns([f"{name}_sum" for name, _ in extra])
