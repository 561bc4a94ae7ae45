// The DEFLATE / zlib / gzip decompressor (cpp/src/codec): streams made by Python's zlib
// (inflate_vectors.inc, from make_inflate_vectors.py), streams written bit by bit here for every
// block type and every class of malformed input with the byte offset it must name, the
// streaming interface at every chunking, CRC-32 / Adler-32, and InflateAll's limits.
#include <algorithm>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "codec/adler32.h"
#include "codec/crc32.h"
#include "codec/inflate_all.h"
#include "codec/inflater.h"
#include "core/error.h"
#include "unit_test.h"

namespace {

#include "inflate_vectors.inc"

using tracecore::CompressionFormat;
using tracecore::InflateAll;
using tracecore::Inflater;
using tracecore::InflateLimits;
using tracecore::InflateOptions;
using tracecore::TraceFormatError;
using Bytes = std::vector<uint8_t>;

template <size_t N>
Bytes Vec(const uint8_t (&a)[N]) {
  return Bytes(a, a + N);
}

const std::string& Plain() {
  static const std::string s(reinterpret_cast<const char*>(kPlain), sizeof kPlain);
  return s;
}

InflateOptions Format(CompressionFormat f) {
  InflateOptions o;
  o.format = f;
  return o;
}

std::string All(const Bytes& in, const InflateOptions& options = {},
                const InflateLimits& limits = {}) {
  const tracecore::InflatedBuffer out = InflateAll(in.data(), in.size(), limits, options);
  return std::string(reinterpret_cast<const char*>(out.data()), out.size());
}

// Inflate() (window mode) with the input and output cut into pieces of the given sizes.
std::string Chunked(const Bytes& in, size_t in_chunk, size_t out_chunk,
                    const InflateOptions& options = {}) {
  Inflater inflater(options);
  std::string result;
  Bytes out(out_chunk);
  size_t pos = 0;
  for (int guard = 0;; ++guard) {
    const size_t n = std::min(in_chunk, in.size() - pos);
    const Inflater::Result r =
        inflater.Inflate(in.data() + pos, n, out.data(), out.size(), pos + n == in.size());
    pos += r.consumed;
    result.append(reinterpret_cast<const char*>(out.data()), r.produced);
    if (r.status == Inflater::Status::kStreamEnd) break;
    if (r.status == Inflater::Status::kNeedInput) {
      ASSERT_EQ(r.consumed, n);  // kNeedInput means every byte was used
    }
    ASSERT_TRUE(r.consumed > 0 || r.produced > 0);  // progress on every call
    ASSERT_TRUE(guard < 100000000);
  }
  EXPECT_EQ(inflater.total_in(), pos);
  EXPECT_EQ(inflater.total_out(), result.size());
  return result;
}

// InflateInPlace() growing its output `out_chunk` bytes per call.
std::string InPlaceChunked(const Bytes& in, size_t in_chunk, size_t out_chunk,
                           const InflateOptions& options = {}) {
  Inflater inflater(options);
  Bytes out(out_chunk);
  size_t pos = 0, used = 0;
  for (;;) {
    if (out.size() < used + out_chunk) out.resize(used + out_chunk);  // may move the buffer
    const size_t n = std::min(in_chunk, in.size() - pos);
    const Inflater::Result r = inflater.InflateInPlace(in.data() + pos, n, out.data(), used,
                                                       used + out_chunk, pos + n == in.size());
    pos += r.consumed;
    used += r.produced;
    if (r.status == Inflater::Status::kStreamEnd) break;
    ASSERT_TRUE(r.consumed > 0 || r.produced > 0);
  }
  return std::string(reinterpret_cast<const char*>(out.data()), used);
}

// The TraceFormatError `fn` throws (offset, message); fails the test when none.
struct Thrown {
  bool thrown = false;
  uint64_t offset = 0;
  std::string message;
};
Thrown Catch(const std::function<void()>& fn) {
  Thrown t;
  try {
    fn();
  } catch (const TraceFormatError& e) {
    t.thrown = true;
    t.offset = e.offset;
    t.message = e.what();
    EXPECT_TRUE(e.where == TraceFormatError::Where::kBinary);
  }
  return t;
}

#define EXPECT_ERROR_AT(stmt, expected_offset, substring)                                  \
  do {                                                                                     \
    const Thrown tc_t = Catch([&] { stmt; });                                              \
    EXPECT_TRUE(tc_t.thrown);                                                              \
    EXPECT_EQ(tc_t.offset, static_cast<uint64_t>(expected_offset));                        \
    if (tc_t.message.find(substring) == std::string::npos) {                               \
      ::tracecore::unit::Fail(__FILE__, __LINE__,                                          \
                              "message \"" + tc_t.message + "\" lacks \"" + (substring) + \
                                  "\"");                                                   \
    }                                                                                      \
  } while (0)

// ---- writing deflate streams bit by bit -----------------------------------------------------

class BitWriter {
 public:
  // `n` bits of `value`, lowest first (header fields, extra bits).
  void Bits(uint32_t value, unsigned n) {
    for (unsigned i = 0; i < n; ++i) Bit((value >> i) & 1);
  }
  // A Huffman code of `len` bits, its first (most significant) bit first.
  void Code(uint32_t code, unsigned len) {
    for (unsigned i = len; i-- > 0;) Bit((code >> i) & 1);
  }
  void Align() {
    while (bits_ % 8) Bit(0);
  }
  void Byte(uint8_t b) { Bits(b, 8); }
  size_t bit_pos() const { return bits_; }
  const Bytes& bytes() const { return bytes_; }

