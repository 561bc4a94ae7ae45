// Each area of the Python module registers itself; module.cc only calls these.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <mutex>

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
  // An XSpace's input, kept (mapped, its pages released as read) to build event_stats when
  // first asked for; the tables that pass builds.
  struct Deferred {
    std::shared_ptr<MappedFile> source;
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
// Temporary: _core.tfevents_scan, until event files open as a TraceSet.
void RegisterTfevents(pybind11::module_& m);
void RegisterCodec(pybind11::module_& m);

}  // namespace tracecore::bindings
