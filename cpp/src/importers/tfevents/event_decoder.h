// Decodes the tensorflow.Event of one TFRecord record far enough to find the RunMetadata it
// carries, and counts what else it holds. Field numbers (event.proto, summary.proto,
// tensor.proto):
//
//   Event: wall_time 1 (double), step 2 (int64), oneof what { file_version 3 (string),
//          graph_def 4 (bytes), summary 5, log_message 6, session_log 7,
//          tagged_run_metadata 8, meta_graph_def 9 (bytes) }, source_metadata 10
//   TaggedRunMetadata: tag 1 (string), run_metadata 2 (bytes)
//   Summary: value 1 (repeated Value)
//   Summary.Value: tag 1 (string), metadata 9, oneof value { simple_value 2 (float),
//          obsolete_old_style_histogram 3, image 4, histo 5, audio 6, tensor 8 }
//   SummaryMetadata: plugin_data 1 { plugin_name 1 (string), content 2 (bytes) }
//   TensorProto: string_val 8 (repeated bytes)
//
// The reading follows protobuf's: the last of a oneof's fields on the wire wins (and drops
// what an earlier one set), a singular field seen twice keeps its last value, a message field
// seen twice merges, a field with an unexpected wire type is an unknown field, and the string
// fields read here must be UTF-8. Nothing is copied: tags and payloads are views into the input.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "importers/protobuf/wire_reader.h"
#include "importers/tfevents/record_reader.h"

namespace tracecore::tfevents {

enum class RunMetadataSource : uint8_t {
  kTaggedRunMetadata,      // Event.tagged_run_metadata (TF1 FileWriter.add_run_metadata)
  kGraphRunMetadataGraph,  // summary tensor of plugin graph_run_metadata_graph (trace_export)
  kGraphRunMetadata,       // summary tensor of plugin graph_run_metadata (trace_export + profiler)
};

// "tagged_run_metadata", "graph_run_metadata_graph", "graph_run_metadata".
const char* SourceName(RunMetadataSource source);

// One serialized RunMetadata found in an event file.
struct FoundRunMetadata {
  std::string_view tag;  // TaggedRunMetadata.tag or Summary.Value.tag, inside the input
  int64_t step = 0;
  double wall_time = 0;
  uint64_t offset = 0;  // of the RunMetadata bytes in the input (length 0: an empty payload)
  uint64_t length = 0;
  uint64_t record_offset = 0;  // of the record holding it
  RunMetadataSource source = RunMetadataSource::kTaggedRunMetadata;
};

// What the events of a file hold, for saying what a log directory without RunMetadata has.
struct EventContent {
  uint64_t events = 0;
  // By the Event's `what`: which member the protobuf reading keeps (none: only wall_time/step).
  uint64_t file_version = 0;
  uint64_t graph_def = 0;
  uint64_t summary = 0;
  uint64_t log_message = 0;
  uint64_t session_log = 0;
  uint64_t tagged_run_metadata = 0;
  uint64_t meta_graph_def = 0;
  uint64_t no_what = 0;
  // Summary values: those with a plugin name by name; the others by their value kind.
  uint64_t summary_values = 0;
  struct Plugin {
    std::string_view name;
    uint64_t values;
  };
  std::vector<Plugin> plugins;       // in order of first appearance, up to kMaxPlugins names
  uint64_t other_plugin_values = 0;  // values of plugins beyond kMaxPlugins
  uint64_t simple_values = 0;        // TF1 scalars (tf.summary.scalar in graph mode)
  uint64_t images = 0;
  uint64_t histograms = 0;  // histo and obsolete_old_style_histogram
  uint64_t audio = 0;
  uint64_t tensors = 0;       // tensor without a plugin name
  uint64_t empty_values = 0;  // no value at all
  // graph_run_metadata* values whose tensor has no string_val: no RunMetadata to read.
  uint64_t run_metadata_without_payload = 0;
  uint64_t first_without_payload_record = 0;
  std::string_view file_version_string;  // the first one seen ("brain.Event:2")
  bool has_steps = false;
  int64_t min_step = 0;
  int64_t max_step = 0;
  double min_wall_time = 0;
  double max_wall_time = 0;

  static constexpr size_t kMaxPlugins = 64;
};

class EventDecoder {
 public:
  // `input`: the whole file; records and reported offsets are relative to its start.
  explicit EventDecoder(std::string_view input);

  // Decodes the Event in `record` (a record of the input): appends the RunMetadata it carries to
  // *found and counts it in *content. Throws TraceFormatError::AtByte (a file offset) when the
  // record is not a valid Event; then nothing was appended or counted.
  void Decode(const Record& record, std::vector<FoundRunMetadata>* found, EventContent* content);

 private:
  // A Summary.Value as protobuf would read it: its last tag and plugin name, which member of
  // its `value` oneof won (the field number, 0 for none), and the tensor's first string_val.
  struct Value {
    std::string_view tag;
    std::string_view plugin_name;
    uint32_t kind = 0;
    bool has_string_val = false;
    std::string_view string_val;
  };
  void DecodeSummary(const WireReader& r, std::string_view summary);
  void DecodeValue(const WireReader& r, std::string_view bytes, Value* value) const;
  void CountPlugin(std::string_view name, EventContent* content);

  const uint8_t* base_;
  // Per-Event scratch, reused: the summary values of the Event being decoded.
  std::vector<Value> values_;
  size_t plugin_hint_ = 0;
};

}  // namespace tracecore::tfevents
