#include <cstdio>
#include <cstring>
#include <exception>

#include "unit_test.h"

namespace tracecore::unit {

std::vector<TestCase>& Registry() {
  static std::vector<TestCase> tests;
  return tests;
}

namespace {
int g_failures = 0;
}

void Fail(const char* file, int line, const std::string& message) {
  ++g_failures;
  std::fprintf(stderr, "%s:%d: FAILED: %s\n", file, line, message.c_str());
}

}  // namespace tracecore::unit

int main(int argc, char** argv) {
  using namespace tracecore::unit;
  const char* filter = argc > 1 ? argv[1] : "";
  int ran = 0, failed_tests = 0;
  for (const TestCase& t : Registry()) {
    const std::string full = std::string(t.suite) + "." + t.name;
    if (full.find(filter) == std::string::npos) continue;
    const int before = g_failures;
    try {
      t.fn();
    } catch (const AssertionFailed&) {
    } catch (const std::exception& e) {
      Fail(t.suite, 0, std::string("unexpected exception in ") + full + ": " + e.what());
    } catch (...) {
      Fail(t.suite, 0, "unexpected non-standard exception in " + full);
    }
    ++ran;
    const bool ok = g_failures == before;
    if (!ok) ++failed_tests;
    std::printf("[%s] %s\n", ok ? "  OK  " : "FAILED", full.c_str());
  }
  std::printf("%d tests, %d failed\n", ran, failed_tests);
  if (ran == 0) {
    std::fprintf(stderr, "no tests ran (filter '%s')\n", filter);
    return 1;
  }
  return failed_tests == 0 ? 0 : 1;
}
