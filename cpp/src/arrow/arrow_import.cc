#include "arrow/arrow_import.h"

#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>

#include "core/error.h"
#include "sink/trace_semantics.h"
#include "tables/table_views.h"

namespace tracecore {
namespace {

[[noreturn]] void Fail(const std::string& where, const std::string& what) {
  throw TraceFormatError(where + ": " + what);
}

bool Bit(const uint8_t* bits, int64_t i) { return (bits[i >> 3] >> (i & 7)) & 1; }

// The arrays of one column (or of a child), checked for the buffers its layout needs.
struct ArrayIn {
  const ArrowSchema* schema;
  const ArrowArray* array;
  std::string where;

  int64_t length() const { return array->length; }
  int64_t offset() const { return array->offset; }

  // Buffer `i` (nullptr allowed only for a validity buffer or an empty array).
  const void* Buffer(int64_t i, bool may_be_null = false) const {
    if (array->n_buffers <= i || array->buffers == nullptr) {
      Fail(where, "the array has " + std::to_string(array->n_buffers) + " buffers, expected " +
                      std::to_string(i + 1));
    }
    const void* p = array->buffers[i];
    if (p == nullptr && !may_be_null && array->length > 0) Fail(where, "a data buffer is missing");
    return p;
  }
  // The validity bitmap, or nullptr when every row is valid.
  const uint8_t* Validity() const {
    if (array->null_count == 0) return nullptr;
    return static_cast<const uint8_t*>(Buffer(0, true));
  }
  bool Valid(const uint8_t* validity, int64_t row) const {
    return validity == nullptr || Bit(validity, offset() + row);
  }
};

// Checks the basic shape of an array: a sane length and offset, and its schema's format.
void CheckArray(const ArrayIn& in, const char* format, int64_t length) {
  if (in.schema == nullptr || in.array == nullptr || in.schema->format == nullptr) {
    Fail(in.where, "no array");
  }
  if (std::strcmp(in.schema->format, format) != 0) {
    Fail(in.where, std::string("has Arrow type '") + in.schema->format + "', expected '" + format + "'");
  }
  if (in.array->length != length) {
    Fail(in.where, std::to_string(in.array->length) + " rows, expected " + std::to_string(length));
  }
  if (in.array->offset < 0 || in.array->length < 0 ||
      in.array->offset > std::numeric_limits<int64_t>::max() / 64 - in.array->length) {
    Fail(in.where, "a negative or huge length or offset");
  }
}

// The int32 offsets of a string or list array, checked: non-decreasing, from >= 0, the last
// within `limit` values (when limit >= 0). Returns the offsets (length + 1 of them, from the
// array's offset on).
const int32_t* CheckedOffsets(const ArrayIn& in, int64_t limit) {
  if (in.length() == 0) return nullptr;
  const auto* offsets = static_cast<const int32_t*>(in.Buffer(1)) + in.offset();
  if (offsets[0] < 0) Fail(in.where, "a negative offset");
  for (int64_t i = 0; i < in.length(); ++i) {
    if (offsets[i + 1] < offsets[i]) Fail(in.where, "offsets decrease at row " + std::to_string(i));
  }
  if (limit >= 0 && offsets[in.length()] > limit) {
    Fail(in.where, "offsets past the end of the values");
  }
  return offsets;
}

// The values of a string array at row i (offsets checked).
std::string_view StringAt(const char* data, const int32_t* offsets, int64_t i) {
  return std::string_view(data + offsets[i], static_cast<size_t>(offsets[i + 1] - offsets[i]));
}

const char* StringData(const ArrayIn& in, const int32_t* offsets) {
  if (offsets == nullptr || offsets[in.length()] == 0) return "";
  return static_cast<const char*>(in.Buffer(2));
}

// A string array's child (list values) or the array itself: its validity must be all set.
void NoNulls(const ArrayIn& in) {
  const uint8_t* validity = in.Validity();
  if (validity == nullptr) return;
  for (int64_t i = 0; i < in.length(); ++i) {
    if (!in.Valid(validity, i)) Fail(in.where, "a null value inside a list or dictionary");
  }
}

template <class T> const char* FormatOf();
template <> const char* FormatOf<int32_t>() { return "i"; }
template <> const char* FormatOf<int64_t>() { return "l"; }
template <> const char* FormatOf<uint8_t>() { return "C"; }
template <> const char* FormatOf<uint32_t>() { return "I"; }
template <> const char* FormatOf<uint64_t>() { return "L"; }
template <> const char* FormatOf<double>() { return "g"; }

// Fills `out` (and `valid`, when not null) from `in`, row by row: `get(row)` gives a row's
// value, called for valid rows only. `required`: a null is an error.
template <class Out, class Get>
void FillRows(const ArrayIn& in, Out& out, Column<uint8_t>* valid, bool required, Get&& get) {
  const uint8_t* validity = in.Validity();
  const int64_t n = in.length();
  out.reserve(out.size() + static_cast<size_t>(n));
  if (valid != nullptr) valid->reserve(valid->size() + static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const bool present = in.Valid(validity, i);
    if (!present && required) Fail(in.where, "a null at row " + std::to_string(i) + ", where every row has a value");
    out.push_back(present ? get(i) : typename Out::value_type{});
    if (valid != nullptr) valid->push_back(present ? 1 : 0);
  }
}

// Appends `in` (string or binary) rows to `out`; nulls as "" (with `valid` 0).
void FillStrings(const ArrayIn& in, StringColumn& out, Column<uint8_t>* valid, bool required, bool utf8) {
  const int32_t* offsets = CheckedOffsets(in, -1);
  if (offsets == nullptr) return;
  const char* data = StringData(in, offsets);
  const uint8_t* validity = in.Validity();
  for (int64_t i = 0; i < in.length(); ++i) {
    const bool present = in.Valid(validity, i);
    if (!present && required) Fail(in.where, "a null at row " + std::to_string(i) + ", where every row has a value");
    const std::string_view s = present ? StringAt(data, offsets, i) : std::string_view();
    if (utf8 && !StringPool::IsValidUtf8(s)) Fail(in.where, "row " + std::to_string(i) + " is not UTF-8");
    out.Append(s);
    if (valid != nullptr) valid->push_back(present ? 1 : 0);
  }
}

struct ColumnImporter {
  StringPool& pool;

