"""Imports tables the native core exports through the Arrow PyCapsule interface."""

from __future__ import annotations

import pyarrow as pa


def table_from_capsules(capsules: tuple[object, object]) -> pa.Table:
    """A pyarrow Table over a (arrow_schema, arrow_array) capsule pair of a struct array.

    The buffers are not copied: they stay owned by the native core until pyarrow releases them.
    """
    schema_capsule, array_capsule = capsules
    batch = pa.RecordBatch._import_from_c_capsule(schema_capsule, array_capsule)
    return pa.Table.from_batches([batch])
