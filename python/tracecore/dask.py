"""Parsing many traces on a Dask cluster (optional extra: ``pip install tracecore[dask]``).

    import tracecore.dask
    events = tracecore.dask.read_traces("s3-or-shared-fs/run/rank*/step*.pbtxt")   # lazy
    events.groupby("rank").duration_ns.sum().compute()

One partition per file; each file is parsed by :func:`tracecore.open` inside the worker that
runs the partition, so only the (much smaller) tables travel. The paths must be readable by the
workers (a shared file system); globs are expanded on the client.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from . import _core
from .checks import PathArg, display_path
from .keying import (
    KeySpec,
    alignment_offset,
    check_align,
    empty_table,
    error_message,
    file_keys,
    head_stated_rank,
    keyed_table,
    resolve_paths,
)
from .opening import open_trace as _open_trace
from .opening import sample_path

if TYPE_CHECKING:
    import dask.dataframe as dd
    import pandas as pd

    from .trace import Trace

#: A query run on each trace in the worker (``table=`` a callable).
TableQuery = Callable[["Trace"], pa.Table]

#: ``table="traces"`` gives one row per file with these columns (status and error per file).
TRACES_SCHEMA = pa.schema(
    [
        ("path", pa.string()),
        ("trace_id", pa.int32()),
        ("size", pa.int64()),
        ("kind", pa.string()),
        ("n_events", pa.int64()),
        ("offset_ns", pa.int64()),
        ("status", pa.string()),
        ("error", pa.string()),
    ]
)


def _to_pandas(table: pa.Table) -> pd.DataFrame:
    """pandas with Arrow-backed dtypes, so that every partition has exactly the meta's dtypes
    (nullable ints stay int64, dictionaries become strings)."""
    import pandas as pd

    cols = []
    for field, col in zip(table.schema, table.columns, strict=True):
        if pa.types.is_dictionary(field.type):
            col = pc.cast(col, field.type.value_type)
        cols.append(col)
    table = pa.table(cols, names=table.column_names)
    return table.to_pandas(types_mapper=pd.ArrowDtype, ignore_metadata=True)


def _keyed_names(table: pa.Table) -> set[str]:
    return set(table.column_names) | {"trace_id", "rank", "step"}


def _project(table: pa.Table, columns: list[str] | None, keep_missing: bool = False) -> pa.Table:
    """``table`` with only ``columns`` (in that order); with ``keep_missing``, names it does not
    have (the key columns added later) are skipped."""
    if columns is None:
        return table
    if keep_missing:
        return table.select([c for c in columns if c in table.column_names])
    return table.select(list(columns))


class _Partition:
    """Loads one file into one pandas partition (picklable: sent to the workers)."""

    def __init__(
        self,
        table: str | TableQuery,
        align: Any,
        rank_type: pa.DataType,
        step_type: pa.DataType,
        strict: bool,
        format: str,
        meta_table: pa.Table,
    ) -> None:
        self.table = table
        self.align = align
        self.rank_type = rank_type
        self.step_type = step_type
        self.strict = strict
        self.format = format
        self.meta_table = meta_table

    def __call__(
        self, item: tuple[int, str, Any, Any], columns: list[str] | None = None
    ) -> pd.DataFrame:
        # ``columns``: dask's column projection (only the columns a computation uses).
        trace_id, path, rank, step = item
        try:
            trace = _open_trace(path, format=self.format, threads=1)
        except Exception as e:  # reported, or raised when strict
            if self.table == "traces":
                result = self._listing(trace_id, path, rank, step, None, e)
                return _to_pandas(_project(result, columns))
            if self.strict:
                raise
            return _to_pandas(_project(self.meta_table, columns))
        offset = alignment_offset(trace, self.align, rank, step)
        if self.table == "traces":
            result = self._listing(trace_id, path, rank, step, trace, None, offset)
        elif callable(self.table):
            result = keyed_table(
                self.table(trace), "", trace_id, rank, step, 0, self.rank_type, self.step_type
            )
        else:
            base = trace.table(self.table)
            if self.table == "events" and (
                columns is None or not set(columns) <= _keyed_names(base)
            ):
                base = trace.events  # with the name-derived columns, only when they are used
            result = keyed_table(
                _project(base, columns, keep_missing=True),
                self.table,
                trace_id,
                rank,
                step,
                offset,
                self.rank_type,
                self.step_type,
            )
        result = _project(result, columns)
        return _to_pandas(result.cast(_project(self.meta_table, columns).schema))

    def _listing(
        self,
        trace_id: int,
        path: str,
        rank: Any,
        step: Any,
        trace: Trace | None,
        error: BaseException | None,
        offset: int | None = None,
    ) -> pa.Table:
        try:
            size = os.stat(path).st_size
        except OSError:
            size = None
        row = {
            "path": display_path(path),
            "trace_id": trace_id,
            "size": size,
            "kind": None if trace is None else trace.kind,
            "n_events": None if trace is None else len(trace),
            "offset_ns": offset,
            "status": "ok" if trace is not None else "error",
            "error": None if error is None else error_message(error),
        }
        table = pa.Table.from_pylist([row], schema=TRACES_SCHEMA)
        return keyed_table(
            table.drop_columns(["trace_id"]),
            "",
            trace_id,
            rank,
            step,
            0,
            self.rank_type,
            self.step_type,
        ).select(self.meta_table.column_names)


def read_traces(
    paths: PathArg | Iterable[PathArg],
    table: str | TableQuery = "events",
    *,
    rank: KeySpec = None,
    step: KeySpec = None,
    align: Any = "step_start",
    strict: bool = True,
    format: str = "auto",
) -> dd.DataFrame:
    """A lazy ``dask.dataframe`` of one table of many traces, one partition per file.

    Args:
        paths: a glob, directory, file or list of them (expanded on the client, in the same order
            as :func:`tracecore.open_many`, so ``trace_id`` values agree).
        table: a table name (``"events"``, ``"tensors"``, ...), ``"traces"`` (one row per file:
            ``trace_id, rank, step, path, size, kind, n_events, offset_ns, status, error``; a file
            that fails to parse gives ``status="error"``), or a callable ``trace -> pyarrow.Table``
            run in the worker (e.g. ``lambda t: t.op_stats("op")``; times in its result are not
            aligned).
        rank, step, align: as in :func:`tracecore.open_many` (read from the path on the client;
            a Kineto trace's ``distributedInfo.rank`` from the first 64 KB of its file).
        strict: a file that fails to parse raises in the worker (default); with ``strict=False``
            it gives an empty partition (find such files with ``table="traces"``).

    Returns a ``dask.dataframe.DataFrame`` with ``trace_id, rank, step`` in front. Columns use
    pandas' Arrow-backed dtypes; dictionary (categorical) columns become strings.
    """
    import dask.dataframe as dd

    align = check_align(align)
    files = resolve_paths(paths)
    # The client reads no trace: a Kineto trace's own rank is found in its first 64 KB.
    stated = [head_stated_rank(f) for f in files] if rank is None else None
    ranks, rank_type, steps, step_type = file_keys(files, rank, step, stated)

    if table == "traces":
        meta_table = keyed_table(
            TRACES_SCHEMA.empty_table().drop_columns(["trace_id"]),
            "",
            0,
            None,
            None,
            0,
            rank_type,
            step_type,
        )
    elif callable(table):
        # The schema of what the callable returns is known only by running it.
        sample = keyed_table(
            table(_open_trace(sample_path(), threads=1)), "", 0, None, None, 0, rank_type, step_type
        )
        meta_table = sample.schema.empty_table()
    elif table in _core.TABLE_NAMES:
        meta_table = empty_table(table, rank_type, step_type)
    else:
        raise ValueError(
            f"table must be one of {list(_core.TABLE_NAMES)}, 'traces' or a callable, not {table!r}"
        )
    items = [(i, f, r, s) for i, (f, r, s) in enumerate(zip(files, ranks, steps, strict=True))]
    load = _Partition(table, align, rank_type, step_type, strict, format, meta_table)
    label = table if isinstance(table, str) else getattr(table, "__name__", "query")
    frame: dd.DataFrame = dd.from_map(  # type: ignore[no-untyped-call]
        load, items, meta=_to_pandas(meta_table), label=f"tracecore-{label}", enforce_metadata=False
    )
    return frame
