// TensorBoard event files: the TFRecord reader (framing, both CRCs, truncated tails, absurd
// lengths, strict and skipping modes), the Event decoder (where RunMetadata lives, protobuf's
// oneof / merge / unknown-field rules) and the whole-file scan, on hand-built records.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "codec/crc32c.h"
#include "core/error.h"
#include "importers/tfevents/event_decoder.h"
#include "importers/tfevents/event_file_scan.h"
#include "importers/tfevents/record_reader.h"
#include "unit_test.h"

using tracecore::TraceFormatError;
using namespace tracecore::tfevents;

namespace {

// ---- protobuf wire encoding ----------------------------------------------------------------
std::string Varint(uint64_t v) {
  std::string s;
  while (v >= 0x80) {
    s.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  s.push_back(static_cast<char>(v));
  return s;
}
std::string Key(uint32_t field, uint32_t wire_type) {
  return Varint((uint64_t{field} << 3) | wire_type);
}
std::string Bytes(uint32_t field, const std::string& payload) {
  return Key(field, 2) + Varint(payload.size()) + payload;
}
std::string VarintField(uint32_t field, uint64_t v) { return Key(field, 0) + Varint(v); }
std::string Double(uint32_t field, double d) {
  std::string s = Key(field, 1);
  char b[8];
  std::memcpy(b, &d, 8);
  return s + std::string(b, 8);
}
std::string Float(uint32_t field, float f) {
  std::string s = Key(field, 5);
  char b[4];
  std::memcpy(b, &f, 4);
  return s + std::string(b, 4);
}

// ---- messages --------------------------------------------------------------------------------
std::string Header(double wall_time, int64_t step) {
  return Double(1, wall_time) + VarintField(2, static_cast<uint64_t>(step));
}
std::string FileVersionEvent() { return Header(1.5, 0) + Bytes(3, "brain.Event:2"); }
std::string Tagged(const std::string& tag, const std::string& run_metadata) {
  return Bytes(8, Bytes(1, tag) + Bytes(2, run_metadata));
}
std::string PluginMeta(const std::string& plugin) { return Bytes(9, Bytes(1, Bytes(1, plugin))); }
std::string TensorValue(const std::string& tag, const std::string& plugin,
                        const std::vector<std::string>& string_vals) {
  std::string tensor = VarintField(1, 7);  // DT_STRING
  for (const std::string& s : string_vals) tensor += Bytes(8, s);
  return Bytes(1, Bytes(1, tag) + PluginMeta(plugin) + Bytes(8, tensor));
}
std::string ScalarValue(const std::string& tag, float v) {
  return Bytes(1, Bytes(1, tag) + Float(2, v));
}

// ---- TFRecord framing ------------------------------------------------------------------------
std::string Le(uint64_t v, int bytes) {
  std::string s;
  for (int i = 0; i < bytes; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
  return s;
}
std::string Frame(const std::string& data) {
  const std::string length = Le(data.size(), 8);
  return length + Le(tracecore::MaskCrc32c(tracecore::Crc32c(length.data(), 8)), 4) + data +
         Le(tracecore::MaskCrc32c(tracecore::Crc32c(data.data(), data.size())), 4);
}
// A header announcing `length` with a valid CRC, and no payload.
std::string HeaderOnly(uint64_t length) {
  const std::string l = Le(length, 8);
  return l + Le(tracecore::MaskCrc32c(tracecore::Crc32c(l.data(), 8)), 4);
}

std::vector<Record> ReadAll(const std::string& input, bool strict, RecordReader* out = nullptr) {
  RecordReaderOptions options;
  options.strict = strict;
  RecordReader reader(input, options);
  std::vector<Record> records;
  Record r;
  while (reader.Next(&r)) records.push_back(r);
  if (out != nullptr) *out = reader;
  return records;
}

uint64_t OffsetOf(const std::string& input, const Record& r) {
  return static_cast<uint64_t>(r.data.data() - input.data());
}

// The error's byte offset, or ~0 when no TraceFormatError was thrown.
template <class F>
uint64_t ErrorOffset(F&& f, std::string* what = nullptr) {
  try {
    f();
  } catch (const TraceFormatError& e) {
    if (what != nullptr) *what = e.what();
    return e.where == TraceFormatError::Where::kBinary ? e.offset : ~uint64_t{0} - 1;
  }
  return ~uint64_t{0};
}

}  // namespace

// ---- RecordReader ----------------------------------------------------------------------------

TEST(RecordReader, GoodRecordsAreViewsIntoTheInput) {
  const std::string a = "first", c(1000, 'x');
  const std::string input = Frame(a) + Frame("") + Frame(c);
  RecordReader reader("");
  const std::vector<Record> records = ReadAll(input, true, &reader);
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].offset, 0u);
  EXPECT_EQ(records[0].data, a);
  EXPECT_EQ(OffsetOf(input, records[0]), 12u);
  EXPECT_EQ(records[1].offset, 21u);
  EXPECT_EQ(records[1].data.size(), 0u);
  EXPECT_EQ(records[2].offset, 37u);
  EXPECT_EQ(records[2].data, c);
  EXPECT_EQ(OffsetOf(input, records[2]), 49u);
  EXPECT_EQ(reader.records(), 3u);
  EXPECT_FALSE(reader.truncated_tail());
  EXPECT_EQ(reader.position(), input.size());
}

