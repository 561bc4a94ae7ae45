#include "query/query_tables.h"

namespace tracecore::query {

using namespace tracecore::columns;

TableView PairTable::View() const {
  return MakeTableView(static_cast<int64_t>(left.size()),
                       {Int64("left", left), Int64("right", right), Int64("overlap_ns", overlap_ns)});
}

TableView OccupancyTable::View() const {
  return MakeTableView(static_cast<int64_t>(device_index.size()),
                       {Int32("device_index", device_index), Dict("device", device),
                        String("kind", kind), Int64("n_events", n_events), Int64("busy_ns", busy_ns),
                        Int64("span_ns", span_ns), Float64("utilization", utilization),
                        Int64("max_concurrency", max_concurrency), Int64("idle_gaps", idle_gaps)});
}

TableView OccupancyBinsTable::View() const {
  return MakeTableView(static_cast<int64_t>(device_index.size()),
                       {Int32("device_index", device_index), Dict("device", device),
                        Int64("bin_start_ns", bin_start_ns), Int64("busy_ns", busy_ns),
                        Float64("busy_fraction", busy_fraction)});
}

TableView ReplayTimeline::View() const {
  return MakeTableView(static_cast<int64_t>(allocator.size()),
                       {Dict("allocator", allocator), Int64("time_ns", time_ns),
                        Int64("delta_bytes", delta_bytes), Int64("bytes_in_use", bytes_in_use)});
}

TableView ReplayPeaks::View() const {
  return MakeTableView(static_cast<int64_t>(allocator.size()),
                       {Dict("allocator", allocator), Int64("peak_bytes", peak_bytes),
                        Int64("peak_time_ns", peak_time_ns), Int64("live_tensors", live_tensors),
                        Int64("n_changes", n_changes)});
}

TableView ReplayLive::View() const {
  return MakeTableView(static_cast<int64_t>(allocator.size()),
                       {Dict("allocator", allocator), Int64("row", row),
                        String("tensor_name", tensor_name)});
}

TableView OpStatsTable::View() const {
  return MakeTableView(static_cast<int64_t>(key.size()),
                       {String("key", key), Int64("n_events", n_events), Int64("total_ns", total_ns),
                        Float64("mean_ns", mean_ns), Int64("max_ns", max_ns), Int64("busy_ns", busy_ns),
                        Float64("share", share), Int64("executor_ns", executor_ns),
                        Int64("stream_ns", stream_ns)});
}

}  // namespace tracecore::query