  template <class T>
  void Import(const ColumnDef& def, Column<T>& out, Column<uint8_t>* valid, const ArrayIn& in, bool required) {
    if (def.kind == ColumnKind::kDictString) {
      if constexpr (std::is_same_v<T, uint32_t>) return ImportDictionary(out, valid, in, required);
    }
    if (def.kind == ColumnKind::kBool) {
      if constexpr (std::is_same_v<T, uint8_t>) {
        CheckArray(in, "b", in.length());
        const auto* bits = static_cast<const uint8_t*>(in.Buffer(1));
        return FillRows(in, out, valid, required,
                        [&](int64_t i) { return static_cast<uint8_t>(Bit(bits, in.offset() + i)); });
      }
    }
    CheckArray(in, FormatOf<T>(), in.length());
    const T* values = static_cast<const T*>(in.Buffer(1)) + in.offset();
    FillRows(in, out, valid, required, [&](int64_t i) { return values[i]; });
  }

  void ImportDictionary(Column<uint32_t>& out, Column<uint8_t>* valid, const ArrayIn& in, bool required) {
    CheckArray(in, "i", in.length());
    if (in.schema->dictionary == nullptr || in.array->dictionary == nullptr) {
      Fail(in.where, "a dictionary column without its dictionary");
    }
    const ArrayIn dict{in.schema->dictionary, in.array->dictionary, in.where + " (dictionary)"};
    CheckArray(dict, "u", in.array->dictionary->length);
    NoNulls(dict);
    // Each dictionary entry's id in the new pool.
    std::vector<uint32_t> ids(static_cast<size_t>(dict.length()));
    const int32_t* offsets = CheckedOffsets(dict, -1);
    const char* data = StringData(dict, offsets);
    for (int64_t i = 0; i < dict.length(); ++i) {
      const uint32_t id = pool.Intern(StringAt(data, offsets, i));
      if (id == StringPool::kInvalidUtf8) Fail(dict.where, "entry " + std::to_string(i) + " is not UTF-8");
      ids[static_cast<size_t>(i)] = id;
    }
    const int32_t* indices = in.length() > 0 ? static_cast<const int32_t*>(in.Buffer(1)) + in.offset() : nullptr;
    FillRows(in, out, valid, required, [&](int64_t i) {
      const int32_t index = indices[i];
      if (index < 0 || index >= dict.length()) {
        Fail(in.where, "row " + std::to_string(i) + " indexes entry " + std::to_string(index) +
                           " of a dictionary of " + std::to_string(dict.length()));
      }
      return ids[static_cast<size_t>(index)];
    });
  }

