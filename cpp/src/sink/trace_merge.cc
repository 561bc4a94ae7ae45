#include "sink/trace_merge.h"

#include <algorithm>
#include <cstddef>
#include <functional>
#include <iterator>
#include <utility>
#include <stdexcept>
#include <type_traits>

#include "core/parallel.h"

namespace tracecore {
namespace {

// Frees a part's column once it has been copied.
template <class T>
void Free(Column<T>& v) {
  Column<T>().swap(v);
}

// Columns held as offsets and values (merged by appending both).
template <class T>
struct IsList : std::false_type {};
template <class T>
struct IsList<ListColumn<T>> : std::true_type {};
template <>
struct IsList<StringColumn> : std::true_type {};
template <>
struct IsList<ListStringColumn> : std::true_type {};

// dst gets room for `total` elements (one reallocation at most; none when the first chunk
// reserved for the whole input).
template <class T>
void Grow(Column<T>& dst, size_t total) {
  if (dst.capacity() < total) dst.reserve(total);
}

void AppendOffsets(Column<int32_t>& dst, const Column<int32_t>& src) {
  // Both start with a 0 entry; src's are shifted by dst's last offset.
  const int64_t shift = dst.back();
  if (shift + src.back() > 0x7FFFFFFF) throw std::length_error("column exceeds 2^31 values");
  for (size_t i = 1; i < src.size(); ++i) dst.push_back(static_cast<int32_t>(src[i] + shift));
}

// A random-access iterator over fn(*p), for vector::insert of a mapped range.
template <class T, class Fn>
class MappedIterator {
 public:
  using iterator_category = std::random_access_iterator_tag;
  using value_type = decltype(std::declval<const Fn&>()(std::declval<const T&>()));
  using difference_type = std::ptrdiff_t;
  using pointer = const value_type*;
  using reference = value_type;

  MappedIterator(const T* p, const Fn& fn) : p_(p), fn_(&fn) {}
  value_type operator*() const { return (*fn_)(*p_); }
  value_type operator[](difference_type i) const { return (*fn_)(p_[i]); }
  MappedIterator& operator++() {
    ++p_;
    return *this;
  }
  MappedIterator operator++(int) {
    MappedIterator r = *this;
    ++p_;
    return r;
  }
  MappedIterator& operator--() {
    --p_;
    return *this;
  }
  MappedIterator& operator+=(difference_type d) {
    p_ += d;
    return *this;
  }
  MappedIterator operator+(difference_type d) const { return MappedIterator(p_ + d, *fn_); }
  difference_type operator-(const MappedIterator& o) const { return p_ - o.p_; }
  bool operator==(const MappedIterator& o) const { return p_ == o.p_; }
  bool operator!=(const MappedIterator& o) const { return p_ != o.p_; }
  bool operator<(const MappedIterator& o) const { return p_ < o.p_; }

 private:
  const T* p_;
  const Fn* fn_;
};

template <class T, class Fn>
MappedIterator<T, Fn> Mapped(const T* p, const Fn& fn) {
  return MappedIterator<T, Fn>(p, fn);
}

// The column-by-column concatenation: one task per column (or per list column), run on all
// cores. Part 0 is the output already; parts 1.. are appended.
class Merger {
 public:
  Merger(std::vector<std::unique_ptr<TraceTables>>& parts, TraceTables* out) : parts_(parts), out_(*out) {
    const size_t n = parts.size();
    remap_.resize(n);
    event_base_.assign(n, 0);
    device_base_.assign(n, 0);
    graph_base_.assign(n, 0);
    int64_t events = static_cast<int64_t>(out_.events.size());
    int64_t devices = static_cast<int64_t>(out_.devices.size());
    int64_t graphs = out_.graph_count;
    for (size_t k = 1; k < n; ++k) {
      const TraceTables& p = *parts[k];
      remap_[k].resize(p.pool.size());
      for (uint32_t id = 0; id < p.pool.size(); ++id) remap_[k][id] = out_.pool.Intern(p.pool.Get(id));
      event_base_[k] = events;
      device_base_[k] = devices;
      graph_base_[k] = graphs;
      events += static_cast<int64_t>(p.events.size());
      devices += static_cast<int64_t>(p.devices.size());
      graphs += p.graph_count;
    }
    if (devices > INT32_MAX || graphs > INT32_MAX) throw std::length_error("too many device blocks or graphs");
  }

