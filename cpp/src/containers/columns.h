// Growable column builders whose memory is laid out as Arrow buffers, so that a finished column
// is exported without copying.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "containers/column_allocator.h"

namespace tracecore {

// Appends a row's nullable value to a column and its validity (T{} where absent).
template <class C, class T>
void PushNullable(C& column, Column<uint8_t>& valid, bool present, T value) {
  column.push_back(present ? value : T{});
  valid.push_back(present ? 1 : 0);
}

// A column of variable-length strings: Arrow "utf8" layout (int32 offsets + bytes).
struct StringColumn {
  Column<int32_t> offsets{0};
  Column<char> data;

  void Append(std::string_view s) {
    if (data.size() + s.size() > 0x7FFFFFFFu) {
      throw std::length_error("string column exceeds 2 GiB");
    }
    data.insert(data.end(), s.begin(), s.end());
    offsets.push_back(static_cast<int32_t>(data.size()));
  }
  size_t size() const { return offsets.size() - 1; }
};

// A column of lists of T: Arrow "list" layout (int32 offsets + child values).
template <class T>
struct ListColumn {
  Column<int32_t> offsets{0};
  Column<T> values;

  // Ends the current row: it holds every value appended since the previous row ended.
  void CloseRow() {
    if (values.size() > 0x7FFFFFFFu) throw std::length_error("list column exceeds 2^31 values");
    offsets.push_back(static_cast<int32_t>(values.size()));
  }
  size_t size() const { return offsets.size() - 1; }
  size_t open_row_start() const { return static_cast<size_t>(offsets.back()); }
};

// A column of lists of strings.
struct ListStringColumn {
  Column<int32_t> offsets{0};
  StringColumn values;

  void CloseRow() {
    if (values.size() > 0x7FFFFFFFu) throw std::length_error("list column exceeds 2^31 values");
    offsets.push_back(static_cast<int32_t>(values.size()));
  }
  size_t size() const { return offsets.size() - 1; }
};

}  // namespace tracecore
