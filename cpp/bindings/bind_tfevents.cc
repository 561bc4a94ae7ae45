// Binds TensorBoard event files: _core.tfevents_scan(path_or_bytes, strict=True) -> dict (the
// scan alone), and _core.open_event_file(path_or_bytes, strict=True, threads=0) -> dict (the
// scan, and every RunMetadata parsed in place, in parallel).
#include <pybind11/pybind11.h>

#include <chrono>
#include <memory>
#include <vector>
#include <string>
#include <string_view>

#include "bindings.h"
#include "importers/tfevents/event_file_scan.h"
#include "core/error.h"
#include "core/parallel.h"
#include "io/mapped_file.h"
#include "open/format_registry.h"

namespace py = pybind11;

namespace tracecore::bindings {
namespace {

using tfevents::EventContent;
using tfevents::EventFileScan;

py::str Str(std::string_view s) {
  PyObject* o =
      PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "backslashreplace");
  if (o == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(o);
}

py::dict Content(const EventContent& c) {
  py::dict d;
  d["events"] = c.events;
  d["file_version"] = c.file_version;
  d["graph_def"] = c.graph_def;
  d["summary"] = c.summary;
  d["log_message"] = c.log_message;
  d["session_log"] = c.session_log;
  d["tagged_run_metadata"] = c.tagged_run_metadata;
  d["meta_graph_def"] = c.meta_graph_def;
  d["no_what"] = c.no_what;
  d["summary_values"] = c.summary_values;
  py::dict plugins;
  for (const EventContent::Plugin& p : c.plugins) plugins[Str(p.name)] = p.values;
  d["plugins"] = plugins;
  d["other_plugin_values"] = c.other_plugin_values;
  d["simple_values"] = c.simple_values;
  d["images"] = c.images;
  d["histograms"] = c.histograms;
  d["audio"] = c.audio;
  d["tensors"] = c.tensors;
  d["empty_values"] = c.empty_values;
  d["run_metadata_without_payload"] = c.run_metadata_without_payload;
  d["file_version_string"] = Str(c.file_version_string);
  d["min_step"] = c.min_step;
  d["max_step"] = c.max_step;
  d["min_wall_time"] = c.min_wall_time;
  d["max_wall_time"] = c.max_wall_time;
  return d;
}

// Python objects from a scan whose views point into an input still alive.
py::dict ToPython(const EventFileScan& scan) {
  py::list found;
  for (const tfevents::FoundRunMetadata& f : scan.run_metadata) {
    py::dict d;
    d["tag"] = Str(f.tag);
    d["step"] = f.step;
    d["wall_time"] = f.wall_time;
    d["offset"] = f.offset;
    d["length"] = f.length;
    d["record_offset"] = f.record_offset;
    d["source"] = tfevents::SourceName(f.source);
    found.append(std::move(d));
  }
  py::list warnings;
  for (const tfevents::ScanWarning& w : scan.warnings) {
    warnings.append(py::make_tuple(w.offset, Str(w.what)));
  }
  py::dict out;
  out["bytes"] = scan.bytes;
  out["records"] = scan.records;
  out["run_metadata"] = found;
  out["content"] = Content(scan.content);
  out["warnings"] = warnings;
  out["warnings_dropped"] = scan.warnings_dropped;
  out["skipped_records"] = scan.skipped_records;
  out["skipped_bytes"] = scan.skipped_bytes;
  out["truncated_tail"] = scan.truncated_tail ? py::object(py::int_(scan.truncated_tail_offset))
                                              : py::object(py::none());
  return out;
}

// The input of a scan: bytes (read in place; another buffer is copied first, so that no other
// thread can change it) or a file, memory-mapped. Views into it stay valid while it lives.
struct ScanInput {
  py::object bytes;                   // kept alive: the views point into it
  std::shared_ptr<MappedFile> file;   // or the mapping
  std::string_view data;
};

ScanInput InputOf(py::object source) {
  ScanInput in;
  if (!py::isinstance<py::bytes>(source) && PyObject_CheckBuffer(source.ptr())) {
    PyObject* copy = PyBytes_FromObject(source.ptr());
    if (copy == nullptr) throw py::error_already_set();
    source = py::reinterpret_steal<py::object>(copy);
  }
  if (py::isinstance<py::bytes>(source)) {
    char* data = nullptr;
    Py_ssize_t size = 0;
    if (PyBytes_AsStringAndSize(source.ptr(), &data, &size) != 0) throw py::error_already_set();
    in.bytes = source;
    in.data = std::string_view(data, static_cast<size_t>(size));
    // A view that does not own the bytes: `in.bytes` keeps them alive while it is in use.
    in.file = MappedFile::FromMemory(data, static_cast<size_t>(size), nullptr);
    return in;
  }
  const std::string path = py::str(py::module_::import("os").attr("fspath")(source));
  py::gil_scoped_release release;
  in.file = MappedFile::Open(path);
  in.data = std::string_view(in.file->data(), in.file->size());
  return in;
}

// `e`, an error of the RunMetadata `f` (its offsets counted in the RunMetadata's bytes), as an
// error of the event file: offset in the file, and which RunMetadata it is.
TraceFormatError InFile(const TraceFormatError& e, const tfevents::FoundRunMetadata& f) {
  std::string what = e.what();
  std::string at;
  if (e.where == TraceFormatError::Where::kBinary) {
    const std::string prefix = "byte offset " + std::to_string(e.offset) + ": ";
    if (what.compare(0, prefix.size(), prefix) == 0) what.erase(0, prefix.size());
    at = ", at its byte " + std::to_string(e.offset);
  }
  TraceFormatError out = TraceFormatError::AtByte(
      f.offset + (e.where == TraceFormatError::Where::kBinary ? e.offset : 0),
      "the RunMetadata of tag '" + std::string(f.tag) + "', step " + std::to_string(f.step) +
          " (" + std::to_string(f.length) + " bytes from byte " + std::to_string(f.offset) + ")" +
          at + ": " + what);
  out.bad_value = e.bad_value;
  out.out_of_range = e.out_of_range;
  return out;
}

// Scans an event file and parses each RunMetadata it holds with the binary importer, in place
// (a view of the file's bytes, no copy), the RunMetadata spread over `threads` threads (0: every
// core), largest first. The first failing RunMetadata in file order raises its error, located
// in the file.
py::dict OpenEventFile(py::object source, bool strict, int threads) {
  if (threads < 0) throw py::value_error("threads must be >= 0 (0: every core)");
  tfevents::ScanOptions options;
  options.strict = strict;
  ScanInput in = InputOf(std::move(source));
  EventFileScan scan;
  std::vector<PyTrace> traces;
  {
    py::gil_scoped_release release;
    scan = tfevents::ScanEventFile(in.data, options);
    const size_t n = scan.run_metadata.size();
    traces.resize(n);
    const size_t hw = WorkerCount(n, true);
    const size_t workers = threads > 0 ? std::min<size_t>(static_cast<size_t>(threads), hw) : hw;
    const std::vector<size_t> order =
        LargestFirst(n, [&](size_t i) { return scan.run_metadata[i].length; });
    std::vector<std::exception_ptr> errors(n);
    ForEachOnThreads(n, std::max<size_t>(1, workers), [&](size_t q, size_t) {
      const size_t i = order[q];
      const tfevents::FoundRunMetadata& f = scan.run_metadata[i];
      if (f.length == 0) return;  // an empty RunMetadata (Keras writes them): no trace
      try {
        const auto start = std::chrono::steady_clock::now();
        const auto view = MappedFile::FromMemory(in.data.data() + f.offset, f.length, in.file);
        OpenOptions parse;
        parse.format = "binary";
        parse.threads = 1;
        traces[i].tables = ParseTrace(*view, parse);
        traces[i].parse_seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      } catch (const TraceFormatError& e) {
        errors[i] = std::make_exception_ptr(InFile(e, f));
      } catch (...) {
        errors[i] = std::current_exception();  // reported in file order too
      }
    });
    for (const std::exception_ptr& e : errors) {
      if (e) std::rethrow_exception(e);
    }
  }
  py::dict out = ToPython(scan);
  py::list parsed;
  for (PyTrace& t : traces) {
    parsed.append(t.tables != nullptr ? py::cast(std::move(t)) : py::object(py::none()));
  }
  out["traces"] = parsed;
  return out;
}

py::dict Scan(py::object source, bool strict) {
  tfevents::ScanOptions options;
  options.strict = strict;
  const ScanInput in = InputOf(std::move(source));  // keeps the views' bytes alive
  EventFileScan scan;
  {
    py::gil_scoped_release release;
    scan = tfevents::ScanEventFile(in.data, options);
  }
  return ToPython(scan);
}

}  // namespace

void RegisterTfevents(py::module_& m) {
  m.def("tfevents_scan", &Scan, py::arg("path_or_bytes"), py::arg("strict") = true,
        "Scans a TensorBoard event file (a path, or its bytes): the RunMetadata records found "
        "(tag, step, wall_time, offset, length, record_offset, source), what else the events "
        "hold (content), warnings [(offset, message)], skipped records and the truncated tail "
        "offset. Raises TraceFormatError (with .offset) for a corrupt record when strict, and "
        "for input without one intact record.");
  m.def("open_event_file", &OpenEventFile, py::arg("path_or_bytes"), py::arg("strict") = true,
        py::arg("threads") = 0,
        "tfevents_scan, plus 'traces': per RunMetadata found, its parsed Trace (None for an "
        "empty one), parsed in place in parallel. Raises TraceFormatError for the first "
        "RunMetadata in file order that does not parse, its offset in the file.");
}

}  // namespace tracecore::bindings
