"""The figures of ``t.plot`` (issue 25): rendered on the Agg canvas and checked on the figure
objects: axis labels and units, no offset text, titles naming the trace, peak annotations
carrying the replay's peak size and time, the step overlay and the timeline's bars."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.compute as pc
import pytest

from test_steps import _period_us, _sample, _step

tracecore = pytest.importorskip("tracecore")
pytest.importorskip("matplotlib")

from tracecore import plots  # noqa: E402

DATA = Path(__file__).resolve().parent / "data"
XSPACE = DATA / "xspace" / "tf_keras_mlp_fit.xplane.pb"
STEPS = 3


@pytest.fixture(scope="module")
def sample() -> tracecore.Trace:
    return tracecore.open(tracecore.sample_path())


@pytest.fixture(scope="module")
def xspace() -> tracecore.Trace:
    return tracecore.open(XSPACE)


@pytest.fixture(scope="module")
def multi(tmp_path_factory: pytest.TempPathFactory) -> tracecore.Trace:
    """The sample repeated STEPS times, each step shifted by make_trace.py's period."""
    from google.protobuf import text_format

    seed = _sample()
    period = _period_us(seed)
    path = tmp_path_factory.mktemp("plots") / "three_steps.pbtxt"
    path.write_text("".join(text_format.MessageToString(_step(seed, k, period))
                            for k in range(STEPS)))
    return tracecore.open(path)


def drawn(fig):
    fig.canvas.draw()
    return fig


def peak_text(t, replay, allocator: str) -> str:
    peak = replay.peak(allocator)
    t0 = plots.trace_start_ns(t)
    return (f"peak {plots.size_text(peak['peak_bytes'])} at "
            f"{(peak['peak_time_ns'] - t0) / 1e6:.3f} ms")


def panels(fig) -> dict[str, object]:
    return {ax.get_title(loc="left"): ax for ax in fig.axes}


def steps_of(ax) -> list[str]:
    return sorted(a.get_gid() for a in ax.get_children()
                  if isinstance(a.get_gid(), str) and a.get_gid().startswith("step "))


def test_byte_units_are_1000_based() -> None:
    assert [plots.byte_unit(v)[0] for v in (0, 136, 999, 1000, 64_144, 66_359_808, 2e9, 3e12)] \
        == ["B", "B", "B", "kB", "kB", "MB", "GB", "TB"]
    assert plots.byte_unit(66_359_808) == ("MB", 1e6)
    assert [plots.size_text(v) for v in (136, 3224, 66_359_808, 1.2e9)] == \
        ["136 B", "3.2 kB", "66.36 MB", "1.20 GB"]


def test_memory_panels_pick_their_unit(sample) -> None:
    fig = drawn(sample.plot.memory())
    by_name = panels(fig)
    assert list(by_name) == ["GPU_0_bfc", "cpu", "cpu_pool", "cuda_host_bfc"]
    labels = {name: ax.get_ylabel() for name, ax in by_name.items()}
    # The tensor model's cpu peak is 64.1 kB, so the cpu panel is in kB (the records' 136 B).
    assert labels == {"GPU_0_bfc": "memory (MB)", "cpu": "memory (kB)",
                      "cpu_pool": "memory (kB)", "cuda_host_bfc": "memory (MB)"}
    for ax in fig.axes:
        assert ax.yaxis.get_offset_text().get_text() == ""
        assert ax.xaxis.get_offset_text().get_text() == ""
        # The panel's largest tick is in the label's unit: between 1 and 1000 of them.
        assert 1 <= max(ax.get_ylim()) < 1000
    assert fig.axes[-1].get_xlabel() == "time since trace start (ms)"
    assert fig.get_suptitle() == "sample_lstm_step.pbtxt.gz: memory in use per allocator"
    assert "sample_lstm_step.pbtxt.gz" in sample.plot.occupancy().axes[0].get_title(loc="left")


