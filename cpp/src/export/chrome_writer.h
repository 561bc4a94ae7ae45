// Chrome trace-event JSON (the format chrome://tracing and Perfetto load) written from a
// trace's tables, streaming through a buffer: the text of python/tracecore/chrome.py's
// chrome_trace_events, byte for byte (pids per device name, timeline.py lanes per line as
// tids, thread_name metadata, args from the timeline label, json.dumps' ensure_ascii
// escaping, ts/dur as microseconds with 3 decimals), with counters and step slices handed in.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "io/output_file.h"

#include "export/device_layout.h"
#include "tables/trace_tables.h"

namespace tracecore::chrome {

// Where the JSON goes, in chunks of about 1 MiB.
class Sink {
 public:
  virtual ~Sink() = default;
  virtual void Write(const char* data, size_t n) = 0;
};

using Counters = trace_export::CounterSeries;

// Step slices ("step N") on the "steps" thread of a "Steps" process.
struct Steps {
  const int64_t* step = nullptr;
  const int64_t* start_ns = nullptr;
  const int64_t* duration_ns = nullptr;
  size_t size = 0;
};

struct WriteStats {
  uint64_t bytes = 0;
  uint64_t events = 0;  // JSON objects in traceEvents (metadata included)
};

// Writes the whole JSON document to `sink`.
WriteStats WriteChromeTrace(const TraceTables& tables, Sink& sink, const Counters* counters,
                            const Steps* steps);

// A Sink writing to a file (created/truncated from `path`); Close() reports errors.
class FileSink : public Sink {
 public:
  explicit FileSink(const std::string& path) : file_(path) {}
  void Write(const char* data, size_t n) override { file_.Write(data, n); }
  void Close() { file_.Close(); }

 private:
  OutputFile file_;
};

}  // namespace tracecore::chrome
