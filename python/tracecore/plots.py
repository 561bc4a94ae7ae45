"""Plots of a trace as matplotlib figures (``pip install 'tracecore[plot]'``).

``t.plot.memory()``, ``t.plot.occupancy()`` and ``t.plot.timeline(start_ns, end_ns)`` return a
:class:`matplotlib.figure.Figure` (a notebook shows it; ``fig.savefig(path)`` writes it); the
command line's ``--plot`` draws the same figures with :func:`plot_memory` and
:func:`plot_occupancy`. The figures are drawn on matplotlib's Agg canvas directly (no pyplot),
so plotting never opens a window, never touches pyplot's global state and works without a
display.

Every figure's title names the trace (its file name) and what is drawn; times are
milliseconds since the trace's first event start, as the command line prints them. A byte axis
picks its unit (B, kB, MB, GB, TB; 1000-based, as the command line's sizes) from the largest
value in its panel and names it in the axis label (``memory (kB)``), with no offset or
exponent over the axis. When the trace holds more than one step (:meth:`Trace.step_times`),
each figure marks the steps: shaded spans in the memory panels and the timeline, a line at each
step's start in the occupancy image.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

if TYPE_CHECKING:
    from .replay import MemoryReplay
    from .trace import Trace

#: Byte units of the plots' axes and of :func:`size_text`, 1000-based.
BYTE_UNITS = (("B", 1.0), ("kB", 1e3), ("MB", 1e6), ("GB", 1e9), ("TB", 1e12))

#: Line style, colour and legend label of each memory replay source.
_SOURCES: dict[str, tuple[Literal["-", "--"], str, str]] = {
    "records": ("-", "C0", "allocation-record replay"),
    "tensors": ("--", "C1", "timeline.py tensor model"),
    "in_use": ("-", "C2", "level the allocator reported"),
}


def size_text(n_bytes: float) -> str:
    """A byte count for people: 136 B, 3.2 kB, 66.36 MB, 1.20 GB."""
    n = abs(n_bytes)
    if n < 1e3:
        return f"{n_bytes:.0f} B"
    if n < 1e6:
        return f"{n_bytes / 1e3:.1f} kB"
    if n < 1e9:
        return f"{n_bytes / 1e6:.2f} MB"
    return f"{n_bytes / 1e9:.2f} GB"


def byte_unit(max_bytes: float) -> tuple[str, float]:
    """The unit a byte axis reaching ``max_bytes`` is drawn in: the largest of
    :data:`BYTE_UNITS` not above it (B for 0 and below), as (name, bytes per unit)."""
    chosen = BYTE_UNITS[0]
    for unit in BYTE_UNITS:
        if abs(max_bytes) >= unit[1]:
            chosen = unit
    return chosen


def _figure(width: float, height: float) -> Any:
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError(
            "plots need matplotlib: pip install 'tracecore[plot]' (or pip install matplotlib)"
        ) from None
    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def check_plot_path(path: str | os.PathLike[str]) -> Path:
    """Checks, before any work is done, that an image can be written to ``path``: matplotlib is
    installed, the extension is a format it writes, and the directory exists.

    Raises:
        ImportError: no matplotlib.
        ValueError: the extension is missing or not an image format matplotlib writes.
        FileNotFoundError / NotADirectoryError: where the file would go is not a directory.
    """
    from .outputs import checked_output_file

    out = Path(path)
    formats = _figure(1, 1).canvas.get_supported_filetypes()
    extension = out.suffix.lower().lstrip(".")
    if extension not in formats:
        raise ValueError(
            f"{out}: the image format comes from the file name's extension; "
            f"use one of {', '.join('.' + f for f in sorted(formats))}"
        )
    return checked_output_file(out, "the plot ")


def trace_start_ns(trace: Trace) -> int:
    """The earliest event start (the time origin of the plots and of the CLI's tables)."""
    starts = trace.table("events")["start_ns"]
    return int(pc.min(starts).as_py() or 0)


def trace_name(trace: Trace) -> str:
    """What a figure's title calls the trace: its file's name ("trace" without a source)."""
    if trace.source is None:
        return "trace"
    return Path(os.fsdecode(trace.source)).name or os.fsdecode(trace.source)


def _as_strings(column: pa.ChunkedArray | pa.Array) -> list[str]:
    return [str(v) for v in column.to_pylist()]


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.3f}"


