// Hands the input behind a moving position to a release function (which drops those pages of
// a mapped dump from the resident set) once every `step` bytes, so reading a multi-GB mapped
// dump front to back does not leave it all resident. Used by the parsers (TraceSink) and by
// the walks that plan a binary parse.
#pragma once

#include <cstddef>
#include <functional>
#include <utility>

namespace tracecore {

class ReleaseBehind {
 public:
  // Releases [from, to): pages wholly inside it may be dropped.
  using Release = std::function<void(const char* from, const char* to)>;

  ReleaseBehind() = default;
  ReleaseBehind(const char* begin, Release release, ptrdiff_t step)
      : last_(begin), step_(step), release_(std::move(release)) {}

  // Everything before `pos` is no longer needed.
  void Passed(const char* pos) {
    if (release_ && pos - last_ >= step_) {
      release_(last_, pos);
      last_ = pos;
    }
  }

 private:
  const char* last_ = nullptr;
  ptrdiff_t step_ = 0;
  Release release_;
};

}  // namespace tracecore
