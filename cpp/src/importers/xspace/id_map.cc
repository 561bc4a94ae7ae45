#include "importers/xspace/id_map.h"

namespace tracecore::xspace {

void IdMap::Build(const std::vector<std::pair<int64_t, uint32_t>>& entries) {
  // Dense when every key is in [0, 2n + 1024): the array costs at most a few words per entry.
  const uint64_t dense_limit = 2 * static_cast<uint64_t>(entries.size()) + 1024;
  bool dense = true;
  uint64_t max_key = 0;
  for (const auto& e : entries) {
    const uint64_t k = static_cast<uint64_t>(e.first);  // negative keys are huge: not dense
    if (k >= dense_limit) {
      dense = false;
      break;
    }
    if (k > max_key) max_key = k;
  }
  hashed_ = !dense;
  dense_.clear();
  keys_.clear();
  values_.clear();
  if (dense) {
    dense_.assign(entries.empty() ? 0 : max_key + 1, kMissing);
    for (const auto& e : entries) dense_[static_cast<size_t>(e.first)] = e.second;
    return;
  }
  size_t capacity = 16;
  shift_ = 60;
  while (capacity < 2 * entries.size()) {
    capacity *= 2;
    --shift_;
  }
  mask_ = capacity - 1;
  keys_.assign(capacity, 0);
  values_.assign(capacity, kMissing);
  for (const auto& [key, value] : entries) {
    size_t slot = Slot(static_cast<uint64_t>(key));
    while (values_[slot] != kMissing && keys_[slot] != key) slot = (slot + 1) & mask_;
    keys_[slot] = key;
    values_[slot] = value;
  }
}

}  // namespace tracecore::xspace