  // Fixed-code symbols (RFC 1951 3.2.6).
  void FixedSymbol(unsigned sym) {
    if (sym < 144) {
      Code(0x30 + sym, 8);
    } else if (sym < 256) {
      Code(0x190 + sym - 144, 9);
    } else if (sym < 280) {
      Code(sym - 256, 7);
    } else {
      Code(0xC0 + sym - 280, 8);
    }
  }
  void FixedMatch(unsigned length, unsigned distance) {
    static const unsigned kLenBase[29] = {3,  4,  5,  6,  7,  8,  9,  10,  11,  13,
                                          15, 17, 19, 23, 27, 31, 35, 43,  51,  59,
                                          67, 83, 99, 115, 131, 163, 195, 227, 258};
    static const unsigned kLenExtra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
                                           2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
    static const unsigned kDistBase[30] = {1,    2,    3,    4,    5,    7,     9,     13,
                                           17,   25,   33,   49,   65,   97,    129,   193,
                                           257,  385,  513,  769,  1025, 1537,  2049,  3073,
                                           4097, 6145, 8193, 12289, 16385, 24577};
    unsigned l = 28;
    while (kLenBase[l] > length) --l;
    if (length == 258) l = 28;
    else if (l == 28) l = 27;
    FixedSymbol(257 + l);
    Bits(length - kLenBase[l], kLenExtra[l]);
    unsigned d = 29;
    while (kDistBase[d] > distance) --d;
    Code(d, 5);
    Bits(distance - kDistBase[d], d < 4 ? 0 : d / 2 - 1);
  }

 private:
  void Bit(unsigned b) {
    if (bits_ % 8 == 0) bytes_.push_back(0);
    bytes_.back() |= static_cast<uint8_t>(b << (bits_ % 8));
    ++bits_;
  }
  Bytes bytes_;
  size_t bits_ = 0;
};

// A writer that has begun a final block with the fixed codes.
BitWriter FixedBlock() {
  BitWriter w;
  w.Bits(1, 1);  // final
  w.Bits(1, 2);  // fixed codes
  return w;
}

// A gzip member around raw deflate data for `plain`.
Bytes Gzip(const Bytes& deflate, const std::string& plain) {
  Bytes out = {0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 3};
  out.insert(out.end(), deflate.begin(), deflate.end());
  const uint32_t crc =
      tracecore::Crc32(0, reinterpret_cast<const uint8_t*>(plain.data()), plain.size());
  const uint32_t size = static_cast<uint32_t>(plain.size());
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(crc >> (8 * i)));
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(size >> (8 * i)));
  return out;
}

// Greedy LZ77 over `plain` (hash of 3 bytes, last position) in one fixed-code block: long
// streams with every distance up to 32 KiB, to check the decoder against known output.
Bytes FixedLz77(const std::string& plain) {
  BitWriter w = FixedBlock();
  std::vector<int64_t> last(1 << 16, -1);
  size_t i = 0;
  auto hash = [&](size_t p) {
    return ((uint8_t(plain[p]) << 8) ^ (uint8_t(plain[p + 1]) << 4) ^ uint8_t(plain[p + 2])) &
           0xFFFF;
  };
  while (i < plain.size()) {
    if (i + 3 <= plain.size()) {
      const size_t h = hash(i);
      const int64_t cand = last[h];
      last[h] = static_cast<int64_t>(i);
      if (cand >= 0 && i - cand <= 32768) {
        size_t len = 0;
        while (len < 258 && i + len < plain.size() && plain[cand + len] == plain[i + len]) ++len;
        if (len >= 3) {
          w.FixedMatch(static_cast<unsigned>(len), static_cast<unsigned>(i - cand));
          i += len;
          continue;
        }
      }
    }
    w.FixedSymbol(uint8_t(plain[i]));
    ++i;
  }
  w.FixedSymbol(256);
  return w.bytes();
}

// Text like a StepStats dump: repeated field names, varying numbers.
std::string TraceLikeText(size_t size, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s;
  while (s.size() < size) {
    s += "  node_stats {\n    node_name: \"op_" + std::to_string(rng() % 5000) +
         "\"\n    all_start_micros: " + std::to_string(1532145303700000ull + rng() % 100000) +
         "\n    op_end_rel_micros: " + std::to_string(rng() % 300) + "\n  }\n";
    if (rng() % 7 == 0) {
      for (int k = 0; k < 40; ++k) s += static_cast<char>(rng() & 0xFF);  // incompressible
    }
  }
  s.resize(size);
  return s;
}

