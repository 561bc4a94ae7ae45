// Property check of query::RadixSort (the sort under every query: intervals, occupancy,
// overlaps, memory replays) against std::stable_sort: sizes around every path boundary
// (insertion sort, in-cache digit passes, top-bits split, recursion into large buckets), key
// distributions a trace produces and some it should not, every first_byte. Built with the
// sanitizers by .ci/asan.sh; exits non-zero on the first mismatch.
//
//   radix_sort_check [seed]
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "core/uninit_vector.h"
#include "query/radix_sort.h"

namespace {

struct Item {
  uint64_t key;
  uint32_t index;  // input position: checks stability
};

uint64_t MakeKey(int dist, size_t i, size_t n, std::mt19937_64& rng) {
  switch (dist) {
    case 0: return rng();                                                   // uniform
    case 1: return rng() % 16;                                              // many ties
    case 2: return 1'600'000'000'000'000'000ull + i * 1000 + rng() % 50'000;  // nearly sorted
    case 3: return (n - i) * 7;                                             // reversed
    case 4: return (rng() % 3) << 60 | (rng() % 1000);                      // far clusters
    case 5: return (rng() & 1) ? 0 : ~uint64_t{0};                          // extremes
    case 6: return i % 100 == 0 ? rng() : 42;                               // one huge bucket
    case 7: return (uint64_t{1} << 40) + rng() % (uint64_t{1} << 37);       // 37 varying bits
    default: return i;                                                      // sorted already
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::mt19937_64 rng(argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 7);
  const size_t sizes[] = {0, 1, 2, 3, 31, 32, 33, 100, 1000, 16383, 16384, 16385, 50'000, 300'000,
                          1'100'000};
  int runs = 0;
  tracecore::UninitVector<Item> scratch;  // reused across calls, as the queries do
  for (size_t n : sizes) {
    for (int dist = 0; dist <= 8; ++dist) {
      for (int first_byte = 0; first_byte <= 8; first_byte += (n > 50'000 ? 4 : 1)) {
        std::vector<Item> items(n);
        for (size_t i = 0; i < n; ++i) items[i] = Item{MakeKey(dist, i, n, rng), static_cast<uint32_t>(i)};
        std::vector<Item> expected = items;
        const int drop = 8 * first_byte;
        const auto top = [drop](const Item& a) { return drop >= 64 ? 0 : a.key >> drop; };
        std::stable_sort(expected.begin(), expected.end(),
                         [&](const Item& a, const Item& b) { return top(a) < top(b); });
        tracecore::query::RadixSort(items.data(), n, scratch, [](const Item& a) { return a.key; },
                                    first_byte);
        ++runs;
        for (size_t i = 0; i < n; ++i) {
          if (items[i].index != expected[i].index) {
            std::fprintf(stderr, "radix_sort_check: n=%zu dist=%d first_byte=%d: row %zu is input %u, "
                         "expected %u\n", n, dist, first_byte, i, items[i].index, expected[i].index);
            return 1;
          }
        }
      }
    }
  }
  std::printf("radix_sort_check: %d sorts match std::stable_sort\n", runs);
  return 0;
}
