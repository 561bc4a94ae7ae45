// simdjson's own parser as a peer of the Chrome trace JSON benchmark (bench/peers): the file
// read once into simdjson's padded string, then parsed REPEAT times by one dom::parser (its
// stage 1 and stage 2 building the tape; no copy of the input per parse). The first parse
// allocates the parser's buffers (their page faults are in its time); the later ones reuse
// them. Built by bench/peers/build_simdjson.sh against the simdjson sources that the pysimdjson
// wheel installs.
//   simdjson_parse FILE [REPEAT]   prints {"bytes", "events", "first_seconds", "seconds",
//                                          "first_mb_per_s", "mb_per_s", "implementation"}
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "simdjson.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE [REPEAT]\n", argv[0]);
    return 2;
  }
  const int repeat = argc > 2 ? std::atoi(argv[2]) : 3;
  simdjson::padded_string json;
  if (simdjson::padded_string::load(argv[1]).get(json)) {
    std::fprintf(stderr, "cannot read %s\n", argv[1]);
    return 1;
  }
  simdjson::dom::parser parser;
  double first = 0, best = 1e30;
  size_t events = 0;
  for (int i = 0; i < repeat; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    simdjson::dom::element doc;
    const auto error = parser.parse(json).get(doc);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (error) {
      std::fprintf(stderr, "simdjson: %s\n", simdjson::error_message(error));
      return 1;
    }
    if (i == 0) {
      first = s;
      simdjson::dom::array list;
      if (doc.is_array()) {
        list = doc.get_array().value_unsafe();
      } else if (doc["traceEvents"].get_array().get(list)) {
        std::fprintf(stderr, "simdjson: no traceEvents array\n");
        return 1;
      }
      events = list.size();
    } else if (s < best) {
      best = s;
    }
  }
  if (repeat < 2) best = first;
  const double mb = static_cast<double>(json.size()) / 1e6;
  std::printf(
      "{\"bytes\": %zu, \"events\": %zu, \"first_seconds\": %.4f, \"seconds\": %.4f, "
      "\"first_mb_per_s\": %.1f, \"mb_per_s\": %.1f, \"implementation\": \"%s\"}\n",
      json.size(), events, first, best, mb / first, mb / best,
      simdjson::get_active_implementation()->name().c_str());
  return 0;
}