std::string Str(const Bytes& b) { return std::string(b.begin(), b.end()); }

}  // namespace

// ---- check values ---------------------------------------------------------------------------

TEST(Crc32, KnownValues) {
  const std::string s = "123456789";
  EXPECT_EQ(tracecore::Crc32(0, reinterpret_cast<const uint8_t*>(s.data()), s.size()),
            0xCBF43926u);
  EXPECT_EQ(tracecore::Crc32(0, nullptr, 0), 0u);
  const std::string fox = "The quick brown fox jumps over the lazy dog";
  EXPECT_EQ(tracecore::Crc32(0, reinterpret_cast<const uint8_t*>(fox.data()), fox.size()),
            0x414FA339u);
}

TEST(Crc32, FoldingMatchesTablesAtEveryLengthAndAlignment) {
  std::mt19937_64 rng(7);
  Bytes data(5000);
  for (auto& b : data) b = static_cast<uint8_t>(rng());
  for (size_t n : {0, 1, 15, 16, 63, 64, 127, 128, 129, 191, 255, 256, 257, 1000, 4093}) {
    for (size_t offset = 0; offset < 9; ++offset) {
      const uint32_t seed = static_cast<uint32_t>(rng());
      EXPECT_EQ(tracecore::Crc32(seed, data.data() + offset, n),
                tracecore::Crc32Portable(seed, data.data() + offset, n));
    }
  }
}

TEST(Crc32, ChainsOverPieces) {
  const std::string text = TraceLikeText(10000, 3);
  const auto* p = reinterpret_cast<const uint8_t*>(text.data());
  const uint32_t whole = tracecore::Crc32(0, p, text.size());
  for (size_t cut : {0, 1, 100, 129, 5000, 9999}) {
    EXPECT_EQ(tracecore::Crc32(tracecore::Crc32(0, p, cut), p + cut, text.size() - cut), whole);
  }
}

TEST(Adler32, KnownValues) {
  const std::string s = "Wikipedia";
  EXPECT_EQ(tracecore::Adler32(1, reinterpret_cast<const uint8_t*>(s.data()), s.size()),
            0x11E60398u);
  // Long runs of 0xFF: the sums must be reduced before they overflow.
  const Bytes ff(100000, 0xFF);
  uint32_t a = 1, b = 0;
  for (uint8_t x : ff) {
    a = (a + x) % 65521;
    b = (b + a) % 65521;
  }
  EXPECT_EQ(tracecore::Adler32(1, ff.data(), ff.size()), (b << 16) | a);
}

// ---- streams made by zlib -------------------------------------------------------------------

TEST(Inflate, GzipDynamicBlocks) {
  EXPECT_EQ(All(Vec(kGzipLevel1)), Plain());
  EXPECT_EQ(All(Vec(kGzipLevel9)), Plain());
  EXPECT_EQ(All(Vec(kGzipLevel9), Format(CompressionFormat::kGzip)), Plain());
}

TEST(Inflate, ZlibWrapper) {
  EXPECT_EQ(All(Vec(kZlibLevel6)), Plain());
  EXPECT_EQ(All(Vec(kZlibLevel6), Format(CompressionFormat::kZlib)), Plain());
  Inflater inflater;
  Bytes out(2000);
  const Bytes in = Vec(kZlibLevel6);
  const auto r = inflater.Inflate(in.data(), in.size(), out.data(), out.size(), true);
  EXPECT_TRUE(r.status == Inflater::Status::kStreamEnd);
  EXPECT_TRUE(inflater.format() == CompressionFormat::kZlib);
  EXPECT_EQ(r.consumed, in.size());
  EXPECT_EQ(r.produced, Plain().size());
}

TEST(Inflate, RawFixedAndStoredBlocks) {
  EXPECT_EQ(All(Vec(kRawFixed), Format(CompressionFormat::kRaw)), Plain());
  EXPECT_EQ(All(Vec(kRawStored), Format(CompressionFormat::kRaw)), Plain());
}

