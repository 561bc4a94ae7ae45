"""Type stubs for the native core (tracecore._core). Private: use the tracecore package."""

from typing import IO, Any

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
    @property
    def chrome_metadata(self) -> list[tuple[str, int, str]]: ...
    def export_table(self, name: str) -> tuple[object, object]: ...

def schema(name: str) -> object: ...
def open_file(
    path: str | bytes,
    format: str = "auto",
    threads: int = 0,
    max_table_bytes: int = 0,
    errors: str = "strict",
) -> Trace: ...
def open_bytes(
    data: bytes,
    format: str = "auto",
    threads: int = 0,
    max_table_bytes: int = 0,
    errors: str = "strict",
) -> Trace: ...
def from_tables(
    tables: list[tuple[str, list[tuple[object, object]]]], kind: str, format: str
) -> Trace: ...
def overlaps(
    trace: Trace,
    left: npt.NDArray[np.uint8] | None,
    right: npt.NDArray[np.uint8] | None,
    same_device: bool,
    max_output_bytes: int = ...,
) -> tuple[object, object]: ...
def window(trace: Trace, start_ns: int, end_ns: int) -> npt.NDArray[np.int64]: ...
def occupancy(
    trace: Trace, bin_ns: int | None, max_output_bytes: int = ...
) -> tuple[object, object]: ...
def occupancy_bin_rows(trace: Trace, bin_ns: int) -> int: ...

OCCUPANCY_BIN_ROW_BYTES: int

DEFAULT_MAX_OUTPUT_BYTES: int
def replay(
    trace: Trace,
    source: str,
    allocator: str | None,
    snapshot_baseline: bool,
    with_live: bool = True,
    event_mask: npt.NDArray[np.uint8] | None = None,
    record_mask: npt.NDArray[np.uint8] | None = None,
) -> tuple[tuple[object, object], tuple[object, object], tuple[object, object]]: ...
def op_stats(trace: Trace, by: str) -> tuple[object, object]: ...
def column_reference() -> str: ...
def write_perfetto(
    trace: Trace,
    path: str | bytes,
    counter_group: str,
    counter_names: list[str],
    series: npt.NDArray[np.int32],
    time_ns: npt.NDArray[np.int64],
    value: npt.NDArray[np.int64],
    step: npt.NDArray[np.int64],
    step_start: npt.NDArray[np.int64],
    step_end: npt.NDArray[np.int64],
) -> dict[str, int]: ...
def write_chrome_trace(
    trace: Trace,
    out: str | bytes | IO[bytes],
    counter_group: str,
    counter_names: list[str],
    series: npt.NDArray[np.int32],
    time_ns: npt.NDArray[np.int64],
    value: npt.NDArray[np.int64],
    step: npt.NDArray[np.int64],
    step_start: npt.NDArray[np.int64],
    step_duration: npt.NDArray[np.int64],
) -> dict[str, int]: ...
def group_stats(
    start: npt.NDArray[np.int64],
    end: npt.NDArray[np.int64],
    group: npt.NDArray[np.int64],
    n_groups: int,
    weight: npt.NDArray[np.int64] | None = None,
) -> dict[str, npt.NDArray[np.int64]]: ...
def group_stats_codes(
    start: npt.NDArray[np.int64],
    end: npt.NDArray[np.int64],
    code: npt.NDArray[np.int32],
    group_of_code: npt.NDArray[np.int64],
    n_groups: int,
    weight: npt.NDArray[np.int64] | None = None,
) -> dict[str, npt.NDArray[np.int64]]: ...

# Test helpers of the Chrome trace JSON reader (tests/test_json_scanner.py).
JSON_STAGE1: str

def json_loads(
    data: bytes, errors: str = "strict", max_depth: int = 1000, stage1: str = ""
) -> Any: ...
def json_decimal_scaled(text: str, scale: int = 3) -> int: ...
def json_parse_double(text: str) -> float: ...
def chrome_json_events(
    data: bytes, errors: str = "strict", stage1: str = ""
) -> tuple[list[dict[str, Any]], list[tuple[str, Any]], dict[str, Any]]: ...
def looks_like_chrome_json(head: bytes) -> bool: ...
def tfevents_scan(path_or_bytes: str | bytes | object, strict: bool = True) -> dict[str, Any]: ...
def open_event_file(
    path_or_bytes: str | bytes | object, strict: bool = True, threads: int = 0
) -> dict[str, Any]: ...
def crc32c(data: Any, seed: int = 0) -> int: ...
