// Parses a dump N times with the C++ core alone (no Python) and prints the best MB/s: a quiet
// way to measure the parsers. Build: cmake -S . -B build/bench -DTRACECORE_BUILD_BENCH=ON
//   && cmake --build build/bench --target parse_bench; run: build/bench/parse_bench FILE [N] [THREADS]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "open/format_registry.h"
#include "io/mapped_file.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE [REPEAT] [THREADS]\n", argv[0]);
    return 2;
  }
  const int repeat = argc > 2 ? std::atoi(argv[2]) : 5;
  tracecore::OpenOptions options;
  options.threads = argc > 3 ? std::atoi(argv[3]) : 1;
  try {
    auto file = tracecore::MappedFile::Open(argv[1]);
    double best = 1e30;
    size_t events = 0;
    for (int i = 0; i < repeat; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      auto tables = tracecore::ParseTrace(*file, options);
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (s < best) best = s;
      events = tables->events.size();
    }
    std::printf("%s: %zu bytes, %zu events, best of %d: %.4f s, %.0f MB/s, %.2f M events/s\n", argv[1],
                file->size(), events, repeat, best, file->size() / best / 1e6, events / best / 1e6);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
