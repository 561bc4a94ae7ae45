"""The pandas-free array helpers of tracecore._arrow give what pyarrow's own constructors give,
and the common paths (open, events, ``info``, the queries) do not import pandas (0.2 s) through
pyarrow."""

from __future__ import annotations

import subprocess
import sys
from functools import partial

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from tracecore._arrow import array, buffer_bytes, scalar, to_numpy

_DTYPES = [
    np.int8,
    np.int16,
    np.int32,
    np.int64,
    np.uint8,
    np.uint32,
    np.uint64,
    np.float32,
    np.float64,
]


@pytest.mark.parametrize("dtype", _DTYPES)
def test_array_from_numpy_matches_pa_array(dtype):
    values = (np.arange(37) * 3 - 20).astype(dtype)
    got = array(values)
    assert got.type == pa.from_numpy_dtype(np.dtype(dtype))
    assert got.equals(pa.array(values))
    strided = values[::3]  # not contiguous
    assert array(strided).equals(pa.array(strided))


def test_array_bool_mask_and_cast():
    rng = np.random.default_rng(7)
    flags = rng.random(101) < 0.4
    assert array(flags).equals(pa.array(flags))
    values = np.arange(101, dtype=np.int64)
    mask = rng.random(101) < 0.3
    expected = pa.array(values, pa.int32(), mask=mask)
    got = array(values, pa.int32(), mask=mask)
    assert got.equals(expected)
    assert got.null_count == int(mask.sum())
    assert array(values, pa.int32(), mask=np.zeros(101, dtype=bool)).equals(
        pa.array(values, pa.int32())
    )
    with pytest.raises(pa.ArrowInvalid):
        array(np.array([1 << 40]), pa.int32())  # checked like pa.array


def test_array_from_lists():
    words = ["forward", "", "bäckward", "x" * 300]
    assert array(words).equals(pa.array(words))
    assert array(tuple(words), pa.string()).equals(pa.array(words, pa.string()))
    with_none = ["a", None, "ccc", None]
    got = array(with_none, pa.string())
    assert got.equals(pa.array(with_none, pa.string()))
    assert got.null_count == 2
    assert array([3, -5, 7]).equals(pa.array([3, -5, 7]))
    assert array([], pa.string()).equals(pa.array([], pa.string()))
    assert array([], pa.int64()).equals(pa.array([], pa.int64()))
    with pytest.raises(OverflowError):  # beyond int64: pyarrow's own path, and its error
        array([1 << 70])
    assert array([True, False]).equals(pa.array([True, False]))


def _sliced(values, type, mask):
    return pa.array(values, type, mask=mask).slice(3, len(values) - 5)


@pytest.mark.parametrize("type", [pa.int32(), pa.int64(), pa.uint64(), pa.float64(), pa.bool_()])
def test_to_numpy_matches_fill_null(type):
    rng = np.random.default_rng(3)
    n = 77
    raw = rng.random(n) < 0.5 if type == pa.bool_() else rng.integers(0, 100, n)
    for mask in (None, rng.random(n) < 0.25):
        arr = _sliced(raw, type, mask)  # a non-zero offset, into the bitmaps too
        fill = False if type == pa.bool_() else 7
        expected = pc.fill_null(arr, fill).to_numpy(zero_copy_only=False)
        got = to_numpy(arr, fill)
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)
        chunked = pa.chunked_array([arr, arr.slice(5, 9), arr.slice(0, 0)])
        np.testing.assert_array_equal(
            to_numpy(chunked, fill), pc.fill_null(chunked, fill).to_numpy()
        )
    assert to_numpy(pa.chunked_array([], pa.int64()), 0).shape == (0,)


def test_to_numpy_other_types_and_nulls_without_fill():
    strings = pa.array(["a", None, "b"])
    assert list(to_numpy(strings)) == ["a", None, "b"]
    with_nulls = pa.array([1.5, None, 2.0])
    got = to_numpy(with_nulls)
    assert got[0] == 1.5 and np.isnan(got[1]) and got[2] == 2.0


