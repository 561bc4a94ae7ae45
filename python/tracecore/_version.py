"""The installed tracecore version (``tracecore.__version__``), in a module of its own so that
the modules that record it (cache keys, stored metadata) need not import the package."""

from __future__ import annotations

try:
    from importlib.metadata import version as _metadata_version

    __version__ = _metadata_version("tracecore")
except Exception:  # pragma: no cover - running from a source tree without metadata
    __version__ = "0.0.0"
