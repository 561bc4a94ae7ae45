// How much room a parse reserves for its columns: from the input's size at typical rates, then
// from the rates measured on the input itself, so that columns neither regrow (a copy each time)
// nor hold much unused room.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tables/trace_tables.h"

namespace tracecore {

class CapacityPlanner {
 public:
  // `arena_enabled`: whether the columns share huge pages (see ColumnArena), where unused room
  // is resident.
  CapacityPlanner(TraceTables& tables, bool arena_enabled) : t_(tables), arena_enabled_(arena_enabled) {}

  // Reserves column capacity for `bytes` of input starting at `begin` (a parallel parse's first
  // chunk passes the whole input, so that the merge appends in place). Room short of the rows
  // makes columns grow (a copy each time); room never reached costs address space only, except
  // with the column arena, where it shares touched huge pages with other columns and is
  // cleared and resident. So a large input's room follows the rates measured on it: after a
  // first stretch has been parsed (Passed calls Calibrate), and again each time the parse has
  // gone four times further, a table the measured rate says will outgrow its room gets room for
  // the whole input at that rate. With the arena, the room before the first measure is for
  // the first stretch only, and the first measure sets it; without it, and for inputs too
  // small to measure, the room is for the whole input at rates typical of dumps.
  void Reserve(const char* begin, size_t bytes, bool text);

  // The importer leaves the columns EmptyFills names empty (XSpace, Chrome traces): they get
  // no room.
  void OmitEmptyFillColumns() { omit_empty_fills_ = true; }

  // The parse has reached `pos`: measures the rates when due.
  void Passed(const char* pos) {
    if (reinterpret_cast<uintptr_t>(pos) >= calibrate_at_) Calibrate(pos);
  }

 private:
  // Rows to reserve room for, per table.
  struct Rows {
    size_t events, tensors, dims, allocations, records;
  };
  static Rows TypicalRows(size_t bytes, bool text);
  void ReserveRows(const Rows& n);
  void Calibrate(const char* pos);

  TraceTables& t_;
  bool arena_enabled_;
  bool omit_empty_fills_ = false;
  // Reserve's input; whether the room is still for the first stretch only; the address at
  // which Passed calls Calibrate (never, until Reserve arms it).
  const char* input_begin_ = nullptr;
  size_t input_bytes_ = 0;
  bool text_ = false;
  bool room_for_stretch_ = false;
  uintptr_t calibrate_at_ = UINTPTR_MAX;
};

}  // namespace tracecore
