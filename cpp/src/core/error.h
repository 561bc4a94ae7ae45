// The one error type the core throws for bad input.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace tracecore {

// Raised for any input that is not a valid trace. Carries where the problem is: a line and
// column (text input), or a byte offset (binary input). The Python binding turns it into
// tracecore.TraceFormatError.
class TraceFormatError : public std::runtime_error {
 public:
  enum class Where { kNone, kText, kBinary };

  explicit TraceFormatError(const std::string& what) : std::runtime_error(what) {}

  static TraceFormatError AtText(uint64_t line, uint64_t column, const std::string& what) {
    TraceFormatError e("line " + std::to_string(line) + ", column " + std::to_string(column) +
                       ": " + what);
    e.where = Where::kText;
    e.line = line;
    e.column = column;
    return e;
  }

  static TraceFormatError AtByte(uint64_t offset, const std::string& what) {
    TraceFormatError e("byte offset " + std::to_string(offset) + ": " + what);
    e.where = Where::kBinary;
    e.offset = offset;
    return e;
  }

  // This error (position and flags kept) with `more` appended to its message: a caller's
  // context ("(in the decompressed gzip data)", a hint about the format).
  TraceFormatError Appended(const std::string& more) const {
    TraceFormatError out(what() + more);
    out.where = where;
    out.bad_value = bad_value;
    out.out_of_range = out_of_range;
    out.line = line;
    out.column = column;
    out.offset = offset;
    return out;
  }

  Where where = Where::kNone;
  // The message structure is sound but a field's value is not (a string that is not UTF-8, a
  // time whose nanoseconds overflow int64): a binary dump failing so is reported as it is, not
  // read again as the other message kind.
  bool bad_value = false;
  // A bad value that protobuf itself reads (a time whose nanoseconds overflow int64, where a
  // string that is not UTF-8 fails protobuf's parse too): the reading is sound, its value is
  // not representable in a column.
  bool out_of_range = false;
  uint64_t line = 0;
  uint64_t column = 0;
  uint64_t offset = 0;
};

// An operating-system failure (open, stat, mmap). Turned into OSError by the binding.
class IoError : public std::runtime_error {
 public:
  IoError(const std::string& what, int error_number)
      : std::runtime_error(what), error_number(error_number) {}
  int error_number;
};

}  // namespace tracecore
