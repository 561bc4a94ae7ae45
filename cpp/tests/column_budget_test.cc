// The memory budget of a parse's columns (containers/column_budget.h): what a column buffer is
// charged and refunded, the refusal and where it says the parse was, ParseTrace's default and
// explicit budgets.
#include <cstdint>
#include <string>

#include "containers/column_budget.h"
#include "containers/columns.h"
#include "core/error.h"
#include "io/mapped_file.h"
#include "open/format_registry.h"
#include "unit_test.h"

using tracecore::Column;
using tracecore::ColumnBudget;
using tracecore::ColumnBudgetExceeded;
using tracecore::MappedFile;
using tracecore::OpenOptions;
using tracecore::ParsePosition;
using tracecore::ParseTrace;
using tracecore::TraceFormatError;

namespace {

// A StepStats of one device block holding `n` empty node_stats (12 00 each).
std::string EmptyRecords(size_t n) {
  const std::string device = "/device:CPU:0";
  std::string body = "\x0a" + std::string(1, static_cast<char>(device.size())) + device;
  for (size_t i = 0; i < n; ++i) body += std::string("\x12\x00", 2);
  std::string length;
  for (uint64_t v = body.size(); ; v >>= 7) {
    length += static_cast<char>((v & 0x7F) | (v > 0x7F ? 0x80 : 0));
    if (v <= 0x7F) break;
  }
  return "\x0a" + length + body;
}

}  // namespace

TEST(ColumnBudget, BuffersAreChargedAndRefundedOnTheirThread) {
  ColumnBudget budget(1 << 20);
  {
    ColumnBudget::Scope scope(&budget);
    EXPECT_TRUE(ColumnBudget::Active() == &budget);
    Column<int64_t> column;
    column.reserve(1000);
    EXPECT_EQ(budget.peak(), 8000u);
    column.reserve(2000);  // both buffers while the values move
    EXPECT_EQ(budget.peak(), 24000u);
    {
      ColumnBudget::Scope none(nullptr);
      Column<int64_t> free_of_charge(100000);  // no budget on the thread
      EXPECT_EQ(budget.peak(), 24000u);
    }
    EXPECT_TRUE(ColumnBudget::Active() == &budget);
  }
  EXPECT_TRUE(ColumnBudget::Active() == nullptr);
  // Everything was refunded: the whole budget can be taken again.
  ColumnBudget::Scope scope(&budget);
  Column<char> whole(size_t{1} << 20);
  EXPECT_EQ(whole.size(), size_t{1} << 20);
}

TEST(ColumnBudget, ARefusalNamesTheParsePosition) {
  const std::string input = "0123456789";
  ParsePosition position;
  position.at = input.data() + 4;
  position.text = true;
  ParsePosition::Use use(&position);
  ColumnBudget budget(1000);
  ColumnBudget::Scope scope(&budget);
  Column<int64_t> column(100);
  try {
    column.reserve(200);  // 1600 more bytes: refused, nothing allocated
    EXPECT_TRUE(false);
  } catch (const ColumnBudgetExceeded& e) {
    EXPECT_EQ(std::string(e.what()), "the tables would take more than 1000 bytes of memory");
    EXPECT_EQ(e.limit, 1000u);
    EXPECT_TRUE(e.at == input.data() + 4);
    EXPECT_TRUE(e.text);
  }
  EXPECT_EQ(column.capacity(), 100u);
  EXPECT_EQ(budget.peak(), 800u);
}

TEST(ColumnBudget, ParseTraceRefusesTablesPastTheBudget) {
  OpenOptions options;
  options.threads = 1;
  EXPECT_EQ(options.TableBudget(1000), uint64_t{64} << 20);  // the floor
  EXPECT_EQ(options.TableBudget(uint64_t{10} << 20), uint64_t{160} << 20);
  EXPECT_EQ(options.TableBudget(UINT64_MAX), UINT64_MAX);
  const std::string dump = EmptyRecords(100000);  // 200 KB, 9.6 MB of events rows
  EXPECT_EQ(ParseTrace(*MappedFile::FromBuffer(dump), options)->events.size(), 100000u);
  options.max_table_bytes = uint64_t{1} << 20;
  EXPECT_EQ(options.TableBudget(1000), uint64_t{1} << 20);
  try {
    ParseTrace(*MappedFile::FromBuffer(dump), options);
    EXPECT_TRUE(false);
  } catch (const TraceFormatError& e) {
    EXPECT_TRUE(e.where == TraceFormatError::Where::kBinary);
    EXPECT_GT(e.offset, 0u);
    EXPECT_LT(e.offset, dump.size());
    EXPECT_EQ(std::string(e.what()),
              "byte offset " + std::to_string(e.offset) +
                  ": the tables would take more than 1048576 bytes of memory (max_table_bytes); "
                  "a larger max_table_bytes allows more");
  }
  options.format = "text";
  std::string text = "dev_stats {\n";
  for (int i = 0; i < 100000; ++i) text += "node_stats {}\n";
  text += "}\n";
  try {
    ParseTrace(*MappedFile::FromBuffer(text), options);
    EXPECT_TRUE(false);
  } catch (const TraceFormatError& e) {
    EXPECT_TRUE(e.where == TraceFormatError::Where::kText);
    EXPECT_GT(e.line, 1u);
    EXPECT_EQ(e.column, 14u);  // after a record's closing brace
  }
}
