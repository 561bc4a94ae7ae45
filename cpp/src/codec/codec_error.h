// The TraceFormatError the codecs throw: "byte offset N of the gzip data: what", with the
// offset (in the compressed input) in TraceFormatError::offset.
#pragma once

#include <cstdint>
#include <string>

#include "core/error.h"

namespace tracecore {

inline TraceFormatError CompressedDataError(const char* format_name, uint64_t offset,
                                            const std::string& what) {
  TraceFormatError e("byte offset " + std::to_string(offset) + " of the " + format_name +
                     " data: " + what);
  e.where = TraceFormatError::Where::kBinary;
  e.offset = offset;
  return e;
}

}  // namespace tracecore
