// Perfetto's native trace format (a `Trace` protobuf: a sequence of `TracePacket`s) written
// from a trace's tables, streaming to a file: one process track per device name, one child
// track per (line, lane) of its blocks, a slice (TYPE_SLICE_BEGIN + TYPE_SLICE_END) per event
// with its name interned, and optional counter tracks (memory) and step slices handed in.
//
// The encoding follows the published field numbers of perfetto's protos/perfetto/trace
// (trace.proto, trace_packet.proto, track_event/*.proto, interned_data/interned_data.proto).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "export/device_layout.h"
#include "tables/trace_tables.h"

namespace tracecore::perfetto {

using CounterSeries = trace_export::CounterSeries;

// Step slices ("step N") on a "steps" track of a "Steps" process.
struct StepSpans {
  const int64_t* step = nullptr;
  const int64_t* start_ns = nullptr;
  const int64_t* end_ns = nullptr;
  size_t size = 0;
};

struct WriteStats {
  uint64_t bytes = 0;
  uint64_t packets = 0;
  uint64_t slices = 0;
  uint64_t tracks = 0;
  uint64_t counter_values = 0;
};

// The uuid of the track of process `pid` (0, 1, ... in order of first appearance of a device
// name; then the counter group, then Steps) and of its child track `tid` (0, 1, ... in order
// of first event, as the Chrome export's tids); tid < 0: the process track itself.
inline uint64_t TrackUuid(uint64_t pid, int64_t tid) {
  return ((pid + 1) << 32) | static_cast<uint64_t>(tid + 1);
}

// Writes the trace to `path` (created or truncated). Throws IoError on a failed write.
WriteStats WritePerfettoTrace(const TraceTables& tables, const std::string& path,
                              const CounterSeries* counters, const StepSpans* steps);

}  // namespace tracecore::perfetto