def test_memory_peaks_carry_size_and_time(sample) -> None:
    fig = drawn(sample.plot.memory())
    records, tensors = sample.replay(), sample.replay(source="tensors")
    by_name = panels(fig)
    for name in ("GPU_0_bfc", "cpu", "cpu_pool", "cuda_host_bfc"):
        texts = {t.get_gid(): t.get_text() for t in by_name[name].texts}
        assert texts == {"peak records": peak_text(sample, records, name),
                         "peak tensors": peak_text(sample, tensors, name)}
    assert {t.get_text() for t in by_name["GPU_0_bfc"].texts} == {
        "peak 66.36 MB at 11.761 ms", "peak 77.22 MB at 11.850 ms"}
    assert {t.get_text() for t in by_name["cpu"].texts} == {
        "peak 136 B at 0.110 ms", "peak 64.1 kB at 0.122 ms"}
    assert steps_of(fig.axes[0]) == []  # one step: no overlay


def test_memory_one_allocator_and_source(sample) -> None:
    fig = drawn(sample.plot.memory("cpu", source="records"))
    (ax,) = fig.axes
    assert ax.get_title(loc="left") == "cpu" and ax.get_ylabel() == "memory (B)"
    assert [t.get_text() for t in ax.texts] == ["peak 136 B at 0.110 ms"]
    assert len(ax.get_legend_handles_labels()[0]) == 1
    with pytest.raises(KeyError, match="no allocator 'nope'"):
        sample.plot.memory("nope")
    with pytest.raises(ValueError, match="source must be one of"):
        sample.plot.memory(source="heap")


@pytest.mark.parametrize(
    ("source", "shown"),
    [("records", "peak 1.57 MB at 35.878 ms"), ("in_use", "peak 1.57 MB at 45.713 ms")],
)
def test_xspace_memory(xspace, source: str, shown: str) -> None:
    """The records reach the peak level first at 35.878 ms; the allocator-reported level
    (what ``tracecore memory`` prints for XSpace) puts it at its last reach, 45.713 ms."""
    replay = xspace.replay(source=source)
    assert replay.allocators == ["mklcpu"]
    fig = drawn(xspace.plot.memory(source=source))
    (ax,) = fig.axes
    assert ax.get_title(loc="left") == "mklcpu"
    assert ax.get_ylabel() == "memory (MB)"  # peak 1572864 B = 1.57 MB
    assert ax.yaxis.get_offset_text().get_text() == ""
    assert [t.get_text() for t in ax.texts] == [peak_text(xspace, replay, "mklcpu")]
    assert ax.texts[0].get_text() == shown
    assert fig.get_suptitle().startswith("tf_keras_mlp_fit.xplane.pb: ")


def test_xspace_memory_defaults_to_the_reported_level(xspace) -> None:
    """As ``tracecore memory`` prints for an XSpace (an XSpace has no tensor model)."""
    assert xspace.replay(source="tensors").allocators == []
    fig = drawn(xspace.plot.memory())
    assert [t.get_gid() for t in fig.axes[0].texts] == ["peak in_use"]
    assert fig.legends[0].get_texts()[0].get_text() == "level the allocator reported"
    records = drawn(xspace.plot.memory(source="records"))
    assert [t.get_gid() for t in records.axes[0].texts] == ["peak records"]


def test_multi_step_overlay(multi) -> None:
    steps = multi.step_times()
    assert steps["step"].to_pylist() == list(range(STEPS))
    memory = drawn(multi.plot.memory("GPU_0_bfc"))
    (ax,) = memory.axes
    assert steps_of(ax) == [f"step {k}" for k in range(STEPS)]
    t0 = plots.trace_start_ns(multi)
    spans = sorted((a for a in ax.patches if a.get_gid()), key=lambda a: a.get_gid())
    for span, start, end in zip(spans, steps["start_ns"].to_pylist(),
                                steps["end_ns"].to_pylist(), strict=True):
        xs = span.get_patch_transform().transform(span.get_path().vertices)[:, 0]
        assert np.isclose(min(xs), (start - t0) / 1e6) and np.isclose(max(xs), (end - t0) / 1e6)
    # The peak is the largest over the steps (step k scales the tensors by k + 1).
    tensors = multi.replay(source="tensors")
    assert peak_text(multi, tensors, "GPU_0_bfc") in [t.get_text() for t in ax.texts]
    occupancy = drawn(multi.plot.occupancy())
    lines = [a for a in occupancy.axes[0].lines if str(a.get_gid()).startswith("step ")]
    assert len(lines) == STEPS
    assert [line.get_xdata()[0] for line in lines] == pytest.approx(
        [(s - t0) / 1e6 for s in steps["start_ns"].to_pylist()])


