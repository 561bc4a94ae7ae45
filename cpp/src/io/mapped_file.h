// An owned, read-only view of a whole input: a memory mapping of a file, or a heap buffer where
// mapping is impossible (decompressed .gz data, pipes, bytes handed over from Python).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace tracecore {

class MappedFile {
 public:
  // Maps `path` read-only. Throws IoError when the file cannot be opened or mapped.
  static std::shared_ptr<MappedFile> Open(const std::string& path);
  // Takes ownership of bytes already in memory.
  static std::shared_ptr<MappedFile> FromBuffer(std::string bytes);

  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  const char* data() const { return data_; }
  size_t size() const { return size_; }
  bool is_mapped() const { return mapping_ != nullptr; }

  // Tells the kernel that [begin, end) has been consumed and its pages may be dropped from
  // this process's resident set (they stay in the page cache). No-op for heap buffers.
  void ReleaseConsumed(size_t begin, size_t end) const;
  // ReleaseConsumed as a function of two addresses inside data() (a ReleaseBehind::Release);
  // empty for heap buffers. The file must outlive it.
  std::function<void(const char* from, const char* to)> ConsumedRelease() const {
    if (!is_mapped()) return {};
    return [this](const char* from, const char* to) {
      ReleaseConsumed(static_cast<size_t>(from - data_), static_cast<size_t>(to - data_));
    };
  }

  // True when the file on disk is now shorter than it was when it was mapped (another process
  // truncated it while we were reading), or a read past its new end was caught (see below).
  bool ShrankSinceOpen() const;

  // Reading a mapped page past the end of a file that shrank raises SIGBUS. While a MappedFile
  // is alive, a handler maps a page of zeros there instead and marks the file truncated, so
  // the parse ends on an ordinary format error and ShrankSinceOpen() reports why.
  bool truncated_while_mapped() const;

 private:
  MappedFile() = default;

  const char* data_ = nullptr;
  size_t size_ = 0;
  void* mapping_ = nullptr;
  int guard_slot_ = -1;
  std::string path_;
  std::string heap_;
};

}  // namespace tracecore
