// What a trace is (the message or file kind it was read from) and how its bytes were encoded.
#pragma once

#include <cstdint>

namespace tracecore {

enum class TraceKind : uint8_t {
  kUnknown = 0,  // not decided yet (a parse that has met no known top-level field)
  kStepStats,
  kRunMetadata,
};

enum class Encoding : uint8_t { kText, kBinary };

// "StepStats", "RunMetadata" ("" for kUnknown): the names Python shows as Trace.kind.
inline const char* TraceKindName(TraceKind kind) {
  switch (kind) {
    case TraceKind::kUnknown: return "";
    case TraceKind::kStepStats: return "StepStats";
    case TraceKind::kRunMetadata: return "RunMetadata";
  }
  return "";
}

// "text", "binary": the names Python shows as Trace.format.
inline const char* EncodingName(Encoding encoding) {
  return encoding == Encoding::kText ? "text" : "binary";
}

}  // namespace tracecore
