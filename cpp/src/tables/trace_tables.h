// The parsed trace: every table's columns, and the one string pool their names index.
//
// Dictionary-encoded columns hold StringPool ids (uint32). Nullable columns keep a byte per row
// in a `*_valid` vector (1 = present). Once a parse finishes the
// tables are immutable and shared (std::shared_ptr<const TraceTables>) by every export and query.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "containers/columns.h"
#include "containers/string_pool.h"
#include "tables/column_def.h"
#include "tables/table_defs.h"
#include "tables/trace_kind.h"

namespace tracecore {

// What a device block holds (devices.kind_code; devices.kind is its name). The first five are
// StepStats blocks (and kStream, kOther XSpace lines too); the others XSpace lines.
enum class DeviceKind : uint8_t {
  kExecutor = 0,
  kStream,
  kStreamAll,
  kMemcpy,
  kOther,
  kHostThread,   // a line of a /host: plane
  kXlaOps,       // "XLA Ops" of a /device: plane
  kXlaModules,   // "XLA Modules"
  kXlaAsyncOps,  // "Async XLA Ops"
  kSteps,        // "Steps"
  kDerived,      // the other lines XProf derives: framework ops, name scopes, source code
  kAnnotation,   // a Chrome trace track of a string pid (Kineto's Spans, Traces)
};

inline const char* DeviceKindName(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::kExecutor: return "executor";
    case DeviceKind::kStream: return "stream";
    case DeviceKind::kStreamAll: return "stream_all";
    case DeviceKind::kMemcpy: return "memcpy";
    case DeviceKind::kOther: return "other";
    case DeviceKind::kHostThread: return "host_thread";
    case DeviceKind::kXlaOps: return "xla_ops";
    case DeviceKind::kXlaModules: return "xla_modules";
    case DeviceKind::kXlaAsyncOps: return "xla_async_ops";
    case DeviceKind::kSteps: return "steps";
    case DeviceKind::kDerived: return "derived";
    case DeviceKind::kAnnotation: return "annotation";
  }
  return "other";
}

// The tables' storage structs, generated from table_defs.h: DeviceTable, EventTable, ...
#define TC_TABLE_STRUCT(name, Struct, rows_column, doc) \
  struct Struct {                                       \
    static constexpr const char* kName = #name;         \
    TC_TABLE_BODY(TRACECORE_COLUMNS_##name, rows_column) \
  };
TRACECORE_TABLES(TC_TABLE_STRUCT)
#undef TC_TABLE_STRUCT

// The events columns an importer of a format without them leaves empty (XSpace, Chrome traces):
// its events' op times are their times, none has a scheduling time or memory sizes.
template <>
struct EmptyFills<EventTable> {
  static constexpr EmptyFillDef kList[] = {
      {"op_start_ns", EmptyFill::kSameAs, "start_ns"},
      {"op_end_ns", EmptyFill::kSameAs, "end_ns"},
      {"scheduled_ns", EmptyFill::kNull, nullptr},
      {"temp_memory_size", EmptyFill::kZero, nullptr},
      {"persistent_memory_size", EmptyFill::kZero, nullptr},
  };
};

// Where a GraphDef sits in a RunMetadata, in the order protobuf presents them: every top-level
// partition_graphs first (fg == 0), then per function_graphs message (fg = its position in the
// input) its partition_graphs, pre_optimization_graph, post_optimization_graph (slot 0, 1, 2).
// `pos` orders repeated partition graphs; it is 0 for the singular pre/post graphs, so that
// one of them seen twice is one GraphDef (protobuf merges repeated singular message fields).
struct GraphKey {
  uintptr_t fg = 0;
  uint8_t slot = 0;
  uintptr_t pos = 0;
  bool operator<(const GraphKey& o) const {
    if (fg != o.fg) return fg < o.fg;
    if (slot != o.slot) return slot < o.slot;
    return pos < o.pos;
  }
  bool operator==(const GraphKey& o) const { return fg == o.fg && slot == o.slot && pos == o.pos; }
};

// A top-level key of a Chrome trace other than traceEvents, with its value: a string decoded,
// a number or literal as written, an object or array as its JSON text.
struct ChromeMetadataEntry {
  std::string key;
  uint8_t kind = 0;  // json::ValueKind
  std::string text;
};

// What a Chrome trace held beyond its tables.
struct ChromeCounts {
  uint64_t unmatched_begin = 0;  // B events no E closed
  uint64_t unmatched_end = 0;    // E events with no open B on their track
  uint64_t other_events = 0;     // events of phases tracecore does not read (async, samples, ...)
  uint64_t empty_objects = 0;    // `{}` elements skipped
  bool bare_array = false;       // the document is an array of events, not an object
  std::vector<ChromeMetadataEntry> metadata;
};

struct TraceTables {
  StringPool pool;
#define TC_TABLE_MEMBER_OF_TRACE(name, Struct, rows_column, doc) Struct name;
  TRACECORE_TABLES(TC_TABLE_MEMBER_OF_TRACE)
#undef TC_TABLE_MEMBER_OF_TRACE

  // Calls f(const TableDef&, table&) for every table, in TableNames() order.
  template <class F>
  void ForEachTable(F&& f) {
    VisitTables(*this, f);
  }
  template <class F>
  void ForEachTable(F&& f) const {
    VisitTables(*this, f);
  }

  // Calls f(const TableDef&, get) for every table, with get a function from a TraceTables to
  // that table.
  template <class F>
  static void ForEachTableAccessor(F&& f) {
#define TC_ACCESS_TABLE(name, Struct, rows_column, doc) \
  f(TableDef{#name, doc}, [](auto& t) -> auto& { return t.name; });
    TRACECORE_TABLES(TC_ACCESS_TABLE)
#undef TC_ACCESS_TABLE
  }

  TraceKind kind = TraceKind::kUnknown;
  Encoding format = Encoding::kText;
  uint64_t input_bytes = 0;
  uint64_t unknown_fields = 0;
  int32_t graph_count = 0;  // GraphDefs seen (graph_index values), including empty ones
  Column<GraphKey> graph_keys;  // per provisional graph_index, until TraceSink::Finish (budgeted)
  int threads_used = 1;
  ChromeCounts chrome;  // Chrome traces only

 private:
  template <class Self, class F>
  static void VisitTables(Self& self, F&& f) {
#define TC_VISIT_TABLE(name, Struct, rows_column, doc) f(TableDef{#name, doc}, self.name);
    TRACECORE_TABLES(TC_VISIT_TABLE)
#undef TC_VISIT_TABLE
  }
};

}  // namespace tracecore
