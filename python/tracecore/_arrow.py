"""Imports tables the native core exports through the Arrow PyCapsule interface, and builds
small arrays without pyarrow's pandas import."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def table_from_capsules(capsules: tuple[object, object]) -> pa.Table:
    """A pyarrow Table over a (arrow_schema, arrow_array) capsule pair of a struct array.

    The buffers are not copied: they stay owned by the native core until pyarrow releases them.
    """
    schema_capsule, array_capsule = capsules
    batch = pa.RecordBatch._import_from_c_capsule(schema_capsule, array_capsule)
    return pa.Table.from_batches([batch])


def array(values: Any, type: pa.DataType | None = None, mask: np.ndarray | None = None) -> pa.Array:
    """``pa.array(values, type, mask=mask)`` for 1-d numpy arrays of numbers or booleans and for
    lists (or tuples) of ints or of strings and Nones, built straight from buffers; anything else goes to ``pa.array``.

    ``pa.array`` imports pandas the first time it runs when pandas is installed: about 0.2 s,
    more than parsing a 200 MB trace, paid by the first ``Trace.events`` otherwise.
    """
    if isinstance(values, (list, tuple)):
        if not values and type is not None:
            return pa.nulls(0, type) if mask is None else pa.array(values, type, mask=mask)
        if all(v is None or isinstance(v, str) for v in values) and any(v is not None for v in values):
            if mask is None and None in values:
                mask = np.array([v is None for v in values])
            encoded = [b"" if v is None else v.encode("utf-8") for v in values]
            offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
            np.cumsum([len(b) for b in encoded], out=offsets[1:])
            if offsets[-1] < 2**31:
                data = pa.py_buffer(b"".join(encoded))
                out = pa.Array.from_buffers(pa.string(), len(encoded),
                                            [None, pa.py_buffer(offsets.astype(np.int32)), data])
                return _finish(out, type, mask)
        elif all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            try:
                values = np.asarray(values, dtype=np.int64)
            except OverflowError:
                return pa.array(values, type, mask=mask)
    if isinstance(values, np.ndarray) and values.ndim == 1 and values.dtype.kind in "biuf":
        n = len(values)
        if values.dtype.kind == "b":
            data = pa.py_buffer(np.packbits(values, bitorder="little"))
            out = pa.Array.from_buffers(pa.bool_(), n, [None, data])
        else:
            values = np.ascontiguousarray(values)
            out = pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), n, [None, pa.py_buffer(values)])
        return _finish(out, type, mask)
    return pa.array(values, type, mask=mask)


def _finish(out: pa.Array, type: pa.DataType | None, mask: np.ndarray | None) -> pa.Array:
    """`out` cast to `type` (checked, as pa.array would) with the rows of `mask` null."""
    if type is not None and out.type != type:
        out = out.cast(type)
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)
        if len(mask) != len(out):
            raise ValueError("mask and values differ in length")
        if mask.any():
            validity = pa.py_buffer(np.packbits(~mask, bitorder="little"))
            out = pa.Array.from_buffers(out.type, len(out), [validity] + out.buffers()[1:],
                                        null_count=int(mask.sum()))
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
    if not (numeric or pa.types.is_boolean(t)) or (arr.null_count and fill is None):
        if fill is not None and arr.null_count:
            arr = pc.fill_null(arr, fill)
        return arr.to_numpy(zero_copy_only=False)
    if pa.types.is_boolean(t):
        out = _bits(arr.buffers()[1], offset, n) if n else np.zeros(0, dtype=bool)
    else:
        dtype = np.dtype(t.to_pandas_dtype())
        out = (np.frombuffer(arr.buffers()[1], dtype=dtype, count=n, offset=offset * dtype.itemsize)
               if n else np.zeros(0, dtype=dtype))
    if arr.null_count:
        out = np.where(_bits(arr.buffers()[0], offset, n), out, np.asarray(fill).astype(out.dtype))
    return out


def scalar(value: Any, type: pa.DataType | None = None) -> pa.Scalar:
    """``pa.scalar(value, type)`` for an int or a string, without pyarrow's pandas import (see
    :func:`array`): compute functions given a plain Python value make one through pa.scalar."""
    return array([value], type)[0]
