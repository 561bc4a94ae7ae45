// A libFuzzer stand-in for machines without clang/libFuzzer (g++ only): links with one fuzz
// target (LLVMFuzzerTestOneInput) and accepts the subset of libFuzzer's command line that
// fuzz/run_fuzz.sh and .ci/asan.sh use, printing libFuzzer-style status lines.
//
//   driver FILE...                      run each file once (replay / regression mode)
//   driver [flags] CORPUS_DIR [SEED_DIR|SEED_FILE ...]
//                                       mutation loop; new inputs that reach new coverage are
//                                       written to CORPUS_DIR (if coverage is available)
//   flags: -max_total_time=S -runs=N -seed=N -max_len=N -timeout=S -artifact_prefix=P
//          -dict=FILE -print_final_stats=1 (other -flags are ignored)
//
// Coverage feedback: when the core is compiled with -fsanitize-coverage=trace-pc (g++ or clang;
// see fuzz/CMakeLists.txt, TRACECORE_FUZZ_TRACE_PC) this file supplies
// __sanitizer_cov_trace_pc and keeps an AFL-style edge map with hit-count buckets: "cov" is the
// number of edges seen, "ft" the number of (edge, bucket) features. Without it the loop is a
// blind mutator over the seeds.
//
// A crash (sanitizer report, abort from a finding, fatal signal) writes the input to
// <artifact_prefix>crash-<hash>; an input running longer than -timeout seconds is written to
// <artifact_prefix>timeout-<hash> and the driver exits with status 70.
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <unordered_set>
#include <vector>

#if defined(__has_include)
#if __has_include(<sanitizer/common_interface_defs.h>)
#include <sanitizer/common_interface_defs.h>
#define TRACECORE_HAVE_DEATH_CALLBACK 1
#endif
#endif

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

// ---- coverage ---------------------------------------------------------------------------
namespace {
constexpr size_t kMapSize = 1 << 16;
uint8_t g_hits[kMapSize];     // this execution's edge hit counts (saturating)
uint8_t g_virgin[kMapSize];   // bucket bits seen so far per edge
bool g_trace_pc_seen = false;  // did the hook ever run (i.e. is the core instrumented)?
thread_local uintptr_t t_prev = 0;
}  // namespace

#ifdef TRACECORE_FUZZ_TRACE_PC
extern "C" __attribute__((no_sanitize_address)) void __sanitizer_cov_trace_pc() {
  const uintptr_t pc = reinterpret_cast<uintptr_t>(__builtin_return_address(0));
  const uintptr_t cur = (pc ^ (pc >> 15) ^ (pc >> 31)) & (kMapSize - 1);
  uint8_t& h = g_hits[cur ^ t_prev];
  if (h != 255) ++h;
  t_prev = cur >> 1;
  g_trace_pc_seen = true;
}
#endif

namespace {

uint8_t Bucket(uint8_t hits) {
  if (hits == 0) return 0;
  if (hits == 1) return 1;
  if (hits == 2) return 2;
  if (hits == 3) return 4;
  if (hits < 8) return 8;
  if (hits < 16) return 16;
  if (hits < 32) return 32;
  if (hits < 128) return 64;
  return 128;
}

// Folds this run's hits into the virgin map; returns the number of new features.
size_t CollectNewFeatures() {
  size_t fresh = 0;
  for (size_t i = 0; i < kMapSize; ++i) {
    if (g_hits[i] == 0) continue;
    const uint8_t b = Bucket(g_hits[i]);
    if ((g_virgin[i] & b) == 0) {
      g_virgin[i] |= b;
      ++fresh;
    }
    g_hits[i] = 0;
  }
  return fresh;
}

void CountCoverage(size_t* cov, size_t* ft) {
  *cov = 0;
  *ft = 0;
  for (size_t i = 0; i < kMapSize; ++i) {
    if (g_virgin[i] == 0) continue;
    ++*cov;
    *ft += static_cast<size_t>(__builtin_popcount(g_virgin[i]));
  }
}

// ---- crash artifacts ----------------------------------------------------------------------
const uint8_t* volatile g_current = nullptr;
volatile size_t g_current_size = 0;
std::string g_artifact_prefix = "./";
char g_crash_path[4096];
char g_timeout_path[4096];

uint64_t Fnv1a(const uint8_t* data, size_t size) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < size; ++i) h = (h ^ data[i]) * 1099511628211ull;
  return h;
}

void PreparePaths(const uint8_t* data, size_t size) {
  const unsigned long long h = static_cast<unsigned long long>(Fnv1a(data, size));
  std::snprintf(g_crash_path, sizeof g_crash_path, "%scrash-%016llx", g_artifact_prefix.c_str(), h);
  std::snprintf(g_timeout_path, sizeof g_timeout_path, "%stimeout-%016llx", g_artifact_prefix.c_str(), h);
}

