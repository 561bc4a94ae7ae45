// Mid-size column buffers: ColumnArena's slabs (see column_allocator.h).
#include <atomic>
#include <cassert>
#include <cstdint>
#include <new>

#include "containers/column_allocator.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TRACECORE_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define TRACECORE_ASAN 1
#endif
#if defined(TRACECORE_ASAN)
#include <sanitizer/asan_interface.h>
// A slab's bytes are poisoned but for its live buffers, so ASan still catches a column
// overrun (into a header or a neighbour's gap) and a use after free inside a live slab.
#define TRACECORE_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define TRACECORE_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define TRACECORE_POISON(p, n) ((void)(p), (void)(n))
#define TRACECORE_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace tracecore {
namespace column_memory {

// Address space per slab; only the huge pages written become memory.
constexpr size_t kSlabBytes = size_t{32} << 20;
constexpr size_t kAlign = 64;
constexpr size_t kSlabPages = kSlabBytes / kHuge;

// Lives in the first bytes of its own mapping (nothing on the heap to leak, or for LeakSanitizer
// to miss: a slab outliving its arena is reachable only from its buffers' headers).
struct Slab {
  char* base = nullptr;
  size_t used = 0;  // bump offset; only the arena that owns the slab moves it
  // Live buffers, plus one while an arena still allocates from the slab. The slab is unmapped
  // by whoever drops the last.
  std::atomic<size_t> refs{1};
  // The same per 2 MB page: live buffers on it, plus one while the arena may still carve from
  // it. A page whose count drops to 0 is given back at once, so columns freed one by one (a
  // column that outgrew its reserve, tables dropped at different times) return memory as they
  // go, not only with the slab's last buffer.
  std::atomic<uint32_t> page_refs[kSlabPages];
};

// Where a slab's first buffer starts: after the Slab itself.
constexpr size_t kSlabHeader = (sizeof(Slab) + kAlign - 1) & ~(kAlign - 1);

namespace {

thread_local ColumnArena* active = nullptr;

size_t RoundUp(size_t n, size_t to) { return (n + to - 1) & ~(to - 1); }

// Drops one hold on each 2 MB page of [from, to) (from < to), releasing the pages left with none.
void UnrefPages(Slab* slab, size_t from, size_t to) noexcept {
  for (size_t page = from / kHuge; page <= (to - 1) / kHuge; ++page) {
    if (slab->page_refs[page].fetch_sub(1, std::memory_order_acq_rel) == 1) {
#if defined(__linux__)
      madvise(slab->base + page * kHuge, kHuge, MADV_DONTNEED);
#endif
    }
  }
}

void RefPages(Slab* slab, size_t from, size_t to) noexcept {
  for (size_t page = from / kHuge; page <= (to - 1) / kHuge; ++page) {
    slab->page_refs[page].fetch_add(1, std::memory_order_relaxed);
  }
}

// The arena's hold on the page the next buffer would start on (none past the slab's end).
void HoldOpenPage(Slab* slab) noexcept {
  if (slab->used < kSlabBytes) RefPages(slab, slab->used, slab->used + 1);
}
void DropOpenPage(Slab* slab) noexcept {
  if (slab->used < kSlabBytes) UnrefPages(slab, slab->used, slab->used + 1);
}

Slab* NewSlab() {
#if defined(__linux__)
  char* base = static_cast<char*>(MapHugeAligned(kSlabBytes));
  if (base == nullptr) return nullptr;
  AdviseHugePages(base, kSlabBytes, kHuge);
  Slab* slab = new (base) Slab;
  slab->base = base;
  slab->used = kSlabHeader;
  for (auto& page : slab->page_refs) page.store(0, std::memory_order_relaxed);
  RefPages(slab, 0, kSlabHeader);  // never dropped: the slab's first page holds the Slab
  HoldOpenPage(slab);
  TRACECORE_POISON(base + kSlabHeader, kSlabBytes - kSlabHeader);
  return slab;
#else
  return nullptr;
#endif
}

void Unref(Slab* slab) noexcept {
  if (slab->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
#if defined(__linux__)
  char* base = slab->base;
  slab->~Slab();
  TRACECORE_UNPOISON(base, kSlabBytes);
  munmap(base, kSlabBytes);
#endif
}

}  // namespace

void* AllocateMid(size_t bytes) {
  if (active != nullptr) {
    if (void* p = active->Allocate(bytes)) return p;
  }
  // No arena (or no slab to be had): the heap, behind a header that says so.
  char* block = static_cast<char*>(::operator new(kMidHeader + bytes, std::align_val_t{kAlign}));
  *reinterpret_cast<Slab**>(block) = nullptr;
  return block + kMidHeader;
}

void FreeMid(void* p, size_t bytes) noexcept {
  char* block = static_cast<char*>(p) - kMidHeader;
  TRACECORE_UNPOISON(block, kMidHeader);
  Slab* slab = *reinterpret_cast<Slab**>(block);
  if (slab == nullptr) {
    ::operator delete(block, std::align_val_t{kAlign});
    return;
  }
  TRACECORE_POISON(block, kMidHeader + bytes);
  const size_t from = static_cast<size_t>(block - slab->base);
  UnrefPages(slab, from, from + kMidHeader + bytes);
  Unref(slab);
}

}  // namespace column_memory

ColumnArena::ColumnArena(bool enabled) : previous_(column_memory::active), enabled_(enabled) {
  if (enabled_) column_memory::active = this;
}

ColumnArena::~ColumnArena() {
  if (!enabled_) return;
  // Arenas nest, each created and destroyed on one thread (TraceSinks on the stack).
  assert(column_memory::active == this);
  column_memory::active = previous_;
  if (slab_ != nullptr) {
    column_memory::DropOpenPage(slab_);
    column_memory::Unref(slab_);
  }
}

void* ColumnArena::Allocate(size_t bytes) {
  using namespace column_memory;
  const size_t need = RoundUp(kMidHeader + bytes, kAlign);
  if (need > kSlabBytes) return nullptr;
  if (slab_ == nullptr || slab_->used + need > kSlabBytes) {
    Slab* next = NewSlab();
    if (next == nullptr) return nullptr;
    if (slab_ != nullptr) {
      DropOpenPage(slab_);
      Unref(slab_);
    }
    slab_ = next;
  }
  const size_t from = slab_->used;
  char* block = slab_->base + from;
  slab_->refs.fetch_add(1, std::memory_order_relaxed);
  // The block's pages are held by it; then the open-page hold moves to where the next starts.
  RefPages(slab_, from, from + kMidHeader + bytes);
  slab_->used += need;
  HoldOpenPage(slab_);
  UnrefPages(slab_, from, from + 1);
  TRACECORE_UNPOISON(block, kMidHeader + bytes);
  *reinterpret_cast<Slab**>(block) = slab_;
  TRACECORE_POISON(block, kMidHeader);
  return block + kMidHeader;
}

}  // namespace tracecore
