// Views of columns for the Arrow exporter: a TableView points into a TraceTables' vectors (or a
// query result's), and the exporter turns it into Arrow arrays without copying. The tables'
// views come from their declarations (table_defs.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tables/column_def.h"
#include "tables/trace_tables.h"

namespace tracecore {

struct ColumnView {
  const char* name;
  ColumnKind kind;
  int64_t length;
  const void* values = nullptr;
  int64_t values_length = 0;             // list columns: number of child values
  const uint8_t* valid = nullptr;        // optional: one byte per row, 0 = null
  const StringColumn* strings = nullptr;
  const int32_t* list_offsets = nullptr;
  bool all_null = false;                 // an optional column an importer left empty
  bool all_zero = false;                 // a kZero column an importer left empty (EmptyFill)
};

struct TableView {
  std::vector<ColumnView> columns;
  int64_t num_rows = 0;
};

// Column constructors over owned vectors (the views borrow; the vectors must outlive them), of
// any allocator: table columns (Column<T>), query results (std::vector, UninitVector).
namespace columns {
template <class T, class A>
ColumnView Fixed(const char* name, ColumnKind kind, const std::vector<T, A>& v,
                 const uint8_t* valid = nullptr) {
  ColumnView c{name, kind, static_cast<int64_t>(v.size())};
  c.values = v.data();
  c.valid = valid;
  return c;
}
template <class A>
ColumnView Int32(const char* name, const std::vector<int32_t, A>& v) {
  return Fixed(name, ColumnKind::kInt32, v);
}
template <class A>
ColumnView Int64(const char* name, const std::vector<int64_t, A>& v,
                 const Column<uint8_t>* valid = nullptr) {
  return Fixed(name, ColumnKind::kInt64, v, valid ? valid->data() : nullptr);
}
template <class A>
ColumnView UInt32(const char* name, const std::vector<uint32_t, A>& v) {
  return Fixed(name, ColumnKind::kUInt32, v);
}
template <class A>
ColumnView UInt64(const char* name, const std::vector<uint64_t, A>& v) {
  return Fixed(name, ColumnKind::kUInt64, v);
}
template <class A>
ColumnView Float64(const char* name, const std::vector<double, A>& v) {
  return Fixed(name, ColumnKind::kFloat64, v);
}
template <class A>
ColumnView Bool(const char* name, const std::vector<uint8_t, A>& v) {
  return Fixed(name, ColumnKind::kBool, v);
}
template <class A>
ColumnView Dict(const char* name, const std::vector<uint32_t, A>& ids,
                const Column<uint8_t>* valid = nullptr) {
  return Fixed(name, ColumnKind::kDictString, ids, valid ? valid->data() : nullptr);
}
// `valid`: one byte per row (0 = null), or nullptr; `kind`: kString, or kBinary for bytes.
ColumnView String(const char* name, const StringColumn& s, const uint8_t* valid = nullptr,
                  ColumnKind kind = ColumnKind::kString);
ColumnView ListInt32(const char* name, const ListColumn<int32_t>& l);
ColumnView ListInt64(const char* name, const ListColumn<int64_t>& l, const uint8_t* valid = nullptr);
ColumnView ListString(const char* name, const ListStringColumn& l);
}  // namespace columns

// Checks every column has `rows` rows and bundles them.
TableView MakeTableView(int64_t rows, std::vector<ColumnView> columns);

// Table names in the order the Python layer lists them.
const std::vector<std::string>& TableNames();

// The exported columns of table `name` of `t`. Throws std::out_of_range for an unknown name.
TableView DescribeTable(const TraceTables& t, std::string_view name);

// The column definitions of table `name` (exported columns only), for schemas and docs.
// Throws std::out_of_range for an unknown name.
std::vector<ColumnDef> TableColumns(std::string_view name);

// The column reference of every table as Markdown (docs/tables.md is this text).
std::string ColumnReference();

}  // namespace tracecore
