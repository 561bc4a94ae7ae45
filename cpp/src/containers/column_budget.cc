#include "containers/column_budget.h"

namespace tracecore {
namespace {

thread_local ColumnBudget* active_budget = nullptr;
thread_local const ParsePosition* current_position = nullptr;

}  // namespace

ParsePosition::Use::Use(const ParsePosition* position) : previous_(current_position) {
  current_position = position;
}

ParsePosition::Use::~Use() { current_position = previous_; }

const ParsePosition* ParsePosition::Current() { return current_position; }

ColumnBudget::Scope::Scope(ColumnBudget* budget) : previous_(active_budget) {
  active_budget = budget;
}

ColumnBudget::Scope::~Scope() { active_budget = previous_; }

ColumnBudget* ColumnBudget::Active() { return active_budget; }

void ColumnBudget::Add(size_t bytes) {
  const uint64_t used = used_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  if (used > limit_ || used < bytes) {
    used_.fetch_sub(bytes, std::memory_order_relaxed);
    const ParsePosition* where = ParsePosition::Current();
    throw ColumnBudgetExceeded(limit_, where != nullptr ? *where : ParsePosition{});
  }
  uint64_t peak = peak_.load(std::memory_order_relaxed);
  while (used > peak && !peak_.compare_exchange_weak(peak, used, std::memory_order_relaxed)) {
  }
}

void ColumnBudget::Sub(size_t bytes) noexcept {
  // A buffer charged to no budget (allocated before the scope) may be freed inside one: the
  // count never goes below zero.
  uint64_t used = used_.load(std::memory_order_relaxed);
  while (!used_.compare_exchange_weak(used, used > bytes ? used - bytes : 0,
                                      std::memory_order_relaxed)) {
  }
}

}  // namespace tracecore