TEST(RecordReader, EmptyInputHasNoRecordsAndNoTail) {
  RecordReader reader("");
  EXPECT_EQ(ReadAll("", true, &reader).size(), 0u);
  EXPECT_FALSE(reader.truncated_tail());
}

TEST(RecordReader, LengthCrcMismatch) {
  const std::string good = Frame("one");
  for (size_t at = 0; at < 12; ++at) {  // any byte of the length or of its CRC
    std::string input = good + Frame("two") + Frame("three");
    input[good.size() + at] ^= 0x20;
    std::string what;
    EXPECT_EQ(ErrorOffset([&] { ReadAll(input, true); }, &what), good.size());
    EXPECT_TRUE(what.find("record length CRC mismatch") != std::string::npos);
    // Skipping: the damaged record goes, the reader finds the next one.
    RecordReader reader("");
    const std::vector<Record> records = ReadAll(input, false, &reader);
    ASSERT_EQ(records.size(), 2u);
    EXPECT_EQ(records[0].data, "one");
    EXPECT_EQ(records[1].data, "three");
    EXPECT_EQ(reader.skipped_records(), 1u);
    EXPECT_EQ(reader.skipped_bytes(), 19u);
    ASSERT_EQ(reader.skipped().size(), 1u);
    EXPECT_EQ(reader.skipped()[0].offset, good.size());
    EXPECT_TRUE(reader.skipped()[0].problem == RecordProblem::kLengthCrc);
  }
}

TEST(RecordReader, DataCrcMismatch) {
  const std::string first = Frame("one");
  for (size_t at : {12u, 14u, 17u, 18u}) {  // payload bytes, then the stored CRC
    std::string input = first + Frame("three") + Frame("four");
    input[first.size() + at] ^= 0x01;
    std::string what;
    EXPECT_EQ(ErrorOffset([&] { ReadAll(input, true); }, &what), first.size());
    EXPECT_TRUE(what.find("record data CRC mismatch: the 5-byte payload at byte 31") !=
                std::string::npos);
    RecordReader reader("");
    const std::vector<Record> records = ReadAll(input, false, &reader);
    ASSERT_EQ(records.size(), 2u);
    EXPECT_EQ(records[1].data, "four");
    EXPECT_EQ(reader.skipped_bytes(), 21u);
    EXPECT_TRUE(reader.skipped()[0].problem == RecordProblem::kDataCrc);
  }
}

