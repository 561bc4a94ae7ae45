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

// Runs fn(q, worker) for q in [0, n) on WorkerCount(n, parallel) threads; `worker` in
// [0, WorkerCount) names the thread, for per-thread buffers. Every call runs; then the
// exception of the lowest q that threw, if any, is rethrown, so errors do not depend on the
// thread count.
template <class Fn>
void ForEachMaybeParallel(size_t n, bool parallel, const Fn& fn) {
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
  const size_t n_threads = WorkerCount(n, parallel);
  std::vector<std::thread> helpers;
  for (size_t w = 1; w < n_threads; ++w) helpers.emplace_back(worker, w);
  worker(0);
  for (std::thread& h : helpers) h.join();
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

}  // namespace tracecore
