// MappedFile: maps regular files, refuses FIFOs and devices at once, and tells a file truncated
// under its mapping from one replaced at its path.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "io/mapped_file.h"
#include "unit_test.h"

using tracecore::IoError;
using tracecore::MappedFile;

namespace {

// A fresh directory under TMPDIR (or /tmp), removed with its files at scope end.
class ScratchDir {
 public:
  ScratchDir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = std::string(base != nullptr ? base : "/tmp") + "/mapped_file_XXXXXX";
    path_ = ::mkdtemp(pattern.data()) != nullptr ? pattern : std::string();
  }
  ~ScratchDir() {
    for (const std::string& f : files_) ::unlink(f.c_str());
    if (!path_.empty()) ::rmdir(path_.c_str());
  }
  std::string File(const std::string& name) {
    files_.push_back(path_ + "/" + name);
    return files_.back();
  }
  bool ok() const { return !path_.empty(); }

 private:
  std::string path_;
  std::vector<std::string> files_;
};

void Write(const std::string& path, std::string_view bytes) {
  FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_TRUE(f != nullptr);
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
}

}  // namespace

TEST(MappedFile, MapsARegularFile) {
  ScratchDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string path = dir.File("a.pbtxt");
  Write(path, "dev_stats {}\n");
  auto file = MappedFile::Open(path);
  EXPECT_TRUE(file->is_mapped());
  EXPECT_EQ(std::string_view(file->data(), file->size()), std::string_view("dev_stats {}\n"));
  EXPECT_FALSE(file->ShrankSinceOpen());
}

TEST(MappedFile, TruncatedInPlaceIsReported) {
  ScratchDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string path = dir.File("a.pbtxt");
  Write(path, std::string(10000, 'x'));
  auto file = MappedFile::Open(path);
  ASSERT_EQ(::truncate(path.c_str(), 100), 0);
  EXPECT_TRUE(file->ShrankSinceOpen());
}

TEST(MappedFile, ReplacedAtItsPathIsNotTruncated) {
  // os.replace() of a shorter file while a parse runs: the mapped file is intact, so an error
  // of the parse must not be blamed on "another process truncated it".
  ScratchDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string path = dir.File("a.pbtxt");
  const std::string other = dir.File("b.pbtxt");
  Write(path, std::string(10000, 'x'));
  auto file = MappedFile::Open(path);
  Write(other, "short");
  ASSERT_EQ(std::rename(other.c_str(), path.c_str()), 0);
  EXPECT_FALSE(file->ShrankSinceOpen());
  EXPECT_EQ(file->size(), 10000u);
  EXPECT_EQ(file->data()[9999], 'x');
}

TEST(MappedFile, FifosAndDevicesAreRefusedAtOnce) {
  ScratchDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string fifo = dir.File("pipe.pbtxt");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // No writer: a blocking open would wait forever (ctest's timeout would catch it).
  EXPECT_THROW_WITH(MappedFile::Open(fifo), IoError, "not a regular file (a FIFO)");
  EXPECT_THROW_WITH(MappedFile::Open("/dev/zero"), IoError,
                    "not a regular file (a character device)");
}
