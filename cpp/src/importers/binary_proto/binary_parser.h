// Protobuf wire-format importer for StepStats and RunMetadata dumps. Needs no schema objects and
// allocates nothing per record: fields are decoded straight into the TraceBuilder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "importers/trace_builder.h"

namespace tracecore {

// "StepStats" or "RunMetadata": binary dumps carry no marker, so this looks one level into
// field 1 (see docs). Never throws; malformed input is left for the parser to report.
std::string DetectBinaryKind(const uint8_t* data, size_t size);

// A unit of parallel work: a DeviceStepStats payload, or one whole field (key and value) of a
// StepStats body or of a RunMetadata, in file order.
struct BinaryUnit {
  enum Kind : uint8_t { kDeviceStepStats, kStepStatsField, kRunMetadataField };
  Kind kind;
  const uint8_t* begin;
  const uint8_t* end;
};

// Walks the top two levels of a dump by their length prefixes. Returns false on malformed
// structure (the sequential parse then reports it).
bool PlanBinaryUnits(const uint8_t* data, size_t size, const std::string& kind,
                     std::vector<BinaryUnit>* units);

// Parses units [first, last) into `builder` (offsets in errors stay relative to `data`).
void ParseBinaryUnits(const uint8_t* data, const BinaryUnit* first, const BinaryUnit* last,
                      const std::string& kind, TraceBuilder& builder);

// Parses [data, data + size) as a binary message of `kind` into `builder`. Throws
// TraceFormatError with the byte offset of the problem.
void ParseBinaryProto(const uint8_t* data, size_t size, const std::string& kind,
                      TraceBuilder& builder);

}  // namespace tracecore
