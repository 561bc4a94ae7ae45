// The XSpace importer: a hand-built XSpace in, exact devices and events rows out (one devices
// row per XLine, one events row per timed XEvent; aggregate events skipped), and its errors.
#include <memory>
#include <string>

#include "core/error.h"
#include "importers/xspace/xspace_importer.h"
#include "io/mapped_file.h"
#include "open/format_registry.h"
#include "proto_writer.h"
#include "tables/trace_kind.h"
#include "trace_fixture.h"
#include "unit_test.h"

using namespace tracecore;               // NOLINT
using namespace tracecore::unit;         // NOLINT
using namespace tracecore::unit::proto;  // NOLINT

namespace {

// /host:CPU with line "tf_Compute" (id 3, at 1000 ns): two timed events and an aggregate one;
// /device:GPU:0 with a stream line (at 5000 ns) and an "XLA Ops" line.
std::string Profile() {
  const std::string group = S(4, F(1, 7) + F(4, 42));  // stat group_id (metadata 7) = 42
  const std::string host_line = F(1, 3) + S(2, "tf_Compute") + F(3, 1000) +
                                // scope/a:MatMul at 2500 ps for 4000 ps, in step 42
                                S(4, F(1, 1) + F(2, 2500) + F(3, 4000) + group) +
                                // Iterator::Root at 9999 ps, zero length
                                S(4, F(1, 2) + F(2, 9999)) +
                                // an aggregate (num_occurrences 3): not on the timeline
                                S(4, F(1, 1) + F(5, 3) + F(3, 100000));
  const std::string host = F(1, 1) + S(2, "/host:CPU") + S(3, host_line) +
                           EventMeta(1, "scope/a:MatMul", S(4, "MatMul")) +
                           EventMeta(2, "Iterator::Root") + StatMeta(7, "group_id");
  const std::string stream = F(1, 11) + S(2, "Stream #11") + F(3, 5000) +
                             S(4, F(1, 1) + F(2, 1500) + F(3, 1000000));
  const std::string xla = F(1, 12) + S(2, "XLA Ops") + F(3, 5000) + S(4, F(1, 2) + F(2, 0) + F(3, 999));
  const std::string gpu = F(1, 2) + S(2, "/device:GPU:0") + S(3, stream) + S(3, xla) +
                          EventMeta(1, "fusion.3") + EventMeta(2, "convolution.1");
  return S(1, host) + S(1, gpu);
}

std::shared_ptr<TraceTables> Read(const std::string& bytes) {
  return ReadXSpace(*MappedFile::FromBuffer(bytes));
}

}  // namespace

TEST(XSpaceImporter, OneDeviceRowPerLineOneEventRowPerTimedEvent) {
  const auto t = Read(Profile());
  EXPECT_TRUE(t->kind == TraceKind::kXSpace);
  const DeviceTable& d = t->devices;
  ASSERT_EQ(d.size(), 3u);
  EXPECT_COLUMN(Names(t->pool, d.device), {"/host:CPU", "/device:GPU:0", "/device:GPU:0"});
  EXPECT_COLUMN(Names(t->pool, d.line), {"tf_Compute", "Stream #11", "XLA Ops"});
  EXPECT_COLUMN(d.line_id, {3, 11, 12});
  EXPECT_EQ(d.kind_code[0], static_cast<uint8_t>(DeviceKind::kHostThread));
  EXPECT_EQ(d.kind_code[1], static_cast<uint8_t>(DeviceKind::kStream));
  EXPECT_EQ(d.kind_code[2], static_cast<uint8_t>(DeviceKind::kXlaOps));
  EXPECT_COLUMN(d.n_events, {2, 1, 1});

  const EventTable& e = t->events;
  ASSERT_EQ(e.size(), 4u);  // the aggregate event is skipped
  EXPECT_COLUMN(Names(t->pool, e.node_name),
                {"scope/a:MatMul", "Iterator::Root", "fusion.3", "convolution.1"});
  EXPECT_COLUMN(e.device_index, {0, 0, 1, 2});
  // start = floor((timestamp_ns * 1000 + offset_ps) / 1000), end with + duration_ps:
  // 1000 ns + 2500 ps = 1002.5 -> 1002; + 4000 ps = 1006.5 -> 1006; 1000 + 9999 ps -> 1009;
  // 5000 ns + 1500 ps -> 5001, + 1e6 ps -> 6001; 5000 + 0 + 999 ps -> 5000.
  EXPECT_COLUMN(e.start_ns, {1002, 1009, 5001, 5000});
  EXPECT_COLUMN(e.end_ns, {1006, 1009, 6001, 5000});
  // op: the OpType of "scope/a:MatMul"; none for the others (no hlo stats, no ':OpType').
  EXPECT_EQ(std::string(t->pool.Get(e.op[0])), "MatMul");
  EXPECT_EQ(e.op_valid[0], 1);
  EXPECT_EQ(e.op_valid[1], 0);
  // step: group_id where present.
  EXPECT_EQ(e.step_id_valid[0], 1);
  EXPECT_EQ(e.step_id[0], 42);
  EXPECT_EQ(e.step_id_valid[1], 0);
}

