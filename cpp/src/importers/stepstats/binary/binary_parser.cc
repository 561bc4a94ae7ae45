#include "importers/stepstats/binary/binary_parser.h"

#include <algorithm>
#include <climits>
#include <string_view>

#include "importers/protobuf/wire_reader.h"

namespace tracecore {
namespace {

using Bytes = std::string_view;

// The field handlers of Message (below) are inlined into its loop, so that the cursor they
// advance stays in a register: a handler GCC leaves out of line takes the cursor's address,
// and the loop then stores and reloads it around every field.
#define TC_FIELD __attribute__((always_inline))

// The key of field `field` with wire type `wt`: what the wire format writes before a value.
constexpr uint64_t K(uint32_t field, WireType wt) { return (uint64_t{field} << 3) | wt; }

class BinaryParser {
 public:
  // `limit`: the end of the readable input (see WireReader). `out_of_range_ok`: values out of
  // range are let through instead of failing the parse (CountBinaryUnknownFields).
  BinaryParser(const uint8_t* base, const uint8_t* limit, TraceSink& b, bool out_of_range_ok = false)
      : r_(base, limit), out_of_range_ok_(out_of_range_ok), b_(b) {}

  void RunMetadata(Bytes m);
  void StepStats(Bytes m);
  void DeviceStepStats(Bytes m);
  // Whether any top-level field was one of the message's own (not all unknown).
  bool saw_known_field() const { return saw_known_field_; }

 private:
  static const uint8_t* Begin(Bytes m) { return reinterpret_cast<const uint8_t*>(m.data()); }
  // A timeline_label that a second one replaces: never interned, so validated here (rare; out
  // of line to keep the node_stats loop small).
  __attribute__((noinline, cold)) void CheckReplacedLabel(std::string_view label, const uint8_t* at) const {
    if (!StringPool::IsValidUtf8(label)) r_.FailValue(at, "string is not valid UTF-8");
  }
  static const uint8_t* End(Bytes m) { return Begin(m) + m.size(); }

  // Decodes every field of message `m`, handing (key, cursor) to `on_key`, which consumes the
  // value and returns true for the keys (field number and wire type) it knows, or returns
  // false without consuming anything for a field that is skipped as unknown (including a known
  // number with an unexpected wire type, as protobuf does).
  template <class OnKey>
  __attribute__((always_inline)) void Message(Bytes m, OnKey&& on_key) {
    const uint8_t* p = Begin(m);
    const uint8_t* end = End(m);
    while (p < end) {
      const uint8_t* key_at = p;
      const uint64_t key = r_.Varint(p, end);
      if (!on_key(key, p, end)) p = Unknown(key_at, key, p, end);
    }
  }
  // Skips an unknown field's value; returns where it ends. Cold, and out of line with the
  // cursor by value (see WireReader::Varint).
  __attribute__((noinline)) const uint8_t* Unknown(const uint8_t* key_at, uint64_t key,
                                                   const uint8_t* p, const uint8_t* end) {
    const uint64_t field = key >> 3;
    if (field == 0 || field > 0x1FFFFFFF) {
      r_.Fail(key_at, "invalid field number " + std::to_string(field));
    }
    b_.CountUnknownField();
    return r_.Skip(static_cast<uint32_t>(field), static_cast<uint32_t>(key & 7), p, end);
  }

