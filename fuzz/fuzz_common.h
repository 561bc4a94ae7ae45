// Shared body of the tracecore fuzz targets (libFuzzer or the standalone driver).
//
// One input is parsed with tracecore::OpenTrace (gzip, then the format registry's ParseTrace)
// from a heap buffer (MappedFile::FromBuffer).
//   * tracecore::TraceFormatError is the expected outcome for bad input: the input is dropped.
//   * Any other exception escaping the parser is a finding (std::length_error / std::bad_alloc
//     included: the inputs are small, so resource limits must never be hit): the harness prints
//     it and aborts, so libFuzzer (or the standalone driver) saves the input as a crash.
//   * A successful parse is checked and exercised like the Python layer would use it: every
//     table is exported through the Arrow C data interface and released, the exported layout is
//     validated (dictionary ids inside the string pool, monotonic offsets, valid UTF-8, unique
//     pool entries, event ids / device indexes in range); a broken invariant aborts (pyarrow
//     trusts these buffers: a bad id or offset is a crash in Python). fuzz_queries also runs
//     every query (overlaps, window, occupancy, replay, op_stats) on it; a query may throw
//     std::overflow_error (Python OverflowError) for results that do not fit int64, nothing else.
//   * With TRACECORE_FUZZ_THREADS_DIFF=1 in the environment the parse is repeated with
//     threads=4 and must give the same outcome and row counts. Off by default: ParseTrace only
//     splits inputs of several MB (kMinChunkBytes), far above fuzzing sizes; the parallel path
//     is checked by tests/test_robustness.py (mutated multi-MB dumps, threads=1 vs 4).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <typeinfo>
#include <unordered_set>
#include <vector>

#include "arrow/arrow_export.h"
#include "core/error.h"
#include "open/format_registry.h"
#include "open/open_trace.h"
#include "io/mapped_file.h"
#include "query/queries.h"
#include "tables/table_views.h"
#include "tables/trace_tables.h"

