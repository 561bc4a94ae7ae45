#include "importers/stepstats/text/text_parser.h"

#include <string>
#include <string_view>

#include "importers/stepstats/text/text_cursor.h"
#include "tables/dtypes.h"

namespace tracecore {
namespace {

// Messages nest at most 9 deep in this schema; anything deeper is rejected before recursing.
constexpr int kMaxDepth = 32;

bool DtypeLookup(std::string_view name, int32_t* value) { return DataTypeFromName(name, value); }

class TextParser {
 public:
  TextParser(const char* begin, const char* end, TraceSink& b) : c_(begin, end), b_(b) {}

  // Parses a chunk instead of the whole input: from `start` (a record boundary found by
  // FindTextSplits) up to `stop_at` (the next one, or null for the end of the input).
  void SetChunk(const char* start, const char* stop_at, TraceKind kind) {
    c_.set_pos(start);
    stop_at_ = stop_at;
    b_.SetKind(kind);
    starts_in_step_stats_ = start != c_.begin() && kind == TraceKind::kRunMetadata;
  }

  // Parses to the end of the input or chunk. Throws TraceFormatError; throws SplitMismatch
  // when a chunk's boundaries turn out not to be record boundaries in this parse state.
  void Run();

  TextChunkInfo info;

 private:
  struct ReachedSplit {};
  void CheckSplit() {
    if (stop_at_ == nullptr) return;
    if (c_.pos() == stop_at_) throw ReachedSplit{};
    if (c_.pos() > stop_at_) throw SplitMismatch{};
  }
  void TopLevel();
  void StepStatsBody(char close);

  // The name of a field met by Message(), matched against the names its message knows with
  // Is(name); it converts to the matched name. FastName has not scanned the identifier: Is()
  // compares the input in place and consumes the name when it matches. ScannedName holds a
  // name FieldName() already consumed (near the end of the input, or not an identifier).
  class FastName {
   public:
    FastName(TextCursor& c, const char* at) : c_(c), at_(at) {}
    template <size_t N>
    __attribute__((always_inline)) bool Is(const char (&name)[N]) {
      if (!TextCursor::NameAt(at_, name)) return false;
      c_.set_pos(at_ + (N - 1));
      name_ = std::string_view(name, N - 1);
      return true;
    }
    operator std::string_view() const { return name_; }

   private:
    TextCursor& c_;
    const char* at_;
    std::string_view name_;
  };
  class ScannedName {
   public:
    explicit ScannedName(std::string_view name) : name_(name) {}
    template <size_t N>
    bool Is(const char (&name)[N]) const {
      return name_ == std::string_view(name, N - 1);
    }
    operator std::string_view() const { return name_; }

   private:
    std::string_view name_;
  };

  // Parses one message value ("{ ... }" or "< ... >"), handing each field name (a FastName or
  // a ScannedName) to `on_field`, which parses the value and returns true, or returns false,
  // consuming nothing, for a field that is skipped as unknown.
  template <class OnField>
  __attribute__((always_inline)) void Message(std::string_view field, OnField&& on_field) {
    const char close = c_.OpenMessage(field);
    const char* open_at = c_.pos() - 1;
    if (++depth_ > kMaxDepth) c_.Fail(open_at, "messages nested deeper than 32 levels");
    c_.SkipWhitespaceNewlineFirst();
    for (;;) {
      if (c_.at_end()) {
        c_.Fail(c_.pos(), std::string("expected '") + close + "' to close '" +
                              std::string(field) + "' opened at " + Where(open_at));
      }
      const char* start = c_.pos();
      if (*start == close) {
        c_.set_pos(start + 1);
        break;
      }
      if (c_.end() - start >= TextCursor::kNameSpan && TextCursor::IsIdentStart(*start)) {
        FastName name(c_, start);
        if (!on_field(name)) Unknown(c_.FieldName());
      } else {
        const std::string_view scanned = c_.FieldName();
        ScannedName name(scanned);
        if (!on_field(name)) Unknown(scanned);
      }
      c_.EndField();
    }
    --depth_;
  }