TEST(Inflate, MultiMemberGzipWithEveryHeaderField) {
  EXPECT_EQ(All(Vec(kGzipTwoMembers)), Plain());
  Inflater inflater;
  Bytes out(4000);
  const Bytes in = Vec(kGzipTwoMembers);
  const auto r = inflater.Inflate(in.data(), in.size(), out.data(), out.size(), true);
  EXPECT_TRUE(r.status == Inflater::Status::kStreamEnd);
  EXPECT_EQ(inflater.members(), 2u);
  EXPECT_EQ(r.consumed, in.size());
  // Only the first member when multi_member is off, and what follows may be allowed...
  InflateOptions one;
  one.multi_member = false;
  one.allow_trailing_data = true;
  Inflater first(one);
  const auto r1 = first.Inflate(in.data(), in.size(), out.data(), out.size(), true);
  EXPECT_TRUE(r1.status == Inflater::Status::kStreamEnd);
  EXPECT_EQ(std::string(reinterpret_cast<char*>(out.data()), r1.produced), Plain().substr(0, 500));
  EXPECT_EQ(first.total_in(), r1.consumed);
  EXPECT_EQ(in[r1.consumed], 0);  // stops right after the first trailer, before the padding
  EXPECT_EQ(in[r1.consumed + 2], 0x1F);
  // ...or is trailing data.
  one.allow_trailing_data = false;
  EXPECT_ERROR_AT(All(in, one), r1.consumed, "trailing data after the end of the gzip stream");
}

TEST(Inflate, EveryChunkingGivesTheSameBytes) {
  for (const Bytes& in : {Vec(kGzipLevel9), Vec(kZlibLevel6), Vec(kGzipTwoMembers)}) {
    for (size_t in_chunk : {1, 2, 3, 7, 64, 100000}) {
      for (size_t out_chunk : {1, 2, 5, 300, 333, 4096}) {
        EXPECT_EQ(Chunked(in, in_chunk, out_chunk), Plain());
        EXPECT_EQ(InPlaceChunked(in, in_chunk, out_chunk), Plain());
      }
    }
  }
  for (const Bytes& in : {Vec(kRawFixed), Vec(kRawStored)}) {
    EXPECT_EQ(Chunked(in, 1, 1, Format(CompressionFormat::kRaw)), Plain());
    EXPECT_EQ(Chunked(in, 5, 17, Format(CompressionFormat::kRaw)), Plain());
    EXPECT_EQ(InPlaceChunked(in, 3, 1, Format(CompressionFormat::kRaw)), Plain());
  }
}

// ---- streams written here -------------------------------------------------------------------

TEST(Inflate, StoredBlocksByHand) {
  BitWriter w;
  w.Bits(0, 1);  // not final
  w.Bits(0, 2);  // stored
  w.Align();
  w.Bits(3, 16);
  w.Bits(0xFFFF ^ 3, 16);
  for (char ch : std::string("abc")) w.Byte(static_cast<uint8_t>(ch));
  w.Bits(0, 1);
  w.Bits(0, 2);  // an empty stored block
  w.Align();
  w.Bits(0, 16);
  w.Bits(0xFFFF, 16);
  w.Bits(1, 1);  // final, fixed: "d" and a match
  w.Bits(1, 2);
  w.FixedSymbol('d');
  w.FixedMatch(5, 4);
  w.FixedSymbol(256);
  EXPECT_EQ(All(w.bytes(), Format(CompressionFormat::kRaw)), "abcdabcda");
  EXPECT_EQ(Chunked(w.bytes(), 1, 1, Format(CompressionFormat::kRaw)), "abcdabcda");
}

TEST(Inflate, MatchCopiesAtEveryShortDistanceAndLength) {
  // Each distance 1..40 with lengths around the 8- and 16-byte copy widths, after enough
  // output that the fast loop runs.
  std::mt19937 rng(11);
  BitWriter w = FixedBlock();
  std::string expect;
  for (unsigned distance = 1; distance <= 40; ++distance) {
    for (unsigned length : {3u, 4u, 7u, 8u, 9u, 15u, 16u, 17u, 31u, 32u, 33u, 100u, 257u, 258u}) {
      for (unsigned k = 0; k < distance; ++k) {
        const char ch = static_cast<char>('a' + rng() % 26);
        w.FixedSymbol(static_cast<uint8_t>(ch));
        expect += ch;
      }
      w.FixedMatch(length, distance);
      for (unsigned k = 0; k < length; ++k) expect += expect[expect.size() - distance];
    }
  }
  w.FixedSymbol(256);
  EXPECT_EQ(All(w.bytes(), Format(CompressionFormat::kRaw)), expect);
  EXPECT_EQ(Chunked(w.bytes(), 13, 1000, Format(CompressionFormat::kRaw)), expect);
  EXPECT_EQ(InPlaceChunked(w.bytes(), 1 << 20, 4096, Format(CompressionFormat::kRaw)), expect);
}

TEST(Inflate, LongStreamWithFarMatchesAcrossChunks) {
  const std::string plain = TraceLikeText(400000, 5);
  const Bytes gz = Gzip(FixedLz77(plain), plain);
  EXPECT_EQ(All(gz), plain);
  // Output pieces smaller than the distances: matches are read back from the window.
  for (size_t out_chunk : {1000, 4096, 40000, 70000}) {
    EXPECT_EQ(Chunked(gz, 65536, out_chunk), plain);
  }
  EXPECT_EQ(Chunked(gz, 1, 100), plain);
  EXPECT_EQ(InPlaceChunked(gz, 999, 2000), plain);
}

