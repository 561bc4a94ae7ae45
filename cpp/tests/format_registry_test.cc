// The format registry (open/format_registry): what DetectFormat makes of text, wire-format,
// gzip and not-a-trace bytes, and ParseTrace's named formats and fallback between encodings.
#include <cstdint>
#include <string>
#include <string_view>

#include "core/error.h"
#include "io/mapped_file.h"
#include "open/format_registry.h"
#include "trace_fixture.h"
#include "unit_test.h"

using tracecore::DetectFormat;
using tracecore::Format;
using tracecore::FormatName;
using tracecore::MappedFile;
using tracecore::OpenOptions;
using tracecore::ParseTrace;
using tracecore::TraceFormatError;
using tracecore::unit::Names;

namespace {

std::shared_ptr<tracecore::TraceTables> Parse(const std::string& bytes, const std::string& format) {
  OpenOptions options;
  options.format = format;
  options.threads = 1;
  return ParseTrace(*MappedFile::FromBuffer(bytes), options);
}

// The message of the TraceFormatError DetectFormat throws ("" when it throws none).
std::string Refusal(std::string_view bytes) {
  try {
    DetectFormat(bytes);
  } catch (const TraceFormatError& e) {
    EXPECT_TRUE(e.where == TraceFormatError::Where::kBinary);
    EXPECT_EQ(e.offset, 0u);
    return e.what();
  }
  return "";
}

// StepStats { dev_stats { device: "/device:CPU:0" } } on the wire: 0a 0f 0a 0d "/device:CPU:0".
const std::string kWireDump = std::string("\x0a\x0f\x0a\x0d", 4) + "/device:CPU:0";

}  // namespace

TEST(FormatRegistry, TheFormatsAndTheirNames) {
  // In the order detection asks them: Chrome trace JSON (by its keys), text, XSpace (by
  // structure), then binary, the format of last resort.
  ASSERT_EQ(tracecore::Formats().size(), 4u);
  EXPECT_EQ(std::string(FormatName(Format::kChromeJson)), "json");
  EXPECT_EQ(std::string(FormatName(Format::kStepStatsText)), "text");
  EXPECT_EQ(std::string(FormatName(Format::kXSpace)), "xspace");
  EXPECT_EQ(std::string(FormatName(Format::kStepStatsBinary)), "binary");
  EXPECT_EQ(std::string(tracecore::Formats()[0].name), "json");
  EXPECT_EQ(std::string(tracecore::Formats()[2].name), "xspace");
}

TEST(FormatRegistry, TextIsRecognisedByItsFirstCharacter) {
  EXPECT_TRUE(DetectFormat("dev_stats {\n}\n") == Format::kStepStatsText);
  EXPECT_TRUE(DetectFormat("\n\t  step_stats {}") == Format::kStepStatsText);
  EXPECT_TRUE(DetectFormat("# a comment\ndev_stats {}") == Format::kStepStatsText);
  EXPECT_TRUE(DetectFormat("[type.googleapis.com/x] {}") == Format::kStepStatsText);
  EXPECT_TRUE(DetectFormat("  \n") == Format::kStepStatsText);  // blank: the text parser says so
  EXPECT_TRUE(DetectFormat("") == Format::kStepStatsText);
}

TEST(FormatRegistry, EverythingElseIsTakenForTheWireFormat) {
  EXPECT_TRUE(DetectFormat(kWireDump) == Format::kStepStatsBinary);
  // A letter first, but a control byte that is not whitespace within the first 64 KB.
  EXPECT_TRUE(DetectFormat(std::string("dev_stats \x01", 11)) == Format::kStepStatsBinary);
  // A JSON object is taken for Chrome trace JSON (its reader says what it lacks); a bare
  // array only when its first element is an event.
  EXPECT_TRUE(DetectFormat("{\"traceEvents\": []}") == Format::kChromeJson);
  EXPECT_TRUE(DetectFormat(" \n{\"other\": 1}") == Format::kChromeJson);
  EXPECT_TRUE(DetectFormat("[{\"ph\": \"X\"}]") == Format::kChromeJson);
  // gzip is decompressed before detection, by OpenTrace (open/open_trace.h, tested in
  // open_trace_test.cc): the registry takes its magic bytes for no other format.
  EXPECT_TRUE(DetectFormat(std::string("\x1f\x8b\x08\x00", 4)) == Format::kStepStatsBinary);
}