TEST(RecordReader, TruncatedTailIsReportedNotThrown) {
  const std::string head = Frame("one") + Frame("two");
  const std::string last = Frame("the last record");
  for (size_t cut = 1; cut < last.size(); ++cut) {
    const std::string input = head + last.substr(0, cut);
    RecordReader reader("");
    const std::vector<Record> records = ReadAll(input, true, &reader);
    ASSERT_EQ(records.size(), 2u);
    EXPECT_TRUE(reader.truncated_tail());
    EXPECT_EQ(reader.truncated_tail_offset(), head.size());
    const std::string message = reader.TruncatedTailMessage();
    if (cut < 12) {
      EXPECT_TRUE(message.find("a record header needs 12") != std::string::npos);
    } else {
      EXPECT_TRUE(message.find("of the 31 bytes of a record with a 15-byte payload") !=
                  std::string::npos);
    }
  }
}

TEST(RecordReader, AbsurdLength) {
  const std::string first = Frame("one");
  const std::string input = first + HeaderOnly(uint64_t{1} << 40) + Frame("two");
  std::string what;
  EXPECT_EQ(ErrorOffset([&] { ReadAll(input, true); }, &what), first.size());
  EXPECT_TRUE(what.find("absurd record length 1099511627776") != std::string::npos);
  RecordReader reader("");
  const std::vector<Record> records = ReadAll(input, false, &reader);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[1].data, "two");
  EXPECT_TRUE(reader.skipped()[0].problem == RecordProblem::kAbsurdLength);
  // A plausible length with a valid CRC that runs past the end is a record being written.
  RecordReader tail("");
  EXPECT_EQ(ReadAll(first + HeaderOnly(4096), true, &tail).size(), 1u);
  EXPECT_TRUE(tail.truncated_tail());
}

TEST(RecordReader, GarbageUntilTheEndIsOneSkippedStretch) {
  std::string input = Frame("one") + std::string(100, '\x5a');
  std::string what;
  EXPECT_EQ(ErrorOffset([&] { ReadAll(input, true); }, &what), 19u);
  RecordReader reader("");
  EXPECT_EQ(ReadAll(input, false, &reader).size(), 1u);
  EXPECT_EQ(reader.skipped_bytes(), 100u);
  EXPECT_FALSE(reader.truncated_tail());
}

// ---- EventDecoder ----------------------------------------------------------------------------

namespace {

struct Decoded {
  std::vector<FoundRunMetadata> found;
  EventContent content;
};

// Frames each event, scans the file in strict mode.
EventFileScan ScanEvents(const std::vector<std::string>& events, std::string* file) {
  file->clear();
  for (const std::string& e : events) *file += Frame(e);
  return ScanEventFile(*file);
}

std::string At(const std::string& file, const FoundRunMetadata& f) {
  return file.substr(f.offset, f.length);
}

}  // namespace

TEST(EventDecoder, TaggedRunMetadata) {
  std::string file;
  const std::string rm1 = Bytes(1, Bytes(1, Bytes(1, "/cpu:0"))), rm2 = "\x0a\x00";
  const EventFileScan scan =
      ScanEvents({FileVersionEvent(), Header(100.25, 0) + Tagged("step_0", rm1),
                  Header(101.5, 2) + Tagged("step_2", rm2), Header(102.0, 2) + Float(7, 0)},
                 &file);
  ASSERT_EQ(scan.run_metadata.size(), 2u);
  const FoundRunMetadata& a = scan.run_metadata[0];
  EXPECT_EQ(a.tag, "step_0");
  EXPECT_EQ(a.step, 0);
  EXPECT_EQ(a.wall_time, 100.25);
  EXPECT_EQ(At(file, a), rm1);
  EXPECT_TRUE(a.source == RunMetadataSource::kTaggedRunMetadata);
  EXPECT_EQ(a.record_offset, Frame(FileVersionEvent()).size());
  EXPECT_EQ(scan.run_metadata[1].tag, "step_2");
  EXPECT_EQ(scan.run_metadata[1].step, 2);
  EXPECT_EQ(At(file, scan.run_metadata[1]), rm2);
  EXPECT_EQ(scan.records, 4u);
  EXPECT_EQ(scan.content.file_version, 1u);
  EXPECT_EQ(scan.content.file_version_string, "brain.Event:2");
  EXPECT_EQ(scan.content.tagged_run_metadata, 2u);
  EXPECT_EQ(scan.content.no_what, 1u);  // field 7 with a wire type session_log does not have
  EXPECT_EQ(scan.content.min_step, 0);
  EXPECT_EQ(scan.content.max_step, 2);
  EXPECT_EQ(scan.content.max_wall_time, 102.0);
  EXPECT_TRUE(scan.warnings.empty());
}

