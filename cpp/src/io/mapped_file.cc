#include "io/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <signal.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "core/error.h"

namespace tracecore {
namespace {

// Mappings the SIGBUS handler may patch: begin/end addresses and a truncated flag per slot.
constexpr int kGuardSlots = 256;
std::atomic<uintptr_t> g_slot_begin[kGuardSlots];
std::atomic<uintptr_t> g_slot_end[kGuardSlots];
std::atomic<bool> g_slot_truncated[kGuardSlots];
struct sigaction g_previous_sigbus;
std::once_flag g_install_once;

void OnSigbus(int sig, siginfo_t* info, void* context) {
  const auto addr = reinterpret_cast<uintptr_t>(info->si_addr);
  for (int i = 0; i < kGuardSlots; ++i) {
    const uintptr_t begin = g_slot_begin[i].load(std::memory_order_acquire);
    if (begin == 0 || addr < begin || addr >= g_slot_end[i].load(std::memory_order_acquire)) continue;
    const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    void* at = reinterpret_cast<void*>(addr & ~(page - 1));
    if (::mmap(at, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED) {
      g_slot_truncated[i].store(true, std::memory_order_release);
      return;  // the faulting read is retried and now sees zeros
    }
  }
  // Not a read of one of our files: behave as if we were not here.
  if (g_previous_sigbus.sa_flags & SA_SIGINFO) {
    if (g_previous_sigbus.sa_sigaction != nullptr) {
      g_previous_sigbus.sa_sigaction(sig, info, context);
      return;
    }
  } else if (g_previous_sigbus.sa_handler != SIG_DFL && g_previous_sigbus.sa_handler != SIG_IGN) {
    g_previous_sigbus.sa_handler(sig);
    return;
  }
  ::signal(SIGBUS, SIG_DFL);
  ::raise(SIGBUS);
}

void InstallSigbusGuard() {
  std::call_once(g_install_once, [] {
    struct sigaction action;
    std::memset(&action, 0, sizeof action);
    action.sa_sigaction = &OnSigbus;
    action.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGBUS, &action, &g_previous_sigbus);
  });
}

int RegisterGuard(const void* begin, size_t size) {
  InstallSigbusGuard();
  for (int i = 0; i < kGuardSlots; ++i) {
    uintptr_t expected = 0;
    if (g_slot_begin[i].compare_exchange_strong(expected, 1)) {  // claim the slot
      g_slot_truncated[i].store(false);
      g_slot_end[i].store(reinterpret_cast<uintptr_t>(begin) + size);
      g_slot_begin[i].store(reinterpret_cast<uintptr_t>(begin), std::memory_order_release);
      return i;
    }
  }
  return -1;  // more than kGuardSlots live mappings: this one is checked by size only
}

const char* FileTypeName(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

[[noreturn]] void ThrowErrno(const std::string& what, const std::string& path) {
  int err = errno;
  throw IoError(what + " '" + path + "': " + std::strerror(err), err);
}

}  // namespace

std::shared_ptr<MappedFile> MappedFile::Open(const std::string& path) {
  std::shared_ptr<MappedFile> file(new MappedFile());
  file->path_ = path;
  // O_NONBLOCK: opening a FIFO returns at once (to be refused below) instead of waiting for a
  // writer; it changes nothing for a regular file.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) ThrowErrno("cannot open", path);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    ThrowErrno("cannot stat", path);
  }
  if (!S_ISREG(st.st_mode)) {
    // A FIFO or a device has no size to plan for and may never end (/dev/zero): refused.
    ::close(fd);
    throw IoError("not a regular file (" + std::string(FileTypeName(st.st_mode)) +
                      "): tracecore reads regular files '" + path + "'",
                  EINVAL);
  }
  file->size_ = static_cast<size_t>(st.st_size);
  file->device_ = static_cast<uint64_t>(st.st_dev);
  file->inode_ = static_cast<uint64_t>(st.st_ino);
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
  file->guard_slot_ = RegisterGuard(map, file->size_);
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

std::shared_ptr<MappedFile> MappedFile::FromMemory(const char* data, size_t size,
                                                   std::shared_ptr<const void> owner) {
  std::shared_ptr<MappedFile> file(new MappedFile());
  file->owner_ = std::move(owner);
  file->data_ = data;
  file->size_ = size;
  return file;
}

MappedFile::~MappedFile() {
  if (guard_slot_ >= 0) {
    g_slot_begin[guard_slot_].store(0, std::memory_order_release);
  }
  if (mapping_ != nullptr) ::munmap(mapping_, size_);
}

bool MappedFile::truncated_while_mapped() const {
  return guard_slot_ >= 0 && g_slot_truncated[guard_slot_].load(std::memory_order_acquire);
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
  if (truncated_while_mapped()) return true;
  struct stat st;
  if (::stat(path_.c_str(), &st) != 0) return false;
  // Another file now at the path (os.replace, an editor's save): the mapped one is unchanged.
  if (static_cast<uint64_t>(st.st_dev) != device_ || static_cast<uint64_t>(st.st_ino) != inode_) {
    return false;
  }
  return static_cast<size_t>(st.st_size) < size_;
}

}  // namespace tracecore
