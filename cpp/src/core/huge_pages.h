// Transparent huge pages for large buffers about to be written: one page fault (and one cleared
// 2 MB page) instead of 512 of them. Only a hint, applied to the whole 2 MB pages inside the
// buffer; a no-op for buffers under `min_bytes` (16 MB unless told) and where unsupported.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace tracecore {

constexpr size_t kHugePageBytes = size_t{2} << 20;

inline void AdviseHugePages(const void* data, size_t bytes, size_t min_bytes = 8 * kHugePageBytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr uintptr_t kHuge = kHugePageBytes;
  if (bytes < min_bytes) return;
  const auto begin = (reinterpret_cast<uintptr_t>(data) + kHuge - 1) & ~(kHuge - 1);
  const auto end = (reinterpret_cast<uintptr_t>(data) + bytes) & ~(kHuge - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#else
  (void)data;
  (void)bytes;
  (void)min_bytes;
#endif
}

// v.resize(n) of a vector not written yet, with the hint given before the first write.
template <class T, class A>
void ResizeHuge(std::vector<T, A>& v, size_t n) {
  v.reserve(n);
  AdviseHugePages(v.data(), v.capacity() * sizeof(T));
  v.resize(n);
}

}  // namespace tracecore
