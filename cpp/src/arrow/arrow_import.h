// Builds a trace's tables from Arrow arrays in the layout ExportTable writes: the tables of a
// Parquet directory or a cache entry read back, so that every query runs on them without the
// source file.
//
// The arrays come from outside (a file anyone could have written), so nothing in them is
// trusted: every type, length, offset, index and reference is checked, and anything else is a
// TraceFormatError naming the table and column. Values are copied into fresh columns; strings of
// dictionary columns are interned into a new pool. Memory: the tables built, about the size of
// the arrays read (no other allocation grows with the input).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "arrow_c_data_interface.h"
#include "tables/trace_tables.h"

namespace tracecore {

// A struct array (one child per column), as a record batch exports itself.
struct ArrowBatchInput {
  const ArrowSchema* schema = nullptr;
  const ArrowArray* array = nullptr;
};

// One table to import: its rows in batches, in order.
struct ArrowTableInput {
  std::string name;
  std::vector<ArrowBatchInput> batches;
};

// The tables of `inputs` (by name; a table not given is empty, a column a table does not know
// is ignored, an optional column missing or all null stays empty). Throws TraceFormatError for
// anything that is not such a table: a missing required column, another type, a null where a
// column has a value on every row, an index or reference out of range, malformed offsets, a
// string that is not UTF-8, a device kind tracecore does not know, a row number out of place.
std::shared_ptr<TraceTables> ImportTables(const std::vector<ArrowTableInput>& inputs,
                                          TraceKind kind, Encoding format);

// The TraceKind named `name` (TraceKindName), the Encoding named `name` (EncodingName); throw
// TraceFormatError for any other name.
TraceKind TraceKindFromName(const std::string& name);
Encoding EncodingFromName(const std::string& name);

}  // namespace tracecore
