#include <pybind11/pybind11.h>

#include "bindings.h"

PYBIND11_MODULE(_core, m) {
  m.doc() = "tracecore native core: parsers, tables and queries (private; use the tracecore package)";
  tracecore::bindings::RegisterErrors(m);
  tracecore::bindings::RegisterTrace(m);
  tracecore::bindings::RegisterQueries(m);
  tracecore::bindings::RegisterJson(m);
  tracecore::bindings::RegisterTfevents(m);
  tracecore::bindings::RegisterCodec(m);
}