  // A message-typed field (after its name): optional ':', then one message or a list of them.
  template <class Body>
  void MessageField(std::string_view field, bool repeated, Body&& body) {
    if (c_.SkipSpaceBeforeBrace()) {
      body();  // at the '{': the body opens the message
      return;
    }
    c_.TryConsume(':');
    if (repeated) {
      c_.Repeated(body);
    } else {
      body();
    }
  }

  // A scalar field (after its name): ':' then one value or, if repeated, a list of them.
  template <class Value>
  void ScalarField(std::string_view field, bool repeated, Value&& value) {
    c_.ExpectColon(field);
    if (repeated) {
      c_.Repeated(value);
    } else {
      value();
    }
  }

  void Unknown(std::string_view name) {
    b_.CountUnknownField();
    c_.SkipValue(name);
  }
  // A known field whose value tracecore does not keep.
  bool Ignore(std::string_view name) {
    c_.SkipValue(name);
    return true;
  }

  std::string Where(const char* at) {
    try {
      c_.Fail(at, "");
    } catch (const TraceFormatError& e) {
      return "line " + std::to_string(e.line) + ", column " + std::to_string(e.column);
    }
  }

  int64_t Int64(std::string_view f) { return c_.Int64(f); }
  // How a string is interned: through the cache of short names that repeat record after
  // record (allocators, devices), the cache of node names, or directly.
  enum class Names { kOnce, kRepeated, kNode };
  uint32_t InternString(std::string_view field, Names names = Names::kOnce) {
    c_.SkipWhitespaceBeforeValue();
    const char* at = c_.pos();
    const std::string_view s = c_.String(field, &scratch_);
    const uint32_t id = names == Names::kRepeated ? b_.InternRepeated(s)
                        : names == Names::kNode   ? b_.InternNodeName(s)
                                                  : b_.Intern(s);
    if (id == StringPool::kInvalidUtf8) c_.Fail(at, "string is not valid UTF-8 in field '" + std::string(field) + "'");
    return id;
  }
  // A timeline_label that a second one replaces: never interned, so validated here (rare; out
  // of line to keep the node_stats loop small).
  __attribute__((noinline, cold)) void CheckReplacedLabel(std::string_view label, const char* at) {
    if (!StringPool::IsValidUtf8(label)) c_.Fail(at, "string is not valid UTF-8 in field 'timeline_label'");
  }

  std::string_view CheckedString(std::string_view field) {
    c_.SkipWhitespaceBeforeValue();
    const char* at = c_.pos();
    const std::string_view s = c_.String(field, &scratch_);
    if (!StringPool::IsValidUtf8(s)) c_.Fail(at, "string is not valid UTF-8 in field '" + std::string(field) + "'");
    return s;
  }

  void StepStats();
  void DeviceStepStats();
  void NodeExecStats(int32_t device_index);
  void AllocatorMemoryUsed(int64_t event_id);
  void NodeOutput(int64_t event_id, int32_t output_index);
  void TensorDescription(TensorFields* t);
  void TensorShape(bool keep_dims, bool* unknown_rank);
  void AllocationDescription(TensorFields* t);
  void MemoryStats(int64_t event_id, EventFields* e);
  void CostGraph();
  void CostNode();
  void GraphDef(std::string_view field, const GraphKey& key);
  void FunctionGraphs();

