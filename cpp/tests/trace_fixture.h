// Helpers shared by the importer, merge and query tests: a trace read from a few bytes by the
// StepStats importer (as tracecore.open reads one), and column comparisons that say which row
// differs.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "containers/columns.h"
#include "containers/string_pool.h"
#include "importers/stepstats/stepstats_importer.h"
#include "io/mapped_file.h"
#include "tables/trace_tables.h"
#include "unit_test.h"

namespace tracecore::unit {

// `bytes` read as a StepStats / RunMetadata dump in `encoding` (one thread, from a heap buffer).
inline std::shared_ptr<TraceTables> ReadDump(const std::string& bytes, Encoding encoding) {
  const std::shared_ptr<MappedFile> file = MappedFile::FromBuffer(bytes);
  return ReadStepStats(*file, encoding, 1);
}
inline std::shared_ptr<TraceTables> ReadText(const std::string& text) {
  return ReadDump(text, Encoding::kText);
}

// The strings a column of pool ids stands for.
template <class Ids>
std::vector<std::string> Names(const StringPool& pool, const Ids& ids) {
  std::vector<std::string> out;
  for (size_t i = 0; i < ids.size(); ++i) out.emplace_back(pool.Get(ids[i]));
  return out;
}

// The rows of a string column.
inline std::vector<std::string> Strings(const StringColumn& c) {
  std::vector<std::string> out;
  for (size_t i = 0; i < c.size(); ++i) {
    out.emplace_back(c.data.data() + c.offsets[i], static_cast<size_t>(c.offsets[i + 1] - c.offsets[i]));
  }
  return out;
}

// The rows of a list column, one vector per row.
template <class T>
std::vector<std::vector<T>> Lists(const ListColumn<T>& c) {
  std::vector<std::vector<T>> out;
  for (size_t i = 0; i < c.size(); ++i) {
    out.emplace_back(c.values.begin() + c.offsets[i], c.values.begin() + c.offsets[i + 1]);
  }
  return out;
}

template <class T>
struct IsVector : std::false_type {};
template <class T>
struct IsVector<std::vector<T>> : std::true_type {};

template <class Got>
using RowOf = std::decay_t<decltype(std::declval<const Got&>()[0])>;

// Fails (at the caller's file and line) for a size that differs and for each row that does.
template <class Got>
void CheckColumn(const char* file, int line, const char* what, const Got& got,
                 const std::vector<RowOf<Got>>& want) {
  if (got.size() != want.size()) {
    Fail(file, line, std::string(what) + ": " + std::to_string(got.size()) + " rows, expected " +
                         std::to_string(want.size()));
    return;
  }
  for (size_t i = 0; i < want.size(); ++i) {
    if (!(got[i] == want[i])) {
      std::string shown_got, shown_want;
      if constexpr (IsVector<RowOf<Got>>::value) {
        shown_got = "a list of " + std::to_string(got[i].size()) + " values";
        shown_want = "another of " + std::to_string(want[i].size());
      } else {
        shown_got = Show(got[i]);
        shown_want = Show(want[i]);
      }
      Fail(file, line, std::string(what) + "[" + std::to_string(i) + "]: " + shown_got + " vs " + shown_want);
    }
  }
}

}  // namespace tracecore::unit

// EXPECT_COLUMN(column, {row 0, row 1, ...}): every row of a column (a vector, a Column, ...).
#define EXPECT_COLUMN(got, ...) \
  ::tracecore::unit::CheckColumn(__FILE__, __LINE__, #got, (got), __VA_ARGS__)
