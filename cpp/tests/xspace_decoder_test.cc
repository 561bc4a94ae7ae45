// XSpaceDecoder: small hand-built XSpace messages in, the visits expected out (proto3 semantics
// of scalars, oneofs and maps, metadata resolution, inherited stats, unknown fields, errors).
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "importers/xspace/id_map.h"
#include "importers/xspace/xspace_decoder.h"
#include "proto_writer.h"
#include "unit_test.h"

namespace {

using namespace tracecore::xspace;  // NOLINT
using tracecore::TraceFormatError;
using namespace tracecore::unit::proto;  // NOLINT

// ---- a visitor writing one line of text per visit -------------------------------------------
std::string StatText(const Stat& s) {
  std::string v;
  switch (s.kind) {
    case StatKind::kNone: break;
    case StatKind::kDouble: v = std::to_string(s.double_value()); break;
    case StatKind::kUint64: v = std::to_string(s.uint64_value()); break;
    case StatKind::kInt64: v = std::to_string(s.int64_value()); break;
    default: v = std::string(s.bytes); break;
  }
  return std::string(s.inherited ? "istat " : "stat ") + std::string(s.name()) + " " +
         StatKindName(s.kind) + " " + v;
}

struct Recorder : NullVisitor {
  std::vector<std::string> log;
  void OnHostname(std::string_view h) { log.push_back("host " + std::string(h)); }
  void OnError(std::string_view h) { log.push_back("error " + std::string(h)); }
  void OnWarning(std::string_view h) { log.push_back("warning " + std::string(h)); }
  void BeginPlane(const Plane& p, const MetadataIndex& index) {
    log.push_back("plane " + std::to_string(p.index) + " id=" + std::to_string(p.id) + " " +
                  std::string(p.name) + " events_md=" + std::to_string(index.event_records().size()) +
                  " stats_md=" + std::to_string(index.stat_records().size()));
  }
  void OnPlaneStat(const Plane&, const Stat& s) { log.push_back("p" + StatText(s)); }
  void BeginLine(const Plane&, const Line& l) {
    log.push_back("line " + std::to_string(l.index) + " id=" + std::to_string(l.id) + " did=" +
                  std::to_string(l.display_id) + " " + std::string(l.name) + "|" +
                  std::string(l.display_name) + " ts=" + std::to_string(l.timestamp_ns) +
                  " dur=" + std::to_string(l.duration_ps));
  }
  void OnEvent(const Line&, const Event& e) {
    log.push_back("event " + std::string(e.metadata->name) + "|" +
                  std::string(e.metadata->display_name) + " id=" + std::to_string(e.metadata_id) +
                  (e.aggregate ? " n=" + std::to_string(e.num_occurrences)
                               : " off=" + std::to_string(e.offset_ps)) +
                  " dur=" + std::to_string(e.duration_ps));
  }
  void OnEventStat(const Event&, const Stat& s) { log.push_back(StatText(s)); }
  void EndEvent(const Line&, const Event&) { log.push_back("end event"); }
  void EndLine(const Plane&, const Line& l) {
    log.push_back("end line dur=" + std::to_string(l.duration_ps) + " did=" +
                  std::to_string(l.display_id) + " " + std::string(l.display_name));
  }
  void RestartLine(const Plane&, const Line& l) {
    log.push_back("restart line ts=" + std::to_string(l.timestamp_ns));
  }
  void EndPlane(const Plane&) { log.push_back("end plane"); }
};

struct Result {
  std::vector<std::string> log;
  DecodeCounts counts;
};

Result Decode(const std::string& bytes) {
  Recorder r;
  XSpaceDecoder<Recorder> d(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), r);
  d.Decode();
  return {r.log, d.counts()};
}

void ExpectLog(const std::vector<std::string>& got, const std::vector<std::string>& want) {
  EXPECT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) EXPECT_EQ(got[i], want[i]);
}

// An XSpace with one plane: `plane_fields` concatenated.
std::string Space(const std::string& plane_fields) { return S(1, plane_fields); }

}  // namespace

TEST(XSpaceDecoder, EmptyInputIsAnEmptySpace) {
  const Result r = Decode("");
  EXPECT_EQ(r.log.size(), 0u);
  EXPECT_EQ(r.counts.planes, 0u);
}

