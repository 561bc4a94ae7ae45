// The StepStats / RunMetadata importer on the protobuf wire format
// (importers/stepstats/binary): dumps written here field by field (numbers from
// tensorflow/core/framework/step_stats.proto, as binary_parser.cc decodes them), every row
// out; truncated and empty input with the byte offset of the problem.
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "importers/stepstats/binary/binary_parser.h"
#include "trace_fixture.h"
#include "unit_test.h"

using namespace tracecore;        // NOLINT: the importer's types
using namespace tracecore::unit;  // NOLINT: the fixture's readers and column helpers

namespace {

// ---- the wire format: a varint field (V) and a length-delimited one (L) --------------------
std::string Varint(uint64_t v) {
  std::string out;
  for (; v >= 0x80; v >>= 7) out.push_back(static_cast<char>(0x80 | (v & 0x7F)));
  return out + static_cast<char>(v);
}
std::string V(uint32_t field, int64_t v) { return Varint(field << 3) + Varint(static_cast<uint64_t>(v)); }
std::string L(uint32_t field, const std::string& payload) {
  return Varint((field << 3) | 2) + Varint(payload.size()) + payload;
}

std::shared_ptr<TraceTables> ReadBinary(const std::string& bytes) {
  return ReadDump(bytes, Encoding::kBinary);
}

const char* const kGpu = "/job:w/replica:0/task:0/device:GPU:1";
const char* const kMemcpy = "/job:w/replica:0/task:0/device:GPU:1/memcpy";

// DeviceStepStats { device (1), node_stats (2), thread_names (3) { key (1), value (2) } }.
std::string GpuBlock() {
  const std::string alloc_description =  // requested (1), allocated (2), allocator (3), id (4)
      V(1, 0) + V(2, 0) + L(3, "GPU_1_bfc") + V(4, 9);
  const std::string tensor_description =  // dtype (1), shape (2) { dim (2) { size (1) } }, (4)
      V(1, 1) + L(2, L(2, V(1, 4)) + L(2, V(1, 0))) + L(4, alloc_description);
  const std::string output = V(1, 3) + L(3, tensor_description);  // slot (1), description (3)
  const std::string memory =  // allocator (1), total (2), peak (3), live (4), in use (5), records (6)
      L(1, "GPU_1_bfc") + V(2, 256) + V(3, 512) + V(4, 128) + V(5, 2048) +
      L(6, V(1, 51) + V(2, 256)) + L(6, V(1, 54) + V(2, -256));
  const std::string conv =  // name (1), all_start (2), op_start (3), op_end (4), all_end (5) micros
      L(1, "conv") + V(2, 50) + V(3, 1) + V(4, 4) + V(5, 5) + L(6, memory) + L(7, output) +
      L(8, "[GPU_1_bfc 1KB 1KB] conv = Conv2D(x, w)") + V(10, 2);  // label (8), thread (10)
  return L(1, kGpu) + L(2, conv) + L(3, V(1, 2) + L(2, "gpu"));
}
// Its device name after its event.
std::string MemcpyBlock() {
  const std::string copy =  // all_start_nanos (13), all_end_rel_nanos (16)
      L(1, "MEMCPYHtoD") + V(13, 60000) + V(16, 1500);
  return L(2, copy) + L(1, kMemcpy);
}
// StepStats { dev_stats (1) x2 }.
std::string StepStatsDump() { return L(1, GpuBlock()) + L(1, MemcpyBlock()); }

}  // namespace

TEST(StepStatsBinary, DevicesAndEventsOfAStepStats) {
  const auto t = ReadBinary(StepStatsDump());
  EXPECT_TRUE(t->kind == TraceKind::kStepStats);
  EXPECT_TRUE(t->format == Encoding::kBinary);
  EXPECT_EQ(t->unknown_fields, 0u);
  EXPECT_COLUMN(Names(t->pool, t->devices.device), {kGpu, kMemcpy});
  EXPECT_COLUMN(Strings(t->devices.kind), {"executor", "memcpy"});
  EXPECT_COLUMN(t->devices.n_events, {1, 1});
  EXPECT_COLUMN(t->thread_names.thread_id, {2u});
  EXPECT_COLUMN(Strings(t->thread_names.name), {"gpu"});

  const EventTable& e = t->events;
  EXPECT_COLUMN(Names(t->pool, e.node_name), {"conv", "MEMCPYHtoD"});
  EXPECT_COLUMN(Names(t->pool, e.device), {kGpu, kMemcpy});
  // The label's "[allocator ...] " prefix is not part of "name = Op(...)".
  EXPECT_COLUMN(e.op_valid, {1, 0});
  EXPECT_EQ(t->pool.Get(e.op[0]), "Conv2D");
  EXPECT_COLUMN(e.start_ns, {50000, 60000});
  EXPECT_COLUMN(e.end_ns, {55000, 61500});
  EXPECT_COLUMN(e.op_start_ns, {51000, 60000});
  EXPECT_COLUMN(e.op_end_ns, {54000, 60000});
  EXPECT_COLUMN(e.scheduled_ns_valid, {0, 0});
  EXPECT_COLUMN(e.thread_id, {2u, 0u});
}

