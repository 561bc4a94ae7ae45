#include "sink/trace_semantics.h"

#include <algorithm>
#include <unordered_set>
#include <utility>
#include <vector>

namespace tracecore {

DeviceKind ClassifyDevice(std::string_view device) {
  const size_t stream = device.rfind("/stream:");
  if (stream != std::string_view::npos) {
    return device.substr(stream + 8) == "all" ? DeviceKind::kStreamAll : DeviceKind::kStream;
  }
  if (device.size() >= 7 && device.substr(device.size() - 7) == "/memcpy") {
    return DeviceKind::kMemcpy;
  }
  // Executor devices: "/job:x/replica:0/task:0/device:GPU:0", "/device:CPU:0", and the old
  // "/job:x/replica:0/task:0/gpu:0" spelling.
  if (device.find("/device:") != std::string_view::npos ||
      device.find("/job:") != std::string_view::npos) {
    return DeviceKind::kExecutor;
  }
  return DeviceKind::kOther;
}

DeviceKind ClassifyXLine(std::string_view plane, std::string_view line) {
  if (plane.substr(0, 6) == "/host:") return DeviceKind::kHostThread;
  if (plane.substr(0, 8) != "/device:") return DeviceKind::kOther;
  struct Derived {
    std::string_view line;
    DeviceKind kind;
  };
  static constexpr Derived kDerivedLines[] = {
      {"XLA Ops", DeviceKind::kXlaOps},
      {"XLA Modules", DeviceKind::kXlaModules},
      {"Steps", DeviceKind::kSteps},
      {"Async XLA Ops", DeviceKind::kXlaAsyncOps},
      {"TensorFlow Ops", DeviceKind::kDerived},
      {"Framework Ops", DeviceKind::kDerived},
      {"TensorFlow Name Scope", DeviceKind::kDerived},
      {"Framework Name Scope", DeviceKind::kDerived},
      {"Source code", DeviceKind::kDerived},
      {"XLA TraceMe", DeviceKind::kDerived},
  };
  for (const Derived& d : kDerivedLines) {
    if (line == d.line) return d.kind;
  }
  return DeviceKind::kStream;
}

// The op of an event: "name = Op(inputs)" in the timeline label (after an optional
// "[allocator ...] " prefix), else the part after the last ':' of a GPU-stream record's
// "name:Op" node name. Returns false when there is none.
bool DeriveOp(std::string_view label, bool has_label, std::string_view node_name,
              std::string_view* op) {
  if (has_label) {
    std::string_view body = label;
    if (!body.empty() && body.front() == '[') {
      // Only "[...] " where the FIRST ']' is followed by a space is a prefix.
      const size_t close = body.find(']');
      if (close != std::string_view::npos && close + 1 < body.size() && body[close + 1] == ' ') {
        body.remove_prefix(close + 2);
      }
    }
    const size_t eq = body.find(" = ");
    if (eq != std::string_view::npos) {
      std::string_view rest = body.substr(eq + 3);
      const size_t paren = rest.find('(');
      if (paren != std::string_view::npos) {
        rest = rest.substr(0, paren);
      } else {
        const char* ws = " \t\n\r\f\v";
        const size_t b = rest.find_first_not_of(ws);
        rest = b == std::string_view::npos ? std::string_view() : rest.substr(b);
        const size_t e = rest.find_last_not_of(ws);
        rest = rest.substr(0, e == std::string_view::npos ? 0 : e + 1);
      }
      *op = rest;
      return true;
    }
  }
  const size_t colon = node_name.rfind(':');
  if (colon == std::string_view::npos) return false;
  *op = node_name.substr(colon + 1);
  return true;
}


void KeepLastThreadNames(ThreadNameTable& tn, int32_t device_index, size_t first_thread_name) {
  const size_t end = tn.size();
  if (end - first_thread_name < 2) return;
  // Entries of this block by (key, position): O(n log n), and nothing to do without duplicates.
  std::vector<size_t> order(end - first_thread_name);
  for (size_t i = 0; i < order.size(); ++i) order[i] = first_thread_name + i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return tn.thread_id[a] < tn.thread_id[b]; });
  bool duplicate = false;
  for (size_t i = 1; i < order.size() && !duplicate; ++i) {
    duplicate = tn.thread_id[order[i]] == tn.thread_id[order[i - 1]];
  }
  if (!duplicate) return;
  // For each key: its first position, and the entry holding its last value.
  std::vector<std::pair<size_t, size_t>> keep;  // (first position, last entry)
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && tn.thread_id[order[j + 1]] == tn.thread_id[order[i]]) ++j;
    keep.emplace_back(order[i], order[j]);
    i = j + 1;
  }
  std::sort(keep.begin(), keep.end());
  ThreadNameTable kept;
  for (const auto& [first, last] : keep) {
    kept.device_index.push_back(device_index);
    kept.thread_id.push_back(tn.thread_id[last]);
    kept.name.Append(std::string_view(tn.name.data.data() + tn.name.offsets[last],
                                      static_cast<size_t>(tn.name.offsets[last + 1] - tn.name.offsets[last])));
  }
  tn.device_index.resize(first_thread_name);
  tn.thread_id.resize(first_thread_name);
  tn.name.data.resize(static_cast<size_t>(tn.name.offsets[first_thread_name]));
  tn.name.offsets.resize(first_thread_name + 1);
  for (size_t i = 0; i < kept.size(); ++i) {
    tn.device_index.push_back(device_index);
    tn.thread_id.push_back(kept.thread_id[i]);
    tn.name.Append(std::string_view(kept.name.data.data() + kept.name.offsets[i],
                                    static_cast<size_t>(kept.name.offsets[i + 1] - kept.name.offsets[i])));
  }
}

