// Protobuf wire-format importer for StepStats and RunMetadata dumps. Needs no schema objects and
// allocates nothing per record: fields are decoded straight into the TraceSink.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "sink/trace_sink.h"

namespace tracecore {

// The two walks below (DetectBinaryKind, PlanBinaryUnits) read one field header every few KB,
// and the kernel maps a faulting page's neighbours along with it, so a walk maps nearly every
// page it passes. Given `release_walked` (see ReleaseBehind), they hand it what they have
// passed every 32 MB.

// "StepStats" or "RunMetadata", the kind to read first (ParseBinaryEitherKind decides): binary
// dumps carry no marker, so this looks at the top-level fields (RunMetadata's fields 2..5
// decide it) and one level into the first field 1. Given `complete`, only the first 64
// top-level fields are looked at, and *complete says whether that was all of them (false: the
// whole walk may still find a field 2..5; true: the answer is the whole walk's). Never throws;
// malformed input is left for the parser to report.
TraceKind DetectBinaryKind(const uint8_t* data, size_t size,
                             const ReleaseBehind::Release& release_walked = {},
                             bool* complete = nullptr);

// A unit of parallel work: a DeviceStepStats payload, or whole fields (keys and values) of a
// StepStats body or of a RunMetadata, in file order. Small fields share a unit (a small
// DeviceStepStats is a field of its StepStats), so the plan is a few bytes per 64 KB of input.
struct BinaryUnit {
  enum Kind : uint8_t { kDeviceStepStats, kStepStatsField, kRunMetadataField };
  Kind kind;
  const uint8_t* begin;
  const uint8_t* end;
};

// Walks the top two levels of a dump by their length prefixes; *any_device says whether it
// met a DeviceStepStats. Returns false on malformed structure (the sequential parse then
// reports it).
bool PlanBinaryUnits(const uint8_t* data, size_t size, TraceKind kind,
                     std::vector<BinaryUnit>* units, bool* any_device,
                     const ReleaseBehind::Release& release_walked = {});

// Parses units [first, last) into `builder` (offsets in errors stay relative to `data`).
void ParseBinaryUnits(const uint8_t* data, const BinaryUnit* first, const BinaryUnit* last,
                      TraceKind kind, TraceSink& builder);

// Parses [data, data + size) as a binary message of `kind` into `builder`. Throws
// TraceFormatError with the byte offset of the problem.
void ParseBinaryProto(const uint8_t* data, size_t size, TraceKind kind,
                      TraceSink& builder);

// The unknown fields of [data, data + size) read as a message of `kind`, with values out of
// range (TraceFormatError::out_of_range) let through: how well a reading that failed only on
// such a value fits, for choosing the kind of a dump (see ParseTrace). Throws
// TraceFormatError as ParseBinaryProto does for anything else. The tables it builds are
// dropped; `release_read` gets the pages it has passed (see ReleaseBehind).
uint64_t CountBinaryUnknownFields(const uint8_t* data, size_t size, TraceKind kind,
                                  const ReleaseBehind::Release& release_read = {});

}  // namespace tracecore
