// The export of dictionary columns: each column's dictionary is exactly the strings its valid
// rows hold, in pool order; the ids are exported as they are (no copy) when they are already
// 0..k-1, and remapped into the column's own indices otherwise.
#include <cstdint>
#include <string>
#include <vector>

#include "arrow/arrow_export.h"
#include "tables/table_describe.h"
#include "tables/table_views.h"
#include "unit_test.h"

using namespace tracecore;

namespace {

#define DICT_COLUMNS(COLUMN, NULLABLE, OPTIONAL)          \
  COLUMN(event_id, Int64, EventRef, "The event.")         \
  COLUMN(name, DictString, StringId, "A name.")           \
  NULLABLE(label, DictString, StringId, "A label or null.") \
  OPTIONAL(note, DictString, StringId, "Never filled.")

struct DictTable {
  static constexpr const char* kName = "dicts";
  TC_TABLE_BODY(DICT_COLUMNS, event_id)
};

// One exported column: its indices and its dictionary's strings.
struct Exported {
  std::vector<int32_t> indices;
  std::vector<bool> valid;
  std::vector<std::string> dictionary;
  const void* ids_buffer = nullptr;
  const void* dict_offsets = nullptr;
};

Exported ColumnAt(const ArrowArray& array, int64_t i) {
  const ArrowArray* c = array.children[i];
  Exported e;
  const auto* ind = static_cast<const int32_t*>(c->buffers[1]);
  const auto* bits = static_cast<const uint8_t*>(c->buffers[0]);
  for (int64_t r = 0; r < c->length; ++r) {
    const bool ok = bits == nullptr || ((bits[r >> 3] >> (r & 7)) & 1) != 0;
    e.valid.push_back(ok);
    e.indices.push_back(ok ? ind[r] : -1);
  }
  const ArrowArray* d = c->dictionary;
  const auto* off = static_cast<const int32_t*>(d->buffers[1]);
  const auto* bytes = static_cast<const char*>(d->buffers[2]);
  for (int64_t j = 0; j < d->length; ++j) {
    e.dictionary.emplace_back(bytes + off[j], static_cast<size_t>(off[j + 1] - off[j]));
  }
  e.ids_buffer = c->buffers[1];
  e.dict_offsets = d->buffers[1];
  return e;
}

std::string Value(const Exported& e, size_t r) {
  return e.valid[r] ? e.dictionary[static_cast<size_t>(e.indices[r])] : std::string("<null>");
}

}  // namespace

TEST(ArrowExport, DictionaryIsTheColumnsValuesAndIdsAreKeptWhenDense) {
  StringPool pool;  // id 0 is ""
  const uint32_t a = pool.Intern("a");
  const uint32_t b = pool.Intern("b");
  const uint32_t c = pool.Intern("c");
  const uint32_t d = pool.Intern("d");
  DictTable table;
  // name uses "", a, b (ids 0..2: a prefix of the pool); label uses d, b and nulls.
  const uint32_t names[] = {a, 0, b, a, b};
  const uint32_t labels[] = {d, 0, b, 0, d};
  const uint8_t label_valid[] = {1, 0, 1, 0, 1};
  for (int i = 0; i < 5; ++i) {
    table.event_id.push_back(i);
    table.name.push_back(names[i]);
    table.label.push_back(labels[i]);
    table.label_valid.push_back(label_valid[i]);
  }
  (void)c;
  const TableView view = DescribeTableOf(table);
  ArrowSchema schema;
  ArrowArray array;
  ExportTable(view, pool, nullptr, &schema, &array);

  const Exported name = ColumnAt(array, 1);
  EXPECT_EQ(name.dictionary, (std::vector<std::string>{"", "a", "b"}));
  EXPECT_EQ(name.indices, (std::vector<int32_t>{1, 0, 2, 1, 2}));
  // The ids needed no remapping: the column's own buffer and the pool's offsets are exported.
  EXPECT_TRUE(name.ids_buffer == static_cast<const void*>(table.name.data()));
  EXPECT_TRUE(name.dict_offsets == static_cast<const void*>(pool.offsets().data()));

  const Exported label = ColumnAt(array, 2);
  EXPECT_EQ(label.dictionary, (std::vector<std::string>{"b", "d"}));
  EXPECT_EQ(Value(label, 0), "d");
  EXPECT_EQ(Value(label, 1), "<null>");
  EXPECT_EQ(Value(label, 2), "b");
  EXPECT_EQ(Value(label, 3), "<null>");
  EXPECT_EQ(Value(label, 4), "d");
  EXPECT_EQ(array.children[2]->null_count, 2);
  EXPECT_TRUE(label.ids_buffer != static_cast<const void*>(table.label.data()));

  // The optional column no importer filled: all null, an empty dictionary.
  const Exported note = ColumnAt(array, 3);
  EXPECT_EQ(array.children[3]->null_count, 5);
  EXPECT_EQ(note.dictionary.size(), 0u);

  schema.release(&schema);
  array.release(&array);
}

TEST(ArrowExport, FewRowsOverALargePoolAreRemappedBySorting) {
  StringPool pool;
  std::vector<uint32_t> ids;
  for (int i = 0; i < 1000; ++i) ids.push_back(pool.Intern("s" + std::to_string(i)));
  DictTable table;
  // Rows much fewer than the pool's strings: the sorting path; ids out of order, repeated.
  const uint32_t names[] = {ids[900], ids[5], ids[900], ids[42]};
  for (int i = 0; i < 4; ++i) {
    table.event_id.push_back(i);
    table.name.push_back(names[i]);
    table.label.push_back(i == 1 ? 0 : ids[7]);
    table.label_valid.push_back(i == 1 ? 0 : 1);
  }
  const TableView view = DescribeTableOf(table);
  ArrowSchema schema;
  ArrowArray array;
  ExportTable(view, pool, nullptr, &schema, &array);
  const Exported name = ColumnAt(array, 1);
  EXPECT_EQ(name.dictionary, (std::vector<std::string>{"s5", "s42", "s900"}));
  EXPECT_EQ(name.indices, (std::vector<int32_t>{2, 0, 2, 1}));
  const Exported label = ColumnAt(array, 2);
  EXPECT_EQ(label.dictionary, (std::vector<std::string>{"s7"}));
  EXPECT_EQ(Value(label, 0), "s7");
  EXPECT_EQ(Value(label, 1), "<null>");
  schema.release(&schema);
  array.release(&array);
}

TEST(ArrowExport, EveryPoolIdUsedExportsThePoolItself) {
  StringPool pool;
  const uint32_t x = pool.Intern("x");
  DictTable table;
  const uint32_t names[] = {x, 0, x};
  for (int i = 0; i < 3; ++i) {
    table.event_id.push_back(i);
    table.name.push_back(names[i]);
    table.label.push_back(x);
    table.label_valid.push_back(1);
  }
  const TableView view = DescribeTableOf(table);
  ArrowSchema schema;
  ArrowArray array;
  ExportTable(view, pool, nullptr, &schema, &array);
  const Exported name = ColumnAt(array, 1);
  EXPECT_EQ(name.dictionary, (std::vector<std::string>{"", "x"}));
  EXPECT_TRUE(name.ids_buffer == static_cast<const void*>(table.name.data()));
  // label uses only id 1 ("x"): not a prefix, so remapped to index 0 of {"x"}.
  const Exported label = ColumnAt(array, 2);
  EXPECT_EQ(label.dictionary, (std::vector<std::string>{"x"}));
  EXPECT_EQ(label.indices, (std::vector<int32_t>{0, 0, 0}));
  schema.release(&schema);
  array.release(&array);
}