TEST(XSpaceImporter, TheRegistryDetectsItByStructure) {
  const std::string bytes = Profile();
  EXPECT_TRUE(LooksLikeXSpace(bytes));
  EXPECT_TRUE(DetectFormat(bytes) == Format::kXSpace);
  OpenOptions options;
  const auto t = ParseTrace(*MappedFile::FromBuffer(bytes), options);
  EXPECT_EQ(t->events.size(), 4u);
}

TEST(XSpaceImporter, TruncatedInputIsAnErrorWithItsOffset) {
  const std::string bytes = Profile();
  EXPECT_THROW_WITH(Read(bytes.substr(0, bytes.size() - 3)), TraceFormatError, "byte offset");
}

TEST(XSpaceImporter, AggregateEventsHaveTheirOwnTable) {
  const auto t = Read(Profile());
  const AggregateEventTable& a = t->aggregate_events;
  ASSERT_EQ(a.size(), 1u);
  EXPECT_COLUMN(a.device_index, {0});
  EXPECT_COLUMN(Names(t->pool, a.node_name), {"scope/a:MatMul"});
  EXPECT_COLUMN(a.num_occurrences, {3});
  EXPECT_COLUMN(a.duration_ps, {100000});
  EXPECT_EQ(std::string(t->pool.Get(a.op[0])), "MatMul");
}

TEST(XSpaceImporter, EventStatsComeFromASecondPassNumberedAsTheEvents) {
  const std::string bytes = Profile();
  const auto t = Read(bytes);
  EXPECT_EQ(t->event_stats.size(), 0u);  // not built by the open
  const auto s = ReadXSpaceEventStats(*MappedFile::FromBuffer(bytes), t->events.size());
  const EventStatTable& st = s->event_stats;
  ASSERT_EQ(st.size(), 1u);  // the group_id of event 0 (the aggregate's stats are not rows)
  EXPECT_COLUMN(st.event_id, {0});
  EXPECT_COLUMN(Names(s->pool, st.name), {"group_id"});
  EXPECT_COLUMN(Names(s->pool, st.value_kind), {"int64"});
  EXPECT_COLUMN(st.int64_value, {42});
  EXPECT_COLUMN(st.int64_value_valid, {1});
  EXPECT_COLUMN(st.uint64_value_valid, {0});
  EXPECT_COLUMN(st.inherited, {0});
  // Another event count: the source is not the one opened.
  EXPECT_THROW_WITH(ReadXSpaceEventStats(*MappedFile::FromBuffer(bytes), 5), TraceFormatError,
                    "changed since");
}

namespace {
// A /host:CPU plane with an allocation and a deallocation of one address by "mklcpu".
std::string Memory(int64_t dealloc_bytes) {
  auto stat = [](int64_t key, int64_t v) { return S(4, F(1, key) + F(4, static_cast<uint64_t>(v))); };
  auto text = [](int64_t key, const std::string& v) { return S(4, F(1, key) + S(5, v)); };
  const std::string alloc = S(4, F(1, 1) + F(2, 1000) + text(1, "mklcpu") + stat(2, 64) +
                                     stat(3, 64) + stat(4, 0xabc) + text(5, "[2, 8]") + stat(6, 1));
  const std::string free = S(4, F(1, 2) + F(2, 5000) + text(1, "mklcpu") + stat(2, dealloc_bytes) +
                                    stat(3, 0) + stat(4, 0xabc));
  const std::string line = F(1, 1) + S(2, "python") + F(3, 100) + alloc + free;
  return S(1, F(1, 0) + S(2, "/host:CPU") + S(3, line) + EventMeta(1, "MemoryAllocation") +
              EventMeta(2, "MemoryDeallocation") + StatMeta(1, "allocator_name") +
              StatMeta(2, "allocation_bytes") + StatMeta(3, "bytes_allocated") +
              StatMeta(4, "addr") + StatMeta(5, "shape") + StatMeta(6, "data_type"));
}
}  // namespace

TEST(XSpaceImporter, MemoryEventsAreAllocRecordsWithTheirStats) {
  const auto t = Read(Memory(64));
  const AllocRecordTable& r = t->alloc_records;
  ASSERT_EQ(r.size(), 2u);
  EXPECT_COLUMN(r.event_id, {0, 1});
  EXPECT_COLUMN(Names(t->pool, r.allocator), {"mklcpu", "mklcpu"});
  EXPECT_COLUMN(r.time_ns, {101, 105});  // 100 ns + 1000 ps, + 5000 ps
  EXPECT_COLUMN(r.bytes, {64, -64});
  EXPECT_COLUMN(r.is_allocation, {1, 0});
  EXPECT_COLUMN(r.heap_allocated, {64, 0});
  EXPECT_COLUMN(r.address, {0xabc, 0xabc});
  EXPECT_COLUMN(r.shape.offsets, {0, 2, 2});
  EXPECT_COLUMN(r.shape.values, {2, 8});
  EXPECT_COLUMN(r.shape_valid, {1, 0});
  EXPECT_COLUMN(Names(t->pool, r.dtype), {"DT_FLOAT", ""});
  EXPECT_COLUMN(r.dtype_valid, {1, 0});
  EXPECT_COLUMN(r.stack_reserved_valid, {0, 0});
  // A deallocation of -2^63 bytes: its negation does not fit the bytes column.
  EXPECT_THROW_WITH(Read(Memory(INT64_MIN)), TraceFormatError, "overflows int64");
}