void WriteArtifact(const char* path, const char* kind) {
  const uint8_t* data = g_current;
  if (data == nullptr && g_current_size != 0) return;
  FILE* f = std::fopen(path, "wb");
  if (f == nullptr) return;
  if (g_current_size != 0) std::fwrite(data, 1, g_current_size, f);
  std::fclose(f);
  std::fprintf(stderr, "==tracecore-fuzz== %s: input (%zu bytes) written to %s\n", kind,
               static_cast<size_t>(g_current_size), path);
}

bool g_artifact_written = false;
void OnDeath() {
  if (g_artifact_written || g_current == nullptr) return;
  g_artifact_written = true;
  WriteArtifact(g_crash_path, "crash");
}

void OnFatalSignal(int sig) {
  OnDeath();
  signal(sig, SIG_DFL);
  raise(sig);
}

void OnAlarm(int) {
  if (g_current != nullptr) WriteArtifact(g_timeout_path, "timeout");
  std::fprintf(stderr, "==tracecore-fuzz== ERROR: timeout: one input ran too long\n");
  _exit(70);
}

void InstallHandlers() {
#ifdef TRACECORE_HAVE_DEATH_CALLBACK
  __sanitizer_set_death_callback(&OnDeath);
#endif
  for (int sig : {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL}) {
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_handler = &OnFatalSignal;
    // Keep a sanitizer's own SEGV/BUS handler if it installed one: it reports and then calls
    // the death callback.
    struct sigaction old;
    sigaction(sig, nullptr, &old);
    if (old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN && sig != SIGABRT) continue;
    sigaction(sig, &sa, nullptr);
  }
  signal(SIGALRM, &OnAlarm);
}

// ---- one execution ------------------------------------------------------------------------
unsigned g_timeout = 0;

void Execute(const uint8_t* data, size_t size) {
  PreparePaths(data, size);
  g_current_size = size;
  g_current = data;
  if (g_timeout > 0) alarm(g_timeout);
  LLVMFuzzerTestOneInput(data, size);
  if (g_timeout > 0) alarm(0);
  g_current = nullptr;
  g_current_size = 0;
  t_prev = 0;
}

// ---- inputs -------------------------------------------------------------------------------
bool IsDir(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream s;
  s << in.rdbuf();
  *out = s.str();
  return true;
}

void ListFiles(const std::string& dir, std::vector<std::string>* out) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return;
  std::vector<std::string> names;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    names.push_back(dir + "/" + e->d_name);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  for (const std::string& n : names) {
    if (IsDir(n)) {
      ListFiles(n, out);
    } else {
      out->push_back(n);
    }
  }
}

// libFuzzer dictionary: lines `name="value"` or `"value"` with \\, \" and \xNN escapes.
std::vector<std::string> LoadDict(const std::string& path) {
  std::vector<std::string> tokens;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const size_t q = line.find('"');
    const size_t r = line.rfind('"');
    if (line.empty() || line[0] == '#' || q == std::string::npos || r <= q) continue;
    std::string token;
    for (size_t i = q + 1; i < r; ++i) {
      if (line[i] == '\\' && i + 1 < r) {
        const char c = line[i + 1];
        if (c == 'x' && i + 3 < r) {
          token.push_back(static_cast<char>(std::stoi(line.substr(i + 2, 2), nullptr, 16)));
          i += 3;
        } else {
          token.push_back(c);
          i += 1;
        }
      } else {
        token.push_back(line[i]);
      }
    }
    if (!token.empty()) tokens.push_back(token);
  }
  return tokens;
}

// ---- mutations ----------------------------------------------------------------------------
class Mutator {
 public:
  Mutator(uint64_t seed, const std::vector<std::string>& dict) : rng_(seed), dict_(dict) {}

  size_t Below(size_t n) { return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }

  void Mutate(std::string* s, const std::vector<std::string>& corpus, size_t max_len) {
    const size_t rounds = 1 + Below(Below(8) + 1);
    for (size_t r = 0; r < rounds; ++r) MutateOnce(s, corpus);
    if (s->size() > max_len) s->resize(max_len);
  }