  // Typed values, after their key. Inlined, as the handlers (see TC_FIELD).
  __attribute__((always_inline)) int64_t Int64(const uint8_t*& p, const uint8_t* end) {
    return static_cast<int64_t>(r_.Varint(p, end));
  }
  __attribute__((always_inline)) int32_t Int32(const uint8_t*& p, const uint8_t* end) {
    return static_cast<int32_t>(static_cast<uint32_t>(r_.Varint(p, end)));
  }
  __attribute__((always_inline)) Bytes Sub(const uint8_t*& p, const uint8_t* end) {
    return r_.LengthDelimited(p, end);
  }
  __attribute__((always_inline)) Bytes String(const uint8_t*& p, const uint8_t* end) {
    const uint8_t* at = p;
    const Bytes s = r_.LengthDelimited(p, end);
    if (!StringPool::IsValidUtf8(s)) r_.FailValue(at, "string is not valid UTF-8");
    return s;
  }
  // `repeated`: for names that repeat record after record (allocators, devices).
  __attribute__((always_inline)) uint32_t Intern(const uint8_t*& p, const uint8_t* end,
                                                 bool repeated = false) {
    const uint8_t* at = p;
    const Bytes s = r_.LengthDelimited(p, end);
    const uint32_t id = repeated ? b_.InternRepeated(s) : b_.Intern(s);
    if (id == StringPool::kInvalidUtf8) r_.FailValue(at, "string is not valid UTF-8");
    return id;
  }
  // A repeated varint field, one value (wire type varint) or a packed run.
  template <class Each>
  __attribute__((always_inline)) void PackedVarints(const uint8_t*& p, const uint8_t* end, Each&& each) {
    const Bytes packed = r_.LengthDelimited(p, end);
    const uint8_t* q = Begin(packed);
    const uint8_t* q_end = End(packed);
    while (q < q_end) each(r_.Varint(q, q_end));
  }

  void NodeExecStats(Bytes m, int32_t device_index);
  void AllocatorMemoryUsed(Bytes m, int64_t event_id);
  void NodeOutput(Bytes m, int64_t event_id, int32_t output_index);
  void TensorDescription(Bytes m, TensorFields* t);
  void TensorShape(Bytes m, bool keep_dims, bool* unknown_rank);
  void AllocationDescription(Bytes m, TensorFields* t);
  void MemoryStats(Bytes m, int64_t event_id, EventFields* e);
  void CostGraph(Bytes m);
  void CostNode(Bytes m);
  void GraphDef(Bytes m, const GraphKey& key);
  void FunctionGraphs(Bytes m);
  void SessionMetadata(Bytes m) {
    Message(m, [&](uint64_t key, const uint8_t*& p, const uint8_t* end) TC_FIELD {
      switch (key) {
        case K(1, kLengthDelimited): String(p, end); return true;
        case K(2, kVarint): Int64(p, end); return true;
        default: return false;
      }
    });
  }

  // A value protobuf reads that a column cannot hold (TraceFormatError::out_of_range).
  void OutOfRange(const uint8_t* at, const char* what) {
    if (!out_of_range_ok_) r_.FailValue(at, what, true);
  }