TEST(XSpaceDecoder, ResolvesMetadataWrittenAfterTheLines) {
  // XPlane writes lines (3) before event_metadata (4) and stat_metadata (5); XLine writes
  // duration_ps, display_id and display_name (9..11) after its events: BeginLine has the
  // fields before the events, EndLine all of them.
  const std::string stat = S(4, F(1, 7) + F(4, static_cast<uint64_t>(-5)));
  const std::string line = F(1, 3) + S(2, "tf_Compute/3") + F(3, 1000) +
                           S(4, F(1, 1) + F(2, 2500) + F(3, 4000) + stat) +
                           S(4, F(1, 2) + F(2, 9000)) + F(9, 77) + F(10, 4) + S(11, "Compute");
  const std::string plane = F(1, 5) + S(2, "/host:CPU") + S(3, line) +
                            EventMeta(1, "scope/a:MatMul", S(4, "MatMul")) +
                            EventMeta(2, "Iterator::Root") + StatMeta(7, "group_id");
  const Result r = Decode(Space(plane));
  ExpectLog(r.log, {
      "plane 0 id=5 /host:CPU events_md=2 stats_md=1",
      "line 0 id=3 did=0 tf_Compute/3| ts=1000 dur=0",
      "event scope/a:MatMul|MatMul id=1 off=2500 dur=4000",
      "stat group_id int64 -5",
      "end event",
      "event Iterator::Root| id=2 off=9000 dur=0",
      "end event",
      "end line dur=77 did=4 Compute",
      "end plane",
  });
  EXPECT_EQ(r.counts.events, 2u);
  EXPECT_EQ(r.counts.stats, 1u);
  EXPECT_EQ(r.counts.unknown_fields, 0u);
}

TEST(XSpaceDecoder, ATimestampAfterTheEventsRestartsTheLine) {
  const std::string event = S(4, F(1, 1) + F(2, 2000) + S(4, F(1, 1) + F(4, 3)));
  const std::string plane = S(3, F(3, 5) + event + F(3, 5) + event + F(3, 9) + F(7, 1)) +
                            S(3, F(3, 4) + event + F(3, 4)) +  // the same value again: no restart
                            EventMeta(1, "e") + StatMeta(1, "s");
  const Result r = Decode(Space(plane));
  ExpectLog(r.log, {
      "plane 0 id=0  events_md=1 stats_md=1",
      "line 0 id=0 did=0 | ts=5 dur=0",
      "event e| id=1 off=2000 dur=0", "stat s int64 3", "end event",
      "event e| id=1 off=2000 dur=0", "stat s int64 3", "end event",
      "restart line ts=9",
      "line 0 id=0 did=0 | ts=9 dur=0",
      "event e| id=1 off=2000 dur=0", "stat s int64 3", "end event",
      "event e| id=1 off=2000 dur=0", "stat s int64 3", "end event",
      "end line dur=0 did=0 ",
      "line 1 id=0 did=0 | ts=4 dur=0",
      "event e| id=1 off=2000 dur=0", "stat s int64 3", "end event",
      "end line dur=0 did=0 ",
      "end plane",
  });
  EXPECT_EQ(r.counts.lines, 2u);
  EXPECT_EQ(r.counts.events, 3u);
  EXPECT_EQ(r.counts.stats, 3u);
  EXPECT_EQ(r.counts.unknown_fields, 1u);
}

TEST(XSpaceDecoder, ManyStatsOnOneEventPastTheBuffer) {
  std::string stats;
  for (int i = 0; i < 600; ++i) stats += S(4, F(1, 1) + F(4, static_cast<uint64_t>(i)) + F(9, 1));
  struct Values : NullVisitor {
    std::vector<int64_t> values;
    void OnEventStat(const Event&, const Stat& s) { values.push_back(s.int64_value()); }
  } values;
  const std::string bytes = Space(S(3, S(4, F(1, 1) + stats + F(2, 7))) + EventMeta(1, "x"));
  XSpaceDecoder<Values> d(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), values);
  d.Decode();
  EXPECT_EQ(values.values.size(), 600u);
  for (size_t i = 0; i < values.values.size(); ++i) EXPECT_EQ(values.values[i], static_cast<int64_t>(i));
  EXPECT_EQ(d.counts().stats, 600u);
  EXPECT_EQ(d.counts().unknown_fields, 600u);  // one inside each stat, each counted once
}

TEST(XSpaceDecoder, MetadataBeforeLinesGivesTheSameVisits) {
  const std::string line = S(2, "t") + S(4, F(1, 1) + F(2, 10));
  const std::string a = S(2, "p") + S(3, line) + EventMeta(1, "x");
  const std::string b = EventMeta(1, "x") + S(3, line) + S(2, "p");
  ExpectLog(Decode(Space(a)).log, Decode(Space(b)).log);
}

