// What the table declarations give, for any table struct made by TC_TABLE_BODY: its Arrow
// view and its column reference. In a header so that tests can apply them to scratch tables.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "tables/column_def.h"
#include "tables/table_views.h"

namespace tracecore {

// A column's view, from its declaration and storage.
template <class T, class A>
ColumnView ViewOf(const ColumnDef& d, const std::vector<T, A>& v, const Column<uint8_t>* valid) {
  return columns::Fixed(d.name, d.kind, v, valid != nullptr ? valid->data() : nullptr);
}
inline ColumnView ViewOf(const ColumnDef& d, const StringColumn& s, const Column<uint8_t>* valid) {
  return columns::String(d.name, s, valid != nullptr ? valid->data() : nullptr, d.kind);
}
inline ColumnView ViewOf(const ColumnDef& d, const ListColumn<int32_t>& l, const Column<uint8_t>*) {
  return columns::ListInt32(d.name, l);
}
inline ColumnView ViewOf(const ColumnDef& d, const ListColumn<int64_t>& l, const Column<uint8_t>* valid) {
  return columns::ListInt64(d.name, l, valid != nullptr ? valid->data() : nullptr);
}
inline ColumnView ViewOf(const ColumnDef& d, const ListStringColumn& l, const Column<uint8_t>*) {
  return columns::ListString(d.name, l);
}

template <class Table>
TableView DescribeTableOf(const Table& table) {
  const auto rows = static_cast<int64_t>(table.size());
  std::vector<ColumnView> views;
  std::vector<ColumnView> stored;  // every column's own view, for kSameAs sources
  table.ForEachColumn([&](const ColumnDef& d, const auto& storage, const Column<uint8_t>* valid) {
    stored.push_back(ViewOf(d, storage, valid));
  });
  size_t i = 0;
  table.ForEachColumn([&](const ColumnDef& d, const auto& storage, const Column<uint8_t>*) {
    const ColumnView& own = stored[i++];
    if (!d.exported()) return;
    if (storage.size() != 0 || rows == 0) {
      views.push_back(own);
      return;
    }
    ColumnView c{d.name, d.kind, rows};
    const EmptyFillDef fill = EmptyFillOf<Table>(d.name);
    if (d.holding == ColumnHolding::kOptional ||
        (fill.fill == EmptyFill::kNull && d.holding == ColumnHolding::kNullable)) {
      c.all_null = true;
    } else if (fill.fill == EmptyFill::kZero) {
      c.all_zero = true;
    } else if (fill.fill == EmptyFill::kSameAs) {
      bool found = false;
      for (const ColumnView& source : stored) {
        if (std::string_view(source.name) == fill.source && source.kind == d.kind &&
            source.length == rows && source.valid == nullptr) {
          c = source;
          c.name = d.name;
          found = true;
        }
      }
      if (!found) throw std::logic_error(std::string("no full column for ") + d.name + " to share");
    } else {
      c = own;  // a required column with no values: MakeTableView refuses the table
    }
    views.push_back(c);
  });
  return MakeTableView(rows, std::move(views));
}

template <class Table>
std::vector<ColumnDef> ExportedColumns() {
  std::vector<ColumnDef> out;
  for (const ColumnDef& d : Table::kColumns) {
    if (d.exported()) out.push_back(d);
  }
  return out;
}

inline const char* HoldingNote(ColumnHolding h) {
  switch (h) {
    case ColumnHolding::kRequired: return "";
    case ColumnHolding::kNullable: return " (nullable)";
    case ColumnHolding::kOptional: return " (nullable; all null where the format has none)";
  }
  return "";
}

template <class Table>
std::string TableReference(const TableDef& def) {
  std::string out = "## `";
  out += def.name;
  out += "`\n\n";
  out += def.doc;
  out += "\n\n| column | type | meaning |\n|---|---|---|\n";
  for (const ColumnDef& c : Table::kColumns) {
    if (!c.exported()) continue;
    out += "| `";
    out += c.name;
    out += "` | ";
    out += ArrowTypeName(c.kind);
    out += HoldingNote(c.holding);
    out += " | ";
    out += c.doc;
    out += " |\n";
  }
  out += "\n";
  return out;
}

}  // namespace tracecore
