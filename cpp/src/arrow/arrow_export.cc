#include "arrow/arrow_export.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tracecore {
namespace {

// Stands in for the data pointer of an empty vector: Arrow wants non-null buffers.
alignas(64) const uint8_t kEmptyBuffer[64] = {};

const void* NonNull(const void* p) { return p != nullptr ? p : kEmptyBuffer; }

struct SchemaPrivate {
  std::string format;
  std::string name;
  std::vector<ArrowSchema*> children;
  ArrowSchema* dictionary = nullptr;
};

void ReleaseSchema(ArrowSchema* schema) {
  auto* priv = static_cast<SchemaPrivate*>(schema->private_data);
  for (ArrowSchema* child : priv->children) {
    if (child->release != nullptr) child->release(child);
    delete child;
  }
  if (priv->dictionary != nullptr) {
    if (priv->dictionary->release != nullptr) priv->dictionary->release(priv->dictionary);
    delete priv->dictionary;
  }
  delete priv;
  schema->release = nullptr;
}

void InitSchema(ArrowSchema* out, std::string format, std::string name, int64_t flags) {
  auto* priv = new SchemaPrivate();
  priv->format = std::move(format);
  priv->name = std::move(name);
  out->format = priv->format.c_str();
  out->name = priv->name.c_str();
  out->metadata = nullptr;
  out->flags = flags;
  out->n_children = 0;
  out->children = nullptr;
  out->dictionary = nullptr;
  out->release = &ReleaseSchema;
  out->private_data = priv;
}

ArrowSchema* AddSchemaChild(ArrowSchema* parent, std::string format, std::string name) {
  auto* priv = static_cast<SchemaPrivate*>(parent->private_data);
  auto* child = new ArrowSchema();
  InitSchema(child, std::move(format), std::move(name), ARROW_FLAG_NULLABLE);
  priv->children.push_back(child);
  parent->n_children = static_cast<int64_t>(priv->children.size());
  parent->children = priv->children.data();
  return child;
}

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

struct ArrayPrivate {
  std::shared_ptr<const void> owner;
  std::vector<const void*> buffers;
  std::vector<std::vector<uint8_t>> bitmaps;
  // Zeroed buffers of all-null columns: calloc hands large ones over as untouched pages.
  std::vector<std::unique_ptr<void, FreeDeleter>> zeros;
  // The zeroed buffer all-null columns of one table share (see ExportTable).
  std::shared_ptr<const void> shared_zeros;
  std::vector<int32_t> offsets;  // a list's strings' or a compacted dictionary's own offsets
  std::vector<char> bytes;       // a compacted dictionary's strings
  std::vector<int32_t> indices;  // a dictionary column's indices into its compacted dictionary
  std::vector<ArrowArray*> children;
  ArrowArray* dictionary = nullptr;
};

void ReleaseArray(ArrowArray* array) {
  auto* priv = static_cast<ArrayPrivate*>(array->private_data);
  for (ArrowArray* child : priv->children) {
    if (child->release != nullptr) child->release(child);
    delete child;
  }
  if (priv->dictionary != nullptr) {
    if (priv->dictionary->release != nullptr) priv->dictionary->release(priv->dictionary);
    delete priv->dictionary;
  }
  delete priv;
  array->release = nullptr;
}

ArrayPrivate* InitArray(ArrowArray* out, int64_t length, const std::shared_ptr<const void>& owner) {
  auto* priv = new ArrayPrivate();
  priv->owner = owner;
  out->length = length;
  out->null_count = 0;
  out->offset = 0;
  out->n_buffers = 0;
  out->n_children = 0;
  out->buffers = nullptr;
  out->children = nullptr;
  out->dictionary = nullptr;
  out->release = &ReleaseArray;
  out->private_data = priv;
  return priv;
}

void SetBuffers(ArrowArray* out, ArrayPrivate* priv, std::vector<const void*> buffers) {
  priv->buffers = std::move(buffers);
  out->n_buffers = static_cast<int64_t>(priv->buffers.size());
  out->buffers = priv->buffers.data();
}

ArrowArray* AddArrayChild(ArrowArray* parent, int64_t length) {
  auto* priv = static_cast<ArrayPrivate*>(parent->private_data);
  auto* child = new ArrowArray();
  InitArray(child, length, priv->owner);
  priv->children.push_back(child);
  parent->n_children = static_cast<int64_t>(priv->children.size());
  parent->children = priv->children.data();
  return child;
}

// Packs one byte per row (non-zero = set) into an Arrow bitmap; counts the unset rows.
std::vector<uint8_t> PackBits(const uint8_t* bytes, int64_t n, int64_t* unset) {
  std::vector<uint8_t> bits(static_cast<size_t>((n + 7) / 8) + 1, 0);
  int64_t zeros = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (bytes[i] != 0) {
      bits[static_cast<size_t>(i >> 3)] |= static_cast<uint8_t>(1u << (i & 7));
    } else {
      ++zeros;
    }
  }
  *unset = zeros;
  return bits;
}

