// Cutting a table back to its first rows (an importer forgetting what it appended since a
// point, see xspace_visitor.h's RestartLine), for columns of every storage type.
#pragma once

#include <cstddef>

#include "containers/columns.h"
#include "tables/column_def.h"

namespace tracecore {

template <class T, class A>
void TruncateColumn(std::vector<T, A>& column, size_t rows) {
  if (column.size() > rows) column.resize(rows);
}

inline void TruncateColumn(StringColumn& column, size_t rows) {
  if (column.size() <= rows) return;
  column.data.resize(static_cast<size_t>(column.offsets[rows]));
  column.offsets.resize(rows + 1);
}

template <class T>
void TruncateColumn(ListColumn<T>& column, size_t rows) {
  if (column.size() <= rows) return;
  column.values.resize(static_cast<size_t>(column.offsets[rows]));
  column.offsets.resize(rows + 1);
}

inline void TruncateColumn(ListStringColumn& column, size_t rows) {
  if (column.size() <= rows) return;
  TruncateColumn(column.values, static_cast<size_t>(column.offsets[rows]));
  column.offsets.resize(rows + 1);
}

// Keeps the first `rows` rows of every column of `table` (and of their validity columns); an
// optional column left empty stays empty.
template <class Table>
void TruncateRows(Table& table, size_t rows) {
  table.ForEachColumn([rows](const ColumnDef&, auto& column, Column<uint8_t>* valid) {
    TruncateColumn(column, rows);
    if (valid != nullptr) TruncateColumn(*valid, rows);
  });
}

}  // namespace tracecore