TEST(EventDecoder, SummaryPluginsAndEmptyPayloads) {
  std::string file;
  const std::string rm = Bytes(4, Bytes(1, ""));  // function_graphs
  const std::string summary =
      TensorValue("conv_step", "graph_run_metadata_graph", {rm, "ignored second"}) +
      ScalarValue("loss", 0.5f) + TensorValue("keras", "graph_run_metadata", {""}) +
      TensorValue("epoch_loss", "scalars", {}) + TensorValue("nothing", "graph_run_metadata", {});
  const EventFileScan scan =
      ScanEvents({FileVersionEvent(), Header(5.0, 7) + Bytes(5, summary)}, &file);
  ASSERT_EQ(scan.run_metadata.size(), 2u);
  EXPECT_EQ(scan.run_metadata[0].tag, "conv_step");
  EXPECT_EQ(scan.run_metadata[0].step, 7);
  EXPECT_EQ(At(file, scan.run_metadata[0]), rm);
  EXPECT_TRUE(scan.run_metadata[0].source == RunMetadataSource::kGraphRunMetadataGraph);
  EXPECT_EQ(scan.run_metadata[1].tag, "keras");
  EXPECT_EQ(scan.run_metadata[1].length, 0u);
  EXPECT_TRUE(scan.run_metadata[1].source == RunMetadataSource::kGraphRunMetadata);
  const EventContent& c = scan.content;
  EXPECT_EQ(c.summary, 1u);
  EXPECT_EQ(c.summary_values, 5u);
  EXPECT_EQ(c.simple_values, 1u);
  ASSERT_EQ(c.plugins.size(), 3u);
  EXPECT_EQ(c.plugins[0].name, "graph_run_metadata_graph");
  EXPECT_EQ(c.plugins[1].name, "graph_run_metadata");
  EXPECT_EQ(c.plugins[1].values, 2u);
  EXPECT_EQ(c.plugins[2].name, "scalars");
  EXPECT_EQ(c.run_metadata_without_payload, 1u);
  ASSERT_EQ(scan.warnings.size(), 1u);
  EXPECT_TRUE(scan.warnings[0].what.find("without a string_val") != std::string::npos);
}

