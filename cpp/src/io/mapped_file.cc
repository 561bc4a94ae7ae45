#include "io/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace tracecore {
namespace {

[[noreturn]] void ThrowErrno(const std::string& what, const std::string& path) {
  int err = errno;
  throw IoError(what + " '" + path + "': " + std::strerror(err), err);
}

}  // namespace

std::shared_ptr<MappedFile> MappedFile::Open(const std::string& path) {
  std::shared_ptr<MappedFile> file(new MappedFile());
  file->path_ = path;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) ThrowErrno("cannot open", path);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    ThrowErrno("cannot stat", path);
  }
  if (!S_ISREG(st.st_mode)) {
    // Pipes and character devices cannot be mapped: read them into memory.
    std::string bytes;
    char chunk[1 << 16];
    for (;;) {
      ssize_t n = ::read(fd, chunk, sizeof chunk);
      if (n < 0) {
        if (errno == EINTR) continue;
        ::close(fd);
        ThrowErrno("cannot read", path);
      }
      if (n == 0) break;
      bytes.append(chunk, static_cast<size_t>(n));
    }
    ::close(fd);
    auto buffered = FromBuffer(std::move(bytes));
    buffered->path_ = path;
    return buffered;
  }
  file->size_ = static_cast<size_t>(st.st_size);
  if (file->size_ == 0) {
    ::close(fd);
    file->data_ = "";
    return file;
  }
  void* map = ::mmap(nullptr, file->size_, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) ThrowErrno("cannot map", path);
  ::madvise(map, file->size_, MADV_SEQUENTIAL);
  file->mapping_ = map;
  file->data_ = static_cast<const char*>(map);
  return file;
}

std::shared_ptr<MappedFile> MappedFile::FromBuffer(std::string bytes) {
  std::shared_ptr<MappedFile> file(new MappedFile());
  file->heap_ = std::move(bytes);
  file->data_ = file->heap_.data();
  file->size_ = file->heap_.size();
  return file;
}

MappedFile::~MappedFile() {
  if (mapping_ != nullptr) ::munmap(mapping_, size_);
}

void MappedFile::ReleaseConsumed(size_t begin, size_t end) const {
  if (mapping_ == nullptr || end <= begin) return;
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  size_t first = (begin + page - 1) / page * page;
  size_t last = end / page * page;
  if (last > first) {
    ::madvise(static_cast<char*>(mapping_) + first, last - first, MADV_DONTNEED);
  }
}

bool MappedFile::ShrankSinceOpen() const {
  if (mapping_ == nullptr) return false;
  struct stat st;
  if (::stat(path_.c_str(), &st) != 0) return false;
  return static_cast<size_t>(st.st_size) < size_;
}

}  // namespace tracecore
