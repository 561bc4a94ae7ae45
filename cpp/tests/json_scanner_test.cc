// The JSON reader (importers/chrome_json): tokens of small documents, strings and escapes,
// UTF-8 checks and replacement, numbers at the edges, the fixed-point decimal reader, and every
// error with its line and column.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>

#include "core/error.h"
#include "importers/chrome_json/json_numbers.h"
#include "importers/chrome_json/json_reader.h"
#include "importers/chrome_json/json_walk.h"
#include "importers/chrome_json/structural_index.h"
#include "importers/chrome_json/utf8.h"
#include "unit_test.h"

using tracecore::TraceFormatError;
using namespace tracecore::json;

namespace {

// The input in a heap block of exactly its size, so that ASan sees any read past the end.
class Exact {
 public:
  explicit Exact(std::string_view s) : data_(new char[s.empty() ? 1 : s.size()]), size_(s.size()) {
    std::memcpy(data_.get(), s.data(), s.size());
  }
  const char* begin() const { return data_.get(); }
  const char* end() const { return data_.get() + size_; }

 private:
  std::unique_ptr<char[]> data_;
  size_t size_;
};

// A canonical dump of the token stream: strings re-escaped (only '"', '\\' and bytes < 0x20),
// integers as int64, other numbers as %.17g, containers as written.
struct Dumper {
  std::string out;
  bool need_comma = false;
  void Sep() {
    if (need_comma) out += ',';
    need_comma = false;
  }
  void Str(std::string_view s) {
    out += '"';
    for (const char c : s) {
      if (c == '"' || c == '\\') {
        out += '\\';
        out += c;
      } else if (static_cast<unsigned char>(c) < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        out += buf;
      } else {
        out += c;
      }
    }
    out += '"';
  }
  void BeginObject() {
    Sep();
    out += '{';
  }
  void EndObject() {
    out += '}';
    need_comma = true;
  }
  void BeginArray() {
    Sep();
    out += '[';
  }
  void EndArray() {
    out += ']';
    need_comma = true;
  }
  void Key(std::string_view k) {
    Sep();
    Str(k);
    out += ':';
  }
  void Scalar(const Value& v) {
    Sep();
    switch (v.kind) {
      case ValueKind::kString:
        Str(v.text);
        break;
      case ValueKind::kNumber:
        if (v.is_int) {
          out += std::to_string(v.int_value);
        } else {
          char buf[40];
          std::snprintf(buf, sizeof buf, "%.17g", v.AsDouble());
          out += buf;
        }
        break;
      default:
        out += v.text;
        break;
    }
    need_comma = true;
  }
};

std::string DumpWith(std::string_view json, ReaderOptions options) {
  Exact in(json);
  JsonReader reader(in.begin(), in.end(), options);
  Dumper d;
  WalkValue(reader, d);
  reader.ExpectEnd();
  return d.out;
}

// The outcome ("ok: <dump>" or "error: <message>") with one stage-1 implementation.
std::string Outcome(std::string_view json, ReaderOptions options) {
  try {
    return "ok: " + DumpWith(json, options);
  } catch (const TraceFormatError& e) {
    return std::string("error: ") + e.what();
  }
}

// Every stage-1 implementation this CPU has must give the same outcome; that outcome.
std::string SameOutcome(std::string_view json, ReaderOptions options) {
  options.stage1 = PortableStage1();
  const std::string first = Outcome(json, options);
  for (const Stage1Fn f : {Sse2Stage1(), Ssse3Stage1(), Avx2Stage1()}) {
    if (f == nullptr) continue;
    options.stage1 = f;
    EXPECT_EQ(Outcome(json, options), first);
  }
  return first;
}

std::string Dump(std::string_view json, ReaderOptions options = {}) {
  const std::string outcome = SameOutcome(json, options);
  if (outcome.rfind("ok: ", 0) == 0) return outcome.substr(4);
  throw TraceFormatError(outcome.substr(7));
}

std::string Replaced(std::string_view json) {
  ReaderOptions options;
  options.replace_invalid = true;
  return Dump(json, options);
}

// The error a document raises: "line L, column C: what", or "no error".
std::string ErrorOf(std::string_view json, ReaderOptions options = {}) {
  const std::string outcome = SameOutcome(json, options);
  return outcome.rfind("error: ", 0) == 0 ? outcome.substr(7) : "no error";
}

int64_t Scaled(std::string_view text, int scale = 3) {
  int64_t out = -12345;
  const DecimalStatus status = ParseDecimalScaled(text, scale, &out);
  if (status == DecimalStatus::kOutOfRange) return std::numeric_limits<int64_t>::min() + 1;
  if (status == DecimalStatus::kNotANumber) return std::numeric_limits<int64_t>::min() + 2;
  return out;
}
constexpr int64_t kOutOfRange = std::numeric_limits<int64_t>::min() + 1;
constexpr int64_t kNotANumber = std::numeric_limits<int64_t>::min() + 2;

}  // namespace