TEST(Inflate, EmptyOutput) {
  BitWriter w = FixedBlock();
  w.FixedSymbol(256);
  EXPECT_EQ(All(Gzip(w.bytes(), "")), "");
  EXPECT_EQ(All(w.bytes(), Format(CompressionFormat::kRaw)), "");
}

// ---- malformed input: each error names its byte --------------------------------------------

TEST(InflateErrors, BadBlockType) {
  BitWriter w;
  w.Bits(1, 1);
  w.Bits(3, 2);
  EXPECT_ERROR_AT(All(w.bytes(), Format(CompressionFormat::kRaw)), 0,
                  "byte offset 0 of the deflate data: invalid deflate block type 3");
  EXPECT_ERROR_AT(All(Gzip(w.bytes(), "")), 10, "of the gzip data: invalid deflate block type 3");
}

TEST(InflateErrors, StoredLengthComplement) {
  BitWriter w;
  w.Bits(1, 1);
  w.Bits(0, 2);
  w.Align();
  w.Bits(5, 16);
  w.Bits(5, 16);
  EXPECT_ERROR_AT(All(w.bytes(), Format(CompressionFormat::kRaw)), 1,
                  "stored block length 5 does not match its one's complement");
}

TEST(InflateErrors, DistanceTooFarBack) {
  BitWriter w = FixedBlock();
  w.FixedSymbol('a');
  const size_t at = w.bit_pos() / 8;
  w.FixedMatch(3, 2);
  w.FixedSymbol(256);
  EXPECT_ERROR_AT(All(w.bytes(), Format(CompressionFormat::kRaw)), at,
                  "distance 2 reaches back before the start of the output (1 bytes precede it)");
  // In a second gzip member, the first member's output is out of reach.
  BitWriter ok = FixedBlock();
  for (char ch : std::string("xyz")) ok.FixedSymbol(static_cast<uint8_t>(ch));
  ok.FixedSymbol(256);
  Bytes two = Gzip(ok.bytes(), "xyz");
  const size_t second = two.size();
  const Bytes bad = Gzip(w.bytes(), "aaaa");
  two.insert(two.end(), bad.begin(), bad.end());
  EXPECT_ERROR_AT(All(two), second + 10 + at, "reaches back before the start of the member's");
  // The same far match spread over chunks (window mode) fails the same way.
  EXPECT_ERROR_AT(Chunked(two, 3, 1), second + 10 + at, "distance 2 reaches back");
}

TEST(InflateErrors, InvalidFixedCodes) {
  BitWriter d30 = FixedBlock();
  d30.FixedSymbol('a');
  d30.FixedSymbol(257);
  const size_t at30 = d30.bit_pos() / 8;
  d30.Code(30, 5);
  d30.FixedSymbol(256);
  EXPECT_ERROR_AT(All(d30.bytes(), Format(CompressionFormat::kRaw)), at30,
                  "invalid distance code 30");
  BitWriter l286 = FixedBlock();
  l286.FixedSymbol('a');
  const size_t at286 = l286.bit_pos() / 8;
  l286.FixedSymbol(286);
  l286.FixedSymbol(256);
  EXPECT_ERROR_AT(All(l286.bytes(), Format(CompressionFormat::kRaw)), at286,
                  "invalid literal/length code 286");
  // Long enough for the fast loop, which reports the same.
  BitWriter far = FixedBlock();
  for (int i = 0; i < 600; ++i) far.FixedSymbol('a' + i % 26);
  far.FixedSymbol(257);
  const size_t at31 = far.bit_pos() / 8;
  far.Code(31, 5);
  for (int i = 0; i < 600; ++i) far.FixedSymbol('a');
  far.FixedSymbol(256);
  EXPECT_ERROR_AT(All(Gzip(far.bytes(), "")), 10 + at31,
                  "of the gzip data: invalid distance code 31 (deflate's distance codes are 0-29)");
}

namespace {
// A dynamic block header: HLIT, HDIST, and code length code lengths given in kOrder order.
BitWriter DynamicHeader(unsigned hlit, unsigned hdist, const std::vector<unsigned>& clens) {
  BitWriter w;
  w.Bits(1, 1);
  w.Bits(2, 2);
  w.Bits(hlit - 257, 5);
  w.Bits(hdist - 1, 5);
  w.Bits(static_cast<uint32_t>(clens.size() - 4), 4);
  for (unsigned l : clens) w.Bits(l, 3);
  return w;
}
Thrown RawError(const BitWriter& w) {
  return Catch([&] { All(w.bytes(), Format(CompressionFormat::kRaw)); });
}
}  // namespace

