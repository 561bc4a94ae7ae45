// The table declarations: what comes from them (storage, Arrow view and schema, column
// reference), and that a column added to a scratch copy of a table's list shows up in all of
// them with no other edit.
#include <string>

#include "arrow/arrow_export.h"
#include "tables/table_describe.h"
#include "tables/table_views.h"
#include "tables/trace_tables.h"
#include "unit_test.h"

using namespace tracecore;

namespace {

// alloc_records' declaration plus one column, as a developer adding a column would write it.
#define SCRATCH_COLUMNS(COLUMN, NULLABLE, OPTIONAL)          \
  TRACECORE_COLUMNS_alloc_records(COLUMN, NULLABLE, OPTIONAL) \
  NULLABLE(scratch_peak_bytes, Int64, Plain, "A column added by the test.")

struct ScratchTable {
  static constexpr const char* kName = "scratch";
  TC_TABLE_BODY(SCRATCH_COLUMNS, event_id)
};

// The Arrow schema's (name, format) of a table view, as Python would import it.
std::string SchemaOf(const TableView& view, const StringPool& pool) {
  ArrowSchema schema;
  ArrowArray array;
  ExportTable(view, pool, nullptr, &schema, &array);
  std::string out;
  for (int64_t i = 0; i < schema.n_children; ++i) {
    out += schema.children[i]->name;
    out += ':';
    out += schema.children[i]->format;
    out += ' ';
  }
  schema.release(&schema);
  array.release(&array);
  return out;
}

}  // namespace

TEST(TableDefs, ScratchColumnReachesStorageSchemaAndDocs) {
  ScratchTable table;
  table.event_id.push_back(7);
  table.allocator.push_back(0);
  table.time_ns.push_back(1000);
  table.bytes.push_back(-64);
  table.scratch_peak_bytes.push_back(4096);
  table.scratch_peak_bytes_valid.push_back(1);
  StringPool pool;
  const TableView view = DescribeTableOf(table);
  EXPECT_EQ(view.num_rows, 1);
  // alloc_records' optional XSpace memory columns, left empty, are exported all null.
  EXPECT_EQ(SchemaOf(view, pool),
            std::string("event_id:l allocator:i time_ns:l bytes:l is_allocation:b "
                        "heap_allocated:l stack_reserved:l free:l fragmentation:g "
                        "peak_bytes_in_use:l requested_bytes:l allocation_bytes:l address:L "
                        "tf_op:i shape:+l dtype:i region:i step_id:l reserved:l scratch_peak_bytes:l "));
  const std::string doc = TableReference<ScratchTable>(TableDef{"scratch", "A scratch table."});
  EXPECT_TRUE(doc.find("| `scratch_peak_bytes` | int64 (nullable) | A column added by the test. |") !=
              std::string::npos);
  EXPECT_EQ(ExportedColumns<ScratchTable>().size(), 20u);
}

TEST(TableDefs, TableNamesFollowTheDeclarationOrder) {
  const std::vector<std::string> expected = {
      "devices",      "events",             "tensors",     "allocations",
      "alloc_records", "cost_graph",        "graph_nodes", "thread_names",
      "persistent_tensors", "event_stats", "plane_stats", "aggregate_events",
      "counters",     "links"};
  EXPECT_TRUE(TableNames() == expected);
}

TEST(TableDefs, InternalColumnsAreNotExported) {
  std::string names;
  for (const ColumnDef& c : TableColumns("devices")) names += std::string(c.name) + " ";
  EXPECT_EQ(names, std::string("device_index device line line_id kind n_events "));
  EXPECT_THROW_WITH(TableColumns("nope"), std::out_of_range, "no table named 'nope'");
}

TEST(TableDefs, ReferenceNamesEveryExportedColumnOfEveryTable) {
  const std::string doc = ColumnReference();
  TraceTables().ForEachTable([&](const TableDef& t, const auto& table) {
    EXPECT_TRUE(doc.find(std::string("## `") + t.name + "`") != std::string::npos);
    for (const ColumnDef& c : std::decay_t<decltype(table)>::kColumns) {
      const bool listed = doc.find(std::string("| `") + c.name + "` |") != std::string::npos;
      if (c.exported()) EXPECT_TRUE(listed);
    }
  });
  EXPECT_TRUE(doc.find("kind_code") == std::string::npos);
}

// An optional column no importer filled reads as all null, with its declared type.
#define OPTIONAL_COLUMNS(COLUMN, NULLABLE, OPTIONAL)  \
  COLUMN(event_id, Int64, EventRef, "The event.")     \
  OPTIONAL(step, Int64, Plain, "A step, where known.") \
  OPTIONAL(label, DictString, StringId, "A label.")

struct OptionalTable {
  TC_TABLE_BODY(OPTIONAL_COLUMNS, event_id)
};

TEST(TableDefs, OptionalColumnLeftEmptyExportsAllNull) {
  OptionalTable table;
  for (int64_t i = 0; i < 3; ++i) table.event_id.push_back(i);
  StringPool pool;
  const TableView view = DescribeTableOf(table);
  ASSERT_EQ(view.columns.size(), 3u);
  EXPECT_TRUE(view.columns[1].all_null);
  ArrowSchema schema;
  ArrowArray array;
  ExportTable(view, pool, nullptr, &schema, &array);
  EXPECT_EQ(array.children[1]->null_count, 3);
  EXPECT_EQ(std::string(schema.children[1]->format), "l");
  EXPECT_EQ(array.children[2]->null_count, 3);
  EXPECT_EQ(std::string(schema.children[2]->format), "i");
  EXPECT_TRUE(schema.children[2]->dictionary != nullptr);
  const auto* step = static_cast<const int64_t*>(array.children[1]->buffers[1]);
  EXPECT_EQ(step[2], 0);
  schema.release(&schema);
  array.release(&array);
}
