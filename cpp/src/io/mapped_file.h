// An owned, read-only view of a whole input: a memory mapping of a file, or a heap buffer where
// mapping is impossible (bytes handed over from Python), or memory another object owns (the
// mapping decompressed data was written into).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace tracecore {

class MappedFile {
 public:
  // Maps `path` read-only. Throws IoError when the file cannot be opened or mapped, or is not a
  // regular file (a FIFO, device or socket: refused at once, never read until it ends).
  static std::shared_ptr<MappedFile> Open(const std::string& path);
  // Takes ownership of bytes already in memory.
  static std::shared_ptr<MappedFile> FromBuffer(std::string bytes);
  // A view of [data, data + size) that keeps `owner` (what holds those bytes, e.g. the mapping
  // decompressed data was written into) alive as long as the view.
  static std::shared_ptr<MappedFile> FromMemory(const char* data, size_t size,
                                                std::shared_ptr<const void> owner);

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

  // True when the mapped file is now shorter than it was when it was mapped (another process
  // truncated it while we were reading), or a read past its new end was caught (see below).
  // A different file now at the path (replaced, not truncated) does not count.
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
  uint64_t device_ = 0, inode_ = 0;  // of the mapped file, to tell it from a replacement
  std::string path_;
  std::string heap_;
  std::shared_ptr<const void> owner_;
};

}  // namespace tracecore