TEST(JsonTokens, ScalarsAndContainers) {
  EXPECT_EQ(Dump(R"({"a": [1, -2, 2.5, "x", true, false, null], "b": {}, "c": []})"),
            R"({"a":[1,-2,2.5,"x",true,false,null],"b":{},"c":[]})");
  EXPECT_EQ(Dump("  \t\r\n 7 \n"), "7");
  EXPECT_EQ(Dump("\"s\""), "\"s\"");
  EXPECT_EQ(Dump("[[[]],{\"\":{}}]"), "[[[]],{\"\":{}}]");
}

TEST(JsonTokens, DuplicateKeysAreHandedOutInOrder) {
  EXPECT_EQ(Dump(R"({"a":1,"a":2})"), R"({"a":1,"a":2})");
}

TEST(JsonTokens, ByteOrderMarkIsSkipped) { EXPECT_EQ(Dump("\xEF\xBB\xBF{\"a\":1}"), "{\"a\":1}"); }

TEST(JsonStrings, PlainStringsAreViewsIntoTheInput) {
  Exact in(R"(["plain", "caf\u00e9", "caf)"
           "\xC3\xA9"
           R"("])");
  JsonReader reader(in.begin(), in.end());
  reader.EnterArray();
  ASSERT_TRUE(reader.NextElement());
  std::string_view s = reader.ReadString();
  EXPECT_EQ(s, "plain");
  EXPECT_TRUE(s.data() > in.begin() && s.data() < in.end());
  ASSERT_TRUE(reader.NextElement());
  s = reader.ReadString();  // escaped: decoded into scratch room
  EXPECT_EQ(s, "caf\xC3\xA9");
  EXPECT_FALSE(s.data() > in.begin() && s.data() < in.end());
  ASSERT_TRUE(reader.NextElement());
  s = reader.ReadString();  // raw UTF-8: checked, still a view
  EXPECT_EQ(s, "caf\xC3\xA9");
  EXPECT_TRUE(s.data() > in.begin() && s.data() < in.end());
  EXPECT_FALSE(reader.NextElement());
  reader.ExpectEnd();
}

TEST(JsonStrings, Escapes) {
  EXPECT_EQ(Dump(R"("\"\\\/\b\f\n\r\t")"), "\"\\\"\\\\/\\u0008\\u000c\\u000a\\u000d\\u0009\"");
  EXPECT_EQ(Dump(R"("\u0041\u00e9\u20AC")"), "\"A\xC3\xA9\xE2\x82\xAC\"");
  EXPECT_EQ(Dump(R"("\ud83d\ude00")"), "\"\xF0\x9F\x98\x80\"");  // a surrogate pair
  EXPECT_EQ(Dump(R"("\uDBFF\uDFFF")"), "\"\xF4\x8F\xBF\xBF\"");
  EXPECT_EQ(Dump(R"("a\u0000b")"), "\"a\\u0000b\"");
  EXPECT_EQ(Dump(R"({"k\u0065y":"v"})"), R"({"key":"v"})");
}

