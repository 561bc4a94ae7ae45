// LSD radix sort of records by a 64-bit key. Stable, O(n) per non-trivial byte; passes in which
// every key has the same byte are skipped, so timestamps that share their high bytes (every
// trace) cost only a few passes.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

namespace tracecore::query {

// Maps an int64 to a uint64 with the same order.
inline uint64_t OrderedKey(int64_t v) { return static_cast<uint64_t>(v) ^ (uint64_t{1} << 63); }

// Sorts `items` by key(item) (a uint64), stably. `scratch` is reused between calls.
template <class T, class Key>
void RadixSort(std::vector<T>& items, std::vector<T>& scratch, Key key) {
  const size_t n = items.size();
  if (n < 2) return;
  // Already sorted is the common case for per-device event lists: check first.
  bool sorted = true;
  for (size_t i = 1; i < n && sorted; ++i) sorted = key(items[i - 1]) <= key(items[i]);
  if (sorted) return;
  std::vector<size_t> counts(8 * 256, 0);
  for (const T& item : items) {
    uint64_t k = key(item);
    for (int b = 0; b < 8; ++b) ++counts[b * 256 + ((k >> (8 * b)) & 0xFF)];
  }
  scratch.resize(n);
  T* src = items.data();
  T* dst = scratch.data();
  for (int b = 0; b < 8; ++b) {
    size_t* c = &counts[b * 256];
    bool trivial = false;
    for (int v = 0; v < 256; ++v) {
      if (c[v] == n) trivial = true;
    }
    if (trivial) continue;
    size_t total = 0;
    for (int v = 0; v < 256; ++v) {
      const size_t count = c[v];
      c[v] = total;
      total += count;
    }
    for (size_t i = 0; i < n; ++i) {
      const uint64_t k = key(src[i]);
      dst[c[(k >> (8 * b)) & 0xFF]++] = src[i];
    }
    T* tmp = src;
    src = dst;
    dst = tmp;
  }
  if (src != items.data()) std::memcpy(items.data(), src, n * sizeof(T));
}

}  // namespace tracecore::query