// Renumbers graph_index in protobuf's order (see GraphKey), merging GraphDefs with equal keys,
// and reorders graph_nodes rows by the new index (stable: file order within one GraphDef).
// Canonical input (keys already strictly increasing) is left untouched.
void NormalizeGraphs(TraceTables& t) {
  const Column<GraphKey>& keys = t.graph_keys;
  bool canonical = true;
  for (size_t i = 1; i < keys.size() && canonical; ++i) canonical = keys[i - 1] < keys[i];
  if (canonical) {
    t.graph_keys.clear();
    return;
  }
  std::vector<int32_t> order(keys.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int32_t>(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return keys[a] < keys[b]; });
  std::vector<int32_t> renumber(keys.size());
  int32_t next = -1;
  for (size_t r = 0; r < order.size(); ++r) {
    if (r == 0 || !(keys[order[r - 1]] == keys[order[r]])) ++next;
    renumber[order[r]] = next;
  }
  GraphNodeTable& g = t.graph_nodes;
  const size_t n = g.size();
  std::vector<int32_t> rows(n);
  for (size_t i = 0; i < n; ++i) {
    g.graph_index[i] = renumber[g.graph_index[i]];
    rows[i] = static_cast<int32_t>(i);
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [&](int32_t a, int32_t b) { return g.graph_index[a] < g.graph_index[b]; });
  GraphNodeTable out;
  out.graph_index.reserve(n);
  out.name.reserve(n);
  out.op.reserve(n);
  out.device.reserve(n);
  for (int32_t r : rows) {
    out.graph_index.push_back(g.graph_index[r]);
    out.name.push_back(g.name[r]);
    out.op.push_back(g.op[r]);
    out.device.push_back(g.device[r]);
    for (int32_t k = g.inputs.offsets[r]; k < g.inputs.offsets[r + 1]; ++k) {
      const int32_t b = g.inputs.values.offsets[k];
      const int32_t e = g.inputs.values.offsets[k + 1];
      out.inputs.values.Append(std::string_view(g.inputs.values.data.data() + b,
                                                static_cast<size_t>(e - b)));
    }
    out.inputs.CloseRow();
  }
  g = std::move(out);
  t.graph_count = next + 1;
  t.graph_keys.clear();
}

void AssignStepStatsSteps(TraceTables& t) {
  EventTable& e = t.events;
  if (!e.step_id.empty() || e.size() == 0) return;
  const DeviceTable& d = t.devices;
  // Device blocks in file order: a block whose device already has a block in the current step
  // starts the next step.
  std::vector<int64_t> step_of_block(d.size(), 0);
  std::unordered_set<uint32_t> in_step;
  int64_t step = 0;
  for (size_t b = 0; b < d.size(); ++b) {
    if (!in_step.insert(d.device[b]).second) {
      ++step;
      in_step.clear();
      in_step.insert(d.device[b]);
    }
    step_of_block[b] = step;
  }
  e.step_id.reserve(e.size());
  e.step_id_valid.reserve(e.size());
  for (size_t i = 0; i < e.size(); ++i) {
    const auto block = static_cast<size_t>(e.device_index[i]);
    e.step_id.push_back(block < step_of_block.size() ? step_of_block[block] : 0);
    e.step_id_valid.push_back(1);
  }
}

void FinishDerivedColumns(TraceTables& t) {
  NormalizeGraphs(t);
  if (t.kind == TraceKind::kStepStats || t.kind == TraceKind::kRunMetadata) AssignStepStatsSteps(t);
  EventTable& e = t.events;
  e.event_id.clear();  // appended, not resized: no zeroing pass over fresh pages first
  e.event_id.reserve(e.size());
  for (size_t i = 0; i < e.size(); ++i) e.event_id.push_back(static_cast<int64_t>(i));
  DeviceTable& d = t.devices;
  d.kind = StringColumn();
  for (uint8_t kind : d.kind_code) d.kind.Append(DeviceKindName(static_cast<DeviceKind>(kind)));
}

}  // namespace tracecore
