// Binds parsing and table export: the only code that turns core objects into Python ones.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <cstring>
#include <sys/stat.h>
#include <memory>
#include <string>

#include "arrow/arrow_export.h"
#include "arrow/arrow_import.h"
#include "bindings.h"
#include "core/error.h"
#include "open/format_registry.h"
#include "open/open_trace.h"
#include "io/mapped_file.h"
#include "tables/table_views.h"

namespace py = pybind11;

namespace tracecore::bindings {
namespace {

PyObject* g_trace_format_error = nullptr;  // tracecore._core.TraceFormatError (never freed)

void ReleaseSchemaCapsule(PyObject* capsule) {
  auto* schema = static_cast<ArrowSchema*>(PyCapsule_GetPointer(capsule, "arrow_schema"));
  if (schema == nullptr) {
    PyErr_Clear();
    return;
  }
  if (schema->release != nullptr) schema->release(schema);
  delete schema;
}

void ReleaseArrayCapsule(PyObject* capsule) {
  auto* array = static_cast<ArrowArray*>(PyCapsule_GetPointer(capsule, "arrow_array"));
  if (array == nullptr) {
    PyErr_Clear();
    return;
  }
  if (array->release != nullptr) array->release(array);
  delete array;
}

// The identity of the file at `path` (false when it cannot be had).
bool FileIdentity(const std::string& path, uint64_t* device, uint64_t* inode, uint64_t* size,
                  int64_t* mtime_ns) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return false;
  *device = static_cast<uint64_t>(st.st_dev);
  *inode = static_cast<uint64_t>(st.st_ino);
  *size = static_cast<uint64_t>(st.st_size);
  *mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  return true;
}

// The event_stats of a deferred XSpace: its file opened again (if unchanged) or its bytes.
std::shared_ptr<const TraceTables> BuildEventStats(const PyTrace::Deferred& d, TraceKind kind,
                                                   size_t events) {
  InflateLimits limits;
  limits.raise_hint = "decompress the file (gunzip) and open the result";
  if (d.bytes != nullptr) return OpenEventStats(*d.bytes, kind, events, limits, d.replace_invalid);
  const std::string changed =
      std::string(kind == TraceKind::kXSpace ? "the XSpace" : "the Chrome trace") + "'s event_stats are read from its file when first asked for, and the file ";
  uint64_t device, inode, size;
  int64_t mtime_ns;
  if (!FileIdentity(d.path, &device, &inode, &size, &mtime_ns)) {
    throw TraceFormatError(changed + "is gone: open it again");
  }
  if (device != d.device || inode != d.inode || size != d.size || mtime_ns != d.mtime_ns) {
    throw TraceFormatError(changed + "changed since it was opened (another size, mtime or "
                           "inode): open it again");
  }
  const std::shared_ptr<MappedFile> file = MappedFile::Open(d.path);
  auto stats = OpenEventStats(*file, kind, events, limits, d.replace_invalid);
  if (file->ShrankSinceOpen()) {
    throw TraceFormatError(changed + "was truncated by another process while it was read");
  }
  return stats;
}

// The tables that hold table `name` of `trace`: its own, or for an XSpace's event_stats those
// of the second pass over its input (built on first use, with the GIL released).
std::shared_ptr<const TraceTables> TablesHolding(const PyTrace& trace, const std::string& name) {
  if (name != "event_stats" || trace.deferred == nullptr) return trace.tables;
  PyTrace::Deferred& d = *trace.deferred;
  py::gil_scoped_release release;
  std::lock_guard<std::mutex> lock(d.mutex);
  if (d.event_stats == nullptr) {
    d.event_stats = BuildEventStats(d, trace.tables->kind, trace.tables->events.size());
    d.bytes.reset();  // no longer needed
  }
  return d.event_stats;
}

py::tuple ExportNamedTable(const PyTrace& trace, const std::string& name) {
  const std::shared_ptr<const TraceTables> tables = TablesHolding(trace, name);
  TableView view;
  try {
    view = DescribeTable(*tables, name);
  } catch (const std::out_of_range& e) {
    throw py::key_error(e.what());
  }
  return ExportCapsules(view, tables->pool, tables);
}

// The Arrow schema capsule of table `name`: that of an empty table, exported as any other.
py::object Schema(const std::string& name) {
  static const auto empty = std::make_shared<const TraceTables>();
  TableView view;
  try {
    view = DescribeTable(*empty, name);
  } catch (const std::out_of_range& e) {
    throw py::key_error(e.what());
  }
  return ExportCapsules(view, empty->pool, empty)[0];
}

// `path`: the file `file` maps ("" for bytes), for an XSpace's deferred event_stats.
// `max_table_bytes`: the tables' budget, 0 for the default (OpenOptions).
PyTrace Parse(const std::shared_ptr<MappedFile>& file, const std::string& format, int threads,
              uint64_t max_table_bytes, const std::string& path, const std::string& errors) {
  OpenOptions options;
  options.format = format;
  options.threads = threads;
  options.max_table_bytes = max_table_bytes;
  options.table_budget_hint = "pass a larger max_table_bytes to tracecore.open to allow more";
  if (errors != "strict" && errors != "replace") {
    throw std::invalid_argument("errors must be 'strict' or 'replace', not '" + errors + "'");
  }
  options.replace_invalid = errors == "replace";
  const auto start = std::chrono::steady_clock::now();
  PyTrace trace;
  InflateLimits limits;  // the defaults; what a Python user can do past them:
  limits.raise_hint = "decompress the file (gunzip) and open the result";
  trace.tables = OpenTrace(*file, options, limits);
  trace.parse_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (HasDeferredEventStats(trace.tables->kind)) {
    auto d = std::make_shared<PyTrace::Deferred>();
    d->replace_invalid = options.replace_invalid;
    if (path.empty()) {
      d->bytes = file;
    } else {
      d->path = path;
      // Taken after the parse: a file replaced meanwhile fails the later check, never passes it.
      if (!FileIdentity(path, &d->device, &d->inode, &d->size, &d->mtime_ns)) d->path.clear();
      if (d->size != file->size()) d->inode = 0;  // not the file parsed: never matches
    }
    trace.deferred = std::move(d);
  }
  return trace;
}

py::dict Stats(const PyTrace& trace) {
  const TraceTables& t = *trace.tables;
  py::dict stats;
  stats["bytes"] = t.input_bytes;
  stats["parse_seconds"] = trace.parse_seconds;
  stats["unknown_fields"] = t.unknown_fields;
  stats["threads"] = t.threads_used;
  stats["devices"] = t.devices.size();
  stats["events"] = t.events.size();
  stats["tensors"] = t.tensors.size();
  stats["allocations"] = t.allocations.size();
  stats["alloc_records"] = t.alloc_records.size();
  stats["cost_graph_nodes"] = t.cost_graph.size();
  stats["graph_nodes"] = t.graph_nodes.size();
  stats["aggregate_events"] = t.aggregate_events.size();
  stats["plane_stats"] = t.plane_stats.size();
  stats["distinct_strings"] = t.pool.size();
  if (t.format == Encoding::kJson) {
    stats["counters"] = t.counters.size();
    stats["links"] = t.links.size();
    stats["unmatched_begin"] = t.chrome.unmatched_begin;
    stats["unmatched_end"] = t.chrome.unmatched_end;
    stats["other_events"] = t.chrome.other_events;
    stats["empty_objects"] = t.chrome.empty_objects;
  }
  return stats;
}

// Error messages quote pieces of the input, which need not be UTF-8: never fail on them.
py::str Message(const char* what) {
  PyObject* s = PyUnicode_DecodeUTF8(what, static_cast<Py_ssize_t>(std::strlen(what)), "backslashreplace");
  if (s == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(s);
}

}  // namespace

py::tuple ExportCapsules(const TableView& view, const StringPool& pool,
                         std::shared_ptr<const void> owner) {
  auto schema = std::make_unique<ArrowSchema>();
  auto array = std::make_unique<ArrowArray>();
  {
    // Compacting the dictionary columns passes over their rows: no Python object is touched.
    py::gil_scoped_release release;
    ExportTable(view, pool, std::move(owner), schema.get(), array.get());
  }
  py::capsule schema_capsule(py::reinterpret_steal<py::object>(
      PyCapsule_New(schema.get(), "arrow_schema", &ReleaseSchemaCapsule)));
  schema.release();
  py::capsule array_capsule(py::reinterpret_steal<py::object>(
      PyCapsule_New(array.get(), "arrow_array", &ReleaseArrayCapsule)));
  array.release();
  return py::make_tuple(schema_capsule, array_capsule);
}

void RegisterErrors(py::module_& m) {
  g_trace_format_error = PyErr_NewExceptionWithDoc(
      "tracecore._core.TraceFormatError",
      "The input is not a valid trace. `line`/`column` (text input) or `offset` (binary input) "
      "say where; each is None when it does not apply.",
      PyExc_ValueError, nullptr);
  m.add_object("TraceFormatError", py::handle(g_trace_format_error));
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const TraceFormatError& e) {
      py::object instance = py::reinterpret_borrow<py::object>(g_trace_format_error)(Message(e.what()));
      const bool text = e.where == TraceFormatError::Where::kText;
      const bool binary = e.where == TraceFormatError::Where::kBinary;
      auto or_none = [](bool present, uint64_t value) -> py::object {
        return present ? py::object(py::int_(value)) : py::object(py::none());
      };
      instance.attr("line") = or_none(text, e.line);
      instance.attr("column") = or_none(text, e.column);
      instance.attr("offset") = or_none(binary, e.offset);
      PyErr_SetObject(g_trace_format_error, instance.ptr());
    } catch (const IoError& e) {
      py::object args = py::make_tuple(e.error_number, Message(e.what()));
      PyErr_SetObject(PyExc_OSError, args.ptr());
    }
  });
}