TEST(EventDecoder, ProtobufReadingRules) {
  std::string file;
  const std::vector<std::string> events = {
      FileVersionEvent(),
      // The oneof's last member wins: a summary after tagged_run_metadata drops it ...
      Header(1, 1) + Tagged("dropped", "x") + Bytes(5, ScalarValue("s", 1)),
      // ... and back: the summary before the tagged_run_metadata is gone.
      Header(1, 2) + Bytes(5, TensorValue("gone", "graph_run_metadata", {"y"})) +
          Tagged("kept", "z"),
      // Occurrences of one message field merge; singular fields keep the last value; the
      // Event's step may come after its payload.
      Bytes(8, Bytes(1, "old") + Bytes(2, "first")) + Bytes(8, Bytes(1, "merged")) +
          VarintField(2, 3) + VarintField(2, static_cast<uint64_t>(-4)),
      // Known numbers with other wire types are unknown fields; unknown fields are skipped.
      Header(1, 5) + VarintField(8, 1) + Key(99, 5) + "abcd" + Bytes(1, "not a double") +
          Tagged("wire", "w"),
      // Inside a value: a tensor after simple_value wins; a simple_value after it drops it.
      Header(1, 6) +
          Bytes(5, Bytes(1, Bytes(1, "v1") + Float(2, 1) + PluginMeta("graph_run_metadata_graph") +
                                Bytes(8, Bytes(8, "t1")))),
      Header(1, 7) + Bytes(5, Bytes(1, Bytes(1, "v2") + PluginMeta("graph_run_metadata_graph") +
                                           Bytes(8, Bytes(8, "t2")) + Float(2, 1))),
  };
  const EventFileScan scan = ScanEvents(events, &file);
  ASSERT_EQ(scan.run_metadata.size(), 4u);
  EXPECT_EQ(scan.run_metadata[0].tag, "kept");
  EXPECT_EQ(At(file, scan.run_metadata[0]), "z");
  EXPECT_EQ(scan.run_metadata[1].tag, "merged");
  EXPECT_EQ(At(file, scan.run_metadata[1]), "first");
  EXPECT_EQ(scan.run_metadata[1].step, -4);
  EXPECT_EQ(scan.run_metadata[2].tag, "wire");
  EXPECT_EQ(scan.run_metadata[2].wall_time, 1.0);
  EXPECT_EQ(scan.run_metadata[3].tag, "v1");
  EXPECT_EQ(At(file, scan.run_metadata[3]), "t1");
  EXPECT_EQ(scan.content.summary, 3u);
  EXPECT_EQ(scan.content.tagged_run_metadata, 3u);
  EXPECT_EQ(scan.content.simple_values, 1u);
}

TEST(EventDecoder, TaggedWithoutPayloadIsAnEmptyRunMetadata) {
  std::string file;
  const EventFileScan scan = ScanEvents({FileVersionEvent(), Bytes(8, Bytes(1, "t"))}, &file);
  ASSERT_EQ(scan.run_metadata.size(), 1u);
  EXPECT_EQ(scan.run_metadata[0].length, 0u);
}

TEST(EventDecoder, BadEventsFailWithFileOffsets) {
  const std::string first = Frame(FileVersionEvent());
  const uint64_t payload = first.size() + 12;
  struct Case {
    std::string event;
    uint64_t at;  // within the payload
    const char* what;
  };
  const std::vector<Case> cases = {
      {Header(1, 1) + Bytes(8, Bytes(1, "\xff\xfe")), 14,
       "TaggedRunMetadata.tag is not valid UTF-8"},
      {Header(1, 1) + Key(0, 0) + "x", 11, "invalid field number 0"},
      {Header(1, 1) + Key(8, 2) + Varint(50) + "short", 12, "runs past the end"},
      {Key(1, 1) + "abc", 1, "truncated fixed64"},
      {Bytes(5, Bytes(1, Key(9, 2) + Varint(5) + Bytes(1, Bytes(1, "\x80")))), 9,
       "plugin_name is not valid UTF-8"},
      {Bytes(6, Key(1, 7)), 3, "invalid wire type 7"},
      {Header(1, 1) + Key(8, 3), 12, "group (field 8) is not closed"},
  };
  for (const Case& c : cases) {
    const std::string file = first + Frame(c.event) + Frame(FileVersionEvent());
    std::string what;
    EXPECT_EQ(ErrorOffset([&] { ScanEventFile(file); }, &what), payload + c.at);
    EXPECT_TRUE(what.find(c.what) != std::string::npos);
    EXPECT_TRUE(what.find("the record at byte " + std::to_string(first.size()) +
                          " is not a tensorflow.Event") != std::string::npos);
    // Skipping: the bad Event is counted and named, the others are read.
    ScanOptions lenient;
    lenient.strict = false;
    const EventFileScan scan = ScanEventFile(file, lenient);
    EXPECT_EQ(scan.records, 2u);
    EXPECT_EQ(scan.skipped_records, 1u);
    EXPECT_EQ(scan.skipped_bytes, c.event.size() + 16);
    ASSERT_EQ(scan.warnings.size(), 1u);
    EXPECT_EQ(scan.warnings[0].offset, payload + c.at);
  }
}

