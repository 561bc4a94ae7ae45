#include "importers/tfevents/event_decoder.h"

#include <cstring>
#include <string>

#include "containers/string_pool.h"

namespace tracecore::tfevents {
namespace {

constexpr uint64_t K(uint32_t field, uint32_t wire_type) {
  return (uint64_t{field} << 3) | wire_type;
}

const uint8_t* Begin(std::string_view m) { return reinterpret_cast<const uint8_t*>(m.data()); }
const uint8_t* End(std::string_view m) { return Begin(m) + m.size(); }

// Calls on_key(key, cursor) for each field of `m`; on_key consumes the value and returns true
// for the keys it knows, or returns false (consuming nothing) for a field skipped as unknown:
// another number, or a known number with an unexpected wire type, as protobuf does.
template <class OnKey>
void ForEachField(const WireReader& r, std::string_view m, OnKey&& on_key) {
  const uint8_t* p = Begin(m);
  const uint8_t* const end = End(m);
  while (p < end) {
    const uint8_t* key_at = p;
    const uint64_t key = r.Varint(p, end);
    if (on_key(key, p, end)) continue;
    const uint64_t field = key >> 3;
    if (field == 0 || field > 0x1FFFFFFF) {
      r.Fail(key_at, "invalid field number " + std::to_string(field));
    }
    p = r.Skip(static_cast<uint32_t>(field), static_cast<uint32_t>(key & 7), p, end);
  }
}

// A message whose fields are not read: its encoding must still be sound, as protobuf checks.
void CheckMessage(const WireReader& r, std::string_view m) {
  ForEachField(r, m, [](uint64_t, const uint8_t*&, const uint8_t*) { return false; });
}

std::string_view String(const WireReader& r, const uint8_t*& p, const uint8_t* end,
                        const char* field) {
  const uint8_t* at = p;
  const std::string_view s = r.LengthDelimited(p, end);
  if (!StringPool::IsValidUtf8(s)) r.FailValue(at, std::string(field) + " is not valid UTF-8");
  return s;
}

void Fixed(const WireReader& r, const uint8_t*& p, const uint8_t* end, size_t bytes, void* out) {
  if (static_cast<size_t>(end - p) < bytes) {
    r.Fail(p, "truncated fixed" + std::to_string(8 * bytes) + " value");
  }
  if (out != nullptr) std::memcpy(out, p, bytes);
  p += bytes;
}

// SummaryMetadata: plugin_data 1 { plugin_name 1, content 2 }; a message seen twice merges, so
// the last plugin_name on the wire wins.
void ReadPluginName(const WireReader& r, std::string_view metadata, std::string_view* name) {
  ForEachField(r, metadata, [&](uint64_t key, const uint8_t*& p, const uint8_t* end) {
    if (key != K(1, kLengthDelimited)) return false;
    ForEachField(r, r.LengthDelimited(p, end),
                 [&](uint64_t k, const uint8_t*& q, const uint8_t* qe) {
                   if (k == K(1, kLengthDelimited)) {
                     *name = String(r, q, qe, "SummaryMetadata.plugin_data.plugin_name");
                   } else if (k == K(2, kLengthDelimited)) {
                     r.LengthDelimited(q, qe);
                   } else {
                     return false;
                   }
                   return true;
                 });
    return true;
  });
}

constexpr std::string_view kGraphRunMetadataGraph = "graph_run_metadata_graph";
constexpr std::string_view kGraphRunMetadata = "graph_run_metadata";

}  // namespace

const char* SourceName(RunMetadataSource source) {
  switch (source) {
    case RunMetadataSource::kTaggedRunMetadata:
      return "tagged_run_metadata";
    case RunMetadataSource::kGraphRunMetadataGraph:
      return "graph_run_metadata_graph";
    case RunMetadataSource::kGraphRunMetadata:
      return "graph_run_metadata";
  }
  return "?";
}

EventDecoder::EventDecoder(std::string_view input) : base_(Begin(input)) {}

void EventDecoder::DecodeValue(const WireReader& r, std::string_view bytes, Value* v) const {
  // A oneof member replaces the one before it (the tensor's string_val goes with it); the same
  // member again merges.
  auto member = [v](uint32_t kind) {
    if (v->kind == kind) return;
    v->kind = kind;
    v->has_string_val = false;
    v->string_val = {};
  };
  ForEachField(r, bytes, [&](uint64_t key, const uint8_t*& p, const uint8_t* end) {
    switch (key) {
      case K(1, kLengthDelimited):
        v->tag = String(r, p, end, "Summary.Value.tag");
        return true;
      case K(9, kLengthDelimited):
        ReadPluginName(r, r.LengthDelimited(p, end), &v->plugin_name);
        return true;
      case K(2, kFixed32):  // simple_value
        Fixed(r, p, end, 4, nullptr);
        member(2);
        return true;
      case K(3, kLengthDelimited):  // obsolete_old_style_histogram (bytes)
        r.LengthDelimited(p, end);
        member(3);
        return true;
      case K(4, kLengthDelimited):  // image
      case K(5, kLengthDelimited):  // histo
      case K(6, kLengthDelimited):  // audio
        CheckMessage(r, r.LengthDelimited(p, end));
        member(static_cast<uint32_t>(key >> 3));
        return true;
      case K(8, kLengthDelimited): {  // tensor
        const std::string_view tensor = r.LengthDelimited(p, end);
        member(8);
        ForEachField(r, tensor, [&](uint64_t k, const uint8_t*& q, const uint8_t* qe) {
          switch (k) {
            case K(8, kLengthDelimited): {  // string_val
              const std::string_view s = r.LengthDelimited(q, qe);
              if (!v->has_string_val) {
                v->has_string_val = true;
                v->string_val = s;
              }
              return true;
            }
            case K(1, kVarint):  // dtype
              r.Varint(q, qe);
              return true;
            case K(4, kLengthDelimited):  // tensor_content
              r.LengthDelimited(q, qe);
              return true;
            default:
              return false;
          }
        });
        return true;
      }
      default:
        return false;
    }
  });
}

void EventDecoder::DecodeSummary(const WireReader& r, std::string_view summary) {
  ForEachField(r, summary, [&](uint64_t key, const uint8_t*& p, const uint8_t* end) {
    if (key != K(1, kLengthDelimited)) return false;
    const std::string_view bytes = r.LengthDelimited(p, end);
    values_.emplace_back();
    DecodeValue(r, bytes, &values_.back());
    return true;
  });
}

void EventDecoder::CountPlugin(std::string_view name, EventContent* content) {
  auto& plugins = content->plugins;
  if (plugin_hint_ < plugins.size() && plugins[plugin_hint_].name == name) {
    ++plugins[plugin_hint_].values;
    return;
  }
  for (size_t i = 0; i < plugins.size(); ++i) {
    if (plugins[i].name == name) {
      ++plugins[i].values;
      plugin_hint_ = i;
      return;
    }
  }
  if (plugins.size() < EventContent::kMaxPlugins) {
    plugin_hint_ = plugins.size();
    plugins.push_back({name, 1});
  } else {
    ++content->other_plugin_values;
  }
}

void EventDecoder::Decode(const Record& record, std::vector<FoundRunMetadata>* found,
                          EventContent* content) {
  const WireReader r(base_, End(record.data));
  double wall_time = 0;
  int64_t step = 0;
  // The `what` oneof: the member seen last, and what its occurrences since it took over hold.
  uint32_t what = 0;
  std::string_view file_version;
  std::string_view tag;
  std::string_view run_metadata;
  bool has_run_metadata = false;
  values_.clear();
  auto member = [&](uint32_t field) {
    if (what == field) return;
    what = field;
    file_version = {};
    tag = {};
    run_metadata = {};
    has_run_metadata = false;
    values_.clear();
  };
  ForEachField(r, record.data, [&](uint64_t key, const uint8_t*& p, const uint8_t* end) {
    switch (key) {
      case K(1, kFixed64):
        Fixed(r, p, end, 8, &wall_time);
        return true;
      case K(2, kVarint):
        step = static_cast<int64_t>(r.Varint(p, end));
        return true;
      case K(3, kLengthDelimited): {
        const std::string_view s = String(r, p, end, "Event.file_version");
        member(3);
        file_version = s;
        return true;
      }
      case K(4, kLengthDelimited):  // graph_def (bytes)
      case K(9, kLengthDelimited):  // meta_graph_def (bytes)
        r.LengthDelimited(p, end);
        member(static_cast<uint32_t>(key >> 3));
        return true;
      case K(5, kLengthDelimited): {
        const std::string_view summary = r.LengthDelimited(p, end);
        member(5);
        DecodeSummary(r, summary);
        return true;
      }
      case K(6, kLengthDelimited):  // log_message
      case K(7, kLengthDelimited):  // session_log
        CheckMessage(r, r.LengthDelimited(p, end));
        member(static_cast<uint32_t>(key >> 3));
        return true;
      case K(8, kLengthDelimited): {  // tagged_run_metadata: occurrences merge field by field
        const std::string_view tagged = r.LengthDelimited(p, end);
        member(8);
        ForEachField(r, tagged, [&](uint64_t k, const uint8_t*& q, const uint8_t* qe) {
          if (k == K(1, kLengthDelimited)) {
            tag = String(r, q, qe, "TaggedRunMetadata.tag");
          } else if (k == K(2, kLengthDelimited)) {
            run_metadata = r.LengthDelimited(q, qe);
            has_run_metadata = true;
          } else {
            return false;
          }
          return true;
        });
        return true;
      }
      case K(10, kLengthDelimited):  // source_metadata, outside the oneof
        CheckMessage(r, r.LengthDelimited(p, end));
        return true;
      default:
        return false;
    }
  });

  // Sound: count and report.
  if (content->events == 0 || step < content->min_step) content->min_step = step;
  if (content->events == 0 || step > content->max_step) content->max_step = step;
  if (content->events == 0 || wall_time < content->min_wall_time)
    content->min_wall_time = wall_time;
  if (content->events == 0 || wall_time > content->max_wall_time)
    content->max_wall_time = wall_time;
  ++content->events;
  auto add = [&](std::string_view t, std::string_view payload, bool present,
                 RunMetadataSource source) {
    FoundRunMetadata f;
    f.tag = t;
    f.step = step;
    f.wall_time = wall_time;
    f.offset = present ? static_cast<uint64_t>(Begin(payload) - base_)
                       : static_cast<uint64_t>(Begin(record.data) - base_);
    f.length = payload.size();
    f.record_offset = record.offset;
    f.source = source;
    found->push_back(f);
  };
  switch (what) {
    case 0:
      ++content->no_what;
      break;
    case 3:
      ++content->file_version;
      if (content->file_version_string.empty()) content->file_version_string = file_version;
      break;
    case 4:
      ++content->graph_def;
      break;
    case 5:
      ++content->summary;
      for (const Value& v : values_) {
        ++content->summary_values;
        if (!v.plugin_name.empty()) {
          CountPlugin(v.plugin_name, content);
        } else {
          switch (v.kind) {
            case 0:
              ++content->empty_values;
              break;
            case 2:
              ++content->simple_values;
              break;
            case 3:
            case 5:
              ++content->histograms;
              break;
            case 4:
              ++content->images;
              break;
            case 6:
              ++content->audio;
              break;
            case 8:
              ++content->tensors;
              break;
          }
        }
        if (v.kind != 8) continue;
        RunMetadataSource source;
        if (v.plugin_name == kGraphRunMetadataGraph) {
          source = RunMetadataSource::kGraphRunMetadataGraph;
        } else if (v.plugin_name == kGraphRunMetadata) {
          source = RunMetadataSource::kGraphRunMetadata;
        } else {
          continue;
        }
        if (v.has_string_val) {
          add(v.tag, v.string_val, true, source);
        } else if (content->run_metadata_without_payload++ == 0) {
          content->first_without_payload_record = record.offset;
        }
      }
      break;
    case 6:
      ++content->log_message;
      break;
    case 7:
      ++content->session_log;
      break;
    case 8:
      ++content->tagged_run_metadata;
      add(tag, run_metadata, has_run_metadata, RunMetadataSource::kTaggedRunMetadata);
      break;
    case 9:
      ++content->meta_graph_def;
      break;
  }
}

}  // namespace tracecore::tfevents