TEST(XSpaceDecoder, EveryStatValueKind) {
  std::string stats;
  stats += S(4, F(1, 1) + D(2, 0.25));
  stats += S(4, F(1, 1) + F(3, ~uint64_t{0}));
  stats += S(4, F(1, 1) + F(4, static_cast<uint64_t>(INT64_MIN)));
  stats += S(4, F(1, 1) + S(5, "h\xc3\xa9"));
  stats += S(4, F(1, 1) + S(6, std::string("\xff\x00", 2)));
  stats += S(4, F(1, 1) + F(7, 2));                       // ref: the name of stat metadata 2
  stats += S(4, F(1, 1) + F(7, ~uint64_t{0}));            // ref to key -1
  stats += S(4, F(1, 1) + F(7, 99));                      // ref to an absent key: ""
  stats += S(4, F(1, 1) + S(8, "\x1f\x8b not inflated")); // compressed: bytes passed as they are
  stats += S(4, F(1, 1));                                 // no value
  stats += S(4, F(1, 42) + F(4, 1));                      // absent stat metadata: name ""
  const std::string plane = S(3, S(4, F(1, 1) + stats)) + EventMeta(1, "e") +
                            StatMeta(1, "s") + StatMeta(2, "gemm") + StatMeta(-1, "minus one");
  const Result r = Decode(Space(plane));
  ExpectLog(r.log, {
      "plane 0 id=0  events_md=1 stats_md=3",
      "line 0 id=0 did=0 | ts=0 dur=0",
      "event e| id=1 off=0 dur=0",
      "stat s double 0.250000",
      "stat s uint64 18446744073709551615",
      "stat s int64 -9223372036854775808",
      "stat s str h\xc3\xa9",
      std::string("stat s bytes \xff\x00", 15),
      "stat s ref gemm",
      "stat s ref minus one",
      "stat s ref ",
      "stat s compressed \x1f\x8b not inflated",
      "stat s none ",
      "stat  int64 1",
      "end event",
      "end line dur=0 did=0 ",
      "end plane",
  });
}

TEST(XSpaceDecoder, OneofsAndScalarsKeepTheLastValue) {
  const std::string events =
      S(4, F(1, 1) + F(2, 5) + F(5, 3)) +           // offset then num_occurrences: aggregate
      S(4, F(1, 1) + F(5, 3) + F(2, 5)) +           // num_occurrences then offset: timed
      S(4, F(1, 1) + F(5, 0)) +                     // num_occurrences 0 is still set
      S(4, F(1, 2) + F(1, 1) + F(3, 1) + F(3, 2)) + // metadata_id and duration: last wins
      S(4, F(1, 1) + S(4, F(1, 1) + F(4, 9) + S(5, "last")));  // stat oneof: str wins
  const std::string plane = S(3, F(3, 1) + F(3, 2) + events) + EventMeta(1, "a") +
                            EventMeta(2, "b") + StatMeta(1, "s");
  const Result r = Decode(Space(plane));
  ExpectLog(r.log, {
      "plane 0 id=0  events_md=2 stats_md=1",
      "line 0 id=0 did=0 | ts=2 dur=0",
      "event a| id=1 n=3 dur=0", "end event",
      "event a| id=1 off=5 dur=0", "end event",
      "event a| id=1 n=0 dur=0", "end event",
      "event a| id=1 off=0 dur=2", "end event",
      "event a| id=1 off=0 dur=0", "stat s str last", "end event",
      "end line dur=0 did=0 ",
      "end plane",
  });
  EXPECT_EQ(r.counts.events, 3u);
  EXPECT_EQ(r.counts.aggregates, 2u);
}

