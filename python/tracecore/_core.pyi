"""Type stubs for the native core (tracecore._core). Private: use the tracecore package."""

from typing import Any

import numpy as np
import numpy.typing as npt

TABLE_NAMES: list[str]

class TraceFormatError(ValueError):
    line: int | None
    column: int | None
    offset: int | None
    path: str

class Trace:
    @property
    def kind(self) -> str: ...
    @property
    def format(self) -> str: ...
    @property
    def num_events(self) -> int: ...
    def stats(self) -> dict[str, Any]: ...
    def export_table(self, name: str) -> tuple[object, object]: ...

def schema(name: str) -> object: ...
def open_file(path: str, format: str = "auto", threads: int = 0) -> Trace: ...
def open_bytes(data: bytes, format: str = "auto", threads: int = 0) -> Trace: ...
def overlaps(
    trace: Trace,
    left: npt.NDArray[np.uint8] | None,
    right: npt.NDArray[np.uint8] | None,
    same_device: bool,
) -> tuple[object, object]: ...
def window(trace: Trace, start_ns: int, end_ns: int) -> npt.NDArray[np.int64]: ...
def occupancy(trace: Trace, bin_ns: int | None) -> tuple[object, object]: ...
def replay(
    trace: Trace,
    source: str,
    allocator: str | None,
    snapshot_baseline: bool,
    with_live: bool = True,
) -> tuple[tuple[object, object], tuple[object, object], tuple[object, object]]: ...
def op_stats(trace: Trace, by: str) -> tuple[object, object]: ...
def column_reference() -> str: ...
def group_stats(
    start: npt.NDArray[np.int64],
    end: npt.NDArray[np.int64],
    group: npt.NDArray[np.int64],
    n_groups: int,
    weight: npt.NDArray[np.int64] | None = None,
) -> dict[str, npt.NDArray[np.int64]]: ...