  void Import(const ColumnDef& def, StringColumn& out, Column<uint8_t>* valid, const ArrayIn& in, bool required) {
    const bool utf8 = def.kind == ColumnKind::kString;
    CheckArray(in, utf8 ? "u" : "z", in.length());
    FillStrings(in, out, valid, required, utf8);
  }

  // The list's offsets (rebased to start at 0) and its child array.
  ArrayIn ListRows(const ArrayIn& in, Column<uint8_t>* valid, bool required) {
    CheckArray(in, "+l", in.length());
    if (in.schema->n_children != 1 || in.array->n_children != 1 || in.schema->children == nullptr ||
        in.array->children == nullptr) {
      Fail(in.where, "a list without its values");
    }
    const ArrayIn child{in.schema->children[0], in.array->children[0], in.where + " (values)"};
    if (child.array == nullptr || child.array->length < 0) Fail(in.where, "a list without its values");
    const int32_t* offsets = CheckedOffsets(in, child.array->length);
    const uint8_t* validity = in.Validity();
    for (int64_t i = 0; i < in.length(); ++i) {
      const bool present = in.Valid(validity, i);
      if (!present && required) Fail(in.where, "a null at row " + std::to_string(i) + ", where every row has a value");
      // A null row holds no values (its offsets may still span some: they are skipped).
      if (valid != nullptr) valid->push_back(present ? 1 : 0);
    }
    (void)offsets;
    return child;
  }

  template <class T>
  void Import(const ColumnDef& def, ListColumn<T>& out, Column<uint8_t>* valid, const ArrayIn& in, bool required) {
    const ArrayIn child = ListRows(in, valid, required);
    CheckArray(child, FormatOf<T>(), child.array->length);
    NoNulls(child);
    if (in.length() == 0) return;
    const int32_t* offsets = static_cast<const int32_t*>(in.Buffer(1)) + in.offset();
    const T* values = child.length() > 0 ? static_cast<const T*>(child.Buffer(1)) + child.offset() : nullptr;
    const uint8_t* validity = in.Validity();
    for (int64_t i = 0; i < in.length(); ++i) {
      if (in.Valid(validity, i)) {
        out.values.insert(out.values.end(), values + offsets[i], values + offsets[i + 1]);
      }
      out.CloseRow();
    }
  }

