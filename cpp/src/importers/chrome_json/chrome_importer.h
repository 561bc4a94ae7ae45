// The Chrome trace importer: Chrome trace event JSON (TensorFlow's timeline.py, XProf /
// TensorFlow 2 *.trace.json.gz, JAX trace.json.gz and perfetto_trace.json.gz, PyTorch Kineto
// *.pt.trace.json) read into the trace tables through the sink, with the event decoder
// (chrome_trace_decoder.h). tests/chrome_oracle.py states the same rules in Python.
//
//   devices        one row per (pid, tid) track an event names, in order of first use:
//                  device = the process name (M process_name, else the pid as text), line =
//                  the thread name (M thread_name, else the tid as text, "" without a tid),
//                  line_id = an integer tid; kind: stream (a GPU or TPU process, or a thread
//                  named "stream N"), annotation (a string pid: Kineto's Spans, Traces),
//                  host_thread otherwise
//   events         X events, B/E pairs (the row at the B's place, ended by the E: each E
//                  closes its track's most recent open B), instants (i, I) as zero-length
//                  events; node_name = timeline.py's args.name, else the name; op =
//                  timeline.py's args.op, else the name; timeline_label = the name; cat
//   counters       one row per args entry of each C event
//   links          flows (s, t, f of one cat and id): one row per step of a chain
//   alloc_records  Kineto [memory] instants (also events) and timeline.py Memory counters
//   event_stats    every args entry of every event: not built by ReadChromeTrace, but by
//                  ReadChromeEventStats, a second pass, when asked for
//
// Unmatched B and E events, and events of other phases, are counted (TraceTables::chrome).
#pragma once

#include <memory>
#include <string_view>

#include "io/mapped_file.h"
#include "tables/trace_tables.h"

namespace tracecore {

// Whether the start of an input is Chrome trace JSON (chrome_json::LooksLikeChromeJson).
bool LooksLikeChromeTrace(std::string_view input);

// Reads `file` as Chrome trace JSON. Throws TraceFormatError (line and column) for bad input
// or a time out of int64 range. `replace_invalid` (errors="replace"): invalid UTF-8, raw
// control characters and lone surrogate escapes in strings become U+FFFD, not errors.
std::shared_ptr<TraceTables> ReadChromeTrace(const MappedFile& file, bool replace_invalid = false);

// The event_stats table of the Chrome trace `file` (the other tables empty), whose
// ReadChromeTrace gave `expected_events` events. Throws TraceFormatError as ReadChromeTrace,
// and when the input no longer holds `expected_events` events (it changed since).
std::shared_ptr<TraceTables> ReadChromeEventStats(const MappedFile& file, size_t expected_events,
                                                  bool replace_invalid = false);

}  // namespace tracecore
