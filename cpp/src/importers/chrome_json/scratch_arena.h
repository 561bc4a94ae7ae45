// Room for the strings the JSON reader has to rewrite (escapes decoded, bad bytes replaced):
// plain strings are views into the input, these live here until Reset. Blocks are kept across
// resets, so a steady stream of events allocates nothing; an oversized block (one huge string)
// is dropped at the next reset so it does not stay resident.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

namespace tracecore::json {

class ScratchArena {
 public:
  static constexpr size_t kBlockBytes = 64 * 1024;
  // More than this in blocks at a reset: keep only the first block.
  static constexpr size_t kKeepBytes = 1024 * 1024;

  // At least n writable bytes, valid until Reset. Commit says how many the caller used.
  char* Reserve(size_t n) {
    while (block_ < blocks_.size()) {
      Block& b = blocks_[block_];
      if (b.size - used_ >= n) return b.data.get() + used_;
      ++block_;
      used_ = 0;
    }
    const size_t size = n > kBlockBytes ? n : kBlockBytes;
    blocks_.push_back({std::unique_ptr<char[]>(new char[size]), size});
    total_ += size;
    block_ = blocks_.size() - 1;
    used_ = 0;
    return blocks_.back().data.get();
  }
  void Commit(size_t n) { used_ += n; }

  void Reset() {
    if (total_ > kKeepBytes) {
      blocks_.resize(blocks_[0].size > kBlockBytes ? 0 : 1);
      total_ = blocks_.empty() ? 0 : blocks_[0].size;
    }
    block_ = 0;
    used_ = 0;
  }

 private:
  struct Block {
    std::unique_ptr<char[]> data;
    size_t size;
  };
  std::vector<Block> blocks_;
  size_t block_ = 0;
  size_t used_ = 0;
  size_t total_ = 0;
};

}  // namespace tracecore::json
