// Opening an input as a trace: what comes before the format registry. gzip data (it starts
// with 1f 8b) is decompressed first, into an anonymous mapping the parse then reads (no second
// copy), within a budget; the registry (format_registry.h) then detects and reads the result.
#pragma once

#include <memory>

#include "codec/inflate_all.h"
#include "io/mapped_file.h"
#include "open/format_registry.h"
#include "tables/trace_tables.h"

namespace tracecore {

// True when `file` holds gzip data (its first two bytes are gzip's magic 1f 8b).
bool IsGzip(const MappedFile& file);

// Parses `file`, decompressing it first when it is gzip data. Errors of the decompression name
// their byte offset in the compressed file ("byte offset N of the gzip data: ..."); errors of
// the parse of decompressed data end with " (in the decompressed gzip data)", their line,
// column or offset counted in the decompressed bytes. The decompressed size is bounded by
// `limits` (by default 16 GiB, and 1032 times the compressed size, which no valid deflate
// stream exceeds): beyond it, a TraceFormatError saying so.
std::shared_ptr<TraceTables> OpenTrace(const MappedFile& file, const OpenOptions& options,
                                       const InflateLimits& limits = {});

// Whether traces of `kind` build their event_stats on first use, not in the open (XSpace,
// Chrome trace).
bool HasDeferredEventStats(TraceKind kind);

// The event_stats table of a `file` of `kind` that OpenTrace read (with `expected_events`
// events), decompressing it again when it is gzip (see ReadXSpaceEventStats,
// ReadChromeEventStats).
std::shared_ptr<TraceTables> OpenEventStats(const MappedFile& file, TraceKind kind,
                                            size_t expected_events, const InflateLimits& limits = {},
                                            bool replace_invalid = false);

}  // namespace tracecore
