// Protobuf text format importer for StepStats and RunMetadata dumps.
#pragma once

#include <cstddef>

#include "importers/trace_builder.h"

namespace tracecore {

// Parses [begin, end) as a text-format StepStats or RunMetadata (decided by the first known
// top-level field) into `builder`, and sets the tables' kind. Throws TraceFormatError.
void ParseTextProto(const char* begin, const char* end, TraceBuilder& builder);

}  // namespace tracecore
