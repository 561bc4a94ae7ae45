// What a trace is (the message or file kind it was read from) and how its bytes were encoded.
#pragma once

#include <cstdint>

namespace tracecore {

enum class TraceKind : uint8_t {
  kUnknown = 0,  // not decided yet (a parse that has met no known top-level field)
  kStepStats,
  kRunMetadata,
  kXSpace,
  kChromeTrace,  // Chrome trace event JSON
  kKineto,       // Chrome trace JSON that PyTorch's profiler (Kineto) wrote
};

// kText, kBinary: StepStats / RunMetadata in protobuf text or wire format; kXSpace: an XSpace.
// kJson: Chrome trace event JSON.
enum class Encoding : uint8_t { kText, kBinary, kXSpace, kJson };

// "StepStats", "RunMetadata", "XSpace" ("" for kUnknown): the names Python shows as Trace.kind.
inline const char* TraceKindName(TraceKind kind) {
  switch (kind) {
    case TraceKind::kUnknown: return "";
    case TraceKind::kStepStats: return "StepStats";
    case TraceKind::kRunMetadata: return "RunMetadata";
    case TraceKind::kXSpace: return "XSpace";
    case TraceKind::kChromeTrace: return "ChromeTrace";
    case TraceKind::kKineto: return "Kineto";
  }
  return "";
}

// "text", "binary", "xspace": the names Python shows as Trace.format (and `format=` takes).
inline const char* EncodingName(Encoding encoding) {
  switch (encoding) {
    case Encoding::kText: return "text";
    case Encoding::kBinary: return "binary";
    case Encoding::kXSpace: return "xspace";
    case Encoding::kJson: return "json";
  }
  return "binary";
}

}  // namespace tracecore
