// Radix sort of records by a 64-bit key: stable, linear, cache-aware (one split on the top
// bits, then in-cache digit passes per bucket); only the bits in which the keys differ count.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/huge_pages.h"

namespace tracecore::query {

// Maps an int64 to a uint64 with the same order.
inline uint64_t OrderedKey(int64_t v) { return static_cast<uint64_t>(v) ^ (uint64_t{1} << 63); }

namespace radix_detail {

inline int CeilLog2(size_t n) { return n <= 1 ? 0 : 64 - __builtin_clzll(n - 1); }

// Items that fit in the fast caches are sorted there, digit by digit.
constexpr size_t kInCache = size_t{1} << 14;

// Stable insertion sort of a[0, n) on bits [low, low + bits) of the key (tiny buckets).
template <class T, class Key>
void InsertionSort(T* a, size_t n, const Key& key, int low, int bits) {
  const uint64_t mask = bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
  const auto digit = [&](const T& item) { return (key(item) >> low) & mask; };
  for (size_t i = 1; i < n; ++i) {
    if (digit(a[i - 1]) <= digit(a[i])) continue;
    T item = a[i];
    const uint64_t d = digit(item);
    size_t j = i;
    for (; j > 0 && digit(a[j - 1]) > d; --j) a[j] = a[j - 1];
    a[j] = item;
  }
}

// LSD passes over bits [low, low + bits) of a[0, n), digits of at most `max_digit` bits, with
// tmp[0, n) as the other buffer. Returns the buffer that holds the result. `counts` is reused.
template <class T, class Key>
T* Lsd(T* a, T* tmp, size_t n, const Key& key, int low, int bits, int max_digit,
       std::vector<size_t>& counts) {
  const int passes = (bits + max_digit - 1) / max_digit;
  const int width = (bits + passes - 1) / passes;
  const size_t radix = size_t{1} << width;
  const uint64_t mask = radix - 1;
  counts.assign(static_cast<size_t>(passes) * radix, 0);
  for (size_t i = 0; i < n; ++i) {
    const uint64_t k = key(a[i]) >> low;
    for (int p = 0; p < passes; ++p) ++counts[p * radix + ((k >> (width * p)) & mask)];
  }
  T* src = a;
  T* dst = tmp;
  for (int p = 0; p < passes; ++p) {
    size_t* c = &counts[p * radix];
    const int shift = low + width * p;
    size_t total = 0;
    for (size_t v = 0; v < radix; ++v) {
      const size_t count = c[v];
      c[v] = total;
      total += count;
    }
    for (size_t i = 0; i < n; ++i) {
      const uint64_t k = key(src[i]);
      dst[c[(k >> shift) & mask]++] = src[i];
    }
    T* t = src;
    src = dst;
    dst = t;
  }
  return src;
}

// Sorts a[0, n) on bits [low, low + bits) of the key, stably, with tmp[0, n) as the other
// buffer; returns the buffer that holds the result. Large inputs are first split on their top
// bits into buckets of about a thousand items (one pass that, for the nearly sorted timestamps
// of a trace, writes almost sequentially), then each bucket is sorted while it is in cache.
// Every level consumes at least 8 bits: the recursion is at most 8 deep.
template <class T, class Key>
T* SortBits(T* a, T* tmp, size_t n, const Key& key, int low, int bits, std::vector<size_t>& counts) {
  if (n < 2 || bits <= 0) return a;
  if (n <= 32) {
    InsertionSort(a, n, key, low, bits);
    return a;
  }
  if (n <= kInCache) return Lsd(a, tmp, n, key, low, bits, 8, counts);
  const int top = std::min(bits, std::clamp(CeilLog2(n >> 10), 8, 16));
  const int rest = bits - top;
  const int shift = low + rest;
  const size_t radix = size_t{1} << top;
  const uint64_t mask = radix - 1;
  std::vector<size_t> begin(radix + 1, 0);
  for (size_t i = 0; i < n; ++i) ++begin[((key(a[i]) >> shift) & mask) + 1];
  for (size_t v = 0; v < radix; ++v) begin[v + 1] += begin[v];
  std::vector<size_t> fill(begin.begin(), begin.end() - 1);
  for (size_t i = 0; i < n; ++i) tmp[fill[(key(a[i]) >> shift) & mask]++] = a[i];
  if (rest == 0) return tmp;
  for (size_t v = 0; v < radix; ++v) {
    const size_t m = begin[v + 1] - begin[v];
    if (m == 0) continue;
    T* const bucket = tmp + begin[v];
    T* const out = a + begin[v];
    const T* result = SortBits(bucket, out, m, key, low, rest, counts);
    if (result != out) std::memcpy(out, result, m * sizeof(T));
  }
  return a;
}

// Whether a[0, n) needs sorting on the key bits from byte `first_byte` up; if so, the bits
// [*low, *low + *bits) in which the keys differ. Already sorted is the common case for
// per-device event lists: checked first, in the same pass.
template <class T, class Key>
bool NeedsSort(const T* items, size_t n, const Key& key, int first_byte, int* low, int* bits) {
  if (n < 2) return false;
  const int drop = 8 * first_byte;
  if (drop >= 64) return false;
  const uint64_t keep = ~uint64_t{0} << drop;
  const uint64_t first = key(items[0]) & keep;
  uint64_t differ = 0;
  bool sorted = true;
  uint64_t prev = first;
  for (size_t i = 1; i < n; ++i) {
    const uint64_t k = key(items[i]) & keep;
    sorted &= prev <= k;
    differ |= k ^ first;
    prev = k;
  }
  if (sorted || differ == 0) return false;
  *low = __builtin_ctzll(differ);
  *bits = 64 - __builtin_clzll(differ) - *low;
  return true;
}

}  // namespace radix_detail

// Sorts items[0, n) by key(item) (a uint64), stably. `scratch` is reused between calls. The
// bytes of the key below `first_byte` are ignored (the stable order keeps them as they come).
// Only the bits in which the keys differ are sorted on: timestamps that share their high bits
// (every trace) cost only their varying ones.
template <class T, class Key, class A>
void RadixSort(T* items, size_t n, std::vector<T, A>& scratch, Key key, int first_byte = 0) {
  int low = 0, bits = 0;
  if (!radix_detail::NeedsSort(items, n, key, first_byte, &low, &bits)) return;
  if (scratch.size() < n) ResizeHuge(scratch, n);
  std::vector<size_t> counts;
  const T* result = radix_detail::SortBits(items, scratch.data(), n, key, low, bits, counts);
  if (result != items) std::memcpy(items, result, n * sizeof(T));
}

// The same with the caller's scratch buffer: room for n items at `scratch` (not overlapping
// items), which the sort overwrites.
template <class T, class Key>
void RadixSortWith(T* items, size_t n, T* scratch, Key key, int first_byte = 0) {
  int low = 0, bits = 0;
  if (!radix_detail::NeedsSort(items, n, key, first_byte, &low, &bits)) return;
  std::vector<size_t> counts;
  const T* result = radix_detail::SortBits(items, scratch, n, key, low, bits, counts);
  if (result != items) std::memcpy(items, result, n * sizeof(T));
}

template <class T, class Key, class A>
void RadixSort(std::vector<T>& items, std::vector<T, A>& scratch, Key key) {
  RadixSort(items.data(), items.size(), scratch, key);
}

}  // namespace tracecore::query
