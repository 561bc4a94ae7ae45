// Work split over the cores: independent items (device blocks, allocators, table columns,
// parts of a column) taken one at a time by up to hardware_concurrency() threads.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <thread>
#include <vector>

namespace tracecore {

// Threads ForEachMaybeParallel(n, parallel, ...) runs on: 1 when `parallel` is false.
inline size_t WorkerCount(size_t n, bool parallel) {
  const size_t hw = std::max(1u, std::thread::hardware_concurrency());
  return parallel ? std::max<size_t>(1, std::min(hw, n)) : 1;
}

// Runs fn(q, worker) for q in [0, n) on n_threads threads (at least one; the calling thread is
// one of them), each taking the next q; `worker` in [0, n_threads) names the thread, for
// per-thread buffers. Every call runs; then the exception of the lowest q that threw, if any,
// is rethrown, so errors do not depend on the thread count.
template <class Fn>
void ForEachOnThreads(size_t n, size_t n_threads, const Fn& fn) {
  std::vector<std::exception_ptr> errors(n);
  std::atomic<size_t> next{0};
  const auto worker = [&](size_t w) {
    for (size_t q = next++; q < n; q = next++) {
      try {
        fn(q, w);
      } catch (...) {
        errors[q] = std::current_exception();
      }
    }
  };
  std::vector<std::thread> helpers;
  for (size_t w = 1; w < n_threads; ++w) helpers.emplace_back(worker, w);
  worker(0);
  for (std::thread& h : helpers) h.join();
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

// ForEachOnThreads on WorkerCount(n, parallel) threads: up to all cores, or just the caller.
template <class Fn>
void ForEachMaybeParallel(size_t n, bool parallel, const Fn& fn) {
  ForEachOnThreads(n, WorkerCount(n, parallel), fn);
}

// The order in which to schedule n items of sizes size(0..n-1): largest first (ties in index
// order), so the last items taken are small and the threads finish together.
template <class Size>
std::vector<size_t> LargestFirst(size_t n, const Size& size) {
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return size(a) > size(b); });
  return order;
}

}  // namespace tracecore
