// Metadata id (int64 map key) -> record number, for the per-event lookups of the XSpace
// decoder. Writers number metadata 1, 2, 3...: keys in a small non-negative range get a direct
// array; any other key set an open-addressing hash table. Built once per plane, read per event
// and per stat without allocating.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace tracecore::xspace {

class IdMap {
 public:
  static constexpr uint32_t kMissing = 0xFFFFFFFFu;

  // (key, value) pairs in wire order: for a repeated key the last one wins, as in a proto map.
  void Build(const std::vector<std::pair<int64_t, uint32_t>>& entries);

  uint32_t Find(int64_t key) const {
    const uint64_t k = static_cast<uint64_t>(key);
    if (!hashed_) return k < dense_.size() ? dense_[k] : kMissing;
    for (size_t slot = Slot(k);; slot = (slot + 1) & mask_) {
      const uint32_t v = values_[slot];
      if (v == kMissing || keys_[slot] == key) return v;
    }
  }

 private:
  size_t Slot(uint64_t k) const { return static_cast<size_t>((k * 0x9E3779B97F4A7C15ull) >> shift_); }

  bool hashed_ = false;
  std::vector<uint32_t> dense_;  // key -> value, kMissing for holes
  std::vector<int64_t> keys_;    // hash table: keys_[slot], values_[slot] (kMissing = empty)
  std::vector<uint32_t> values_;
  size_t mask_ = 0;
  int shift_ = 64;
};

}  // namespace tracecore::xspace
