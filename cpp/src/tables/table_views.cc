#include "tables/table_views.h"

#include "tables/table_describe.h"

#include <stdexcept>

namespace tracecore {
namespace columns {
namespace {
template <class T>
ColumnView List(const char* n, ColumnKind kind, const ListColumn<T>& l) {
  ColumnView c{n, kind, static_cast<int64_t>(l.size())};
  c.list_offsets = l.offsets.data();
  c.values = l.values.data();
  c.values_length = static_cast<int64_t>(l.values.size());
  return c;
}
}  // namespace

ColumnView String(const char* n, const StringColumn& s, const uint8_t* valid, ColumnKind kind) {
  ColumnView c{n, kind, static_cast<int64_t>(s.size())};
  c.strings = &s;
  c.valid = valid;
  return c;
}
ColumnView ListInt32(const char* n, const ListColumn<int32_t>& l) { return List(n, ColumnKind::kListInt32, l); }
ColumnView ListInt64(const char* n, const ListColumn<int64_t>& l, const uint8_t* valid) {
  ColumnView c = List(n, ColumnKind::kListInt64, l);
  c.valid = valid;
  return c;
}
ColumnView ListString(const char* n, const ListStringColumn& l) {
  ColumnView c{n, ColumnKind::kListString, static_cast<int64_t>(l.size())};
  c.list_offsets = l.offsets.data();
  c.strings = &l.values;
  c.values_length = static_cast<int64_t>(l.values.size());
  return c;
}
}  // namespace columns

TableView MakeTableView(int64_t rows, std::vector<ColumnView> cols) {
  for (const ColumnView& c : cols) {
    if (c.length != rows) throw std::logic_error(std::string("column length mismatch: ") + c.name);
  }
  return TableView{std::move(cols), rows};
}

const char* ArrowTypeName(ColumnKind kind) {
  switch (kind) {
    case ColumnKind::kInt32: return "int32";
    case ColumnKind::kInt64: return "int64";
    case ColumnKind::kUInt8: return "uint8";
    case ColumnKind::kUInt32: return "uint32";
    case ColumnKind::kUInt64: return "uint64";
    case ColumnKind::kFloat64: return "float64";
    case ColumnKind::kBool: return "bool";
    case ColumnKind::kDictString: return "dictionary<int32, string>";
    case ColumnKind::kString: return "string";
    case ColumnKind::kBinary: return "binary";
    case ColumnKind::kListInt32: return "list<int32>";
    case ColumnKind::kListInt64: return "list<int64>";
    case ColumnKind::kListString: return "list<string>";
  }
  return "?";
}

const std::vector<std::string>& TableNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    TraceTables().ForEachTable([&](const TableDef& t, const auto&) { out.emplace_back(t.name); });
    return out;
  }();
  return names;
}

TableView DescribeTable(const TraceTables& t, std::string_view name) {
  TableView out;
  bool found = false;
  t.ForEachTable([&](const TableDef& def, const auto& table) {
    if (!found && name == def.name) {
      out = DescribeTableOf(table);
      found = true;
    }
  });
  if (!found) throw std::out_of_range("no table named '" + std::string(name) + "'");
  return out;
}

std::vector<ColumnDef> TableColumns(std::string_view name) {
  std::vector<ColumnDef> out;
  bool found = false;
  TraceTables().ForEachTable([&](const TableDef& def, const auto& table) {
    if (!found && name == def.name) {
      out = ExportedColumns<std::decay_t<decltype(table)>>();
      found = true;
    }
  });
  if (!found) throw std::out_of_range("no table named '" + std::string(name) + "'");
  return out;
}

std::string ColumnReference() {
  std::string out =
      "# Tables\n\n"
      "The columns of every table a trace holds, whatever format it was read from. This page "
      "is generated from the table declarations (`cpp/src/tables/table_defs.h`) by "
      "`python -m tracecore.columns_doc`; a test checks that it matches them.\n\n"
      "A `dictionary<int32, string>` column's dictionary is exactly the strings the column "
      "holds, once each, in the order of the trace's string pool: pandas, Polars and DuckDB see "
      "its values as the categories. Indices are the column's own: compare values, not "
      "indices, across columns and tables.\n\n";
  TraceTables().ForEachTable([&](const TableDef& def, const auto& table) {
    out += TableReference<std::decay_t<decltype(table)>>(def);
  });
  return out;
}

}  // namespace tracecore
