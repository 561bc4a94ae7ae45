// What a column is (type, role, how it is held) and the storage each type gets. The tables
// themselves are declared in table_defs.h.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "containers/columns.h"

namespace tracecore {

enum class ColumnKind {
  kInt32,
  kInt64,
  kUInt8,
  kUInt32,
  kUInt64,
  kFloat64,
  kBool,        // one byte per row in `values`, bit-packed on export
  kDictString,  // uint32 string-pool ids in `values`
  kString,      // `strings`
  kBinary,      // `strings`, bytes that need not be UTF-8
  kListInt32,   // `list_offsets` + int32 `values`
  kListInt64,   // `list_offsets` + int64 `values`
  kListString,  // `list_offsets` + `strings`
};

// How parallel chunks merge a column and who fills it (see table_defs.h).
enum class ColumnRole { kPlain, kStringId, kEventRef, kDeviceRef, kGraphRef, kDerived, kInternal };

// Whether a column has a value on every row (kRequired), a validity byte per row
// (kNullable), or may be left empty by an importer that has no such values (kOptional).
enum class ColumnHolding { kRequired, kNullable, kOptional };

struct ColumnDef {
  const char* name;
  ColumnKind kind;
  ColumnRole role;
  ColumnHolding holding;
  const char* doc;
  constexpr bool has_validity() const { return holding != ColumnHolding::kRequired; }
  constexpr bool exported() const { return role != ColumnRole::kInternal; }
};

// What a required or nullable column holds when an importer leaves its storage empty while
// the table has rows: formats with no such values (XSpace and Chrome traces have no separate
// op times, no scheduling time and no memory sizes per event) then write nothing to it, and
// the export gives it, without storing anything, the values of another column (kSameAs),
// zeros (kZero) or nulls (kNull). A column with no such rule must have a value on every row.
enum class EmptyFill : uint8_t { kNone, kNull, kZero, kSameAs };
struct EmptyFillDef {
  const char* column;
  EmptyFill fill;
  const char* source;  // kSameAs: the column whose values it has
};

// The columns of a table an importer may leave empty (see EmptyFill); none by default,
// specialized per table in trace_tables.h.
template <class Table>
struct EmptyFills {
  static constexpr EmptyFillDef kList[] = {{nullptr, EmptyFill::kNone, nullptr}};
};

// `name`'s rule in `Table`, or a kNone one.
template <class Table>
EmptyFillDef EmptyFillOf(std::string_view name) {
  for (const EmptyFillDef& d : EmptyFills<Table>::kList) {
    if (d.column != nullptr && name == d.column) return d;
  }
  return {nullptr, EmptyFill::kNone, nullptr};
}

struct TableDef {
  const char* name;
  const char* doc;
};

// The type a column of each kind is stored in.
template <ColumnKind K> struct ColumnStorageOf;
template <> struct ColumnStorageOf<ColumnKind::kInt32> { using type = Column<int32_t>; };
template <> struct ColumnStorageOf<ColumnKind::kInt64> { using type = Column<int64_t>; };
template <> struct ColumnStorageOf<ColumnKind::kUInt8> { using type = Column<uint8_t>; };
template <> struct ColumnStorageOf<ColumnKind::kUInt32> { using type = Column<uint32_t>; };
template <> struct ColumnStorageOf<ColumnKind::kUInt64> { using type = Column<uint64_t>; };
template <> struct ColumnStorageOf<ColumnKind::kFloat64> { using type = Column<double>; };
template <> struct ColumnStorageOf<ColumnKind::kBool> { using type = Column<uint8_t>; };
template <> struct ColumnStorageOf<ColumnKind::kDictString> { using type = Column<uint32_t>; };
template <> struct ColumnStorageOf<ColumnKind::kString> { using type = StringColumn; };
template <> struct ColumnStorageOf<ColumnKind::kBinary> { using type = StringColumn; };
template <> struct ColumnStorageOf<ColumnKind::kListInt32> { using type = ListColumn<int32_t>; };
template <> struct ColumnStorageOf<ColumnKind::kListInt64> { using type = ListColumn<int64_t>; };
template <> struct ColumnStorageOf<ColumnKind::kListString> { using type = ListStringColumn; };
template <ColumnKind K>
using ColumnStorage = typename ColumnStorageOf<K>::type;

// The Arrow type a column of each kind is exported as, for the docs ("int64",
// "dictionary<int32, string>", "list<int64>").
const char* ArrowTypeName(ColumnKind kind);

}  // namespace tracecore

