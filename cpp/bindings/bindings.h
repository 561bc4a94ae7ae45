// Each area of the Python module registers itself; module.cc only calls these.
#pragma once

#include <pybind11/pybind11.h>

namespace tracecore::bindings {

void RegisterErrors(pybind11::module_& m);
void RegisterTrace(pybind11::module_& m);

}  // namespace tracecore::bindings
