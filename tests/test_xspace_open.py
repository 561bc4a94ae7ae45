"""Opening XSpace profiles (``*.xplane.pb``, issue 21).

The regression of issue 21: the ``a100-node`` XSpace (``tests/data/xspace/
tf_keras_mlp_fit_a100_node.xplane.pb``, made by tests/make_xspace_fixtures.py) was read as a
RunMetadata with 0 events and exit status 0. A reading with zero events (and no graph) that
skipped unknown fields read another kind of message: it is a TraceFormatError, never an empty
success.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import tracecore
from tracecore import cli

DATA = Path(__file__).resolve().parent / "data"
A100 = DATA / "xspace" / "tf_keras_mlp_fit_a100_node.xplane.pb"
ZERO_EVENTS = r"0 events and [1-9][0-9]* unknown fields"


def test_a100_node_read_as_stepstats_binary_is_an_error() -> None:
    with pytest.raises(tracecore.TraceFormatError, match=ZERO_EVENTS) as e:
        tracecore.open(A100, format="binary")
    message = str(e.value)
    assert re.search(r"byte offset 0: not a RunMetadata \(format 'binary'\): the file looks like",
                     message), message
    assert "0 events and 287 unknown fields" in message
    assert e.value.offset == 0 and e.value.line is None


def test_a100_node_info_fails(capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(["info", "--format", "binary", str(A100)])
    out, err = capsys.readouterr()
    assert code != 0 and out == ""
    assert "0 events and 287 unknown fields" in err
