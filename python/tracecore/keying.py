"""Many traces as one dataset, the common ground of :mod:`.dataset` (in-process) and
:mod:`.dask` (on a cluster): which files, each file's rank and step (read from its path), clock
alignment, and each trace's tables keyed by ``trace_id, rank, step``."""

from __future__ import annotations

import glob as _glob
import os
import re
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import _core
from ._arrow import schema_from_capsule
from ._core import TraceFormatError
from .checks import PathArg, check_path
from .names import add_event_columns
from .profiles import is_run_dir, profile_host, profile_keys
from .trace import Trace

#: Columns TraceSet adds in front of every table, in this order.
KEY_COLUMNS = ("trace_id", "rank", "step")

#: Time columns of each table that clock alignment shifts (absolute ns in a Trace).
TIME_COLUMNS = {
    "events": ("start_ns", "end_ns", "op_start_ns", "op_end_ns", "scheduled_ns"),
    "alloc_records": ("time_ns",),
}

#: File name endings picked up when a directory is given (globs pick whatever they match).
TRACE_SUFFIXES = (".pbtxt", ".pb", ".txt", ".textproto", ".prototxt", ".binarypb", ".runmeta",
                  # Chrome trace JSON: PyTorch's *.pt.trace.json, timeline.py's timeline.json
                  ".trace.json", "timeline.json")

DEFAULT_RANK = r"(?:rank|worker|task|replica|process|proc)[_\-.=]?(\d+)"
DEFAULT_STEP = r"(?:global_step|step|iteration|iter)[_\-.=]?(\d+)"

_GLOB_CHARS = re.compile(r"[*?\[]")


class Member(NamedTuple):
    """A loaded trace of a set, with its keys and the clock offset alignment subtracts."""

    trace_id: int
    trace: Trace
    rank: Any
    step: Any
    offset: int


def resolve_paths(paths: PathArg | Iterable[PathArg]) -> list[str]:
    """The files named by ``paths``: a glob (``**`` recurses), a directory (every file below it
    whose name ends in one of :data:`TRACE_SUFFIXES`, optionally ``.gz``; in a profiling run's
    directory ``plugins/profile/<run>/`` only the XSpace profiles ``<host>.xplane.pb[.gz]``, not
    the tools' data the profiler may write beside them), a file, or an iterable of these. Globs
    and directories are expanded in sorted order; the result keeps input order and drops
    repeats. A plain path that does not exist is kept (it is reported as an error)."""
    items = [paths] if isinstance(paths, (str, bytes, os.PathLike)) else list(paths)
    out: list[str] = []
    for item in items:
        p = check_path(item)
        if _GLOB_CHARS.search(p) and not os.path.exists(p):
            found = sorted(f for f in _glob.glob(p, recursive=True) if os.path.isfile(f))
            if not found:
                raise ValueError(f"no files match {p!r}")
            out.extend(found)
        elif os.path.isdir(p):
            found = []
            for root, dirs, files in os.walk(p):
                dirs[:] = [d for d in dirs if not d.startswith(".")]
                run_dir = is_run_dir(root)
                for f in files:
                    name = f.removesuffix(".gz")
                    full = os.path.join(root, f)
                    wanted = profile_host(f) is not None if run_dir else name.endswith(
                        TRACE_SUFFIXES)
                    # Regular files only: a FIFO named *.pbtxt would block the open forever.
                    if not f.startswith(".") and wanted and os.path.isfile(full):
                        found.append(full)
            if not found:
                raise ValueError(f"no trace files (*{', *'.join(TRACE_SUFFIXES)}) under {p!r}")
            out.extend(sorted(found))
        else:
            out.append(p)
    if not out:
        raise ValueError("no paths given")
    return list(dict.fromkeys(out))


#: How a file's rank or step is read from its path (see :func:`tracecore.open_many`).
KeySpec = str | re.Pattern[str] | Callable[[str], Any] | None


