#include "export/perfetto_writer.h"

#include <algorithm>
#include <cstring>
#include <string_view>
#include <utility>

#include "core/error.h"
#include "io/output_file.h"

namespace tracecore::perfetto {
namespace {

// Field numbers of perfetto.protos messages (protos/perfetto/trace/...).
namespace trace_f {
constexpr uint32_t kPacket = 1;  // Trace.packet
}
namespace packet_f {
constexpr uint32_t kTimestamp = 8;
constexpr uint32_t kTrustedPacketSequenceId = 10;
constexpr uint32_t kTrackEvent = 11;
constexpr uint32_t kInternedData = 12;
constexpr uint32_t kSequenceFlags = 13;
constexpr uint32_t kTrackDescriptor = 60;
}  // namespace packet_f
namespace track_f {  // TrackDescriptor
constexpr uint32_t kUuid = 1;
constexpr uint32_t kName = 2;
constexpr uint32_t kProcess = 3;
constexpr uint32_t kParentUuid = 5;
constexpr uint32_t kCounter = 8;
}  // namespace track_f
namespace process_f {  // ProcessDescriptor
constexpr uint32_t kPid = 1;
constexpr uint32_t kProcessName = 6;
}  // namespace process_f
namespace counter_f {  // CounterDescriptor
constexpr uint32_t kUnit = 3;
constexpr uint64_t kUnitSizeBytes = 3;
}  // namespace counter_f
namespace event_f {  // TrackEvent
constexpr uint32_t kCategoryIids = 3;
constexpr uint32_t kType = 9;
constexpr uint32_t kNameIid = 10;
constexpr uint32_t kTrackUuid = 11;
constexpr uint32_t kName = 23;
constexpr uint32_t kCounterValue = 30;
constexpr uint64_t kSliceBegin = 1;
constexpr uint64_t kSliceEnd = 2;
constexpr uint64_t kCounter = 4;
}  // namespace event_f
namespace interned_f {  // InternedData; EventName and EventCategory are {iid = 1, name = 2}
constexpr uint32_t kEventCategories = 1;
constexpr uint32_t kEventNames = 2;
constexpr uint32_t kIid = 1;
constexpr uint32_t kName = 2;
}  // namespace interned_f
constexpr uint64_t kSeqIncrementalStateCleared = 1;
constexpr uint64_t kSeqNeedsIncrementalState = 2;
constexpr uint64_t kSequenceId = 1;  // every packet is on one sequence

constexpr uint32_t kVarint = 0, kLengthDelimited = 2;

// A message under construction; cleared and refilled, its capacity kept.
class Message {
 public:
  void Clear() { bytes_.clear(); }
  size_t size() const { return bytes_.size(); }
  const std::string& bytes() const { return bytes_; }
  bool empty() const { return bytes_.empty(); }

  void Varint(uint64_t v) {
    char buf[10];
    size_t n = 0;
    while (v >= 0x80) {
      buf[n++] = static_cast<char>((v & 0x7F) | 0x80);
      v >>= 7;
    }
    buf[n++] = static_cast<char>(v);
    bytes_.append(buf, n);
  }
  void Tag(uint32_t field, uint32_t wire_type) { Varint((uint64_t{field} << 3) | wire_type); }
  void UInt(uint32_t field, uint64_t v) {
    Tag(field, kVarint);
    Varint(v);
  }
  void Int(uint32_t field, int64_t v) { UInt(field, static_cast<uint64_t>(v)); }
  void Bytes(uint32_t field, std::string_view s) {
    Tag(field, kLengthDelimited);
    Varint(s.size());
    bytes_.append(s.data(), s.size());
  }
  void Nested(uint32_t field, const Message& m) { Bytes(field, m.bytes_); }

 private:
  std::string bytes_;
};

// The output file, written through a buffer of 1 MiB.
class Output {
 public:
  explicit Output(const std::string& path) : file_(path) { buffer_.reserve(kBuffer); }

  void Append(const char* data, size_t n) {
    if (buffer_.size() + n > kBuffer) Flush();
    if (n > kBuffer) {
      WriteAll(data, n);
      return;
    }
    buffer_.append(data, n);
  }
  void Flush() {
    WriteAll(buffer_.data(), buffer_.size());
    buffer_.clear();
  }
  void Close() {
    Flush();
    file_.Close();
  }
  uint64_t written() const { return written_ + buffer_.size(); }

 private:
  static constexpr size_t kBuffer = size_t{1} << 20;

