// Checks of the room TraceSink reserves for its columns (Reserve / Calibrate in
// sink/trace_sink.cc): the rows are fed straight to a builder, with the input positions
// a parser would report, and the capacities read back.
//
//  1. A dense input (one event and two allocation records per 40 bytes, 5.5x the typical event
//     rate) gets room for its rows plus the margin, measured on its first stretch, without
//     doubling: with the column arena (room for the first stretch until then) and without it
//     (typical room for all of it until then).
//  2. A builder without the arena keeps typical room for the whole input when its part of the
//     input ends before the first measure (a parallel parse's first chunk: the merge appends
//     the other chunks into that room).
//  3. An input too small to measure gets typical room at once and is never re-measured.
//  4. A hostile input whose first stretch is dense and the rest empty is not given room beyond
//     the cap (about 8 bytes of room per input byte over all tables; the dense input of 1.
//     needs 4).
//  5. A sparse start and a dense rest: a later measure gives the tables room before they
//     outgrow it by doubling, and the rows survive the move.
// Exits non-zero on the first failed check.
#include <cstdint>
#include <cstdio>
#include <memory>

#include "sink/trace_sink.h"

#ifdef TRACECORE_FUZZ_TRACE_PC_STUB
// The core was compiled with -fsanitize-coverage=trace-pc for the standalone fuzz driver; this
// program needs no coverage.
extern "C" void __sanitizer_cov_trace_pc() {}
#endif

namespace {

using tracecore::EventFields;
using tracecore::TraceSink;
using tracecore::TraceTables;

int failures = 0;

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "column_room_check: FAILED: %s\n", what);
    ++failures;
  }
}

// A builder over `bytes` of input (allocated, never touched: only its addresses are used),
// with one device block open.
struct Parse {
  Parse(size_t bytes, bool arena, bool text) : input(new char[bytes]), builder(t, arena) {
    builder.Reserve(input.get(), bytes, text);
    device = builder.BeginDevice();
    pos = input.get();
  }
  // Appends `n` events (each with `records` allocation records) whose records end every
  // `stride` bytes, reporting each end to the builder as a parser does.
  void Feed(size_t n, size_t stride, int records) {
    for (size_t i = 0; i < n; ++i) {
      const int64_t id = builder.BeginEvent();
      for (int r = 0; r < records; ++r) {
        bool overflow = false;
        builder.AddAllocRecord(id, id, r + 1, &overflow);
      }
      EventFields f;
      f.all_start_micros = id;
      if (builder.EndEvent(device, f) != nullptr) Check(false, "EndEvent rejected a plain event");
      pos += stride;
      builder.Consumed(pos);
    }
  }
  void Finish() {
    builder.EndDevice(device, tracecore::StringPool::kEmptyId, 0, 0);
    builder.Finish();
  }
  size_t event_room() const { return t.events.start_ns.capacity(); }

  std::unique_ptr<char[]> input;
  TraceTables t;
  TraceSink builder;
  int32_t device;
  const char* pos;
};

size_t RoomBytes(const TraceTables& t) {
  return t.events.event_id.capacity() * 98 + t.tensors.event_id.capacity() * 77 +
         t.tensors.shape.values.capacity() * 8 + t.allocations.event_id.capacity() * 44 +
         t.alloc_records.event_id.capacity() * 28;
}

void DenseInput(bool arena) {
  const size_t stride = 40, events = 1'000'000;
  Parse p(stride * events, arena, false);
  p.Feed(events, stride, 2);
  p.Finish();
  const TraceTables& t = p.t;
  std::printf("dense input, arena %d: %zu events, room %zu; %zu records, room %zu\n", arena,
              t.events.size(), p.event_room(), t.alloc_records.size(), t.alloc_records.bytes.capacity());
  Check(t.events.size() == events && t.alloc_records.size() == 2 * events, "dense input: rows");
  Check(p.event_room() >= events && p.event_room() <= events * 106 / 100 + 64,
        "dense input: event room is rows plus the margin");
  const size_t records = t.alloc_records.bytes.capacity();
  Check(records >= 2 * events && records <= 2 * events * 106 / 100 + 64,
        "dense input: record room is rows plus the margin");
}

void FirstChunkEndsEarly() {
  const size_t bytes = size_t{49} << 20, stride = 600;
  Parse p(bytes, false, true);
  p.Feed((size_t{4} << 20) / stride, stride, 0);  // a 4 MB chunk
  std::printf("first chunk of 4 MB of 49 MB: event room %zu\n", p.event_room());
  Check(p.event_room() >= bytes / 600, "first chunk: typical room for the whole input");
}

void SmallInput() {
  // 10 MB, under eight stretches: 40,000 events in its first 4 MB, which a measure would give
  // room for 105,000; typical room is 47,678.
  const size_t bytes = size_t{10} << 20;
  Parse p(bytes, true, false);
  const size_t before = p.event_room();
  p.Feed(40000, 100, 0);
  std::printf("small input: event room %zu before, %zu after %zu events\n", before, p.event_room(),
              p.t.events.size());
  Check(before == bytes / 220 + 16, "small input: typical room at once");
  Check(p.event_room() == before, "small input: not re-measured");
}

void HostileInput() {
  const size_t bytes = size_t{400} << 20, stride = 16;
  Parse p(bytes, false, false);
  p.Feed(10000 * 220 / stride + 1, stride, 2);  // a dense first stretch
  const double per_byte = static_cast<double>(RoomBytes(p.t)) / static_cast<double>(bytes);
  std::printf("dense first stretch of 400 MB: %.2f bytes of room per input byte\n", per_byte);
  Check(per_byte <= 8.01, "hostile input: room capped");
}

void SparseThenDense() {
  const size_t bytes = size_t{60} << 20;
  Parse p(bytes, true, false);
  p.Feed(3000, 1000, 0);  // 3 MB: sparse, no records
  const size_t dense = (bytes - 3'000'000) / 60;
  p.Feed(dense, 60, 1);
  p.Finish();
  const TraceTables& t = p.t;
  const size_t rows = t.events.size();
  std::printf("sparse then dense: %zu events, room %zu; %zu records, room %zu\n", rows, p.event_room(),
              t.alloc_records.size(), t.alloc_records.bytes.capacity());
  Check(rows == 3000 + dense, "sparse then dense: rows");
  Check(p.event_room() < rows * 3 / 2, "sparse then dense: room re-measured before doubling");
  bool intact = true;
  for (size_t i = 0; i < rows; ++i) intact = intact && t.events.start_ns[i] == static_cast<int64_t>(i) * 1000;
  for (size_t i = 0; i < t.alloc_records.size(); ++i) {
    intact = intact && t.alloc_records.event_id[i] == static_cast<int64_t>(3000 + i);
  }
  Check(intact, "sparse then dense: rows intact after the moves");
}

}  // namespace

int main() {
  DenseInput(true);
  DenseInput(false);
  FirstChunkEndsEarly();
  SmallInput();
  HostileInput();
  SparseThenDense();
  if (failures != 0) return 1;
  std::printf("column_room_check: all checks passed\n");
  return 0;
}