TEST(JsonStrings, EscapeErrors) {
  EXPECT_EQ(ErrorOf(R"("ab\x")"), "line 1, column 4: invalid escape '\\x' in a string");
  EXPECT_EQ(ErrorOf(R"("\u12G4")"),
            "line 1, column 2: invalid \\u escape: expected four hex digits");
  EXPECT_EQ(ErrorOf(R"("\u12")"), "line 1, column 2: invalid \\u escape: expected four hex digits");
  EXPECT_EQ(ErrorOf("\n  \"x\\ud800\""),
            "line 2, column 5: lone surrogate \\ud800 in a string (not UTF-8)");
  EXPECT_EQ(ErrorOf(R"("\udc00\ud800")"),
            "line 1, column 2: lone surrogate \\udc00 in a string (not UTF-8)");
  EXPECT_EQ(ErrorOf(R"("\ud800\u0041")"),
            "line 1, column 2: lone surrogate \\ud800 in a string (not UTF-8)");
  EXPECT_EQ(ErrorOf(R"(["abc)"), "line 1, column 2: unterminated string");
  EXPECT_EQ(ErrorOf("[\"abc\\"), "line 1, column 2: unterminated string");
  EXPECT_EQ(ErrorOf("[\"abc\\\""), "line 1, column 2: unterminated string");
}

TEST(JsonStrings, InvalidUtf8AndControlCharacters) {
  EXPECT_EQ(ErrorOf("[\"ab\xFF\"]"), "line 1, column 5: invalid UTF-8 in a string (byte 0xFF)");
  EXPECT_EQ(ErrorOf("{\"a\":\n\"\xC3\"}"),
            "line 2, column 2: invalid UTF-8 in a string (byte 0xC3)");
  EXPECT_EQ(ErrorOf("\"\xED\xA0\x80\""),
            "line 1, column 2: invalid UTF-8 in a string (byte 0xED)");  // surrogate
  EXPECT_EQ(ErrorOf("\"\xC0\x80\""),
            "line 1, column 2: invalid UTF-8 in a string (byte 0xC0)");  // overlong
  EXPECT_EQ(ErrorOf("\"\xF4\x90\x80\x80\""),
            "line 1, column 2: invalid UTF-8 in a string (byte 0xF4)");
  EXPECT_EQ(ErrorOf("\"a\\n\xFF\""),
            "line 1, column 5: invalid UTF-8 in a string (byte 0xFF)");  // after an escape
  EXPECT_EQ(ErrorOf("\"tab\there\""),
            "line 1, column 5: unescaped control character 0x09 in a string");
  EXPECT_EQ(ErrorOf("\"a\nb\""), "line 1, column 3: unescaped control character 0x0A in a string");
  EXPECT_EQ(ErrorOf(std::string_view("\"\0\"", 3)),
            "line 1, column 2: unescaped control character 0x00 in a string");
  // Outside strings such bytes start no value.
  EXPECT_EQ(ErrorOf("[\xFF]"), "line 1, column 2: expected a value, found byte 0xFF");
  EXPECT_EQ(ErrorOf("[\x0C 1]"), "line 1, column 2: expected a value, found byte 0x0C");
}

TEST(JsonStrings, ReplaceModeSubstitutesMaximalSubparts) {
  const std::string r = utf8::kReplacement;
  EXPECT_EQ(Replaced("\"ab\xFF"
                     "c\""),
            "\"ab" + r + "c\"");
  EXPECT_EQ(Replaced("\"\xE0\xA0"
                     "A\""),
            "\"" + r + "A\"");                                       // truncated 3-byte: one U+FFFD
  EXPECT_EQ(Replaced("\"\xE0\x80\""), "\"" + r + r + "\"");          // E0 80: not a prefix
  EXPECT_EQ(Replaced("\"\xF0\x9F\x98\""), "\"" + r + "\"");          // truncated 4-byte
  EXPECT_EQ(Replaced("\"\xED\xA0\x80\""), "\"" + r + r + r + "\"");  // encoded surrogate
  EXPECT_EQ(Replaced("\"a\tb\""), "\"a" + r + "b\"");                // raw control character
  EXPECT_EQ(Replaced(R"("\ud800x")"), "\"" + r + "x\"");             // lone surrogate escape
  EXPECT_EQ(Replaced(R"("\ud800\u0041")"), "\"" + r + "A\"");
  EXPECT_EQ(Replaced("{\"k\xFF\":1}"), "{\"k" + r + "\":1}");  // keys too
  // Escapes still decode around replaced bytes; valid sequences stay.
  EXPECT_EQ(Replaced("\"\\u00e9\xFF\xC3\xA9\""), "\"\xC3\xA9" + r + "\xC3\xA9\"");
}

TEST(JsonStrings, SkippedValuesAreFixedInReplaceMode) {
  const std::string in = "{\"a\": [\"x\xFF\", {\"b\\n\": \"\t\"}], \"c\": 1}";
  ReaderOptions options;
  options.replace_invalid = true;
  JsonReader reader(in.data(), in.data() + in.size(), options);
  reader.EnterObject();
  std::string_view key;
  ASSERT_TRUE(reader.NextMember(&key));
  EXPECT_EQ(std::string(reader.SkipValue()), "[\"x\xEF\xBF\xBD\", {\"b\\n\": \"\xEF\xBF\xBD\"}]");
  ASSERT_TRUE(reader.NextMember(&key));
  EXPECT_EQ(std::string(reader.SkipValue()), "1");
  EXPECT_FALSE(reader.NextMember(&key));
  // In strict mode the same bytes are an error where they are.
  JsonReader strict(in.data(), in.data() + in.size());
  strict.EnterObject();
  ASSERT_TRUE(strict.NextMember(&key));
  EXPECT_THROW_WITH(strict.SkipValue(), TraceFormatError, "line 1, column 10: invalid UTF-8");
}

// Strings of every length ending at every distance from the end of the buffer: the wide scan
// must find the closing quote and never read past the input (ASan checks the exact block).
TEST(JsonStrings, EveryLengthAndPosition) {
  for (size_t len = 0; len < 70; ++len) {
    for (const char* tail : {"", " ", "                 "}) {
      std::string body(len, 'a');
      for (size_t i = 0; i < len; ++i) body[i] = static_cast<char>('a' + i % 26);
      const std::string doc = "\"" + body + "\"" + tail;
      EXPECT_EQ(Dump(doc), "\"" + body + "\"");
      if (len > 0) {
        std::string escaped = body;
        escaped[len / 2] = '\\';
        escaped.insert(len / 2 + 1, "n");
        std::string expect = body;
        expect[len / 2] = '\n';
        Dumper d;
        d.Str(expect);
        EXPECT_EQ(Dump("\"" + escaped + "\"" + tail), d.out);
        std::string utf = body;
        utf.insert(len / 2, "\xE2\x82\xAC");
        EXPECT_EQ(Dump("\"" + utf + "\"" + tail), "\"" + utf + "\"");
      }
      EXPECT_EQ(ErrorOf("\"" + body + tail), "line 1, column 1: unterminated string");
    }
  }
}

TEST(JsonNumbers, Integers) {
  EXPECT_EQ(Dump("[0, -0, 7, -7, 9223372036854775807, -9223372036854775808]"),
            "[0,0,7,-7,9223372036854775807,-9223372036854775808]");
  Exact in(
      "[9223372036854775808, -9223372036854775809, 18446744073709551616, "
      "123456789012345678901234]");
  JsonReader reader(in.begin(), in.end());
  reader.EnterArray();
  const double expected[] = {9223372036854775808.0, -9223372036854775809.0, 18446744073709551616.0,
                             123456789012345678901234.0};
  for (const double e : expected) {
    ASSERT_TRUE(reader.NextElement());
    const Value v = reader.ReadNumber();
    EXPECT_FALSE(v.is_int);  // past int64: a number whose double is the nearest
    EXPECT_EQ(v.AsDouble(), e);
  }
  EXPECT_FALSE(reader.NextElement());
  int64_t out = 0;
  EXPECT_TRUE(ParseInt64("-9223372036854775808", &out));
  EXPECT_EQ(out, std::numeric_limits<int64_t>::min());
  EXPECT_FALSE(ParseInt64("9223372036854775808", &out));
  EXPECT_FALSE(ParseInt64("1.0", &out));
  EXPECT_FALSE(ParseInt64("1e2", &out));
}

TEST(JsonNumbers, DoublesAreCorrectlyRounded) {
  struct Case {
    const char* text;
    double value;
  } cases[] = {
      {"0.1", 0.1},
      {"2.5", 2.5},
      {"-0.0", -0.0},
      {"1e308", 1e308},
      {"1.7976931348623157e308", 1.7976931348623157e308},
      {"5e-324", 5e-324},
      {"2.2250738585072014e-308", 2.2250738585072014e-308},
      {"1e-400", 0.0},
      {"1e400", std::numeric_limits<double>::infinity()},
      {"-1e400", -std::numeric_limits<double>::infinity()},
      {"9007199254740993", 9007199254740992.0},
      {"9007199254740993.0", 9007199254740992.0},
      {"0.30000000000000004", 0.30000000000000004},
      {"123456789012345678901234567890e-10", 12345678901234567890.123456789},
      {"4762454534497.497", 4762454534497.497},
      {"1E2", 100.0},
      {"1e+2", 100.0},
      {"0e999999999999999999", 0.0},
      {"15.449999999999999", 15.449999999999999},
      {"9.9999999999999995e-07", 9.9999999999999995e-07},
  };
  for (const Case& c : cases) {
    const double d = ParseDouble(c.text);
    EXPECT_EQ(d, c.value);
    EXPECT_EQ(std::signbit(d), std::signbit(c.value));
  }
  // The fast path against strtod on random short decimals.
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200000; ++i) {
    char buf[64];
    const uint64_t mantissa = rng() % 100000000000000000ull;
    const int exponent = static_cast<int>(rng() % 60) - 30;
    std::snprintf(buf, sizeof buf, "%llue%d", static_cast<unsigned long long>(mantissa), exponent);
    if (ParseDouble(buf) != std::strtod(buf, nullptr)) {
      EXPECT_EQ(std::string(buf), std::string("rounds as strtod does"));
      break;
    }
  }
}

