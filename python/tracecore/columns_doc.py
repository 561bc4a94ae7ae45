"""Prints the column reference of every table (docs/tables.md), generated from the table
declarations of the native core.

    python -m tracecore.columns_doc > docs/tables.md
"""

from __future__ import annotations

import sys

from tracecore import _core


def column_reference() -> str:
    """The Markdown column reference of every table the core declares."""
    return str(_core.column_reference())


def main() -> None:
    sys.stdout.write(column_reference())


if __name__ == "__main__":
    main()