  void WriteAll(const char* data, size_t n) {
    file_.Write(data, n);
    written_ += n;
  }

  OutputFile file_;
  std::string buffer_;
  uint64_t written_ = 0;
};

class Writer {
 public:
  Writer(const TraceTables& t, const std::string& path)
      : t_(t), out_(path), layout_(t.devices) {
    interned_.assign(t_.pool.size(), 0);
  }

  WriteStats Run(const CounterSeries* counters, const StepSpans* steps) {
    for (size_t pid = 0; pid < layout_.process_names.size(); ++pid) {
      ProcessTrack(pid, t_.pool.Get(layout_.process_names[pid]));
    }
    Events();
    const uint64_t counter_pid = layout_.process_names.size();
    if (counters != nullptr && counters->size > 0) Counters(*counters, counter_pid);
    if (steps != nullptr && steps->size > 0) Steps(*steps, counter_pid + 1);
    out_.Close();
    stats_.bytes = out_.written();
    return stats_;
  }

 private:
  using Track = trace_export::LaneTrack;

  // Ends the packet under construction: wraps it as a Trace.packet and writes it.
  void EmitPacket() {
    packet_.UInt(packet_f::kTrustedPacketSequenceId, kSequenceId);
    uint64_t flags = packet_flags_;
    if (first_packet_) flags |= kSeqIncrementalStateCleared;
    if (flags != 0) packet_.UInt(packet_f::kSequenceFlags, flags);
    first_packet_ = false;
    packet_flags_ = 0;
    head_.Clear();
    head_.Tag(trace_f::kPacket, kLengthDelimited);
    head_.Varint(packet_.size());
    out_.Append(head_.bytes().data(), head_.size());
    out_.Append(packet_.bytes().data(), packet_.size());
    packet_.Clear();
    ++stats_.packets;
  }

  void EmitTrackDescriptor() {
    packet_.Nested(packet_f::kTrackDescriptor, track_);
    track_.Clear();
    EmitPacket();
    ++stats_.tracks;
  }

  void ProcessTrack(uint64_t pid, std::string_view name) {
    inner_.Clear();
    inner_.UInt(process_f::kPid, pid + 1);  // pid 0 is the idle task to Perfetto
    inner_.Bytes(process_f::kProcessName, name);
    track_.UInt(track_f::kUuid, TrackUuid(pid, -1));
    track_.Bytes(track_f::kName, name);
    track_.Nested(track_f::kProcess, inner_);
    EmitTrackDescriptor();
  }

  void ChildTrack(uint64_t pid, int64_t tid, std::string_view name) {
    track_.UInt(track_f::kUuid, TrackUuid(pid, tid));
    track_.UInt(track_f::kParentUuid, TrackUuid(pid, -1));
    track_.Bytes(track_f::kName, name);
    EmitTrackDescriptor();
  }

  // The uuid of the child track of `track` lane `lane`, its descriptor written at first use.
  // A track without a line is named `unnamed`.
  uint64_t LaneUuid(Track& track, size_t lane, std::string_view unnamed = "ops") {
    bool first;
    const int64_t tid = layout_.Tid(track, lane, &first);
    if (first) {
      name_.assign(track.has_line ? t_.pool.Get(track.line) : unnamed);
      if (lane > 0) name_.append(" (").append(std::to_string(lane)).append(")");
      ChildTrack(track.pid, tid, name_);
    }
    return TrackUuid(track.pid, tid);
  }

  static uint64_t Timestamp(int64_t ns) { return ns < 0 ? 0 : static_cast<uint64_t>(ns); }