def _plain_axes(ax: Any) -> None:
    """No offset or exponent over either axis: the unit is in the axis label."""
    for axis in (ax.xaxis, ax.yaxis):
        formatter = axis.get_major_formatter()
        if hasattr(formatter, "set_useOffset"):
            formatter.set_useOffset(False)
            formatter.set_scientific(False)


def _steps_ms(trace: Trace, t0_ns: int) -> list[tuple[int, float, float]]:
    """(step, start ms, end ms) of every step when the trace has more than one, else []."""
    from .steps import step_spans

    steps = step_spans(trace)  # no duration: it may overflow, the spans do not
    if steps.num_rows < 2:
        return []
    return [
        (int(s), (a - t0_ns) / 1e6, (b - t0_ns) / 1e6)
        for s, a, b in zip(
            steps["step"].to_pylist(),
            steps["start_ns"].to_pylist(),
            steps["end_ns"].to_pylist(),
            strict=True,
        )
    ]


def _shade_steps(ax: Any, steps: list[tuple[int, float, float]]) -> None:
    """One shaded span per step (alternating shades), ``gid`` "step N", behind the data."""
    for i, (step, start, end) in enumerate(steps):
        ax.axvspan(
            start, end, color="0.5", alpha=0.08 if i % 2 == 0 else 0.16, linewidth=0,
            zorder=0, gid=f"step {step}",
        )


def _step_series(table: pa.Table, allocator: str, t0_ns: int) -> tuple[np.ndarray, np.ndarray]:
    """Times (ms since ``t0_ns``) and bytes in use of one allocator's replay."""
    rows = table.filter(pc.equal(table["allocator"].cast(pa.string()), allocator))
    times_ms = (rows["time_ns"].to_numpy() - t0_ns) / 1e6
    level = rows["bytes_in_use"].to_numpy().astype(np.float64)
    # Start from the replay's initial level 0 just before the first change.
    if len(times_ms):
        times_ms = np.concatenate([[times_ms[0]], times_ms])
        level = np.concatenate([[0.0], level])
    return times_ms, level


def _replays(trace: Trace, source: str | None) -> dict[str, MemoryReplay]:
    """The replays a memory figure draws: ``source`` alone, else for an XSpace the level the
    allocator reported (what ``tracecore memory`` prints), for others records and tensors."""
    if source is not None:
        if source not in _SOURCES:
            raise ValueError(f"source must be one of {', '.join(map(repr, _SOURCES))}, "
                             f"not {source!r}")
        return {source: trace.replay(source=source)}
    if trace.kind == "XSpace":
        return {"in_use": trace.replay(source="in_use")}
    return {s: trace.replay(source=s) for s in ("records", "tensors")}


