// Entry point of the importers: detects the encoding and message kind of a dump and parses it
// into tables.
#pragma once

#include <memory>
#include <string>

#include "io/mapped_file.h"
#include "tables/trace_tables.h"

namespace tracecore {

struct OpenOptions {
  std::string format = "auto";  // "auto" | "text" | "binary"
  int threads = 0;              // 0 = every core
};

// "text" or "binary", from the first bytes of the input.
std::string DetectFormat(const char* data, size_t size);

// Parses a whole dump. Throws TraceFormatError for bad input, std::invalid_argument for bad
// options.
std::shared_ptr<TraceTables> ParseTrace(const MappedFile& file, const OpenOptions& options);

}  // namespace tracecore
