"""tracecore: a fast native engine for TensorFlow execution traces.

    import tracecore
    t = tracecore.open("run_metadata.pbtxt")   # text or binary StepStats / RunMetadata, .gz too
    t.events                                    # a pyarrow.Table, one row per node record
"""

from __future__ import annotations

from ._core import TraceFormatError
from .trace import Trace, open, sample_path

__all__ = ["Trace", "TraceFormatError", "open", "sample_path", "__version__"]

try:
    from importlib.metadata import version as _version

    __version__ = _version("tracecore")
except Exception:  # pragma: no cover - running from a source tree without metadata
    __version__ = "0.0.0"