TEST(FormatRegistry, FilesThatAreNoTraceAreRefusedByName) {
  EXPECT_EQ(Refusal(std::string("\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR", 16)),
            "byte offset 0: not a trace: the file is a PNG image");
  EXPECT_EQ(Refusal(std::string("PK\x03\x04\x14\x00", 6)),
            "byte offset 0: not a trace: the file is a ZIP archive");
  EXPECT_EQ(Refusal("%PDF-1.7\n"), "byte offset 0: not a trace: the file is a PDF document");
  EXPECT_EQ(Refusal("PAR1...."),
            "byte offset 0: not a trace: the file is a Parquet file (open the directory "
            "Trace.to_parquet wrote)");
  EXPECT_EQ(Refusal(std::string("\xfd" "7zXZ\x00\x00", 7)),
            "byte offset 0: not a trace: the file is xz-compressed (decompress it first)");
  // A prefix of a magic number is no match.
  EXPECT_EQ(Refusal("PK"), "");
}

TEST(FormatRegistry, ParseTraceReadsTheDetectedFormat) {
  const auto text = Parse("dev_stats { device: \"/device:CPU:0\" }\n", "auto");
  EXPECT_TRUE(text->format == tracecore::Encoding::kText);
  EXPECT_COLUMN(Names(text->pool, text->devices.device), {"/device:CPU:0"});
  const auto wire = Parse(kWireDump, "auto");
  EXPECT_TRUE(wire->format == tracecore::Encoding::kBinary);
  EXPECT_COLUMN(Names(wire->pool, wire->devices.device), {"/device:CPU:0"});
}

TEST(FormatRegistry, ANamedFormatIsReadAsNamedWithoutFallback) {
  // Text bytes read as the wire format: '\n' (0x0a) and 'd' are no valid StepStats.
  EXPECT_THROW_WITH(Parse("dev_stats {}", "binary"), TraceFormatError, "byte offset");
  // The wire dump as text: its first byte is a newline, its second (0x0f) no field name.
  EXPECT_THROW_WITH(Parse(kWireDump, "text"), TraceFormatError,
                    "line 2, column 1: expected a field name, got '\\x0f'");
  EXPECT_THROW_WITH(Parse("dev_stats {}", "json"), TraceFormatError,
                    "line 1, column 1: expected a value, found 'd'");
  EXPECT_THROW_WITH(Parse("dev_stats {}", "csv"), std::invalid_argument,
                    "format must be one of 'auto', 'json', 'text', 'xspace', 'binary', not 'csv'");
  OpenOptions negative;
  negative.threads = -1;
  EXPECT_THROW_WITH(ParseTrace(*MappedFile::FromBuffer("dev_stats {}"), negative),
                    std::invalid_argument, "threads must be >= 0");
}

TEST(FormatRegistry, DetectionFallsBackToTheOtherEncoding) {
  // StepStats { dev_stats { device: "localhost" } } on the wire: 0a 0b 0a 09 "localhost". Its
  // keys and lengths are whitespace ('\n', '\v', '\t') and the rest letters: detected as
  // text, which fails ("localhost" is a field without a value); the wire reading has no
  // unknown fields, so it is taken.
  const std::string looks_like_text = "\n\v\n\tlocalhost";
  EXPECT_TRUE(DetectFormat(looks_like_text) == Format::kStepStatsText);
  // Two newlines, then '\t' and "localhost" (columns 2-10): the input ends at column 11.
  EXPECT_THROW_WITH(Parse(looks_like_text, "text"), TraceFormatError,
                    "line 3, column 11: expected ':' or '{' after field 'localhost', got end of input");
  const auto t = Parse(looks_like_text, "auto");
  EXPECT_TRUE(t->format == tracecore::Encoding::kBinary);
  EXPECT_COLUMN(Names(t->pool, t->devices.device), {"localhost"});
  // Detected as text, unreadable as text ('5' at column 37 is no string), and no wire reading
  // ('d' is an end-group marker): the text error stands.
  EXPECT_THROW_WITH(Parse("dev_stats { node_stats { node_name: 5 } }", "auto"), TraceFormatError,
                    "line 1, column 37");
}
