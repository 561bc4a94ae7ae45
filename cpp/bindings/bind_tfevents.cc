// Binds the event file scan (temporary, for tests and benchmarks until event files open as a
// TraceSet): _core.tfevents_scan(path_or_bytes, strict=True) -> dict.
#include <pybind11/pybind11.h>

#include <memory>
#include <string>
#include <string_view>

#include "bindings.h"
#include "importers/tfevents/event_file_scan.h"
#include "io/mapped_file.h"

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

py::dict Scan(py::object source, bool strict) {
  tfevents::ScanOptions options;
  options.strict = strict;
  if (!py::isinstance<py::bytes>(source) && PyObject_CheckBuffer(source.ptr())) {
    // bytearray, memoryview, ...: a copy, which no other thread can change during the scan.
    PyObject* copy = PyBytes_FromObject(source.ptr());
    if (copy == nullptr) throw py::error_already_set();
    source = py::reinterpret_steal<py::object>(copy);
  }
  EventFileScan scan;
  std::shared_ptr<MappedFile> file;  // keeps a mapped file's views alive until converted
  if (py::isinstance<py::bytes>(source)) {
    // Immutable, and kept alive by `source`: read in place.
    char* data = nullptr;
    Py_ssize_t size = 0;
    if (PyBytes_AsStringAndSize(source.ptr(), &data, &size) != 0) throw py::error_already_set();
    py::gil_scoped_release release;
    scan = tfevents::ScanEventFile(std::string_view(data, static_cast<size_t>(size)), options);
  } else {
    const std::string path = py::str(py::module_::import("os").attr("fspath")(source));
    py::gil_scoped_release release;
    file = MappedFile::Open(path);
    scan = tfevents::ScanEventFile(std::string_view(file->data(), file->size()), options);
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
}

}  // namespace tracecore::bindings
