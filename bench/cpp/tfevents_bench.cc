// Reads TensorBoard event files with the C++ core alone (no Python) and prints the best MB/s of
// N passes per mode, all files of one pass counted together:
//   records  RecordReader: framing and both CRCs of every record (the hardware CRC if present)
//   scan     ScanEventFile: records + every Event decoded, RunMetadata listed, content counted
//   portable the records pass with the portable (table) CRC-32C instead, for comparison
// Build: cmake -S . -B build/bench -DTRACECORE_BUILD_BENCH=ON
//          && cmake --build build/bench --target tfevents_bench
// Run:   build/bench/tfevents_bench [-n N] FILE...
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "codec/crc32c.h"
#include "importers/tfevents/event_file_scan.h"
#include "importers/tfevents/record_reader.h"
#include "io/mapped_file.h"

namespace {

using tracecore::tfevents::Record;
using tracecore::tfevents::RecordReader;

struct Pass {
  uint64_t records = 0;
  uint64_t run_metadata = 0;
};

uint32_t Load32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

Pass Records(std::string_view input) {
  RecordReader reader(input);
  Record r;
  Pass pass;
  while (reader.Next(&r)) ++pass.records;
  return pass;
}

// The records pass by hand with the portable CRC (the reader always takes the fastest one).
Pass Portable(std::string_view input) {
  namespace detail = tracecore::crc32c_detail;
  const auto* p = reinterpret_cast<const uint8_t*>(input.data());
  Pass pass;
  size_t pos = 0;
  while (input.size() - pos >= 16) {
    uint64_t length;
    std::memcpy(&length, p + pos, 8);
    if (length > input.size() - pos - 16) break;
    const bool ok = tracecore::MaskCrc32c(detail::ExtendPortable(0, p + pos, 8)) ==
                        Load32(input.data() + pos + 8) &&
                    tracecore::MaskCrc32c(detail::ExtendPortable(0, p + pos + 12, length)) ==
                        Load32(input.data() + pos + 12 + length);
    if (!ok) {
      std::fprintf(stderr, "CRC mismatch at %zu\n", pos);
      std::exit(1);
    }
    pos += 16 + length;
    ++pass.records;
  }
  return pass;
}

Pass Scan(std::string_view input) {
  const tracecore::tfevents::EventFileScan scan = tracecore::tfevents::ScanEventFile(input);
  return {scan.records, scan.run_metadata.size()};
}

}  // namespace

int main(int argc, char** argv) {
  int repeat = 5;
  std::vector<std::string> paths;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "-n") == 0 && i + 1 < argc) {
      repeat = std::atoi(argv[++i]);
    } else {
      paths.push_back(argv[i]);
    }
  }
  if (paths.empty()) {
    std::fprintf(stderr, "usage: %s [-n N] FILE...\n", argv[0]);
    return 2;
  }
  try {
    std::vector<std::shared_ptr<tracecore::MappedFile>> files;
    uint64_t bytes = 0;
    for (const std::string& p : paths) {
      files.push_back(tracecore::MappedFile::Open(p));
      bytes += files.back()->size();
    }
    struct Mode {
      const char* name;
      Pass (*run)(std::string_view);
    };
    for (const Mode& mode :
         {Mode{"records", &Records}, Mode{"scan", &Scan}, Mode{"portable", &Portable}}) {
      double best = 1e30, best_cpu = 1e30;
      Pass total;
      for (int i = 0; i < repeat; ++i) {
        total = Pass();
        const std::clock_t c0 = std::clock();
        const auto t0 = std::chrono::steady_clock::now();
        for (const auto& f : files) {
          const Pass pass = mode.run(std::string_view(f->data(), f->size()));
          total.records += pass.records;
          total.run_metadata += pass.run_metadata;
        }
        const double s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (s < best) best = s;
        const double cpu = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
        if (cpu < best_cpu) best_cpu = cpu;
      }
      std::printf(
          "{\"mode\": \"%s\", \"files\": %zu, \"bytes\": %llu, \"records\": %llu, "
          "\"run_metadata\": %llu, \"best_seconds\": %.6f, \"best_cpu_seconds\": %.6f, "
          "\"mb_per_s\": %.1f, "
          "\"records_per_s\": %.0f, \"hardware_crc\": %s}\n",
          mode.name, files.size(), static_cast<unsigned long long>(bytes),
          static_cast<unsigned long long>(total.records),
          static_cast<unsigned long long>(total.run_metadata), best, best_cpu, bytes / best / 1e6,
          total.records / best, tracecore::Crc32cUsesHardware() ? "true" : "false");
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