TEST(InflateErrors, DynamicHeaderCounts) {
  Thrown t = RawError(DynamicHeader(287, 1, {1, 1, 0, 0}));
  EXPECT_TRUE(t.message.find("declares 287 literal/length codes (at most 286)") !=
              std::string::npos);
  EXPECT_EQ(t.offset, 0u);
  t = RawError(DynamicHeader(257, 31, {1, 1, 0, 0}));
  EXPECT_TRUE(t.message.find("declares 31 distance codes (at most 30)") != std::string::npos);
  EXPECT_EQ(t.offset, 1u);
}

TEST(InflateErrors, CodeLengthCodeShape) {
  // 19 codes of one bit: over-subscribed.
  Thrown t = RawError(DynamicHeader(257, 1, std::vector<unsigned>(19, 1)));
  EXPECT_TRUE(t.message.find("the code length code is over-subscribed") != std::string::npos);
  EXPECT_EQ(t.offset, 9u);  // 3 + 14 + 57 bits: the error is found after the lengths
  // One code of one bit: incomplete (zlib refuses it too).
  t = RawError(DynamicHeader(257, 1, {1, 0, 0, 0}));
  EXPECT_TRUE(t.message.find("the code length code is incomplete") != std::string::npos);
  EXPECT_EQ(t.offset, 3u);
}

TEST(InflateErrors, CodeLengthRepeats) {
  // Symbols 16 and 17 of one bit each: 16 (code 0) first repeats a length that is not there.
  BitWriter w = DynamicHeader(257, 1, {1, 1, 0, 0});
  const size_t at = w.bit_pos() / 8;
  w.Code(0, 1);
  w.Bits(0, 2);
  Thrown t = RawError(w);
  EXPECT_TRUE(t.message.find("code 16 repeats the previous length, but there is none") !=
              std::string::npos);
  EXPECT_EQ(t.offset, at);
  // Symbols 18 (code 1) and 0 (code 0): two runs of 138 zeros overrun the 258 lengths.
  BitWriter r = DynamicHeader(257, 1, {0, 0, 1, 1});
  r.Code(1, 1);
  r.Bits(127, 7);
  const size_t at2 = r.bit_pos() / 8;
  r.Code(1, 1);
  r.Bits(127, 7);
  t = RawError(r);
  EXPECT_TRUE(t.message.find("a code length repeat runs past the 258 lengths") !=
              std::string::npos);
  EXPECT_EQ(t.offset, at2);
}

TEST(InflateErrors, LiteralLengthCodeShape) {
  // Every length zero: no end-of-block code.
  BitWriter w = DynamicHeader(257, 1, {0, 0, 1, 1});
  w.Code(1, 1);
  w.Bits(127, 7);  // 138 zeros
  w.Code(1, 1);
  w.Bits(109, 7);  // 120 zeros
  Thrown t = RawError(w);
  EXPECT_TRUE(t.message.find("the end-of-block symbol (256) has no code") != std::string::npos);
  EXPECT_EQ(t.offset, w.bit_pos() / 8);
  // Symbols 0 and 1 of the code length code (order position 3 and 17), one bit each; every
  // literal/length gets length 1: over-subscribed.
  std::vector<unsigned> clens(18, 0);
  clens[3] = 1;   // symbol 0
  clens[17] = 1;  // symbol 1
  BitWriter over = DynamicHeader(257, 1, clens);
  for (int i = 0; i < 258; ++i) over.Code(1, 1);
  t = RawError(over);
  EXPECT_TRUE(t.message.find("the literal/length code is over-subscribed") != std::string::npos);
  EXPECT_EQ(t.offset, over.bit_pos() / 8);
  // Symbols 0 and 2 (order positions 3 and 15): literal 0 and end-of-block get two bits,
  // nothing else: incomplete.
  std::vector<unsigned> c2(16, 0);
  c2[3] = 1;   // symbol 0: code 0
  c2[15] = 1;  // symbol 2: code 1
  BitWriter inc = DynamicHeader(257, 1, c2);
  inc.Code(1, 1);
  for (int i = 1; i < 256; ++i) inc.Code(0, 1);
  inc.Code(1, 1);
  inc.Code(0, 1);  // the distance length
  t = RawError(inc);
  EXPECT_TRUE(t.message.find("the literal/length code is incomplete") != std::string::npos);
}

TEST(InflateErrors, LoneOneBitCodesAreAccepted) {
  // A block with only an end-of-block code (1 bit) and no distance codes, as zlib allows.
  std::vector<unsigned> clens(18, 0);
  clens[3] = 1;   // symbol 0
  clens[17] = 1;  // symbol 1
  BitWriter w = DynamicHeader(257, 1, clens);
  for (int i = 0; i < 256; ++i) w.Code(0, 1);
  w.Code(1, 1);  // lens[256] = 1
  w.Code(0, 1);  // no distance code
  w.Code(0, 1);  // end of block (code 0)
  EXPECT_EQ(All(w.bytes(), Format(CompressionFormat::kRaw)), "");
}