TEST(JsonNumbers, GrammarErrors) {
  EXPECT_EQ(ErrorOf("[NaN]"), "line 1, column 2: NaN and Infinity are not JSON numbers");
  EXPECT_EQ(ErrorOf("[Infinity]"), "line 1, column 2: NaN and Infinity are not JSON numbers");
  EXPECT_EQ(ErrorOf("[-Infinity]"), "line 1, column 2: NaN and Infinity are not JSON numbers");
  EXPECT_EQ(ErrorOf("[01]"), "line 1, column 3: unexpected '1' after a number");
  EXPECT_EQ(ErrorOf("[1x]"), "line 1, column 3: unexpected 'x' after a number");
  EXPECT_EQ(ErrorOf("[1\"x\"]"),
            "line 1, column 3: expected ',' or ']' after an array element, found '\"'");
  EXPECT_EQ(ErrorOf("[truex]"), "line 1, column 6: unexpected 'x' after a literal");
  EXPECT_EQ(ErrorOf("[null\x01]"), "line 1, column 6: unexpected byte 0x01 after a literal");
  EXPECT_EQ(ErrorOf("[1.]"), "line 1, column 4: malformed number: expected a digit, found ']'");
  EXPECT_EQ(ErrorOf("[.5]"), "line 1, column 2: expected a value, found '.'");
  EXPECT_EQ(ErrorOf("[+1]"), "line 1, column 2: expected a value, found '+'");
  EXPECT_EQ(ErrorOf("[-]"), "line 1, column 3: malformed number: expected a digit, found ']'");
  EXPECT_EQ(ErrorOf("[1e]"), "line 1, column 4: malformed number: expected a digit, found ']'");
  EXPECT_EQ(ErrorOf("[1e+]"), "line 1, column 5: malformed number: expected a digit, found ']'");
  EXPECT_EQ(ErrorOf("[1.5.2]"), "line 1, column 5: unexpected '.' after a number");
  EXPECT_EQ(ErrorOf("-"),
            "line 1, column 2: malformed number: expected a digit, found end of input");
  EXPECT_EQ(ErrorOf("[tru]"),
            "line 1, column 2: expected a value (true, false or null?), found 't'");
  EXPECT_EQ(ErrorOf("nul"), "line 1, column 1: expected a value (true, false or null?), found 'n'");
}

