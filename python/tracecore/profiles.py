"""Profiler and TensorBoard log directories: the XSpace profiles the TensorFlow 2 profiler, Keras
``TensorBoard(profile_batch=...)`` and ``jax.profiler.trace`` write, one
``plugins/profile/<run>/<host>.xplane.pb`` per host and profiling run, at any depth below the log
directory (``logdir/train/plugins/profile/2026_11_25_10_00_00/vm.xplane.pb``).

``tracecore.open(logdir)`` reads them as one :class:`~tracecore.TraceSet` (rank = host, step =
run), as ``open_many`` does; ``open_many`` keys profile files the same way by default.
"""

from __future__ import annotations

import os
from typing import NamedTuple

from .checks import display_path

#: How an XSpace profile's file name ends; the host name is what comes before.
PROFILE_SUFFIXES = (".xplane.pb", ".xplane.pb.gz")

#: Directories that hold one directory per profiling run: ``.../plugins/profile/<run>/``.
PROFILE_PARENTS = ("plugins", "profile")

#: What the error for a directory without profiles says about them.
PROFILE_LAYOUT = "plugins/profile/<run>/<host>.xplane.pb"


class Profile(NamedTuple):
    """An XSpace profile of a log directory: its path, host and run."""

    path: str
    host: str
    run: str


def profile_host(name: str) -> str | None:
    """The host of a profile file name (``vm.xplane.pb`` -> ``vm``); None for another name."""
    for suffix in PROFILE_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return None


def is_run_dir(directory: str) -> bool:
    """Whether ``directory`` is a profiling run's directory: ``.../plugins/profile/<run>``
    (judged on its absolute path, so ``.`` inside a run counts)."""
    parent = os.path.dirname(os.path.abspath(directory))
    grandparent = os.path.dirname(parent)
    return (os.path.basename(grandparent), os.path.basename(parent)) == PROFILE_PARENTS


def profile_keys(path: str) -> tuple[str, str] | None:
    """(host, run) of a file laid out as ``.../plugins/profile/<run>/<host>.xplane.pb[.gz]``,
    else None. Both are text (:func:`~.checks.display_path`: an undecodable byte of the name
    shows as ``\\xNN``), as the ``rank`` and ``step`` columns hold them."""
    host = profile_host(os.path.basename(path))
    run_dir = os.path.dirname(path) or "."
    if host is None or not is_run_dir(run_dir):
        return None
    return display_path(host), display_path(os.path.basename(os.path.abspath(run_dir)))


def _walk(directory: str) -> list[tuple[str, list[str]]]:
    """(directory, regular file names) below ``directory``, hidden entries skipped, sorted."""
    out = []
    for root, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        names = sorted(
            f for f in files if not f.startswith(".") and os.path.isfile(os.path.join(root, f))
        )
        out.append((root, names))
    return out


def find_profiles(directory: str) -> list[Profile]:
    """Every ``plugins/profile/<run>/<host>.xplane.pb`` (or ``.xplane.pb.gz``) at any depth
    below ``directory`` (``directory`` may itself be a run directory or ``plugins/profile``), in
    sorted path order. Hidden files and directories are skipped; only regular files count."""
    found = []
    for root, names in _walk(directory):
        if not is_run_dir(root):
            continue
        for name in names:
            host = profile_host(name)
            if host is not None:
                found.append(Profile(os.path.join(root, name), host, os.path.basename(
                    os.path.abspath(root))))
    return sorted(found)


def _files(n: int, what: str) -> str:
    return f"{n} {what}file" + ("" if n == 1 else "s")


def describe_contents(directory: str) -> str:
    """What ``directory`` holds, for the error that says it is neither a Parquet export nor a
    log directory with profiles: XSpace files outside the layout, event files, other files."""
    xplanes: list[str] = []
    events = other = 0
    for root, names in _walk(directory):
        for name in names:
            if profile_host(name) is not None:
                xplanes.append(os.path.relpath(os.path.join(root, name), directory))
            elif "tfevents" in name:
                events += 1
            else:
                other += 1
    if not (xplanes or events or other):
        return "it holds no files"
    parts = []
    if xplanes:
        xplanes.sort()
        shown = ", ".join(display_path(p) for p in xplanes[:3])
        more = f" and {len(xplanes) - 3} more" if len(xplanes) > 3 else ""
        parts.append(
            f"{_files(len(xplanes), '*.xplane.pb ')} not in a {PROFILE_LAYOUT} layout "
            f"({shown}{more}: open them with tracecore.open(file) or tracecore.open_many)"
        )
    if events:
        parts.append(
            f"{_files(events, 'TensorBoard event ')} (events.out.tfevents.*: "
            f"tracecore.open(file) reads their RunMetadata)"
        )
    if other:
        parts.append(_files(other, "other "))
    return "it holds " + "; ".join(parts)
