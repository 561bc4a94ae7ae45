// The Chrome trace JSON decoder alone (no tables, no Python): maps a file and decodes it N
// times with a visitor that reads every field (so nothing is optimised away), and prints the
// best MB/s, events/s and the peak RSS. Pages behind the decoder are released as it goes (as
// an importer reading a mapped file does). Modes: `events` (DecodeChromeTrace, the default)
// and `walk` (the generic JSON token walk, json::WalkValue, with a handler that does nothing).
// Build: cmake -S . -B build/bench -DTRACECORE_BUILD_BENCH=ON && cmake --build build/bench
//   --target json_bench; run: build/bench/json_bench FILE [REPEAT] [events|walk]
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

#include "importers/chrome_json/chrome_trace_decoder.h"
#include "importers/chrome_json/json_walk.h"
#include "io/mapped_file.h"
#include "io/release_behind.h"

namespace {

using namespace tracecore;

// Touches what an importer would: the phase, the times, the ids and every arg's value.
class Checksum : public chrome_json::ChromeEventVisitor {
 public:
  uint64_t sum = 0;
  uint64_t args = 0;
  void OnEvent(const chrome_json::ChromeEvent& e) override {
    sum += static_cast<uint64_t>(e.ts_ns) + static_cast<uint64_t>(e.dur_ns) +
           static_cast<uint8_t>(e.phase) + e.name.size() + e.cat.size() +
           static_cast<uint64_t>(e.pid.number) + static_cast<uint64_t>(e.tid.number);
    for (size_t i = 0; i < e.num_args; ++i) {
      const json::Value& v = e.args[i].value;
      sum += e.args[i].key.size() + v.text.size() + static_cast<uint64_t>(v.int_value);
    }
    args += e.num_args;
  }
};

struct NullHandler {
  uint64_t tokens = 0;
  void BeginObject() { ++tokens; }
  void EndObject() {}
  void BeginArray() { ++tokens; }
  void EndArray() {}
  void Key(std::string_view) { ++tokens; }
  void Scalar(const json::Value&) { ++tokens; }
};

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// VmHWM of this process image. Not getrusage's ru_maxrss: Linux carries that over from the
// parent across fork and exec, so a parent that once held the whole file would show here.
double PeakRssMb() {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return -1;
  char line[256];
  double mb = -1;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::strncmp(line, "VmHWM:", 6) == 0) mb = std::strtod(line + 6, nullptr) / 1024.0;
  }
  std::fclose(f);
  return mb;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE [REPEAT] [events|walk]\n", argv[0]);
    return 2;
  }
  const int repeat = argc > 2 ? std::atoi(argv[2]) : 3;
  const std::string mode = argc > 3 ? argv[3] : "events";
  try {
    auto file = MappedFile::Open(argv[1]);
    double best = 1e30, best_cpu = 1e30;
    uint64_t events = 0, checksum = 0;
    for (int i = 0; i < repeat; ++i) {
      const char* begin = file->data();
      ReleaseBehind release(
          begin,
          [&](const char* from, const char* to) {
            file->ReleaseConsumed(from - begin, to - begin);
          },
          16 << 20);
      const auto t0 = std::chrono::steady_clock::now();
      const double c0 = ThreadCpuSeconds();
      if (mode == "walk") {
        json::JsonReader reader(begin, begin + file->size());
        NullHandler handler;
        json::WalkValue(reader, handler);
        reader.ExpectEnd();
        events = handler.tokens;
      } else {
        Checksum visitor;
        chrome_json::DecodeOptions options;
        options.release = &release;
        const auto summary =
            chrome_json::DecodeChromeTrace(begin, begin + file->size(), visitor, options);
        events = summary.events;
        checksum = visitor.sum;
      }
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const double cpu = ThreadCpuSeconds() - c0;
      if (s < best) best = s;
      if (cpu < best_cpu) best_cpu = cpu;
      file->ReleaseConsumed(0, file->size());
    }
    std::printf(
        "{\"tool\": \"tracecore-json-%s\", \"stage1\": \"%s\", \"bytes\": %zu, \"%s\": %llu, "
        "\"seconds\": %.4f, \"mb_s\": %.1f, \"events_s\": %.0f, \"cpu_seconds\": %.4f, "
        "\"cpu_mb_s\": %.1f, "
        "\"peak_rss_mb\": %.1f, \"checksum\": %llu}\n",
        mode.c_str(), json::BestStage1Name(), file->size(), mode == "walk" ? "tokens" : "events",
        static_cast<unsigned long long>(events), best, file->size() / best / 1e6, events / best,
        best_cpu, file->size() / best_cpu / 1e6, PeakRssMb(),
        static_cast<unsigned long long>(checksum));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