TEST(JsonDecimal, ScaledValuesAreExact) {
  EXPECT_EQ(Scaled("4762454534497.497"), 4762454534497497);
  EXPECT_EQ(Scaled("60273.114"), 60273114);
  EXPECT_EQ(Scaled("123"), 123000);
  EXPECT_EQ(Scaled("-0"), 0);
  EXPECT_EQ(Scaled("-12.5"), -12500);
  EXPECT_EQ(Scaled("1.5e3"), 1500000);
  EXPECT_EQ(Scaled("1.5E-3"), 2);  // 1.5 ns: a tie, to even
  EXPECT_EQ(Scaled("2.5e-3"), 2);
  EXPECT_EQ(Scaled("3.5e-3"), 4);
  EXPECT_EQ(Scaled("1.0005"), 1000);
  EXPECT_EQ(Scaled("1.0015"), 1002);
  EXPECT_EQ(Scaled("1.0025"), 1002);
  EXPECT_EQ(Scaled("1.00250001"), 1003);
  EXPECT_EQ(Scaled("1.0004999999999999999999999"), 1000);
  EXPECT_EQ(Scaled("-1.0005"), -1000);
  EXPECT_EQ(Scaled("-1.0015"), -1002);
  EXPECT_EQ(Scaled("-1.0016"), -1002);
  EXPECT_EQ(Scaled("15.449999999999999"), 15450);  // a double printed with 17 digits
  EXPECT_EQ(Scaled("9.9999999999999995e-07"), 0);
  EXPECT_EQ(Scaled("1e-06"), 0);
  EXPECT_EQ(Scaled("0.0005"), 0);
  EXPECT_EQ(Scaled("0.0015"), 2);
  EXPECT_EQ(Scaled("0.00050000001"), 1);
  EXPECT_EQ(Scaled("1.00000000000000000000000000000000000000005"), 1000);
  EXPECT_EQ(Scaled("0.000000000000000000000000000000000000000000005"), 0);
  EXPECT_EQ(Scaled("1e-99999999999999999999"), 0);
  EXPECT_EQ(Scaled("0e99999999999999999999"), 0);
  EXPECT_EQ(Scaled("0.000e5"), 0);
  EXPECT_EQ(Scaled("100000000000000000000e-20"), 1000);
  EXPECT_EQ(Scaled("9223372036854775.807"), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(Scaled("9223372036854775.8074"), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(Scaled("9223372036854775.8075"), kOutOfRange);
  EXPECT_EQ(Scaled("9223372036854775.808"), kOutOfRange);
  EXPECT_EQ(Scaled("-9223372036854775.808"), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(Scaled("-9223372036854775.809"), kOutOfRange);
  EXPECT_EQ(Scaled("1e16"), kOutOfRange);
  EXPECT_EQ(Scaled("1e99999999999999999999"), kOutOfRange);
  EXPECT_EQ(Scaled("99999999999999999999"), kOutOfRange);
  EXPECT_EQ(Scaled("7", 0), 7);
  EXPECT_EQ(Scaled("7.5", 0), 8);
  EXPECT_EQ(Scaled("6.5", 0), 6);
  EXPECT_EQ(Scaled("1", 18), 1000000000000000000);
  EXPECT_EQ(Scaled("10", 18), kOutOfRange);
  EXPECT_EQ(Scaled("1.", 3), kNotANumber);
  EXPECT_EQ(Scaled("01", 3), kNotANumber);
  EXPECT_EQ(Scaled("1x", 3), kNotANumber);
  EXPECT_EQ(Scaled("", 3), kNotANumber);
  EXPECT_EQ(Scaled("1", 19), kNotANumber);  // scale out of range
}

// ReadDecimalScaled's SWAR path and the general reader agree on random decimals, read in
// place (with room behind for the fast path) and at the very end of the input (slow path).
TEST(JsonDecimal, FastPathAgreesWithTheGeneralReader) {
  std::mt19937_64 rng(11);
  for (int i = 0; i < 100000; ++i) {
    std::string text;
    if (rng() % 4 == 0) text += '-';
    const int whole_digits = 1 + static_cast<int>(rng() % 19);
    for (int d = 0; d < whole_digits; ++d)
      text += static_cast<char>('0' + (d == 0 && whole_digits > 1 ? 1 + rng() % 9 : rng() % 10));
    if (rng() % 4 != 0) {
      text += '.';
      const int frac_digits = 1 + static_cast<int>(rng() % 12);
      for (int d = 0; d < frac_digits; ++d) text += static_cast<char>('0' + rng() % 10);
    }
    if (rng() % 10 == 0) text += "e" + std::to_string(static_cast<int>(rng() % 9) - 4);
    const int scale = static_cast<int>(rng() % 10);
    int64_t expected = 0;
    const DecimalStatus status = ParseDecimalScaled(text, scale, &expected);
    for (const std::string& doc : {"[" + text + ", 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]", text}) {
      Exact in(doc);
      JsonReader reader(in.begin(), in.end());
      if (doc[0] == '[') {
        reader.EnterArray();
        reader.NextElement();
      }
      if (status == DecimalStatus::kOk) {
        int64_t got = 0;
        try {
          got = reader.ReadDecimalScaled(scale, "ts");
        } catch (const TraceFormatError& e) {
          EXPECT_EQ(std::string(e.what()), text);
          continue;
        }
        if (got != expected)
          EXPECT_EQ(text + " -> " + std::to_string(got), text + " -> " + std::to_string(expected));
        if (doc[0] == '[') {
          EXPECT_TRUE(reader.NextElement());
        } else {
          reader.ExpectEnd();
        }
      } else {
        EXPECT_THROW_WITH(reader.ReadDecimalScaled(scale, "ts"), TraceFormatError, "ts: ");
      }
    }
  }
}

TEST(JsonDecimal, ReaderErrorsNameTheField) {
  Exact in("{\"ts\": 1e20}");
  JsonReader reader(in.begin(), in.end());
  reader.EnterObject();
  std::string_view key;
  reader.NextMember(&key);
  EXPECT_THROW_WITH(reader.ReadDecimalScaled(3, "ts"), TraceFormatError,
                    "line 1, column 8: ts: 1e20 times 10^3 does not fit a 64-bit integer");
  Exact in2("{\"ts\": \"x\"}");
  JsonReader reader2(in2.begin(), in2.end());
  reader2.EnterObject();
  reader2.NextMember(&key);
  EXPECT_THROW_WITH(reader2.ReadDecimalScaled(3, "ts"), TraceFormatError,
                    "line 1, column 8: expected ts: a number, found '\"'");
}

TEST(JsonStructure, Errors) {
  EXPECT_EQ(ErrorOf(""), "line 1, column 1: unexpected end of input, expected a value");
  EXPECT_EQ(ErrorOf("  \n "), "line 2, column 2: unexpected end of input, expected a value");
  EXPECT_EQ(ErrorOf("[1,]"), "line 1, column 4: trailing comma before ']'");
  EXPECT_EQ(ErrorOf("{\"a\":1,\n}"), "line 2, column 1: trailing comma before '}'");
  EXPECT_EQ(ErrorOf("[1 2]"),
            "line 1, column 4: expected ',' or ']' after an array element, found '2'");
  EXPECT_EQ(ErrorOf("{\"a\" 1}"), "line 1, column 6: expected ':' after an object key, found '1'");
  EXPECT_EQ(ErrorOf("{a:1}"), "line 1, column 2: expected a string key, found 'a'");
  EXPECT_EQ(ErrorOf("{\"a\":1 \"b\":2}"),
            "line 1, column 8: expected ',' or '}' after an object member, found '\"'");
  EXPECT_EQ(ErrorOf("[1}"),
            "line 1, column 3: expected ',' or ']' after an array element, found '}'");
  EXPECT_EQ(ErrorOf("{\"a\":1]"),
            "line 1, column 7: expected ',' or '}' after an object member, found ']'");
  EXPECT_EQ(ErrorOf("[1"),
            "line 1, column 3: expected ',' or ']' after an array element, found end of input");
  EXPECT_EQ(ErrorOf("{\"a\":"), "line 1, column 6: unexpected end of input, expected a value");
  EXPECT_EQ(ErrorOf("[] []"), "line 1, column 4: unexpected data after the JSON value");
  EXPECT_EQ(ErrorOf("{}\n\nx"), "line 3, column 1: unexpected data after the JSON value");
  EXPECT_EQ(ErrorOf("[,1]"), "line 1, column 2: expected a value, found ','");
  EXPECT_EQ(ErrorOf("\xEF\xBB\xBF\xEF\xBB\xBF{}"),
            "line 1, column 4: expected a value, found byte 0xEF");
}

TEST(JsonStructure, NestingBudget) {
  const std::string ok = std::string(1000, '[') + std::string(1000, ']');
  EXPECT_EQ(Dump(ok), ok);
  const std::string deep = std::string(1001, '[') + std::string(1001, ']');
  EXPECT_EQ(ErrorOf(deep), "line 1, column 1001: nesting deeper than 1000 levels");
  ReaderOptions options;
  options.max_depth = 3;
  EXPECT_EQ(Dump("[{\"a\":[]}]", options), "[{\"a\":[]}]");
  EXPECT_EQ(ErrorOf("[{\"a\":[[]]}]", options), "line 1, column 8: nesting deeper than 3 levels");
  // SkipValue holds the same budget.
  Exact in(std::string(5000, '[') + std::string(5000, ']'));
  JsonReader reader(in.begin(), in.end());
  EXPECT_THROW_WITH(reader.SkipValue(), TraceFormatError, "nesting deeper than 1000 levels");
  options.max_depth = 100000;  // capped at kMaxDepthLimit
  const std::string limit(JsonReader::kMaxDepthLimit, '[');
  EXPECT_EQ(ErrorOf(limit + "[" + limit + "]]", options),
            "line 1, column 4097: nesting deeper than 4096 levels");
}

TEST(JsonStructure, SkipValueReturnsRawText) {
  Exact in("{\"a\": [1, {\"b\": [true, null, \"x\\\"y\"]}] , \"c\": {\"d\": {}}, \"e\": -1.5e3}");
  JsonReader reader(in.begin(), in.end());
  reader.EnterObject();
  std::string_view key;
  ASSERT_TRUE(reader.NextMember(&key));
  EXPECT_EQ(reader.SkipValue(), "[1, {\"b\": [true, null, \"x\\\"y\"]}]");
  ASSERT_TRUE(reader.NextMember(&key));
  EXPECT_EQ(reader.SkipValue(), "{\"d\": {}}");
  ASSERT_TRUE(reader.NextMember(&key));
  EXPECT_EQ(key, "e");
  EXPECT_EQ(reader.SkipValue(), "-1.5e3");
  EXPECT_FALSE(reader.NextMember(&key));
  reader.ExpectEnd();
  for (const char* bad : {"[1,]", "{\"a\":1,}", "[1 2]", "{\"a\" 1}", "[{]", "[", "{\"a\":[}"}) {
    Exact b(bad);
    JsonReader r(b.begin(), b.end());
    EXPECT_THROW_WITH(r.SkipValue(), TraceFormatError, "line 1");
  }
}

TEST(JsonStructure, LineAndColumnCountBytes) {
  uint64_t line = 0, column = 0;
  const std::string s = "ab\ncd\n\nef";
  LineColumn(s.data(), s.data() + 0, &line, &column);
  EXPECT_EQ(line, 1u);
  EXPECT_EQ(column, 1u);
  LineColumn(s.data(), s.data() + 4, &line, &column);
  EXPECT_EQ(line, 2u);
  EXPECT_EQ(column, 2u);
  LineColumn(s.data(), s.data() + 6, &line, &column);
  EXPECT_EQ(line, 3u);
  EXPECT_EQ(column, 1u);
  LineColumn(s.data(), s.data() + s.size(), &line, &column);
  EXPECT_EQ(line, 4u);
  EXPECT_EQ(column, 3u);
}

TEST(JsonStructure, WhitespaceIsOnlyTheFourJsonBytes) {
  EXPECT_EQ(Dump(" \t\n\r[ \t\n\r1 \t\n\r, \t\n\r2 \t\n\r] \t\n\r"), "[1,2]");
  EXPECT_EQ(ErrorOf("[1,\v2]"), "line 1, column 4: expected a value, found byte 0x0B");
  // Long whitespace runs cross the wide loads.
  for (size_t n = 0; n < 50; ++n) {
    const std::string pad(n, n % 2 ? ' ' : '\n');
    EXPECT_EQ(Dump(pad + "[" + pad + "1" + pad + "," + pad + "{" + pad + "\"a\"" + pad + ":" + pad +
                   "2" + pad + "}" + pad + "]" + pad),
              "[1,{\"a\":2}]");
  }
}
