// Decodes an XSpace N times with the XSpace decoder alone (cpp/src/importers/xspace, no tables,
// no Python) and prints the best MB/s and events/s: the decoder's share of an import.
//
// The visitor reads what a table sink would (each event's metadata name and times, each stat's
// name and value) into a checksum, so nothing is optimised away; it stores nothing.
//
//   cmake -S . -B build/bench -DTRACECORE_BUILD_BENCH=ON -DCMAKE_BUILD_TYPE=Release
//   cmake --build build/bench --target xspace_bench
//   build/bench/xspace_bench FILE [REPEAT]          (FILE: bench/make_xspace.py's output)
//
// Prints one line "xspace_bench: ..." and, with --json, one JSON object.
#include <time.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

#include "importers/xspace/xspace_decoder.h"
#include "io/mapped_file.h"

namespace {

using namespace tracecore::xspace;  // NOLINT

// This thread's CPU time: on a shared machine the wall time also counts the other processes.
double CpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct Touch : NullVisitor {
  uint64_t sum = 0;
  void BeginLine(const Plane&, const Line& l) { sum += static_cast<uint64_t>(l.timestamp_ns); }
  void OnEvent(const Line& l, const Event& e) {
    sum += e.metadata->ordinal + static_cast<uint64_t>(e.offset_ps + e.duration_ps) +
           static_cast<uint64_t>(l.timestamp_ns) + e.metadata->name.size();
  }
  void OnEventStat(const Event&, const Stat& s) {
    sum += s.metadata->ordinal + s.bits + s.bytes.size() + static_cast<uint64_t>(s.kind);
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE [REPEAT] [--json]\n", argv[0]);
    return 2;
  }
  int repeat = 5;
  bool json = false;
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--json") == 0) {
      json = true;
    } else {
      repeat = std::atoi(argv[i]);
    }
  }
  try {
    auto file = tracecore::MappedFile::Open(argv[1]);
    const auto* data = reinterpret_cast<const uint8_t*>(file->data());
    double best = 1e30, best_cpu = 1e30;
    DecodeCounts counts;
    uint64_t checksum = 0;
    for (int i = 0; i < repeat; ++i) {
      Touch touch;
      const auto t0 = std::chrono::steady_clock::now();
      const double c0 = CpuSeconds();
      XSpaceDecoder<Touch> decoder(data, file->size(), touch);
      decoder.Decode();
      const double cpu = CpuSeconds() - c0;
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (s < best) best = s;
      if (cpu < best_cpu) best_cpu = cpu;
      counts = decoder.counts();
      checksum = touch.sum;
    }
    const double mb = static_cast<double>(file->size()) / 1e6;
    const uint64_t events = counts.events + counts.aggregates;
    std::printf("xspace_bench: %s: %.1f MB, %" PRIu64 " planes, %" PRIu64 " lines, %" PRIu64
                " events, %" PRIu64 " stats, best of %d: %.4f s, %.0f MB/s, %.1f M events/s; "
                "CPU %.4f s, %.0f MB/s (checksum %" PRIx64 ")\n",
                argv[1], mb, counts.planes, counts.lines, events, counts.stats, repeat, best,
                mb / best, static_cast<double>(events) / best / 1e6, best_cpu, mb / best_cpu,
                checksum);
    if (json) {
      std::printf("{\"bytes\": %zu, \"events\": %" PRIu64 ", \"stats\": %" PRIu64
                  ", \"seconds\": %.6f, \"cpu_seconds\": %.6f, \"mb_per_s\": %.1f, "
                  "\"cpu_mb_per_s\": %.1f, \"events_per_s\": %.0f}\n",
                  file->size(), events, counts.stats, best, best_cpu, mb / best, mb / best_cpu,
                  static_cast<double>(events) / best);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