// Validity buffer for a column, or nullptr when every row is valid.
const void* Validity(const ColumnView& c, ArrowArray* out, ArrayPrivate* priv) {
  if (c.valid == nullptr) return nullptr;
  int64_t nulls = 0;
  std::vector<uint8_t> bits = PackBits(c.valid, c.length, &nulls);
  if (nulls == 0) return nullptr;
  out->null_count = nulls;
  priv->bitmaps.push_back(std::move(bits));
  return priv->bitmaps.back().data();
}

void ExportStrings(const StringColumn& s, const void* validity, ArrowArray* out, ArrayPrivate* priv) {
  SetBuffers(out, priv, {validity, s.offsets.data(), NonNull(s.data.data())});
}

// `bytes` of zeros owned by `priv`.
const void* Zeros(ArrayPrivate* priv, size_t bytes) {
  void* p = std::calloc(bytes == 0 ? 1 : bytes, 1);
  if (p == nullptr) throw std::bad_alloc();
  priv->zeros.emplace_back(p);
  return p;
}

const char* FixedFormat(ColumnKind kind) {
  switch (kind) {
    case ColumnKind::kInt32: return "i";
    case ColumnKind::kUInt8: return "C";
    case ColumnKind::kInt64: return "l";
    case ColumnKind::kUInt32: return "I";
    case ColumnKind::kUInt64: return "L";
    case ColumnKind::kFloat64: return "g";
    case ColumnKind::kBool: return "b";
    default: return nullptr;
  }
}

// The pool ids the valid rows of a dictionary column use, ascending, and the largest id of any
// row (null rows included; their ids are 0 as the importers push them, but the export never
// relies on that). `ids` is nullptr for an all-null column.
std::vector<uint32_t> UsedIds(const uint32_t* ids, const uint8_t* valid, int64_t rows,
                              uint32_t pool_size, uint32_t* max_any) {
  std::vector<uint32_t> used;
  *max_any = 0;
  if (ids == nullptr || rows == 0) return used;
  const auto n = static_cast<size_t>(rows);
  if (n < pool_size / 16) {
    // Few rows for the pool (a query result, a small table): sort them rather than mark the pool.
    used.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      *max_any = std::max(*max_any, ids[i]);
      if (valid == nullptr || valid[i] != 0) used.push_back(ids[i]);
    }
    std::sort(used.begin(), used.end());
    used.erase(std::unique(used.begin(), used.end()), used.end());
  } else {
    // One byte per pool id, plus a slot for ids past the pool (never valid).
    std::vector<uint8_t> mark(static_cast<size_t>(pool_size) + 1, 0);
    uint32_t top = 0;
    if (valid == nullptr) {
      for (size_t i = 0; i < n; ++i) {
        const uint32_t id = ids[i];
        top = std::max(top, id);
        mark[std::min(id, pool_size)] = 1;
      }
    } else {
      for (size_t i = 0; i < n; ++i) {
        const uint32_t id = ids[i];
        top = std::max(top, id);
        mark[std::min(id, pool_size)] |= static_cast<uint8_t>(valid[i] != 0);
      }
    }
    *max_any = top;
    if (mark[pool_size] != 0) {
      throw std::out_of_range("a dictionary column holds an id past the string pool");
    }
    for (uint32_t id = 0; id < pool_size; ++id) {
      if (mark[id] != 0) used.push_back(id);
    }
  }
  if (!used.empty() && used.back() >= pool_size) {
    throw std::out_of_range("a dictionary column holds an id past the string pool");
  }
  return used;
}