namespace tracecore_fuzz {

using tracecore::TraceTables;

[[noreturn]] inline void Finding(const std::string& what) {
  std::fprintf(stderr, "\n==tracecore-fuzz== FINDING: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

inline void Check(bool ok, const char* table, const char* column, const std::string& what) {
  if (!ok) Finding(std::string("invariant broken in ") + table + "." + column + ": " + what);
}

// Offsets of an Arrow string / list array: start at 0, never decrease, end at `values`.
inline void CheckOffsets(const int32_t* offsets, int64_t rows, int64_t values, const char* table,
                         const char* column) {
  Check(offsets != nullptr, table, column, "null offsets");
  Check(offsets[0] == 0, table, column, "first offset is not 0");
  for (int64_t i = 0; i < rows; ++i) {
    Check(offsets[i] <= offsets[i + 1], table, column, "offsets decrease at row " + std::to_string(i));
  }
  Check(offsets[rows] == values, table, column,
        "last offset " + std::to_string(offsets[rows]) + " != " + std::to_string(values));
}

inline void CheckStrings(const tracecore::StringColumn& s, int64_t rows, const char* table,
                         const char* column) {
  Check(s.offsets.size() == static_cast<size_t>(rows) + 1, table, column, "string offsets size");
  CheckOffsets(s.offsets.data(), rows, static_cast<int64_t>(s.data.size()), table, column);
  for (int64_t i = 0; i < rows; ++i) {
    std::string_view v(s.data.data() + s.offsets[i], static_cast<size_t>(s.offsets[i + 1] - s.offsets[i]));
    Check(tracecore::StringPool::IsValidUtf8(v), table, column, "invalid UTF-8 at row " + std::to_string(i));
  }
}

inline void CheckPool(const tracecore::StringPool& pool) {
  const uint32_t n = pool.size();
  Check(n >= 1 && pool.Get(0).empty(), "pool", "id0", "id 0 is not the empty string");
  Check(pool.offsets().size() == static_cast<size_t>(n) + 1, "pool", "offsets", "size");
  CheckOffsets(pool.offsets().data(), n, static_cast<int64_t>(pool.bytes().size()), "pool", "offsets");
  std::unordered_set<std::string_view> seen;
  for (uint32_t id = 0; id < n; ++id) {
    const std::string_view s = pool.Get(id);
    Check(tracecore::StringPool::IsValidUtf8(s), "pool", "bytes", "invalid UTF-8 entry");
    Check(seen.insert(s).second, "pool", "bytes", "duplicate entry (dictionary must be unique)");
    Check(pool.Find(s) == id, "pool", "Find", "Find does not return the interned id");
  }
}

// Validates a TableView the way pyarrow will read it.
inline void CheckView(const tracecore::TableView& view, const tracecore::StringPool& pool,
                      const char* table) {
  using tracecore::ColumnKind;
  for (const tracecore::ColumnView& c : view.columns) {
    Check(c.length == view.num_rows, table, c.name, "column length != table rows");
    if (c.all_null) continue;  // an optional column no importer filled: no buffers to check
    switch (c.kind) {
      case ColumnKind::kDictString: {
        const auto* ids = static_cast<const uint32_t*>(c.values);
        for (int64_t i = 0; i < c.length; ++i) {
          if (c.valid != nullptr && c.valid[i] == 0) continue;
          Check(ids[i] < pool.size(), table, c.name,
                "dictionary id " + std::to_string(ids[i]) + " >= pool size " + std::to_string(pool.size()));
        }
        break;
      }
      case ColumnKind::kBool: {
        const auto* b = static_cast<const uint8_t*>(c.values);
        for (int64_t i = 0; i < c.length; ++i) Check(b[i] <= 1, table, c.name, "bool byte not 0/1");
        break;
      }
      case ColumnKind::kString:
        CheckStrings(*c.strings, c.length, table, c.name);
        break;
      case ColumnKind::kBinary:
        Check(c.strings->offsets.size() == static_cast<size_t>(c.length) + 1, table, c.name, "offsets size");
        CheckOffsets(c.strings->offsets.data(), c.length, static_cast<int64_t>(c.strings->data.size()),
                     table, c.name);
        break;
      case ColumnKind::kListInt32:
      case ColumnKind::kListInt64:
        CheckOffsets(c.list_offsets, c.length, c.values_length, table, c.name);
        break;
      case ColumnKind::kListString:
        CheckOffsets(c.list_offsets, c.length, c.values_length, table, c.name);
        CheckStrings(*c.strings, c.values_length, table, c.name);
        break;
      default:
        break;
    }
  }
}

inline void ExportAndRelease(const tracecore::TableView& view, const tracecore::StringPool& pool,
                             const std::shared_ptr<const void>& owner) {
  ArrowSchema schema{};
  ArrowArray array{};
  tracecore::ExportTable(view, pool, owner, &schema, &array);
  if (array.length != view.num_rows) Finding("exported array length != table rows");
  if (schema.release != nullptr) schema.release(&schema);
  if (array.release != nullptr) array.release(&array);
}

inline void CheckRelations(const TraceTables& t) {
  const int64_t n_events = static_cast<int64_t>(t.events.size());
  const int32_t n_devices = static_cast<int32_t>(t.devices.size());
  int64_t sum = 0;
  for (size_t d = 0; d < t.devices.size(); ++d) {
    Check(t.devices.device_index[d] == static_cast<int32_t>(d), "devices", "device_index", "not 0..n-1");
    Check(t.devices.n_events[d] >= 0, "devices", "n_events", "negative");
    sum += t.devices.n_events[d];
  }
  Check(sum == n_events, "devices", "n_events", "sum != number of events");
  for (int64_t i = 0; i < n_events; ++i) {
    Check(t.events.event_id[i] == i, "events", "event_id", "not 0..n-1");
    const int32_t d = t.events.device_index[i];
    Check(d >= 0 && d < n_devices, "events", "device_index", "out of range");
    if (i > 0) Check(d >= t.events.device_index[i - 1], "events", "device_index", "not in block order");
  }
  auto ids_in_range = [&](const tracecore::Column<int64_t>& ids, const char* table) {
    for (size_t i = 0; i < ids.size(); ++i) {
      Check(ids[i] >= 0 && ids[i] < n_events, table, "event_id", "out of range");
      if (i > 0) Check(ids[i] >= ids[i - 1], table, "event_id", "not in file order");
    }
  };
  ids_in_range(t.tensors.event_id, "tensors");
  ids_in_range(t.allocations.event_id, "allocations");
  ids_in_range(t.alloc_records.event_id, "alloc_records");
  ids_in_range(t.persistent_tensors.event_id, "persistent_tensors");
  for (int32_t d : t.thread_names.device_index) {
    Check(d >= 0 && d < n_devices, "thread_names", "device_index", "out of range");
  }
  for (int32_t d : t.aggregate_events.device_index) {
    Check(d >= 0 && d < n_devices, "aggregate_events", "device_index", "out of range");
  }
  Check(t.kind != tracecore::TraceKind::kUnknown, "trace", "kind", "not decided");
}

// Runs `query`; a std::overflow_error (a result that does not fit int64: the documented
// outcome for absurd clocks or sizes, OverflowError in Python) is accepted. Anything else
// propagates to CheckAndExercise, which reports it.
template <class Query>
void Try(Query&& query) {
  try {
    query();
  } catch (const std::overflow_error&) {
  }
}

// Runs every query the Python layer offers on a parsed trace, bounded for fuzzing speed.
inline void RunQueries(const std::shared_ptr<const TraceTables>& owner) {
  namespace q = tracecore::query;
  const TraceTables& t = *owner;
  const size_t n = t.events.size();
  if (n <= 4096) {  // all-pairs output is quadratic
    Try([&] { ExportAndRelease(q::Overlaps(t, nullptr, nullptr, true).View(), t.pool, owner); });
    Try([&] { (void)q::Overlaps(t, nullptr, nullptr, false); });
    Try([&] {
      std::vector<uint8_t> left(n), right(n);
      for (size_t i = 0; i < n; ++i) {
        left[i] = static_cast<uint8_t>(i % 2);
        right[i] = static_cast<uint8_t>(i % 3 != 0);
      }
      q::PairTable sel = q::Overlaps(t, left.data(), right.data(), false);
      for (size_t i = 0; i < sel.left.size(); ++i) {
        Check(sel.left[i] != sel.right[i], "overlaps", "left/right", "an event overlaps itself");
        Check(sel.overlap_ns[i] >= 0, "overlaps", "overlap_ns", "negative");
      }
    });
  }
  Try([&] {
    q::OccupancyTable occ = q::Occupancy(t);
    for (size_t d = 0; d < occ.busy_ns.size(); ++d) {
      Check(occ.busy_ns[d] >= 0 && occ.span_ns[d] >= 0 && occ.busy_ns[d] <= occ.span_ns[d], "occupancy",
            "busy_ns/span_ns", "negative or busy > span");
    }
    ExportAndRelease(occ.View(), t.pool, owner);
  });
  if (n > 0) {
    // Bin widths giving ~16 bins whatever the span (computed without overflow), and 2^61.
    __int128 lo = t.events.start_ns[0], hi = t.events.end_ns[0];
    for (size_t i = 0; i < n; ++i) {
      lo = std::min<__int128>(lo, t.events.start_ns[i]);
      hi = std::max<__int128>(hi, std::max(t.events.start_ns[i], t.events.end_ns[i]));
    }
    __int128 bin = (hi - lo) / 16 + 1;
    if (bin > INT64_MAX) bin = INT64_MAX;
    for (int64_t width : {static_cast<int64_t>(bin), int64_t{1} << 61}) {
      Try([&] {
        q::OccupancyBinsTable bins = q::OccupancyBins(t, width);
        for (int64_t b : bins.busy_ns) Check(b >= 0 && b <= width, "occupancy_bins", "busy_ns", "outside [0, bin_ns]");
        ExportAndRelease(bins.View(), t.pool, owner);
      });
    }
  }
  q::IntervalIndex index(t.events);
  (void)index.Window(INT64_MIN, INT64_MAX);
  if (n > 0) {
    (void)index.Window(t.events.start_ns[0], t.events.end_ns[0]);
    (void)index.Window(t.events.end_ns[n - 1], t.events.start_ns[n - 1]);
  }
  for (bool snapshot : {false, true}) {
    Try([&] {
      q::Replay r = q::ReplayRecords(t, tracecore::StringPool::kNotFound, snapshot);
      ExportAndRelease(r.timeline.View(), t.pool, owner);
      ExportAndRelease(r.peaks.View(), t.pool, owner);
      ExportAndRelease(r.live.View(), t.pool, owner);
    });
  }
  Try([&] {
    q::Replay r = q::ReplayTensors(t, tracecore::StringPool::kNotFound);
    ExportAndRelease(r.timeline.View(), t.pool, owner);
    ExportAndRelease(r.peaks.View(), t.pool, owner);
    ExportAndRelease(r.live.View(), t.pool, owner);
    if (!r.peaks.allocator.empty()) (void)q::ReplayTensors(t, r.peaks.allocator[0]);
  });
  for (q::GroupBy by : {q::GroupBy::kOp, q::GroupBy::kNodeName, q::GroupBy::kDevice}) {
    Try([&] {
      q::OpStatsTable s = q::OpStats(t, by);
      for (size_t g = 0; g < s.total_ns.size(); ++g) {
        Check(s.total_ns[g] >= 0 && s.busy_ns[g] >= 0 && s.max_ns[g] >= 0, "op_stats", "total/busy/max", "negative");
      }
      ExportAndRelease(s.View(), t.pool, owner);
    });
  }
}

struct Outcome {
  bool parsed = false;
  std::vector<size_t> rows;  // per table, when parsed
};

inline std::string ExceptionName(const std::exception& e) { return typeid(e).name(); }

// Parses `file` with `format` / `threads`; converts unexpected exceptions into findings.
inline std::shared_ptr<TraceTables> ParseOrNull(const tracecore::MappedFile& file, const char* format,
                                                int threads, std::string* error) {
  tracecore::OpenOptions options;
  options.format = format;
  options.threads = threads;
  try {
    // OpenTrace: gzip inputs (fuzzed bytes starting 1f 8b) are decompressed, then parsed.
    return tracecore::OpenTrace(file, options);
  } catch (const tracecore::TraceFormatError& e) {
    // (The message may quote non-UTF-8 input bytes: the binding decodes it with
    // backslashreplace; tests/test_robustness.py checks the Python side.)
    if (error != nullptr) *error = e.what();
    return nullptr;
  } catch (const std::exception& e) {
    Finding(std::string("unexpected exception ") + ExceptionName(e) + " from ParseTrace(format=" +
            format + ", threads=" + std::to_string(threads) + "): " + e.what());
  } catch (...) {
    Finding(std::string("unexpected non-std exception from ParseTrace(format=") + format + ")");
  }
}

inline Outcome Summarize(const std::shared_ptr<TraceTables>& t) {
  Outcome o;
  if (!t) return o;
  o.parsed = true;
  o.rows = {t->devices.size(),     t->events.size(),      t->tensors.size(),
            t->allocations.size(), t->alloc_records.size(), t->cost_graph.size(),
            t->graph_nodes.size(), t->thread_names.size(), t->persistent_tensors.size()};
  return o;
}

inline bool ThreadsDiffEnabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("TRACECORE_FUZZ_THREADS_DIFF");
    return v != nullptr && v[0] != '\0' && v[0] != '0';
  }();
  return enabled;
}

// Validates a parsed trace, exports every table and runs every query on it.
inline void CheckAndExercise(const std::shared_ptr<TraceTables>& tables, bool queries) {
  std::shared_ptr<const TraceTables> owner = tables;
  try {
    CheckPool(tables->pool);
    CheckRelations(*tables);
    for (const std::string& name : tracecore::TableNames()) {
      tracecore::TableView view = tracecore::DescribeTable(*tables, name);
      CheckView(view, tables->pool, name.c_str());
      ExportAndRelease(view, tables->pool, owner);
    }
    if (queries) RunQueries(owner);
  } catch (const std::exception& e) {
    Finding(std::string("unexpected exception ") + ExceptionName(e) +
            " from an export or query of a parsed trace: " + e.what());
  }
}

// The whole check for one input; `format` is "text", "binary" or "auto"; `queries`: also run
// every query on a successful parse.
inline void RunInput(const uint8_t* data, size_t size, const char* format, bool queries) {
  auto file = tracecore::MappedFile::FromBuffer(std::string(reinterpret_cast<const char*>(data), size));
  std::string error;
  std::shared_ptr<TraceTables> tables = ParseOrNull(*file, format, 1, &error);
  const Outcome sequential = Summarize(tables);
  if (tables) CheckAndExercise(tables, queries);
  if (ThreadsDiffEnabled()) {
    std::string parallel_error;
    const Outcome parallel = Summarize(ParseOrNull(*file, format, 4, &parallel_error));
    if (parallel.parsed != sequential.parsed) {
      Finding(std::string("threads=1 and threads=4 disagree: ") +
              (sequential.parsed ? "threads=1 parsed, threads=4 failed: " + parallel_error
                                 : "threads=1 failed (" + error + "), threads=4 parsed"));
    }
    if (parallel.rows != sequential.rows) Finding("threads=1 and threads=4 give different row counts");
  }
}

}  // namespace tracecore_fuzz
