// The visitor interface of XSpaceDecoder<Visitor>: a template parameter (static dispatch, every
// call inlinable, nothing allocated per event). A visitor derives from NullVisitor and hides
// the calls it wants; the decoder calls, for an XSpace:
//
//   OnHostname / OnError / OnWarning      XSpace's hostnames, errors, warnings (wire order,
//                                         interleaved with the planes as on the wire)
//   per plane, in wire order:
//     BeginPlane(plane, index)            id, name; `index` holds the plane's metadata maps,
//                                         complete (decoded before the lines)
//     OnPlaneStat(plane, stat)            each of the plane's stats, in wire order,
//                                         interleaved with its lines as on the wire
//     per line:
//       BeginLine(plane, line)            the fields written before the first event (XLine
//                                         writes duration_ps, display_id, display_name after
//                                         them); line.timestamp_ns, the base of the events'
//                                         times, is final (see RestartLine)
//       per event, in wire order:
//         OnEvent(line, event)            metadata resolved; aggregate or offset_ps
//         OnEventStat(event, stat)        the event's own stats in wire order, then its
//                                         metadata's stats whose metadata id the event does not
//                                         hold (stat.inherited)
//         EndEvent(line, event)
//       EndLine(plane, line)              every field, the last value of each
//       RestartLine(plane, line)          (instead of EndLine, before BeginLine again) the line
//                                         set timestamp_ns after its first event to another
//                                         value, so its events were timed from a stale base:
//                                         forget what was handed since BeginLine; the line is
//                                         handed again, all its fields known. No profiler
//                                         writes that; a columnar sink truncates its columns
//                                         to their length at BeginLine.
//     EndPlane(plane)                     the index and every pointer into it die here
//
// Strings are views of the input (valid UTF-8 where protobuf requires it: names, str_value);
// a ref stat carries the referenced name; a compressed stat carries its gzip'ed bytes
// (StatKind::kCompressed) for the visitor to decompress.
#pragma once

#include <string_view>

#include "importers/xspace/metadata_index.h"
#include "importers/xspace/xspace_types.h"

namespace tracecore::xspace {

struct NullVisitor {
  void OnHostname(std::string_view) {}
  void OnError(std::string_view) {}
  void OnWarning(std::string_view) {}
  void BeginPlane(const Plane&, const MetadataIndex&) {}
  void OnPlaneStat(const Plane&, const Stat&) {}
  void BeginLine(const Plane&, const Line&) {}
  void OnEvent(const Line&, const Event&) {}
  void OnEventStat(const Event&, const Stat&) {}
  void EndEvent(const Line&, const Event&) {}
  void EndLine(const Plane&, const Line&) {}
  void RestartLine(const Plane&, const Line&) {}
  void EndPlane(const Plane&) {}
};

}  // namespace tracecore::xspace