TEST(XSpaceDecoder, MapEntriesFollowProto3) {
  const std::string plane =
      S(3, S(4, F(1, 1)) + S(4, F(1, 0)) + S(4, F(1, 2)) + S(4, F(1, 3)) + S(4, F(1, 4))) +
      EventMeta(1, "first") + EventMeta(1, "second") +                 // a repeated key: last wins
      S(4, S(2, S(2, "no key"))) +                                      // no key: key 0
      S(4, F(1, 2)) +                                                   // no value: empty
      S(4, F(1, 3) + S(2, S(2, "merged")) + S(2, S(4, "display"))) +   // value twice: merged
      S(4, F(1, 4) + S(2, S(2, "dropped")) + F(9, 1)) +                 // unknown field: no entry
      S(4, F(1, 4) + S(2, S(2, "also dropped")) + F(2, 1));             // value as varint: unknown
  const Result r = Decode(Space(plane));
  ExpectLog(r.log, {
      "plane 0 id=0  events_md=7 stats_md=0",
      "line 0 id=0 did=0 | ts=0 dur=0",
      "event second| id=1 off=0 dur=0", "end event",
      "event no key| id=0 off=0 dur=0", "end event",
      "event | id=2 off=0 dur=0", "end event",
      "event merged|display id=3 off=0 dur=0", "end event",
      "event | id=4 off=0 dur=0", "end event",
      "end line dur=0 did=0 ",
      "end plane",
  });
  EXPECT_EQ(r.counts.unknown_fields, 2u);  // each dropped entry is one unknown field
}

TEST(XSpaceDecoder, UnknownIdsGiveTheUnknownRecords) {
  struct Probe : NullVisitor {
    uint32_t event_ordinal = 0, stat_ordinal = 0;
    void OnEvent(const Line&, const Event& e) { event_ordinal = e.metadata->ordinal; }
    void OnEventStat(const Event&, const Stat& s) { stat_ordinal = s.metadata->ordinal; }
  } probe;
  const std::string bytes = Space(S(3, S(4, F(1, 8) + S(4, F(1, 9)))) + EventMeta(1, "x"));
  XSpaceDecoder<Probe> d(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), probe);
  d.Decode();
  EXPECT_EQ(probe.event_ordinal, kUnknownOrdinal);
  EXPECT_EQ(probe.stat_ordinal, kUnknownOrdinal);
}

TEST(XSpaceDecoder, MetadataStatsAreInheritedUnlessTheEventHasTheirId) {
  const std::string md_stats = S(5, F(1, 1) + F(4, 100)) + S(5, F(1, 2) + F(7, 3)) +
                               S(5, F(1, 1) + F(4, 101));  // repeated in the metadata: both
  const std::string plane =
      S(3, S(4, F(1, 1) + S(4, F(1, 2) + S(5, "own"))) + S(4, F(1, 1))) +
      EventMeta(1, "op", md_stats + F(6, 5) + S(6, V(6) + V(7))) + StatMeta(1, "a") +
      StatMeta(2, "b") + StatMeta(3, "c");
  const Result r = Decode(Space(plane));
  ExpectLog(r.log, {
      "plane 0 id=0  events_md=1 stats_md=3",
      "line 0 id=0 did=0 | ts=0 dur=0",
      "event op| id=1 off=0 dur=0", "stat b str own", "istat a int64 100", "istat a int64 101",
      "end event",
      "event op| id=1 off=0 dur=0", "istat a int64 100", "istat b ref c", "istat a int64 101",
      "end event",
      "end line dur=0 did=0 ",
      "end plane",
  });
  struct Children : NullVisitor {
    std::vector<int64_t> ids;
    void BeginPlane(const Plane&, const MetadataIndex& index) {
      const EventMetadata& m = index.event(1);
      ids.assign(index.children_of(m), index.children_of(m) + m.child_count);
    }
  } children;
  const std::string bytes = Space(plane);
  XSpaceDecoder<Children> d(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), children);
  d.Decode();
  EXPECT_EQ(children.ids.size(), 3u);
  EXPECT_EQ(children.ids[2], 7);
}

TEST(XSpaceDecoder, ManyOwnStatsOverrideManyInherited) {
  std::string own, inherited;
  for (int i = 0; i < 40; ++i) {
    if (i % 2 == 0) own += S(4, F(1, static_cast<uint64_t>(i)) + F(4, 1));
    inherited += S(5, F(1, static_cast<uint64_t>(i)) + F(4, 2));
  }
  struct Count : NullVisitor {
    int own = 0, inherited = 0;
    void OnEventStat(const Event&, const Stat& s) { (s.inherited ? inherited : own) += 1; }
  } count;
  const std::string bytes = Space(S(3, S(4, F(1, 1) + own)) + EventMeta(1, "x", inherited));
  XSpaceDecoder<Count> d(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), count);
  d.Decode();
  EXPECT_EQ(count.own, 20);
  EXPECT_EQ(count.inherited, 20);
}

