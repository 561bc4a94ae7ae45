// libFuzzer target: the XSpace decoder (cpp/src/importers/xspace) on a heap copy of the input,
// with a visitor that checks what it is handed:
//   * calls nest: plane > line > event > stat, each begun once and ended once, in order (a
//     RestartLine ends a line's first handing: it begins again, with the same index);
//   * every string view lies inside the input (or is empty), names and str values are UTF-8;
//   * metadata pointers are never null; ordinals index the plane's records (or are unknown);
//   * a ref stat carries the name of the record it points at; inherited stats come from the
//     event's metadata and never repeat an id the event has;
//   * the decoder's counts equal the calls seen, and a second decode gives the same counts.
// Then the importer: ParseTrace(format="xspace") with the checks and queries of fuzz_common.h
// (tables exported and validated, every query run).
// Then the second pass that builds event_stats (EventStatsPass).
// Only TraceFormatError may escape; anything else (or a broken check) aborts as a finding.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <typeinfo>
#include <vector>

#include "containers/string_pool.h"
#include "core/error.h"
#include "fuzz_common.h"
#include "importers/xspace/xspace_decoder.h"

namespace {

using namespace tracecore::xspace;  // NOLINT

[[noreturn]] void Finding(const std::string& what) {
  std::fprintf(stderr, "\n==tracecore-fuzz== FINDING: xspace: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

void Check(bool ok, const char* what) {
  if (!ok) Finding(what);
}

struct Checker : NullVisitor {
  const char* begin;
  const char* end;
  const MetadataIndex* index = nullptr;
  int depth = 0;  // 0 space, 1 plane, 2 line, 3 event
  uint32_t next_plane = 0, next_line = 0;
  const Event* event = nullptr;
  std::vector<int64_t> own_ids;
  bool inherited_phase = false;
  DecodeCounts seen;
  DecodeCounts at_line_begin;  // to forget a restarted line's events
  bool restarted = false;

  void View(std::string_view s, bool utf8, const char* what) {
    if (s.empty()) return;
    Check(s.data() >= begin && s.data() + s.size() <= end, what);
    if (utf8) Check(tracecore::StringPool::IsValidUtf8(s), what);
  }
  void Metadata(const StatMetadata* m) {
    Check(m != nullptr, "null stat metadata");
    if (m->ordinal != kUnknownOrdinal) {
      Check(m->ordinal < index->stat_records().size() && &index->stat_records()[m->ordinal] == m,
            "stat metadata ordinal does not index its record");
    }
    View(m->name, true, "stat metadata name");
    View(m->description, true, "stat metadata description");
  }
  void StatChecks(const Stat& s) {
    Metadata(s.metadata);
    switch (s.kind) {
      case StatKind::kStr: View(s.bytes, true, "str value"); break;
      case StatKind::kBytes: case StatKind::kCompressed: View(s.bytes, false, "bytes value"); break;
      case StatKind::kRef:
        Metadata(s.ref);
        Check(s.bytes.data() == s.ref->name.data() && s.bytes.size() == s.ref->name.size(),
              "ref value is not its record's name");
        break;
      default: Check(s.ref == nullptr, "ref pointer on a non-ref stat"); break;
    }
  }

  void OnHostname(std::string_view s) { Check(depth == 0, "hostname inside a plane"); View(s, true, "hostname"); }
  void OnError(std::string_view s) { Check(depth == 0, "error inside a plane"); View(s, true, "error"); }
  void OnWarning(std::string_view s) { Check(depth == 0, "warning inside a plane"); View(s, true, "warning"); }
  void BeginPlane(const Plane& p, const MetadataIndex& i) {
    Check(depth == 0 && p.index == next_plane++, "plane order");
    depth = 1;
    next_line = 0;
    index = &i;
    ++seen.planes;
    View(p.name, true, "plane name");
    for (size_t r = 0; r < i.event_records().size(); ++r) {
      const EventMetadata& m = i.event_records()[r];
      Check(m.ordinal == r, "event metadata ordinal");
      View(m.name, true, "event metadata name");
      View(m.display_name, true, "event metadata display name");
      View(m.metadata, false, "event metadata bytes");
      for (uint32_t k = 0; k < m.stat_count; ++k) {
        const Stat& s = i.stats_of(m)[k];
        Check(s.inherited, "metadata stat not flagged inherited");
        StatChecks(s);
      }
      for (uint32_t k = 0; k < m.child_count; ++k) (void)i.children_of(m)[k];
    }
  }
  void OnPlaneStat(const Plane&, const Stat& s) {
    Check(depth == 1 && !s.inherited, "plane stat");
    ++seen.stats;
    StatChecks(s);
  }
  void BeginLine(const Plane&, const Line& l) {
    Check(depth == 1 && l.index == next_line++, "line order");
    depth = 2;
    if (!restarted) ++seen.lines;
    restarted = false;
    at_line_begin = seen;
    View(l.name, true, "line name");
    View(l.display_name, true, "line display name");
  }
  void OnEvent(const Line&, const Event& e) {
    Check(depth == 2, "event outside a line");
    depth = 3;
    event = &e;
    own_ids.clear();
    inherited_phase = false;
    Check(e.metadata != nullptr, "null event metadata");
    if (e.metadata->ordinal != kUnknownOrdinal) {
      Check(&index->event_records()[e.metadata->ordinal] == e.metadata, "event metadata ordinal");
    } else {
      Check(e.metadata->name.empty() && e.metadata->stat_count == 0, "unknown event record");
    }
    Check(e.aggregate ? e.offset_ps == 0 : e.num_occurrences == 0, "oneof: both members set");
    ++(e.aggregate ? seen.aggregates : seen.events);
  }
  void OnEventStat(const Event& e, const Stat& s) {
    Check(depth == 3 && &e == event, "stat outside its event");
    ++seen.stats;
    StatChecks(s);
    if (!s.inherited) {
      Check(!inherited_phase, "own stat after an inherited one");
      own_ids.push_back(s.metadata_id);
      return;
    }
    inherited_phase = true;
    const Stat* first = index->stats_of(*e.metadata);
    Check(&s >= first && &s < first + e.metadata->stat_count, "inherited stat not from the metadata");
    for (int64_t id : own_ids) Check(id != s.metadata_id, "inherited stat overrides an own one");
  }
  void EndEvent(const Line&, const Event& e) {
    Check(depth == 3 && &e == event, "event end");
    depth = 2;
  }
  void EndLine(const Plane&, const Line&) {
    Check(depth == 2, "line end");
    depth = 1;
  }
  void RestartLine(const Plane&, const Line& l) {
    Check(depth == 2 && !restarted, "line restart");
    depth = 1;
    --next_line;
    restarted = true;
    seen.events = at_line_begin.events;
    seen.aggregates = at_line_begin.aggregates;
    seen.stats = at_line_begin.stats;
    View(l.name, true, "line name");
  }
  void EndPlane(const Plane&) {
    Check(depth == 1, "plane end");
    depth = 0;
    index = nullptr;
  }
};

bool SameCounts(const DecodeCounts& a, const DecodeCounts& b) {
  return a.planes == b.planes && a.lines == b.lines && a.events == b.events &&
         a.aggregates == b.aggregates && a.stats == b.stats;
}

// Decodes once; returns false on TraceFormatError.
bool DecodeChecked(const std::string& input, DecodeCounts* counts) {
  Checker checker;
  checker.begin = input.data();
  checker.end = input.data() + input.size();
  XSpaceDecoder<Checker> decoder(reinterpret_cast<const uint8_t*>(input.data()), input.size(),
                                 checker);
  try {
    decoder.Decode();
  } catch (const tracecore::TraceFormatError&) {
    return false;
  } catch (const std::exception& e) {
    Finding(std::string("unexpected exception ") + typeid(e).name() + ": " + e.what());
  } catch (...) {
    Finding("unexpected non-std exception");
  }
  Check(checker.depth == 0, "unbalanced begin/end calls");
  Check(SameCounts(checker.seen, decoder.counts()), "decoder counts differ from the calls made");
  *counts = decoder.counts();
  return true;
}

// The second pass that builds event_stats (ReadXSpaceEventStats): on an input the open read,
// it succeeds with one row per stat of the timed events, each naming one of them, and its
// tables check and export as any other; on one the open refused, it may fail the same way.
void EventStatsPass(const uint8_t* data, size_t size) {
  auto file = tracecore::MappedFile::FromBuffer(std::string(reinterpret_cast<const char*>(data), size));
  std::shared_ptr<tracecore::TraceTables> tables;
  try {
    tracecore::OpenOptions options;
    options.format = "xspace";
    options.threads = 1;
    tables = tracecore::OpenTrace(*file, options);
  } catch (const tracecore::TraceFormatError&) {
    return;
  }
  if (tables->kind != tracecore::TraceKind::kXSpace) return;  // read as another format
  std::shared_ptr<tracecore::TraceTables> stats;
  try {
    stats = std::const_pointer_cast<tracecore::TraceTables>(
        tracecore::OpenEventStats(*file, tracecore::TraceKind::kXSpace, tables->events.size()));
  } catch (const tracecore::TraceFormatError& e) {
    Finding(std::string("the event_stats pass failed on an input the open read: ") + e.what());
  } catch (const std::exception& e) {
    Finding(std::string("unexpected exception from the event_stats pass: ") + e.what());
  }
  const auto n = static_cast<int64_t>(tables->events.size());
  for (size_t i = 0; i < stats->event_stats.size(); ++i) {
    const int64_t id = stats->event_stats.event_id[i];
    Check(id >= 0 && id < n, "event_stats.event_id out of range");
    if (i > 0) Check(id >= stats->event_stats.event_id[i - 1], "event_stats.event_id not in file order");
  }
  tracecore_fuzz::CheckPool(stats->pool);
  for (const std::string& name : tracecore::TableNames()) {
    tracecore::TableView view = tracecore::DescribeTable(*stats, name);
    tracecore_fuzz::CheckView(view, stats->pool, name.c_str());
    tracecore_fuzz::ExportAndRelease(view, stats->pool, stats);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);  // exact bounds for ASan
  DecodeCounts first, second;
  const bool ok = DecodeChecked(input, &first);
  const bool again = DecodeChecked(input, &second);
  Check(ok == again, "a second decode disagrees on success");
  if (ok) {
    Check(SameCounts(first, second) && first.unknown_fields == second.unknown_fields,
          "a second decode gives other counts");
  }
  tracecore_fuzz::RunInput(data, size, "xspace", /*queries=*/true);
  EventStatsPass(data, size);
  return 0;
}
