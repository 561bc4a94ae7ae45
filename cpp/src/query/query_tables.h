// Result tables of the queries: owned columns plus a TableView for the Arrow exporter. Each
// result holds the trace it came from, so dictionary columns can index its string pool.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "containers/columns.h"
#include "core/uninit_vector.h"
#include "tables/table_views.h"
#include "tables/trace_tables.h"

namespace tracecore::query {

struct PairTable {  // overlaps: tens of millions of rows, written in parallel
  UninitVector<int64_t> left, right, overlap_ns;
  TableView View() const;
};

struct OccupancyTable {
  std::vector<int32_t> device_index;
  std::vector<uint32_t> device;
  StringColumn kind;
  std::vector<int64_t> n_events, busy_ns, span_ns, max_concurrency, idle_gaps;
  std::vector<double> utilization;
  TableView View() const;
};

struct OccupancyBinsTable {
  std::vector<int32_t> device_index;
  std::vector<uint32_t> device;
  std::vector<int64_t> bin_start_ns, busy_ns;
  std::vector<double> busy_fraction;
  TableView View() const;
};

struct ReplayTimeline {  // tens of millions of rows, filled in parallel: no zeroing first
  UninitVector<uint32_t> allocator;
  UninitVector<int64_t> time_ns, delta_bytes, bytes_in_use;
  TableView View() const;
};

struct ReplayPeaks {
  std::vector<uint32_t> allocator;
  std::vector<int64_t> peak_bytes, peak_time_ns, live_tensors, n_changes;
  TableView View() const;
};

// What was held at each allocator's peak: rows of the tensors table (source="tensors", with the
// timeline.py tensor name) or of the alloc_records table (source="records").
struct ReplayLive {
  std::vector<uint32_t> allocator;
  std::vector<int64_t> row;
  StringColumn tensor_name;
  TableView View() const;
};

struct OpStatsTable {
  StringColumn key;
  std::vector<int64_t> n_events, total_ns, max_ns, busy_ns, executor_ns, stream_ns;
  std::vector<double> mean_ns, share;
  TableView View() const;
};

}  // namespace tracecore::query