// The schema of a dictionary<int32, utf8> column and its dictionary: the strings its valid rows
// use, in pool order, so that pandas, Polars and DuckDB see exactly the column's values. When
// the column uses every pool id, or exactly the first k, the dictionary is (a prefix of) the
// pool and the ids are exported as they are; otherwise the column gets its own dictionary and
// indices into it. `ids` is nullptr for an all-null column, whose indices are `zeros` (at least
// 4 bytes a row) and whose dictionary is empty.
void ExportDictionary(const ColumnView& c, const StringPool& pool, ArrowSchema* parent_schema,
                      ArrowArray* out, ArrayPrivate* priv, const void* validity,
                      const uint32_t* ids, const void* zeros = nullptr) {
  ArrowSchema* schema = AddSchemaChild(parent_schema, "i", c.name);
  auto* schema_priv = static_cast<SchemaPrivate*>(schema->private_data);
  schema_priv->dictionary = new ArrowSchema();
  InitSchema(schema_priv->dictionary, "u", "", ARROW_FLAG_NULLABLE);
  schema->dictionary = schema_priv->dictionary;

  const uint32_t pool_size = pool.size();
  // Validity as bytes only when a row is null (Validity() dropped an all-set one).
  const uint8_t* valid = validity != nullptr ? c.valid : nullptr;
  uint32_t max_any = 0;
  const std::vector<uint32_t> used = UsedIds(ids, valid, c.length, pool_size, &max_any);
  const auto k = static_cast<uint32_t>(used.size());
  const bool keep_ids = ids != nullptr && k > 0 && used.back() == k - 1 && max_any < k;

  priv->dictionary = new ArrowArray();
  ArrayPrivate* dict_priv = InitArray(priv->dictionary, k, priv->owner);
  if (keep_ids) {
    // Ids 0..k-1: the pool's first k strings, the ids as they are; nothing is copied.
    SetBuffers(out, priv, {validity, ids});
    SetBuffers(priv->dictionary, dict_priv,
               {nullptr, pool.offsets().data(), NonNull(pool.bytes().data())});
  } else {
    std::vector<int32_t>& offsets = dict_priv->offsets;
    std::vector<char>& bytes = dict_priv->bytes;
    offsets.reserve(static_cast<size_t>(k) + 1);
    offsets.push_back(0);
    size_t total = 0;
    for (uint32_t id : used) total += pool.Get(id).size();
    bytes.reserve(total);
    for (uint32_t id : used) {
      const std::string_view s = pool.Get(id);
      bytes.insert(bytes.end(), s.begin(), s.end());
      offsets.push_back(static_cast<int32_t>(bytes.size()));
    }
    SetBuffers(priv->dictionary, dict_priv, {nullptr, offsets.data(), NonNull(bytes.data())});
    const auto n = static_cast<size_t>(c.length);
    std::vector<int32_t>& indices = priv->indices;
    if (ids == nullptr && zeros != nullptr) {
      SetBuffers(out, priv, {validity, zeros});
      out->dictionary = priv->dictionary;
      return;
    }
    if (ids == nullptr || k == 0) {
      // Every row null: no index is read; zeros stand in.
      indices.assign(std::max<size_t>(n, 1), 0);
    } else if (used.size() < pool_size / 16 && n < pool_size / 16) {
      indices.resize(n);
      for (size_t i = 0; i < n; ++i) {
        const bool ok = valid == nullptr || valid[i] != 0;
        indices[i] = ok ? static_cast<int32_t>(
                              std::lower_bound(used.begin(), used.end(), ids[i]) - used.begin())
                        : 0;
      }
    } else {
      // Pool id -> index in the column's dictionary; ids past the pool (null rows only) -> 0.
      std::vector<int32_t> to(static_cast<size_t>(pool_size) + 1, 0);
      for (uint32_t j = 0; j < k; ++j) to[used[j]] = static_cast<int32_t>(j);
      indices.resize(n);
      if (valid == nullptr) {
        for (size_t i = 0; i < n; ++i) indices[i] = to[ids[i]];
      } else {
        for (size_t i = 0; i < n; ++i) {
          indices[i] = valid[i] != 0 ? to[std::min(ids[i], pool_size)] : 0;
        }
      }
    }
    SetBuffers(out, priv, {validity, indices.data()});
  }
  out->dictionary = priv->dictionary;
}