  void Events() {
    const auto& e = t_.events;
    const size_t n = e.size();
    for (size_t i = 0; i < n; ++i) {
      const int64_t start = e.start_ns[i];
      const int64_t end = std::max(e.end_ns[i], start);
      Track& track = layout_.TrackOf(e.device_index[i]);
      const uint64_t uuid = LaneUuid(track, track.AssignLane(start, end));
      const uint32_t name = e.node_name[i];
      const bool has_op = e.op_valid[i] != 0;
      const uint32_t op = has_op ? e.op[i] : 0;

      inner_.Clear();  // the InternedData of this packet: names first seen here
      if (has_op && (interned_[op] & 2) == 0) {
        interned_[op] |= 2;
        entry_.Clear();
        entry_.UInt(interned_f::kIid, uint64_t{op} + 1);
        entry_.Bytes(interned_f::kName, t_.pool.Get(op));
        inner_.Nested(interned_f::kEventCategories, entry_);
      }
      if ((interned_[name] & 1) == 0) {
        interned_[name] |= 1;
        entry_.Clear();
        entry_.UInt(interned_f::kIid, uint64_t{name} + 1);
        entry_.Bytes(interned_f::kName, t_.pool.Get(name));
        inner_.Nested(interned_f::kEventNames, entry_);
      }
      event_.Clear();
      if (has_op) event_.UInt(event_f::kCategoryIids, uint64_t{op} + 1);
      event_.UInt(event_f::kType, event_f::kSliceBegin);
      event_.UInt(event_f::kNameIid, uint64_t{name} + 1);
      event_.UInt(event_f::kTrackUuid, uuid);
      packet_.UInt(packet_f::kTimestamp, Timestamp(start));
      packet_.Nested(packet_f::kTrackEvent, event_);
      if (!inner_.empty()) packet_.Nested(packet_f::kInternedData, inner_);
      packet_flags_ = kSeqNeedsIncrementalState;
      EmitPacket();
      EndSlice(uuid, end);
      ++stats_.slices;
    }
  }

  void EndSlice(uint64_t uuid, int64_t end) {
    event_.Clear();
    event_.UInt(event_f::kType, event_f::kSliceEnd);
    event_.UInt(event_f::kTrackUuid, uuid);
    packet_.UInt(packet_f::kTimestamp, Timestamp(end));
    packet_.Nested(packet_f::kTrackEvent, event_);
    EmitPacket();
  }

  void Counters(const CounterSeries& c, uint64_t pid) {
    ProcessTrack(pid, c.group);
    std::vector<uint8_t> described(c.names.size(), 0);
    for (size_t i = 0; i < c.size; ++i) {
      const int32_t s = c.series[i];
      if (s < 0 || static_cast<size_t>(s) >= c.names.size()) continue;
      const uint64_t uuid = TrackUuid(pid, s);
      if (!described[static_cast<size_t>(s)]) {
        described[static_cast<size_t>(s)] = 1;
        inner_.Clear();
        inner_.UInt(counter_f::kUnit, counter_f::kUnitSizeBytes);
        track_.UInt(track_f::kUuid, uuid);
        track_.UInt(track_f::kParentUuid, TrackUuid(pid, -1));
        track_.Bytes(track_f::kName, c.names[static_cast<size_t>(s)]);
        track_.Nested(track_f::kCounter, inner_);
        EmitTrackDescriptor();
      }
      event_.Clear();
      event_.UInt(event_f::kType, event_f::kCounter);
      event_.UInt(event_f::kTrackUuid, uuid);
      event_.Int(event_f::kCounterValue, c.value[i]);
      packet_.UInt(packet_f::kTimestamp, Timestamp(c.time_ns[i]));
      packet_.Nested(packet_f::kTrackEvent, event_);
      EmitPacket();
      ++stats_.counter_values;
    }
  }

  void Steps(const StepSpans& s, uint64_t pid) {
    ProcessTrack(pid, "Steps");
    Track track;  // steps may overlap (XSpace step groups): lanes, as the events
    track.pid = pid;
    for (size_t i = 0; i < s.size; ++i) {
      const int64_t start = s.start_ns[i];
      const int64_t end = std::max(s.end_ns[i], start);
      const uint64_t uuid = LaneUuid(track, track.AssignLane(start, end), "steps");
      name_.assign("step ").append(std::to_string(s.step[i]));
      event_.Clear();
      event_.UInt(event_f::kType, event_f::kSliceBegin);
      event_.Bytes(event_f::kName, name_);
      event_.UInt(event_f::kTrackUuid, uuid);
      packet_.UInt(packet_f::kTimestamp, Timestamp(start));
      packet_.Nested(packet_f::kTrackEvent, event_);
      EmitPacket();
      EndSlice(uuid, end);
    }
  }

  const TraceTables& t_;
  Output out_;
  WriteStats stats_;
  trace_export::DeviceLayout layout_;
  std::vector<uint8_t> interned_;  // per pool id: 1 = event name sent, 2 = category sent
  Message packet_, event_, track_, inner_, entry_, head_;
  std::string name_;
  bool first_packet_ = true;
  uint64_t packet_flags_ = 0;
};

}  // namespace

WriteStats WritePerfettoTrace(const TraceTables& tables, const std::string& path,
                              const CounterSeries* counters, const StepSpans* steps) {
  Writer writer(tables, path);
  return writer.Run(counters, steps);
}

}  // namespace tracecore::perfetto
