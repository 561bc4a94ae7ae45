// Property check of WireReader::Varint (its 1-byte, 2-byte, 8-bytes-at-once and 9-10-byte fast
// paths) against a byte-at-a-time decoder with protobuf's rules: random varints of 0 to 13 bytes,
// with or without a terminator, cut by a field end anywhere, with readable bytes past the end
// or not. Values, lengths and which inputs are errors must agree. Built with the sanitizers by
// .ci/asan.sh; exits non-zero on the first mismatch.
//
//   varint_check [seed]
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>

#include "importers/protobuf/wire_reader.h"

namespace {

// Up to ten bytes, the tenth adding bit 63 only; no terminator within ten bytes or before
// `end` is an error.
bool Reference(const uint8_t* p, const uint8_t* end, uint64_t* value, size_t* length) {
  uint64_t v = 0;
  for (int i = 0; i < 10; ++i) {
    if (p + i >= end) return false;
    const uint8_t b = p[i];
    v |= static_cast<uint64_t>(b & 0x7F) << (7 * i);
    if (b < 0x80) {
      *value = v;
      *length = static_cast<size_t>(i) + 1;
      return true;
    }
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  std::mt19937_64 rng(argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1);
  long values = 0, errors = 0;
  for (int iter = 0; iter < 2000000; ++iter) {
    uint8_t buf[32];
    for (uint8_t& b : buf) b = static_cast<uint8_t>(rng());
    const int continued = static_cast<int>(rng() % 14);  // bytes before the terminator
    for (int i = 0; i < continued; ++i) buf[i] |= 0x80;
    buf[continued] &= 0x7F;
    if (rng() % 4 == 0) buf[continued] |= 0x80;  // sometimes no terminator there
    const size_t end = rng() % 16;               // where the field ends
    const size_t limit = end + rng() % 16;       // readable input (fast paths may load to it)
    tracecore::WireReader reader(buf, buf + limit);
    uint64_t want = 0;
    size_t want_length = 0;
    const bool ok = Reference(buf, buf + end, &want, &want_length);
    const uint8_t* p = buf;
    try {
      const uint64_t got = reader.Varint(p, buf + end);
      if (!ok || got != want || static_cast<size_t>(p - buf) != want_length) {
        std::printf("mismatch at iteration %d: %d continued bytes, end %zu, limit %zu: got %llx "
                    "(%td bytes), want %s %llx (%zu bytes)\n",
                    iter, continued, end, limit, static_cast<unsigned long long>(got), p - buf,
                    ok ? "" : "an error, not", static_cast<unsigned long long>(want), want_length);
        return 1;
      }
      ++values;
    } catch (const tracecore::TraceFormatError& e) {
      if (ok) {
        std::printf("unexpected error at iteration %d: %s\n", iter, e.what());
        return 1;
      }
      ++errors;
    }
  }
  std::printf("varint_check: %ld values and %ld errors agree with the reference\n", values, errors);
  return 0;
}
