// Sanitizer test driver: a file truncated by another thread while tracecore has it mapped and
// is parsing it must give TraceFormatError (or a successful parse when the truncation came
// too late), never SIGBUS.
//
//   truncate_driver SEED_FILE [ITERATIONS]
//
// SEED_FILE is repeated up to ~10 MB (concatenated StepStats text or binary dumps are a valid,
// larger StepStats), written to a scratch file, mapped with MappedFile::Open and parsed while a
// thread truncates it after a varying delay to a varying size. Exit status 0 when every
// iteration ended in success or TraceFormatError.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "fuzz_common.h"

#ifdef TRACECORE_FUZZ_TRACE_PC_STUB
extern "C" void __sanitizer_cov_trace_pc() {}
#endif

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s SEED_FILE [ITERATIONS]\n", argv[0]);
    return 2;
  }
  const int iterations = argc > 2 ? std::atoi(argv[2]) : 20;
  std::ifstream in(argv[1], std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string seed = ss.str();
  if (seed.empty()) {
    std::fprintf(stderr, "empty seed file\n");
    return 2;
  }
  std::string big;
  while (big.size() < (10u << 20)) big += seed;
  char victim[] = "/tmp/tracecore_truncate_XXXXXX";
  const int fd = mkstemp(victim);
  if (fd < 0) return 2;
  close(fd);

  // How long a full parse takes, to spread the truncations over it.
  {
    std::ofstream(victim, std::ios::binary) << big;
    auto file = tracecore::MappedFile::Open(victim);
    const auto t0 = std::chrono::steady_clock::now();
    std::string error;
    tracecore_fuzz::ParseOrNull(*file, "auto", 1, &error);
    const auto us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count();
    std::printf("full parse: %lld us\n", static_cast<long long>(us));
    std::srand(1);
    int ok = 0, rejected = 0;
    const size_t sizes[] = {0, 1, 4095, 4096, big.size() / 3, big.size() / 2, big.size() - 1};
    for (int k = 0; k < iterations; ++k) {
      std::ofstream(victim, std::ios::binary) << big;
      auto mapped = tracecore::MappedFile::Open(victim);
      const long delay = us > 0 ? std::rand() % (us + us / 5 + 1) : 0;
      const size_t new_size = sizes[std::rand() % 7];
      std::thread cutter([&] {
        std::this_thread::sleep_for(std::chrono::microseconds(delay));
        if (truncate(victim, static_cast<off_t>(new_size)) != 0) std::perror("truncate");
      });
      auto tables = tracecore_fuzz::ParseOrNull(*mapped, "auto", k % 2 == 0 ? 1 : 0, &error);
      cutter.join();
      if (tables) {
        ++ok;
      } else {
        ++rejected;
      }
    }
    std::printf("truncate_driver: %d iterations: %d parsed, %d TraceFormatError, no crash\n",
                iterations, ok, rejected);
  }
  unlink(victim);
  return 0;
}
