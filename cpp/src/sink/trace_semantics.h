// What a trace means beyond its fields, applied by the sink whatever the format: which kind of
// device a block is, an event's op, the thread_names map rule, the order of GraphDefs, and the
// columns derived once a parse ends.
#pragma once

#include <cstdint>
#include <string_view>

#include "tables/trace_tables.h"

namespace tracecore {

// The kind of a StepStats device block, from its name's form.
DeviceKind ClassifyDevice(std::string_view device);

// The kind of an XSpace line, from its plane's and its own name: every line of a "/host:"
// plane is a host thread; on a "/device:" plane the lines XProf derives are named for what they
// hold ("XLA Ops", "Steps", ...), every other line is a stream; lines of other planes are other.
DeviceKind ClassifyXLine(std::string_view plane, std::string_view line);

// The op of an event: "name = Op(inputs)" in the timeline label (after an optional
// "[allocator ...] " prefix), else the part after the last ':' of a GPU-stream record's
// "name:Op" node name. Returns false when there is none.
bool DeriveOp(std::string_view label, bool has_label, std::string_view node_name,
              std::string_view* op);

// thread_names is a map: among the entries of one block from `first_thread_name` on, a key
// seen twice keeps its last value, at the first key's place.
void KeepLastThreadNames(ThreadNameTable& thread_names, int32_t device_index,
                         size_t first_thread_name);

// Renumbers graph_index in protobuf's order (see GraphKey), merging GraphDefs with equal keys.
void NormalizeGraphs(TraceTables& t);

// StepStats / RunMetadata: events.step_id from the device blocks. A dump concatenating the
// StepStats of many steps repeats the same device blocks step after step, so the blocks are
// read in file order and a block whose device already has a block in the current step starts
// the next step: step 0, 1, ... (every event of a block gets the block's step). Left alone when
// the column is already filled or there are no events.
void AssignStepStatsSteps(TraceTables& t);

// The columns derived from the others once every row is in (declared Derived): event ids,
// device kinds, StepStats steps; and the graphs' order.
void FinishDerivedColumns(TraceTables& t);

}  // namespace tracecore
