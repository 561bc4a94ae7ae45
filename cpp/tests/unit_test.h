// A small unit-test harness for the C++ core: TEST(suite, name) registers a function, the
// EXPECT_* macros record failures with file and line, and unit_test_main.cc runs every test of
// the executable (or those whose "suite.name" contains argv[1]). One executable per test file;
// CTest runs each (cpp/tests/CMakeLists.txt), and tests/test_cpp_units.py drives CTest from the
// README's test command.
#pragma once

#include <cstdint>
#include <functional>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace tracecore::unit {

struct TestCase {
  const char* suite;
  const char* name;
  void (*fn)();
};

std::vector<TestCase>& Registry();
void Fail(const char* file, int line, const std::string& message);

struct Register {
  Register(const char* suite, const char* name, void (*fn)()) { Registry().push_back({suite, name, fn}); }
};

template <class T>
std::string Show(const T& v) {
  std::ostringstream os;
  if constexpr (std::is_same_v<T, std::string> || std::is_convertible_v<T, std::string_view>) {
    os << '"' << v << '"';
  } else if constexpr (std::is_same_v<T, uint8_t> || std::is_same_v<T, int8_t>) {
    os << static_cast<int>(v);
  } else if constexpr (std::is_enum_v<T>) {
    os << static_cast<int64_t>(v);
  } else if constexpr (std::is_arithmetic_v<T>) {
    os << v;
  } else {
    os << "<value>";
  }
  return os.str();
}

// Thrown by ASSERT_*: ends the current test.
struct AssertionFailed {};

}  // namespace tracecore::unit

#define TC_UNIT_CONCAT2(a, b) a##b
#define TC_UNIT_CONCAT(a, b) TC_UNIT_CONCAT2(a, b)

#define TEST(suite, name)                                                                   \
  static void TC_UNIT_CONCAT(suite##_##name, _fn)();                                        \
  static const ::tracecore::unit::Register TC_UNIT_CONCAT(suite##_##name, _reg)(            \
      #suite, #name, &TC_UNIT_CONCAT(suite##_##name, _fn));                                 \
  static void TC_UNIT_CONCAT(suite##_##name, _fn)()

#define TC_UNIT_CHECK_OP(a, op, b, fatal)                                                   \
  do {                                                                                      \
    const auto& tc_a = (a);                                                                 \
    const auto& tc_b = (b);                                                                 \
    if (!(tc_a op tc_b)) {                                                                  \
      ::tracecore::unit::Fail(__FILE__, __LINE__,                                           \
                              std::string(#a " " #op " " #b ": ") +                         \
                                  ::tracecore::unit::Show(tc_a) + " vs " +                  \
                                  ::tracecore::unit::Show(tc_b));                           \
      if (fatal) throw ::tracecore::unit::AssertionFailed{};                                \
    }                                                                                       \
  } while (0)

#define EXPECT_EQ(a, b) TC_UNIT_CHECK_OP(a, ==, b, false)
#define EXPECT_NE(a, b) TC_UNIT_CHECK_OP(a, !=, b, false)
#define EXPECT_LT(a, b) TC_UNIT_CHECK_OP(a, <, b, false)
#define EXPECT_LE(a, b) TC_UNIT_CHECK_OP(a, <=, b, false)
#define EXPECT_GT(a, b) TC_UNIT_CHECK_OP(a, >, b, false)
#define EXPECT_GE(a, b) TC_UNIT_CHECK_OP(a, >=, b, false)
#define ASSERT_EQ(a, b) TC_UNIT_CHECK_OP(a, ==, b, true)
#define ASSERT_NE(a, b) TC_UNIT_CHECK_OP(a, !=, b, true)
#define ASSERT_GE(a, b) TC_UNIT_CHECK_OP(a, >=, b, true)
#define ASSERT_LT(a, b) TC_UNIT_CHECK_OP(a, <, b, true)
#define EXPECT_TRUE(c)                                                                      \
  do {                                                                                      \
    if (!(c)) ::tracecore::unit::Fail(__FILE__, __LINE__, "expected true: " #c);            \
  } while (0)
#define EXPECT_FALSE(c)                                                                     \
  do {                                                                                      \
    if (c) ::tracecore::unit::Fail(__FILE__, __LINE__, "expected false: " #c);              \
  } while (0)
#define ASSERT_TRUE(c)                                                                      \
  do {                                                                                      \
    if (!(c)) {                                                                             \
      ::tracecore::unit::Fail(__FILE__, __LINE__, "expected true: " #c);                    \
      throw ::tracecore::unit::AssertionFailed{};                                           \
    }                                                                                       \
  } while (0)
// `stmt` must throw an exception of type `E` whose what() contains `substring`.
#define EXPECT_THROW_WITH(stmt, E, substring)                                               \
  do {                                                                                      \
    bool tc_thrown = false;                                                                 \
    try {                                                                                   \
      stmt;                                                                                 \
    } catch (const E& tc_e) {                                                               \
      tc_thrown = true;                                                                     \
      if (std::string(tc_e.what()).find(substring) == std::string::npos) {                  \
        ::tracecore::unit::Fail(__FILE__, __LINE__,                                         \
                                std::string("message of " #stmt ": \"") + tc_e.what() +     \
                                    "\" lacks \"" + (substring) + "\"");                    \
      }                                                                                     \
    }                                                                                       \
    if (!tc_thrown) ::tracecore::unit::Fail(__FILE__, __LINE__, "no " #E " from " #stmt);   \
  } while (0)