// The bytes of zeros an all-null column of `rows` rows reads at most (values of 8 bytes).
size_t AllNullZeroBytes(int64_t rows) { return (static_cast<size_t>(rows) + 1) * 8; }

// A column every row of which is null (an optional column no importer filled): zeroed values
// or offsets and an all-zero validity bitmap, with the column's own type.

void ExportAllNull(const ColumnView& c, const StringPool& pool, ArrowSchema* parent_schema,
                   ArrowArray* out, ArrayPrivate* priv, const std::shared_ptr<const void>& zeros) {
  // Every buffer of the column (validity, values, offsets) is the table's one shared buffer of
  // zeros, AllNullZeroBytes(rows) long: read-only, as Arrow buffers are.
  priv->shared_zeros = zeros;
  const void* z = zeros.get();
  const void* validity = z;
  out->null_count = c.length;
  switch (c.kind) {
    case ColumnKind::kDictString:
      ExportDictionary(c, pool, parent_schema, out, priv, validity, nullptr, z);
      return;
    case ColumnKind::kString:
    case ColumnKind::kBinary:
      AddSchemaChild(parent_schema, c.kind == ColumnKind::kString ? "u" : "z", c.name);
      SetBuffers(out, priv, {validity, z, kEmptyBuffer});
      return;
    case ColumnKind::kListInt32:
    case ColumnKind::kListInt64:
    case ColumnKind::kListString: {
      ArrowSchema* schema = AddSchemaChild(parent_schema, "+l", c.name);
      SetBuffers(out, priv, {validity, z});
      ArrowArray* child = AddArrayChild(out, 0);
      auto* child_priv = static_cast<ArrayPrivate*>(child->private_data);
      if (c.kind == ColumnKind::kListString) {
        AddSchemaChild(schema, "u", "item");
        SetBuffers(child, child_priv, {nullptr, Zeros(child_priv, 4), kEmptyBuffer});
      } else {
        AddSchemaChild(schema, c.kind == ColumnKind::kListInt32 ? "i" : "l", "item");
        SetBuffers(child, child_priv, {nullptr, kEmptyBuffer});
      }
      return;
    }
    default:
      AddSchemaChild(parent_schema, FixedFormat(c.kind), c.name);
      SetBuffers(out, priv, {validity, z});
      return;
  }
}