void RegisterTrace(py::module_& m) {
  py::class_<PyTrace>(m, "Trace", "A parsed trace: immutable tables shared with every export.")
      .def_property_readonly("kind", [](const PyTrace& t) { return std::string(TraceKindName(t.tables->kind)); })
      .def_property_readonly("format", [](const PyTrace& t) { return std::string(EncodingName(t.tables->format)); })
      .def_property_readonly("num_events", [](const PyTrace& t) { return t.tables->events.size(); })
      .def("stats", &Stats)
      .def_property_readonly("chrome_metadata",
                             [](const PyTrace& t) {
                               // (key, json::ValueKind, text) of each top-level entry
                               py::list out;
                               for (const ChromeMetadataEntry& m : t.tables->chrome.metadata) {
                                 out.append(py::make_tuple(m.key, m.kind, m.text));
                               }
                               return out;
                             })
      .def("export_table", &ExportNamedTable, py::arg("name"),
           "Exports table `name` as (arrow_schema, arrow_array) PyCapsules of a struct array.");
  m.attr("TABLE_NAMES") = TableNames();
  m.def("column_reference", &ColumnReference,
        "The column reference of every table as Markdown (docs/tables.md).");
  m.def("schema", &Schema, py::arg("name"),
        "The arrow_schema PyCapsule of table `name` (its columns and types, no rows).");

  m.def(
      "open_file",
      [](const std::string& path, const std::string& format, int threads,
         uint64_t max_table_bytes, const std::string& errors) {
        py::gil_scoped_release release;
        return Parse(MappedFile::Open(path), format, threads, max_table_bytes, path, errors);
      },
      py::arg("path"), py::arg("format") = "auto", py::arg("threads") = 0,
      py::arg("max_table_bytes") = 0, py::arg("errors") = "strict",
      "Memory-maps and parses a trace file (gzip data is decompressed first); "
      "max_table_bytes: the tables' memory budget, 0 for the default; errors: 'strict' or "
      "'replace' (Chrome trace JSON strings).");
  m.def(
      "from_tables",
      [](py::list tables, const std::string& kind, const std::string& format) {
        // (name, [(arrow_schema capsule, arrow_array capsule), ...]) per table, one pair per
        // record batch as its __arrow_c_array__ gives them; the capsules stay owned (and
        // released) by Python, which holds them in `tables` for the whole call.
        std::vector<ArrowTableInput> inputs;
        for (py::handle item : tables) {
          auto entry = item.cast<py::tuple>();
          ArrowTableInput input;
          input.name = entry[0].cast<std::string>();
          for (py::handle batch : entry[1].cast<py::list>()) {
            auto capsules = batch.cast<py::tuple>();
            ArrowBatchInput in;
            in.schema = static_cast<const ArrowSchema*>(
                PyCapsule_GetPointer(capsules[0].ptr(), "arrow_schema"));
            if (in.schema == nullptr) throw py::error_already_set();
            in.array = static_cast<const ArrowArray*>(
                PyCapsule_GetPointer(capsules[1].ptr(), "arrow_array"));
            if (in.array == nullptr) throw py::error_already_set();
            if (in.schema->release == nullptr || in.array->release == nullptr) {
              throw std::invalid_argument("table " + input.name + ": a released Arrow array");
            }
            input.batches.push_back(in);
          }
          inputs.push_back(std::move(input));
        }
        const TraceKind trace_kind = TraceKindFromName(kind);
        const Encoding encoding = EncodingFromName(format);
        PyTrace trace;
        py::gil_scoped_release release;
        const auto start = std::chrono::steady_clock::now();
        trace.tables = ImportTables(inputs, trace_kind, encoding);
        trace.parse_seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        return trace;
      },
      py::arg("tables"), py::arg("kind"), py::arg("format"),
      "A trace over tables read back from a store: [(name, [(arrow_schema, arrow_array), ...])] "
      "of record batches in the layout export_table gives, every value copied and checked.");
  m.def(
      "open_bytes",
      [](py::bytes data, const std::string& format, int threads, uint64_t max_table_bytes,
         const std::string& errors) {
        std::shared_ptr<MappedFile> file = MappedFile::FromBuffer(std::string(data));
        py::gil_scoped_release release;
        return Parse(file, format, threads, max_table_bytes, "", errors);
      },
      py::arg("data"), py::arg("format") = "auto", py::arg("threads") = 0,
      py::arg("max_table_bytes") = 0, py::arg("errors") = "strict",
      "Parses a trace held in memory (gzip data is decompressed first).");
}

}  // namespace tracecore::bindings
