"""tracecore: a fast native engine for TensorFlow execution traces.

    import tracecore
    t = tracecore.open("run_metadata.pbtxt")   # text or binary StepStats / RunMetadata, .gz too
    t.events                                    # a pyarrow.Table, one row per node record
"""

from __future__ import annotations

from ._core import TraceFormatError
from ._version import __version__
from .dataset import open_many
from .opening import open, sample_path
from .trace import Trace


def read_listing(path):
    """Reads a shape listing or a node-name listing into a pyarrow Table."""
    from .listing import read_listing as _read_listing

    return _read_listing(path)


__all__ = [
    "Trace",
    "TraceFormatError",
    "open",
    "open_many",
    "read_listing",
    "sample_path",
    "__version__",
]

del annotations  # from the __future__ import: not part of the package