def test_scalar_matches_pa_scalar():
    assert scalar("GPU_0_bfc", pa.string()).equals(pa.scalar("GPU_0_bfc", pa.string()))
    assert scalar("", pa.string()).equals(pa.scalar("", pa.string()))
    assert scalar(12, pa.int64()).equals(pa.scalar(12, pa.int64()))


_NO_PANDAS = """
import sys
import tracecore
if "pandas" in sys.modules:
    print("preloaded")
    raise SystemExit(0)
from tracecore.cli import main
t = tracecore.open(tracecore.sample_path())
assert t.events.num_rows == 2087, t.events.num_rows
assert "forward_scope" in t.events.column_names
after_events = "pandas" in sys.modules
code = main(["info", "--sample"])
after_info = "pandas" in sys.modules
assert t.scopes().num_rows > 0 and t.towers().num_rows >= 0
assert len(t.window(0, 1 << 62)) == 2087
assert t.overlaps().num_rows > 0 and t.occupancy().num_rows > 0 and t.op_stats().num_rows > 0
replay = t.replay()
replay.live_at_peak(replay.allocators[0])
print(code, after_events, after_info, "pandas" in sys.modules)
"""


def test_open_events_info_and_queries_do_not_import_pandas():
    pytest.importorskip("pandas")
    out = subprocess.run(
        [sys.executable, "-c", _NO_PANDAS], capture_output=True, text=True, check=True
    )
    last = out.stdout.strip().splitlines()[-1]
    if last == "preloaded":
        pytest.skip("this environment imports pandas with pyarrow already")
    assert last == "0 False False False", out.stdout[-2000:]


def _same_arrays(got, expected):
    assert got.type == expected.type
    assert got.equals(expected)


def _same_outcome(ours, theirs, check=_same_arrays):
    """Both calls give equal results (by ``check``), or both raise the same kind of error."""
    try:
        expected = theirs()
    except Exception as e:  # noqa: BLE001 - whatever pyarrow raises, ours must raise too
        with pytest.raises(type(e)):
            ours()
        return
    check(ours(), expected)


def test_array_agrees_with_pa_array_on_the_unusual_inputs():
    cases = [
        (np.array([1, 2, 3], dtype=">i4"), None, None),  # big-endian: not ours to read
        (["a", None], pa.dictionary(pa.int32(), pa.string()), None),
        (["a", None, "c"], pa.string(), np.array([False, False, True])),  # mask and None
        (np.array([1 << 40, 1]), pa.int32(), np.array([True, False])),  # masked overflow
        (np.array([np.nan, 2.0]), pa.int64(), np.array([True, False])),  # masked NaN
        ([], None, None),  # null type
        ([12], pa.string(), None),  # no coercion of ints to strings
        (["12"], pa.int64(), None),  # nor of strings to ints
        ([1, 2], pa.float64(), None),
        (np.array([True, False]), pa.int8(), None),
        ((), pa.string(), None),
    ]
    for values, type, mask in cases:
        _same_outcome(
            partial(array, values, type, mask=mask), partial(pa.array, values, type, mask=mask)
        )
    with pytest.raises((pa.ArrowException, TypeError, ValueError)):
        scalar(12, pa.string())


def test_to_numpy_fill_must_fit_and_views_are_read_only():
    with_nulls = pa.array([1, None, 3], pa.uint32())

    def pyarrows(fill):
        return pc.fill_null(with_nulls, fill).to_numpy()

    for fill in (-1, 1 << 40, True):
        _same_outcome(partial(to_numpy, with_nulls, fill), partial(pyarrows, fill),
                      check=np.testing.assert_array_equal)
    view = to_numpy(pa.array(np.arange(4, dtype=np.int64)))
    with pytest.raises(ValueError):
        view[0] = 99


