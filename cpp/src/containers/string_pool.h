// Interns strings to dense 32-bit ids. Id 0 is "".
//
// All bytes live in one contiguous buffer with an int32 offset per id, which is exactly the
// layout of an Arrow string array: the pool is exported as the dictionary of every
// dictionary-encoded column without copying. Every entry is distinct (pandas needs unique
// categories), so a null is never a pool entry: nullable columns carry their own validity.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace tracecore {

class StringPool {
 public:
  static constexpr uint32_t kEmptyId = 0;
  // Returned by Intern for bytes that are not valid UTF-8; nothing is stored.
  static constexpr uint32_t kInvalidUtf8 = 0xFFFFFFFFu;
  // Largest total byte size (Arrow string arrays use int32 offsets).
  static constexpr size_t kMaxBytes = 0x7FFFFFFFu;

  StringPool();

  // Returns the id of `s`, adding it if new. New strings are checked for UTF-8 validity.
  uint32_t Intern(std::string_view s) {
    const uint64_t hash = Hash(s);
    size_t slot = static_cast<size_t>(hash) & mask_;
    const uint32_t tag = static_cast<uint32_t>(hash >> 32) | 1u;  // never 0: 0 marks empty
    for (;;) {
      const uint64_t entry = slots_[slot];
      if (entry == 0) break;
      if (static_cast<uint32_t>(entry >> 32) == tag) {
        const uint32_t id = static_cast<uint32_t>(entry);
        if (Get(id) == s) return id;
      }
      slot = (slot + 1) & mask_;
    }
    return Insert(s, slot, tag);
  }

  // The id of `s`, or kNotFound; never adds.
  static constexpr uint32_t kNotFound = 0xFFFFFFFEu;
  uint32_t Find(std::string_view s) const {
    const uint64_t hash = Hash(s);
    size_t slot = static_cast<size_t>(hash) & mask_;
    const uint32_t tag = static_cast<uint32_t>(hash >> 32) | 1u;
    for (;;) {
      const uint64_t entry = slots_[slot];
      if (entry == 0) return kNotFound;
      if (static_cast<uint32_t>(entry >> 32) == tag) {
        const uint32_t id = static_cast<uint32_t>(entry);
        if (Get(id) == s) return id;
      }
      slot = (slot + 1) & mask_;
    }
  }

  std::string_view Get(uint32_t id) const {
    const int32_t begin = offsets_[id];
    return std::string_view(bytes_.data() + begin, static_cast<size_t>(offsets_[id + 1] - begin));
  }

  // Number of ids, including the empty string.
  uint32_t size() const { return static_cast<uint32_t>(offsets_.size() - 1); }
  const std::vector<int32_t>& offsets() const { return offsets_; }
  const std::vector<char>& bytes() const { return bytes_; }

  static uint64_t Hash(std::string_view s);
  // a == b, inline: eight bytes at a time, the tail by one overlapping load.
  static bool Equal(std::string_view a, std::string_view b) {
    const size_t n = a.size();
    if (n != b.size()) return false;
    const char* x = a.data();
    const char* y = b.data();
#if defined(__SSE2__)
    if (n >= 16) {
      // 16 bytes per compare (node names and timeline labels average about 90 bytes).
      for (size_t i = 0; i + 16 < n; i += 16) {
        if (!Equal16(x + i, y + i)) return false;
      }
      return Equal16(x + n - 16, y + n - 16);
    }
#endif
    if (n >= 8) {
      for (size_t i = 0; i + 8 < n; i += 8) {
        if (Load64(x + i) != Load64(y + i)) return false;
      }
      return Load64(x + n - 8) == Load64(y + n - 8);
    }
    if (n >= 4) {
      return Load32(x) == Load32(y) && Load32(x + n - 4) == Load32(y + n - 4);
    }
    for (size_t i = 0; i < n; ++i) {
      if (x[i] != y[i]) return false;
    }
    return true;
  }
  static bool IsValidUtf8(std::string_view s);

 private:
#if defined(__SSE2__)
  static bool Equal16(const char* x, const char* y) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(y));
    return _mm_movemask_epi8(_mm_cmpeq_epi8(a, b)) == 0xFFFF;
  }
#endif
  static uint64_t Load64(const char* p) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
  }
  static uint32_t Load32(const char* p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  uint32_t Insert(std::string_view s, size_t slot, uint32_t tag);
  void Grow();

  std::vector<char> bytes_;
  std::vector<int32_t> offsets_;
  // Open addressing, linear probing: (hash tag << 32) | id, 0 = empty slot.
  std::vector<uint64_t> slots_;
  size_t mask_ = 0;
};

}  // namespace tracecore
