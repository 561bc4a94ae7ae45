"""tracecore: a fast native engine for TensorFlow execution traces.

    import tracecore
    t = tracecore.open("run_metadata.pbtxt")   # text or binary StepStats / RunMetadata, .gz too
    t.events                                    # a pyarrow.Table, one row per node record
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._core import TraceFormatError
from ._version import __version__
from .compare import diff
from .dataset import TraceSet, open_many
from .opening import sample_path
from .replay import MemoryReplay
from .toplevel import open
from .trace import Trace

if TYPE_CHECKING:
    import os

    import pyarrow as pa


def read_listing(path: str | os.PathLike[str]) -> pa.Table:
    """Reads a shape listing or a node-name listing into a pyarrow Table."""
    from .listing import read_listing as _read_listing

    return _read_listing(path)


__all__ = [
    "MemoryReplay",
    "Trace",
    "TraceSet",
    "TraceFormatError",
    "diff",
    "open",
    "open_many",
    "read_listing",
    "sample_path",
    "__version__",
]

del annotations, TYPE_CHECKING  # imports for this module only: not part of the package