  WireReader r_;
  bool out_of_range_ok_;
  bool saw_known_field_ = false;
  TraceSink& b_;
};

void BinaryParser::RunMetadata(Bytes m) {
  Message(m, [&](uint64_t key, const uint8_t*& p, const uint8_t* end) TC_FIELD {
    switch (key) {
      case K(1, kLengthDelimited): saw_known_field_ = true; StepStats(Sub(p, end)); return true;
      case K(2, kLengthDelimited): saw_known_field_ = true; CostGraph(Sub(p, end)); return true;
      case K(3, kLengthDelimited): {
        saw_known_field_ = true;
        const Bytes s = Sub(p, end);
        GraphDef(s, GraphKey{0, 0, reinterpret_cast<uintptr_t>(s.data())});
        return true;
      }
      case K(4, kLengthDelimited): saw_known_field_ = true; FunctionGraphs(Sub(p, end)); return true;
      case K(5, kLengthDelimited): saw_known_field_ = true; SessionMetadata(Sub(p, end)); return true;
      default: return false;
    }
  });
}

void BinaryParser::StepStats(Bytes m) {
  Message(m, [&](uint64_t key, const uint8_t*& p, const uint8_t* end) TC_FIELD {
    if (key != K(1, kLengthDelimited)) return false;
    saw_known_field_ = true;
    DeviceStepStats(Sub(p, end));
    return true;
  });
}

void BinaryParser::DeviceStepStats(Bytes m) {
  const int32_t device_index = b_.BeginDevice();
  const size_t first_event = b_.event_count();
  const size_t first_thread_name = b_.thread_name_count();
  uint32_t device = StringPool::kEmptyId;
  Message(m, [&](uint64_t key, const uint8_t*& p, const uint8_t* end) TC_FIELD {
    switch (key) {
      case K(1, kLengthDelimited): device = Intern(p, end, true); return true;
      case K(2, kLengthDelimited): NodeExecStats(Sub(p, end), device_index); return true;
      case K(3, kLengthDelimited): {
        uint32_t thread = 0;
        Bytes value;
        const uint64_t unknown_before = b_.unknown_field_count();
        Message(Sub(p, end), [&](uint64_t k, const uint8_t*& q, const uint8_t* qend) TC_FIELD {
          switch (k) {
            case K(1, kVarint): thread = static_cast<uint32_t>(r_.Varint(q, qend)); return true;
            case K(2, kLengthDelimited): value = String(q, qend); return true;
            default: return false;
          }
        });
        if (b_.unknown_field_count() == unknown_before) {
          b_.AddThreadName(device_index, thread, value);
        } else {
          // A map entry holding an unknown field is, as protobuf (upb) reads it, one unknown
          // field of the message, whole, and no entry of the map.
          b_.SetUnknownFieldCount(unknown_before + 1);
        }
        return true;
      }
      default: return false;
    }
  });
  b_.EndDevice(device_index, device, first_event, first_thread_name);
}

void BinaryParser::NodeExecStats(Bytes m, int32_t device_index) {
  const int64_t event_id = b_.BeginEvent();
  EventFields e;
  int32_t output_index = 0;
  const uint8_t* label_at = nullptr;
  Message(m, [&](uint64_t key, const uint8_t*& p, const uint8_t* end) TC_FIELD {
    switch (key) {
      case K(1, kLengthDelimited): {
        const uint8_t* at = p;
        e.node_name = b_.InternNodeName(r_.LengthDelimited(p, end));
        if (e.node_name == StringPool::kInvalidUtf8) r_.FailValue(at, "string is not valid UTF-8");
        return true;
      }
      case K(2, kVarint): e.all_start_micros = Int64(p, end); return true;
      case K(3, kVarint): e.op_start_rel_micros = Int64(p, end); return true;
      case K(4, kVarint): e.op_end_rel_micros = Int64(p, end); return true;
      case K(5, kVarint): e.all_end_rel_micros = Int64(p, end); return true;
      case K(6, kLengthDelimited): AllocatorMemoryUsed(Sub(p, end), event_id); return true;
      case K(7, kLengthDelimited): NodeOutput(Sub(p, end), event_id, output_index++); return true;
      case K(8, kLengthDelimited): {
        // Validated as UTF-8 when first interned (a repeated label is compared, not rescanned);
        // one that a later label replaces is never interned: checked here (rare).
        if (__builtin_expect(e.has_label, 0)) CheckReplacedLabel(e.label, label_at);
        label_at = p;
        e.label = r_.LengthDelimited(p, end);
        e.has_label = true;
        return true;
      }
      case K(9, kVarint): e.scheduled_micros = Int64(p, end); return true;
      case K(10, kVarint): e.thread_id = static_cast<uint32_t>(r_.Varint(p, end)); return true;
      case K(11, kLengthDelimited): {
        // referenced_tensor: not exported, but validated like every other field.
        TensorFields ignored;
        AllocationDescription(Sub(p, end), &ignored);
        return true;
      }
      case K(12, kLengthDelimited): MemoryStats(Sub(p, end), event_id, &e); return true;
      case K(13, kVarint): e.all_start_nanos = Int64(p, end); return true;
      case K(14, kVarint): e.op_start_rel_nanos = Int64(p, end); return true;
      case K(15, kVarint): e.op_end_rel_nanos = Int64(p, end); return true;
      case K(16, kVarint): e.all_end_rel_nanos = Int64(p, end); return true;
      case K(17, kVarint): e.scheduled_nanos = Int64(p, end); return true;
      default: return false;
    }
  });
  if (const char* error = b_.EndEvent(device_index, e)) {
    if (error == TraceSink::kTimeOutOfRange) {
      OutOfRange(Begin(m), error);
    } else {
      r_.FailValue(Begin(m), error);  // a label that is not UTF-8
    }
  }
  b_.Consumed(reinterpret_cast<const char*>(End(m)));
}

void BinaryParser::AllocatorMemoryUsed(Bytes m, int64_t event_id) {
  AllocationFields a;
  const size_t first_record = b_.alloc_record_count();
  Message(m, [&](uint64_t key, const uint8_t*& p, const uint8_t* end) TC_FIELD {
    switch (key) {
      case K(1, kLengthDelimited): a.allocator = Intern(p, end, true); return true;
      case K(2, kVarint): a.total_bytes = Int64(p, end); return true;
      case K(3, kVarint): a.peak_bytes = Int64(p, end); return true;
      case K(4, kVarint): a.live_bytes = Int64(p, end); return true;
      case K(5, kVarint): a.allocator_bytes_in_use = Int64(p, end); return true;
      case K(6, kLengthDelimited): {
        const Bytes s = Sub(p, end);
        int64_t micros = 0, bytes = 0;
        Message(s, [&](uint64_t k, const uint8_t*& q, const uint8_t* qend) TC_FIELD {
          switch (k) {
            case K(1, kVarint): micros = Int64(q, qend); return true;
            case K(2, kVarint): bytes = Int64(q, qend); return true;
            default: return false;
          }
        });
        bool overflow = false;
        b_.AddAllocRecord(event_id, micros, bytes, &overflow);
        if (overflow) OutOfRange(Begin(s), "alloc_micros out of range: nanoseconds overflow int64");
        return true;
      }
      default: return false;
    }
  });
  b_.EndAllocation(event_id, a, first_record);
}

void BinaryParser::NodeOutput(Bytes m, int64_t event_id, int32_t output_index) {
  TensorFields t;
  Message(m, [&](uint64_t key, const uint8_t*& p, const uint8_t* end) TC_FIELD {
    switch (key) {
      case K(1, kVarint): t.slot = Int32(p, end); return true;
      case K(3, kLengthDelimited): TensorDescription(Sub(p, end), &t); return true;
      default: return false;
    }
  });
  b_.EndTensor(event_id, output_index, t);
}

void BinaryParser::TensorDescription(Bytes m, TensorFields* t) {
  Message(m, [&](uint64_t key, const uint8_t*& p, const uint8_t* end) TC_FIELD {
    switch (key) {
      case K(1, kVarint): t->dtype = Int32(p, end); return true;
      case K(2, kLengthDelimited): TensorShape(Sub(p, end), true, &t->unknown_rank); return true;
      case K(4, kLengthDelimited): AllocationDescription(Sub(p, end), t); return true;
      default: return false;
    }
  });
}

void BinaryParser::TensorShape(Bytes m, bool keep_dims, bool* unknown_rank) {
  Message(m, [&](uint64_t key, const uint8_t*& p, const uint8_t* end) TC_FIELD {
    switch (key) {
      case K(2, kLengthDelimited): {
        int64_t size = 0;
        Message(Sub(p, end), [&](uint64_t k, const uint8_t*& q, const uint8_t* qend) TC_FIELD {
          switch (k) {
            case K(1, kVarint): size = Int64(q, qend); return true;
            case K(2, kLengthDelimited): String(q, qend); return true;
            default: return false;
          }
        });
        if (keep_dims) b_.AddDim(size);
        return true;
      }
      case K(3, kVarint): *unknown_rank = r_.Varint(p, end) != 0; return true;
      default: return false;
    }
  });
}

void BinaryParser::AllocationDescription(Bytes m, TensorFields* t) {
  Message(m, [&](uint64_t key, const uint8_t*& p, const uint8_t* end) TC_FIELD {
    switch (key) {
      case K(1, kVarint): t->requested_bytes = Int64(p, end); return true;
      case K(2, kVarint): t->allocated_bytes = Int64(p, end); return true;
      case K(3, kLengthDelimited): t->allocator = Intern(p, end, true); return true;
      case K(4, kVarint): t->allocation_id = Int64(p, end); return true;
      case K(5, kVarint): t->has_single_reference = r_.Varint(p, end) != 0; return true;
      case K(6, kVarint): t->ptr = r_.Varint(p, end); return true;
      default: return false;
    }
  });
}

void BinaryParser::MemoryStats(Bytes m, int64_t event_id, EventFields* e) {
  Message(m, [&](uint64_t key, const uint8_t*& p, const uint8_t* end) TC_FIELD {
    const auto keep = [&](uint64_t v) { b_.AddPersistentTensor(event_id, static_cast<int64_t>(v)); };
    switch (key) {
      case K(1, kVarint): e->temp_memory_size = Int64(p, end); return true;
      case K(2, kVarint): Int64(p, end); return true;
      case K(3, kVarint): e->persistent_memory_size = Int64(p, end); return true;
      case K(4, kVarint): Int64(p, end); return true;
      case K(5, kVarint): keep(r_.Varint(p, end)); return true;
      case K(5, kLengthDelimited): PackedVarints(p, end, keep); return true;
      case K(6, kVarint): r_.Varint(p, end); return true;
      case K(6, kLengthDelimited): PackedVarints(p, end, [](uint64_t) {}); return true;
      default: return false;
    }
  });
}

void BinaryParser::CostGraph(Bytes m) {
  Message(m, [&](uint64_t key, const uint8_t*& p, const uint8_t* end) TC_FIELD {
    switch (key) {
      case K(1, kLengthDelimited): CostNode(Sub(p, end)); return true;
      case K(2, kLengthDelimited):
        // AggregatedCost {float cost = 1; string dimension = 2;}: validated, not exported.
        Message(Sub(p, end), [&](uint64_t k, const uint8_t*& q, const uint8_t* qend) TC_FIELD {
          switch (k) {
            case K(1, kFixed32): q = r_.Skip(1, kFixed32, q, qend); return true;
            case K(2, kLengthDelimited): String(q, qend); return true;
            default: return false;
          }
        });
        return true;
      default: return false;
    }
  });
}

void BinaryParser::CostNode(Bytes m) {
  CostNodeFields n;
  Message(m, [&](uint64_t key, const uint8_t*& p, const uint8_t* end) TC_FIELD {
    const auto control_input = [&](uint64_t v) {
      b_.AddCostControlInput(static_cast<int32_t>(static_cast<uint32_t>(v)));
    };
    switch (key) {
      case K(1, kLengthDelimited): n.name = Intern(p, end); return true;
      case K(2, kLengthDelimited): n.device = Intern(p, end); return true;
      case K(3, kVarint): n.id = Int32(p, end); return true;
      case K(4, kLengthDelimited): {
        int32_t preceding_node = 0;
        Message(Sub(p, end), [&](uint64_t k, const uint8_t*& q, const uint8_t* qend) TC_FIELD {
          switch (k) {
            case K(1, kVarint): preceding_node = Int32(q, qend); return true;
            case K(2, kVarint): Int32(q, qend); return true;
            default: return false;
          }
        });
        b_.AddCostInput(preceding_node);
        return true;
      }
      case K(5, kLengthDelimited): {
        int64_t size = 0;
        Message(Sub(p, end), [&](uint64_t k, const uint8_t*& q, const uint8_t* qend) TC_FIELD {
          bool unknown_rank = false;
          switch (k) {
            case K(1, kVarint): size = Int64(q, qend); return true;
            case K(2, kVarint): Int64(q, qend); return true;
            case K(3, kLengthDelimited): TensorShape(Sub(q, qend), false, &unknown_rank); return true;
            case K(4, kVarint): Int32(q, qend); return true;
            default: return false;
          }
        });
        b_.AddCostOutputSize(size);
        return true;
      }
      case K(6, kVarint): n.temporary_memory_size = Int64(p, end); return true;
      case K(7, kVarint): n.is_final = r_.Varint(p, end) != 0; return true;
      case K(8, kVarint): control_input(r_.Varint(p, end)); return true;
      case K(8, kLengthDelimited): PackedVarints(p, end, control_input); return true;
      case K(9, kVarint): n.compute_cost = Int64(p, end); return true;
      case K(10, kVarint): case K(11, kVarint): case K(16, kVarint): Int64(p, end); return true;
      case K(12, kVarint): n.persistent_memory_size = Int64(p, end); return true;
      case K(14, kVarint): n.compute_time = Int64(p, end); return true;
      case K(15, kVarint): n.memory_time = Int64(p, end); return true;
      case K(17, kVarint): n.inaccurate = r_.Varint(p, end) != 0; return true;
      default: return false;
    }
  });
  b_.EndCostNode(n);
}

void BinaryParser::GraphDef(Bytes m, const GraphKey& key) {
  const int32_t graph_index = b_.BeginGraph(key);
  Message(m, [&](uint64_t k, const uint8_t*& p, const uint8_t* end) TC_FIELD {
    if (k != K(1, kLengthDelimited)) return false;
    GraphNodeFields n;
    Message(Sub(p, end), [&](uint64_t nk, const uint8_t*& q, const uint8_t* qend) TC_FIELD {
      switch (nk) {
        case K(1, kLengthDelimited): n.name = Intern(q, qend); return true;
        case K(2, kLengthDelimited): n.op = Intern(q, qend); return true;
        case K(3, kLengthDelimited): b_.AddGraphInput(String(q, qend)); return true;
        case K(4, kLengthDelimited): n.device = Intern(q, qend); return true;
        case K(5, kLengthDelimited): r_.LengthDelimited(q, qend); return true;  // attr: not kept
        default: return false;
      }
    });
    b_.EndGraphNode(graph_index, n);
    return true;
  });
}

void BinaryParser::FunctionGraphs(Bytes m) {
  const auto fg = reinterpret_cast<uintptr_t>(m.data());
  Message(m, [&](uint64_t key, const uint8_t*& p, const uint8_t* end) TC_FIELD {
    switch (key) {
      case K(1, kLengthDelimited): {
        const Bytes s = Sub(p, end);
        GraphDef(s, GraphKey{fg, 0, reinterpret_cast<uintptr_t>(s.data())});
        return true;
      }
      case K(2, kLengthDelimited): GraphDef(Sub(p, end), GraphKey{fg, 1, 0}); return true;
      case K(3, kLengthDelimited): GraphDef(Sub(p, end), GraphKey{fg, 2, 0}); return true;
      default: return false;
    }
  });
}

// Structural probes for kind detection: they never throw.
struct Probe {
  const uint8_t* p;
  const uint8_t* end;

