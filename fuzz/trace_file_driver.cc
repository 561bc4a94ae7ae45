// Sanitizer test driver: opens every given file (directories are walked) the way the Python
// extension does -- MappedFile::Open (a memory mapping) and MappedFile::FromBuffer -- with
// format auto/text/binary/xspace and threads 1 and 0 (every core), and runs the fuzz harness checks
// (table invariants, Arrow export, every query) on each successful parse.
//
//   trace_file_driver [-q] PATH...
//
// Prints one line per file and format. Exit status: 0 when every open either succeeded or
// raised TraceFormatError; a finding (other exception, broken invariant) aborts, a sanitizer
// report aborts too (build with -fsanitize=address,undefined).
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz_common.h"

#ifdef TRACECORE_FUZZ_TRACE_PC_STUB
// The core was compiled with -fsanitize-coverage=trace-pc for the standalone fuzz driver; this
// program needs no coverage.
extern "C" void __sanitizer_cov_trace_pc() {}
#endif

namespace {

bool IsDir(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

void Walk(const std::string& path, std::vector<std::string>* out) {
  if (!IsDir(path)) {
    out->push_back(path);
    return;
  }
  DIR* d = opendir(path.c_str());
  if (d == nullptr) return;
  std::vector<std::string> names;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    names.push_back(path + "/" + e->d_name);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  for (const std::string& n : names) Walk(n, out);
}

}  // namespace

int main(int argc, char** argv) {
  bool quiet = false;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "-q") == 0) {
      quiet = true;
      continue;
    }
    Walk(argv[i], &files);
  }
  if (files.empty()) {
    std::fprintf(stderr, "usage: %s [-q] FILE_OR_DIR...\n", argv[0]);
    return 2;
  }
  size_t opened = 0, rejected = 0;
  for (const std::string& path : files) {
    std::shared_ptr<tracecore::MappedFile> mapped;
    try {
      mapped = tracecore::MappedFile::Open(path);
    } catch (const tracecore::IoError& e) {
      std::fprintf(stderr, "%s: cannot open: %s\n", path.c_str(), e.what());
      return 1;
    }
    auto buffered = tracecore::MappedFile::FromBuffer(std::string(mapped->data(), mapped->size()));
    for (const char* format : {"auto", "text", "binary", "xspace"}) {
      for (int threads : {1, 0}) {
        for (const tracecore::MappedFile* file : {mapped.get(), buffered.get()}) {
          if (file == buffered.get() && threads != 1) continue;
          std::string error;
          auto tables = tracecore_fuzz::ParseOrNull(*file, format, threads, &error);
          const bool show = !quiet && threads == 1 && file == mapped.get();
          if (tables) {
            ++opened;
            tracecore_fuzz::CheckAndExercise(tables, /*queries=*/true);
            if (show) {
              std::printf("%-60s %-6s ok: %s %s, %zu events, %zu tensors\n", path.c_str(), format,
                          tracecore::TraceKindName(tables->kind), tracecore::EncodingName(tables->format), tables->events.size(),
                          tables->tensors.size());
            }
          } else {
            ++rejected;
            if (show) {
              std::printf("%-60s %-6s TraceFormatError: %.100s\n", path.c_str(), format, error.c_str());
            }
          }
        }
      }
    }
  }
  std::printf("trace_file_driver: %zu files, %zu parses ok, %zu TraceFormatError, no findings\n",
              files.size(), opened, rejected);
  return 0;
}
