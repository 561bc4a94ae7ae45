"""Paths as str, bytes and os.PathLike, including names that are not valid UTF-8 (a Latin-1
``café.pbtxt`` as ``os.listdir(bytes)`` returns it), through every entry point that reads:
open (plain, cached, a Parquet directory), open_many, the Dask reader and the CLI; and only
regular files are read (FIFOs and devices are refused at once)."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import tracecore

HERE = Path(__file__).resolve().parent
SEED0 = HERE / "data" / "seed000_stepstats.pbtxt"
LATIN1_NAME = b"caf\xe9.pbtxt"  # "café" in Latin-1: \xe9 alone is not UTF-8


@pytest.fixture
def latin1(tmp_path: Path) -> bytes:
    directory = os.fsencode(tmp_path / "run")
    os.mkdir(directory)
    path = os.path.join(directory, LATIN1_NAME)
    try:
        shutil.copy(SEED0, path)
    except OSError as e:  # pragma: no cover - a file system that refuses such names
        pytest.skip(f"cannot create a non-UTF-8 file name here: {e}")
    return path


def _forms(path: bytes) -> list[object]:
    text = os.fsdecode(path)  # "...caf\udce9.pbtxt": what os.listdir(str) gives
    return [path, text, Path(text)]


def test_open_takes_every_form(latin1: bytes, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("TRACECORE_CACHE_DIR", str(tmp_path / "cache"))
    want = tracecore.open(SEED0).events.to_pylist()
    for form in _forms(latin1):
        assert tracecore.open(form).events.to_pylist() == want, form
        for _ in range(2):  # the second open is a cache hit
            assert tracecore.open(form, cache=True).events.to_pylist() == want, form
    entries = [p for p in (tmp_path / "cache").iterdir() if not p.name.startswith(".")]
    assert len(entries) == 1  # one file: one cache key, whatever form named it


def test_open_refuses_what_is_not_a_path() -> None:
    with pytest.raises(TypeError, match="path must be a str, bytes or os.PathLike, not int"):
        tracecore.open(3)  # type: ignore[arg-type]


def test_parquet_directory_with_a_non_utf8_name(latin1: bytes) -> None:
    t = tracecore.open(latin1)
    out = os.path.join(os.path.dirname(latin1), b"exp\xe9")
    t.to_parquet(os.fsdecode(out))
    assert any(n.startswith(b"events.") and n.endswith(b".parquet") for n in os.listdir(out))
    for form in _forms(out):
        back = tracecore.open(form)
        assert back.events.to_pylist() == t.events.to_pylist()
        assert back.devices.num_rows == t.devices.num_rows == 7


def test_open_many_and_its_path_column(latin1: bytes) -> None:
    directory = os.path.dirname(latin1)
    shown = os.fsdecode(latin1).encode("utf-8", "surrogateescape").decode(
        "utf-8", "backslashreplace"
    )
    assert shown.endswith("caf\\xe9.pbtxt")
    for paths in ([latin1], [os.fsdecode(latin1)], directory, os.fsdecode(directory),
                  os.path.join(directory, b"*.pbtxt")):
        ts = tracecore.open_many(paths)
        traces = ts.traces
        assert traces["status"].to_pylist() == ["ok"], paths
        assert traces["n_events"].to_pylist() == [2087]
        assert traces["path"].to_pylist() == [shown]


def test_dask_reader(latin1: bytes) -> None:
    pytest.importorskip("dask.dataframe")
    from tracecore.dask import read_traces

    events = read_traces(os.path.join(os.path.dirname(latin1), b"*.pbtxt")).compute()
    assert len(events) == 2087
    assert set(events["trace_id"]) == {0}


def test_cli_prints_the_name_as_given(latin1: bytes) -> None:
    proc = subprocess.run([sys.executable, "-m", "tracecore", "info", latin1],
                          capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == b""
    assert b"file      " + latin1 + b"\n" in proc.stdout
    assert b"2087 events" in proc.stdout
    missing = latin1.replace(b"caf", b"nothere")
    proc = subprocess.run([sys.executable, "-m", "tracecore", "top", missing],
                          capture_output=True, timeout=120)
    assert proc.returncode == 1
    assert proc.stderr.startswith(b"tracecore: [Errno 2] No such file or directory: ")
    assert b"internal error" not in proc.stderr and proc.stderr.count(b"\n") == 1


# --------------------------------------------------------------------------------------------
# Only regular files are read: a FIFO would block the open until a writer comes (forever in a
# run directory), and /dev/zero would be read until the OOM killer stops it.
def test_fifos_and_devices_are_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.pbtxt"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match=r"not a regular file \(a FIFO\)") as e:
        tracecore.open(fifo)
    assert e.value.errno == errno.EINVAL and e.value.filename == str(fifo)
    with pytest.raises(OSError, match=r"not a regular file \(a character device\)"):
        tracecore.open("/dev/zero")
    with pytest.raises(OSError, match=r"not a regular file \(a FIFO\)"):
        tracecore.open(fifo, cache=True)
    # In a directory walk the FIFO is not a trace file; named on its own it is an error.
    shutil.copy(SEED0, tmp_path / "a.pbtxt")
    ts = tracecore.open_many(tmp_path)
    assert ts.traces["path"].to_pylist() == [str(tmp_path / "a.pbtxt")]
    ts = tracecore.open_many([tmp_path / "a.pbtxt", fifo])
    assert ts.traces["status"].to_pylist() == ["ok", "error"]
    assert "not a regular file (a FIFO)" in ts.traces["error"][1].as_py()
    proc = subprocess.run([sys.executable, "-m", "tracecore", "info", str(fifo)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert proc.stderr == (
        f"tracecore: [Errno 22] not a regular file (a FIFO): tracecore reads regular files: "
        f"'{fifo}'\n"
    )
