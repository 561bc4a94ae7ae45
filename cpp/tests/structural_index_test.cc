// The JSON reader's stage 1 (importers/chrome_json/structural_index): every implementation
// (portable, SSE2, SSSE3, AVX2 where the CPU has them) against a byte-at-a-time reference on
// random inputs, with the state carried across blocks and across calls.
#include "importers/chrome_json/structural_index.h"

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "unit_test.h"

using namespace tracecore::json;

namespace {

bool IsSpace(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool IsOp(unsigned char c) {
  return c == '{' || c == '}' || c == '[' || c == ']' || c == ':' || c == ',';
}

// The token starts, one byte at a time, from the definition in structural_index.h.
std::vector<uint64_t> Reference(const std::string& s) {
  std::vector<uint64_t> masks(s.size() / 64, 0);
  bool in = false, escape = false, prev_scalar = false, prev_dirty = false;
  for (size_t i = 0; i < masks.size() * 64; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    const bool escaped = escape;
    escape = c == '\\' && !escaped;
    const bool quote = c == '"' && !escaped;
    if (quote) in = !in;
    const bool in_string = quote ? in : in;  // an opening quote counts as inside, a closing one not
    const bool scalar = !(IsSpace(c) || IsOp(c) || quote || in_string);
    const bool dirty = in_string && (c < 0x20 || c >= 0x80 || c == '\\');
    const bool token =
        (IsOp(c) && !in_string) || quote || (scalar && !prev_scalar) || (dirty && !prev_dirty);
    prev_scalar = scalar;
    prev_dirty = dirty;
    if (token) masks[i / 64] |= uint64_t{1} << (i % 64);
  }
  return masks;
}

// The masks of `impl`, fed in calls of random numbers of blocks.
std::vector<uint64_t> Run(Stage1Fn impl, const std::string& s, std::mt19937_64& rng) {
  const size_t blocks = s.size() / 64;
  std::vector<uint64_t> masks(blocks + 1, 0);
  Stage1Carry carry;
  for (size_t b = 0; b < blocks;) {
    const size_t n = std::min<size_t>(blocks - b, 1 + rng() % 5);
    impl(s.data() + 64 * b, n, &carry, masks.data() + b);
    b += n;
  }
  masks.resize(blocks);
  return masks;
}

}  // namespace

TEST(StructuralIndex, ImplementationsAgreeWithTheReference) {
  std::mt19937_64 rng(3);
  const std::string alphabet = "\"\\ \n\t{}[]:,a1-.e\x01\x1f\xC3\xA9\xFF\x7f";
  std::vector<std::pair<const char*, Stage1Fn>> impls = {{"portable", PortableStage1()}};
  if (Sse2Stage1() != nullptr) impls.push_back({"sse2", Sse2Stage1()});
  if (Ssse3Stage1() != nullptr) impls.push_back({"ssse3", Ssse3Stage1()});
  if (Avx2Stage1() != nullptr) impls.push_back({"avx2", Avx2Stage1()});
  for (int iter = 0; iter < 3000; ++iter) {
    std::string s(64 * (1 + rng() % 8), ' ');
    const int mode = static_cast<int>(rng() % 3);
    for (char& c : s) {
      if (mode == 0) {
        c = alphabet[rng() % alphabet.size()];
      } else if (mode == 1) {
        c = static_cast<char>(rng() % 256);
      } else {  // mostly plain text, some quotes and backslashes: long strings across blocks
        const unsigned r = rng() % 100;
        c = r < 3 ? '"' : r < 6 ? '\\' : r < 20 ? ' ' : static_cast<char>('a' + r % 26);
      }
    }
    const std::vector<uint64_t> expected = Reference(s);
    for (const auto& [name, impl] : impls) {
      const std::vector<uint64_t> got = Run(impl, s, rng);
      for (size_t b = 0; b < expected.size(); ++b) {
        if (got[b] != expected[b]) {
          EXPECT_EQ(
              std::string(name) + " block " + std::to_string(b) + ": " + std::to_string(got[b]),
              std::string(name) + " block " + std::to_string(b) + ": " +
                  std::to_string(expected[b]));
          return;
        }
      }
    }
  }
}

TEST(StructuralIndex, BestIsOneOfThem) {
  const Stage1Fn best = BestStage1();
  EXPECT_TRUE(best == PortableStage1() || best == Sse2Stage1() || best == Ssse3Stage1() ||
              best == Avx2Stage1());
  const std::string name = BestStage1Name();
  EXPECT_TRUE(name == "portable" || name == "sse2" || name == "ssse3" || name == "avx2");
}
