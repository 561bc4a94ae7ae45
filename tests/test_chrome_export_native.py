"""The C++ Chrome JSON writer (``to_chrome_trace``'s default engine, ``_core.write_chrome_trace``)
writes the bytes of the Python writer (``engine="python"``, :func:`chrome_trace_events`): for
every sample format, a multi-step dump and a trace built to hit the escaping, label and lane
rules, with and without the memory counters and the step slices; ``.gz`` decompresses to the
same JSON."""

from __future__ import annotations

import gzip
import json
import os
import sys
from pathlib import Path

import pytest

import tracecore
from tracecore import chrome

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
SAMPLES = [
    pytest.param(None, id="sample"),
    pytest.param(DATA / "seed000_stepstats.pbtxt", id="seed000"),
    pytest.param(DATA / "seed001_runmetadata.pbtxt", id="seed001"),
    *(pytest.param(p, id=p.name) for p in sorted((DATA / "xspace").glob("*.xplane.pb"))),
    pytest.param(DATA / "chrome" / "torch_mlp_sgd.pt.trace.json", id="kineto"),
    pytest.param("multi-step", id="multi-step"),
    pytest.param("rich", id="rich"),
]
FLAGS = [
    pytest.param(True, True, id="memory+steps"),
    pytest.param(False, False, id="bare"),
    pytest.param(True, False, id="memory"),
]

# Labels and names at the edges of timeline.py's label regex `(.*) = (.*)\((.*)\)` and of
# json.dumps' ASCII escaping: several " = " and parentheses, a newline before or after the
# match, empty and trailing inputs, control characters, DEL, BMP and astral characters.
RICH_NODES = [
    ("a/MatMul", "a/MatMul = MatMul(x, w:1)", 100, 100),
    ("b/Relu", "b/Relu = Relu(a/MatMul)", 150, 100),
    ("c/Add", "c/Add = Add()", 200, 10),
    ('d/"q"\\back', "something without the usual form", 260, 10),
    ("e/größe/名前", "e = Op(b/Relu, 名前, 𝄞x)", 500, 5),
    ("f", "x = y = Op(a, (b), c) tail", 510, 5),
    ("g", "x = Op(a, b)\ny = Other(c)", 520, 5),
    ("h", "first line\nx = Op(a)", 530, 5),
    ("i", "x = Op(, a, , )", 540, 5),
    ("j", "x = (a)(b) = Op(c)", 550, 5),
    ("k", "ctrl\x01\x1f\x7f\t\r\x08\x0c end", 560, 5),
    ("l", " = (a)", 570, 5),
    ("m", "x =(a)", 580, 5),
    ("n", "x = Op)(", 590, 5),
    ("o", "", 600, 5),
    ("p\U0001f600", "p = Op(\U0001f600, \u2028)", 610, 0),
]


def _quote(s: str) -> str:
    """A protobuf text string: control characters and DEL as octal escapes."""
    out = []
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\{ord(ch):03o}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _rich_text() -> str:
    nodes = []
    for name, label, start, dur in RICH_NODES:
        nodes.append(
            "  node_stats {\n"
            f"    node_name: {_quote(name)}\n"
            f"    all_start_micros: {1_000_000 + start}\n"
            f"    all_end_rel_micros: {dur}\n"
            f"    timeline_label: {_quote(label)}\n"
            "  }\n"
        )
    return (
        "dev_stats {\n"
        '  device: "/job:w/replica:0/task:0/device:GPU:0"\n' + "".join(nodes) + "}\n"
        "dev_stats {\n"
        '  device: "/device:GPU:0/stream:7 \\"x\\""\n'
        "  node_stats {\n"
        '    node_name: "s/MatMul"\n'
        "    all_start_micros: 1000100\n"
        "    all_end_rel_micros: 50\n"
        '    timeline_label: "s/MatMul = MatMul(a)"\n'
        "  }\n"
        "}\n"
    )