def memory_figure(
    trace: Trace, *, allocator: str | None = None, source: str | None = None
) -> Any:
    """One panel per allocator: bytes in use over time, each panel in its own unit, with each
    curve's peak marked and labelled with its size and time. ``source=None`` draws the
    allocation-record replay (solid) and TensorFlow timeline.py's tensor-lifetime model
    (dashed), or for an XSpace the level the allocator reported (``"in_use"``, XProf's memory
    profile, as ``tracecore memory`` prints it); ``"records"``, ``"tensors"`` or ``"in_use"``
    draws that replay alone. ``allocator`` limits the figure to one
    allocator (a ``KeyError`` names the allocators the trace has)."""
    replays = _replays(trace, source)
    allocators = sorted({a for r in replays.values() for a in r.allocators})
    if allocator is not None:
        if allocator not in allocators:
            raise KeyError(f"no allocator {allocator!r}; allocators: {allocators}")
        allocators = [allocator]
    else:  # allocators that never hold anything (e.g. "" for tensors without one) draw nothing
        allocators = [
            a
            for a in allocators
            if any(a in r.allocators and r.peak(a)["peak_bytes"] > 0 for r in replays.values())
        ]
    if not allocators:
        raise ValueError("the trace has no memory information (no allocation records or tensors)")
    t0 = trace_start_ns(trace)
    steps = _steps_ms(trace, t0)
    mid_ms = (int(pc.max(trace.table("events")["end_ns"]).as_py() or t0) - t0) / 2e6
    fig = _figure(8.0, 0.6 + 1.6 * len(allocators))
    from matplotlib.lines import Line2D  # after _figure, which explains a missing matplotlib

    axes = fig.subplots(len(allocators), 1, sharex=True, squeeze=False)[:, 0]
    for ax, name in zip(axes, allocators, strict=True):
        drawn = {s: r for s, r in replays.items() if name in r.allocators}
        top = max(int(pc.max(r.timeline.filter(pc.equal(
            r.timeline["allocator"].cast(pa.string()), name))["bytes_in_use"]).as_py() or 0)
            for r in drawn.values())
        unit, scale = byte_unit(top)
        _shade_steps(ax, steps)
        for i, (source_name, replay) in enumerate(drawn.items()):
            style, color, label = _SOURCES[source_name]
            x, y = _step_series(replay.timeline, name, t0)
            ax.step(x, y / scale, where="post", linestyle=style, color=color, linewidth=1.0,
                    label=label)
            peak = replay.peak(name)
            if peak["peak_bytes"] > 0:
                px, py = (peak["peak_time_ns"] - t0) / 1e6, peak["peak_bytes"] / scale
                ax.plot([px], [py], "o", color=color, markersize=3)
                ax.annotate(
                    f"peak {size_text(peak['peak_bytes'])} at {_ms(peak['peak_time_ns'] - t0)} ms",
                    # In the top corner away from the peak, one line per curve in its colour.
                    xy=(px, py), xytext=(0.01 if px > mid_ms else 0.99, 0.9 - 0.14 * i),
                    textcoords="axes fraction", ha="left" if px > mid_ms else "right",
                    va="top", fontsize=7, color=color, gid=f"peak {source_name}",
                    bbox={"boxstyle": "square,pad=0.1", "facecolor": "white", "alpha": 0.8,
                          "linewidth": 0},
                )
        ax.set_title(name or "(no allocator)", fontsize=9, loc="left")
        ax.set_ylabel(f"memory ({unit})", fontsize=8)
        ax.set_ylim(bottom=0)
        ax.tick_params(labelsize=7)
        ax.grid(True, linewidth=0.3)
        _plain_axes(ax)
    handles = [
        Line2D([], [], linestyle=_SOURCES[s][0], color=_SOURCES[s][1], label=_SOURCES[s][2])
        for s in replays
    ]
    fig.legend(handles=handles, fontsize=7, loc="outside upper right", ncols=2, frameon=False)
    fig.suptitle(f"{trace_name(trace)}: memory in use per allocator", fontsize=9, x=0.01,
                 ha="left")
    axes[-1].set_xlabel("time since trace start (ms)", fontsize=8)
    return fig


def plot_memory(
    trace: Trace, path: str | os.PathLike[str], *, allocator: str | None = None
) -> Path:
    """Writes :func:`memory_figure` (its default sources) to ``path`` (format from its
    suffix, PNG usually) and returns the path."""
    out = Path(path)
    memory_figure(trace, allocator=allocator).savefig(out)
    return out