TEST(StepStatsBinary, TensorsAndMemoryOfAStepStats) {
  const auto t = ReadBinary(StepStatsDump());
  const TensorTable& x = t->tensors;
  EXPECT_COLUMN(x.event_id, {0});
  EXPECT_COLUMN(x.slot, {3});
  EXPECT_COLUMN(Names(t->pool, x.dtype), {"DT_FLOAT"});
  EXPECT_COLUMN(Lists(x.shape), {{4, 0}});
  EXPECT_COLUMN(x.num_elements, {0});  // a dim of 0: no elements, a known count
  EXPECT_COLUMN(x.num_elements_valid, {1});
  EXPECT_COLUMN(Names(t->pool, x.allocator), {"GPU_1_bfc"});
  EXPECT_COLUMN(x.allocation_id, {9});

  EXPECT_COLUMN(t->allocations.total_bytes, {256});
  EXPECT_COLUMN(t->allocations.peak_bytes, {512});
  EXPECT_COLUMN(t->allocations.live_bytes, {128});
  EXPECT_COLUMN(t->allocations.allocator_bytes_in_use, {2048});
  // A negative alloc_bytes is a ten-byte varint (two's complement).
  EXPECT_COLUMN(t->alloc_records.event_id, {0, 0});
  EXPECT_COLUMN(Names(t->pool, t->alloc_records.allocator), {"GPU_1_bfc", "GPU_1_bfc"});
  EXPECT_COLUMN(t->alloc_records.time_ns, {51000, 54000});
  EXPECT_COLUMN(t->alloc_records.bytes, {256, -256});
}

TEST(StepStatsBinary, ARunMetadataIsToldByItsGraphField) {
  // RunMetadata { step_stats (1) { dev_stats (1) {...} }, partition_graphs (3) { node (1) } }.
  const std::string node = L(1, "n") + L(2, "Add") + L(3, "a") + L(3, "b") + L(4, "/device:CPU:0");
  const std::string dump =
      L(1, L(1, L(1, "/device:CPU:0") + L(2, L(1, "n") + V(2, 1) + V(5, 2)))) + L(3, L(1, node));
  const auto t = ReadBinary(dump);
  EXPECT_TRUE(t->kind == TraceKind::kRunMetadata);
  EXPECT_EQ(t->unknown_fields, 0u);
  EXPECT_COLUMN(Names(t->pool, t->devices.device), {"/device:CPU:0"});
  EXPECT_COLUMN(Names(t->pool, t->events.node_name), {"n"});
  EXPECT_COLUMN(t->events.start_ns, {1000});
  EXPECT_COLUMN(t->events.end_ns, {3000});
  EXPECT_EQ(t->graph_count, 1);
  EXPECT_COLUMN(t->graph_nodes.graph_index, {0});
  EXPECT_COLUMN(Names(t->pool, t->graph_nodes.op), {"Add"});
  EXPECT_COLUMN(Strings(t->graph_nodes.inputs.values), {"a", "b"});
}

TEST(StepStatsBinary, TruncatedInputGivesTheByteOffset) {
  // A node_stats (key at byte 2) announcing 20 bytes where its dev_stats holds 3 more: the
  // length at byte 3 runs past the end.
  const std::string cut_message = L(1, Varint((2 << 3) | 2) + Varint(20) + "abc");
  try {
    ReadBinary(cut_message);
    Fail(__FILE__, __LINE__, "no TraceFormatError for a truncated message");
  } catch (const TraceFormatError& e) {
    EXPECT_TRUE(e.where == TraceFormatError::Where::kBinary);
    EXPECT_EQ(e.offset, 3u);
    EXPECT_EQ(std::string(e.what()),
              "byte offset 3: length 20 runs past the end of the enclosing message (3 bytes left)");
  }
  // The dump cut inside its first length prefix (byte 1), or one byte short: the second
  // dev_stats' length (after the first field and its key) then runs past the end.
  const std::string whole = StepStatsDump();
  EXPECT_THROW_WITH(ReadBinary(whole.substr(0, 1) + "\x80"), TraceFormatError,
                    "byte offset 1: truncated varint: input ends inside it");
  const size_t second_length = L(1, GpuBlock()).size() + 1;
  EXPECT_THROW_WITH(ReadBinary(whole.substr(0, whole.size() - 1)), TraceFormatError,
                    "byte offset " + std::to_string(second_length) + ": length " +
                        std::to_string(MemcpyBlock().size()) + " runs past the end");
  EXPECT_THROW_WITH(ReadBinary(""), TraceFormatError, "byte offset 0: empty input");
}

TEST(StepStatsBinary, TheParallelPlanJoinsSmallFields) {
  // 10,000 empty device blocks, then one of 100,000 empty records: two units, not one per
  // field (a unit is 24 bytes, such a field 2).
  std::string dump;
  for (int i = 0; i < 10000; ++i) dump += L(1, "");
  std::string records;
  for (int i = 0; i < 100000; ++i) records += L(2, "");
  dump += L(1, L(1, kGpu) + records);
  std::vector<BinaryUnit> units;
  bool any_device = false;
  const auto* data = reinterpret_cast<const uint8_t*>(dump.data());
  EXPECT_TRUE(PlanBinaryUnits(data, dump.size(), TraceKind::kStepStats, &units, &any_device));
  EXPECT_TRUE(any_device);
  ASSERT_EQ(units.size(), 2u);
  EXPECT_TRUE(units[0].kind == BinaryUnit::kStepStatsField);  // the small blocks, whole fields
  EXPECT_TRUE(units[0].begin == data && units[0].end == data + 20000);
  EXPECT_TRUE(units[1].kind == BinaryUnit::kDeviceStepStats);  // the large one's payload
  EXPECT_TRUE(units[1].end == data + dump.size());
  // Every block and record is read.
  const auto one = ReadBinary(dump);
  EXPECT_EQ(one->devices.size(), 10001u);
  EXPECT_EQ(one->events.size(), 100000u);
}
