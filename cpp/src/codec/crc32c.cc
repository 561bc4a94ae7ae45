#include "codec/crc32c.h"

#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
#define TRACECORE_CRC32C_X86 1
#endif

namespace tracecore {
namespace {

constexpr uint32_t kPolynomial = 0x82F63B78u;  // reflected Castagnoli polynomial

// Slicing-by-8 tables: kSlices.t[0] is the byte-at-a-time table; t[k][b] is the CRC register
// after byte b followed by k zero bytes, so eight bytes fold in with eight independent lookups.
struct SliceTables {
  uint32_t t[8][256];
};

constexpr SliceTables MakeSliceTables() {
  SliceTables s{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (kPolynomial & (0u - (c & 1u)));
    s.t[0][i] = c;
  }
  for (int k = 1; k < 8; ++k) {
    for (uint32_t i = 0; i < 256; ++i)
      s.t[k][i] = (s.t[k - 1][i] >> 8) ^ s.t[0][s.t[k - 1][i] & 0xFF];
  }
  return s;
}

constexpr SliceTables kSlices = MakeSliceTables();

// The raw register update (no pre/post inversion) over [p, p + n).
uint32_t PortableRaw(uint32_t c, const uint8_t* p, size_t n) {
  const auto& t = kSlices.t;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  while (n >= 8) {
    uint32_t lo, hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + 4, 4);
    lo ^= c;
    c = t[7][lo & 0xFF] ^ t[6][(lo >> 8) & 0xFF] ^ t[5][(lo >> 16) & 0xFF] ^ t[4][lo >> 24] ^
        t[3][hi & 0xFF] ^ t[2][(hi >> 8) & 0xFF] ^ t[1][(hi >> 16) & 0xFF] ^ t[0][hi >> 24];
    p += 8;
    n -= 8;
  }
#endif
  for (; n > 0; --n) c = (c >> 8) ^ t[0][(c ^ *p++) & 0xFF];
  return c;
}

#if TRACECORE_CRC32C_X86

// The hardware path runs three independent instruction streams over three adjacent blocks (the
// instruction has a latency of three cycles and a throughput of one), then folds the first two
// registers forward over the bytes that follow them. Moving a register over n zero bytes is a
// linear map on 32 bits; kShift tables apply it with four byte lookups.
constexpr size_t kLongBlock = 8192;
constexpr size_t kShortBlock = 256;

struct Operator {
  uint32_t column[32];  // image of bit i
};

constexpr uint32_t Apply(const Operator& m, uint32_t v) {
  uint32_t r = 0;
  for (int i = 0; v != 0; ++i, v >>= 1) {
    if (v & 1u) r ^= m.column[i];
  }
  return r;
}

constexpr Operator Compose(const Operator& a, const Operator& b) {  // a after b
  Operator r{};
  for (int i = 0; i < 32; ++i) r.column[i] = Apply(a, b.column[i]);
  return r;
}

// The register update over `bytes` zero bytes.
constexpr Operator ZeroBytes(size_t bytes) {
  Operator one{};
  for (int i = 0; i < 32; ++i) {
    const uint32_t c = 1u << i;
    one.column[i] = (c >> 8) ^ kSlices.t[0][c & 0xFF];
  }
  Operator result{};
  for (int i = 0; i < 32; ++i) result.column[i] = 1u << i;
  for (; bytes != 0; bytes >>= 1) {
    if (bytes & 1) result = Compose(result, one);
    one = Compose(one, one);
  }
  return result;
}

struct ShiftTable {
  uint32_t t[4][256];
  uint32_t Shift(uint32_t c) const {
    return t[0][c & 0xFF] ^ t[1][(c >> 8) & 0xFF] ^ t[2][(c >> 16) & 0xFF] ^ t[3][c >> 24];
  }
};

constexpr ShiftTable MakeShiftTable(size_t bytes) {
  const Operator op = ZeroBytes(bytes);
  ShiftTable s{};
  for (int k = 0; k < 4; ++k) {
    for (uint32_t b = 0; b < 256; ++b) s.t[k][b] = Apply(op, b << (8 * k));
  }
  return s;
}

constexpr ShiftTable kShiftLong1 = MakeShiftTable(kLongBlock);
constexpr ShiftTable kShiftLong2 = MakeShiftTable(2 * kLongBlock);
constexpr ShiftTable kShiftShort1 = MakeShiftTable(kShortBlock);
constexpr ShiftTable kShiftShort2 = MakeShiftTable(2 * kShortBlock);

__attribute__((target("sse4.2"))) inline uint64_t Step8(uint64_t c, const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return _mm_crc32_u64(c, v);
}

// Three blocks of `block` bytes from `p`; returns the register after all of them.
__attribute__((target("sse4.2"))) inline uint32_t ThreeWay(uint32_t c, const uint8_t* p,
                                                           size_t block, const ShiftTable& one,
                                                           const ShiftTable& two) {
  uint64_t c0 = c, c1 = 0, c2 = 0;
  const uint8_t* const end = p + block;
  for (; p < end; p += 8) {
    c0 = Step8(c0, p);
    c1 = Step8(c1, p + block);
    c2 = Step8(c2, p + 2 * block);
  }
  return two.Shift(static_cast<uint32_t>(c0)) ^ one.Shift(static_cast<uint32_t>(c1)) ^
         static_cast<uint32_t>(c2);
}

__attribute__((target("sse4.2"))) uint32_t HardwareRaw(uint32_t crc, const uint8_t* p, size_t n) {
  uint64_t c = crc;
  if (n >= 3 * kShortBlock) {
    // Aligned loads for the long runs (unaligned ones may straddle cache lines).
    for (; (reinterpret_cast<uintptr_t>(p) & 7) != 0; ++p, --n)
      c = _mm_crc32_u8(static_cast<uint32_t>(c), *p);
    for (; n >= 3 * kLongBlock; p += 3 * kLongBlock, n -= 3 * kLongBlock) {
      c = ThreeWay(static_cast<uint32_t>(c), p, kLongBlock, kShiftLong1, kShiftLong2);
    }
    for (; n >= 3 * kShortBlock; p += 3 * kShortBlock, n -= 3 * kShortBlock) {
      c = ThreeWay(static_cast<uint32_t>(c), p, kShortBlock, kShiftShort1, kShiftShort2);
    }
  }
  for (; n >= 8; p += 8, n -= 8) c = Step8(c, p);
  for (; n > 0; ++p, --n) c = _mm_crc32_u8(static_cast<uint32_t>(c), *p);
  return static_cast<uint32_t>(c);
}

#endif  // TRACECORE_CRC32C_X86

using RawFn = uint32_t (*)(uint32_t, const uint8_t*, size_t);

RawFn ChooseRaw() {
#if TRACECORE_CRC32C_X86
  if (crc32c_detail::HardwareAvailable()) return &HardwareRaw;
#endif
  return &PortableRaw;
}

RawFn Raw() {
  static const RawFn raw = ChooseRaw();
  return raw;
}

}  // namespace

namespace crc32c_detail {

uint32_t ExtendPortable(uint32_t crc, const uint8_t* data, size_t size) {
  return ~PortableRaw(~crc, data, size);
}

uint32_t ExtendHardware(uint32_t crc, const uint8_t* data, size_t size) {
#if TRACECORE_CRC32C_X86
  return ~HardwareRaw(~crc, data, size);
#else
  return ExtendPortable(crc, data, size);
#endif
}

bool HardwareAvailable() {
#if TRACECORE_CRC32C_X86
  __builtin_cpu_init();
  return __builtin_cpu_supports("sse4.2");
#else
  return false;
#endif
}

}  // namespace crc32c_detail

uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t size) {
  return ~Raw()(~crc, static_cast<const uint8_t*>(data), size);
}

uint32_t Crc32c(const void* data, size_t size) { return Crc32cExtend(0, data, size); }

bool Crc32cUsesHardware() { return Raw() != &PortableRaw; }

}  // namespace tracecore