TEST(InflateErrors, TruncatedAtEveryLength) {
  for (const Bytes& full : {Vec(kGzipLevel9), Vec(kZlibLevel6), Vec(kGzipTwoMembers)}) {
    for (size_t n = 0; n < full.size(); ++n) {
      const Bytes cut(full.begin(), full.begin() + static_cast<ptrdiff_t>(n));
      std::string got;
      const Thrown t = Catch([&] { got = All(cut); });
      if (!t.thrown) {
        // Only where a gzip member (and its padding) ends.
        EXPECT_TRUE(got == Plain().substr(0, 500) || got == Plain());
        continue;
      }
      EXPECT_EQ(t.offset, n);
      EXPECT_TRUE(t.message.find("truncated") != std::string::npos);
    }
  }
  EXPECT_ERROR_AT(All(Bytes{}), 0,
                  "truncated gzip or zlib data: the input ends before the stream header");
  const Bytes gz = Vec(kGzipLevel9);
  EXPECT_ERROR_AT(All(Bytes(gz.begin(), gz.end() - 3)), gz.size() - 3,
                  "inside a gzip member trailer");
}

TEST(InflateErrors, ChecksumsAndSizes) {
  Bytes gz = Vec(kGzipLevel9);
  const size_t n = gz.size();
  gz[n - 8] ^= 1;
  EXPECT_ERROR_AT(All(gz), n - 8, "gzip CRC-32 mismatch");
  gz = Vec(kGzipLevel9);
  gz[n - 3] ^= 1;
  EXPECT_ERROR_AT(All(gz), n - 4, "gzip ISIZE mismatch: the trailer says");
  Bytes z = Vec(kZlibLevel6);
  z.back() ^= 0x10;
  EXPECT_ERROR_AT(All(z), z.size() - 4, "zlib Adler-32 mismatch");
}

TEST(InflateErrors, Headers) {
  EXPECT_ERROR_AT(All(Bytes{'{', '"', 't'}), 0,
                  "neither gzip nor zlib data: it starts with the bytes 7b 22");
  EXPECT_ERROR_AT(All(Bytes{0x1F, 0x8C, 8, 0}, Format(CompressionFormat::kGzip)), 1,
                  "expected the gzip magic bytes 1f 8b, found 8c after 1f");
  Bytes gz = Vec(kGzipLevel9);
  gz[2] = 7;
  EXPECT_ERROR_AT(All(gz), 2, "unknown gzip compression method 7");
  gz = Vec(kGzipLevel9);
  gz[3] = 0x20;
  EXPECT_ERROR_AT(All(gz), 3, "reserved gzip header flag bits are set");
  Bytes two = Vec(kGzipTwoMembers);
  // The first member's FHCRC sits after XLEN (2) + 9 bytes of extra, the name and comment.
  const size_t hcrc = 10 + 2 + 9 + std::strlen("trace.pbtxt") + 1 + std::strlen("a comment") + 1;
  two[hcrc] ^= 1;
  EXPECT_ERROR_AT(All(two), hcrc, "gzip header CRC16 mismatch");
  Bytes z = Vec(kZlibLevel6);
  z[1] ^= 1;
  EXPECT_ERROR_AT(All(z, Format(CompressionFormat::kZlib)), 0, "zlib header check bits are wrong");
  EXPECT_ERROR_AT(All(Bytes{0x78, 0xBB, 0, 0}), 1, "preset dictionary");
  EXPECT_ERROR_AT(All(Bytes{0x88, 0x1C, 0, 0}, Format(CompressionFormat::kZlib)), 0,
                  "zlib window size 2^16");
}

TEST(InflateErrors, TrailingData) {
  Bytes gz = Vec(kGzipLevel9);
  const size_t end = gz.size();
  gz.push_back(0);
  gz.push_back(0);
  EXPECT_EQ(All(gz), Plain());  // zero padding
  gz.push_back('x');
  EXPECT_ERROR_AT(All(gz), end + 2, "byte 78 does not start another gzip member (1f 8b)");
  gz.back() = 0x1F;  // a lone 1f at the end: a member cut short
  EXPECT_ERROR_AT(All(gz), end + 3, "truncated gzip data: the input ends after the first byte");
  gz.push_back(0x8C);
  EXPECT_ERROR_AT(All(gz), end + 2, "byte 1f does not start another gzip member");
  Bytes z = Vec(kZlibLevel6);
  z.push_back(0);
  EXPECT_ERROR_AT(All(z), z.size() - 1, "trailing data after the end of the zlib stream");
  InflateOptions allow;
  allow.allow_trailing_data = true;
  EXPECT_EQ(All(z, allow), Plain());
  // Streaming: the stream is complete, but until the input ends more may come...
  Inflater inflater(Format(CompressionFormat::kZlib));
  Bytes out(2000);
  const auto r = inflater.Inflate(z.data(), z.size() - 1, out.data(), out.size(), false);
  EXPECT_TRUE(r.status == Inflater::Status::kNeedInput);
  EXPECT_EQ(r.produced, Plain().size());
  // ...and what comes is trailing data.
  EXPECT_ERROR_AT(inflater.Inflate(z.data() + z.size() - 1, 1, out.data(), out.size(), true),
                  z.size() - 1, "trailing data");
  // With trailing data allowed, the end is reported at once.
  InflateOptions allow_zlib = Format(CompressionFormat::kZlib);
  allow_zlib.allow_trailing_data = true;
  Inflater lenient(allow_zlib);
  const auto r2 = lenient.Inflate(z.data(), z.size() - 1, out.data(), out.size(), false);
  EXPECT_TRUE(r2.status == Inflater::Status::kStreamEnd);
  EXPECT_EQ(r2.consumed, z.size() - 1);
}

