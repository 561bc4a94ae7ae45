// The format registry: the one place that decides what a file is and which importer reads it.
//
// Each format registers how it recognises its bytes (magic bytes, structure) and how it reads
// them. OpenTrace detects the format of an input (unless the caller names one), refuses files
// that are certainly not traces with a message saying what they are, reads the input with the
// format's importer, and applies the fallbacks between formats whose bytes can look alike.
// docs/architecture.md has the rule as a table.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "io/mapped_file.h"
#include "tables/trace_tables.h"

namespace tracecore {

// The formats tracecore reads, by the name `format=` takes.
enum class Format : uint8_t {
  kStepStatsText,    // "text": StepStats / RunMetadata, protobuf text format
  kStepStatsBinary,  // "binary": StepStats / RunMetadata, protobuf wire format
  kXSpace,           // "xspace": a TensorFlow 2 / JAX profile (XSpace, protobuf wire format)
  kChromeJson,       // "json": Chrome trace event JSON (timeline.py, XProf, JAX, Kineto)
};

// How sure a recogniser is that bytes are in its format.
enum class Recognition : uint8_t { kNo, kMaybe, kYes };

struct FormatEntry {
  Format format;
  const char* name;  // what `format=` takes and Trace.format shows
  // Looks at the input's first bytes (it may be mapped: a recogniser reads as little as it can,
  // 64 KB at most, but for a run of leading whitespace).
  Recognition (*recognise)(std::string_view input);
  // Reads a whole input. Throws TraceFormatError.
  std::shared_ptr<TraceTables> (*read)(const MappedFile& file, int threads);
};

// Every format, in the order detection asks them.
const std::vector<FormatEntry>& Formats();

struct OpenOptions {
  // The tables' memory budget by default: kTableBytesPerInputByte bytes per byte parsed, at
  // least kMinTableBytes. Dumps TensorFlow and profilers write take under 8 bytes of tables
  // per byte (the samples: text 0.5, binary 2, XSpace 6); records of one or two bytes (an
  // empty node_stats) take about 100 bytes each, up to 50 per byte.
  static constexpr uint64_t kTableBytesPerInputByte = 16;
  static constexpr uint64_t kMinTableBytes = uint64_t{64} << 20;

  std::string format = "auto";  // "auto" or a FormatEntry name
  int threads = 0;              // 0 = every core
  // errors="replace": strings of Chrome trace JSON with invalid UTF-8 get U+FFFD (the other
  // formats have no such option: their strings must be UTF-8).
  bool replace_invalid = false;
  // Most bytes the tables' columns may take while the input is parsed (ColumnBudget; room
  // reserved ahead counts): past it, a TraceFormatError at the position reached. 0: the
  // default above.
  uint64_t max_table_bytes = 0;
  // Appended to that error: how the caller raises the budget.
  std::string table_budget_hint = "a larger max_table_bytes allows more";

  // The budget for `input_bytes` of input.
  uint64_t TableBudget(uint64_t input_bytes) const;
};

// What the first bytes of an input say it is: the first format whose recogniser says kYes,
// else the first that says kMaybe. Throws TraceFormatError (at byte offset 0) for an input that
// is certainly no trace (an image, an archive, a Parquet file, ...).
Format DetectFormat(std::string_view input);

// The name of a format ("text", "binary", "xspace", "json").
const char* FormatName(Format format);

// Parses a whole input. Throws TraceFormatError for bad input or tables past the budget
// (OpenOptions::max_table_bytes), std::invalid_argument for bad options.
std::shared_ptr<TraceTables> ParseTrace(const MappedFile& file, const OpenOptions& options);

}  // namespace tracecore
