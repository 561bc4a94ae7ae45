#include "codec/inflater.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

#include "codec/adler32.h"
#include "codec/codec_error.h"
#include "codec/crc32.h"
#include "codec/huffman_table.h"
#include "codec/load_le.h"

namespace tracecore {
namespace {

using huffman::kEndOfBlock;
using huffman::kInvalid;
using huffman::kLiteral;
using huffman::kSubtable;

constexpr unsigned kLitLenRootBits = 11;  // most codes of a block resolve in one lookup
constexpr unsigned kDistRootBits = 8;
constexpr unsigned kCodeLenRootBits = 7;  // code length codes are at most 7 bits
constexpr uint64_t kLitLenMask = (1u << kLitLenRootBits) - 1;
constexpr uint64_t kDistMask = (1u << kDistRootBits) - 1;
constexpr size_t kLitLenCapacity = huffman::TableCapacity(288, kLitLenRootBits);
constexpr size_t kDistCapacity = huffman::TableCapacity(32, kDistRootBits);
constexpr size_t kWindowSize = 32768;  // deflate's largest distance
constexpr unsigned kMaxMatch = 258;

// The fast loop runs while this much input and output space is left: two refills of eight
// bytes per iteration, and a match of 258 bytes written in 16-byte pieces after two literals.
constexpr size_t kFastInputSlack = 16;
constexpr size_t kFastOutputSlack = 2 + kMaxMatch + 64;

constexpr uint8_t kCodeLengthOrder[19] = {16, 17, 18, 0, 8,  7, 9,  6, 10, 5,
                                          11, 4,  12, 3, 13, 2, 14, 1, 15};

struct SymbolTables {
  uint32_t litlen[288];
  uint32_t dist[32];
  uint32_t codelen[19];
};

// What each symbol decodes to (RFC 1951 section 3.2.5). Invalid symbols keep their number for
// the error message.
SymbolTables MakeSymbolTables() {
  static constexpr uint16_t kLengthBase[29] = {3,  4,  5,  6,  7,  8,  9,  10,  11,  13,
                                               15, 17, 19, 23, 27, 31, 35, 43,  51,  59,
                                               67, 83, 99, 115, 131, 163, 195, 227, 258};
  static constexpr uint8_t kLengthExtra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
                                               2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
  static constexpr uint16_t kDistBase[30] = {1,    2,    3,    4,    5,    7,     9,     13,
                                             17,   25,   33,   49,   65,   97,    129,   193,
                                             257,  385,  513,  769,  1025, 1537,  2049,  3073,
                                             4097, 6145, 8193, 12289, 16385, 24577};
  static constexpr uint8_t kDistExtra[30] = {0, 0, 0, 0, 1, 1, 2, 2,  3,  3,  4,  4,  5,  5,  6,
                                             6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};
  SymbolTables t{};
  for (unsigned s = 0; s < 256; ++s) t.litlen[s] = huffman::Payload(s, 0, kLiteral);
  t.litlen[256] = huffman::Payload(256, 0, kEndOfBlock);
  for (unsigned s = 257; s < 286; ++s) {
    t.litlen[s] = huffman::Payload(kLengthBase[s - 257], kLengthExtra[s - 257]);
  }
  t.litlen[286] = huffman::Payload(286, 0, kInvalid);
  t.litlen[287] = huffman::Payload(287, 0, kInvalid);
  for (unsigned s = 0; s < 30; ++s) t.dist[s] = huffman::Payload(kDistBase[s], kDistExtra[s]);
  t.dist[30] = huffman::Payload(30, 0, kInvalid);
  t.dist[31] = huffman::Payload(31, 0, kInvalid);
  for (unsigned s = 0; s < 16; ++s) t.codelen[s] = huffman::Payload(s, 0);
  t.codelen[16] = huffman::Payload(16, 2);
  t.codelen[17] = huffman::Payload(17, 3);
  t.codelen[18] = huffman::Payload(18, 7);
  return t;
}

const SymbolTables& Symbols() {
  static const SymbolTables tables = MakeSymbolTables();
  return tables;
}

struct FixedTables {
  uint32_t litlen[kLitLenCapacity];
  uint32_t dist[kDistCapacity];
};

// The fixed codes of block type 1 (RFC 1951 section 3.2.6), built once.
FixedTables MakeFixedTables() {
  FixedTables t;
  uint8_t lengths[288];
  std::fill(lengths, lengths + 144, 8);
  std::fill(lengths + 144, lengths + 256, 9);
  std::fill(lengths + 256, lengths + 280, 7);
  std::fill(lengths + 280, lengths + 288, 8);
  huffman::BuildTable(lengths, 288, Symbols().litlen, kLitLenRootBits, t.litlen);
  std::fill(lengths, lengths + 32, 5);
  huffman::BuildTable(lengths, 32, Symbols().dist, kDistRootBits, t.dist);
  return t;
}

const FixedTables& Fixed() {
  static const FixedTables tables = MakeFixedTables();
  return tables;
}

inline void Copy8(uint8_t* dst, const uint8_t* src) {
  uint64_t v;
  std::memcpy(&v, src, 8);
  std::memcpy(dst, &v, 8);
}

inline void Copy16(uint8_t* dst, const uint8_t* src) {
  uint64_t a, b;
  std::memcpy(&a, src, 8);
  std::memcpy(&b, src + 8, 8);
  std::memcpy(dst, &a, 8);
  std::memcpy(dst + 8, &b, 8);
}

// Copies a match whose source lies inside the output buffer, `distance` bytes back, writing in
// whole 8- or 16-byte pieces (up to 15 bytes past the match: the caller leaves room). A source
// closer than 8 bytes is a repeating pattern: its first 8 bytes are copied one by one, then
// pieces are copied from the nearest multiple of the period at least 8 bytes back.
inline uint8_t* CopyMatch(uint8_t* out, size_t distance, unsigned length) {
  const uint8_t* src = out - distance;
  uint8_t* const end = out + length;
  if (distance >= 16) {
    do {
      Copy16(out, src);
      out += 16;
      src += 16;
    } while (out < end);
  } else if (distance >= 8) {
    do {
      Copy8(out, src);
      out += 8;
      src += 8;
    } while (out < end);
  } else if (distance == 1) {
    const uint64_t v = uint64_t{*src} * 0x0101010101010101ull;
    do {
      std::memcpy(out, &v, 8);
      out += 8;
    } while (out < end);
  } else {
    static constexpr uint8_t kStride[8] = {0, 8, 8, 9, 8, 10, 12, 14};
    for (int i = 0; i < 8; ++i) out[i] = src[i];
    const size_t stride = kStride[distance];
    out += 8;
    while (out < end) {
      Copy8(out, out - stride);
      out += 8;
    }
  }
  return end;
}

struct Lookup {
  uint32_t entry;  // never a subtable pointer
  unsigned root;   // bits before the entry's own (the root bits when it is in a subtable)
  unsigned total() const { return root + huffman::DropBits(entry); }
};

inline Lookup Decode(const uint32_t* table, uint64_t mask, uint64_t bits) {
  const uint32_t e = table[bits & mask];
  if (!(e & kSubtable)) return {e, 0};
  const unsigned root = huffman::DropBits(e);
  const uint64_t index = (bits >> root) & ((uint64_t{1} << huffman::CodeBits(e)) - 1);
  return {table[huffman::Value(e) + index], root};
}

}  // namespace

const char* CompressionFormatName(CompressionFormat format) {
  switch (format) {
    case CompressionFormat::kGzip: return "gzip";
    case CompressionFormat::kZlib: return "zlib";
    case CompressionFormat::kRaw: return "deflate";
    case CompressionFormat::kAuto: break;
  }
  return "gzip or zlib";
}

struct Inflater::State {
  enum class Step : uint8_t {
    kStart,            // a stream (or gzip member) begins
    kDetect,           // kAuto: gzip or zlib?
    kGzipHeader,       // the 10 fixed bytes
    kGzipExtraLength,  // FEXTRA's XLEN
    kGzipExtra,
    kGzipName,
    kGzipComment,
    kGzipHeaderCrc,
    kZlibHeader,
    kBlockHeader,
    kStoredHeader,
    kStoredCopy,
    kDynamicHeader,
    kCodeLengthCodes,
    kCodeLengths,
    kBlockData,
    kMatchCopy,  // the rest of a match that did not fit the output
    kTrailer,
    kMemberEnd,  // after a gzip member: another member, zero padding, or the end
    kDone,
  };
  enum class Mode : uint8_t { kUnset, kWindow, kInPlace };

