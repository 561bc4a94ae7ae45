// How fast this machine writes memory, with one thread and with two: the ceiling under a parse,
// whose columns are fresh memory. Three cases, each 128 MB per thread, best of 4:
//   warm        memset of a buffer already written (no page faults): memory bandwidth
//   fresh 4K    memset of a new mapping on 4 KB pages: page faults + the kernel clearing each page
//   fresh THP   the same with transparent huge pages (madvise): one fault per 2 MB
// On a VM whose free memory is handed back to the host (virtio-balloon free page reporting),
// the fresh cases also pay for the host faulting the pages back in, and vary from run to run.
// Build: cmake -S . -B build/bench -DTRACECORE_BUILD_BENCH=ON && cmake --build build/bench
//        --target fresh_memory; run: build/bench/fresh_memory
#include <sys/mman.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

constexpr size_t kBytes = size_t{128} << 20;

enum class Case { kWarm, kFresh4K, kFreshHuge };

char* Map(Case c) {
  void* p = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    std::perror("mmap");
    std::exit(1);
  }
  madvise(p, kBytes, c == Case::kFreshHuge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
  return static_cast<char*>(p);
}

// GB/s over all threads: each writes its own kBytes.
double Run(Case c, int threads) {
  double best = 1e30;
  std::vector<char*> warm(threads, nullptr);
  if (c == Case::kWarm) {
    for (auto& p : warm) {
      p = Map(c);
      std::memset(p, 1, kBytes);
    }
  }
  for (int rep = 0; rep < 4; ++rep) {
    std::vector<char*> bufs(threads);
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        bufs[t] = c == Case::kWarm ? warm[t] : Map(c);
        std::memset(bufs[t], rep + 2, kBytes);
      });
    }
    for (auto& th : pool) th.join();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s < best) best = s;
    if (c != Case::kWarm) {
      for (char* p : bufs) munmap(p, kBytes);
    }
  }
  for (char* p : warm) {
    if (p != nullptr) munmap(p, kBytes);
  }
  return static_cast<double>(threads) * kBytes / best / 1e9;
}

}  // namespace

int main() {
  const struct {
    Case c;
    const char* name;
  } cases[] = {{Case::kWarm, "warm"}, {Case::kFresh4K, "fresh 4K"}, {Case::kFreshHuge, "fresh THP"}};
  for (const auto& k : cases) {
    const double one = Run(k.c, 1);
    const double two = Run(k.c, 2);
    std::printf("%-10s 1 thread %5.2f GB/s   2 threads %5.2f GB/s   (%.2fx)\n", k.name, one, two, two / one);
  }
  return 0;
}
