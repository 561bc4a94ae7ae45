// A memory budget for the columns of one parse: what degenerate input (records of two bytes,
// each one a table row of about 100 bytes) can make the tables take is bounded by it.
//
// While a ColumnBudget::Scope is alive on a thread, every column buffer allocated there (see
// ColumnAllocator) is charged to its budget before it is allocated, and every buffer freed
// there is refunded. A charge past the limit throws ColumnBudgetExceeded instead of
// allocating; the parse position it names is that of the TraceSink working on the thread
// (ParsePosition). Buffers are charged at their capacity, so room reserved ahead counts as
// much as filled rows, and a column that doubles counts both buffers while it copies. The
// threads of a parallel parse share one budget (each opens a Scope on it).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace tracecore {

// Where the parse on this thread has got to: what the allocator names when it refuses. A
// TraceSink keeps one and makes it current (Use) while it lives.
struct ParsePosition {
  const char* at = nullptr;  // input byte the parse has passed (nullptr: not known)
  bool text = false;         // whether the input is protobuf text (position as line, column)

  // Makes `position` the thread's current one until destroyed (they nest).
  class Use {
   public:
    explicit Use(const ParsePosition* position);
    ~Use();
    Use(const Use&) = delete;
    Use& operator=(const Use&) = delete;

   private:
    const ParsePosition* previous_;
  };
  static const ParsePosition* Current();
};

class ColumnBudgetExceeded : public std::runtime_error {
 public:
  ColumnBudgetExceeded(uint64_t limit, const ParsePosition& where)
      : std::runtime_error("the tables would take more than " + std::to_string(limit) +
                           " bytes of memory"),
        limit(limit),
        at(where.at),
        text(where.text) {}
  uint64_t limit;
  const char* at;  // as ParsePosition
  bool text;
};

class ColumnBudget {
 public:
  explicit ColumnBudget(uint64_t limit) : limit_(limit) {}
  ColumnBudget(const ColumnBudget&) = delete;
  ColumnBudget& operator=(const ColumnBudget&) = delete;

  uint64_t limit() const { return limit_; }
  // Most bytes charged at once.
  uint64_t peak() const { return peak_.load(std::memory_order_relaxed); }

  // Makes `budget` (nullptr: none) the thread's budget until destroyed (they nest).
  class Scope {
   public:
    explicit Scope(ColumnBudget* budget);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    ColumnBudget* previous_;
  };
  static ColumnBudget* Active();

  // Charges `bytes` to the thread's budget, if any; ColumnBudgetExceeded past its limit.
  static void Charge(size_t bytes) {
    if (ColumnBudget* b = Active()) b->Add(bytes);
  }
  // Refunds `bytes` to the thread's budget, if any.
  static void Refund(size_t bytes) noexcept {
    if (ColumnBudget* b = Active()) b->Sub(bytes);
  }

 private:
  void Add(size_t bytes);
  void Sub(size_t bytes) noexcept;

  const uint64_t limit_;
  std::atomic<uint64_t> used_{0};
  std::atomic<uint64_t> peak_{0};
};

}  // namespace tracecore
