#include "importers/binary_proto/binary_parser.h"

#include <string_view>

#include "importers/binary_proto/wire_reader.h"

namespace tracecore {
namespace {

using Bytes = std::string_view;

class BinaryParser {
 public:
  BinaryParser(const uint8_t* base, TraceBuilder& b) : r_(base), b_(b) {}

  void RunMetadata(Bytes m);
  void StepStats(Bytes m);
  void DeviceStepStats(Bytes m);
  // Whether any top-level field was one of the message's own (not all unknown).
  bool saw_known_field() const { return saw_known_field_; }

 private:
  static const uint8_t* Begin(Bytes m) { return reinterpret_cast<const uint8_t*>(m.data()); }
  static const uint8_t* End(Bytes m) { return Begin(m) + m.size(); }

  // Decodes every field of message `m`, handing (field number, wire type, cursor) to
  // `on_field`, which consumes the value and returns true, or returns false without consuming
  // anything for a field that is skipped as unknown (including a known number with an
  // unexpected wire type, as protobuf does).
  template <class OnField>
  void Message(Bytes m, OnField&& on_field) {
    const uint8_t* p = Begin(m);
    const uint8_t* end = End(m);
    while (p < end) {
      const uint8_t* key_at = p;
      const uint64_t key = r_.Varint(p, end);
      const uint64_t field = key >> 3;
      const uint32_t wire_type = static_cast<uint32_t>(key & 7);
      if (field == 0 || field > 0x1FFFFFFF) {
        r_.Fail(key_at, "invalid field number " + std::to_string(field));
      }
      if (!on_field(static_cast<uint32_t>(field), wire_type, p, end)) {
        b_.CountUnknownField();
        r_.Skip(static_cast<uint32_t>(field), wire_type, p, end);
      }
    }
  }

  // Typed field readers: each returns false (consuming nothing) on a wire-type mismatch.
  bool Int64(uint32_t wt, const uint8_t*& p, const uint8_t* end, int64_t* out) {
    if (wt != kVarint) return false;
    *out = static_cast<int64_t>(r_.Varint(p, end));
    return true;
  }
  bool Int32(uint32_t wt, const uint8_t*& p, const uint8_t* end, int32_t* out) {
    if (wt != kVarint) return false;
    *out = static_cast<int32_t>(static_cast<uint32_t>(r_.Varint(p, end)));
    return true;
  }
  bool UInt32(uint32_t wt, const uint8_t*& p, const uint8_t* end, uint32_t* out) {
    if (wt != kVarint) return false;
    *out = static_cast<uint32_t>(r_.Varint(p, end));
    return true;
  }
  bool UInt64(uint32_t wt, const uint8_t*& p, const uint8_t* end, uint64_t* out) {
    if (wt != kVarint) return false;
    *out = r_.Varint(p, end);
    return true;
  }
  bool Bool(uint32_t wt, const uint8_t*& p, const uint8_t* end, bool* out) {
    if (wt != kVarint) return false;
    *out = r_.Varint(p, end) != 0;
    return true;
  }
  bool String(uint32_t wt, const uint8_t*& p, const uint8_t* end, Bytes* out) {
    if (wt != kLengthDelimited) return false;
    const uint8_t* at = p;
    *out = r_.LengthDelimited(p, end);
    if (!StringPool::IsValidUtf8(*out)) r_.Fail(at, "string is not valid UTF-8");
    return true;
  }
  bool Intern(uint32_t wt, const uint8_t*& p, const uint8_t* end, uint32_t* out) {
    return InternWith(wt, p, end, out, false);
  }
  // For names that repeat record after record (allocators, devices).
  bool InternRepeated(uint32_t wt, const uint8_t*& p, const uint8_t* end, uint32_t* out) {
    return InternWith(wt, p, end, out, true);
  }
  bool InternWith(uint32_t wt, const uint8_t*& p, const uint8_t* end, uint32_t* out, bool repeated) {
    if (wt != kLengthDelimited) return false;
    const uint8_t* at = p;
    const Bytes s = r_.LengthDelimited(p, end);
    const uint32_t id = repeated ? b_.InternRepeated(s) : b_.pool().Intern(s);
    if (id == StringPool::kInvalidUtf8) r_.Fail(at, "string is not valid UTF-8");
    *out = id;
    return true;
  }
  template <class Body>
  bool Sub(uint32_t wt, const uint8_t*& p, const uint8_t* end, Body&& body) {
    if (wt != kLengthDelimited) return false;
    body(r_.LengthDelimited(p, end));
    return true;
  }
  // A repeated varint field, packed (one length-delimited run) or not.
  template <class Each>
  bool RepeatedVarint(uint32_t wt, const uint8_t*& p, const uint8_t* end, Each&& each) {
    if (wt == kVarint) {
      each(r_.Varint(p, end));
      return true;
    }
    if (wt != kLengthDelimited) return false;
    const Bytes packed = r_.LengthDelimited(p, end);
    const uint8_t* q = Begin(packed);
    const uint8_t* q_end = End(packed);
    while (q < q_end) each(r_.Varint(q, q_end));
    return true;
  }
  // A known field whose value tracecore does not keep.
  bool Ignore(uint32_t field, uint32_t wt, const uint8_t*& p, const uint8_t* end) {
    r_.Skip(field, wt, p, end);
    return true;
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
    Message(m, [&](uint32_t f, uint32_t wt, const uint8_t*& p, const uint8_t* end) {
      Bytes name;
      int64_t version;
      if (f == 1) return String(wt, p, end, &name);
      if (f == 2) return Int64(wt, p, end, &version);
      return false;
    });
  }