  // One call's buffers. `hist` is the earliest output byte of the current member in this
  // buffer: back-references reach it, and before it only the window (Inflate mode).
  struct Call {
    const uint8_t* in_begin;
    const uint8_t* in;
    const uint8_t* in_end;
    uint8_t* out_begin;
    uint8_t* out;
    uint8_t* out_end;
    uint8_t* hist;
    uint8_t* check_from;  // output not yet in the check value
    bool input_ends;
  };

  explicit State(const InflateOptions& o) : options(o) { Restart(); }

  void Restart() {
    format = options.format;
    step = Step::kStart;
    mode = Mode::kUnset;
    bits = 0;
    bit_count = 0;
    total_in = 0;
    total_out = 0;
    members = 0;
    member_start_out = 0;
    window_have = 0;
    window_next = 0;
  }

  // ---- positions and errors ----------------------------------------------------------------
  // Offset of the byte holding the next unread bit, `back` bits earlier.
  uint64_t BytePos(const Call& c, unsigned back = 0) const {
    return ((total_in + static_cast<uint64_t>(c.in - c.in_begin)) * 8 - bit_count - back) / 8;
  }
  uint64_t BytePosAhead(const Call& c, unsigned ahead) const {
    return ((total_in + static_cast<uint64_t>(c.in - c.in_begin)) * 8 - bit_count + ahead) / 8;
  }
  [[noreturn]] void Fail(uint64_t offset, const std::string& what) const {
    throw CompressedDataError(CompressionFormatName(format), offset, what);
  }

  // ---- bit reader (slow path) --------------------------------------------------------------
  bool LoadByte(Call& c) {
    if (c.in == c.in_end) return false;
    bits |= uint64_t{*c.in++} << bit_count;
    bit_count += 8;
    return true;
  }
  bool Need(Call& c, unsigned n) {
    while (bit_count < n) {
      if (!LoadByte(c)) return false;
    }
    return true;
  }
  uint32_t Take(unsigned n) {
    const uint32_t v = static_cast<uint32_t>(bits & ((uint64_t{1} << n) - 1));
    bits >>= n;
    bit_count -= n;
    return v;
  }
  void AlignToByte() { Take(bit_count & 7); }
  // The k-th unread byte (whole bytes in the bit buffer first, then input), or -1 if it has
  // not arrived. Only at byte boundaries.
  int PeekByte(const Call& c, size_t k) const {
    const size_t buffered = bit_count / 8;
    if (k < buffered) return static_cast<int>((bits >> (8 * k)) & 0xFF);
    k -= buffered;
    return k < static_cast<size_t>(c.in_end - c.in) ? c.in[k] : -1;
  }
  // Returns whole buffered bytes that came from this call's input to it.
  void GiveBackBytes(Call& c) {
    const size_t n = std::min<size_t>(bit_count / 8, static_cast<size_t>(c.in - c.in_begin));
    c.in -= n;
    bit_count -= static_cast<unsigned>(8 * n);
    bits &= (uint64_t{1} << bit_count) - 1;
  }
  // Reads `n` header/trailer bytes into header[header_have..n), resumably.
  bool CollectBytes(Call& c, unsigned n) {
    while (header_have < n) {
      if (!Need(c, 8)) return false;
      header[header_have++] = static_cast<uint8_t>(Take(8));
    }
    return true;
  }

