"""SQL over a trace's tables with DuckDB (``Trace.sql``; ``pip install 'tracecore[duckdb]'``)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import pyarrow as pa

if TYPE_CHECKING:
    from .trace import Trace


#: Tables built on first use (an XSpace's event_stats: a second pass over its source), registered
#: only for a query that names them.
LAZY_TABLES = ("event_stats",)


def sql(trace: Trace, query: str) -> pa.Table:
    """Runs ``query`` with DuckDB over the tables, each registered as a view of its name
    (``events`` with the name columns). Returns a pyarrow Table."""
    try:
        import duckdb
    except ImportError:
        raise ImportError(
            "Trace.sql needs DuckDB: pip install 'tracecore[duckdb]' (or pip install duckdb)"
        ) from None
    con = duckdb.connect(":memory:")
    try:
        for name in trace.table_names:
            # event_stats is built from an XSpace's source when first used: only when asked for
            if name in LAZY_TABLES and not re.search(rf"\b{name}\b", query, re.IGNORECASE):
                continue
            con.register(name, trace.events if name == "events" else trace.table(name))
        # None for a statement without a result, whatever the stubs say.
        relation: duckdb.DuckDBPyRelation | None = con.sql(query)
        if relation is None:  # a statement without a result (e.g. CREATE VIEW)
            return pa.table({})
        for method in ("to_arrow_table", "fetch_arrow_table", "arrow"):
            fetch = getattr(relation, method, None)
            if fetch is not None:
                table = fetch()
                break
        else:  # pragma: no cover - every DuckDB release has one of the above
            raise RuntimeError("this DuckDB release cannot return Arrow tables")
        if isinstance(table, pa.RecordBatchReader):
            table = table.read_all()
        return table
    finally:
        con.close()