  WireReader r_;
  bool saw_known_field_ = false;
  TraceBuilder& b_;
};

void BinaryParser::RunMetadata(Bytes m) {
  Message(m, [&](uint32_t f, uint32_t wt, const uint8_t*& p, const uint8_t* end) {
    if (f >= 1 && f <= 5 && wt == kLengthDelimited) saw_known_field_ = true;
    switch (f) {
      case 1: return Sub(wt, p, end, [&](Bytes s) { StepStats(s); });
      case 2: return Sub(wt, p, end, [&](Bytes s) { CostGraph(s); });
      case 3: return Sub(wt, p, end, [&](Bytes s) {
        GraphDef(s, GraphKey{0, 0, reinterpret_cast<uintptr_t>(s.data())});
      });
      case 4: return Sub(wt, p, end, [&](Bytes s) { FunctionGraphs(s); });
      case 5: return Sub(wt, p, end, [&](Bytes s) { SessionMetadata(s); });
      default: return false;
    }
  });
}

void BinaryParser::StepStats(Bytes m) {
  Message(m, [&](uint32_t f, uint32_t wt, const uint8_t*& p, const uint8_t* end) {
    if (f == 1 && wt == kLengthDelimited) saw_known_field_ = true;
    return f == 1 && Sub(wt, p, end, [&](Bytes s) { DeviceStepStats(s); });
  });
}

void BinaryParser::DeviceStepStats(Bytes m) {
  const int32_t device_index = b_.BeginDevice();
  const size_t first_event = b_.event_count();
  const size_t first_thread_name = b_.thread_name_count();
  uint32_t device = StringPool::kEmptyId;
  Message(m, [&](uint32_t f, uint32_t wt, const uint8_t*& p, const uint8_t* end) {
    switch (f) {
      case 1: return InternRepeated(wt, p, end, &device);
      case 2: return Sub(wt, p, end, [&](Bytes s) { NodeExecStats(s, device_index); });
      case 3:
        return Sub(wt, p, end, [&](Bytes s) {
          uint32_t key = 0;
          Bytes value;
          Message(s, [&](uint32_t ef, uint32_t ewt, const uint8_t*& q, const uint8_t* qend) {
            if (ef == 1) return UInt32(ewt, q, qend, &key);
            if (ef == 2) return String(ewt, q, qend, &value);
            return false;
          });
          b_.AddThreadName(device_index, key, value);
        });
      default: return false;
    }
  });
  b_.EndDevice(device_index, device, first_event, first_thread_name);
}

void BinaryParser::NodeExecStats(Bytes m, int32_t device_index) {
  const int64_t event_id = b_.BeginEvent();
  EventFields e;
  int32_t output_index = 0;
  Message(m, [&](uint32_t f, uint32_t wt, const uint8_t*& p, const uint8_t* end) {
    switch (f) {
      case 1: return Intern(wt, p, end, &e.node_name);
      case 2: return Int64(wt, p, end, &e.all_start_micros);
      case 3: return Int64(wt, p, end, &e.op_start_rel_micros);
      case 4: return Int64(wt, p, end, &e.op_end_rel_micros);
      case 5: return Int64(wt, p, end, &e.all_end_rel_micros);
      case 6: return Sub(wt, p, end, [&](Bytes s) { AllocatorMemoryUsed(s, event_id); });
      case 7: return Sub(wt, p, end, [&](Bytes s) { NodeOutput(s, event_id, output_index++); });
      case 8: {
        // Validated as UTF-8 when first interned (a repeated label is compared, not rescanned).
        if (wt != kLengthDelimited) return false;
        e.label = r_.LengthDelimited(p, end);
        e.has_label = true;
        return true;
      }
      case 9: return Int64(wt, p, end, &e.scheduled_micros);
      case 10: return UInt32(wt, p, end, &e.thread_id);
      case 11:
        // referenced_tensor: not exported, but validated like every other field.
        return Sub(wt, p, end, [&](Bytes s) {
          TensorFields ignored;
          AllocationDescription(s, &ignored);
        });
      case 12: return Sub(wt, p, end, [&](Bytes s) { MemoryStats(s, event_id, &e); });
      case 13: return Int64(wt, p, end, &e.all_start_nanos);
      case 14: return Int64(wt, p, end, &e.op_start_rel_nanos);
      case 15: return Int64(wt, p, end, &e.op_end_rel_nanos);
      case 16: return Int64(wt, p, end, &e.all_end_rel_nanos);
      case 17: return Int64(wt, p, end, &e.scheduled_nanos);
      default: return false;
    }
  });
  if (const char* error = b_.EndEvent(device_index, e)) {
    if (error == TraceBuilder::kTimeOutOfRange) r_.FailOutOfRange(Begin(m), error);
    r_.Fail(Begin(m), error);
  }
  b_.Consumed(reinterpret_cast<const char*>(End(m)));
}

void BinaryParser::AllocatorMemoryUsed(Bytes m, int64_t event_id) {
  AllocationFields a;
  const size_t first_record = b_.alloc_record_count();
  Message(m, [&](uint32_t f, uint32_t wt, const uint8_t*& p, const uint8_t* end) {
    switch (f) {
      case 1: return InternRepeated(wt, p, end, &a.allocator);
      case 2: return Int64(wt, p, end, &a.total_bytes);
      case 3: return Int64(wt, p, end, &a.peak_bytes);
      case 4: return Int64(wt, p, end, &a.live_bytes);
      case 5: return Int64(wt, p, end, &a.allocator_bytes_in_use);
      case 6:
        return Sub(wt, p, end, [&](Bytes s) {
          int64_t micros = 0, bytes = 0;
          Message(s, [&](uint32_t rf, uint32_t rwt, const uint8_t*& q, const uint8_t* qend) {
            if (rf == 1) return Int64(rwt, q, qend, &micros);
            if (rf == 2) return Int64(rwt, q, qend, &bytes);
            return false;
          });
          bool overflow = false;
          b_.AddAllocRecord(event_id, micros, bytes, &overflow);
          if (overflow) r_.FailOutOfRange(Begin(s), "alloc_micros out of range: nanoseconds overflow int64");
        });
      default: return false;
    }
  });
  b_.EndAllocation(event_id, a, first_record);
}

void BinaryParser::NodeOutput(Bytes m, int64_t event_id, int32_t output_index) {
  TensorFields t;
  Message(m, [&](uint32_t f, uint32_t wt, const uint8_t*& p, const uint8_t* end) {
    if (f == 1) return Int32(wt, p, end, &t.slot);
    if (f == 3) return Sub(wt, p, end, [&](Bytes s) { TensorDescription(s, &t); });
    return false;
  });
  b_.EndTensor(event_id, output_index, t);
}

void BinaryParser::TensorDescription(Bytes m, TensorFields* t) {
  Message(m, [&](uint32_t f, uint32_t wt, const uint8_t*& p, const uint8_t* end) {
    switch (f) {
      case 1: return Int32(wt, p, end, &t->dtype);
      case 2: return Sub(wt, p, end, [&](Bytes s) { TensorShape(s, true, &t->unknown_rank); });
      case 4: return Sub(wt, p, end, [&](Bytes s) { AllocationDescription(s, t); });
      default: return false;
    }
  });
}

void BinaryParser::TensorShape(Bytes m, bool keep_dims, bool* unknown_rank) {
  Message(m, [&](uint32_t f, uint32_t wt, const uint8_t*& p, const uint8_t* end) {
    if (f == 2) {
      return Sub(wt, p, end, [&](Bytes s) {
        int64_t size = 0;
        Message(s, [&](uint32_t df, uint32_t dwt, const uint8_t*& q, const uint8_t* qend) {
          if (df == 1) return Int64(dwt, q, qend, &size);
          if (df == 2) {
            Bytes name;
            return String(dwt, q, qend, &name);
          }
          return false;
        });
        if (keep_dims) b_.AddDim(size);
      });
    }
    if (f == 3) return Bool(wt, p, end, unknown_rank);
    return false;
  });
}

void BinaryParser::AllocationDescription(Bytes m, TensorFields* t) {
  Message(m, [&](uint32_t f, uint32_t wt, const uint8_t*& p, const uint8_t* end) {
    switch (f) {
      case 1: return Int64(wt, p, end, &t->requested_bytes);
      case 2: return Int64(wt, p, end, &t->allocated_bytes);
      case 3: return InternRepeated(wt, p, end, &t->allocator);
      case 4: return Int64(wt, p, end, &t->allocation_id);
      case 5: return Bool(wt, p, end, &t->has_single_reference);
      case 6: return UInt64(wt, p, end, &t->ptr);
      default: return false;
    }
  });
}

void BinaryParser::MemoryStats(Bytes m, int64_t event_id, EventFields* e) {
  Message(m, [&](uint32_t f, uint32_t wt, const uint8_t*& p, const uint8_t* end) {
    int64_t ignored;
    switch (f) {
      case 1: return Int64(wt, p, end, &e->temp_memory_size);
      case 2: return Int64(wt, p, end, &ignored);
      case 3: return Int64(wt, p, end, &e->persistent_memory_size);
      case 4: return Int64(wt, p, end, &ignored);
      case 5:
        return RepeatedVarint(wt, p, end, [&](uint64_t v) {
          b_.AddPersistentTensor(event_id, static_cast<int64_t>(v));
        });
      case 6: return RepeatedVarint(wt, p, end, [](uint64_t) {});
      default: return false;
    }
  });
}

void BinaryParser::CostGraph(Bytes m) {
  Message(m, [&](uint32_t f, uint32_t wt, const uint8_t*& p, const uint8_t* end) {
    if (f == 1) return Sub(wt, p, end, [&](Bytes s) { CostNode(s); });
    if (f == 2) {
      // AggregatedCost {float cost = 1; string dimension = 2;}: validated, not exported.
      return Sub(wt, p, end, [&](Bytes s) {
        Message(s, [&](uint32_t cf, uint32_t cwt, const uint8_t*& q, const uint8_t* qend) {
          Bytes dimension;
          if (cf == 1 && cwt == kFixed32) {
            r_.Skip(cf, cwt, q, qend);
            return true;
          }
          if (cf == 2) return String(cwt, q, qend, &dimension);
          return false;
        });
      });
    }
    return false;
  });
}

void BinaryParser::CostNode(Bytes m) {
  CostNodeFields n;
  CostGraphTable& cg = b_.cost_graph();
  Message(m, [&](uint32_t f, uint32_t wt, const uint8_t*& p, const uint8_t* end) {
    int64_t ignored;
    switch (f) {
      case 1: return Intern(wt, p, end, &n.name);
      case 2: return Intern(wt, p, end, &n.device);
      case 3: return Int32(wt, p, end, &n.id);
      case 4:
        return Sub(wt, p, end, [&](Bytes s) {
          int32_t preceding_node = 0, preceding_port = 0;
          Message(s, [&](uint32_t inf, uint32_t iwt, const uint8_t*& q, const uint8_t* qend) {
            if (inf == 1) return Int32(iwt, q, qend, &preceding_node);
            if (inf == 2) return Int32(iwt, q, qend, &preceding_port);
            return false;
          });
          cg.input_nodes.values.push_back(preceding_node);
        });
      case 5:
        return Sub(wt, p, end, [&](Bytes s) {
          int64_t size = 0, alias = 0;
          int32_t dtype = 0;
          Message(s, [&](uint32_t of, uint32_t owt, const uint8_t*& q, const uint8_t* qend) {
            bool unknown_rank = false;
            switch (of) {
              case 1: return Int64(owt, q, qend, &size);
              case 2: return Int64(owt, q, qend, &alias);
              case 3: return Sub(owt, q, qend, [&](Bytes sh) { TensorShape(sh, false, &unknown_rank); });
              case 4: return Int32(owt, q, qend, &dtype);
              default: return false;
            }
          });
          cg.output_sizes.values.push_back(size);
        });
      case 6: return Int64(wt, p, end, &n.temporary_memory_size);
      case 7: return Bool(wt, p, end, &n.is_final);
      case 8:
        return RepeatedVarint(wt, p, end, [&](uint64_t v) {
          cg.control_inputs.values.push_back(static_cast<int32_t>(static_cast<uint32_t>(v)));
        });
      case 9: return Int64(wt, p, end, &n.compute_cost);
      case 10: case 11: case 16: return Int64(wt, p, end, &ignored);
      case 12: return Int64(wt, p, end, &n.persistent_memory_size);
      case 14: return Int64(wt, p, end, &n.compute_time);
      case 15: return Int64(wt, p, end, &n.memory_time);
      case 17: return Bool(wt, p, end, &n.inaccurate);
      default: return false;
    }
  });
  b_.EndCostNode(n);
}

void BinaryParser::GraphDef(Bytes m, const GraphKey& key) {
  const int32_t graph_index = b_.BeginGraph(key);
  Message(m, [&](uint32_t f, uint32_t wt, const uint8_t*& p, const uint8_t* end) {
    if (f != 1) return false;
    return Sub(wt, p, end, [&](Bytes s) {
      GraphNodeFields n;
      Message(s, [&](uint32_t nf, uint32_t nwt, const uint8_t*& q, const uint8_t* qend) {
        switch (nf) {
          case 1: return Intern(nwt, q, qend, &n.name);
          case 2: return Intern(nwt, q, qend, &n.op);
          case 3: {
            Bytes input;
            if (!String(nwt, q, qend, &input)) return false;
            b_.AddGraphInput(input);
            return true;
          }
          case 4: return Intern(nwt, q, qend, &n.device);
          case 5: return nwt == kLengthDelimited && Ignore(nf, nwt, q, qend);
          default: return false;
        }
      });
      b_.EndGraphNode(graph_index, n);
    });
  });
}

void BinaryParser::FunctionGraphs(Bytes m) {
  Message(m, [&](uint32_t f, uint32_t wt, const uint8_t*& p, const uint8_t* end) {
    const auto fg = reinterpret_cast<uintptr_t>(m.data());
    if (f == 1) {
      return Sub(wt, p, end, [&](Bytes s) {
        GraphDef(s, GraphKey{fg, 0, reinterpret_cast<uintptr_t>(s.data())});
      });
    }
    if (f == 2 || f == 3) {
      return Sub(wt, p, end, [&](Bytes s) { GraphDef(s, GraphKey{fg, static_cast<uint8_t>(f), 0}); });
    }
    return false;
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

std::string DetectBinaryKind(const uint8_t* data, size_t size) {
  uint32_t field, wt;
  Bytes payload;
  // Any of RunMetadata's cost_graph, partition_graphs, function_graphs, session_metadata at the
  // top level decides it (a StepStats has only field 1).
  for (Probe top{data, data + size}; top.p < top.end && top.Next(&field, &wt, &payload);) {
    if (wt == kLengthDelimited && field >= 2 && field <= 5) return "RunMetadata";
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
      if (f2 == 2 || f2 == 3) return "StepStats";  // node_stats / thread_names
      if (f2 != 1 || wt2 != kLengthDelimited) continue;
      // A device name, or a DeviceStepStats.
      if (!p2.empty() && p2.front() == '/') return "StepStats";
      if (!p2.empty() && LooksLikeDeviceStepStats(p2)) return "RunMetadata";
      if (!p2.empty()) return "StepStats";
    }
  }
  return "StepStats";
}

bool PlanBinaryUnits(const uint8_t* data, size_t size, const std::string& kind,
                     std::vector<BinaryUnit>* units) {
  units->clear();
  Probe top{data, data + size};
  while (top.p < top.end) {
    const uint8_t* field_begin = top.p;
    uint32_t field, wt;
    Bytes payload;
    if (!top.Next(&field, &wt, &payload)) return false;
    const auto* payload_begin = reinterpret_cast<const uint8_t*>(payload.data());
    if (field == 1 && wt == kLengthDelimited) {
      if (kind == "StepStats") {
        units->push_back({BinaryUnit::kDeviceStepStats, payload_begin, payload_begin + payload.size()});
        continue;
      }
      Probe inner{payload_begin, payload_begin + payload.size()};
      while (inner.p < inner.end) {
        const uint8_t* inner_begin = inner.p;
        uint32_t f2, wt2;
        Bytes p2;
        if (!inner.Next(&f2, &wt2, &p2)) return false;
        const auto* p2_begin = reinterpret_cast<const uint8_t*>(p2.data());
        if (f2 == 1 && wt2 == kLengthDelimited) {
          units->push_back({BinaryUnit::kDeviceStepStats, p2_begin, p2_begin + p2.size()});
        } else {
          units->push_back({BinaryUnit::kStepStatsField, inner_begin, inner.p});
        }
      }
      continue;
    }
    units->push_back({kind == "StepStats" ? BinaryUnit::kStepStatsField : BinaryUnit::kRunMetadataField,
                      field_begin, top.p});
  }
  return true;
}

void ParseBinaryUnits(const uint8_t* data, const BinaryUnit* first, const BinaryUnit* last,
                      const std::string& kind, TraceBuilder& builder) {
  builder.tables().kind = kind;
  BinaryParser parser(data, builder);
  for (const BinaryUnit* u = first; u != last; ++u) {
    const Bytes bytes(reinterpret_cast<const char*>(u->begin), static_cast<size_t>(u->end - u->begin));
    switch (u->kind) {
      case BinaryUnit::kDeviceStepStats: parser.DeviceStepStats(bytes); break;
      case BinaryUnit::kStepStatsField: parser.StepStats(bytes); break;
      case BinaryUnit::kRunMetadataField: parser.RunMetadata(bytes); break;
    }
  }
}

void ParseBinaryProto(const uint8_t* data, size_t size, const std::string& kind,
                      TraceBuilder& builder) {
  if (size == 0) {
    throw TraceFormatError::AtByte(0, "empty input: expected a StepStats or RunMetadata message");
  }
  builder.tables().kind = kind;
  BinaryParser parser(data, builder);
  const Bytes all(reinterpret_cast<const char*>(data), size);
  if (kind == "RunMetadata") {
    parser.RunMetadata(all);
  } else {
    parser.StepStats(all);
  }
  if (!parser.saw_known_field()) {
    throw TraceFormatError::AtByte(0, "no StepStats or RunMetadata field found: every top-level field is unknown");
  }
}

}  // namespace tracecore
