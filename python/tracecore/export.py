"""The exports of a trace, gathered in one namespace (``tracecore.export``); each is written
in its own module:

* Parquet directories, :mod:`.parquet`: :func:`to_parquet`, :func:`read_parquet_dir`
  (:func:`open_parquet_dir`, in :mod:`.opening`, makes the Trace);
* Chrome trace-event JSON, :mod:`.chrome`: :func:`to_chrome_trace`, :func:`chrome_trace_events`;
* SQL through DuckDB, :mod:`.sql`: :func:`sql`;
* stored traces, :mod:`.stored`: :func:`compact_dictionaries`, :func:`trace_meta`.
"""

from __future__ import annotations

from .chrome import chrome_trace_events, to_chrome_trace
from .opening import open_parquet_dir
from .outputs import checked_output_file
from .parquet import (
    META_FILE,
    PARQUET_CODECS,
    check_parquet_compression,
    read_parquet_dir,
    to_parquet,
)
from .sql import sql
from .stored import LAYOUT_VERSION, compact_dictionaries, trace_meta

__all__ = [
    "LAYOUT_VERSION",
    "META_FILE",
    "PARQUET_CODECS",
    "check_parquet_compression",
    "checked_output_file",
    "chrome_trace_events",
    "compact_dictionaries",
    "open_parquet_dir",
    "read_parquet_dir",
    "sql",
    "to_chrome_trace",
    "to_parquet",
    "trace_meta",
]
