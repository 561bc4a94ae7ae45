// The StepStats / RunMetadata importer: reads a dump, text or binary, on one thread or in
// chunks on several, into tables.
#pragma once

#include <memory>

#include "io/mapped_file.h"
#include "tables/trace_tables.h"

namespace tracecore {

// Reads `file` as a dump in `encoding`. A binary dump carries no type: it is read as the kind
// its structure suggests, and as the other kind when that fits better (see
// ParseBinaryEitherKind). `threads`: 0 = every core; inputs under 4 MB a thread use fewer.
// Throws TraceFormatError for bad input, std::invalid_argument for threads < 0.
std::shared_ptr<TraceTables> ReadStepStats(const MappedFile& file, Encoding encoding, int threads);

}  // namespace tracecore