  void Import(const ColumnDef& def, ListStringColumn& out, Column<uint8_t>* valid, const ArrayIn& in, bool required) {
    const ArrayIn child = ListRows(in, valid, required);
    CheckArray(child, "u", child.array->length);
    NoNulls(child);
    if (in.length() == 0) return;
    const int32_t* offsets = static_cast<const int32_t*>(in.Buffer(1)) + in.offset();
    const int32_t* child_offsets = CheckedOffsets(child, -1);
    const char* data = StringData(child, child_offsets);
    const uint8_t* validity = in.Validity();
    for (int64_t i = 0; i < in.length(); ++i) {
      if (in.Valid(validity, i)) {
        for (int32_t j = offsets[i]; j < offsets[i + 1]; ++j) {
          const std::string_view s = StringAt(data, child_offsets, j);
          if (!StringPool::IsValidUtf8(s)) Fail(child.where, "value " + std::to_string(j) + " is not UTF-8");
          out.values.Append(s);
        }
      }
      out.CloseRow();
    }
  }
};

// Whether every row of `in` is null.
bool AllNull(const ArrayIn& in) {
  if (in.length() == 0) return true;
  if (in.array->null_count == in.length()) return true;
  if (in.array->null_count == 0) return false;
  const uint8_t* validity = in.Validity();
  if (validity == nullptr) return false;
  for (int64_t i = 0; i < in.length(); ++i) {
    if (in.Valid(validity, i)) return false;
  }
  return true;
}

DeviceKind DeviceKindFromName(std::string_view name, const std::string& where) {
  for (int k = 0; k <= static_cast<int>(DeviceKind::kAnnotation); ++k) {
    if (name == DeviceKindName(static_cast<DeviceKind>(k))) return static_cast<DeviceKind>(k);
  }
  Fail(where, "device kind '" + std::string(name) + "' is not one tracecore knows");
}

// The child array of column `name` of a struct array, or {nullptr, nullptr}.
ArrayIn ColumnOf(const ArrayIn& whole, const char* name, const std::string& where) {
  ArrayIn out{nullptr, nullptr, where};
  for (int64_t c = 0; c < whole.schema->n_children; ++c) {
    const ArrowSchema* s = whole.schema->children[c];
    if (s != nullptr && s->name != nullptr && std::strcmp(s->name, name) == 0) {
      if (out.schema != nullptr) Fail(where, "appears twice");
      out.schema = s;
      out.array = whole.array->children[c];
      if (out.array == nullptr) Fail(where, "no array");
    }
  }
  return out;
}

template <class Table>
void ImportTable(const ArrowTableInput& input, Table& table, StringPool& pool) {
  const std::string where = "table " + input.name;
  std::vector<ArrayIn> batches;
  for (const ArrowBatchInput& batch : input.batches) {
    const ArrayIn whole{batch.schema, batch.array, where};
    CheckArray(whole, "+s", batch.array != nullptr ? batch.array->length : 0);
    if (whole.array->n_children != whole.schema->n_children ||
        (whole.array->n_children > 0 &&
         (whole.array->children == nullptr || whole.schema->children == nullptr))) {
      Fail(where, "the columns of the schema and of the array differ");
    }
    if (whole.array->null_count != 0 && whole.array->n_buffers > 0 &&
        whole.array->buffers != nullptr && whole.array->buffers[0] != nullptr) {
      Fail(where, "null rows");
    }
    batches.push_back(whole);
  }
  ColumnImporter importer{pool};
  table.ForEachColumn([&](const ColumnDef& def, auto& storage, Column<uint8_t>* valid) {
    if (!def.exported()) return;
    const std::string column_where = where + ", column " + def.name;
    std::vector<ArrayIn> parts;
    size_t missing = 0;
    bool all_null = true;
    for (const ArrayIn& whole : batches) {
      const ArrayIn in = ColumnOf(whole, def.name, column_where);
      if (in.schema == nullptr) {
        ++missing;
        continue;
      }
      if (in.array->length != whole.array->length) {
        Fail(column_where, std::to_string(in.array->length) + " rows, expected " +
                               std::to_string(whole.array->length));
      }
      all_null = all_null && AllNull(in);
      parts.push_back(in);
    }
    const bool optional = def.holding == ColumnHolding::kOptional;
    if (missing > 0 && !(optional && missing == batches.size())) Fail(column_where, "missing");
    if (optional && all_null) {
      // Checked for its type, then left empty, as an importer without such values leaves it.
      for (const ArrayIn& in : parts) {
        Column<uint8_t> scratch;
        std::decay_t<decltype(storage)> probe;
        importer.Import(def, probe, &scratch, in, false);
      }
      return;
    }
    for (const ArrayIn& in : parts) {
      importer.Import(def, storage, valid, in, def.holding == ColumnHolding::kRequired);
    }
  });
}

// Checks every reference column of `t` points at a row that exists (EventRef -1 where an
// importer writes it: an alloc_records row of no event), and the row-number columns.
void CheckReferences(TraceTables& t) {
  const auto devices = static_cast<int64_t>(t.devices.size());
  const auto events = static_cast<int64_t>(t.events.size());
  int64_t max_graph = -1;
  t.ForEachTable([&](const TableDef& table_def, auto& table) {
    const bool no_event_allowed = std::string_view(table_def.name) == "alloc_records";
    table.ForEachColumn([&](const ColumnDef& def, auto& storage, Column<uint8_t>* valid) {
      using Storage = std::decay_t<decltype(storage)>;
      if constexpr (std::is_same_v<Storage, Column<int32_t>> || std::is_same_v<Storage, Column<int64_t>>) {
        if (def.role != ColumnRole::kDeviceRef && def.role != ColumnRole::kEventRef &&
            def.role != ColumnRole::kGraphRef) {
          return;
        }
        const std::string where = std::string("table ") + table_def.name + ", column " + def.name;
        for (size_t i = 0; i < storage.size(); ++i) {
          if (valid != nullptr && !valid->empty() && (*valid)[i] == 0) continue;
          const int64_t v = storage[i];
          bool ok;
          if (def.role == ColumnRole::kDeviceRef) {
            ok = v >= 0 && v < devices;
          } else if (def.role == ColumnRole::kEventRef) {
            ok = (v >= 0 && v < events) || (v == -1 && no_event_allowed);
          } else {
            ok = v >= 0 && v < std::numeric_limits<int32_t>::max();
            if (ok && v > max_graph) max_graph = v;
          }
          if (!ok) Fail(where, "row " + std::to_string(i) + " refers to " + std::to_string(v) + ", which is not a row");
        }
      }
    });
  });
  for (size_t i = 0; i < t.devices.size(); ++i) {
    if (t.devices.device_index[i] != static_cast<int32_t>(i)) {
      Fail("table devices, column device_index", "row " + std::to_string(i) + " holds " +
                                                     std::to_string(t.devices.device_index[i]));
    }
  }
  for (size_t i = 0; i < t.events.size(); ++i) {
    if (t.events.event_id[i] != static_cast<int64_t>(i)) {
      Fail("table events, column event_id", "row " + std::to_string(i) + " holds " +
                                                std::to_string(t.events.event_id[i]));
    }
  }
  // The queries take the events of block d as the n_events[d] rows after those of the blocks
  // before it: every block's count is its own events', in order, and they cover the table.
  uint64_t row = 0;
  for (size_t d = 0; d < t.devices.size(); ++d) {
    const int64_t n = t.devices.n_events[d];
    if (n < 0 || static_cast<uint64_t>(n) > t.events.size() - row) {
      Fail("table devices, column n_events",
           "row " + std::to_string(d) + " holds " + std::to_string(n) + ", but " +
               std::to_string(t.events.size() - row) + " events are left for it and the blocks after it");
    }
    for (uint64_t end = row + static_cast<uint64_t>(n); row < end; ++row) {
      if (t.events.device_index[row] != static_cast<int32_t>(d)) {
        Fail("table events, column device_index",
             "row " + std::to_string(row) + " holds " + std::to_string(t.events.device_index[row]) +
                 ", but devices.n_events puts it in block " + std::to_string(d));
      }
    }
  }
  if (row != t.events.size()) {
    Fail("table devices, column n_events", "the blocks hold " + std::to_string(row) + " of " +
                                               std::to_string(t.events.size()) + " events");
  }
  // A link's events (nullable references to events).
  const auto check_link_events = [&](const Column<int64_t>& ids, const Column<uint8_t>& valid,
                                     const char* column) {
    for (size_t i = 0; i < ids.size(); ++i) {
      if (!valid.empty() && valid[i] == 0) continue;
      if (ids[i] < 0 || ids[i] >= events) {
        Fail(std::string("table links, column ") + column,
             "row " + std::to_string(i) + " refers to " + std::to_string(ids[i]) + ", which is not a row");
      }
    }
  };
  check_link_events(t.links.from_event_id, t.links.from_event_id_valid, "from_event_id");
  check_link_events(t.links.to_event_id, t.links.to_event_id_valid, "to_event_id");
  t.graph_count = static_cast<int32_t>(max_graph + 1);
}

}  // namespace

TraceKind TraceKindFromName(const std::string& name) {
  for (int k = 1; k <= static_cast<int>(TraceKind::kKineto); ++k) {  // not kUnknown ("")
    if (name == TraceKindName(static_cast<TraceKind>(k))) return static_cast<TraceKind>(k);
  }
  throw TraceFormatError("trace kind '" + name + "' is not one tracecore knows");
}

Encoding EncodingFromName(const std::string& name) {
  for (int k = 0; k <= static_cast<int>(Encoding::kJson); ++k) {
    if (name == EncodingName(static_cast<Encoding>(k))) return static_cast<Encoding>(k);
  }
  throw TraceFormatError("trace format '" + name + "' is not one tracecore knows");
}

std::shared_ptr<TraceTables> ImportTables(const std::vector<ArrowTableInput>& inputs,
                                          TraceKind kind, Encoding format) {
  const bool stepstats = kind == TraceKind::kStepStats || kind == TraceKind::kRunMetadata;
  const bool chrome = kind == TraceKind::kChromeTrace || kind == TraceKind::kKineto;
  const bool fits = stepstats ? format == Encoding::kText || format == Encoding::kBinary
                    : chrome  ? format == Encoding::kJson
                              : format == Encoding::kXSpace;
  if (!fits) {
    throw TraceFormatError(std::string("a ") + TraceKindName(kind) + " trace is not read from " +
                           EncodingName(format) + " input");
  }
  auto t = std::make_shared<TraceTables>();
  t->kind = kind;
  t->format = format;
  for (const ArrowTableInput& input : inputs) {
    bool found = false;
    t->ForEachTable([&](const TableDef& def, auto& table) {
      if (input.name != def.name) return;
      if (found) return;
      found = true;
      if (table.size() != 0) Fail("table " + input.name, "given twice");
      try {
        ImportTable(input, table, t->pool);
      } catch (const std::length_error& e) {  // the pool's or a string column's 2 GiB
        Fail("table " + input.name, std::string("too large: ") + e.what());
      }
    });
    if (!found) Fail("table " + input.name, "not a table tracecore knows");
  }
  // The device kinds the queries use, from their names.
  t->devices.kind_code.reserve(t->devices.size());
  for (size_t i = 0; i < t->devices.size(); ++i) {
    const std::string_view name(t->devices.kind.data.data() + t->devices.kind.offsets[i],
                                static_cast<size_t>(t->devices.kind.offsets[i + 1] - t->devices.kind.offsets[i]));
    t->devices.kind_code.push_back(static_cast<uint8_t>(DeviceKindFromName(name, "table devices, column kind")));
  }
  CheckReferences(*t);
  // Tables stored before StepStats steps were numbered: number them as the parse does.
  if (stepstats) AssignStepStatsSteps(*t);
  return t;
}

}  // namespace tracecore
