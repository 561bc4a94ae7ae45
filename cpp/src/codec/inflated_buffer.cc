#include "codec/inflated_buffer.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <new>
#include <utility>

namespace tracecore {
namespace {

size_t PageSize() {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

size_t RoundToPages(size_t n) {
  const size_t page = PageSize();
  if (n > SIZE_MAX - page) throw std::bad_alloc();
  return (n + page - 1) / page * page;
}

uint8_t* MapAnonymous(size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
#if defined(MADV_HUGEPAGE)
  // Large outputs are written front to back: 2 MB pages mean 512 times fewer page faults.
  // The advice covers the whole mapping, whatever its size: advising only part of it would
  // split it into mappings of different kinds, which mremap refuses to grow (EFAULT). Growing
  // keeps the advice.
  madvise(p, bytes, MADV_HUGEPAGE);
#endif
  return static_cast<uint8_t*>(p);
}

}  // namespace

InflatedBuffer::InflatedBuffer(size_t capacity) {
  if (capacity == 0) return;
  capacity_ = RoundToPages(capacity);
  data_ = MapAnonymous(capacity_);
}

InflatedBuffer::InflatedBuffer(InflatedBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      capacity_(std::exchange(other.capacity_, 0)) {}

InflatedBuffer& InflatedBuffer::operator=(InflatedBuffer&& other) noexcept {
  if (this != &other) {
    Unmap(data_, capacity_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    capacity_ = std::exchange(other.capacity_, 0);
  }
  return *this;
}

InflatedBuffer::~InflatedBuffer() { Unmap(data_, capacity_); }

void InflatedBuffer::Unmap(void* data, size_t capacity) {
  if (data != nullptr && capacity > 0) munmap(data, capacity);
}

void InflatedBuffer::Reserve(size_t capacity) {
  if (capacity <= capacity_) return;
  const size_t bytes = RoundToPages(capacity);
  if (data_ == nullptr) {
    data_ = MapAnonymous(bytes);
    capacity_ = bytes;
    return;
  }
#if defined(__linux__) && defined(MREMAP_MAYMOVE)
  void* p = mremap(data_, capacity_, bytes, MREMAP_MAYMOVE);
  if (p == MAP_FAILED) throw std::bad_alloc();
  data_ = static_cast<uint8_t*>(p);
#else
  uint8_t* p = MapAnonymous(bytes);
  std::memcpy(p, data_, size_);
  munmap(data_, capacity_);
  data_ = p;
#endif
  capacity_ = bytes;
}

void InflatedBuffer::ShrinkToFit() {
  if (data_ == nullptr) return;
  const size_t keep = RoundToPages(size_);
  if (keep >= capacity_) return;
  if (keep == 0) {
    munmap(data_, capacity_);
    data_ = nullptr;
    capacity_ = 0;
    return;
  }
  munmap(data_ + keep, capacity_ - keep);
  capacity_ = keep;
}

InflatedBuffer::Mapping InflatedBuffer::Release() {
  return {std::exchange(data_, nullptr), std::exchange(size_, 0), std::exchange(capacity_, 0)};
}

}  // namespace tracecore