  // Columns copied as they are.
  template <class Get>
  void Plain(Get get) {
    tasks_.emplace_back([this, get] {
      auto& dst = get(out_);
      Grow(dst, Total(get));
      for (size_t k = 1; k < parts_.size(); ++k) {
        auto& src = get(*parts_[k]);
        dst.insert(dst.end(), src.begin(), src.end());
        Free(src);
      }
    });
  }
  // Columns of string ids, remapped into the output's pool.
  template <class Get>
  void Ids(Get get) {
    Map(get, [this](size_t k, uint32_t id) { return remap_[k][id]; });
  }
  // Row references shifted by the rows of the parts before: events, device blocks, graphs.
  template <class Get>
  void EventIds(Get get) {
    Shifted(get, event_base_);
  }
  template <class Get>
  void DeviceIds(Get get) {
    Shifted(get, device_base_);
  }
  template <class Get>
  void GraphIds(Get get) {
    Shifted(get, graph_base_);
  }
  // List columns (ListColumn, StringColumn, ListStringColumn): offsets and values together.
  template <class Get>
  void List(Get get) {
    tasks_.emplace_back([this, get] {
      auto& dst = get(out_);
      for (size_t k = 1; k < parts_.size(); ++k) AppendList(dst, get(*parts_[k]));
    });
  }

  // A column, as its role says.
  template <class Get>
  void AddColumn(ColumnRole role, Get get) {
    using Storage = std::decay_t<decltype(get(out_))>;
    if constexpr (IsList<Storage>::value) {
      List(get);
    } else {
      switch (role) {
        case ColumnRole::kStringId: Ids(get); return;
        case ColumnRole::kEventRef: EventIds(get); return;
        case ColumnRole::kDeviceRef: DeviceIds(get); return;
        case ColumnRole::kGraphRef: GraphIds(get); return;
        case ColumnRole::kPlain:
        case ColumnRole::kInternal:
        case ColumnRole::kDerived: Plain(get); return;
      }
    }
  }

  // An optional column (see table_defs.h): false when no part has values, so it stays empty;
  // else the parts without values get null rows, so that every part can be appended.
  template <class TableOf, class Get, class ValidOf>
  bool PadOptional(TableOf table_of, Get get, ValidOf valid_of) {
    bool any = get(out_).size() != 0;
    for (size_t k = 1; k < parts_.size(); ++k) any = any || get(*parts_[k]).size() != 0;
    if (!any) return false;
    if constexpr (!std::is_same_v<ValidOf, NoValidity>) {
      for (size_t k = 0; k < parts_.size(); ++k) {
        TraceTables& t = k == 0 ? out_ : *parts_[k];
        const size_t rows = table_of(t).size();
        if (get(t).size() == 0 && rows != 0) {
          PadRows(get(t), rows);
          valid_of(table_of(t)).resize(rows, 0);
        }
      }
    }
    return true;
  }

  void Run() {
    ForEachMaybeParallel(tasks_.size(), true, [&](size_t q, size_t) { tasks_[q](); });
  }

 private:
  // Rows of a column over all parts.
  template <class Get>
  size_t Total(const Get& get) const {
    size_t total = get(out_).size();
    for (size_t k = 1; k < parts_.size(); ++k) total += get(*parts_[k]).size();
    return total;
  }

  // Values of part k plus base[k] (the bases fit the column's type: checked in the constructor).
  template <class Get>
  void Shifted(Get get, const std::vector<int64_t>& base) {
    using T = typename std::decay_t<decltype(get(out_))>::value_type;
    Map(get, [&base](size_t k, T v) { return static_cast<T>(v + base[k]); });
  }

