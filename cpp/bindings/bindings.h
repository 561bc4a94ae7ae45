// Each area of the Python module registers itself; module.cc only calls these.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <mutex>
#include <string>

#include "containers/string_pool.h"
#include "io/mapped_file.h"
#include "tables/table_views.h"
#include "tables/trace_tables.h"

namespace tracecore::query {
class IntervalIndex;
}

namespace tracecore::bindings {

// A parsed trace as the Python layer holds it: immutable tables plus lazily built indexes.
struct PyTrace {
  std::shared_ptr<const TraceTables> tables;
  double parse_seconds = 0;
  // How an XSpace's event_stats are built when first asked for (a second pass over its input):
  // a file is opened again by its path, once its identity (device, inode, size, mtime) is
  // found unchanged; bytes handed over from Python are kept until then.
  struct Deferred {
    std::string path;
    uint64_t device = 0, inode = 0, size = 0;
    int64_t mtime_ns = 0;
    bool replace_invalid = false;  // errors="replace", as the open
    std::shared_ptr<MappedFile> bytes;
    std::mutex mutex;
    std::shared_ptr<const TraceTables> event_stats;
  };
  std::shared_ptr<Deferred> deferred;
  struct Indexes {
    std::once_flag interval_once;
    std::shared_ptr<const query::IntervalIndex> interval;
  };
  std::shared_ptr<Indexes> indexes = std::make_shared<Indexes>();
};

// (arrow_schema, arrow_array) PyCapsules for `view`; `owner` keeps its buffers alive.
pybind11::tuple ExportCapsules(const TableView& view, const StringPool& pool,
                               std::shared_ptr<const void> owner);

void RegisterErrors(pybind11::module_& m);
void RegisterTrace(pybind11::module_& m);
void RegisterQueries(pybind11::module_& m);
void RegisterJson(pybind11::module_& m);
// TensorBoard event files: _core.tfevents_scan and _core.open_event_file.
void RegisterTfevents(pybind11::module_& m);
void RegisterCodec(pybind11::module_& m);

}  // namespace tracecore::bindings
