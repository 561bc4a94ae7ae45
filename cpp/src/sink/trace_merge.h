// Concatenates the tables of chunks parsed in parallel into one trace, as one sequential parse
// of the whole input would have produced it: same rows, same order, same string ids.
#pragma once

#include <memory>
#include <vector>

#include "tables/trace_tables.h"

namespace tracecore {

// Merges `parts` (in file order) into `out` (which keeps only its format and input size).
// Parts are consumed.
void MergeTables(std::vector<std::unique_ptr<TraceTables>>& parts, TraceTables* out);

}  // namespace tracecore
