// An owned, growable byte buffer in an anonymous memory mapping: what InflateAll decompresses
// into, so the result can be handed on (to a parser, to Python) without another copy.
// Growing moves the pages (mremap on Linux) instead of copying them; untouched capacity costs
// address space only. Move-only; the destructor unmaps.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tracecore {

class InflatedBuffer {
 public:
  InflatedBuffer() = default;
  // Maps `capacity` bytes (rounded up to whole pages). Throws std::bad_alloc when the system
  // refuses the mapping.
  explicit InflatedBuffer(size_t capacity);
  InflatedBuffer(InflatedBuffer&& other) noexcept;
  InflatedBuffer& operator=(InflatedBuffer&& other) noexcept;
  InflatedBuffer(const InflatedBuffer&) = delete;
  InflatedBuffer& operator=(const InflatedBuffer&) = delete;
  ~InflatedBuffer();

  const uint8_t* data() const { return data_; }
  uint8_t* mutable_data() { return data_; }
  size_t size() const { return size_; }          // bytes of content
  size_t capacity() const { return capacity_; }  // bytes mapped
  bool empty() const { return size_ == 0; }

  // Grows the mapping to at least `capacity` bytes, keeping the content; data() may change.
  // Throws std::bad_alloc when the system refuses.
  void Reserve(size_t capacity);
  // Sets the content's size (at most capacity()).
  void set_size(size_t size) { size_ = size; }
  // Unmaps the pages past the content (whole pages only).
  void ShrinkToFit();

  // Hands the mapping over, leaving this buffer empty: the caller unmaps it with
  // Unmap(mapping.data, mapping.capacity) when done.
  struct Mapping {
    uint8_t* data;
    size_t size;
    size_t capacity;
  };
  Mapping Release();
  static void Unmap(void* data, size_t capacity);

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

}  // namespace tracecore
