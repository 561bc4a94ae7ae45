// How this machine scales from one thread to two, on the kinds of work a parse does: the
// ceiling under tracecore's two-thread figures. Best of 4 each:
//   compute     a register-only loop (no memory), one dependent chain: bound by latency, so it
//               would scale even on two hyperthreads of one core
//   compute ILP eight independent chains of the same steps: bound by the core's execution
//               units, which two hyperthreads of one core share, so 2x here means two cores
//   warm        memset of 128 MB per thread already written (no page faults): memory bandwidth
//   fresh 4K    memset of a new 128 MB mapping on 4 KB pages: page faults + the kernel clearing
//               each page (a parse's columns are fresh memory)
//   fresh THP   the same with transparent huge pages (madvise): one fault per 2 MB
// On a VM whose free memory is handed back to the host (virtio-balloon free page reporting),
// the fresh cases also pay for the host faulting the pages back in, and vary from run to run.
// Build: cmake -S . -B build/bench -DTRACECORE_BUILD_BENCH=ON && cmake --build build/bench
//        --target machine_scaling; run: build/bench/machine_scaling
#include <sys/mman.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

constexpr size_t kBytes = size_t{128} << 20;

enum class Case { kCompute, kComputeIlp, kWarm, kFresh4K, kFreshHuge };

// xorshift steps: 0.4 G per second on one core here; the result keeps the loop alive.
uint64_t Compute(uint64_t x) {
  uint64_t acc = 0;
  for (long i = 0; i < 200'000'000; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    acc += x * 0x9E3779B97F4A7C15ull;
  }
  return acc;
}
// The same 200 M steps as eight independent chains (1.2-1.6 G steps per second on one core).
uint64_t ComputeIlp(uint64_t seed) {
  uint64_t x[8];
  for (int j = 0; j < 8; ++j) x[j] = ((seed + j) * 0x9E3779B97F4A7C15ull) | 1;
  for (long i = 0; i < 200'000'000 / 8; ++i) {
    for (int j = 0; j < 8; ++j) {
      x[j] ^= x[j] << 13;
      x[j] ^= x[j] >> 7;
      x[j] ^= x[j] << 17;
    }
  }
  uint64_t acc = 0;
  for (int j = 0; j < 8; ++j) acc += x[j];
  return acc;
}
std::atomic<uint64_t> sink{0};

char* Map(Case c) {
  void* p = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    std::perror("mmap");
    std::exit(1);
  }
  madvise(p, kBytes, c == Case::kFreshHuge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
  return static_cast<char*>(p);
}

// Work per second over all threads: GB/s (each thread writes its own kBytes), or G loop
// steps/s for kCompute.
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
        if (c == Case::kCompute || c == Case::kComputeIlp) {
          const auto seed = static_cast<uint64_t>(t + rep + 1);
          sink += c == Case::kCompute ? Compute(seed) : ComputeIlp(seed);
          return;
        }
        bufs[t] = c == Case::kWarm ? warm[t] : Map(c);
        std::memset(bufs[t], rep + 2, kBytes);
      });
    }
    for (auto& th : pool) th.join();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s < best) best = s;
    if (c == Case::kFresh4K || c == Case::kFreshHuge) {
      for (char* p : bufs) munmap(p, kBytes);
    }
  }
  for (char* p : warm) {
    if (p != nullptr) munmap(p, kBytes);
  }
  const bool compute = c == Case::kCompute || c == Case::kComputeIlp;
  const double work = compute ? 200e6 : static_cast<double>(kBytes);
  return threads * work / best / 1e9;
}

}  // namespace

int main() {
  const struct {
    Case c;
    const char* name;
  } cases[] = {{Case::kCompute, "compute"}, {Case::kComputeIlp, "compute ILP"}, {Case::kWarm, "warm"},
               {Case::kFresh4K, "fresh 4K"}, {Case::kFreshHuge, "fresh THP"}};
  for (const auto& k : cases) {
    const double one = Run(k.c, 1);
    const double two = Run(k.c, 2);
    const char* unit = k.c == Case::kCompute || k.c == Case::kComputeIlp ? "G steps/s" : "GB/s";
    std::printf("%-11s 1 thread %5.2f %-9s 2 threads %5.2f %-9s (%.2fx)\n", k.name, one, unit, two, unit,
                two / one);
  }
  return 0;
}