@pytest.fixture(scope="module")
def paths(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("native_chrome")
    rich = root / "rich.pbtxt"
    rich.write_text(_rich_text(), encoding="utf-8")
    sys.path.insert(0, str(HERE.parent / "bench"))
    from make_trace import make_text

    multi = root / "multi.pbtxt"
    info = make_text(1, multi, steps=3)
    assert info.steps == 3
    return {"rich": rich, "multi-step": multi}


def _open(sample: Path | str | None, paths: dict[str, Path]) -> tracecore.Trace:
    if sample is None:
        return tracecore.open(tracecore.sample_path())
    if isinstance(sample, str):
        return tracecore.open(paths[sample])
    return tracecore.open(sample)


@pytest.mark.parametrize(("show_memory", "show_steps"), FLAGS)
@pytest.mark.parametrize("sample", SAMPLES)
def test_native_writer_writes_the_python_writers_bytes(
    sample: Path | str | None,
    show_memory: bool,
    show_steps: bool,
    paths: dict[str, Path],
    tmp_path: Path,
) -> None:
    t = _open(sample, paths)
    native = t.to_chrome_trace(
        tmp_path / "native.json", show_memory=show_memory, show_steps=show_steps
    )
    python = chrome.to_chrome_trace(
        t, tmp_path / "python.json", show_memory=show_memory, show_steps=show_steps,
        engine="python",
    )
    a, b = native.read_bytes(), python.read_bytes()
    assert json.loads(a) == json.loads(b)  # the same events in the same order
    assert a == b
    assert not list(tmp_path.glob(".*.tmp"))


def test_native_writer_gzip(paths: dict[str, Path], tmp_path: Path) -> None:
    t = tracecore.open(paths["multi-step"])
    native = t.to_chrome_trace(tmp_path / "native.json.gz")
    python = chrome.to_chrome_trace(t, tmp_path / "python.json", engine="python")
    data = native.read_bytes()
    assert data[:2] == b"\x1f\x8b"
    assert gzip.decompress(data) == python.read_bytes()
    assert not list(tmp_path.glob(".*.tmp"))


def test_native_writer_rich_fields(paths: dict[str, Path], tmp_path: Path) -> None:
    """Spot checks of the rich trace against what the regex and json.dumps give."""
    t = tracecore.open(paths["rich"])
    doc = json.loads(t.to_chrome_trace(tmp_path / "rich.json").read_bytes())
    xs = {e["args"]["name"]: e for e in doc["traceEvents"] if e.get("cat") == "Op"}
    inputs = {
        name: [v for k, v in sorted(e["args"].items()) if k.startswith("input")]
        for name, e in xs.items()
    }
    assert inputs["f"] == ["b)", "c"]  # greedy: the last "(" before the last ")"
    assert inputs["g"] == ["a", "b"]  # the first line only
    assert xs["h"]["args"]["label"] == "first line\nx = Op(a)"  # "." stops at the newline
    assert inputs["i"] == ["", "a", "", ""]
    assert inputs["j"] == ["c"]
    assert xs["k"]["args"]["label"] == "ctrl\x01\x1f\x7f\t\r\x08\x0c end"
    assert inputs["l"] == ["a"]  # empty name and op still match
    assert xs["m"]["args"]["label"] == "x =(a)"
    assert xs["n"]["args"]["label"] == "x = Op)("
    assert set(xs["o"]["args"]) == {"name", "op"}
    assert inputs["p\U0001f600"] == ["\U0001f600", "\u2028"]
    assert xs["p\U0001f600"]["dur"] == 0


def test_engine_is_checked(tmp_path: Path) -> None:
    t = tracecore.open(tracecore.sample_path())
    with pytest.raises(ValueError, match="engine"):
        chrome.to_chrome_trace(t, tmp_path / "x.json", engine="rust")


def test_native_writer_stream_error_removes_the_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An error raised by the gzip stream's write() (called from C++) reaches the caller and
    leaves neither the output nor the temporary file."""
    t = tracecore.open(tracecore.sample_path())
    calls = []

    def full(self: gzip.GzipFile, data: bytes) -> int:
        calls.append(len(data))
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(gzip.GzipFile, "write", full)
    with pytest.raises(OSError, match="No space left"):
        t.to_chrome_trace(tmp_path / "out.json.gz")
    assert calls
    assert list(tmp_path.iterdir()) == []


def test_native_writer_file_error_names_the_output(tmp_path: Path, monkeypatch) -> None:
    """A write error inside the C++ writer (ENOSPC: its temporary file is made a link to
    /dev/full) is an OSError naming the file, and leaves no output behind."""
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    monkeypatch.setattr(chrome.secrets, "token_hex", lambda n: "0" * (2 * n))
    t = tracecore.open(tracecore.sample_path())
    tmp = tmp_path / f".out.json.{'0' * 16}.tmp"
    tmp.symlink_to("/dev/full")
    with pytest.raises(OSError) as e:
        t.to_chrome_trace(tmp_path / "out.json")
    assert "out.json" in str(e.value)
    assert list(tmp_path.iterdir()) == []


def test_native_writers_take_any_file_name(tmp_path: Path) -> None:
    """A directory whose name is not UTF-8: both C++ writers write there, as Python's does."""
    directory = Path(os.fsdecode(bytes(tmp_path) + b"/dir\xff"))
    directory.mkdir()
    t = tracecore.open(tracecore.sample_path())
    native = t.to_chrome_trace(directory / "a.json").read_bytes()
    python = chrome.to_chrome_trace(t, directory / "b.json", engine="python").read_bytes()
    assert native == python
    assert t.to_perfetto(directory / "c.pftrace").stat().st_size > 0


def test_a_trace_read_back_from_parquet_writes_the_same_bytes(tmp_path: Path) -> None:
    t = tracecore.open(DATA / "seed001_runmetadata.pbtxt")
    stored = tracecore.open(t.to_parquet(tmp_path / "pq"))
    native = stored.to_chrome_trace(tmp_path / "stored.json").read_bytes()
    assert native == t.to_chrome_trace(tmp_path / "parsed.json").read_bytes()
    python = chrome.to_chrome_trace(stored, tmp_path / "python.json", engine="python")
    assert native == python.read_bytes()
