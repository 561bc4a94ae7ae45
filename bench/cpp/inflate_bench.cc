// Decompression speed of tracecore's Inflater (cpp/src/codec) on gzip / zlib files, in MB/s of
// output per second of this process's CPU time (steadier than wall time on a shared machine;
// the decoder is single-threaded), best of N runs:
//   inflate_all   InflateAll: a fresh mapping per run, so page faults are included (what
//                 opening a .gz trace costs)
//   stream_1MiB   the streaming Inflater into one reused 1 MiB buffer: decoding and CRC only
//
//   inflate_bench [--repeats N] FILE...
//
// bench/inflate.py generates trace-like inputs, runs this next to Python's zlib / gzip on the
// same files and prints both.
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "codec/inflate_all.h"
#include "codec/inflater.h"
#include "core/error.h"

namespace {

double CpuSeconds() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

}  // namespace

int main(int argc, char** argv) {
  int repeats = 5;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--repeats") == 0 && i + 1 < argc) {
      repeats = std::atoi(argv[++i]);
    } else {
      files.push_back(argv[i]);
    }
  }
  if (files.empty()) {
    std::fprintf(stderr, "usage: inflate_bench [--repeats N] FILE...\n");
    return 2;
  }
  std::printf("%-40s %12s %12s %14s %14s\n", "file", "in_bytes", "out_bytes", "inflate_all",
              "stream_1MiB");
  for (const std::string& path : files) {
    std::ifstream f(path, std::ios::binary);
    const std::string in((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    const auto* data = reinterpret_cast<const uint8_t*>(in.data());
    size_t out_size = 0;
    double best_all = 1e300, best_stream = 1e300;
    try {
      for (int r = 0; r < repeats; ++r) {
        double t0 = CpuSeconds();
        {
          tracecore::InflateLimits limits;
          limits.max_output_bytes = UINT64_MAX;
          const tracecore::InflatedBuffer out = tracecore::InflateAll(data, in.size(), limits);
          out_size = out.size();
        }
        best_all = std::min(best_all, CpuSeconds() - t0);

        std::vector<uint8_t> buffer(size_t{1} << 20);
        t0 = CpuSeconds();
        tracecore::Inflater inflater;
        size_t pos = 0;
        for (;;) {
          const auto res = inflater.Inflate(data + pos, in.size() - pos, buffer.data(),
                                            buffer.size(), true);
          pos += res.consumed;
          if (res.status == tracecore::Inflater::Status::kStreamEnd) break;
        }
        best_stream = std::min(best_stream, CpuSeconds() - t0);
      }
    } catch (const tracecore::TraceFormatError& e) {
      std::fprintf(stderr, "%s: %s\n", path.c_str(), e.what());
      return 1;
    }
    std::printf("%-40s %12zu %12zu %9.0f MB/s %9.0f MB/s\n", path.c_str(), in.size(), out_size,
                out_size / 1e6 / best_all, out_size / 1e6 / best_stream);
  }
  return 0;
}
