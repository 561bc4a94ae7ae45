"""TensorBoard event files and log directories as one :class:`~.dataset.TraceSet`.

An event file holds RunMetadata (:mod:`.tfevents`): each becomes a trace of the set. A log
directory gives every event file's RunMetadata and every XSpace profile
(``plugins/profile/<run>/<host>.xplane.pb``, :mod:`.profiles`) below it. Such a set has, beside
``rank`` and ``step``, the key columns

    ``run``        the event file's or profile's run: for an event file its directory relative
                   to the log directory (``"."`` at its top), for a profile its run directory
    ``host``       a profile's host (null for RunMetadata of event files)
    ``tag``        the RunMetadata's tag (``step_3``, a summary tag; null for profiles)
    ``wall_time``  the Event's wall time, seconds (null for profiles)
    ``source``     where it was found: ``tagged_run_metadata``, ``graph_run_metadata``,
                   ``graph_run_metadata_graph`` (an event file), ``xplane`` (a profile), or
                   ``event_file`` for the error row of an event file that failed as a whole

and ``rank`` / ``step`` say who and when: a profile has rank = host and step = run (as
:func:`tracecore.open_many` keys profiles), a RunMetadata rank = run and step = its Event's
step. ``step`` is int64 when every value is an integer, else string.

An empty RunMetadata (0 bytes: Keras' TensorBoard callback writes them) holds nothing and is
left out; one with graphs but no step stats (TensorFlow 2's ``trace_export``) is a trace with
graph nodes and no events (``n_events`` 0, ``source`` says where it came from). An event file
that fails its checks (a CRC, a record, a RunMetadata that does not parse) is one ``error`` row
of :attr:`TraceSet.traces`; a truncated last record (a file still being written) is skipped
with a warning, as TensorBoard does.
"""

from __future__ import annotations

import os
import stat
import struct
import warnings
from typing import Any

import pyarrow as pa

from . import _core
from .checks import display_path
from .dataset import TraceSet, load_files
from .keying import normalise_keys
from .profiles import Profile
from .tfevents import HOW_TO_RECORD, EventTrace, add_content, describe_content, open_found
from .trace import Trace

LABELS = ("run", "host", "tag", "wall_time", "source")
_LABEL_TYPES = {"run": pa.string(), "host": pa.string(), "tag": pa.string(),
                "wall_time": pa.float64(), "source": pa.string()}


