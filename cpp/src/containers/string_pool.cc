#include "containers/string_pool.h"

#include <cstring>
#include <stdexcept>

namespace tracecore {
namespace {

inline uint64_t Mix(uint64_t a, uint64_t b) {
  // 64x64 -> 128 multiply, folded: a strong, fast mixing step.
  const __uint128_t product = static_cast<__uint128_t>(a) * b;
  return static_cast<uint64_t>(product) ^ static_cast<uint64_t>(product >> 64);
}

constexpr uint64_t kK0 = 0x9E3779B97F4A7C15ull;
constexpr uint64_t kK1 = 0xC2B2AE3D27D4EB4Full;
constexpr uint64_t kK2 = 0x165667B19E3779F9ull;

}  // namespace

StringPool::StringPool() {
  offsets_.reserve(1024);
  offsets_.push_back(0);
  offsets_.push_back(0);  // id 0: ""
  slots_.assign(1024, 0);
  mask_ = slots_.size() - 1;
  // "" is reachable through Intern like any other string.
  const uint64_t hash = Hash(std::string_view());
  size_t slot = static_cast<size_t>(hash) & mask_;
  slots_[slot] = (static_cast<uint64_t>(static_cast<uint32_t>(hash >> 32) | 1u) << 32) | kEmptyId;
}

uint64_t StringPool::Hash(std::string_view s) {
  const char* p = s.data();
  size_t n = s.size();
  // Two independent lanes over 32-byte blocks keep both multipliers busy.
  uint64_t h0 = kK0 ^ (n * kK1);
  uint64_t h1 = kK2 ^ n;
  while (n >= 32) {
    h0 = Mix(Load64(p) ^ kK1, Load64(p + 8) ^ h0);
    h1 = Mix(Load64(p + 16) ^ kK2, Load64(p + 24) ^ h1);
    p += 32;
    n -= 32;
  }
  if (n >= 16) {
    h0 = Mix(Load64(p) ^ kK1, Load64(p + 8) ^ h0);
    p += 16;
    n -= 16;
  }
  if (n >= 8) {
    h1 = Mix(Load64(p) ^ kK2, h1 ^ kK1);
    p += 8;
    n -= 8;
  }
  if (n > 0) {
    // The last n bytes as a little-endian number (what memcpy into a zeroed word gives),
    // without a variable-length copy.
    uint64_t tail = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (s.size() >= 8) {
      tail = Load64(p + n - 8) >> (8 * (8 - n));
    } else if (n >= 4) {
      tail = Load32(p) | (static_cast<uint64_t>(Load32(p + n - 4)) << (8 * (n - 4)));
    } else {
      tail = static_cast<uint64_t>(static_cast<uint8_t>(p[0])) |
             (static_cast<uint64_t>(static_cast<uint8_t>(p[n / 2])) << (8 * (n / 2))) |
             (static_cast<uint64_t>(static_cast<uint8_t>(p[n - 1])) << (8 * (n - 1)));
    }
#else
    std::memcpy(&tail, p, n);
#endif
    h0 = Mix(tail ^ kK0, h0 ^ kK2);
  }
  return Mix(h0 ^ kK1, h1 ^ kK0);
}

bool StringPool::IsValidUtf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const auto* end = p + s.size();
  while (p < end) {
    // ASCII fast path, sixteen then eight bytes at a time.
    if (end - p >= 16) {
      uint64_t v, w;
      std::memcpy(&v, p, 8);
      std::memcpy(&w, p + 8, 8);
      if (((v | w) & 0x8080808080808080ull) == 0) {
        p += 16;
        continue;
      }
    }
    if (end - p >= 8) {
      uint64_t v;
      std::memcpy(&v, p, 8);
      if ((v & 0x8080808080808080ull) == 0) {
        p += 8;
        continue;
      }
    }
    const unsigned char c = *p;
    if (c < 0x80) {
      ++p;
      continue;
    }
    int extra;
    uint32_t cp;
    if (c >= 0xC2 && c <= 0xDF) {
      extra = 1;
      cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
      extra = 2;
      cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      extra = 3;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (end - p <= extra) return false;
    for (int i = 1; i <= extra; ++i) {
      if ((p[i] & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (p[i] & 0x3F);
    }
    // Overlong forms, surrogates and code points past U+10FFFF are invalid.
    if ((extra == 2 && cp < 0x800) || (extra == 3 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF)) {
      return false;
    }
    p += extra + 1;
  }
  return true;
}

uint32_t StringPool::Insert(std::string_view s, size_t slot, uint32_t tag) {
  if (!IsValidUtf8(s)) return kInvalidUtf8;
  if (bytes_.size() + s.size() > kMaxBytes) {
    throw std::length_error("string pool exceeds 2 GiB of distinct names");
  }
  const uint32_t id = size();
  bytes_.insert(bytes_.end(), s.begin(), s.end());
  offsets_.push_back(static_cast<int32_t>(bytes_.size()));
  slots_[slot] = (static_cast<uint64_t>(tag) << 32) | id;
  if (static_cast<size_t>(size()) * 2 > slots_.size()) Grow();
  return id;
}

void StringPool::Grow() {
  std::vector<uint64_t> old;
  old.swap(slots_);
  slots_.assign(old.size() * 2, 0);
  mask_ = slots_.size() - 1;
  for (uint64_t entry : old) {
    if (entry == 0) continue;
    const uint32_t id = static_cast<uint32_t>(entry);
    size_t slot = static_cast<size_t>(Hash(Get(id))) & mask_;
    while (slots_[slot] != 0) slot = (slot + 1) & mask_;
    slots_[slot] = entry;
  }
}

}  // namespace tracecore