def test_occupancy_figure(sample) -> None:
    fig = drawn(sample.plot.occupancy(bin_ns=200_000))
    ax = fig.axes[0]
    assert ax.get_xlabel() == "time since trace start (ms), 200 us bins"
    assert fig.axes[1].get_ylabel() == "busy fraction"
    assert ax.get_title(loc="left") == "sample_lstm_step.pbtxt.gz: busy fraction per device"
    assert len(ax.get_yticklabels()) == 7
    (image,) = ax.images
    names, grid, _ = plots.device_bins(sample, 200_000)
    assert np.array_equal(image.get_array(), grid)
    assert ax.xaxis.get_offset_text().get_text() == ""
    assert steps_of(ax) == []


def bars(fig) -> int:
    return sum(len(c.get_paths()) for c in fig.axes[0].collections if c.get_gid() == "events")


def test_timeline_window(sample) -> None:
    t0 = plots.trace_start_ns(sample)
    start, end = t0 + 2_000_000, t0 + 3_000_000
    fig = drawn(sample.plot.timeline(start, end))
    ax = fig.axes[0]
    expected = len(sample.window(start, end))
    assert expected == 186 and bars(fig) == expected
    assert ax.get_xlim() == pytest.approx((2.0, 3.0))
    assert ax.get_xlabel() == "time since trace start (ms)"
    assert ax.get_title(loc="left") == (
        "sample_lstm_step.pbtxt.gz: 186 events in 2.000 to 3.000 ms, by op")
    rows = [label.get_text() for label in ax.get_yticklabels()]
    assert rows[0] == "/device:GPU:0/stream:all" and "None" not in " ".join(rows)
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    ops = sample.table("events").take(sample.window(start, end))["op"]
    assert set(legend) == set(pc.unique(ops).to_pylist())  # two ops: both coloured
    same = drawn(sample.plot.timeline(window=(start, end)))
    assert bars(same) == expected
    with pytest.raises(TypeError, match="not both"):
        sample.plot.timeline(start, window=(start, end))
    with pytest.raises(ValueError, match="empty"):
        sample.plot.timeline(end, start)


def test_timeline_whole_xspace_by_kind(xspace) -> None:
    fig = drawn(xspace.plot.timeline(color_by="kind"))
    assert bars(fig) == len(xspace) == 2548
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["host_thread"]
    assert fig.axes[0].get_title(loc="left").startswith("tf_keras_mlp_fit.xplane.pb: 2548 events")
    with pytest.raises(ValueError, match="color_by"):
        xspace.plot.timeline(color_by="device")


def test_timeline_of_a_step_window(multi) -> None:
    steps = multi.step_times()
    start, end = steps["start_ns"][1].as_py(), steps["end_ns"][1].as_py()
    fig = drawn(multi.plot.timeline(start, end))
    assert bars(fig) == len(multi.window(start, end))
    # Steps 0 and 2 only touch the window at its edges, if at all; step 1 fills it.
    assert "step 1" in steps_of(fig.axes[0])
    # A device's blocks of different steps share a row.
    assert len(fig.axes[0].get_yticklabels()) <= multi.devices.num_rows // STEPS


def test_figures_are_not_saved_and_plot_memory_saves(sample, tmp_path: Path) -> None:
    fig = sample.plot.memory()
    assert type(fig).__name__ == "Figure" and fig.canvas.get_default_filetype() == "png"
    assert "sample_lstm_step.pbtxt.gz" in repr(sample.plot)
    out = plots.plot_memory(sample, tmp_path / "m.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert list(tmp_path.iterdir()) == [out]


def test_missing_matplotlib_says_how_to_install(sample, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib raises
    for draw in (sample.plot.memory, sample.plot.occupancy, sample.plot.timeline):
        with pytest.raises(ImportError, match=r"pip install 'tracecore\[plot\]'"):
            draw()
