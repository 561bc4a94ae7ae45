// OpenTrace: gzip input is decompressed, then read by the format registry; errors say where,
// in the compressed file or in the decompressed data.
#include <cstdint>
#include <string>

#include "codec/crc32.h"
#include "core/error.h"
#include "io/mapped_file.h"
#include "open/open_trace.h"
#include "unit_test.h"

using tracecore::MappedFile;
using tracecore::OpenOptions;
using tracecore::OpenTrace;
using tracecore::TraceFormatError;

namespace {

const char kStepStats[] =
    "dev_stats {\n"
    "  device: \"/job:localhost/replica:0/task:0/device:CPU:0\"\n"
    "  node_stats { node_name: \"a\" all_start_micros: 10 all_end_rel_micros: 5 }\n"
    "  node_stats { node_name: \"b\" all_start_micros: 20 all_end_rel_micros: 7 }\n"
    "}\n";

void PutLe32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// A gzip member holding `text` in one stored (uncompressed) deflate block (RFC 1951 3.2.4).
std::string Gzip(const std::string& text) {
  std::string out("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff", 10);
  out.push_back('\x01');  // BFINAL=1, BTYPE=00
  const auto len = static_cast<uint16_t>(text.size());
  out.push_back(static_cast<char>(len & 0xff));
  out.push_back(static_cast<char>(len >> 8));
  out.push_back(static_cast<char>(~len & 0xff));
  out.push_back(static_cast<char>((~len >> 8) & 0xff));
  out += text;
  PutLe32(&out, tracecore::Crc32(0, reinterpret_cast<const uint8_t*>(text.data()), text.size()));
  PutLe32(&out, static_cast<uint32_t>(text.size()));
  return out;
}

}  // namespace

TEST(OpenTrace, ReadsGzipLikeThePlainFile) {
  const auto plain = OpenTrace(*MappedFile::FromBuffer(kStepStats), OpenOptions());
  const auto gz = OpenTrace(*MappedFile::FromBuffer(Gzip(kStepStats)), OpenOptions());
  ASSERT_EQ(gz->events.size(), 2u);
  EXPECT_EQ(gz->events.start_ns[0], 10000);
  EXPECT_EQ(gz->events.end_ns[1], 27000);
  EXPECT_EQ(plain->events.size(), gz->events.size());
  EXPECT_EQ(gz->input_bytes, sizeof(kStepStats) - 1);  // the decompressed size
}

TEST(OpenTrace, CompressedDataErrorsNameTheirOffset) {
  std::string gz = Gzip(kStepStats);
  gz[gz.size() - 8] ^= 0x01;  // the CRC-32
  EXPECT_THROW_WITH(OpenTrace(*MappedFile::FromBuffer(gz), OpenOptions()), TraceFormatError,
                    "of the gzip data: gzip CRC-32 mismatch");
  std::string cut = Gzip(kStepStats).substr(0, 40);
  try {
    OpenTrace(*MappedFile::FromBuffer(cut), OpenOptions());
    EXPECT_TRUE(false);
  } catch (const TraceFormatError& e) {
    EXPECT_TRUE(e.where == TraceFormatError::Where::kBinary);
    EXPECT_EQ(e.offset, 40u);
  }
}

TEST(OpenTrace, ParseErrorsInDecompressedDataSaySo) {
  try {
    OpenTrace(*MappedFile::FromBuffer(Gzip("dev_stats {\n  device: 12x\n}\n")), OpenOptions());
    EXPECT_TRUE(false);
  } catch (const TraceFormatError& e) {
    EXPECT_EQ(e.line, 2u);
    EXPECT_EQ(e.column, 11u);
    EXPECT_TRUE(std::string(e.what()).find("(in the decompressed gzip data)") != std::string::npos);
  }
}
