// What the trace exports (Chrome JSON, Perfetto protobuf) lay out alike: one process per
// device name (pids 0, 1, ... in order of first appearance), one track per line of it (all the
// blocks of one device name and line; StepStats blocks have no line: one track per device),
// TensorFlow timeline.py's greedy lanes per track, one thread id per (track, lane) in order
// of first event; and the counter series handed in from Python.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tables/trace_tables.h"

namespace tracecore::trace_export {

// One counter series per name (the memory replay's bytes_in_use per allocator), series[i]
// indexing names, rows in the order given.
struct CounterSeries {
  std::string group;  // the process holding the counters ("Allocators")
  std::vector<std::string> names;
  const int32_t* series = nullptr;
  const int64_t* time_ns = nullptr;
  const int64_t* value = nullptr;
  size_t size = 0;
};

// A line of a device and its lanes.
struct LaneTrack {
  uint64_t pid = 0;
  bool has_line = false;
  uint32_t line = 0;                  // pool id, when has_line
  std::vector<int64_t> lane_ends{0};  // timeline.py's _assign_lanes starts with one lane at 0
  std::vector<int64_t> lane_tids{-1};  // -1: no event yet

  // timeline.py's _assign_lanes: the first lane whose last event ended before `start`.
  size_t AssignLane(int64_t start, int64_t end) {
    for (size_t lane = 0; lane < lane_ends.size(); ++lane) {
      if (start > lane_ends[lane]) {
        lane_ends[lane] = end;
        return lane;
      }
    }
    lane_ends.push_back(end);
    lane_tids.push_back(-1);
    return lane_ends.size() - 1;
  }
};

class DeviceLayout {
 public:
  // `extra_pids`: processes after the devices' (counters, steps) that number threads too.
  explicit DeviceLayout(const DeviceTable& d, size_t extra_pids = 2) {
    std::map<uint32_t, uint64_t> pids;
    std::map<std::pair<uint64_t, int64_t>, size_t> tracks;
    track_of_.resize(d.size());
    for (size_t i = 0; i < d.size(); ++i) {
      auto [it, added] = pids.emplace(d.device[i], process_names.size());
      if (added) process_names.push_back(d.device[i]);
      const bool has_line = d.line_valid[i] != 0;
      const int64_t line = has_line ? int64_t{d.line[i]} : -1;
      auto [tt, new_track] = tracks.emplace(std::make_pair(it->second, line), tracks_.size());
      if (new_track) {
        LaneTrack track;
        track.pid = it->second;
        track.has_line = has_line;
        track.line = has_line ? d.line[i] : 0;
        tracks_.push_back(std::move(track));
      }
      track_of_[i] = tt->second;
    }
    next_tid_.assign(process_names.size() + extra_pids, 0);
  }

  LaneTrack& TrackOf(int32_t device_index) {
    return tracks_[track_of_[static_cast<size_t>(device_index)]];
  }

  // The thread id of `lane` of `track`, numbered at its first use (*first = true then).
  int64_t Tid(LaneTrack& track, size_t lane, bool* first) {
    int64_t& tid = track.lane_tids[lane];
    *first = tid < 0;
    if (tid < 0) tid = next_tid_[track.pid]++;
    return tid;
  }

  std::vector<uint32_t> process_names;  // pool ids of the device names, by pid

 private:
  std::vector<LaneTrack> tracks_;
  std::vector<size_t> track_of_;  // per device_index
  std::vector<int64_t> next_tid_;  // per pid
};

}  // namespace tracecore::trace_export
