// Protobuf wire-format importer for StepStats and RunMetadata dumps. Needs no schema objects and
// allocates nothing per record: fields are decoded straight into the TraceBuilder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "importers/trace_builder.h"

namespace tracecore {

// "StepStats" or "RunMetadata": binary dumps carry no marker, so this looks one level into
// field 1 (see docs). Never throws; malformed input is left for the parser to report.
std::string DetectBinaryKind(const uint8_t* data, size_t size);

// Parses [data, data + size) as a binary message of `kind` into `builder`. Throws
// TraceFormatError with the byte offset of the problem.
void ParseBinaryProto(const uint8_t* data, size_t size, const std::string& kind,
                      TraceBuilder& builder);

}  // namespace tracecore