  // ---- output ------------------------------------------------------------------------------
  uint64_t OutputSoFar(const Call& c) const {
    return total_out + static_cast<uint64_t>(c.out - c.out_begin);
  }
  void UpdateCheck(Call& c) {
    const size_t n = static_cast<size_t>(c.out - c.check_from);
    if (n == 0) return;
    if (format == CompressionFormat::kGzip) {
      check = Crc32(check, c.check_from, n);
    } else if (format == CompressionFormat::kZlib) {
      check = Adler32(check, c.check_from, n);
    }
    c.check_from = c.out;
  }
  void AppendWindow(const uint8_t* p, size_t n) {
    if (n >= kWindowSize) {
      std::memcpy(window.get(), p + n - kWindowSize, kWindowSize);
      window_next = 0;
      window_have = kWindowSize;
      return;
    }
    const size_t first = std::min(n, kWindowSize - window_next);
    std::memcpy(window.get() + window_next, p, first);
    std::memcpy(window.get(), p + first, n - first);
    window_next = (window_next + n) & (kWindowSize - 1);
    window_have = std::min(window_have + n, kWindowSize);
  }
  // A member's (or stream's) output starts here.
  void StartMember(Call& c) {
    check = format == CompressionFormat::kZlib ? 1 : 0;
    member_start_out = OutputSoFar(c);
    c.hist = c.out;
    c.check_from = c.out;
    window_have = 0;
    window_next = 0;
    step = Step::kBlockHeader;
  }

  // ---- the steps ---------------------------------------------------------------------------
  enum class Stall : uint8_t { kNone, kInput, kOutput, kEnd };

  Stall Run(Call& c);
  Stall Detect(Call& c);
  Stall GzipHeader(Call& c);
  Stall ZlibHeader(Call& c);
  Stall BlockHeader(Call& c);
  Stall StoredCopy(Call& c);
  Stall DynamicHeader(Call& c);
  Stall CodeLengths(Call& c);
  void FastBlockData(Call& c);
  Stall SlowBlockData(Call& c);
  Stall MatchCopy(Call& c);
  Stall Trailer(Call& c);
  Stall MemberEnd(Call& c);
  void EndOfBlock(Call& c);
  [[noreturn]] void FailDistance(uint64_t offset, size_t distance, const Call& c,
                                 const uint8_t* out) const;
  [[noreturn]] void FailInvalidCode(uint64_t offset, uint32_t entry, bool distance) const;
  [[noreturn]] void FailTruncated(const Call& c) const;
  uint8_t* CopyFromWindow(uint8_t* out, const Call& c, size_t distance, unsigned length) const;
  Result Finish(Call& c, Stall stall);

  InflateOptions options;
  CompressionFormat format;
  Step step;
  Mode mode;
  uint64_t bits;       // unread bits, next one lowest; bits past bit_count are zero (inside
  unsigned bit_count;  // the fast loop: the next input byte's, loaded twice)
  uint64_t total_in;
  uint64_t total_out;
  uint64_t members;
  uint64_t member_start_out;
  uint32_t check = 0;

  bool final_block = false;
  uint32_t stored_left = 0;
  unsigned copy_left = 0;
  size_t copy_distance = 0;
  const uint32_t* litlen = nullptr;
  const uint32_t* dist = nullptr;

  unsigned header_have = 0;
  unsigned header_flags = 0;
  uint32_t header_crc = 0;
  uint32_t skip_left = 0;
  uint8_t header[12] = {};

  unsigned hlit = 0, hdist = 0, hclen = 0, lens_have = 0;
  // Written before being read; left uninitialized so a short stream does not pay for
  // clearing 16 KiB.
  uint8_t lens[288 + 32];
  uint32_t codelen_table[1u << kCodeLenRootBits];
  uint32_t litlen_table[kLitLenCapacity];
  uint32_t dist_table[kDistCapacity];