def key_extractor(spec: KeySpec, default: str, what: str) -> Callable[[str], Any]:
    """A function path -> rank (or step) value from a regex, a compiled pattern or a callable.
    With ``spec=None``, an XSpace profile laid out as ``plugins/profile/<run>/<host>.xplane.pb``
    has its host as rank and its run as step; any other path is matched with ``default``."""
    if callable(spec) and not isinstance(spec, re.Pattern):
        return spec
    if spec is None:
        by_default = key_extractor(re.compile(default, re.IGNORECASE), default, what)
        position = 0 if what == "rank" else 1

        def extract_default(path: str) -> Any:
            keys = profile_keys(path)
            return by_default(path) if keys is None else keys[position]

        return extract_default
    elif isinstance(spec, str):
        try:
            spec = re.compile(spec)
        except re.error as e:
            raise ValueError(f"{what}: {spec!r} is not a valid regex ({e})") from None
    elif not isinstance(spec, re.Pattern):
        raise TypeError(f"{what} must be a regex or a callable(path) -> value, not {spec!r}")
    pattern = spec

    def extract(path: str) -> Any:
        # The last match wins, so a file name overrides a directory name.
        last = None
        for match in pattern.finditer(path):
            last = match
        if last is None:
            return None
        if what in pattern.groupindex:
            return last.group(what)
        return last.group(1) if pattern.groups else last.group(0)

    return extract


def normalise_keys(values: list[Any], what: str) -> tuple[list[Any], pa.DataType]:
    """int64 when every (non-null) value is an integer (or a decimal string), else string."""
    as_int: list[Any] = []
    for v in values:
        if v is None or isinstance(v, (int, np.integer)) and not isinstance(v, bool):
            as_int.append(None if v is None else int(v))
        elif isinstance(v, str) and re.fullmatch(r"[+-]?\d+", v.strip()):
            as_int.append(int(v))
        else:
            break
    else:
        return as_int, pa.int64()
    return [None if v is None else str(v) for v in values], pa.string()


def check_align(align: Any) -> Any:
    """Validates ``align`` and turns an offset table into {rank or (rank, step): offset_ns}."""
    if align is None or align == "step_start":
        return align
    if isinstance(align, str):
        raise ValueError(  # noqa: TRY004 - a str is the right type, just not a known mode
            f"align must be 'step_start', None or per-rank offsets, not {align!r}"
        )
    if isinstance(align, Mapping):
        return {k: int(v) for k, v in align.items()}
    if hasattr(align, "to_pydict") or hasattr(align, "to_dict"):
        cols = align.to_pydict() if hasattr(align, "to_pydict") else align.to_dict("list")
        if "rank" not in cols or "offset_ns" not in cols:
            raise ValueError(
                "an offset table needs columns rank and offset_ns (and optionally step)"
            )
        if "step" in cols:
            return {
                (r, s): int(o)
                for r, s, o in zip(cols["rank"], cols["step"], cols["offset_ns"], strict=True)
            }
        return {r: int(o) for r, o in zip(cols["rank"], cols["offset_ns"], strict=True)}
    raise TypeError(f"align must be 'step_start', None, a dict or a table, not {type(align)!r}")


def event_bounds(events: pa.Table) -> tuple[int, int] | None:
    """(min start, max end) of a trace's events with end clamped to start; None if no events."""
    if events.num_rows == 0:
        return None
    start = events["start_ns"]
    end = pc.max_element_wise(events["end_ns"], start)
    return pc.min(start).as_py(), pc.max(end).as_py()


def alignment_offset(trace: Trace, align: Any, rank: Any, step: Any) -> int:
    """The ns subtracted from every time of ``trace`` (``align`` as checked by check_align)."""
    if align is None:
        return 0
    if align == "step_start":
        bounds = event_bounds(trace.table("events"))
        return 0 if bounds is None else bounds[0]
    if (rank, step) in align:
        return int(align[(rank, step)])
    if rank in align:
        return int(align[rank])
    raise ValueError(f"align has no clock offset for rank {rank!r} (step {step!r})")


def keyed_table(
    table: pa.Table,
    name: str,
    trace_id: int,
    rank: Any,
    step: Any,
    offset: int,
    rank_type: pa.DataType,
    step_type: pa.DataType,
    labels: Sequence[tuple[str, Any, pa.DataType]] = (),
) -> pa.Table:
    """``table`` of one trace with trace_id, rank, step in front and its times shifted.
    ``labels``: more key columns, after step: (name, this trace's value, type)."""
    n = table.num_rows
    if offset:
        for col in TIME_COLUMNS.get(name, ()):
            i = table.schema.get_field_index(col)
            if i >= 0:
                table = table.set_column(i, col, pc.subtract_checked(table[col], offset))
    keys = [
        pa.repeat(pa.scalar(trace_id, pa.int32()), n),
        pa.repeat(pa.scalar(rank, rank_type), n),
        pa.repeat(pa.scalar(step, step_type), n),
    ]
    for pos, (col, arr) in enumerate(zip(KEY_COLUMNS, keys, strict=True)):
        table = table.add_column(pos, col, arr)
    for pos, (col, value, type_) in enumerate(labels, start=len(KEY_COLUMNS)):
        table = table.add_column(pos, col, pa.repeat(pa.scalar(value, type_), n))
    return table


