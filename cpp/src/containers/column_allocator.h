// The allocator of table columns. Page faults, not parsing, were a third of the time of a
// binary parse on our 2-core VM: a fresh 4 KB page costs about as much as writing 8 KB there
// (1.6 us per page written through, against 0.6 us per 4 KB of a transparent huge page). So:
//
//  - Buffers of 2 MB and more are mapped on their own, 2 MB-aligned, and their whole 2 MB
//    pages are offered to the kernel as transparent huge pages (one fault per 2 MB). The part
//    of a buffer past its last whole 2 MB page keeps 4 KB pages, so a huge page is never
//    touched beyond the buffer's capacity: what a column can waste is bounded by its unused
//    reserve.
//  - Buffers from 128 KB to 2 MB (glibc would map each of them on its own, 4 KB pages) are
//    carved, while a ColumnArena is active on the allocating thread (a sequential parse), out
//    of shared slabs of huge pages: back to back, so the huge pages hold no gaps but the
//    columns' own unused reserve, which becomes resident. On the 200 MB text dump and its
//    75 MB binary form: 1,300-1,400 page faults per parse instead of 6,600-6,700, 4-5 ms less
//    per parse, tables 6 MB (a tenth) larger in memory.
//    A slab is unmapped when its last buffer is freed. Outside an arena they come from
//    operator new.
//  - Smaller buffers, and every buffer off Linux, come from operator new.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "containers/column_budget.h"
#include "core/huge_pages.h"

namespace tracecore {

namespace column_memory {

constexpr size_t kHuge = kHugePageBytes;
constexpr size_t kPage = 4096;  // mappings are rounded to it (the kernel rounds to its own)
// Buffers from here up to kHuge are "mid-size": carved from an arena's slabs when one is active.
constexpr size_t kMidMin = size_t{128} << 10;
// Before every mid-size buffer: which slab it lives in (none for operator new). Keeps the
// buffer 64-byte aligned, as Arrow recommends.
constexpr size_t kMidHeader = 64;

inline size_t MappedBytes(size_t bytes) { return (bytes + kPage - 1) & ~(kPage - 1); }

void* AllocateMid(size_t bytes);
void FreeMid(void* p, size_t bytes) noexcept;

#if defined(__linux__)
// A private anonymous mapping of `length` bytes (a multiple of kPage) starting on a 2 MB
// boundary, or null: 2 MB more is mapped, then what lies before the first boundary and past
// the end is unmapped, so munmap(p, length) frees exactly it.
inline void* MapHugeAligned(size_t length) {
  void* raw = mmap(nullptr, length + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const uintptr_t base = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (base + kHuge - 1) & ~uintptr_t{kHuge - 1};
  if (aligned > base) munmap(raw, aligned - base);
  const uintptr_t tail = aligned + length;
  const uintptr_t raw_end = base + length + kHuge;
  if (raw_end > tail) munmap(reinterpret_cast<void*>(tail), raw_end - tail);
  return reinterpret_cast<void*>(aligned);
}
#endif

inline void* Allocate(size_t bytes) {
#if defined(__linux__)
  if (bytes >= kHuge) {
    void* p = MapHugeAligned(MappedBytes(bytes));  // Free unmaps it
    if (p == nullptr) throw std::bad_alloc();
    AdviseHugePages(p, bytes, kHuge);  // whole 2 MB pages only
    return p;
  }
  if (bytes >= kMidMin) return AllocateMid(bytes);
#endif
  return ::operator new(bytes);
}

inline void Free(void* p, size_t bytes) noexcept {
#if defined(__linux__)
  if (bytes >= kHuge) {
    munmap(p, MappedBytes(bytes));
    return;
  }
  if (bytes >= kMidMin) return FreeMid(p, bytes);
#endif
  ::operator delete(p);
}

struct Slab;

}  // namespace column_memory

// While alive, mid-size column buffers allocated on this thread come from this arena's slabs
// (see above); the TraceSink of a sequential parse holds one. Arenas nest: each is created
// and destroyed on one thread, inner ones first. Buffers outlive the arena: each slab is
// unmapped when its last buffer is freed, on any thread.
class ColumnArena {
 public:
  // `enabled` false: an arena that changes nothing (the thread keeps its current one, if any).
  explicit ColumnArena(bool enabled = true);
  ~ColumnArena();
  ColumnArena(const ColumnArena&) = delete;
  ColumnArena& operator=(const ColumnArena&) = delete;

  // `bytes` from the current slab (a new one when it is full), after a kMidHeader naming the
  // slab; null when no slab can be mapped. Called by AllocateMid for the thread's active arena.
  void* Allocate(size_t bytes);
  bool enabled() const { return enabled_; }

 private:
  column_memory::Slab* slab_ = nullptr;
  ColumnArena* previous_;
  bool enabled_;
};

template <class T>
struct ColumnAllocator {
  using value_type = T;
  ColumnAllocator() noexcept = default;
  template <class U>
  ColumnAllocator(const ColumnAllocator<U>&) noexcept {}  // NOLINT: as std::allocator

  // Charged to the thread's ColumnBudget, if any, before the memory is taken.
  T* allocate(size_t n) {
    if (n > SIZE_MAX / sizeof(T)) throw std::bad_array_new_length();
    ColumnBudget::Charge(n * sizeof(T));
    try {
      return static_cast<T*>(column_memory::Allocate(n * sizeof(T)));
    } catch (...) {
      ColumnBudget::Refund(n * sizeof(T));
      throw;
    }
  }
  void deallocate(T* p, size_t n) noexcept {
    column_memory::Free(p, n * sizeof(T));
    ColumnBudget::Refund(n * sizeof(T));
  }

  template <class U>
  bool operator==(const ColumnAllocator<U>&) const noexcept { return true; }
  template <class U>
  bool operator!=(const ColumnAllocator<U>&) const noexcept { return false; }
};

// A table column's values.
template <class T>
using Column = std::vector<T, ColumnAllocator<T>>;

}  // namespace tracecore
