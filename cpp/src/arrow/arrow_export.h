// Exports tables through the Arrow C Data Interface without copying column data.
//
// The exported arrays point straight into the vectors of a TraceTables (or of any object the
// caller owns); `owner` is stored in every array's private_data, so the buffers stay alive until
// the consumer releases the last array, whatever happens to the Trace object that made them.
// Only bit-packed buffers (booleans, validity) are built here, once per export.
#pragma once

#include <memory>

#include "arrow_c_data_interface.h"
#include "containers/string_pool.h"
#include "tables/table_views.h"

namespace tracecore {

// Fills `schema` and `array` with a struct array (one child per column): the layout of a
// record batch. Dictionary-encoded columns hold ids into `pool`; each is exported with its own
// dictionary, the strings its valid rows use in pool order (the pool itself, or a prefix of it,
// when the ids need no remapping; otherwise new indices and a new dictionary, built here).
void ExportTable(const TableView& table, const StringPool& pool,
                 std::shared_ptr<const void> owner, ArrowSchema* schema, ArrowArray* array);

}  // namespace tracecore