def test_name_info_gather_with_narrow_nullable_indices():
    """Dictionary columns read back from elsewhere may have int8 indices; a null row must take
    the fill value, not wrap around onto another entry."""
    from tracecore.names import _NameInfo

    names = pa.array([f"n{i}" for i in range(150)])
    column = pa.DictionaryArray.from_arrays(pa.array([45, None, 3], pa.int8()), names)
    info = _NameInfo(column)
    assert list(info.gather(np.array([7, 8]), -1)) == [8, -1, 7]


def test_buffer_bytes_counts_each_buffer_once():
    ints = pa.array(np.arange(3, dtype=np.int64))  # 24 bytes, no validity buffer
    lists = pa.array([[1, 2], [3], None], pa.list_(pa.int64()))  # validity, 4 offsets, 3 values
    words = pa.array(["ab", "c", "ab"]).dictionary_encode()  # 3 int32 indices; the dictionary
    assert lists.buffers()[0] is not None and words.dictionary.to_pylist() == ["ab", "c"]
    list_bytes = lists.buffers()[0].size + 4 * 4 + 3 * 8
    dict_bytes = 3 * 4 + 3 * 4 + 3  # indices; the dictionary's offsets and characters
    t = pa.table({"ints": ints, "lists": lists, "words": words})
    assert buffer_bytes([t]) == 24 + list_bytes + dict_bytes
    # The same buffers again, in a second table, a second column and a slice: nothing added.
    again = pa.table({"a": ints, "b": ints, "w": words}).slice(1, 2)
    assert buffer_bytes([t, again]) == buffer_bytes([t])
    # A chunked column counts every chunk.
    chunked = pa.table({"c": pa.chunked_array([ints, pa.array(np.arange(5, dtype=np.int64))])})
    assert buffer_bytes([chunked]) == 24 + 40
    assert buffer_bytes([]) == 0


def test_buffer_bytes_counts_overlapping_buffers_and_nested_dictionaries_once():
    whole = pa.array(np.arange(100, dtype=np.int64))  # 800 bytes
    data = whole.buffers()[1]
    # A second array over bytes 400..800 of the same buffer: a different start address.
    tail = pa.Array.from_buffers(pa.int64(), 50, [None, data.slice(400, 400)])
    assert buffer_bytes([pa.table({"w": whole}), pa.table({"t": tail})]) == 800
    # A dictionary under a list: its buffers count too (buffers() does not list them).
    words = pa.array(["x" * 1000, "y"]).dictionary_encode()  # int32 indices; 3 offsets, 1001 chars
    lists = pa.ListArray.from_arrays(pa.array([0, 1, 2], pa.int32()), words)
    assert buffer_bytes([pa.table({"l": lists})]) == 3 * 4 + 2 * 4 + 3 * 4 + 1001


def test_buffer_bytes_of_a_trace():
    # tests/data/seed001_runmetadata.pbtxt at the declared column widths (docs/tables.md):
    # every table's buffers. 128,899 since issue 24, 274 bytes more: each dictionary column has
    # its own dictionary, the strings it uses, and its own int32 indices where its pool ids are
    # not 0..k-1, in place of the one string pool they all shared. (123,631
    # before devices.line, devices.line_id and events.step_id: + 2 x 4 + 2 x 8 bytes and two
    # 1-byte validity bitmaps for the 2 blocks, + 292 x 8 bytes and a 37-byte bitmap for the
    # all-null step_id of the 292 events. 128,625 since the XSpace tables and alloc_records'
    # memory columns: the all-null columns of a table share one buffer of zeros, (rows + 1) x
    # 8 bytes: 2,632 for the 328 allocation records, 2,344 for the events in place of step_id's
    # own 2,373; the empty event_stats and plane_stats hold a 4-byte offset each. 129,793 since
    # StepStats events carry their step_id: its own 292 x 8 bytes, all valid (no bitmap), and
    # the shared zeros now only as wide as the all-null int32 cat indices.)
    from pathlib import Path

    import tracecore

    t = tracecore.open(Path(__file__).parent / "data" / "seed001_runmetadata.pbtxt")
    assert buffer_bytes(t.table(name) for name in t.table_names) == 130_067