def device_bins(trace: Trace, bin_ns: int) -> tuple[list[str], np.ndarray, int]:
    """Busy fraction per device and time bin: (device names in first-seen order, a
    devices x bins array, bin_ns). The blocks of one device (a device repeats once per step in
    multi-step dumps) are summed, capped at 1. The first bin starts at the trace's start; a
    device is idle in the bins outside its blocks' spans (which have no occupancy rows), and
    a device whose blocks have no events has a row of zeros."""
    bins = trace.occupancy(bin_ns=bin_ns)
    if bins.num_rows == 0:
        return [], np.zeros((0, 0)), bin_ns
    devices = _as_strings(bins["device"])
    order = list(dict.fromkeys(_as_strings(trace.devices["device"])))
    row_of = {name: i for i, name in enumerate(order)}
    starts = bins["bin_start_ns"].to_numpy()
    first = starts.min()
    cols = ((starts - first) // bin_ns).astype(np.int64)
    grid = np.zeros((len(order), int(cols.max()) + 1))
    rows = np.fromiter((row_of[d] for d in devices), dtype=np.int64, count=len(devices))
    np.add.at(grid, (rows, cols), bins["busy_ns"].to_numpy() / bin_ns)
    return order, np.minimum(grid, 1.0), bin_ns


def default_bin_ns(trace: Trace, n_bins: int = 400) -> int:
    """A bin width (a whole number of microseconds) giving about ``n_bins`` bins."""
    events = trace.table("events")
    if events.num_rows == 0:
        return 1000
    span = int(pc.max(events["end_ns"]).as_py()) - trace_start_ns(trace)
    return max(1000, -(-span // n_bins) // 1000 * 1000)


def _short_label(text: str, width: int = 48) -> str:
    return text if len(text) <= width else "..." + text[-(width - 3):]


def occupancy_figure(trace: Trace, *, bin_ns: int | None = None) -> Any:
    """A utilization timeline: one row per device, the busy fraction of each time bin as a
    colour (``bin_ns`` default: about 400 bins over the trace), a dashed line at each step's
    start in a multi-step trace."""
    if bin_ns is None:
        bin_ns = default_bin_ns(trace)
    devices, grid, bin_ns = device_bins(trace, bin_ns)
    if not devices:
        raise ValueError("the trace has no events to plot")
    fig = _figure(9.0, 0.8 + 0.28 * len(devices))
    ax = fig.subplots()
    extent_ms = grid.shape[1] * bin_ns / 1e6
    image = ax.imshow(
        grid,
        aspect="auto",
        interpolation="nearest",
        cmap="viridis",
        vmin=0.0,
        vmax=1.0,
        extent=(0.0, extent_ms, len(devices) - 0.5, -0.5),
    )
    for step, start, _ in _steps_ms(trace, trace_start_ns(trace)):
        ax.axvline(start, color="white", linestyle="--", linewidth=0.8, gid=f"step {step}")
    ax.set_yticks(range(len(devices)))
    ax.set_yticklabels([_short_label(d) for d in devices], fontsize=7)
    ax.tick_params(axis="x", labelsize=7)
    ax.set_xlabel(f"time since trace start (ms), {bin_ns / 1000:g} us bins", fontsize=8)
    ax.set_title(f"{trace_name(trace)}: busy fraction per device", fontsize=9, loc="left")
    _plain_axes(ax)
    bar = fig.colorbar(image, ax=ax, fraction=0.03, pad=0.01)
    bar.set_label("busy fraction", fontsize=8)
    bar.ax.tick_params(labelsize=7)
    return fig


def plot_occupancy(
    trace: Trace, path: str | os.PathLike[str], *, bin_ns: int | None = None
) -> Path:
    """Writes :func:`occupancy_figure` to ``path`` and returns the path."""
    out = Path(path)
    occupancy_figure(trace, bin_ns=bin_ns).savefig(out)
    return out


#: How many keys (ops or device kinds) a timeline colours; the rest are grey "other".
TIMELINE_COLORS = 10


def timeline_figure(
    trace: Trace,
    start_ns: int | None = None,
    end_ns: int | None = None,
    *,
    color_by: str = "op",
) -> Any:
    """The events active in ``[start_ns, end_ns)`` (the trace's clock, as
    :meth:`Trace.window`; default: the whole trace) as horizontal bars, one row per device and
    line (a device's blocks of different steps share a row), coloured by ``color_by``: ``"op"``
    or ``"kind"`` (``events.device_kind``). The :data:`TIMELINE_COLORS` keys with the most
    time in the window get a colour and a legend entry, the others are grey. Each row's bars
    are one collection with ``gid`` "events"."""
    if color_by not in ("op", "kind"):
        raise ValueError(f"color_by must be 'op' or 'kind', not {color_by!r}")
    events = trace.events if color_by == "kind" else trace.table("events")
    t0 = trace_start_ns(trace)
    if start_ns is None:
        start_ns = t0
    if end_ns is None:
        end_ns = int(pc.max(events["end_ns"]).as_py() or t0) + 1
    if end_ns <= start_ns:
        raise ValueError(f"the window is empty: end_ns {end_ns} <= start_ns {start_ns}")
    ids = trace.window(start_ns, end_ns)
    shown = events.take(ids)
    fig = _figure(10.0, 1.2)  # resized below for the rows
    ax = fig.subplots()
    devices = trace.table("devices")
    labels = [
        f"{d} {line}" if line else str(d)
        for d, line in zip(
            devices["device"].to_pylist(), devices["line"].to_pylist(), strict=True
        )
    ]
    block_label = np.array(labels, dtype=object)[shown["device_index"].to_numpy()]
    rows = list(dict.fromkeys(block_label.tolist()))
    keys = np.array(_as_strings(shown["op" if color_by == "op" else "device_kind"]), dtype=object)
    starts = shown["start_ns"].to_numpy()
    widths = np.maximum(shown["end_ns"].to_numpy() - starts, 0)
    # Colour the keys with the most time in the window.
    totals: dict[str, int] = {}
    for key, width in zip(keys.tolist(), widths.tolist(), strict=True):
        totals[key] = totals.get(key, 0) + width
    coloured = sorted(totals, key=lambda k: (-totals[k], k))[:TIMELINE_COLORS]
    palette = {k: f"C{i}" for i, k in enumerate(coloured)}
    colors = [palette.get(k, "0.6") for k in keys.tolist()]
    x_ms = (starts - t0) / 1e6
    w_ms = widths / 1e6
    _shade_steps(ax, [s for s in _steps_ms(trace, t0)
                      if s[1] < (end_ns - t0) / 1e6 and s[2] > (start_ns - t0) / 1e6])
    for row, label in enumerate(rows):
        sel = np.flatnonzero(block_label == label)
        ax.broken_barh(
            list(zip(x_ms[sel].tolist(), w_ms[sel].tolist(), strict=True)),
            (row - 0.4, 0.8),
            facecolors=[colors[i] for i in sel],
            linewidth=0,
            gid="events",
        )
    ax.set_xlim((start_ns - t0) / 1e6, (end_ns - t0) / 1e6)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([_short_label(r) for r in rows], fontsize=7)
    ax.tick_params(axis="x", labelsize=7)
    ax.set_xlabel("time since trace start (ms)", fontsize=8)
    ax.set_title(
        f"{trace_name(trace)}: {len(ids)} events in {_ms(start_ns - t0)} to "
        f"{_ms(end_ns - t0)} ms, by {color_by}",
        fontsize=9,
        loc="left",
    )
    _plain_axes(ax)
    if coloured:
        from matplotlib.patches import Patch

        handles = [Patch(color=palette[k], label=_short_label(k or "(none)", 32))
                   for k in coloured]
        if len(totals) > len(coloured):
            handles.append(Patch(color="0.6", label="other"))
        fig.legend(handles=handles, fontsize=7, loc="outside right", frameon=False)
    fig.set_size_inches(10.0, 1.0 + 0.25 * max(len(rows), 4))
    return fig


class TracePlots:
    """``t.plot``: the trace's figures (matplotlib, ``pip install 'tracecore[plot]'``). Each
    method returns a new :class:`matplotlib.figure.Figure`, neither saved nor shown: a notebook
    displays it, ``fig.savefig("out.png")`` writes it."""

    def __init__(self, trace: Trace) -> None:
        self._trace = trace

    def memory(self, allocator: str | None = None, *, source: str | None = None) -> Any:
        """Bytes in use per allocator over time (:func:`memory_figure`)."""
        return memory_figure(self._trace, allocator=allocator, source=source)

    def occupancy(self, bin_ns: int | None = None) -> Any:
        """Busy fraction per device and time bin (:func:`occupancy_figure`)."""
        return occupancy_figure(self._trace, bin_ns=bin_ns)

    def timeline(
        self,
        start_ns: int | None = None,
        end_ns: int | None = None,
        *,
        window: tuple[int, int] | None = None,
        color_by: str = "op",
    ) -> Any:
        """The events of a window as bars per device and line (:func:`timeline_figure`);
        ``window=(start_ns, end_ns)`` is the same as passing both bounds."""
        if window is not None:
            if start_ns is not None or end_ns is not None:
                raise TypeError("give the window as start_ns, end_ns or window=, not both")
            start_ns, end_ns = window
        return timeline_figure(self._trace, start_ns, end_ns, color_by=color_by)

    def __repr__(self) -> str:
        return f"<tracecore plots of {trace_name(self._trace)}: memory, occupancy, timeline>"