def is_event_file(path: str) -> bool:
    """Whether ``path`` starts like a TFRecord file (an event file): its first record's
    8-byte length followed by the masked CRC-32C of those 8 bytes. Judged on the content, not
    the name; a file too short or unreadable is not one."""
    try:
        # Only a regular file is read: a FIFO or a device would block or never end (open()
        # refuses them with its own error).
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False
        with open(path, "rb") as f:
            head = f.read(12)
    except OSError:
        return False
    if len(head) < 12:
        return False
    crc = int(_core.crc32c(head[:8]))
    masked = (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF
    stored: int = struct.unpack("<I", head[8:12])[0]
    return stored == masked


def event_files_below(directory: str) -> list[str]:
    """Every event file (a regular file whose name holds ``tfevents``, as TensorBoard finds
    them) below ``directory``, hidden entries skipped, in sorted path order."""
    found = []
    for root, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            path = os.path.join(root, name)
            if "tfevents" in name and not name.startswith(".") and os.path.isfile(path):
                found.append(path)
    return sorted(found)


class _Members:
    """The traces of a log-directory set as they are found, with their keys."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        self.traces: list[Trace | None] = []
        self.errors: list[BaseException | None] = []
        self.sizes: list[int | None] = []
        self.ranks: list[Any] = []
        self.steps: list[Any] = []
        self.labels: dict[str, list[Any]] = {name: [] for name in LABELS}

    def add(self, path: str, trace: Trace | None, error: BaseException | None, size: int | None,
            rank: Any, step: Any, **labels: Any) -> None:
        self.paths.append(path)
        self.traces.append(trace)
        self.errors.append(error)
        self.sizes.append(size)
        self.ranks.append(rank)
        self.steps.append(step)
        for name in LABELS:
            self.labels[name].append(labels.get(name))

    def trace_set(self) -> TraceSet:
        ranks, rank_type = normalise_keys(self.ranks, "rank")
        steps, step_type = normalise_keys(self.steps, "step")
        return TraceSet(self.paths, self.traces, self.errors, ranks, steps, rank_type, step_type,
                        "step_start", sizes=self.sizes,
                        labels={n: (v, _LABEL_TYPES[n]) for n, v in self.labels.items()})


def _run_of(path: str, root: str) -> str:
    """An event file's run: its directory relative to the log directory ``root``, as text
    (what :func:`~.tfevents.open_found` gives its RunMetadata, for a file that failed)."""
    run = os.path.relpath(os.path.dirname(os.path.abspath(path)), os.path.abspath(root))
    return display_path(run.replace(os.sep, "/"))


def _add_found(members: _Members, path: str, found: list[EventTrace], scan: dict[str, Any]) -> None:
    """The RunMetadata of one event file that opened (the empty ones left out), its scan's
    warnings raised as Python warnings (shown at the caller of tracecore.open)."""
    for what in scan["warnings"]:
        warnings.warn(f"{display_path(path)}: byte offset {what[0]}: {what[1]}", stacklevel=4)
    for t in found:
        if t.trace is not None:
            run = display_path(t.run)
            members.add(path, t.trace, None, t.trace.stats["bytes"], run, t.step, run=run,
                        tag=t.tag, wall_time=t.wall_time, source=t.source)


def open_event_file_set(path: str, *, threads: int = 0) -> TraceSet:
    """Every RunMetadata of the event file ``path`` as a TraceSet (run ``"."``).

    Raises:
        TraceFormatError: the file fails its checks, or holds no RunMetadata (the message says
            what it holds instead and how to record a trace).
    """
    found, scan = open_found(path, True, threads, None)
    members = _Members()
    _add_found(members, path, found, scan)
    if not members.paths:
        held = (f"only empty RunMetadata ({len(found)})" if found
                else describe_content(scan["content"]))
        raise _core.TraceFormatError(
            f"{display_path(path)}: an event file with no RunMetadata to read: it holds {held}. "
            f"{HOW_TO_RECORD}")
    return members.trace_set()


def open_log_directory(
    root: str, profiles: list[Profile], event_files: list[str], *, format: str, threads: int,
    cache: bool,
) -> TraceSet:
    """The TraceSet of a log directory's event files and profiles (see the module's doc).

    Raises:
        TraceFormatError: neither a profile nor a RunMetadata below ``root`` (the message says
            what the event files hold and how to record a trace).
    """
    members = _Members()
    n_found = 0  # RunMetadata of the event files, empty ones included
    totals: dict[str, Any] = {}  # what the event files hold, for the error without any
    for path in event_files:
        try:
            found, scan = open_found(path, True, threads, root)
        except Exception as e:  # noqa: BLE001 - one bad file must not abort the others
            run = _run_of(path, root)
            members.add(path, None, e, None, run, None, run=run, source="event_file")
            continue
        _add_found(members, path, found, scan)
        n_found += len(found)
        add_content(totals, scan["content"])
    loaded = load_files([p.path for p in profiles], threads=threads, strict=False,
                        format=format, cache=cache)
    for p, (trace, error, size) in zip(profiles, loaded, strict=True):
        host, run = display_path(p.host), display_path(p.run)
        members.add(p.path, trace, error, size, host, run, run=run, host=host, source="xplane")
    if not members.paths:
        held = (f"only empty RunMetadata ({n_found})" if n_found else describe_content(totals))
        raise _core.TraceFormatError(
            f"{display_path(root)}: no profile ({len(profiles)}) and no RunMetadata in its "
            f"{len(event_files)} event files, which hold {held}. {HOW_TO_RECORD}")
    return members.trace_set()


__all__ = ["LABELS", "EventTrace", "event_files_below", "is_event_file", "open_event_file_set",
           "open_log_directory"]