  TextCursor c_;
  TraceSink& b_;
  std::string scratch_;
  int depth_ = 0;
  const char* stop_at_ = nullptr;
  bool starts_in_step_stats_ = false;
  char open_step_stats_ = 0;  // closer of the step_stats message open right now, if any
};

void TextParser::Run() {
  try {
    if (starts_in_step_stats_) {
      // A RunMetadata chunk that begins inside step_stats { ... }: its closer is not known
      // here; the merge checks it against the opener seen by the chunk before.
      depth_ = 1;
      StepStatsBody(0);
      depth_ = 0;
      c_.SkipFieldSeparator();
    }
    TopLevel();
  } catch (const ReachedSplit&) {
    info.reached_split = true;
    info.open_at_end = open_step_stats_;
    return;
  }
  if (stop_at_ != nullptr) throw SplitMismatch{};  // ran to the end without meeting the split
}

void TextParser::TopLevel() {
  c_.SkipWhitespace();
  if (c_.at_end() && c_.pos() != nullptr && b_.kind() == TraceKind::kUnknown) {
    c_.Fail(c_.pos(), "empty input: expected a StepStats ('dev_stats {') or a RunMetadata ('step_stats {')");
  }
  for (;;) {
    c_.SkipWhitespace();
    if (b_.kind() == TraceKind::kStepStats) CheckSplit();
    if (c_.at_end()) break;
    const std::string_view name = c_.FieldName();
    if (b_.kind() == TraceKind::kUnknown) {
      if (name == "dev_stats") {
        b_.SetKind(TraceKind::kStepStats);
      } else if (name == "step_stats" || name == "cost_graph" || name == "partition_graphs" ||
                 name == "function_graphs" || name == "session_metadata") {
        b_.SetKind(TraceKind::kRunMetadata);
      }
    }
    if (b_.kind() == TraceKind::kStepStats && name == "dev_stats") {
      MessageField(name, true, [&] { DeviceStepStats(); });
    } else if (b_.kind() == TraceKind::kRunMetadata && name == "step_stats") {
      MessageField(name, false, [&] { StepStats(); });
    } else if (b_.kind() == TraceKind::kRunMetadata && name == "cost_graph") {
      MessageField(name, false, [&] { CostGraph(); });
    } else if (b_.kind() == TraceKind::kRunMetadata && name == "partition_graphs") {
      MessageField(name, true, [&] {
        GraphDef(name, GraphKey{0, 0, reinterpret_cast<uintptr_t>(c_.pos())});
      });
    } else if (b_.kind() == TraceKind::kRunMetadata && name == "function_graphs") {
      MessageField(name, true, [&] { FunctionGraphs(); });
    } else if (b_.kind() == TraceKind::kRunMetadata && name == "session_metadata") {
      MessageField(name, false, [&] {
        Message(name, [&](auto& f) {
          if (f.Is("name")) {
            c_.ExpectColon(f);
            CheckedString(f);
          } else if (f.Is("version")) {
            ScalarField(f, false, [&] { Int64(f); });
          } else {
            return false;
          }
          return true;
        });
      });
    } else {
      Unknown(name);
    }
    c_.SkipFieldSeparator();
  }
  if (b_.kind() == TraceKind::kUnknown) {
    c_.Fail(c_.begin(), "no StepStats ('dev_stats') or RunMetadata ('step_stats') field found");
  }
}

void TextParser::StepStats() {
  const char close = c_.OpenMessage("step_stats");
  if (++depth_ > kMaxDepth) c_.Fail(c_.pos() - 1, "messages nested deeper than 32 levels");
  open_step_stats_ = close;
  StepStatsBody(close);
  open_step_stats_ = 0;
  --depth_;
}

void TextParser::StepStatsBody(char close) {
  for (;;) {
    c_.SkipWhitespace();
    CheckSplit();
    if (c_.at_end()) {
      c_.Fail(c_.pos(), std::string("expected '") + (close ? close : '}') + "' to close 'step_stats'");
    }
    const char ch = c_.peek();
    if ((ch == '}' || ch == '>') && (close == 0 || ch == close)) {
      c_.set_pos(c_.pos() + 1);
      if (close == 0) info.first_closer = ch;
      return;
    }
    const std::string_view name = c_.FieldName();
    if (name == "dev_stats") {
      MessageField(name, true, [&] { DeviceStepStats(); });
    } else {
      Unknown(name);
    }
    c_.SkipFieldSeparator();
  }
}

void TextParser::DeviceStepStats() {
  const int32_t device_index = b_.BeginDevice();
  const size_t first_event = b_.event_count();
  const size_t first_thread_name = b_.thread_name_count();
  uint32_t device = StringPool::kEmptyId;
  Message("dev_stats", [&](auto& f) {
    if (f.Is("node_stats")) {
      MessageField(f, true, [&] { NodeExecStats(device_index); });
    } else if (f.Is("device")) {
      c_.ExpectColon(f);
      device = InternString(f, Names::kRepeated);
    } else if (f.Is("thread_names")) {
      MessageField(f, true, [&] {
        uint32_t key = 0;
        std::string value;
        Message(f, [&](auto& e) {
          if (e.Is("key")) {
            ScalarField(e, false, [&] { key = c_.UInt32(e); });
          } else if (e.Is("value")) {
            c_.ExpectColon(e);
            value.assign(CheckedString(e));
          } else {
            return false;
          }
          return true;
        });
        b_.AddThreadName(device_index, key, value);
      });
    } else {
      return false;
    }
    return true;
  });
  b_.EndDevice(device_index, device, first_event, first_thread_name);
}

void TextParser::NodeExecStats(int32_t device_index) {
  const char* at = c_.pos();
  const int64_t event_id = b_.BeginEvent();
  EventFields e;
  int32_t output_index = 0;
  const char* label_at = nullptr;
  Message("node_stats", [&](auto& f) {
    // Most frequent first.
    if (f.Is("node_name")) {
      c_.ExpectColon(f);
      e.node_name = InternString(f, Names::kNode);
    } else if (f.Is("all_start_micros")) {
      ScalarField(f, false, [&] { e.all_start_micros = Int64(f); });
    } else if (f.Is("all_end_rel_micros")) {
      ScalarField(f, false, [&] { e.all_end_rel_micros = Int64(f); });
    } else if (f.Is("op_end_rel_micros")) {
      ScalarField(f, false, [&] { e.op_end_rel_micros = Int64(f); });
    } else if (f.Is("output")) {
      MessageField(f, true, [&] { NodeOutput(event_id, output_index++); });
    } else if (f.Is("timeline_label")) {
      c_.ExpectColon(f);
      c_.SkipWhitespaceBeforeValue();
      // Validated as UTF-8 when first interned (a repeated label is compared, not rescanned);
      // one that a later label replaces is never interned: checked here (rare).
      if (__builtin_expect(e.has_label, 0)) CheckReplacedLabel(e.label, label_at);
      label_at = c_.pos();
      std::string_view label = c_.String(f, &scratch_);
      if (label.data() < c_.begin() || label.data() > c_.end()) {
        // Unescaped into the shared scratch: keep a copy of its own.
        label = b_.KeepLabel(label);
      }
      e.label = label;
      e.has_label = true;
    } else if (f.Is("scheduled_micros")) {
      ScalarField(f, false, [&] { e.scheduled_micros = Int64(f); });
    } else if (f.Is("memory_stats")) {
      MessageField(f, false, [&] { MemoryStats(event_id, &e); });
    } else if (f.Is("memory")) {
      MessageField(f, true, [&] { AllocatorMemoryUsed(event_id); });
    } else if (f.Is("op_start_rel_micros")) {
      ScalarField(f, false, [&] { e.op_start_rel_micros = Int64(f); });
    } else if (f.Is("thread_id")) {
      ScalarField(f, false, [&] { e.thread_id = c_.UInt32(f); });
    } else if (f.Is("all_start_nanos")) {
      ScalarField(f, false, [&] { e.all_start_nanos = Int64(f); });
    } else if (f.Is("op_start_rel_nanos")) {
      ScalarField(f, false, [&] { e.op_start_rel_nanos = Int64(f); });
    } else if (f.Is("op_end_rel_nanos")) {
      ScalarField(f, false, [&] { e.op_end_rel_nanos = Int64(f); });
    } else if (f.Is("all_end_rel_nanos")) {
      ScalarField(f, false, [&] { e.all_end_rel_nanos = Int64(f); });
    } else if (f.Is("scheduled_nanos")) {
      ScalarField(f, false, [&] { e.scheduled_nanos = Int64(f); });
    } else if (f.Is("referenced_tensor")) {
      // Not exported, but validated like every other field.
      MessageField(f, true, [&] {
        TensorFields ignored;
        AllocationDescription(&ignored);
      });
    } else {
      return false;
    }
    return true;
  });
  if (const char* error = b_.EndEvent(device_index, e)) c_.Fail(at, error);
  b_.Consumed(c_.pos());
}

void TextParser::AllocatorMemoryUsed(int64_t event_id) {
  AllocationFields a;
  const size_t first_record = b_.alloc_record_count();
  Message("memory", [&](auto& f) {
    if (f.Is("allocator_name")) {
      c_.ExpectColon(f);
      a.allocator = InternString(f, Names::kRepeated);
    } else if (f.Is("total_bytes")) {
      ScalarField(f, false, [&] { a.total_bytes = Int64(f); });
    } else if (f.Is("peak_bytes")) {
      ScalarField(f, false, [&] { a.peak_bytes = Int64(f); });
    } else if (f.Is("live_bytes")) {
      ScalarField(f, false, [&] { a.live_bytes = Int64(f); });
    } else if (f.Is("allocator_bytes_in_use")) {
      ScalarField(f, false, [&] { a.allocator_bytes_in_use = Int64(f); });
    } else if (f.Is("allocation_records")) {
      MessageField(f, true, [&] {
        const char* at = c_.pos();
        int64_t micros = 0, bytes = 0;
        Message(f, [&](auto& r) {
          if (r.Is("alloc_micros")) {
            ScalarField(r, false, [&] { micros = Int64(r); });
          } else if (r.Is("alloc_bytes")) {
            ScalarField(r, false, [&] { bytes = Int64(r); });
          } else {
            return false;
          }
          return true;
        });
        bool overflow = false;
        b_.AddAllocRecord(event_id, micros, bytes, &overflow);
        if (overflow) c_.Fail(at, "alloc_micros out of range: nanoseconds overflow int64");
      });
    } else {
      return false;
    }
    return true;
  });
  b_.EndAllocation(event_id, a, first_record);
}

void TextParser::NodeOutput(int64_t event_id, int32_t output_index) {
  TensorFields t;
  Message("output", [&](auto& f) {
    if (f.Is("slot")) {
      ScalarField(f, false, [&] { t.slot = c_.Int32(f); });
    } else if (f.Is("tensor_description")) {
      MessageField(f, false, [&] { TensorDescription(&t); });
    } else {
      return false;
    }
    return true;
  });
  b_.EndTensor(event_id, output_index, t);
}

void TextParser::TensorDescription(TensorFields* t) {
  Message("tensor_description", [&](auto& f) {
    if (f.Is("dtype")) {
      ScalarField(f, false, [&] { t->dtype = c_.Enum(f, DtypeLookup); });
    } else if (f.Is("shape")) {
      MessageField(f, false, [&] { TensorShape(true, &t->unknown_rank); });
    } else if (f.Is("allocation_description")) {
      MessageField(f, false, [&] { AllocationDescription(t); });
    } else {
      return false;
    }
    return true;
  });
}

void TextParser::TensorShape(bool keep_dims, bool* unknown_rank) {
  Message("shape", [&](auto& f) {
    if (f.Is("dim")) {
      MessageField(f, true, [&] {
        int64_t size = 0;
        Message(f, [&](auto& d) {
          if (d.Is("size")) {
            ScalarField(d, false, [&] { size = Int64(d); });
          } else if (d.Is("name")) {
            c_.ExpectColon(d);
            CheckedString(d);
          } else {
            return false;
          }
          return true;
        });
        if (keep_dims) b_.AddDim(size);
      });
    } else if (f.Is("unknown_rank")) {
      ScalarField(f, false, [&] { *unknown_rank = c_.Bool(f); });
    } else {
      return false;
    }
    return true;
  });
}

void TextParser::AllocationDescription(TensorFields* t) {
  Message("allocation_description", [&](auto& f) {
    if (f.Is("requested_bytes")) {
      ScalarField(f, false, [&] { t->requested_bytes = Int64(f); });
    } else if (f.Is("allocated_bytes")) {
      ScalarField(f, false, [&] { t->allocated_bytes = Int64(f); });
    } else if (f.Is("allocator_name")) {
      c_.ExpectColon(f);
      t->allocator = InternString(f, Names::kRepeated);
    } else if (f.Is("allocation_id")) {
      ScalarField(f, false, [&] { t->allocation_id = Int64(f); });
    } else if (f.Is("has_single_reference")) {
      ScalarField(f, false, [&] { t->has_single_reference = c_.Bool(f); });
    } else if (f.Is("ptr")) {
      ScalarField(f, false, [&] { t->ptr = c_.UInt64(f); });
    } else {
      return false;
    }
    return true;
  });
}

void TextParser::MemoryStats(int64_t event_id, EventFields* e) {
  Message("memory_stats", [&](auto& f) {
    if (f.Is("temp_memory_size")) {
      ScalarField(f, false, [&] { e->temp_memory_size = Int64(f); });
    } else if (f.Is("persistent_memory_size")) {
      ScalarField(f, false, [&] { e->persistent_memory_size = Int64(f); });
    } else if (f.Is("persistent_tensor_alloc_ids")) {
      ScalarField(f, true, [&] { b_.AddPersistentTensor(event_id, Int64(f)); });
    } else if (f.Is("device_temp_memory_size") || f.Is("device_persistent_memory_size")) {
      ScalarField(f, false, [&] { Int64(f); });
    } else if (f.Is("device_persistent_tensor_alloc_ids")) {
      ScalarField(f, true, [&] { Int64(f); });
    } else {
      return false;
    }
    return true;
  });
}

void TextParser::CostGraph() {
  Message("cost_graph", [&](auto& f) {
    if (f.Is("node")) {
      MessageField(f, true, [&] { CostNode(); });
      return true;
    }
    if (f.Is("cost")) {
      MessageField(f, true, [&] {
        Message(f, [&](auto& a) {
          if (a.Is("cost")) {
            c_.SkipValue(a);  // ": <float>": not exported
          } else if (a.Is("dimension")) {
            c_.ExpectColon(a);
            CheckedString(a);
          } else {
            return false;
          }
          return true;
        });
      });
      return true;
    }
    return false;
  });
}

void TextParser::CostNode() {
  CostNodeFields n;
  Message("node", [&](auto& f) {
    if (f.Is("name")) {
      c_.ExpectColon(f);
      n.name = InternString(f);
    } else if (f.Is("device")) {
      c_.ExpectColon(f);
      n.device = InternString(f);
    } else if (f.Is("id")) {
      ScalarField(f, false, [&] { n.id = c_.Int32(f); });
    } else if (f.Is("input_info")) {
      MessageField(f, true, [&] {
        int32_t preceding_node = 0;
        Message(f, [&](auto& i) {
          if (i.Is("preceding_node")) {
            ScalarField(i, false, [&] { preceding_node = c_.Int32(i); });
          } else if (i.Is("preceding_port")) {
            ScalarField(i, false, [&] { c_.Int32(i); });
          } else {
            return false;
          }
          return true;
        });
        b_.AddCostInput(preceding_node);
      });
    } else if (f.Is("output_info")) {
      MessageField(f, true, [&] {
        int64_t size = 0;
        Message(f, [&](auto& o) {
          if (o.Is("size")) {
            ScalarField(o, false, [&] { size = Int64(o); });
          } else if (o.Is("alias_input_port")) {
            ScalarField(o, false, [&] { Int64(o); });
          } else if (o.Is("shape")) {
            bool unknown_rank = false;
            MessageField(o, false, [&] { TensorShape(false, &unknown_rank); });
          } else if (o.Is("dtype")) {
            ScalarField(o, false, [&] { c_.Enum(o, DtypeLookup); });
          } else {
            return false;
          }
          return true;
        });
        b_.AddCostOutputSize(size);
      });
    } else if (f.Is("temporary_memory_size")) {
      ScalarField(f, false, [&] { n.temporary_memory_size = Int64(f); });
    } else if (f.Is("persistent_memory_size")) {
      ScalarField(f, false, [&] { n.persistent_memory_size = Int64(f); });
    } else if (f.Is("is_final")) {
      ScalarField(f, false, [&] { n.is_final = c_.Bool(f); });
    } else if (f.Is("control_input")) {
      ScalarField(f, true, [&] { b_.AddCostControlInput(c_.Int32(f)); });
    } else if (f.Is("compute_cost")) {
      ScalarField(f, false, [&] { n.compute_cost = Int64(f); });
    } else if (f.Is("compute_time")) {
      ScalarField(f, false, [&] { n.compute_time = Int64(f); });
    } else if (f.Is("memory_time")) {
      ScalarField(f, false, [&] { n.memory_time = Int64(f); });
    } else if (f.Is("inaccurate")) {
      ScalarField(f, false, [&] { n.inaccurate = c_.Bool(f); });
    } else if (f.Is("host_temp_memory_size") || f.Is("device_temp_memory_size") ||
               f.Is("device_persistent_memory_size")) {
      ScalarField(f, false, [&] { Int64(f); });
    } else {
      return false;
    }
    return true;
  });
  b_.EndCostNode(n);
}

void TextParser::GraphDef(std::string_view field, const GraphKey& key) {
  const int32_t graph_index = b_.BeginGraph(key);
  Message(field, [&](auto& f) {
    if (!f.Is("node")) return false;
    MessageField(f, true, [&] {
      GraphNodeFields n;
      Message(f, [&](auto& d) {
        if (d.Is("name")) {
          c_.ExpectColon(d);
          n.name = InternString(d);
        } else if (d.Is("op")) {
          c_.ExpectColon(d);
          n.op = InternString(d);
        } else if (d.Is("device")) {
          c_.ExpectColon(d);
          n.device = InternString(d);
        } else if (d.Is("input")) {
          ScalarField(d, true, [&] { b_.AddGraphInput(CheckedString(d)); });
        } else if (d.Is("attr")) {
          return Ignore(d);
        } else {
          return false;
        }
        return true;
      });
      b_.EndGraphNode(graph_index, n);
    });
    return true;
  });
}

void TextParser::FunctionGraphs() {
  const auto fg = reinterpret_cast<uintptr_t>(c_.pos());
  Message("function_graphs", [&](auto& f) {
    if (f.Is("partition_graphs")) {
      MessageField(f, true, [&] {
        GraphDef(f, GraphKey{fg, 0, reinterpret_cast<uintptr_t>(c_.pos())});
      });
    } else if (f.Is("pre_optimization_graph") || f.Is("post_optimization_graph")) {
      const uint8_t slot = std::string_view(f) == "pre_optimization_graph" ? 1 : 2;
      MessageField(f, false, [&] { GraphDef(f, GraphKey{fg, slot, 0}); });
    } else {
      return false;
    }
    return true;
  });
}

}  // namespace

void ParseTextProto(const char* begin, const char* end, TraceSink& builder) {
  TextParser parser(begin, end, builder);
  parser.Run();
}

TraceKind DetectTextKind(const char* begin, const char* end) {
  TextCursor c(begin, end);
  for (;;) {
    c.SkipWhitespace();
    if (c.at_end()) return TraceKind::kUnknown;
    const std::string_view name = c.FieldName();
    if (name == "dev_stats") return TraceKind::kStepStats;
    if (name == "step_stats" || name == "cost_graph" || name == "partition_graphs" ||
        name == "function_graphs" || name == "session_metadata") {
      return TraceKind::kRunMetadata;
    }
    c.SkipValue(name);
    c.SkipFieldSeparator();
  }
}

std::vector<const char*> FindTextSplits(const char* begin, const char* end, TraceKind kind,
                                        size_t chunks) {
  // TensorFlow prints one field per line with two-space indentation: a device block starts at
  // "\ndev_stats {" (StepStats) or "\n  dev_stats {" (inside a RunMetadata's step_stats).
  const std::string_view needle = kind == TraceKind::kRunMetadata ? "\n  dev_stats {" : "\ndev_stats {";
  const size_t indent = kind == TraceKind::kRunMetadata ? 3 : 1;
  std::vector<const char*> splits;
  const size_t size = static_cast<size_t>(end - begin);
  const std::string_view all(begin, size);
  for (size_t k = 1; k < chunks; ++k) {
    size_t from = size / chunks * k;
    if (!splits.empty()) from = std::max(from, static_cast<size_t>(splits.back() - begin));
    const size_t at = all.find(needle, from);
    if (at == std::string_view::npos) break;
    const char* split = begin + at + indent;
    if (!splits.empty() && split <= splits.back()) continue;
    splits.push_back(split);
  }
  return splits;
}

void ParseTextChunk(const char* begin, const char* end, const char* start, const char* stop_at,
                    TraceKind kind, TraceSink& builder, TextChunkInfo* info) {
  TextParser parser(begin, end, builder);
  parser.SetChunk(start, stop_at, kind);
  parser.Run();
  *info = parser.info;
}

}  // namespace tracecore