 private:
  void MutateOnce(std::string* s, const std::vector<std::string>& corpus) {
    static const char* const kNumbers[] = {
        "0", "-1", "1", "127", "128", "255", "256", "65535", "2147483647", "-2147483648",
        "2147483648", "4294967295", "4294967296", "9223372036854775807", "-9223372036854775808",
        "9223372036854775808", "18446744073709551615", "18446744073709551616", "0x7fffffffffffffff",
        "0xffffffffffffffff", "01777777777777777777777", "-0", "1e3", "99999999999999999999"};
    static const uint8_t kBytes[] = {0x00, 0x01, 0x7f, 0x80, 0xff, 0xfe, 0x08, 0x0a, 0x12,
                                     0x1a, 0x22, '{', '}', '<', '>', '"', '\\', ':', '\n', '#'};
    switch (Below(s->empty() ? 3 : 12)) {
      case 0: {  // insert a dictionary token or an interesting byte run
        std::string token;
        if (!dict_.empty() && Below(3) != 0) {
          token = dict_[Below(dict_.size())];
        } else {
          token.assign(1 + Below(16), static_cast<char>(kBytes[Below(sizeof kBytes)]));
        }
        s->insert(Below(s->size() + 1), token);
        return;
      }
      case 1: {  // insert random bytes
        std::string bytes(1 + Below(8), '\0');
        for (char& c : bytes) c = static_cast<char>(Below(256));
        s->insert(Below(s->size() + 1), bytes);
        return;
      }
      case 2: {  // splice with another corpus entry
        const std::string& other = corpus[Below(corpus.size())];
        if (other.empty()) return;
        const size_t from = Below(other.size());
        const size_t len = 1 + Below(std::min<size_t>(other.size() - from, 4096));
        const size_t at = Below(s->size() + 1);
        if (Below(2) == 0) {
          s->insert(at, other, from, len);
        } else {
          *s = s->substr(0, at) + other.substr(from);
        }
        return;
      }
      case 3:  // flip a bit
        (*s)[Below(s->size())] ^= static_cast<char>(1u << Below(8));
        return;
      case 4:  // set a byte to an interesting value
        (*s)[Below(s->size())] = static_cast<char>(kBytes[Below(sizeof kBytes)]);
        return;
      case 5:  // random byte
        (*s)[Below(s->size())] = static_cast<char>(Below(256));
        return;
      case 6: {  // erase a range
        const size_t at = Below(s->size());
        s->erase(at, 1 + Below(std::min<size_t>(s->size() - at, 64)));
        return;
      }
      case 7:  // truncate
        s->resize(Below(s->size()));
        return;
      case 8: {  // duplicate a range in place (deep nesting, repeated fields)
        const size_t at = Below(s->size());
        const size_t len = 1 + Below(std::min<size_t>(s->size() - at, 256));
        const std::string piece = s->substr(at, len);
        const size_t copies = 1 + Below(Below(64) + 1);
        std::string run;
        for (size_t i = 0; i < copies; ++i) run += piece;
        s->insert(at, run);
        return;
      }
      case 9: {  // replace a decimal number by an interesting one
        const size_t start = Below(s->size());
        size_t i = start;
        while (i < s->size() && !((*s)[i] >= '0' && (*s)[i] <= '9')) ++i;
        if (i == s->size()) return;
        size_t j = i;
        while (j < s->size() && (*s)[j] >= '0' && (*s)[j] <= '9') ++j;
        if (i > 0 && (*s)[i - 1] == '-') --i;
        s->replace(i, j - i, kNumbers[Below(sizeof kNumbers / sizeof kNumbers[0])]);
        return;
      }
      case 10: {  // a huge varint (declared length / value) at a random place
        static const char kHuge[][11] = {"\xff\xff\xff\xff\x0f", "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01",
                                         "\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80", "\xff\xff\xff\x7f"};
        const char* h = kHuge[Below(4)];
        const size_t at = Below(s->size());
        s->replace(at, std::min<size_t>(1 + Below(4), s->size() - at), h, std::strlen(h));
        return;
      }
      default: {  // swap two bytes
        const size_t a = Below(s->size()), b = Below(s->size());
        std::swap((*s)[a], (*s)[b]);
        return;
      }
    }
  }

  std::mt19937_64 rng_;
  const std::vector<std::string>& dict_;
};

