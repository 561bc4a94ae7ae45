// Property check of StringPool::Equal (its 16-, 8- and 4-bytes-at-once compares) against
// std::string_view's ==: strings of 0 to 80 bytes, each compared with an exact copy, with the
// copy changed in one byte at every position, and with its prefixes. Each string lives in a
// heap block of exactly its size, so under ASan a compare that reads past either string's end
// is reported. Built with the sanitizers by .ci/asan.sh; exits non-zero on the first mismatch.
//
//   string_equal_check [seed]
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <string_view>

#include "containers/string_pool.h"

namespace {

// A heap copy of `s` (exactly s.size() bytes, none for an empty string).
std::unique_ptr<char[]> Copy(std::string_view s) {
  std::unique_ptr<char[]> out(new char[s.size() == 0 ? 1 : s.size()]);
  for (size_t i = 0; i < s.size(); ++i) out[i] = s[i];
  return out;
}

bool Check(std::string_view a, std::string_view b, long* compares) {
  ++*compares;
  const bool got = tracecore::StringPool::Equal(a, b);
  if (got == (a == b)) return true;
  std::fprintf(stderr, "string_equal_check: Equal gave %d for sizes %zu and %zu\n", got, a.size(),
               b.size());
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  std::mt19937_64 rng(argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1);
  long compares = 0;
  for (int iter = 0; iter < 200; ++iter) {
    for (size_t n = 0; n <= 80; ++n) {
      std::string s(n, '\0');
      for (char& c : s) c = static_cast<char>(rng() % 4);  // few values: near misses
      const std::unique_ptr<char[]> a = Copy(s);
      const std::string_view av(a.get(), n);
      std::unique_ptr<char[]> b = Copy(av);
      if (!Check(av, std::string_view(b.get(), n), &compares)) return 1;
      for (size_t i = 0; i < n; ++i) {
        const char saved = b[i];
        b[i] = static_cast<char>(saved ^ (1 << (rng() % 8)));
        if (!Check(av, std::string_view(b.get(), n), &compares)) return 1;
        b[i] = saved;
      }
      for (size_t k = 0; k < n; ++k) {
        const std::unique_ptr<char[]> prefix = Copy(av.substr(0, k));
        if (!Check(av, std::string_view(prefix.get(), k), &compares)) return 1;
        if (!Check(std::string_view(prefix.get(), k), av.substr(0, k), &compares)) return 1;
      }
    }
  }
  std::printf("string_equal_check: %ld compares agree with std::string_view\n", compares);
  return 0;
}