  bool Varint(uint64_t* v) {
    uint64_t value = 0;
    for (int i = 0; i < 10 && p < end; ++i) {
      const uint8_t byte = *p++;
      value |= static_cast<uint64_t>(byte & 0x7F) << (7 * i);
      if (byte < 0x80) {
        *v = value;
        return true;
      }
    }
    return false;
  }
  // Reads one field; for length-delimited fields returns the payload.
  bool Next(uint32_t* field, uint32_t* wt, Bytes* payload) {
    uint64_t key, v;
    if (!Varint(&key)) return false;
    *field = static_cast<uint32_t>(key >> 3);
    *wt = static_cast<uint32_t>(key & 7);
    if (*field == 0) return false;
    switch (*wt) {
      case kVarint: return Varint(&v);
      case kFixed64: if (end - p < 8) return false; p += 8; return true;
      case kFixed32: if (end - p < 4) return false; p += 4; return true;
      case kLengthDelimited:
        if (!Varint(&v) || v > static_cast<uint64_t>(end - p)) return false;
        *payload = Bytes(reinterpret_cast<const char*>(p), static_cast<size_t>(v));
        p += v;
        return true;
      default: return false;
    }
  }
};

// What a planning walk over `data` has passed, released every 32 MB.
ReleaseBehind WalkRelease(const uint8_t* data, const ReleaseBehind::Release& release) {
  return ReleaseBehind(reinterpret_cast<const char*>(data), release, ptrdiff_t{32} << 20);
}
inline const char* Chars(const uint8_t* p) { return reinterpret_cast<const char*>(p); }

// True if `m` parses as a message whose fields 1..3 are length-delimited (the shape of a
// DeviceStepStats; other field numbers are unknown fields of any wire type).
bool LooksLikeDeviceStepStats(Bytes m) {
  Probe probe{reinterpret_cast<const uint8_t*>(m.data()),
              reinterpret_cast<const uint8_t*>(m.data()) + m.size()};
  uint32_t field, wt;
  Bytes payload;
  while (probe.p < probe.end) {
    if (!probe.Next(&field, &wt, &payload)) return false;
    if (field <= 3 && wt != kLengthDelimited) return false;
  }
  return true;
}

}  // namespace

TraceKind DetectBinaryKind(const uint8_t* data, size_t size,
                             const ReleaseBehind::Release& release_walked, bool* complete) {
  uint32_t field, wt;
  Bytes payload;
  // Any of RunMetadata's cost_graph, partition_graphs, function_graphs, session_metadata at the
  // top level decides it (a StepStats has only field 1). RunMetadata writes its fields in
  // number order, step_stats first, so they come at once; a StepStats dump is thousands of
  // top-level fields, and walking them all cost 4% of a parse (a page fault per field): with
  // `complete`, the walk stops after the first 64 (see ParseBinaryEitherKind).
  constexpr int kDetectFields = 64;
  const int limit = complete != nullptr ? kDetectFields : INT_MAX;
  if (complete != nullptr) *complete = true;
  ReleaseBehind walked = WalkRelease(data, release_walked);
  int fields = 0;
  for (Probe top{data, data + size}; top.p < top.end && top.Next(&field, &wt, &payload);) {
    if (wt == kLengthDelimited && field >= 2 && field <= 5) return TraceKind::kRunMetadata;
    walked.Passed(Chars(top.p));
    if (++fields == limit && top.p < top.end) {
      *complete = false;
      break;
    }
  }
  Probe top{data, data + size};
  while (top.p < top.end && top.Next(&field, &wt, &payload)) {
    if (wt != kLengthDelimited || field != 1) continue;
    // Field 1 is a DeviceStepStats (StepStats) or a StepStats (RunMetadata).
    Probe inner{reinterpret_cast<const uint8_t*>(payload.data()),
                reinterpret_cast<const uint8_t*>(payload.data()) + payload.size()};
    uint32_t f2, wt2;
    Bytes p2;
    while (inner.p < inner.end && inner.Next(&f2, &wt2, &p2)) {
      if (f2 == 2 || f2 == 3) return TraceKind::kStepStats;  // node_stats / thread_names
      if (f2 != 1 || wt2 != kLengthDelimited) continue;
      // A device name, or a DeviceStepStats. Bytes that are not UTF-8 are no device name:
      // protobuf's StepStats reading would fail on them.
      if (!p2.empty() && p2.front() == '/') return TraceKind::kStepStats;
      if (!p2.empty() && LooksLikeDeviceStepStats(p2)) return TraceKind::kRunMetadata;
      if (!p2.empty()) return StringPool::IsValidUtf8(p2) ? TraceKind::kStepStats : TraceKind::kRunMetadata;
    }
  }
  return TraceKind::kStepStats;
}

namespace {

// Fields smaller than this are not units of their own: they join the unit of whole fields
// before them, so that the plan takes a few bytes per kUnitBytes of input, not per field
// (100 M two-byte fields took 2.4 GB of units).
constexpr size_t kUnitBytes = size_t{64} << 10;

// Adds the whole field [begin, end) as a unit of `kind` (kStepStatsField or
// kRunMetadataField), joined to the previous unit when that is of the same kind, ends where the
// field begins (fields of the same message) and is still small.
void AddFieldUnit(std::vector<BinaryUnit>* units, BinaryUnit::Kind kind, const uint8_t* begin,
                  const uint8_t* end) {
  if (!units->empty()) {
    BinaryUnit& last = units->back();
    if (last.kind == kind && last.end == begin &&
        static_cast<size_t>(last.end - last.begin) < kUnitBytes) {
      last.end = end;
      return;
    }
  }
  units->push_back({kind, begin, end});
}

// A DeviceStepStats field [field_begin, field_end) with `payload`: a unit of its own when it is
// large, else a whole StepStats field (which reads the same).
void AddDeviceUnit(std::vector<BinaryUnit>* units, const uint8_t* field_begin,
                   const uint8_t* field_end, Bytes payload) {
  if (payload.size() < kUnitBytes) {
    AddFieldUnit(units, BinaryUnit::kStepStatsField, field_begin, field_end);
    return;
  }
  const auto* begin = reinterpret_cast<const uint8_t*>(payload.data());
  units->push_back({BinaryUnit::kDeviceStepStats, begin, begin + payload.size()});
}

}  // namespace

bool PlanBinaryUnits(const uint8_t* data, size_t size, TraceKind kind,
                     std::vector<BinaryUnit>* units, bool* any_device,
                     const ReleaseBehind::Release& release_walked) {
  units->clear();
  *any_device = false;
  Probe top{data, data + size};
  ReleaseBehind walked = WalkRelease(data, release_walked);
  while (top.p < top.end) {
    walked.Passed(Chars(top.p));
    const uint8_t* field_begin = top.p;
    uint32_t field, wt;
    Bytes payload;
    if (!top.Next(&field, &wt, &payload)) return false;
    const auto* payload_begin = reinterpret_cast<const uint8_t*>(payload.data());
    if (field == 1 && wt == kLengthDelimited) {
      if (kind == TraceKind::kStepStats) {
        *any_device = true;
        AddDeviceUnit(units, field_begin, top.p, payload);
        continue;
      }
      Probe inner{payload_begin, payload_begin + payload.size()};
      while (inner.p < inner.end) {
        walked.Passed(Chars(inner.p));
        const uint8_t* inner_begin = inner.p;
        uint32_t f2, wt2;
        Bytes p2;
        if (!inner.Next(&f2, &wt2, &p2)) return false;
        if (f2 == 1 && wt2 == kLengthDelimited) {
          *any_device = true;
          AddDeviceUnit(units, inner_begin, inner.p, p2);
        } else {
          AddFieldUnit(units, BinaryUnit::kStepStatsField, inner_begin, inner.p);
        }
      }
      continue;
    }
    AddFieldUnit(units,
                 kind == TraceKind::kStepStats ? BinaryUnit::kStepStatsField
                                               : BinaryUnit::kRunMetadataField,
                 field_begin, top.p);
  }
  return true;
}

void ParseBinaryUnits(const uint8_t* data, const BinaryUnit* first, const BinaryUnit* last,
                      TraceKind kind, TraceSink& builder) {
  builder.SetKind(kind);
  const uint8_t* limit = data;
  for (const BinaryUnit* u = first; u != last; ++u) limit = std::max(limit, u->end);
  BinaryParser parser(data, limit, builder);
  for (const BinaryUnit* u = first; u != last; ++u) {
    const Bytes bytes(reinterpret_cast<const char*>(u->begin), static_cast<size_t>(u->end - u->begin));
    switch (u->kind) {
      case BinaryUnit::kDeviceStepStats: parser.DeviceStepStats(bytes); break;
      case BinaryUnit::kStepStatsField: parser.StepStats(bytes); break;
      case BinaryUnit::kRunMetadataField: parser.RunMetadata(bytes); break;
    }
  }
}

namespace {
void ParseWhole(const uint8_t* data, size_t size, TraceKind kind, TraceSink& builder,
                bool out_of_range_ok) {
  if (size == 0) {
    throw TraceFormatError::AtByte(0, "empty input: expected a StepStats or RunMetadata message");
  }
  builder.SetKind(kind);
  BinaryParser parser(data, data + size, builder, out_of_range_ok);
  const Bytes all(reinterpret_cast<const char*>(data), size);
  if (kind == TraceKind::kRunMetadata) {
    parser.RunMetadata(all);
  } else {
    parser.StepStats(all);
  }
  if (!parser.saw_known_field()) {
    throw TraceFormatError::AtByte(0, "no StepStats or RunMetadata field found: every top-level field is unknown");
  }
}
}  // namespace

void ParseBinaryProto(const uint8_t* data, size_t size, TraceKind kind,
                      TraceSink& builder) {
  ParseWhole(data, size, kind, builder, false);
}

uint64_t CountBinaryUnknownFields(const uint8_t* data, size_t size, TraceKind kind,
                                  const ReleaseBehind::Release& release_read) {
  TraceTables tables;
  TraceSink builder(tables, false);
  builder.SetReleaser(reinterpret_cast<const char*>(data), release_read);
  ParseWhole(data, size, kind, builder, true);
  return tables.unknown_fields;
}

}  // namespace tracecore