bool ParseFlag(const char* arg, const char* name, std::string* value) {
  const size_t n = std::strlen(name);
  if (arg[0] != '-' || std::strncmp(arg + 1, name, n) != 0 || arg[1 + n] != '=') return false;
  *value = arg + 2 + n;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  double max_total_time = 0;
  uint64_t runs = 0;  // 0 = unlimited
  uint64_t seed = 0;
  size_t max_len = 65536;
  std::string dict_path;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    std::string v;
    if (ParseFlag(argv[i], "max_total_time", &v)) {
      max_total_time = std::atof(v.c_str());
    } else if (ParseFlag(argv[i], "runs", &v)) {
      runs = std::strtoull(v.c_str(), nullptr, 10);
    } else if (ParseFlag(argv[i], "seed", &v)) {
      seed = std::strtoull(v.c_str(), nullptr, 10);
    } else if (ParseFlag(argv[i], "max_len", &v)) {
      max_len = std::strtoull(v.c_str(), nullptr, 10);
    } else if (ParseFlag(argv[i], "timeout", &v)) {
      g_timeout = static_cast<unsigned>(std::atoi(v.c_str()));
    } else if (ParseFlag(argv[i], "artifact_prefix", &v)) {
      g_artifact_prefix = v;
    } else if (ParseFlag(argv[i], "dict", &v)) {
      dict_path = v;
    } else if (argv[i][0] == '-') {
      // Other libFuzzer flags (-jobs, -print_final_stats, ...) are accepted and ignored.
    } else {
      positional.push_back(argv[i]);
    }
  }
  InstallHandlers();

  bool any_dir = false;
  for (const std::string& p : positional) any_dir = any_dir || IsDir(p);

  if (!any_dir) {  // replay mode
    for (const std::string& p : positional) {
      std::string bytes;
      if (!ReadFile(p, &bytes)) {
        std::fprintf(stderr, "cannot read %s\n", p.c_str());
        return 1;
      }
      std::fprintf(stderr, "Running: %s\n", p.c_str());
      Execute(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      std::fprintf(stderr, "Executed %s in 0 ms\n", p.c_str());
    }
    std::fprintf(stderr, "*** NOTE: fuzzing was not performed, you have only\n***       executed the target code on a fixed set of inputs.\n");
    return 0;
  }

  if (seed == 0) seed = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  std::fprintf(stderr, "INFO: Seed: %llu (standalone mutation driver%s)\n",
               static_cast<unsigned long long>(seed),
#ifdef TRACECORE_FUZZ_TRACE_PC
               ", trace-pc coverage"
#else
               ", no coverage feedback"
#endif
  );
  const std::string corpus_dir = positional.front();
  std::vector<std::string> files;
  for (const std::string& p : positional) {
    if (IsDir(p)) {
      ListFiles(p, &files);
    } else {
      files.push_back(p);
    }
  }
  std::vector<std::string> corpus;
  std::unordered_set<uint64_t> known;
  for (const std::string& f : files) {
    std::string bytes;
    if (!ReadFile(f, &bytes)) continue;
    if (bytes.size() > max_len) bytes.resize(max_len);
    if (!known.insert(Fnv1a(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size())).second) continue;
    corpus.push_back(std::move(bytes));
  }
  if (corpus.empty()) corpus.emplace_back();
  std::vector<std::string> dict;
  if (!dict_path.empty()) dict = LoadDict(dict_path);

  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  uint64_t n = 0;
  size_t cov = 0, ft = 0;
  auto status = [&](const char* what) {
    CountCoverage(&cov, &ft);
    const double s = elapsed();
    std::fprintf(stderr, "#%llu\t%s cov: %zu ft: %zu corp: %zu exec/s: %llu\n",
                 static_cast<unsigned long long>(n), what, cov, ft, corpus.size(),
                 static_cast<unsigned long long>(s > 0 ? n / s : 0));
  };

  // Initial pass over the seeds.
  for (const std::string& c : corpus) {
    Execute(reinterpret_cast<const uint8_t*>(c.data()), c.size());
    CollectNewFeatures();
    ++n;
  }
  status("INITED");

  Mutator mutator(seed, dict);
  uint64_t next_pulse = 1024;
  std::string input;
  while ((runs == 0 || n < runs) && (max_total_time <= 0 || elapsed() < max_total_time)) {
    input = corpus[mutator.Below(corpus.size())];
    mutator.Mutate(&input, corpus, max_len);
    Execute(reinterpret_cast<const uint8_t*>(input.data()), input.size());
    ++n;
    if (CollectNewFeatures() > 0) {
      const uint64_t h = Fnv1a(reinterpret_cast<const uint8_t*>(input.data()), input.size());
      if (known.insert(h).second) {
        corpus.push_back(input);
        char name[64];
        std::snprintf(name, sizeof name, "/%016llx", static_cast<unsigned long long>(h));
        std::ofstream(corpus_dir + name, std::ios::binary) << input;
        status("NEW   ");
      }
    }
    if (n >= next_pulse) {
      status("pulse ");
      next_pulse *= 2;
    }
  }
  status("DONE  ");
  std::fprintf(stderr, "Done %llu runs in %.0f second(s)\n", static_cast<unsigned long long>(n), elapsed());
  return 0;
}
