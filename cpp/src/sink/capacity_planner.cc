#include "sink/capacity_planner.h"

#include <algorithm>
#include <type_traits>

#include "containers/column_budget.h"

namespace tracecore {

namespace {
// Typical dumps: ~700 text bytes (~260 binary bytes) per event (on the generous side).
size_t TypicalBytesPerEvent(bool text) { return text ? 600 : 220; }
}  // namespace

CapacityPlanner::Rows CapacityPlanner::TypicalRows(size_t bytes, bool text) {
  // Per event, typically: half a tensor with two dims, a quarter of an allocator usage and one
  // allocation record (on the generous side).
  const size_t events = bytes / TypicalBytesPerEvent(text) + 16;
  const size_t tensors = events / 2 + 16;
  return {events, tensors, tensors * 2, events / 4 + 16, events + 16};
}

namespace {
// Room for `rows` rows in every column of `table` an importer fills row by row, and `values`
// child values in its list columns. An optional column gets room once the importer has begun
// filling it (it then fills every row: XSpace's events.step_id), so that it does not grow by
// doubling (a copy into fresh pages each time); one still empty may stay so. With
// `omit_empty_fills`, the columns EmptyFills names get none (the importer leaves them empty).
template <class Table>
void ReserveTable(Table& table, size_t rows, size_t values, bool omit_empty_fills) {
  table.ForEachColumn([&](const ColumnDef& def, auto& column, Column<uint8_t>* valid) {
    if (def.holding == ColumnHolding::kOptional && (valid == nullptr || valid->empty())) return;
    if (omit_empty_fills && EmptyFillOf<Table>(def.name).fill != EmptyFill::kNone) return;
    if constexpr (std::is_same_v<std::decay_t<decltype(column)>, ListColumn<int64_t>> ||
                  std::is_same_v<std::decay_t<decltype(column)>, ListColumn<int32_t>>) {
      column.offsets.reserve(rows + 1);
      column.values.reserve(values);
    } else if constexpr (std::is_same_v<std::decay_t<decltype(column)>, StringColumn> ||
                         std::is_same_v<std::decay_t<decltype(column)>, ListStringColumn>) {
      column.offsets.reserve(rows + 1);
    } else {
      column.reserve(rows);
    }
    if (valid != nullptr) valid->reserve(rows);
  });
}
}  // namespace

void CapacityPlanner::ReserveRows(const Rows& n) {
  // Reserving also places the larger columns on huge pages (see ColumnAllocator). Room the
  // ColumnBudget refuses is not taken: the columns then grow as they fill, and the budget
  // refuses the rows themselves only if they pass it.
  try {
    ReserveTable(t_.events, n.events, 0, omit_empty_fills_);
    ReserveTable(t_.tensors, n.tensors, n.dims, omit_empty_fills_);
    ReserveTable(t_.allocations, n.allocations, 0, omit_empty_fills_);
    ReserveTable(t_.alloc_records, n.records, 0, omit_empty_fills_);
  } catch (const ColumnBudgetExceeded&) {
  }
}

namespace {
// Inputs of kCalibrateMinStretches stretches or more have their room measured (see Reserve).
// A stretch is what typically holds kCalibrateEvents events: a few steps of a training loop,
// enough for a stable rate, while the first stretch's columns stay small heap blocks (abandoned
// at the first measure, arena blocks would waste fresh pages). The measure is repeated each
// time the parse has gone kCalibrateGrowth times further.
constexpr size_t kCalibrateEvents = 10000;
constexpr size_t kCalibrateMinStretches = 8;
constexpr size_t kCalibrateGrowth = 4;
// Room is the measured rate times this much: steps and device blocks differ a little.
constexpr double kCalibrateMargin = 1.05;
// Fewer events than this in the first stretch measure nothing: the typical rates are used.
constexpr size_t kCalibrateMinEvents = 256;
// Measured room is address space until written, but the input drives it: all tables together
// get at most kMaxRoomPerByte bytes of it per input byte (the densest dumps, binary events of
// 40 bytes with two allocation records each, need 4), counted at about these many bytes per
// row of each table's reserved columns.
constexpr double kMaxRoomPerByte = 8;
constexpr double kRowBytes[] = {98, 77, 8, 44, 28};  // events, tensors, dims, allocations, records
}  // namespace

void CapacityPlanner::Reserve(const char* begin, size_t bytes, bool text) {
  input_begin_ = begin;
  input_bytes_ = bytes;
  text_ = text;
  const size_t stretch = kCalibrateEvents * TypicalBytesPerEvent(text);
  const bool measure = bytes / kCalibrateMinStretches >= stretch;
  room_for_stretch_ = measure && arena_enabled_;
  ReserveRows(TypicalRows(room_for_stretch_ ? stretch + stretch / 4 : bytes, text));
  if (measure) calibrate_at_ = reinterpret_cast<uintptr_t>(begin) + stretch;
}

void CapacityPlanner::Calibrate(const char* pos) {
  const auto consumed = static_cast<size_t>(pos - input_begin_);
  const bool set_room = room_for_stretch_;  // else only more room, where the rate calls for it
  room_for_stretch_ = false;
  calibrate_at_ = consumed < input_bytes_ / kCalibrateGrowth
                      ? reinterpret_cast<uintptr_t>(input_begin_) + consumed * kCalibrateGrowth
                      : UINTPTR_MAX;
  if (set_room && t_.events.size() < kCalibrateMinEvents) {
    ReserveRows(TypicalRows(input_bytes_, text_));
    return;
  }
  const TensorTable& x = t_.tensors;
  const size_t rows[] = {t_.events.size(), x.size(), x.shape.values.size(), t_.allocations.size(),
                         t_.alloc_records.size()};
  const size_t capacity[] = {t_.events.event_id.capacity(), x.event_id.capacity(),
                             x.shape.values.capacity(), t_.allocations.event_id.capacity(),
                             t_.alloc_records.event_id.capacity()};
  const double scale = static_cast<double>(input_bytes_) / static_cast<double>(consumed);
  double room[5];
  double grown = 0, kept = 0;  // bytes of the room asked for, and of the room tables keep
  for (int k = 0; k < 5; ++k) {
    const double projected = static_cast<double>(rows[k]) * scale;
    room[k] = set_room || projected > static_cast<double>(capacity[k]) ? projected * kCalibrateMargin + 64 : 0;
    grown += room[k] * kRowBytes[k];
    kept += room[k] == 0 ? static_cast<double>(capacity[k]) * kRowBytes[k] : 0;
  }
  const double limit = static_cast<double>(input_bytes_) * kMaxRoomPerByte;
  const double shrink = grown > 0 && kept + grown > limit ? std::max(limit - kept, 0.0) / grown : 1.0;
  const auto n = [&](int k) { return static_cast<size_t>(room[k] * shrink); };
  ReserveRows({n(0), n(1), n(2), n(3), n(4)});
}

}  // namespace tracecore
