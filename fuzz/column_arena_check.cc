// Checks of ColumnArena (containers/column_memory.cc): mid-size column buffers carved from
// shared slabs of huge pages, freed on any thread.
//
//  1. Buffers carved under an arena are 64-byte aligned, do not overlap (every buffer keeps its
//     own pattern while all the others are written), and survive growth past their capacity.
//  2. Freeing a run of neighbours gives their 2 MB pages back while the slab still holds live
//     buffers (the slab mapping's own Rss, read from /proc/self/smaps, drops).
//  3. The slab is unmapped once the arena is gone and its last buffer freed, whichever thread
//     frees it.
//  4. Without an arena, mid-size buffers come from the heap and free cleanly.
//  5. Two threads, each with its own arena, allocate, grow and free buffers of random sizes,
//     half of them freed by the other thread; every buffer's pattern is intact when freed.
// Built with the sanitizers by .ci/asan.sh (the slabs are poisoned but for live buffers, so a
// write past a buffer's capacity is reported); exits non-zero on the first failed check.
//
//   column_arena_check [seed]
#include <atomic>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "containers/column_allocator.h"

namespace {

using tracecore::Column;
using tracecore::ColumnArena;

std::atomic<int> failures{0};

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "column_arena_check: FAILED: %s\n", what);
    ++failures;
  }
}

// Rss in kB of the mapping that contains `p`, from /proc/self/smaps; -1 when no mapping does.
long RssOfMappingAt(const void* p) {
  std::FILE* f = std::fopen("/proc/self/smaps", "r");
  if (f == nullptr) return -2;
  const uintptr_t at = reinterpret_cast<uintptr_t>(p);
  char line[512];
  bool inside = false;
  long rss = -1;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    uintptr_t lo = 0, hi = 0;
    if (std::sscanf(line, "%" SCNxPTR "-%" SCNxPTR " ", &lo, &hi) == 2 && std::strchr(line, '-') < std::strchr(line, ' ')) {
      inside = lo <= at && at < hi;
      continue;
    }
    long kb = 0;
    if (inside && std::sscanf(line, "Rss: %ld kB", &kb) == 1) {
      rss = kb;
      break;
    }
  }
  std::fclose(f);
  return rss;
}

uint64_t Pattern(uint64_t buffer, uint64_t i) { return (buffer * 0x9E3779B97F4A7C15ull) ^ i; }

void Fill(Column<uint64_t>& v, uint64_t id) {
  for (size_t i = 0; i < v.size(); ++i) v[i] = Pattern(id, i);
}

bool Intact(const Column<uint64_t>& v, uint64_t id) {
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] != Pattern(id, i)) return false;
  }
  return true;
}

constexpr size_t kMidElements = (size_t{3} << 20) / 2 / sizeof(uint64_t);  // 1.5 MB buffers

void LayoutAndRelease() {
  std::vector<std::unique_ptr<Column<uint64_t>>> columns;
  const void* slab_probe = nullptr;
  {
    ColumnArena arena;
    for (uint64_t k = 0; k < 12; ++k) {
      auto v = std::make_unique<Column<uint64_t>>();
      v->reserve(kMidElements);
      v->resize(kMidElements);
      Check(reinterpret_cast<uintptr_t>(v->data()) % 64 == 0, "buffers are 64-byte aligned");
      Fill(*v, k);
      columns.push_back(std::move(v));
    }
    for (uint64_t k = 0; k < columns.size(); ++k) Check(Intact(*columns[k], k), "buffers do not overlap");
    slab_probe = columns.back()->data();
    // Growth past the reserve (160 KB to 320 KB): a new block of the slab, the contents copied.
    auto grown = std::make_unique<Column<uint64_t>>(20000);
    Fill(*grown, 12);
    grown->push_back(Pattern(12, 20000));
    Check(Intact(*grown, 12), "a buffer keeps its contents when it grows");
    columns.push_back(std::move(grown));
  }
  const long full = RssOfMappingAt(slab_probe);
  Check(full >= 12 * 1536, "the slab holds the buffers written (Rss of its mapping)");
  // Free the first eight (12 MB: whole 2 MB pages among them) on another thread.
  std::thread([&] {
    for (int k = 0; k < 8; ++k) columns[k].reset();
  }).join();
  const long after = RssOfMappingAt(slab_probe);
  Check(after >= 0 && after + 8 * 1024 <= full, "pages of freed neighbours are given back while the slab lives");
  for (uint64_t k = 8; k < 13; ++k) Check(Intact(*columns[k], k), "live buffers survive their neighbours' release");
  std::thread([&] { columns.clear(); }).join();
  Check(RssOfMappingAt(slab_probe) == -1, "the slab is unmapped with its last buffer");
}

void WithoutArena() {
  Column<uint64_t> v(kMidElements);
  Fill(v, 7);
  Check(reinterpret_cast<uintptr_t>(v.data()) % 64 == 0, "heap mid-size buffers are 64-byte aligned");
  Check(Intact(v, 7), "heap mid-size buffer keeps its contents");
  v.push_back(Pattern(7, kMidElements));
  Check(Intact(v, 7), "heap mid-size buffer grows");
}

void TwoThreads(uint64_t seed) {
  struct Item {
    std::unique_ptr<Column<uint64_t>> column;
    uint64_t id;
  };
  std::mutex handoff_mutex;
  std::vector<Item> handoff[2];  // buffers of thread t that the other thread frees
  const auto work = [&](int t) {
    std::mt19937_64 rng(seed * 2 + static_cast<uint64_t>(t));
    ColumnArena arena;
    std::vector<Item> mine;
    for (uint64_t k = 0; k < 200; ++k) {
      const uint64_t id = (static_cast<uint64_t>(t) << 32) | k;
      auto v = std::make_unique<Column<uint64_t>>();
      v->reserve(16384 + rng() % (250 * 1024));  // 128 KB to 2 MB
      v->resize(v->capacity() - rng() % 100);
      if (rng() % 4 == 0) v->resize(v->capacity() + 1);  // grows
      Fill(*v, id);
      Item item{std::move(v), id};
      if (rng() % 2) {
        std::lock_guard<std::mutex> lock(handoff_mutex);
        handoff[t].push_back(std::move(item));
      } else {
        mine.push_back(std::move(item));
      }
      if (mine.size() > 20) {
        const size_t victim = rng() % mine.size();
        Check(Intact(*mine[victim].column, mine[victim].id), "buffer intact when its own thread frees it");
        mine.erase(mine.begin() + static_cast<std::ptrdiff_t>(victim));
      }
      std::vector<Item> theirs;
      {
        std::lock_guard<std::mutex> lock(handoff_mutex);
        theirs.swap(handoff[1 - t]);
      }
      for (Item& other : theirs) Check(Intact(*other.column, other.id), "buffer intact when the other thread frees it");
    }
    for (Item& item : mine) Check(Intact(*item.column, item.id), "buffer intact at the end");
  };
  std::thread a(work, 0), b(work, 1);
  a.join();
  b.join();
  for (auto& left : handoff) {
    for (Item& item : left) Check(Intact(*item.column, item.id), "buffer intact after both threads ended");
  }
}

}  // namespace

int main(int argc, char** argv) {
  const uint64_t seed = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1;
  LayoutAndRelease();
  WithoutArena();
  TwoThreads(seed);
  if (failures != 0) return 1;
  std::printf("column_arena_check: ok\n");
  return 0;
}