_INT64 = pa.int64()


def table_schema(name: str) -> pa.Schema:
    """The schema of table ``name`` as a Trace gives it (``events`` with its derived columns),
    from the native core's table definitions: no trace is needed."""
    if name not in _core.TABLE_NAMES:
        raise KeyError(f"no table {name!r}; tables: {list(_core.TABLE_NAMES)}")
    schema = schema_from_capsule(_core.schema(name))
    if name == "events":
        devices = schema_from_capsule(_core.schema("devices")).empty_table()
        schema = add_event_columns(schema.empty_table(), devices).schema
    return schema


def empty_table(
    name: str, rank_type: pa.DataType = _INT64, step_type: pa.DataType = _INT64
) -> pa.Table:
    """An empty ``name`` table with the key columns in front (see :func:`table_schema`)."""
    base = table_schema(name).empty_table()
    return keyed_table(base, name, 0, None, None, 0, rank_type, step_type)


def trace_table(trace: Trace, name: str) -> pa.Table:
    """Table ``name`` of ``trace`` (``events`` with the name columns)."""
    return trace.events if name == "events" else trace.table(name)


def file_keys(
    files: list[str], rank: KeySpec, step: KeySpec, trace_ranks: list[Any] | None = None
) -> tuple[list[Any], pa.DataType, list[Any], pa.DataType]:
    """The rank and step of every file, and the column type of each (see
    :func:`tracecore.open_many` for ``rank`` and ``step``). ``trace_ranks``: ranks the traces
    state themselves (Kineto's ``distributedInfo``; None where not), used when ``rank`` is the
    default."""
    extract = key_extractor(rank, DEFAULT_RANK, "rank")
    stated = trace_ranks if rank is None and trace_ranks is not None else [None] * len(files)
    ranks, rank_type = normalise_keys(
        [s if s is not None else extract(f) for f, s in zip(files, stated, strict=True)], "rank"
    )
    steps, step_type = normalise_keys(
        [key_extractor(step, DEFAULT_STEP, "step")(f) for f in files], "step"
    )
    return ranks, rank_type, steps, step_type


def stated_rank(trace: Any) -> int | None:
    """The rank a trace states itself: Kineto's ``distributedInfo.rank`` (an int), else None."""
    if trace is None or trace.kind != "Kineto":
        return None
    info = trace.metadata.get("distributedInfo")
    value = info.get("rank") if isinstance(info, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


_DISTRIBUTED_RANK = re.compile(rb'"distributedInfo"\s*:\s*\{[^{}]*?"rank"\s*:\s*(-?\d+)\s*[,}]')


def head_stated_rank(path: str) -> int | None:
    """:func:`stated_rank` read from the first 64 KB of a file (decompressed when gzip), without
    parsing it: a Kineto trace's ``distributedInfo.rank`` when it comes before its events, as
    PyTorch writes it; None otherwise (or when the file cannot be read)."""
    try:
        with open(path, "rb") as f:
            head = f.read(65536)
        if head[:2] == b"\x1f\x8b":
            head = zlib.decompressobj(wbits=31).decompress(head, 65536)
    except (OSError, zlib.error):
        return None
    m = _DISTRIBUTED_RANK.search(head)
    return int(m.group(1)) if m else None


def key_order(value: Any) -> tuple[bool, Any]:
    """Sort key of a rank or step value: nulls last."""
    return (value is None, value if value is not None else 0)


def error_message(e: BaseException) -> str:
    """How a file's failure is reported: a TraceFormatError's message (it names the file and
    the place), else the exception's type and message."""
    if isinstance(e, TraceFormatError):
        return str(e)
    return f"{type(e).__name__}: {e}"
