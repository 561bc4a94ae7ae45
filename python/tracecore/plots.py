"""Plots of a trace, written as image files (matplotlib: ``pip install 'tracecore[plot]'``).

The figures are drawn on matplotlib's Agg canvas directly (no pyplot), so plotting never opens
a window, never touches pyplot's global state and works without a display.
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

_MB = 1e6


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


def _as_strings(column: pa.ChunkedArray | pa.Array) -> list[str]:
    return [str(v) for v in column.to_pylist()]


def _step_series(table: pa.Table, allocator: str, t0_ns: int) -> tuple[np.ndarray, np.ndarray]:
    rows = table.filter(pc.equal(table["allocator"].cast(pa.string()), allocator))
    times_ms = (rows["time_ns"].to_numpy() - t0_ns) / 1e6
    level_mb = rows["bytes_in_use"].to_numpy() / _MB
    # Start from the replay's initial level 0 just before the first change.
    if len(times_ms):
        times_ms = np.concatenate([[times_ms[0]], times_ms])
        level_mb = np.concatenate([[0.0], level_mb])
    return times_ms, level_mb


def plot_memory(
    trace: Trace, path: str | os.PathLike[str], *, allocator: str | None = None
) -> Path:
    """One panel per allocator: bytes in use over time from the allocation-record replay (solid)
    and TensorFlow timeline.py's tensor-lifetime model (dashed), with both peaks marked.
    ``allocator`` limits the figure to one allocator. Returns the image path (format from its
    suffix, PNG usually)."""
    records = trace.replay(source="records")
    tensors = trace.replay(source="tensors")
    allocators = sorted(set(records.allocators) | set(tensors.allocators))
    if allocator is not None:
        if allocator not in allocators:
            raise KeyError(f"no allocator {allocator!r}; allocators: {allocators}")
        allocators = [allocator]
    else:  # allocators that never hold anything (e.g. "" for tensors without one) draw nothing
        allocators = [
            a
            for a in allocators
            if any(a in r.allocators and r.peak(a)["peak_bytes"] > 0 for r in (records, tensors))
        ]
    if not allocators:
        raise ValueError("the trace has no memory information (no allocation records or tensors)")
    t0 = trace_start_ns(trace)
    fig = _figure(8.0, 0.6 + 1.6 * len(allocators))
    from matplotlib.lines import Line2D  # after _figure, which explains a missing matplotlib

    axes = fig.subplots(len(allocators), 1, sharex=True, squeeze=False)[:, 0]
    series: tuple[tuple[MemoryReplay, Literal["-", "--"], str, str], ...] = (
        (records, "-", "C0", "allocation-record replay"),
        (tensors, "--", "C1", "timeline.py tensor model"),
    )
    for ax, name in zip(axes, allocators, strict=True):
        for replay, style, color, label in series:
            if name not in replay.allocators:
                continue
            x, y = _step_series(replay.timeline, name, t0)
            ax.step(x, y, where="post", linestyle=style, color=color, linewidth=1.0, label=label)
            peak = replay.peak(name)
            if peak["peak_bytes"] > 0:
                ax.plot(
                    [(peak["peak_time_ns"] - t0) / 1e6],
                    [peak["peak_bytes"] / _MB],
                    "o",
                    color=color,
                    markersize=3,
                )
        ax.set_title(name or "(no allocator)", fontsize=9, loc="left")
        ax.set_ylabel("MB", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(True, linewidth=0.3)
    handles = [
        Line2D([], [], linestyle=style, color=color, label=label)
        for _, style, color, label in series
    ]
    fig.legend(handles=handles, fontsize=7, loc="outside upper right", ncols=2, frameon=False)
    axes[-1].set_xlabel("time since trace start (ms)", fontsize=8)
    out = Path(path)
    fig.savefig(out)
    return out


def device_bins(trace: Trace, bin_ns: int) -> tuple[list[str], np.ndarray, int]:
    """Busy fraction per device and time bin: (device names in first-seen order, a
    devices x bins array, bin_ns). The blocks of one device (a device repeats once per step in
    multi-step dumps) are summed, capped at 1."""
    bins = trace.occupancy(bin_ns=bin_ns)
    devices = _as_strings(bins["device"])
    order = list(dict.fromkeys(devices))
    if not order:
        return [], np.zeros((0, 0)), bin_ns
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


def plot_occupancy(
    trace: Trace, path: str | os.PathLike[str], *, bin_ns: int | None = None
) -> Path:
    """A utilization timeline: one row per device, the busy fraction of each time bin as a
    colour (``bin_ns`` default: about 400 bins over the trace). Returns the image path."""
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
    ax.set_yticks(range(len(devices)))
    ax.set_yticklabels([d if len(d) <= 48 else "..." + d[-45:] for d in devices], fontsize=7)
    ax.tick_params(axis="x", labelsize=7)
    ax.set_xlabel(f"time since trace start (ms), {bin_ns / 1000:g} us bins", fontsize=8)
    bar = fig.colorbar(image, ax=ax, fraction=0.03, pad=0.01)
    bar.set_label("busy fraction", fontsize=8)
    bar.ax.tick_params(labelsize=7)
    out = Path(path)
    fig.savefig(out)
    return out