  template <class Get, class Fn>
  void Map(Get get, Fn fn) {
    tasks_.emplace_back([this, get, fn] {
      auto& dst = get(out_);
      Grow(dst, Total(get));
      for (size_t k = 1; k < parts_.size(); ++k) {
        auto& src = get(*parts_[k]);
        // One insert of the mapped range: sized once, then a tight loop without push_back's
        // capacity check per value (twice as fast on id columns).
        const auto one = [&fn, k](const auto& v) { return fn(k, v); };
        dst.insert(dst.end(), Mapped(src.data(), one), Mapped(src.data() + src.size(), one));
        Free(src);
      }
    });
  }

  // Offsets and flat values of a list or string column.
  template <class V>
  static void AppendFlat(Column<int32_t>& dst_offsets, V& dst_values, Column<int32_t>& src_offsets,
                         V& src_values) {
    AppendOffsets(dst_offsets, src_offsets);
    dst_values.insert(dst_values.end(), src_values.begin(), src_values.end());
    Free(src_offsets);
    Free(src_values);
  }
  template <class T>
  static void AppendList(ListColumn<T>& dst, ListColumn<T>& src) {
    AppendFlat(dst.offsets, dst.values, src.offsets, src.values);
  }
  static void AppendList(StringColumn& dst, StringColumn& src) {
    AppendFlat(dst.offsets, dst.data, src.offsets, src.data);
  }
  static void AppendList(ListStringColumn& dst, ListStringColumn& src) {
    AppendOffsets(dst.offsets, src.offsets);
    AppendList(dst.values, src.values);
    Free(src.offsets);
  }


  template <class T>
  static void PadRows(tracecore::Column<T>& c, size_t rows) {
    c.resize(rows);
  }
  template <class L>
  static void PadRows(L& list, size_t rows) {
    list.offsets.resize(rows + 1, list.offsets.back());
  }

  std::vector<std::unique_ptr<TraceTables>>& parts_;
  TraceTables& out_;
  std::vector<std::vector<uint32_t>> remap_;
  std::vector<int64_t> event_base_, device_base_, graph_base_;
  std::vector<std::function<void()>> tasks_;
};

}  // namespace

void MergeTables(std::vector<std::unique_ptr<TraceTables>>& parts, TraceTables* out) {
  // The first part becomes the output as it is (its ids already are the sequential ones); the
  // columns of the others are appended, column by column on all cores, each part's column freed
  // as soon as it is copied.
  const Encoding format = out->format;
  const uint64_t input_bytes = out->input_bytes;
  *out = std::move(*parts.front());
  out->format = format;
  out->input_bytes = input_bytes;
  Merger m(parts, out);
  // Every column of every table, by its declared role (table_defs.h).
  TraceTables::ForEachTableAccessor([&](const TableDef&, auto table_of) {
    using Table = std::decay_t<decltype(table_of(*out))>;
    Table::ForEachColumnAccessor([&](const ColumnDef& def, auto column_of, auto valid_of) {
      const auto get = [table_of, column_of](TraceTables& t) -> auto& { return column_of(table_of(t)); };
      if (def.role == ColumnRole::kDerived) return;  // Finish fills it
      if (def.holding == ColumnHolding::kOptional && !m.PadOptional(table_of, get, valid_of)) return;
      m.AddColumn(def.role, get);
      if constexpr (!std::is_same_v<decltype(valid_of), NoValidity>) {
        m.Plain([table_of, valid_of](TraceTables& t) -> auto& { return valid_of(table_of(t)); });
      }
    });
  });
  m.Run();

  for (size_t k = 1; k < parts.size(); ++k) {
    const TraceTables& p = *parts[k];
    out->unknown_fields += p.unknown_fields;
    out->graph_keys.insert(out->graph_keys.end(), p.graph_keys.begin(), p.graph_keys.end());
    out->graph_count += p.graph_count;
    if (out->kind == TraceKind::kUnknown) out->kind = p.kind;
  }
  for (auto& part : parts) part.reset();
}

}  // namespace tracecore
