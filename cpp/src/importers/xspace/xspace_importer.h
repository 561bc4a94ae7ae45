// The XSpace importer: a TensorFlow 2 / JAX / PyTorch-XLA profile (`<host>.xplane.pb`) read
// into the trace tables through the sink, with the XSpace decoder (xspace_decoder.h).
//
//   devices  one row per XLine: device = the plane's name, line = the line's name, line_id,
//            kind from the plane and line names (ClassifyXLine in sink/trace_semantics.h)
//   events   one row per timed XEvent, in file order: node_name = the event metadata's name,
//            timeline_label = its display_name, op (hlo_category > hlo_op without its
//            ".<n>" > the OpType of a TensorFlow "scope/name:OpType"), start_ns/end_ns =
//            floor((line.timestamp_ns * 1000 + offset_ps [+ duration_ps]) / 1000), step =
//            group_id > step_num > iter_num (tests/xspace_oracle.py has the same rules)
//
//   aggregate_events  the events with num_occurrences (no point in time: not on the timeline)
//   plane_stats       every stat of every plane
//   alloc_records     one row per MemoryAllocation / MemoryDeallocation event, its stats
//                     (its own, then its metadata's; the first of a name) as columns
//   event_stats       every stat of every timed event: not built by ReadXSpace (they can take
//                     more memory than the events), but by ReadXSpaceEventStats, a second pass
//                     over the same input, when asked for
#pragma once

#include <memory>
#include <string_view>

#include "io/mapped_file.h"
#include "tables/trace_tables.h"

namespace tracecore {

// Whether the start of an input has the structure of an XSpace: its first plane (field 1)
// holds a field StepStats and RunMetadata messages cannot have there (a varint id, metadata
// maps or stats), or a line with XLine fields (a timestamp, events). Reads at most the first
// 64 KB.
bool LooksLikeXSpace(std::string_view input);

// Reads `file` as a serialised XSpace. Throws TraceFormatError (with a byte offset) for bad
// input or a time out of int64 range.
std::shared_ptr<TraceTables> ReadXSpace(const MappedFile& file);

// The event_stats table of the XSpace `file` (the other tables empty), whose ReadXSpace gave
// `expected_events` events: event_id numbers the timed events as ReadXSpace does. Throws
// TraceFormatError as ReadXSpace, and when the input no longer holds `expected_events` timed
// events (it changed since it was read).
std::shared_ptr<TraceTables> ReadXSpaceEventStats(const MappedFile& file, size_t expected_events);

}  // namespace tracecore