  std::unique_ptr<uint8_t[]> window;
  size_t window_have;
  size_t window_next;
};

// ---- stream and member framing ---------------------------------------------------------------

Inflater::State::Stall Inflater::State::Detect(Call& c) {
  if (!Need(c, 16)) return Stall::kInput;
  const int b0 = PeekByte(c, 0), b1 = PeekByte(c, 1);
  if (b0 == 0x1F && b1 == 0x8B) {
    format = CompressionFormat::kGzip;
    step = Step::kGzipHeader;
    header_have = 0;
    return Stall::kNone;
  }
  if ((b0 & 0x0F) == 8 && (b0 >> 4) <= 7 && ((b0 << 8) | b1) % 31 == 0) {
    format = CompressionFormat::kZlib;
    step = Step::kZlibHeader;
    header_have = 0;
    return Stall::kNone;
  }
  char hex[16];
  std::snprintf(hex, sizeof hex, "%02x %02x", b0, b1);
  Fail(BytePos(c), std::string("neither gzip nor zlib data: it starts with the bytes ") + hex +
                       " (gzip starts with 1f 8b; a zlib header is two bytes, compression "
                       "method 8, their big-endian value a multiple of 31, e.g. 78 9c)");
}

Inflater::State::Stall Inflater::State::GzipHeader(Call& c) {
  for (;;) {
    switch (step) {
      case Step::kGzipHeader: {
        while (header_have < 10) {
          if (!Need(c, 8)) return Stall::kInput;
          const unsigned i = header_have;
          const uint8_t b = header[header_have++] = static_cast<uint8_t>(Take(8));
          const uint64_t at = BytePos(c) - 1;
          if ((i == 0 && b != 0x1F) || (i == 1 && b != 0x8B)) {
            char found[8];
            std::snprintf(found, sizeof found, "%02x", b);
            Fail(at, std::string("expected the gzip magic bytes 1f 8b, found ") + found +
                         (i == 0 ? "" : " after 1f"));
          }
          if (i == 2 && b != 8) {
            Fail(at, "unknown gzip compression method " + std::to_string(b) +
                         " (8, deflate, is the only one)");
          }
          if (i == 3 && (b & 0xE0)) {
            Fail(at, "reserved gzip header flag bits are set (flags " + std::to_string(b) +
                         "; RFC 1952 requires bits 5-7 to be zero)");
          }
        }
        header_flags = header[3];
        header_crc = Crc32(0, header, 10);
        header_have = 0;
        step = Step::kGzipExtraLength;
        break;
      }
      case Step::kGzipExtraLength:
        if (header_flags & 4) {
          if (!CollectBytes(c, 2)) return Stall::kInput;
          header_crc = Crc32(header_crc, header, 2);
          skip_left = header[0] | (header[1] << 8);
          header_have = 0;
          step = Step::kGzipExtra;
        } else {
          step = Step::kGzipName;
        }
        break;
      case Step::kGzipExtra: {
        while (skip_left > 0 && bit_count >= 8) {
          const uint8_t b = static_cast<uint8_t>(Take(8));
          header_crc = Crc32(header_crc, &b, 1);
          --skip_left;
        }
        const size_t n = std::min<size_t>(skip_left, static_cast<size_t>(c.in_end - c.in));
        header_crc = Crc32(header_crc, c.in, n);
        c.in += n;
        skip_left -= static_cast<uint32_t>(n);
        if (skip_left > 0) return Stall::kInput;
        step = Step::kGzipName;
        break;
      }
      case Step::kGzipName:
      case Step::kGzipComment: {
        const unsigned flag = step == Step::kGzipName ? 8 : 16;
        if (header_flags & flag) {
          // A zero-terminated string of any length: scanned, not stored.
          bool ended = false;
          while (!ended && bit_count >= 8) {
            const uint8_t b = static_cast<uint8_t>(Take(8));
            header_crc = Crc32(header_crc, &b, 1);
            ended = b == 0;
          }
          if (!ended) {
            const size_t avail = static_cast<size_t>(c.in_end - c.in);
            const void* zero = std::memchr(c.in, 0, avail);
            const size_t n =
                zero ? static_cast<size_t>(static_cast<const uint8_t*>(zero) - c.in) + 1 : avail;
            header_crc = Crc32(header_crc, c.in, n);
            c.in += n;
            if (!zero) return Stall::kInput;
          }
        }
        step = step == Step::kGzipName ? Step::kGzipComment : Step::kGzipHeaderCrc;
        break;
      }
      case Step::kGzipHeaderCrc:
        if (header_flags & 2) {
          if (!CollectBytes(c, 2)) return Stall::kInput;
          const unsigned stored = header[0] | (header[1] << 8);
          if (stored != (header_crc & 0xFFFF)) {
            Fail(BytePos(c) - 2, "gzip header CRC16 mismatch: the header says " +
                                     std::to_string(stored) + ", its bytes give " +
                                     std::to_string(header_crc & 0xFFFF));
          }
          header_have = 0;
        }
        StartMember(c);
        return Stall::kNone;
      default:
        return Stall::kNone;
    }
  }
}

Inflater::State::Stall Inflater::State::ZlibHeader(Call& c) {
  if (!CollectBytes(c, 2)) return Stall::kInput;
  const unsigned cmf = header[0], flg = header[1];
  const uint64_t at = BytePos(c) - 2;
  if ((cmf & 0x0F) != 8) {
    Fail(at, "unknown zlib compression method " + std::to_string(cmf & 0x0F) +
                 " (8, deflate, is the only one)");
  }
  if ((cmf >> 4) > 7) {
    Fail(at, "zlib window size 2^" + std::to_string((cmf >> 4) + 8) +
                 " is larger than deflate's 32 KiB");
  }
  if (((cmf << 8) | flg) % 31 != 0) {
    Fail(at, "zlib header check bits are wrong (" + std::to_string((cmf << 8) | flg) +
                 " is not a multiple of 31)");
  }
  if (flg & 0x20) {
    Fail(at + 1, "the zlib stream needs a preset dictionary (FDICT), which is not supported");
  }
  header_have = 0;
  StartMember(c);
  return Stall::kNone;
}

Inflater::State::Stall Inflater::State::Trailer(Call& c) {
  AlignToByte();
  if (format == CompressionFormat::kGzip) {
    if (!CollectBytes(c, 8)) return Stall::kInput;
    const uint64_t at = BytePos(c) - 8;
    const uint32_t crc = header[0] | (header[1] << 8) | (header[2] << 16) |
                         (static_cast<uint32_t>(header[3]) << 24);
    const uint32_t size = header[4] | (header[5] << 8) | (header[6] << 16) |
                          (static_cast<uint32_t>(header[7]) << 24);
    if (crc != check) {
      char text[64];
      std::snprintf(text, sizeof text, "the trailer says %08x, the data gives %08x", crc, check);
      Fail(at, std::string("gzip CRC-32 mismatch: ") + text);
    }
    const uint32_t actual = static_cast<uint32_t>(OutputSoFar(c) - member_start_out);
    if (size != actual) {
      Fail(at + 4, "gzip ISIZE mismatch: the trailer says " + std::to_string(size) +
                       " bytes (modulo 2^32), the member has " + std::to_string(actual));
    }
  } else if (format == CompressionFormat::kZlib) {
    if (!CollectBytes(c, 4)) return Stall::kInput;
    const uint32_t adler = (static_cast<uint32_t>(header[0]) << 24) | (header[1] << 16) |
                           (header[2] << 8) | header[3];
    if (adler != check) {
      char text[64];
      std::snprintf(text, sizeof text, "the trailer says %08x, the data gives %08x", adler,
                    check);
      Fail(BytePos(c) - 4, std::string("zlib Adler-32 mismatch: ") + text);
    }
  }
  header_have = 0;
  ++members;
  step = Step::kMemberEnd;
  return Stall::kNone;
}

// Bytes looked at here are loaded into the bit buffer (so kNeedInput always means every input
// byte was used); Finish gives back those that turn out to follow the stream.
Inflater::State::Stall Inflater::State::MemberEnd(Call& c) {
  const bool more_members = format == CompressionFormat::kGzip && options.multi_member;
  for (;;) {
    if (bit_count < 8 && !LoadByte(c)) {
      // Without trailing data allowed, the end is only sure once the input ends.
      if (c.input_ends || (!more_members && options.allow_trailing_data)) return Stall::kEnd;
      return Stall::kInput;
    }
    const unsigned b0 = bits & 0xFF;
    if (more_members) {
      if (b0 == 0) {  // padding between or after members
        Take(8);
        continue;
      }
      if (b0 == 0x1F) {
        if (bit_count < 16 && !LoadByte(c)) {
          // The input ends after 1f: a truncated member (thrown by Finish) unless trailing
          // data is allowed.
          if (!c.input_ends || !options.allow_trailing_data) return Stall::kInput;
          return Stall::kEnd;
        }
        if (bit_count >= 16 && ((bits >> 8) & 0xFF) == 0x8B) {
          step = Step::kGzipHeader;
          header_have = 0;
          return Stall::kNone;
        }
      }
    }
    if (options.allow_trailing_data) return Stall::kEnd;
    char text[8];
    std::snprintf(text, sizeof text, "%02x", b0);
    Fail(BytePos(c),
         std::string("trailing data after the end of the ") + CompressionFormatName(format) +
             " stream: byte " + text +
             (more_members ? " does not start another gzip member (1f 8b)" : ""));
  }
}

// ---- deflate blocks --------------------------------------------------------------------------

Inflater::State::Stall Inflater::State::BlockHeader(Call& c) {
  if (!Need(c, 3)) return Stall::kInput;
  const uint64_t at = BytePos(c);
  final_block = Take(1) != 0;
  switch (Take(2)) {
    case 0:
      step = Step::kStoredHeader;
      break;
    case 1:
      litlen = Fixed().litlen;
      dist = Fixed().dist;
      step = Step::kBlockData;
      break;
    case 2:
      step = Step::kDynamicHeader;
      break;
    default:
      Fail(at, "invalid deflate block type 3 (0 stored, 1 fixed codes, 2 dynamic codes)");
  }
  return Stall::kNone;
}

Inflater::State::Stall Inflater::State::StoredCopy(Call& c) {
  while (stored_left > 0 && bit_count >= 8) {
    if (c.out == c.out_end) return Stall::kOutput;
    *c.out++ = static_cast<uint8_t>(Take(8));
    --stored_left;
  }
  const size_t n = std::min<size_t>(
      {stored_left, static_cast<size_t>(c.in_end - c.in), static_cast<size_t>(c.out_end - c.out)});
  std::memcpy(c.out, c.in, n);
  c.in += n;
  c.out += n;
  stored_left -= static_cast<uint32_t>(n);
  if (stored_left > 0) return c.out == c.out_end ? Stall::kOutput : Stall::kInput;
  EndOfBlock(c);
  return Stall::kNone;
}

Inflater::State::Stall Inflater::State::DynamicHeader(Call& c) {
  if (!Need(c, 14)) return Stall::kInput;
  const uint64_t at = BytePos(c);
  hlit = Take(5) + 257;
  hdist = Take(5) + 1;
  hclen = Take(4) + 4;
  if (hlit > 286) {
    Fail(at, "the dynamic block declares " + std::to_string(hlit) +
                 " literal/length codes (at most 286)");
  }
  if (hdist > 30) {
    Fail(at + 1, "the dynamic block declares " + std::to_string(hdist) +
                     " distance codes (at most 30)");
  }
  lens_have = 0;
  step = Step::kCodeLengthCodes;
  return Stall::kNone;
}

Inflater::State::Stall Inflater::State::CodeLengths(Call& c) {
  if (step == Step::kCodeLengthCodes) {
    while (lens_have < hclen) {
      if (!Need(c, 3)) return Stall::kInput;
      lens[kCodeLengthOrder[lens_have++]] = static_cast<uint8_t>(Take(3));
    }
    for (unsigned i = hclen; i < 19; ++i) lens[kCodeLengthOrder[i]] = 0;
    const huffman::Shape shape =
        huffman::BuildTable(lens, 19, Symbols().codelen, kCodeLenRootBits, codelen_table);
    if (shape != huffman::Shape::kComplete) {
      Fail(BytePos(c), std::string("the code length code is ") +
                           (shape == huffman::Shape::kOverSubscribed ? "over-subscribed"
                                                                     : "incomplete") +
                           " (its lengths must form a complete prefix code)");
    }
    lens_have = 0;
    step = Step::kCodeLengths;
  }
  const unsigned total = hlit + hdist;
  while (lens_have < total) {
    uint32_t e;
    for (;;) {
      e = codelen_table[bits & ((1u << kCodeLenRootBits) - 1)];
      if (huffman::DropBits(e) <= bit_count) break;
      if (!LoadByte(c)) return Stall::kInput;
    }
    const uint64_t at = BytePos(c);
    const unsigned symbol = huffman::Value(e);
    const unsigned extra = huffman::ExtraValue(e, bits);
    Take(huffman::DropBits(e));
    if (symbol < 16) {
      lens[lens_have++] = static_cast<uint8_t>(symbol);
      continue;
    }
    unsigned repeat;
    uint8_t value = 0;
    if (symbol == 16) {
      if (lens_have == 0) {
        Fail(at, "code length code 16 repeats the previous length, but there is none yet");
      }
      value = lens[lens_have - 1];
      repeat = 3 + extra;
    } else {
      repeat = (symbol == 17 ? 3 : 11) + extra;
    }
    if (lens_have + repeat > total) {
      Fail(at, "a code length repeat runs past the " + std::to_string(total) +
                   " lengths the block declares");
    }
    std::memset(lens + lens_have, value, repeat);
    lens_have += repeat;
  }
  const uint64_t at = BytePos(c);
  if (lens[256] == 0) Fail(at, "the end-of-block symbol (256) has no code in the dynamic block");
  const huffman::Shape shape =
      huffman::BuildTable(lens, hlit, Symbols().litlen, kLitLenRootBits, litlen_table);
  if (shape == huffman::Shape::kOverSubscribed || shape == huffman::Shape::kIncomplete) {
    Fail(at, std::string("the literal/length code is ") +
                 (shape == huffman::Shape::kOverSubscribed ? "over-subscribed" : "incomplete") +
                 " (its lengths must form a complete prefix code)");
  }
  const huffman::Shape dshape =
      huffman::BuildTable(lens + hlit, hdist, Symbols().dist, kDistRootBits, dist_table);
  if (dshape == huffman::Shape::kOverSubscribed || dshape == huffman::Shape::kIncomplete) {
    Fail(at, std::string("the distance code is ") +
                 (dshape == huffman::Shape::kOverSubscribed ? "over-subscribed" : "incomplete") +
                 " (its lengths must form a complete prefix code, or a single 1-bit code)");
  }
  litlen = litlen_table;
  dist = dist_table;
  step = Step::kBlockData;
  return Stall::kNone;
}

void Inflater::State::EndOfBlock(Call& c) {
  if (!final_block) {
    step = Step::kBlockHeader;
    return;
  }
  UpdateCheck(c);
  header_have = 0;
  step = format == CompressionFormat::kRaw ? Step::kMemberEnd : Step::kTrailer;
  if (format == CompressionFormat::kRaw) {
    AlignToByte();
    ++members;
  }
}

void Inflater::State::FailDistance(uint64_t offset, size_t distance, const Call& c,
                                   const uint8_t* out) const {
  const uint64_t before = static_cast<uint64_t>(out - c.hist) + window_have;
  Fail(offset, "distance " + std::to_string(distance) + " reaches back before the start of " +
                   (format == CompressionFormat::kGzip ? "the member's" : "the") + " output (" +
                   std::to_string(before) + " bytes precede it)");
}

void Inflater::State::FailInvalidCode(uint64_t offset, uint32_t entry, bool distance) const {
  const unsigned symbol = huffman::Value(entry);
  if (symbol == 0) {
    Fail(offset, std::string("the bits match no ") + (distance ? "distance" : "literal/length") +
                     " code of the block (its code is incomplete)");
  }
  Fail(offset, distance ? "invalid distance code " + std::to_string(symbol) +
                              " (deflate's distance codes are 0-29)"
                        : "invalid literal/length code " + std::to_string(symbol) +
                              " (deflate's literal/length codes are 0-285)");
}

// A match reaching past the start of this buffer into the window (Inflate mode), byte by byte.
uint8_t* Inflater::State::CopyFromWindow(uint8_t* out, const Call& c, size_t distance,
                                         unsigned length) const {
  for (unsigned i = 0; i < length; ++i) {
    const size_t back = static_cast<size_t>(out - c.hist);
    *out = distance > back
               ? window[(window_next + kWindowSize - (distance - back)) & (kWindowSize - 1)]
               : out[-static_cast<ptrdiff_t>(distance)];
    ++out;
  }
  return out;
}

// The hot loop: a 64-bit bit buffer refilled eight bytes at a time without branches (the bytes
// past the counted ones are loaded again by the next refill, so or-ing them twice is harmless),
// up to three literals per refill, and matches copied in 8/16-byte pieces.
void Inflater::State::FastBlockData(Call& c) {
  const uint8_t* in = c.in;
  uint8_t* out = c.out;
  if (static_cast<size_t>(c.in_end - in) <= kFastInputSlack ||
      static_cast<size_t>(c.out_end - out) <= kFastOutputSlack) {
    return;
  }
  const uint8_t* const in_limit = c.in_end - kFastInputSlack;
  uint8_t* const out_limit = c.out_end - kFastOutputSlack;
  uint8_t* const hist = c.hist;
  const uint32_t* const lt = litlen;
  const uint32_t* const dt = dist;
  uint64_t b = bits;
  unsigned n = bit_count;
  auto pos = [&](unsigned back) {
    return ((total_in + static_cast<uint64_t>(in - c.in_begin)) * 8 - n - back) / 8;
  };
#define TC_REFILL()                     \
  do {                                  \
    b |= LoadLe64(in) << n;             \
    in += (63 - n) >> 3;                \
    n |= 56;                            \
  } while (0)
#define TC_DROP(k)  \
  do {              \
    b >>= (k);      \
    n -= (k);       \
  } while (0)

  while (in < in_limit && out < out_limit) {
    TC_REFILL();
    uint32_t e = lt[b & kLitLenMask];
    if (e & kLiteral) {
      TC_DROP(huffman::DropBits(e));
      *out++ = static_cast<uint8_t>(e >> 16);
      e = lt[b & kLitLenMask];
      if (e & kLiteral) {
        TC_DROP(huffman::DropBits(e));
        *out++ = static_cast<uint8_t>(e >> 16);
        e = lt[b & kLitLenMask];
        if (e & kLiteral) {
          TC_DROP(huffman::DropBits(e));
          *out++ = static_cast<uint8_t>(e >> 16);
          continue;
        }
      }
      // At least 11 bits are left, so `e` stays valid; the refill makes room for a match.
      TC_REFILL();
    }
    unsigned root = 0;
    if (e & kSubtable) {
      root = huffman::DropBits(e);
      TC_DROP(root);
      e = lt[huffman::Value(e) + (b & ((uint64_t{1} << huffman::CodeBits(e)) - 1))];
      if (e & kLiteral) {
        TC_DROP(huffman::DropBits(e));
        *out++ = static_cast<uint8_t>(e >> 16);
        continue;
      }
    }
    if (e & (kEndOfBlock | kInvalid)) {
      if (e & kInvalid) {
        bits = b;
        bit_count = n;
        FailInvalidCode(pos(root), e, false);
      }
      TC_DROP(huffman::DropBits(e));
      c.in = in;
      c.out = out;
      bits = b & ((uint64_t{1} << n) - 1);
      bit_count = n;
      EndOfBlock(c);
      return;
    }
    const unsigned length = huffman::Value(e) + huffman::ExtraValue(e, b);
    const unsigned length_bits = root + huffman::DropBits(e);
    TC_DROP(huffman::DropBits(e));
    uint32_t d = dt[b & kDistMask];
    unsigned droot = 0;
    if (d & kSubtable) {
      droot = huffman::DropBits(d);
      TC_DROP(droot);
      d = dt[huffman::Value(d) + (b & ((uint64_t{1} << huffman::CodeBits(d)) - 1))];
    }
    if (d & kInvalid) FailInvalidCode(pos(droot), d, true);
    const size_t distance = huffman::Value(d) + huffman::ExtraValue(d, b);
    TC_DROP(huffman::DropBits(d));
    if (distance > static_cast<size_t>(out - hist)) {
      if (distance > static_cast<size_t>(out - hist) + window_have) {
        FailDistance(pos(length_bits + droot + huffman::DropBits(d)), distance, c, out);
      }
      out = CopyFromWindow(out, c, distance, length);
      continue;
    }
    out = CopyMatch(out, distance, length);
  }
#undef TC_REFILL
#undef TC_DROP
  // Whole bytes loaded ahead stay in the bit buffer (Finish returns them to the caller). The
  // bits past bit_count, part of the byte at `in`, are cleared: the slow steps may read that
  // byte from the input directly (stored blocks, gzip headers).
  c.in = in;
  c.out = out;
  bits = b & ((uint64_t{1} << n) - 1);
  bit_count = n;
}

// One symbol at a time with every bound checked, resumable at any input or output boundary;
// hands back to the fast loop when both have room again.
Inflater::State::Stall Inflater::State::SlowBlockData(Call& c) {
  for (;;) {
    if (static_cast<size_t>(c.in_end - c.in) > kFastInputSlack &&
        static_cast<size_t>(c.out_end - c.out) > kFastOutputSlack) {
      return Stall::kNone;  // back to the fast loop
    }
    Lookup l, d{0, 0};
    for (;;) {
      l = Decode(litlen, kLitLenMask, bits);
      if (l.total() <= bit_count && !(l.entry & (kLiteral | kEndOfBlock | kInvalid))) {
        d = Decode(dist, kDistMask, bits >> l.total());
        if (l.total() + d.total() <= bit_count) break;
      } else if (l.total() <= bit_count) {
        break;
      }
      if (!LoadByte(c)) return Stall::kInput;
    }
    const uint32_t e = l.entry;
    if (e & kLiteral) {
      if (c.out == c.out_end) return Stall::kOutput;
      Take(l.total());
      *c.out++ = static_cast<uint8_t>(e >> 16);
      continue;
    }
    if (e & kInvalid) FailInvalidCode(BytePos(c), e, false);
    if (e & kEndOfBlock) {
      Take(l.total());
      EndOfBlock(c);
      return Stall::kNone;
    }
    if (d.entry & kInvalid) FailInvalidCode(BytePosAhead(c, l.total()), d.entry, true);
    if (c.out == c.out_end) return Stall::kOutput;
    const unsigned length = huffman::Value(e) + huffman::ExtraValue(e, bits >> l.root);
    const uint64_t at = BytePos(c);
    Take(l.total());
    const size_t distance = huffman::Value(d.entry) + huffman::ExtraValue(d.entry, bits >> d.root);
    Take(d.total());
    if (distance > static_cast<size_t>(c.out - c.hist) + window_have) {
      FailDistance(at, distance, c, c.out);
    }
    copy_left = length;
    copy_distance = distance;
    step = Step::kMatchCopy;
    const Stall s = MatchCopy(c);
    if (s != Stall::kNone) return s;
  }
}

Inflater::State::Stall Inflater::State::MatchCopy(Call& c) {
  const size_t n = std::min<size_t>(copy_left, static_cast<size_t>(c.out_end - c.out));
  c.out = CopyFromWindow(c.out, c, copy_distance, static_cast<unsigned>(n));
  copy_left -= static_cast<unsigned>(n);
  if (copy_left > 0) return Stall::kOutput;
  step = Step::kBlockData;
  return Stall::kNone;
}

void Inflater::State::FailTruncated(const Call& c) const {
  const char* where = "inside a deflate block";
  switch (step) {
    case Step::kStart:
    case Step::kDetect:
      where = "before the stream header is complete";
      break;
    case Step::kGzipHeader:
    case Step::kGzipExtraLength:
    case Step::kGzipExtra:
    case Step::kGzipName:
    case Step::kGzipComment:
    case Step::kGzipHeaderCrc:
      where = "inside a gzip member header";
      break;
    case Step::kZlibHeader:
      where = "inside the zlib header";
      break;
    case Step::kTrailer:
      where = format == CompressionFormat::kGzip
                  ? "inside a gzip member trailer (CRC-32 and ISIZE, 8 bytes)"
                  : "inside the zlib trailer (Adler-32, 4 bytes)";
      break;
    case Step::kMemberEnd:
      where = "after the first byte (1f) of another gzip member";
      break;
    default:
      break;
  }
  Fail(total_in + static_cast<uint64_t>(c.in - c.in_begin),
       std::string("truncated ") + CompressionFormatName(format) + " data: the input ends " +
           where);
}

Inflater::State::Stall Inflater::State::Run(Call& c) {
  for (;;) {
    Stall s = Stall::kNone;
    switch (step) {
      case Step::kStart:
        if (format == CompressionFormat::kAuto) {
          step = Step::kDetect;
        } else if (format == CompressionFormat::kGzip) {
          step = Step::kGzipHeader;
          header_have = 0;
        } else if (format == CompressionFormat::kZlib) {
          step = Step::kZlibHeader;
          header_have = 0;
        } else {
          StartMember(c);
        }
        break;
      case Step::kDetect:
        s = Detect(c);
        break;
      case Step::kGzipHeader:
      case Step::kGzipExtraLength:
      case Step::kGzipExtra:
      case Step::kGzipName:
      case Step::kGzipComment:
      case Step::kGzipHeaderCrc:
        s = GzipHeader(c);
        break;
      case Step::kZlibHeader:
        s = ZlibHeader(c);
        break;
      case Step::kBlockHeader:
        s = BlockHeader(c);
        break;
      case Step::kStoredHeader: {
        AlignToByte();
        if (!Need(c, 32)) {
          s = Stall::kInput;
          break;
        }
        const uint64_t at = BytePos(c);
        const uint32_t len = Take(16), nlen = Take(16);
        if (len != (~nlen & 0xFFFF)) {
          Fail(at, "stored block length " + std::to_string(len) +
                       " does not match its one's complement (" + std::to_string(nlen) + ")");
        }
        stored_left = len;
        step = Step::kStoredCopy;
        break;
      }
      case Step::kStoredCopy:
        s = StoredCopy(c);
        break;
      case Step::kDynamicHeader:
        s = DynamicHeader(c);
        break;
      case Step::kCodeLengthCodes:
      case Step::kCodeLengths:
        s = CodeLengths(c);
        break;
      case Step::kBlockData:
        FastBlockData(c);
        if (step == Step::kBlockData) s = SlowBlockData(c);
        break;
      case Step::kMatchCopy:
        s = MatchCopy(c);
        break;
      case Step::kTrailer:
        s = Trailer(c);
        break;
      case Step::kMemberEnd:
        s = MemberEnd(c);
        if (s == Stall::kEnd) step = Step::kDone;
        break;
      case Step::kDone:
        if (!options.allow_trailing_data && PeekByte(c, 0) >= 0) {
          Fail(BytePos(c), std::string("trailing data after the end of the ") +
                               CompressionFormatName(format) + " stream");
        }
        return Stall::kEnd;
    }
    if (s != Stall::kNone) return s;
  }
}

Inflater::Result Inflater::State::Finish(Call& c, Stall stall) {
  if (stall == Stall::kInput && c.input_ends) FailTruncated(c);
  if (stall != Stall::kInput) GiveBackBytes(c);
  if (step != Step::kDone) UpdateCheck(c);
  if (mode == Mode::kWindow && c.out > c.hist) {
    AppendWindow(c.hist, static_cast<size_t>(c.out - c.hist));
  }
  Result r;
  r.consumed = static_cast<size_t>(c.in - c.in_begin);
  r.produced = static_cast<size_t>(c.out - c.out_begin);
  r.status = stall == Stall::kInput    ? Status::kNeedInput
             : stall == Stall::kOutput ? Status::kNeedOutput
                                       : Status::kStreamEnd;
  total_in += r.consumed;
  total_out += r.produced;
  if (stall == Stall::kEnd && bit_count >= 8) {
    // Bytes of an earlier call that turned out to follow the stream (a lone 1f at the end of
    // one call's input): total_in() stops at the stream's end.
    total_in -= bit_count / 8;
    bits = 0;
    bit_count = 0;
  }
  return r;
}

// ---- public interface ------------------------------------------------------------------------

Inflater::Inflater(const InflateOptions& options) : state_(std::make_unique<State>(options)) {}
Inflater::~Inflater() = default;
Inflater::Inflater(Inflater&&) noexcept = default;
Inflater& Inflater::operator=(Inflater&&) noexcept = default;

void Inflater::Reset() { state_->Restart(); }
CompressionFormat Inflater::format() const { return state_->format; }
uint64_t Inflater::total_in() const { return state_->total_in; }
uint64_t Inflater::total_out() const { return state_->total_out; }
uint64_t Inflater::members() const { return state_->members; }
bool Inflater::finished() const { return state_->step == State::Step::kDone; }

Inflater::Result Inflater::Inflate(const uint8_t* in, size_t in_size, uint8_t* out,
                                   size_t out_size, bool input_ends) {
  State& s = *state_;
  if (s.mode == State::Mode::kInPlace) {
    throw std::logic_error("Inflater::Inflate on a stream started with InflateInPlace");
  }
  if (s.mode == State::Mode::kUnset) {
    s.mode = State::Mode::kWindow;
    if (!s.window) s.window = std::make_unique<uint8_t[]>(kWindowSize);
  }
  State::Call c{in, in, in + in_size, out, out, out + out_size, out, out, input_ends};
  return s.Finish(c, s.Run(c));
}

Inflater::Result Inflater::InflateInPlace(const uint8_t* in, size_t in_size, uint8_t* out_base,
                                          size_t out_pos, size_t out_capacity,
                                          bool input_ends) {
  State& s = *state_;
  if (s.mode == State::Mode::kWindow) {
    throw std::logic_error("Inflater::InflateInPlace on a stream started with Inflate");
  }
  if (out_pos != s.total_out || out_capacity < out_pos) {
    throw std::logic_error("Inflater::InflateInPlace: out_pos must equal total_out()");
  }
  s.mode = State::Mode::kInPlace;
  uint8_t* out = out_base + out_pos;
  State::Call c{in, in, in + in_size, out, out, out_base + out_capacity,
                out_base + s.member_start_out, out, input_ends};
  return s.Finish(c, s.Run(c));
}

}  // namespace tracecore
