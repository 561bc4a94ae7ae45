"""docs/tables.md is the column reference generated from the table declarations."""

from __future__ import annotations

from pathlib import Path

import tracecore
from tracecore.columns_doc import column_reference

DOC = Path(__file__).resolve().parents[1] / "docs" / "tables.md"


def test_docs_match_the_table_declarations() -> None:
    assert DOC.read_text(encoding="utf-8") == column_reference(), (
        "docs/tables.md is stale: python -m tracecore.columns_doc > docs/tables.md"
    )


def test_reference_lists_every_column_of_every_table() -> None:
    text = column_reference()
    t = tracecore.open(tracecore.sample_path())
    for name in t.table_names:
        assert f"## `{name}`" in text
        for field in t.table(name).schema:
            if field.name in ("forward_scope", "phase"):
                continue  # added by the Python layer (tracecore.names), not the core
            assert f"| `{field.name}` |" in text, (name, field.name)
