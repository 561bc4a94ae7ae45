// protobuf C++ peer of the XSpace benchmark: reads FILE into memory, then times
// XSpace::ParseFromString (best of REPEAT, each into a fresh arena) and counts its events.
//   xplane_parse FILE [REPEAT]   prints one JSON object: bytes, events, seconds, mb_per_s
#include <google/protobuf/arena.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include "xplane.pb.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE [REPEAT]\n", argv[0]);
    return 2;
  }
  const int repeat = argc > 2 ? std::atoi(argv[2]) : 3;
  std::ifstream in(argv[1], std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  double best = 1e30;
  long long events = 0;
  for (int i = 0; i < repeat; ++i) {
    google::protobuf::Arena arena;
    auto* space = google::protobuf::Arena::CreateMessage<tensorflow::profiler::XSpace>(&arena);
    const auto t0 = std::chrono::steady_clock::now();
    const bool ok = space->ParseFromString(bytes);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!ok) {
      std::fprintf(stderr, "ParseFromString failed\n");
      return 1;
    }
    if (s < best) best = s;
    events = 0;
    for (const auto& plane : space->planes()) {
      for (const auto& line : plane.lines()) events += line.events_size();
    }
  }
  std::printf("{\"bytes\": %zu, \"events\": %lld, \"seconds\": %.6f, \"mb_per_s\": %.1f, "
              "\"events_per_s\": %.0f}\n",
              bytes.size(), events, best, bytes.size() / best / 1e6, events / best);
  return 0;
}
