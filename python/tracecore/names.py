"""Names and scopes (placeholder until the names module lands): events pass through unchanged."""

from __future__ import annotations

import pyarrow as pa


def add_name_columns(events: pa.Table) -> pa.Table:
    return events
