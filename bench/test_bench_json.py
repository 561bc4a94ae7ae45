"""json_throughput.py's simdjson rows, on a small generated Kineto trace (make_kineto.py).

    pytest bench/test_bench_json.py

Skipped without pysimdjson. Each figure is checked for what it must be: the events counted
from simdjson's document equal json's count, times and peak RSS are positive.
"""

from __future__ import annotations

import json
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

BENCH_DIR = Path(__file__).resolve().parent
if str(BENCH_DIR) not in sys.path:
    sys.path.insert(0, str(BENCH_DIR))

import json_throughput as jt  # noqa: E402
import make_kineto  # noqa: E402

simdjson = pytest.importorskip("simdjson")


@pytest.fixture(scope="module")
def kineto(tmp_path_factory) -> tuple[str, int]:
    path = tmp_path_factory.mktemp("kineto") / "k.pt.trace.json"
    make_kineto.make_kineto(0.1, path)
    return str(path), len(json.loads(path.read_bytes())["traceEvents"])


def _check(r: dict, events: int) -> None:
    assert "error" not in r, r
    assert r["events"] == events
    assert r["seconds"] > 0 and r["cpu_seconds"] > 0
    assert r["peak_rss_kib"] > 0 and r["peak_rss_kib"] >= r["baseline_rss_kib"] > 0


def test_simdjson_parse_child(kineto):
    path, events = kineto
    r = jt._child_simdjson_parse({"path": path, "warm": 2})
    _check(r, events)
    _check(r["warm"], events)
    assert r["version"] == r["warm"]["version"] == version("pysimdjson")


def test_simdjson_parse_bare_array(tmp_path):
    path = tmp_path / "bare.json"
    path.write_text(json.dumps([{"ph": "X", "name": f"op{i}", "ts": i, "dur": 1}
                                for i in range(50)]))
    r = jt._child_simdjson_parse({"path": str(path), "warm": 0})
    _check(r, 50)
    assert r["warm"] == {}


def test_simdjson_loads_child(kineto):
    path, events = kineto
    r = jt._child_loader({"loader": "simdjson", "path": path, "gc": True})
    _check(r, events)
    assert r["version"] == version("pysimdjson")


def test_simdjson_parse_fresh_processes(kineto):
    """Through the parent's path: two fresh children, the best first parse and the best warm."""
    path, events = kineto
    r = jt._run_best({"simdjson_parse": True, "path": path, "warm": 2}, 2)
    _check(r, events)
    _check(r["warm"], events)
