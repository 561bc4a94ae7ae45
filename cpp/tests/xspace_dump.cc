// Prints XSpaceDecoder's visits of each file given, one line per visit, for the differential
// tests of tests/test_xspace_decoder.py (not a CTest test). Strings are hex-encoded, doubles
// printed as their IEEE bits in hex.
//
//   xspace_dump FILE...
//   FILE <path>
//   H|R|W <hex>                                        hostname, error, warning
//   P <index> <id> <name>                              plane
//   PS <stat>                                          plane stat
//   LB <index>                                         line begins (its events follow)
//   LR                                                 line restarts: forget its events
//   L <index> <id> <display_id> <name> <display_name> <timestamp_ns> <duration_ps>
//                                                      line ends, every field known
//   E <aggregate 0|1> <metadata_id> <name> <display_name> <offset_ps|num_occurrences> <duration_ps>
//   S <stat>                                           event stat
//   <stat> = <inherited 0|1> <metadata_id> <name> <kind> <value>
//   END <planes> <lines> <events> <aggregates> <stats> <unknown_fields>
//   ERROR <byte offset> <message>                      TraceFormatError
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/error.h"
#include "importers/xspace/xspace_decoder.h"

namespace {

using namespace tracecore::xspace;  // NOLINT

std::string Hex(std::string_view s) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out = "x";  // never empty: keeps the columns
  for (unsigned char c : s) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

void PrintStat(const char* tag, const Stat& s) {
  std::string value = "-";
  switch (s.kind) {
    case StatKind::kNone: break;
    case StatKind::kDouble: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%016" PRIx64, s.bits);
      value = buf;
      break;
    }
    case StatKind::kUint64: value = std::to_string(s.uint64_value()); break;
    case StatKind::kInt64: value = std::to_string(s.int64_value()); break;
    default: value = Hex(s.bytes); break;
  }
  std::printf("%s %d %" PRId64 " %s %s %s\n", tag, s.inherited ? 1 : 0, s.metadata_id,
              Hex(s.name()).c_str(), StatKindName(s.kind), value.c_str());
}

struct Printer : NullVisitor {
  void OnHostname(std::string_view s) { std::printf("H %s\n", Hex(s).c_str()); }
  void OnError(std::string_view s) { std::printf("R %s\n", Hex(s).c_str()); }
  void OnWarning(std::string_view s) { std::printf("W %s\n", Hex(s).c_str()); }
  void BeginPlane(const Plane& p, const MetadataIndex&) {
    std::printf("P %u %" PRId64 " %s\n", p.index, p.id, Hex(p.name).c_str());
  }
  void OnPlaneStat(const Plane&, const Stat& s) { PrintStat("PS", s); }
  void BeginLine(const Plane&, const Line& l) { std::printf("LB %u\n", l.index); }
  void RestartLine(const Plane&, const Line&) { std::printf("LR\n"); }
  void EndLine(const Plane&, const Line& l) {
    std::printf("L %u %" PRId64 " %" PRId64 " %s %s %" PRId64 " %" PRId64 "\n", l.index, l.id,
                l.display_id, Hex(l.name).c_str(), Hex(l.display_name).c_str(), l.timestamp_ns,
                l.duration_ps);
  }
  void OnEvent(const Line&, const Event& e) {
    std::printf("E %d %" PRId64 " %s %s %" PRId64 " %" PRId64 "\n", e.aggregate ? 1 : 0,
                e.metadata_id, Hex(e.metadata->name).c_str(), Hex(e.metadata->display_name).c_str(),
                e.aggregate ? e.num_occurrences : e.offset_ps, e.duration_ps);
  }
  void OnEventStat(const Event&, const Stat& s) { PrintStat("S", s); }
};

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::ifstream in(argv[i], std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::printf("FILE %s\n", argv[i]);
    Printer printer;
    XSpaceDecoder<Printer> decoder(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(),
                                   printer);
    try {
      decoder.Decode();
      const DecodeCounts& c = decoder.counts();
      std::printf("END %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n",
                  c.planes, c.lines, c.events, c.aggregates, c.stats, c.unknown_fields);
    } catch (const tracecore::TraceFormatError& e) {
      std::printf("ERROR %" PRIu64 " %s\n", e.offset, e.what());
    }
  }
  return 0;
}