// Expanders of the column lists of table_defs.h into a table struct's members, its column
// definitions and its column visitor (used by trace_tables.h, and by tests that build a table
// from a scratch list).
#define TC_TABLE_MEMBER(name, type, role, doc) ::tracecore::ColumnStorage<::tracecore::ColumnKind::k##type> name;
#define TC_TABLE_MEMBER_VALID(name, type, role, doc) \
  TC_TABLE_MEMBER(name, type, role, doc)              \
  ::tracecore::Column<uint8_t> name##_valid;

#define TC_COLUMN_DEF_AS(holding, name, type, role, doc)                                     \
  ::tracecore::ColumnDef{#name, ::tracecore::ColumnKind::k##type,                            \
                         ::tracecore::ColumnRole::k##role,                                   \
                         ::tracecore::ColumnHolding::holding, doc},
#define TC_COLUMN_DEF(...) TC_COLUMN_DEF_AS(kRequired, __VA_ARGS__)
#define TC_COLUMN_DEF_NULLABLE(...) TC_COLUMN_DEF_AS(kNullable, __VA_ARGS__)
#define TC_COLUMN_DEF_OPTIONAL(...) TC_COLUMN_DEF_AS(kOptional, __VA_ARGS__)

#define TC_VISIT_COLUMN(name, type, role, doc) f(kColumns[i++], self.name, no_valid);
#define TC_VISIT_COLUMN_VALID(name, type, role, doc) f(kColumns[i++], self.name, &self.name##_valid);

// No validity column (the third argument ForEachColumnAccessor passes for a COLUMN).
namespace tracecore {
struct NoValidity {};
}  // namespace tracecore
#define TC_ACCESS_COLUMN(name, type, role, doc) \
  f(kColumns[i++], [](auto& t) -> auto& { return t.name; }, ::tracecore::NoValidity{});
#define TC_ACCESS_COLUMN_VALID(name, type, role, doc)                                         \
  f(kColumns[i++], [](auto& t) -> auto& { return t.name; },                                 \
    [](auto& t) -> auto& { return t.name##_valid; });

// The body of a table struct: members, the number of rows, the column definitions in order,
// ForEachColumn(f), which calls f(const ColumnDef&, storage&, Column<uint8_t>* valid or
// nullptr) for each column in order, and ForEachColumnAccessor(f), which calls
// f(const ColumnDef&, get, get_valid) with functions from a table to the column (and to its
// validity, or NoValidity): for code that handles the same column of several tables at once.
#define TC_TABLE_BODY(COLUMNS, rows_column)                                                   \
  COLUMNS(TC_TABLE_MEMBER, TC_TABLE_MEMBER_VALID, TC_TABLE_MEMBER_VALID)                      \
  size_t size() const { return rows_column.size(); }                                          \
  static constexpr ::tracecore::ColumnDef kColumns[] = {                                      \
      COLUMNS(TC_COLUMN_DEF, TC_COLUMN_DEF_NULLABLE, TC_COLUMN_DEF_OPTIONAL)};                \
  template <class Self, class F>                                                              \
  static void VisitColumns(Self& self, F&& f) {                                               \
    using Valid = std::conditional_t<std::is_const_v<Self>, const ::tracecore::Column<uint8_t>, \
                                     ::tracecore::Column<uint8_t>>;                           \
    Valid* const no_valid = nullptr;                                                          \
    size_t i = 0;                                                                             \
    COLUMNS(TC_VISIT_COLUMN, TC_VISIT_COLUMN_VALID, TC_VISIT_COLUMN_VALID)                    \
    (void)no_valid;                                                                           \
  }                                                                                           \
  template <class F>                                                                          \
  static void ForEachColumnAccessor(F&& f) {                                                  \
    size_t i = 0;                                                                             \
    COLUMNS(TC_ACCESS_COLUMN, TC_ACCESS_COLUMN_VALID, TC_ACCESS_COLUMN_VALID)                 \
  }                                                                                           \
  template <class F>                                                                          \
  void ForEachColumn(F&& f) {                                                                 \
    VisitColumns(*this, f);                                                                   \
  }                                                                                           \
  template <class F>                                                                          \
  void ForEachColumn(F&& f) const {                                                           \
    VisitColumns(*this, f);                                                                   \
  }