// ---- ScanEventFile ---------------------------------------------------------------------------

TEST(EventFileScan, TruncatedTailIsAWarning) {
  const std::string head = Frame(FileVersionEvent()) + Frame(Tagged("a", "rm"));
  const std::string last = Frame(Tagged("b", "rm"));
  const EventFileScan scan = ScanEventFile(head + last.substr(0, last.size() - 1));
  EXPECT_EQ(scan.records, 2u);
  EXPECT_EQ(scan.run_metadata.size(), 1u);
  EXPECT_TRUE(scan.truncated_tail);
  EXPECT_EQ(scan.truncated_tail_offset, head.size());
  ASSERT_EQ(scan.warnings.size(), 1u);
  EXPECT_EQ(scan.warnings[0].offset, head.size());
  EXPECT_TRUE(scan.warnings[0].what.find("truncated record") != std::string::npos);
}

TEST(EventFileScan, NonEventFilesAreErrors) {
  std::string what;
  EXPECT_EQ(ErrorOffset([&] { ScanEventFile(""); }, &what), 0u);
  EXPECT_TRUE(what.find("empty input") != std::string::npos);
  EXPECT_EQ(ErrorOffset([&] { ScanEventFile("short"); }, &what), 0u);
  EXPECT_TRUE(what.find("no complete record") != std::string::npos);
  const std::string text = "node_stats { node_name: \"MatMul\" all_start_micros: 1 }\n";
  EXPECT_EQ(ErrorOffset([&] { ScanEventFile(text); }, &what), 0u);
  EXPECT_TRUE(what.find("record length CRC mismatch") != std::string::npos);
  ScanOptions lenient;
  lenient.strict = false;
  EXPECT_EQ(ErrorOffset([&] { ScanEventFile(text, lenient); }, &what), 0u);
  EXPECT_TRUE(what.find("no intact record") != std::string::npos);
  // A cut first record: nothing complete.
  const std::string one = Frame(FileVersionEvent());
  EXPECT_EQ(ErrorOffset([&] { ScanEventFile(one.substr(0, 20)); }, &what), 0u);
  EXPECT_TRUE(what.find("no complete record") != std::string::npos);
}

TEST(EventFileScan, RecordsWithoutFileVersionWarn) {
  const EventFileScan scan = ScanEventFile(Frame(Tagged("t", "")));
  ASSERT_EQ(scan.warnings.size(), 1u);
  EXPECT_TRUE(scan.warnings[0].what.find("no file_version") != std::string::npos);
}

TEST(RecordReader, SkippingPastManyFalseHeadersEnds) {
  // Valid length CRCs announcing payloads whose CRCs fail, packed one after the other behind a
  // damaged header: skipping must look at each without rescanning the rest quadratically.
  std::string body;
  for (int i = 0; i < 2000; ++i) body += HeaderOnly(20000);
  const std::string input =
      Frame("one") + "garbage!" + body + std::string(20000, 'z') + Frame("end");
  RecordReader reader("");
  const std::vector<Record> records = ReadAll(input, false, &reader);
  ASSERT_GE(records.size(), 1u);
  EXPECT_EQ(records[0].data, "one");
  EXPECT_GE(reader.skipped_records(), 1u);
  EXPECT_EQ(reader.skipped_bytes() + 19 * records.size(), input.size());
}
