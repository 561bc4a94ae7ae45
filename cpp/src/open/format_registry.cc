#include "open/format_registry.h"

#include <algorithm>
#include <exception>
#include <stdexcept>
#include <string>

#include "containers/column_budget.h"
#include "core/error.h"
#include "importers/chrome_json/chrome_importer.h"
#include "importers/stepstats/stepstats_importer.h"
#include "importers/xspace/xspace_importer.h"

namespace tracecore {
namespace {

// Detection reads this much of an input's start.
constexpr size_t kHeadBytes = 65536;

bool IsTextWhitespace(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
}

// Protobuf text: after whitespace, a character that can start a field name or a comment, and
// no control bytes but whitespace in the first 64 KB. Blank input is taken for text too (the
// text parser reports it as empty).
Recognition RecogniseStepStatsText(std::string_view input) {
  size_t i = 0;
  while (i < input.size() && IsTextWhitespace(input[i])) ++i;
  if (i == input.size()) return Recognition::kYes;
  const char first = input[i];
  const bool text_start = (first >= 'a' && first <= 'z') || (first >= 'A' && first <= 'Z') ||
                          first == '_' || first == '#' || first == '[';
  if (!text_start) return Recognition::kNo;
  const size_t probe = input.size() < kHeadBytes ? input.size() : kHeadBytes;
  for (size_t k = i; k < probe; ++k) {
    const auto c = static_cast<unsigned char>(input[k]);
    if (c < 0x20 && !IsTextWhitespace(static_cast<char>(c))) return Recognition::kNo;
  }
  return Recognition::kYes;
}

// Any bytes may be a binary StepStats or RunMetadata: the format of last resort.
Recognition RecogniseStepStatsBinary(std::string_view) { return Recognition::kMaybe; }

// An XSpace, by its structure (see LooksLikeXSpace), never by the file's name.
Recognition RecogniseXSpace(std::string_view input) {
  return LooksLikeXSpace(input) ? Recognition::kYes : Recognition::kNo;
}

// Chrome trace JSON by its top-level keys (LooksLikeChromeTrace); any other JSON object may
// be one whose keys come later (the JSON reader then says what it lacks).
Recognition RecogniseChromeJson(std::string_view input) {
  if (LooksLikeChromeTrace(input)) return Recognition::kYes;
  auto json_space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  size_t i = 0;
  if (input.substr(0, 3) == "\xef\xbb\xbf") i = 3;
  while (i < input.size() && json_space(input[i])) ++i;
  if (i == input.size() || input[i] != '{') return Recognition::kNo;
  ++i;
  while (i < input.size() && json_space(input[i])) ++i;
  // An object's first key (or its end): '{' then '"' or '}'.
  return i < input.size() && (input[i] == '"' || input[i] == '}') ? Recognition::kMaybe
                                                                     : Recognition::kNo;
}

std::shared_ptr<TraceTables> ReadChromeJsonFile(const MappedFile& file, int) {
  return ReadChromeTrace(file);
}

std::shared_ptr<TraceTables> ReadXSpaceFile(const MappedFile& file, int) { return ReadXSpace(file); }

std::shared_ptr<TraceTables> ReadStepStatsText(const MappedFile& file, int threads) {
  return ReadStepStats(file, Encoding::kText, threads);
}
std::shared_ptr<TraceTables> ReadStepStatsBinary(const MappedFile& file, int threads) {
  return ReadStepStats(file, Encoding::kBinary, threads);
}

// Files that are certainly not traces, by their first bytes.
struct NotATrace {
  std::string_view magic;
  const char* what;
};
constexpr NotATrace kNotTraces[] = {
    {"\x89PNG\r\n\x1a\n", "a PNG image"},
    {"\xff\xd8\xff", "a JPEG image"},
    {"GIF8", "a GIF image"},
    {"%PDF-", "a PDF document"},
    {"PK\x03\x04", "a ZIP archive"},
    {"\x7f" "ELF", "an ELF executable"},
    {"BZh", "bzip2-compressed (decompress it first)"},
    {std::string_view("\xfd" "7zXZ\x00", 6), "xz-compressed (decompress it first)"},
    {"\x28\xb5\x2f\xfd", "zstd-compressed (decompress it first)"},
    {"PAR1", "a Parquet file (open the directory Trace.to_parquet wrote)"},
};

const FormatEntry& EntryOf(Format format) {
  for (const FormatEntry& e : Formats()) {
    if (e.format == format) return e;
  }
  throw std::logic_error("format not registered");
}

// The other reading of bytes that can be taken for either StepStats encoding.
Format OtherStepStatsEncoding(Format format) {
  return format == Format::kStepStatsText ? Format::kStepStatsBinary : Format::kStepStatsText;
}

// The name of what a reading took the input for ("a RunMetadata", "an XSpace").
std::string ReadingName(const TraceTables& t) {
  const std::string kind = TraceKindName(t.kind);
  if (kind.empty()) return "a trace";
  return (kind[0] == 'X' ? "an " : "a ") + kind;
}

// A reading with zero events (and no graph, as a RunMetadata holding only graphs has) that
// skipped unknown fields read bytes of another kind: the fields it knows are absent, and what
// it skipped is the content. Never an empty success.
void RejectEmptyWithUnknownFields(const TraceTables& t, std::string_view input, Format read_as) {
  if (t.events.size() != 0 || t.graph_nodes.size() != 0 || t.cost_graph.size() != 0 ||
      t.unknown_fields == 0) {
    return;
  }
  std::string looks = "no trace tracecore reads";
  for (const FormatEntry& e : Formats()) {
    if (e.format != read_as && e.recognise(input) == Recognition::kYes) {
      looks = std::string("a file of format '") + e.name + "'";
      break;
    }
  }
  const std::string what = "not " + ReadingName(t) + " (format '" + FormatName(read_as) +
                           "'): the file looks like " + looks + ": 0 events and " +
                           std::to_string(t.unknown_fields) +
                           " unknown fields (expected events; the skipped fields hold the content)";
  if (t.format == Encoding::kText) throw TraceFormatError::AtText(1, 1, what);
  throw TraceFormatError::AtByte(0, what);
}

// A reading of `file` as `format` that succeeds (zero-events rule included), else null.
std::shared_ptr<TraceTables> ReadOrNull(const MappedFile& file, Format format, int threads) {
  try {
    std::shared_ptr<TraceTables> tables = EntryOf(format).read(file, threads);
    RejectEmptyWithUnknownFields(*tables, std::string_view(file.data(), file.size()), format);
    return tables;
  } catch (const TraceFormatError&) {
    if (file.ShrankSinceOpen()) throw;
    return nullptr;
  }
}

// A reading of `file` as `format` when it succeeds with no unknown fields (and, for an XSpace
// taken as a last resort, some events), else null.
std::shared_ptr<TraceTables> ReadIfClean(const MappedFile& file, Format format, int threads) {
  std::shared_ptr<TraceTables> tables = ReadOrNull(file, format, threads);
  if (!tables || tables->unknown_fields != 0) return nullptr;
  if (format == Format::kXSpace && tables->events.size() == 0) return nullptr;
  return tables;
}

TraceFormatError Truncated() {
  return TraceFormatError("the file was truncated by another process while it was being read");
}

}  // namespace

const std::vector<FormatEntry>& Formats() {
  static const std::vector<FormatEntry> formats = {
      {Format::kChromeJson, "json", &RecogniseChromeJson, &ReadChromeJsonFile},
      {Format::kStepStatsText, "text", &RecogniseStepStatsText, &ReadStepStatsText},
      {Format::kXSpace, "xspace", &RecogniseXSpace, &ReadXSpaceFile},
      {Format::kStepStatsBinary, "binary", &RecogniseStepStatsBinary, &ReadStepStatsBinary},
  };
  return formats;
}

const char* FormatName(Format format) { return EntryOf(format).name; }

Format DetectFormat(std::string_view input) {
  for (const NotATrace& n : kNotTraces) {
    if (input.substr(0, n.magic.size()) == n.magic) {
      TraceFormatError e = TraceFormatError::AtByte(0, std::string("not a trace: the file is ") + n.what);
      throw e;
    }
  }
  const FormatEntry* maybe = nullptr;
  for (const FormatEntry& e : Formats()) {
    const Recognition r = e.recognise(input);
    if (r == Recognition::kYes) return e.format;
    if (r == Recognition::kMaybe && maybe == nullptr) maybe = &e;
  }
  if (maybe == nullptr) throw TraceFormatError::AtByte(0, "not a trace in any format tracecore reads");
  return maybe->format;
}

namespace {

// The error for tables past `options`' budget, located where the parse had got to.
TraceFormatError OverBudget(const MappedFile& file, const OpenOptions& options,
                            const ColumnBudgetExceeded& e) {
  std::string what = e.what();
  if (options.max_table_bytes == 0) {
    what += ", the budget for this input (max_table_bytes: by default " +
            std::to_string(OpenOptions::kTableBytesPerInputByte) + " times its " +
            std::to_string(file.size()) + " bytes, at least " +
            std::to_string(OpenOptions::kMinTableBytes) +
            "; traces take under 8 times their size, records of one or two bytes up to 50)";
  } else {
    what += " (max_table_bytes)";
  }
  what += "; " + options.table_budget_hint;
  const char* begin = file.data();
  if (e.at == nullptr || e.at < begin || e.at > begin + file.size()) return TraceFormatError(what);
  if (!e.text) return TraceFormatError::AtByte(static_cast<uint64_t>(e.at - begin), what);
  uint64_t line = 1;
  const char* line_start = begin;
  for (const char* p = begin; p < e.at; ++p) {
    if (*p == '\n') {
      ++line;
      line_start = p + 1;
    }
  }
  return TraceFormatError::AtText(line, static_cast<uint64_t>(e.at - line_start) + 1, what);
}

std::shared_ptr<TraceTables> ParseWithinBudget(const MappedFile& file, const OpenOptions& options);

}  // namespace

uint64_t OpenOptions::TableBudget(uint64_t input_bytes) const {
  if (max_table_bytes != 0) return max_table_bytes;
  const uint64_t by_size = input_bytes > UINT64_MAX / kTableBytesPerInputByte
                               ? UINT64_MAX
                               : input_bytes * kTableBytesPerInputByte;
  return std::max(by_size, kMinTableBytes);
}

std::shared_ptr<TraceTables> ParseTrace(const MappedFile& file, const OpenOptions& options) {
  ColumnBudget budget(options.TableBudget(file.size()));
  ColumnBudget::Scope scope(&budget);
  try {
    return ParseWithinBudget(file, options);
  } catch (const ColumnBudgetExceeded& e) {
    throw OverBudget(file, options, e);
  }
}

namespace {

std::shared_ptr<TraceTables> ParseWithinBudget(const MappedFile& file, const OpenOptions& options) {
  const bool detected = options.format == "auto";
  Format format;
  if (detected) {
    format = DetectFormat(std::string_view(file.data(), file.size()));
  } else {
    const FormatEntry* named = nullptr;
    for (const FormatEntry& e : Formats()) {
      if (options.format == e.name) named = &e;
    }
    if (named == nullptr) {
      std::string names = "'auto'";
      for (const FormatEntry& e : Formats()) names += std::string(", '") + e.name + "'";
      throw std::invalid_argument("format must be one of " + names + ", not '" + options.format + "'");
    }
    format = named->format;
  }
  if (options.threads < 0) throw std::invalid_argument("threads must be >= 0");
  std::shared_ptr<TraceTables> tables;
  try {
    try {
      tables = format == Format::kChromeJson && options.replace_invalid
                   ? ReadChromeTrace(file, true)
                   : EntryOf(format).read(file, options.threads);
      RejectEmptyWithUnknownFields(*tables, std::string_view(file.data(), file.size()), format);
    } catch (const TraceFormatError& e) {
      if (file.ShrankSinceOpen()) throw;
      if (!detected) {
        // A StepStats reading of an XSpace named by the caller: say what the file is.
        if (format != Format::kXSpace && format != Format::kChromeJson && std::string(e.what()).find("'xspace'") == std::string::npos &&
            LooksLikeXSpace(std::string_view(file.data(), file.size()))) {
          throw e.Appended(" (the file looks like an XSpace: format 'xspace' or 'auto' reads it)");
        }
        throw;
      }
      if (format == Format::kChromeJson) {
        // Taken for JSON by its keys: the JSON error stands. Taken for a JSON object by its
        // first bytes only, it may be a binary dump whose first bytes look so ('\n' '{' '"' is
        // a field 1 of 123 bytes starting with a field 4): that reading, when clean, is taken.
        const std::exception_ptr json_error = std::current_exception();
        if (LooksLikeChromeTrace(std::string_view(file.data(), file.size()))) throw;
        tables = ReadIfClean(file, Format::kStepStatsBinary, options.threads);
        if (!tables) std::rethrow_exception(json_error);
      } else if (format == Format::kXSpace) {
        // Recognised by the start of its first plane, which a StepStats or RunMetadata with
        // unknown fields there can have too: such a dump is read as one. Otherwise it is a bad
        // XSpace, and its error stands.
        const std::exception_ptr xspace_error = std::current_exception();
        tables = ReadOrNull(file, Format::kStepStatsBinary, options.threads);
        if (!tables) std::rethrow_exception(xspace_error);
      } else {
        // Detection guessed wrong, or the file is bad. Whitespace and text characters are wire
        // bytes too (a '\n' is the key of a length-delimited field 1), and text may hold raw
        // control bytes inside its string literals: the other reading is taken when it
        // succeeds with no unknown fields, as a dump TensorFlow wrote has none; last, an
        // XSpace reading with events and no unknown fields (one whose start the recogniser
        // did not know). Otherwise the detected format's error stands: blank lines, comments
        // or broken text that decode as wire format nearly always have unknown fields.
        const std::exception_ptr detected_error = std::current_exception();
        tables = ReadIfClean(file, OtherStepStatsEncoding(format), options.threads);
        if (!tables) tables = ReadIfClean(file, Format::kXSpace, options.threads);
        if (!tables) std::rethrow_exception(detected_error);
      }
    }
  } catch (const TraceFormatError&) {
    if (file.ShrankSinceOpen()) throw Truncated();
    throw;
  }
  if (detected && tables->kind == TraceKind::kXSpace && tables->unknown_fields != 0) {
    // No profiler writes unknown fields: the binary StepStats / RunMetadata reading of the same
    // bytes is taken when it has fewer (as between StepStats and RunMetadata).
    std::shared_ptr<TraceTables> binary = ReadOrNull(file, Format::kStepStatsBinary, options.threads);
    if (binary && binary->unknown_fields < tables->unknown_fields) tables = std::move(binary);
  }
  if (file.ShrankSinceOpen()) throw Truncated();
  return tables;
}

}  // namespace

}  // namespace tracecore