TEST(XSpaceDecoder, PlaneStatsSpaceStringsAndUnknownFields) {
  const std::string plane = S(2, "Task Environment") + S(6, F(1, 1) + F(3, 17)) +
                            StatMeta(1, "profile_start_time") + F(7, 1) +  // unknown in plane
                            S(3, S(4, F(1, 1) + F(6, 2) + S(4, F(1, 1) + F(9, 3))) + F(12, 1)) +
                            S(1, "x");  // known number, other wire type: unknown
  const std::string bytes = S(4, "vm") + S(1, plane) + S(2, "an error") + S(3, "a warning") +
                            F(5, 1) + S(1, "");
  const Result r = Decode(bytes);
  ExpectLog(r.log, {
      "host vm",
      "plane 0 id=0 Task Environment events_md=0 stats_md=1",
      "pstat profile_start_time uint64 17",
      "line 0 id=0 did=0 | ts=0 dur=0",
      "event | id=1 off=0 dur=0", "stat profile_start_time none ", "end event",
      "end line dur=0 did=0 ",
      "end plane",
      "error an error",
      "warning a warning",
      "plane 1 id=0  events_md=0 stats_md=0",
      "end plane",
  });
  // plane: field 7 and field 1 as bytes; line: 12; event: 6; stat: 9; space: 5.
  EXPECT_EQ(r.counts.unknown_fields, 6u);
  EXPECT_EQ(r.counts.planes, 2u);
}

TEST(XSpaceDecoder, BadInputThrowsWithTheByteOffset) {
  // A plane whose length runs past the end.
  EXPECT_THROW_WITH(Decode(std::string("\x0a\x05\x12\x01", 4)), TraceFormatError,
                    "byte offset 1: length 5 runs past the end");
  // A line name that is not UTF-8 (offset of its length prefix).
  EXPECT_THROW_WITH(Decode(Space(S(3, S(2, "\xff")))), TraceFormatError,
                    "byte offset 5: string is not valid UTF-8");
  // Invalid UTF-8 in an entry dropped as unknown still fails (protobuf parses its value).
  EXPECT_THROW_WITH(Decode(Space(S(5, F(1, 1) + S(2, S(2, "\xc3")) + F(9, 1)))), TraceFormatError,
                    "not valid UTF-8");
  // ... and in a str_value stat.
  EXPECT_THROW_WITH(Decode(Space(S(6, S(5, "\xed\xa0\x80")))), TraceFormatError, "not valid UTF-8");
  // Field number 0; wire type 6; a truncated fixed64 double.
  EXPECT_THROW_WITH(Decode(std::string("\x00\x01", 2)), TraceFormatError, "invalid field number 0");
  EXPECT_THROW_WITH(Decode(std::string("\x0e", 1)), TraceFormatError, "invalid wire type 6");
  EXPECT_THROW_WITH(Decode(Space(S(6, std::string("\x11\x00\x00", 3)))), TraceFormatError,
                    "truncated fixed64");
  // A truncated varint inside an event.
  EXPECT_THROW_WITH(Decode(Space(S(3, S(4, std::string("\x10\x80", 2))))), TraceFormatError,
                    "truncated varint");
}

TEST(IdMap, DenseAndHashedKeysLastWins) {
  IdMap dense;
  dense.Build({{1, 10}, {2, 20}, {1, 11}});
  EXPECT_EQ(dense.Find(1), 11u);
  EXPECT_EQ(dense.Find(2), 20u);
  EXPECT_EQ(dense.Find(0), IdMap::kMissing);
  EXPECT_EQ(dense.Find(-1), IdMap::kMissing);
  EXPECT_EQ(dense.Find(1 << 20), IdMap::kMissing);
  IdMap hashed;
  std::vector<std::pair<int64_t, uint32_t>> entries;
  for (uint32_t i = 0; i < 1000; ++i) entries.emplace_back(int64_t{-7} * i * 1000003, i);
  entries.emplace_back(INT64_MIN, 5000);
  entries.emplace_back(0, 6000);  // replaces key 0 (i = 0)
  hashed.Build(entries);
  for (uint32_t i = 1; i < 1000; ++i) EXPECT_EQ(hashed.Find(int64_t{-7} * i * 1000003), i);
  EXPECT_EQ(hashed.Find(0), 6000u);
  EXPECT_EQ(hashed.Find(INT64_MIN), 5000u);
  EXPECT_EQ(hashed.Find(INT64_MAX), IdMap::kMissing);
  IdMap empty;
  empty.Build({});
  EXPECT_EQ(empty.Find(0), IdMap::kMissing);
}