void ExportColumn(const ColumnView& c, const StringPool& pool, ArrowSchema* parent_schema,
                  ArrowArray* parent_array, const std::shared_ptr<const void>& zeros) {
  ArrowArray* out = AddArrayChild(parent_array, c.length);
  auto* priv = static_cast<ArrayPrivate*>(out->private_data);
  if (c.all_null) {
    ExportAllNull(c, pool, parent_schema, out, priv, zeros);
    return;
  }
  if (c.all_zero) {
    // A fixed-width column of zeros (EmptyFill::kZero): the table's shared buffer of zeros.
    const char* format = FixedFormat(c.kind);
    if (format == nullptr || c.kind == ColumnKind::kBool) {
      throw std::logic_error(std::string("a column of zeros of a type without fixed width: ") + c.name);
    }
    AddSchemaChild(parent_schema, format, c.name);
    priv->shared_zeros = zeros;
    SetBuffers(out, priv, {nullptr, zeros.get()});
    return;
  }
  switch (c.kind) {
    case ColumnKind::kInt32:
    case ColumnKind::kUInt8:
    case ColumnKind::kInt64:
    case ColumnKind::kUInt32:
    case ColumnKind::kUInt64:
    case ColumnKind::kFloat64: {
      AddSchemaChild(parent_schema, FixedFormat(c.kind), c.name);
      const void* validity = Validity(c, out, priv);
      SetBuffers(out, priv, {validity, NonNull(c.values)});
      return;
    }
    case ColumnKind::kBool: {
      AddSchemaChild(parent_schema, "b", c.name);
      int64_t unset = 0;
      priv->bitmaps.push_back(PackBits(static_cast<const uint8_t*>(NonNull(c.values)), c.length, &unset));
      SetBuffers(out, priv, {nullptr, priv->bitmaps.back().data()});
      return;
    }
    case ColumnKind::kDictString: {
      // Pool ids are uint32 but below 2^31 (the pool's byte limit bounds them): exported as int32.
      const void* validity = Validity(c, out, priv);
      ExportDictionary(c, pool, parent_schema, out, priv, validity,
                       c.length > 0 ? static_cast<const uint32_t*>(c.values) : nullptr);
      return;
    }
    case ColumnKind::kString:
    case ColumnKind::kBinary: {
      AddSchemaChild(parent_schema, c.kind == ColumnKind::kString ? "u" : "z", c.name);
      ExportStrings(*c.strings, Validity(c, out, priv), out, priv);
      return;
    }
    case ColumnKind::kListInt32:
    case ColumnKind::kListInt64:
    case ColumnKind::kListString: {
      ArrowSchema* schema = AddSchemaChild(parent_schema, "+l", c.name);
      SetBuffers(out, priv, {Validity(c, out, priv), c.list_offsets});
      ArrowArray* child = AddArrayChild(out, c.values_length);
      auto* child_priv = static_cast<ArrayPrivate*>(child->private_data);
      if (c.kind == ColumnKind::kListString) {
        AddSchemaChild(schema, "u", "item");
        ExportStrings(*c.strings, nullptr, child, child_priv);
      } else {
        AddSchemaChild(schema, c.kind == ColumnKind::kListInt32 ? "i" : "l", "item");
        SetBuffers(child, child_priv, {nullptr, NonNull(c.values)});
      }
      return;
    }
  }
}

}  // namespace

void ExportTable(const TableView& table, const StringPool& pool,
                 std::shared_ptr<const void> owner, ArrowSchema* schema, ArrowArray* array) {
  InitSchema(schema, "+s", "", 0);
  ArrayPrivate* priv = InitArray(array, table.num_rows, owner);
  SetBuffers(array, priv, {nullptr});
  try {
    // One buffer of zeros for every all-null or all-zero column: calloc hands a large one over
    // as untouched pages, and the columns do not each count it again.
    std::shared_ptr<const void> zeros;
    for (const ColumnView& c : table.columns) {
      if ((c.all_null || c.all_zero) && zeros == nullptr) {
        void* p = std::calloc(AllNullZeroBytes(table.num_rows), 1);
        if (p == nullptr) throw std::bad_alloc();
        zeros = std::shared_ptr<const void>(p, [](const void* q) { std::free(const_cast<void*>(q)); });
      }
    }
    for (const ColumnView& c : table.columns) ExportColumn(c, pool, schema, array, zeros);
  } catch (...) {
    schema->release(schema);
    array->release(array);
    throw;
  }
}

}  // namespace tracecore
