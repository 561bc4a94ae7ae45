// Binds the queries: arguments in, result tables out as Arrow capsules; the GIL is released
// while the core computes.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <optional>
#include <string>

#include "bindings.h"
#include "export/chrome_writer.h"
#include "export/perfetto_writer.h"
#include "query/group_stats.h"
#include "query/queries.h"

namespace py = pybind11;

namespace tracecore::bindings {
namespace {

using Mask = py::array_t<uint8_t, py::array::c_style | py::array::forcecast>;
using Int64s = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;
using Int32s = py::array_t<int32_t, py::array::c_style | py::array::forcecast>;

py::array_t<int64_t> ToArray(const std::vector<int64_t>& v) {
  py::array_t<int64_t> out(static_cast<py::ssize_t>(v.size()));
  if (!v.empty()) std::memcpy(out.mutable_data(), v.data(), v.size() * sizeof(int64_t));
  return out;
}

// group_stats' result as Python sees it: one int64 array per statistic.
py::dict StatsDict(const query::GroupStats& s, bool with_weight) {
  py::dict out;
  out["n_events"] = ToArray(s.n);
  out["total_ns"] = ToArray(s.total_ns);
  out["max_ns"] = ToArray(s.max_ns);
  out["busy_ns"] = ToArray(s.busy_ns);
  out["first_start_ns"] = ToArray(s.first_start_ns);
  out["last_end_ns"] = ToArray(s.last_end_ns);
  if (with_weight) out["weight"] = ToArray(s.weight);
  return out;
}

const int64_t* Column(const Int64s& a, size_t n, const char* what) {
  if (a.ndim() != 1 || static_cast<size_t>(a.shape(0)) != n) {
    throw py::value_error(std::string(what) + " must have one entry per row of start");
  }
  return a.data();
}

// The rows of a group_stats call: start (one-dimensional) and end, checked, and n_groups >= 0.
query::GroupedIntervals GroupRows(const Int64s& start, const Int64s& end, int64_t n_groups) {
  if (start.ndim() != 1) throw py::value_error("start must be one-dimensional");
  if (n_groups < 0) throw py::value_error("n_groups must be >= 0");
  query::GroupedIntervals rows;
  rows.size = static_cast<size_t>(start.shape(0));
  rows.start = start.data();
  rows.end = Column(end, rows.size, "end");
  return rows;
}

// The counter series both trace exports take, from the arrays Python hands over.
trace_export::CounterSeries CounterArrays(const std::string& group, std::vector<std::string> names,
                                          const Int32s& series, const Int64s& time_ns,
                                          const Int64s& value) {
  if (series.ndim() != 1) throw py::value_error("series must be one-dimensional");
  trace_export::CounterSeries counters;
  counters.group = group;
  counters.names = std::move(names);
  counters.size = static_cast<size_t>(series.shape(0));
  counters.series = series.data();
  counters.time_ns = Column(time_ns, counters.size, "time_ns");
  counters.value = Column(value, counters.size, "value");
  return counters;
}

// The step columns both trace exports take: the step number and two columns of as many rows.
struct StepArrays {
  const int64_t* step;
  const int64_t* first;
  const int64_t* second;
  size_t size;
};

StepArrays StepColumns(const Int64s& step, const Int64s& first, const char* first_name,
                       const Int64s& second, const char* second_name) {
  if (step.ndim() != 1) throw py::value_error("step must be one-dimensional");
  const size_t n = static_cast<size_t>(step.shape(0));
  return {step.data(), Column(first, n, first_name), Column(second, n, second_name), n};
}

// Exports a query result; the capsules own both the result and the trace whose pool it indexes.
template <class Result>
py::tuple Export(const PyTrace& trace, Result&& result) {
  struct Holder {
    std::shared_ptr<const TraceTables> trace;
    Result result;
  };
  auto holder = std::make_shared<Holder>(Holder{trace.tables, std::forward<Result>(result)});
  return ExportCapsules(holder->result.View(), trace.tables->pool, holder);
}

const uint8_t* MaskData(const std::optional<Mask>& mask, size_t n, const char* what) {
  if (!mask) return nullptr;
  if (mask->ndim() != 1 || static_cast<size_t>(mask->shape(0)) != n) {
    throw py::value_error(std::string(what) + " mask must have one entry per event");
  }
  return mask->data();
}

uint32_t AllocatorId(const PyTrace& trace, const std::optional<std::string>& allocator) {
  if (!allocator) return StringPool::kNotFound;
  const uint32_t id = trace.tables->pool.Find(*allocator);
  // An allocator name that is no string of the trace matches nothing.
  return id == StringPool::kNotFound ? StringPool::kNotFound - 1 : id;
}

}  // namespace

void RegisterQueries(py::module_& m) {
  m.def(
      "overlaps",
      [](const PyTrace& trace, std::optional<Mask> left, std::optional<Mask> right, bool same_device,
         uint64_t max_output_bytes) {
        const size_t n = trace.tables->events.size();
        const uint8_t* l = MaskData(left, n, "left");
        const uint8_t* r = MaskData(right, n, "right");
        query::PairTable result;
        {
          py::gil_scoped_release release;
          result = query::Overlaps(*trace.tables, l, r, same_device, max_output_bytes);
        }
        return Export(trace, std::move(result));
      },
      py::arg("trace"), py::arg("left"), py::arg("right"), py::arg("same_device"),
      py::arg("max_output_bytes") = query::kDefaultMaxOutputBytes);

  m.def(
      "window",
      [](const PyTrace& trace, int64_t start_ns, int64_t end_ns) {
        std::vector<int64_t> ids;
        {
          py::gil_scoped_release release;
          PyTrace::Indexes& idx = *trace.indexes;
          std::call_once(idx.interval_once, [&] {
            idx.interval = std::make_shared<const query::IntervalIndex>(trace.tables->events);
          });
          ids = idx.interval->Window(start_ns, end_ns);
        }
        py::array_t<int64_t> out(static_cast<py::ssize_t>(ids.size()));
        if (!ids.empty()) std::memcpy(out.mutable_data(), ids.data(), ids.size() * sizeof(int64_t));
        return out;
      },
      py::arg("trace"), py::arg("start_ns"), py::arg("end_ns"));

  m.def(
      "occupancy",
      [](const PyTrace& trace, std::optional<int64_t> bin_ns, uint64_t max_output_bytes) -> py::tuple {
        if (bin_ns) {
          query::OccupancyBinsTable result;
          {
            py::gil_scoped_release release;
            result = query::OccupancyBins(*trace.tables, *bin_ns, max_output_bytes);
          }
          return Export(trace, std::move(result));
        }
        query::OccupancyTable result;
        {
          py::gil_scoped_release release;
          result = query::Occupancy(*trace.tables);
        }
        return Export(trace, std::move(result));
      },
      py::arg("trace"), py::arg("bin_ns"), py::arg("max_output_bytes") = query::kDefaultMaxOutputBytes);

  m.def(
      "occupancy_bin_rows",
      [](const PyTrace& trace, int64_t bin_ns) {
        py::gil_scoped_release release;
        return query::OccupancyBinRows(*trace.tables, bin_ns);
      },
      py::arg("trace"), py::arg("bin_ns"),
      "The rows occupancy(bin_ns) would make (capped at 2**64 - 1), without making them.");
  m.attr("OCCUPANCY_BIN_ROW_BYTES") = query::kOccupancyBinRowBytes;

  m.attr("DEFAULT_MAX_OUTPUT_BYTES") = query::kDefaultMaxOutputBytes;

  m.def(
      "replay",
      [](const PyTrace& trace, const std::string& source, std::optional<std::string> allocator,
         bool snapshot_baseline, bool with_live, std::optional<Mask> event_mask,
         std::optional<Mask> record_mask) {
        if (source != "records" && source != "tensors") {
          throw py::value_error("source must be 'records' or 'tensors', not '" + source + "'");
        }
        const uint32_t only = AllocatorId(trace, allocator);
        const uint8_t* events = MaskData(event_mask, trace.tables->events.size(), "event");
        const uint8_t* records = nullptr;
        if (record_mask) {
          if (record_mask->ndim() != 1 ||
              static_cast<size_t>(record_mask->shape(0)) != trace.tables->alloc_records.size()) {
            throw py::value_error("record mask must have one entry per allocation record");
          }
          records = record_mask->data();
        }
        query::Replay result;
        {
          py::gil_scoped_release release;
          result = source == "records"
                       ? query::ReplayRecords(*trace.tables, only, snapshot_baseline, with_live,
                                              records, events)
                       : query::ReplayTensors(*trace.tables, only, events);
        }
        return py::make_tuple(Export(trace, std::move(result.timeline)),
                              Export(trace, std::move(result.peaks)),
                              Export(trace, std::move(result.live)));
      },
      py::arg("trace"), py::arg("source"), py::arg("allocator"), py::arg("snapshot_baseline"),
      py::arg("with_live") = true, py::arg("event_mask") = py::none(),
      py::arg("record_mask") = py::none());

  m.def(
      "op_stats",
      [](const PyTrace& trace, const std::string& by) {
        query::GroupBy group;
        if (by == "op") {
          group = query::GroupBy::kOp;
        } else if (by == "node_name") {
          group = query::GroupBy::kNodeName;
        } else if (by == "device") {
          group = query::GroupBy::kDevice;
        } else {
          throw py::value_error("by must be 'op', 'node_name' or 'device', not '" + by + "'");
        }
        query::OpStatsTable result;
        {
          py::gil_scoped_release release;
          result = query::OpStats(*trace.tables, group);
        }
        return Export(trace, std::move(result));
      },
      py::arg("trace"), py::arg("by"));

  m.def(
      "write_perfetto",
      [](const PyTrace& trace, const std::string& path, const std::string& counter_group,
         std::vector<std::string> counter_names, const Int32s& series, const Int64s& time_ns,
         const Int64s& value, const Int64s& step, const Int64s& step_start,
         const Int64s& step_end) {
        const perfetto::CounterSeries counters =
            CounterArrays(counter_group, std::move(counter_names), series, time_ns, value);
        const StepArrays a = StepColumns(step, step_start, "step_start", step_end, "step_end");
        const perfetto::StepSpans steps{a.step, a.first, a.second, a.size};
        perfetto::WriteStats s;
        {
          py::gil_scoped_release release;
          s = perfetto::WritePerfettoTrace(*trace.tables, path, &counters, &steps);
        }
        py::dict out;
        out["bytes"] = s.bytes;
        out["packets"] = s.packets;
        out["slices"] = s.slices;
        out["tracks"] = s.tracks;
        out["counter_values"] = s.counter_values;
        return out;
      },
      py::arg("trace"), py::arg("path"), py::arg("counter_group"), py::arg("counter_names"),
      py::arg("series"), py::arg("time_ns"), py::arg("value"), py::arg("step"),
      py::arg("step_start"), py::arg("step_end"),
      "Writes the trace as Perfetto TracePackets to path: a slice per event, one counter "
      "track per counter name (series indexes counter_names), one slice per step.");

  m.def(
      "write_chrome_trace",
      [](const PyTrace& trace, py::object out, const std::string& counter_group,
         std::vector<std::string> counter_names, const Int32s& series, const Int64s& time_ns,
         const Int64s& value, const Int64s& step, const Int64s& step_start,
         const Int64s& step_duration) {
        const chrome::Counters counters =
            CounterArrays(counter_group, std::move(counter_names), series, time_ns, value);
        const StepArrays a =
            StepColumns(step, step_start, "step_start", step_duration, "step_duration");
        const chrome::Steps steps{a.step, a.first, a.second, a.size};
        chrome::WriteStats s;
        if (py::isinstance<py::str>(out) || py::isinstance<py::bytes>(out)) {
          // A path: str, or bytes (os.fsencode: any name the file system takes).
          const std::string path = out.cast<std::string>();
          py::gil_scoped_release release;
          chrome::FileSink sink(path);
          s = chrome::WriteChromeTrace(*trace.tables, sink, &counters, &steps);
          sink.Close();
        } else {
          // A Python binary stream (a GzipFile): its write() called per chunk with the GIL.
          struct StreamSink : chrome::Sink {
            py::object write;
            void Write(const char* data, size_t n) override {
              py::gil_scoped_acquire acquire;
              write(py::bytes(data, n));
            }
          } sink;
          sink.write = out.attr("write");
          {
            py::gil_scoped_release release;
            s = chrome::WriteChromeTrace(*trace.tables, sink, &counters, &steps);
          }
        }
        py::dict result;
        result["bytes"] = s.bytes;
        result["events"] = s.events;
        return result;
      },
      py::arg("trace"), py::arg("out"), py::arg("counter_group"), py::arg("counter_names"),
      py::arg("series"), py::arg("time_ns"), py::arg("value"), py::arg("step"),
      py::arg("step_start"), py::arg("step_duration"),
      "Writes the trace as Chrome trace-event JSON to out (a path, or a binary stream's "
      "write): the text of tracecore.chrome.chrome_trace_events, with one counter series per "
      "counter name (series indexes counter_names) and one slice per step.");

  m.def(
      "group_stats",
      [](const Int64s& start, const Int64s& end, const Int64s& group, int64_t n_groups,
         std::optional<Int64s> weight) {
        query::GroupedIntervals rows = GroupRows(start, end, n_groups);
        const int64_t* ids = Column(group, rows.size, "group");
        if (weight) rows.weight = Column(*weight, rows.size, "weight");
        query::GroupStats s;
        {
          py::gil_scoped_release release;
          s = query::ComputeGroupStats(rows, ids, static_cast<size_t>(n_groups));
        }
        return StatsDict(s, weight.has_value());
      },
      py::arg("start"), py::arg("end"), py::arg("group"), py::arg("n_groups"),
      py::arg("weight") = py::none(),
      "Per group id in [0, n_groups) of rows [start, end) (negative ids: no group): n_events, "
      "total_ns, max_ns, busy_ns (union), first_start_ns, last_end_ns and, with a weight "
      "column, its sum. Ends before their start count as the start.");

  m.def(
      "group_stats_codes",
      [](const Int64s& start, const Int64s& end, const Int32s& code, const Int64s& group_of_code,
         int64_t n_groups, std::optional<Int64s> weight) {
        query::GroupedIntervals rows = GroupRows(start, end, n_groups);
        if (group_of_code.ndim() != 1) throw py::value_error("group_of_code must be one-dimensional");
        if (code.ndim() != 1 || static_cast<size_t>(code.shape(0)) != rows.size) {
          throw py::value_error("code must have one entry per row of start");
        }
        if (weight) rows.weight = Column(*weight, rows.size, "weight");
        query::GroupStats s;
        {
          py::gil_scoped_release release;
          s = query::ComputeGroupStats(rows, code.data(), static_cast<size_t>(group_of_code.shape(0)),
                                       group_of_code.data(), static_cast<size_t>(n_groups));
        }
        return StatsDict(s, weight.has_value());
      },
      py::arg("start"), py::arg("end"), py::arg("code"), py::arg("group_of_code"),
      py::arg("n_groups"), py::arg("weight") = py::none(),
      "group_stats with the group of row i given as group_of_code[code[i]] (a dictionary "
      "column's int32 indices and one group id per dictionary entry, negative: no group).");
}

}  // namespace tracecore::bindings
