// CRC-32C: published check values, the TFRecord mask, and the hardware path against the portable
// one (and both against a bit-at-a-time reference) on random lengths and alignments.
#include "codec/crc32c.h"

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "unit_test.h"

using tracecore::Crc32c;
using tracecore::Crc32cExtend;
using tracecore::MaskCrc32c;
using tracecore::UnmaskCrc32c;
namespace detail = tracecore::crc32c_detail;

namespace {

// Bit at a time, straight from the definition.
uint32_t Reference(const uint8_t* p, size_t n) {
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
  }
  return ~c;
}

uint32_t Of(const std::string& s) { return Crc32c(s.data(), s.size()); }

}  // namespace

TEST(Crc32c, CheckValue) {
  EXPECT_EQ(Of("123456789"), 0xE3069283u);
  EXPECT_EQ(Of(""), 0u);
  EXPECT_EQ(Of("a"), 0xC1D04330u);
}

// RFC 3720 (iSCSI), appendix B.4.
TEST(Crc32c, Rfc3720Vectors) {
  uint8_t buf[32];
  std::memset(buf, 0, sizeof buf);
  EXPECT_EQ(Crc32c(buf, 32), 0x8A9136AAu);
  std::memset(buf, 0xFF, sizeof buf);
  EXPECT_EQ(Crc32c(buf, 32), 0x62A8AB43u);
  for (int i = 0; i < 32; ++i) buf[i] = static_cast<uint8_t>(i);
  EXPECT_EQ(Crc32c(buf, 32), 0x46DD794Eu);
  for (int i = 0; i < 32; ++i) buf[i] = static_cast<uint8_t>(31 - i);
  EXPECT_EQ(Crc32c(buf, 32), 0x113FDB5Cu);
  const uint8_t iscsi_read[48] = {0x01, 0xC0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                                  0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00,
                                  0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00,
                                  0x00, 0x18, 0x28, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                                  0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
  EXPECT_EQ(Crc32c(iscsi_read, 48), 0xD9963A56u);
}

TEST(Crc32c, MaskRoundTripsAndDiffers) {
  const uint32_t crc = Of("foo");
  EXPECT_NE(MaskCrc32c(crc), crc);
  EXPECT_NE(MaskCrc32c(MaskCrc32c(crc)), crc);
  EXPECT_EQ(UnmaskCrc32c(MaskCrc32c(crc)), crc);
  EXPECT_EQ(UnmaskCrc32c(UnmaskCrc32c(MaskCrc32c(MaskCrc32c(crc)))), crc);
  for (uint32_t v : {0u, 1u, 0xFFFFFFFFu, 0x80000000u, 0xA282EAD8u}) {
    EXPECT_EQ(UnmaskCrc32c(MaskCrc32c(v)), v);
  }
}

// The first record of a Keras validation event file written by TensorFlow 2.21: its length
// field (62) and its payload (the file_version Event), with the masked CRCs stored beside them.
TEST(Crc32c, TfRecordFramingOfARealFile) {
  const uint8_t length[8] = {0x3e, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_EQ(MaskCrc32c(Crc32c(length, 8)), 0xE740D2D9u);
  const std::string payload(
      "\x09\x00\x00\x40\xa4\xbe\xc1\xda\x41\x1a\x0d\x62\x72\x61\x69\x6e\x2e\x45\x76\x65\x6e\x74"
      "\x3a\x32\x52\x24\x0a\x22\x74\x65\x6e\x73\x6f\x72\x66\x6c\x6f\x77\x2e\x63\x6f\x72\x65\x2e"
      "\x75\x74\x69\x6c\x2e\x65\x76\x65\x6e\x74\x73\x5f\x77\x72\x69\x74\x65\x72",
      62);
  EXPECT_EQ(MaskCrc32c(Of(payload)), 0x7153A415u);
}

TEST(Crc32c, ExtendConcatenates) {
  const std::string a = "The quick brown fox ", b = "jumps over the lazy dog";
  EXPECT_EQ(Crc32cExtend(Of(a), b.data(), b.size()), Of(a + b));
  EXPECT_EQ(Crc32cExtend(Of(a), b.data(), 0), Of(a));
}

TEST(Crc32c, ImplementationsAgreeOnRandomInputs) {
  std::mt19937_64 rng(20261125);
  // Long enough for several three-way rounds of both block sizes, plus the tails.
  std::vector<uint8_t> buf(3 * 3 * 8192 + 3 * 256 * 3 + 64);
  for (uint8_t& b : buf) b = static_cast<uint8_t>(rng());
  const bool hw = detail::HardwareAvailable();
  std::vector<size_t> lengths;
  for (size_t n = 0; n <= 80; ++n) lengths.push_back(n);
  for (size_t n : {767, 768, 769, 775, 776, 24575, 24576, 24577, 24583, 24584, 49920})
    lengths.push_back(n);
  for (int i = 0; i < 200; ++i) lengths.push_back(rng() % (buf.size() - 8));
  for (size_t n : lengths) {
    const size_t start = rng() % 8;
    const uint8_t* p = buf.data() + start;
    const uint32_t want = Reference(p, n);
    EXPECT_EQ(detail::ExtendPortable(0, p, n), want);
    if (hw) EXPECT_EQ(detail::ExtendHardware(0, p, n), want);
    EXPECT_EQ(Crc32c(p, n), want);
    // Split anywhere: extending continues the same CRC.
    const size_t cut = n == 0 ? 0 : rng() % n;
    EXPECT_EQ(Crc32cExtend(Crc32c(p, cut), p + cut, n - cut), want);
    if (hw)
      EXPECT_EQ(detail::ExtendHardware(detail::ExtendHardware(0, p, cut), p + cut, n - cut), want);
  }
  EXPECT_EQ(tracecore::Crc32cUsesHardware(), hw);
}
