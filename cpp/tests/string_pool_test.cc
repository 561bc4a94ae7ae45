// StringPool: interning, ids, lookup, UTF-8 validation and the wide compares of Equal.
#include <memory>
#include <random>
#include <string>

#include "containers/string_pool.h"
#include "unit_test.h"

using tracecore::StringPool;

TEST(StringPool, EmptyStringIsIdZero) {
  StringPool pool;
  EXPECT_EQ(pool.size(), 1u);
  EXPECT_EQ(pool.Get(StringPool::kEmptyId), std::string_view());
  EXPECT_EQ(pool.Intern(""), StringPool::kEmptyId);
}

TEST(StringPool, InternGivesDenseStableIds) {
  StringPool pool;
  const uint32_t a = pool.Intern("MatMul");
  const uint32_t b = pool.Intern("Conv2D");
  EXPECT_EQ(a, 1u);
  EXPECT_EQ(b, 2u);
  EXPECT_EQ(pool.Intern("MatMul"), a);
  EXPECT_EQ(pool.Get(a), "MatMul");
  EXPECT_EQ(pool.Get(b), "Conv2D");
  EXPECT_EQ(pool.size(), 3u);
}

TEST(StringPool, FindDoesNotInsert) {
  StringPool pool;
  pool.Intern("a");
  EXPECT_EQ(pool.Find("a"), 1u);
  EXPECT_EQ(pool.Find("b"), StringPool::kNotFound);
  EXPECT_EQ(pool.size(), 2u);
}

TEST(StringPool, InvalidUtf8IsRefused) {
  StringPool pool;
  EXPECT_EQ(pool.Intern(std::string_view("\xff", 1)), StringPool::kInvalidUtf8);
  EXPECT_EQ(pool.Intern(std::string_view("\xc3", 1)), StringPool::kInvalidUtf8);  // truncated
  EXPECT_EQ(pool.Intern("caf\xc3\xa9"), 1u);
  EXPECT_TRUE(StringPool::IsValidUtf8("\xf0\x9f\x98\x80"));
  EXPECT_FALSE(StringPool::IsValidUtf8("\xed\xa0\x80"));  // a UTF-16 surrogate
  EXPECT_FALSE(StringPool::IsValidUtf8("\xc0\x80"));      // overlong
}

TEST(StringPool, ManyStringsSurviveGrowth) {
  StringPool pool;
  for (int i = 0; i < 100000; ++i) EXPECT_EQ(pool.Intern("name/" + std::to_string(i)), uint32_t(i + 1));
  for (int i = 0; i < 100000; i += 997) EXPECT_EQ(pool.Get(uint32_t(i + 1)), "name/" + std::to_string(i));
}

namespace {
// A heap copy of exactly s.size() bytes, so that ASan reports a compare reading past the end.
std::unique_ptr<char[]> Copy(std::string_view s) {
  std::unique_ptr<char[]> out(new char[s.empty() ? 1 : s.size()]);
  for (size_t i = 0; i < s.size(); ++i) out[i] = s[i];
  return out;
}
}  // namespace

// Equal's 16-, 8- and 4-byte compares against string_view's ==: every length to 80, a copy, a
// copy changed at each position, every prefix.
TEST(StringPool, EqualAgreesWithStringViewCompare) {
  std::mt19937_64 rng(1);
  for (int iter = 0; iter < 40; ++iter) {
    for (size_t n = 0; n <= 80; ++n) {
      std::string s(n, '\0');
      for (char& c : s) c = static_cast<char>(rng() % 4);
      const auto a = Copy(s);
      const std::string_view av(a.get(), n);
      auto b = Copy(av);
      EXPECT_TRUE(StringPool::Equal(av, std::string_view(b.get(), n)));
      for (size_t i = 0; i < n; ++i) {
        const char saved = b[i];
        b[i] = static_cast<char>(saved ^ (1 << (rng() % 8)));
        EXPECT_FALSE(StringPool::Equal(av, std::string_view(b.get(), n)));
        b[i] = saved;
      }
      for (size_t k = 0; k < n; ++k) {
        const auto prefix = Copy(av.substr(0, k));
        EXPECT_FALSE(StringPool::Equal(av, std::string_view(prefix.get(), k)));
        EXPECT_TRUE(StringPool::Equal(std::string_view(prefix.get(), k), av.substr(0, k)));
      }
    }
  }
}
