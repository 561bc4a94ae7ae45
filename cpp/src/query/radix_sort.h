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

// Sorts items[0, n) by key(item) (a uint64), stably. `scratch` is reused between calls. The
// bytes of the key below `first_byte` are ignored (the stable order keeps them as they come).
template <class T, class Key>
void RadixSort(T* items, size_t n, std::vector<T>& scratch, Key key, int first_byte = 0) {
  if (n < 2) return;
  // Already sorted is the common case for per-device event lists: check first.
  bool sorted = true;
  const int drop = 8 * first_byte;
  const auto top = [&](const T& item) { return drop == 64 ? uint64_t{0} : key(item) >> drop; };
  for (size_t i = 1; i < n && sorted; ++i) sorted = top(items[i - 1]) <= top(items[i]);
  if (sorted) return;
  std::vector<size_t> counts(8 * 256, 0);
  for (size_t i = 0; i < n; ++i) {
    const uint64_t k = key(items[i]);
    for (int b = 0; b < 8; ++b) ++counts[b * 256 + ((k >> (8 * b)) & 0xFF)];
  }
  if (scratch.size() < n) scratch.resize(n);
  T* src = items;
  T* dst = scratch.data();
  for (int b = first_byte; b < 8; ++b) {
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
  if (src != items) std::memcpy(items, src, n * sizeof(T));
}

template <class T, class Key>
void RadixSort(std::vector<T>& items, std::vector<T>& scratch, Key key) {
  RadixSort(items.data(), items.size(), scratch, key);
}

}  // namespace tracecore::query