// ---- limits ---------------------------------------------------------------------------------

namespace {
// A gzip file of `n` zero bytes: one literal and matches of 258 at distance 1.
Bytes GzipZeros(size_t n) {
  BitWriter w = FixedBlock();
  w.FixedSymbol(0);
  size_t left = n - 1;
  while (left >= 258 + 3) {
    w.FixedMatch(258, 1);
    left -= 258;
  }
  while (left--) w.FixedSymbol(0);
  w.FixedSymbol(256);
  return Gzip(w.bytes(), std::string(n, '\0'));
}
}  // namespace

TEST(InflateLimits, MaxOutputBytes) {
  const Bytes gz = GzipZeros(3 << 20);
  EXPECT_EQ(All(gz).size(), size_t{3} << 20);
  InflateLimits limits;
  limits.max_output_bytes = (size_t{3} << 20) - 1;
  limits.raise_hint = "pass max_decompressed_bytes=";
  const Thrown t = Catch([&] { All(gz, {}, limits); });
  EXPECT_TRUE(t.thrown);
  EXPECT_TRUE(t.message.find("exceeds the limit of 3145727 bytes (InflateLimits::max_output_bytes)"
                             "; pass max_decompressed_bytes=") != std::string::npos);
  limits.max_output_bytes = size_t{3} << 20;  // exactly the size: accepted
  EXPECT_EQ(All(gz, {}, limits).size(), size_t{3} << 20);
}

TEST(InflateLimits, MaxRatio) {
  const Bytes gz = GzipZeros(3 << 20);  // about 158:1 (13 bits per 258 bytes)
  InflateLimits limits;
  limits.max_ratio = 100;
  const Thrown t = Catch([&] { All(gz, {}, limits); });
  EXPECT_TRUE(t.thrown);
  EXPECT_TRUE(t.message.find("times the " + std::to_string(gz.size()) +
                             " compressed bytes (InflateLimits::max_ratio)") != std::string::npos);
  // Under the 1 MiB floor the ratio is not checked.
  EXPECT_EQ(All(GzipZeros(1 << 20), {}, limits).size(), size_t{1} << 20);
  // The default admits deflate's largest ratio.
  EXPECT_EQ(InflateLimits{}.OutputBudget(10000000), 10320000000u);
}

TEST(InflateLimits, OutputGrowsPastTheFirstGuess) {
  // The last member's ISIZE (1 KiB) is the first guess; the buffer is remapped larger several
  // times, past the sizes that get huge pages.
  Bytes gz = GzipZeros(40 << 20);
  const Bytes tail = GzipZeros(1 << 10);
  gz.insert(gz.end(), tail.begin(), tail.end());
  const tracecore::InflatedBuffer out = InflateAll(gz.data(), gz.size());
  ASSERT_EQ(out.size(), size_t{(40 << 20) + (1 << 10)});
  EXPECT_TRUE(std::all_of(out.data(), out.data() + out.size(), [](uint8_t b) { return b == 0; }));
}

TEST(InflateLimits, LyingIsizeIsOnlyAHint) {
  const std::string plain = TraceLikeText(300000, 9);
  Bytes gz = Gzip(FixedLz77(plain), plain);
  // ISIZE saying 4 GiB - 1 (and the CRC then fails) or 10 bytes: the output is still right
  // up to the check, and the buffer grows as needed.
  Bytes small = gz;
  small[small.size() - 4] = 10;
  small[small.size() - 3] = small[small.size() - 2] = small[small.size() - 1] = 0;
  EXPECT_ERROR_AT(All(small), small.size() - 4, "gzip ISIZE mismatch");
  Bytes huge = gz;
  std::fill(huge.end() - 4, huge.end(), 0xFF);
  EXPECT_ERROR_AT(All(huge), huge.size() - 4, "gzip ISIZE mismatch");
  const tracecore::InflatedBuffer out = InflateAll(gz.data(), gz.size());
  EXPECT_EQ(out.size(), plain.size());
  EXPECT_TRUE(out.capacity() >= out.size());
  EXPECT_TRUE(out.capacity() < out.size() + 8192);  // shrunk to fit
}
