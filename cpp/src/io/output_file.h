// A file written from the start (created or truncated), for the exporters: every byte handed to
// Write is written (short writes and EINTR retried); errors are IoErrors without the file's
// name (the caller names the file it was asked for).
#pragma once

#include <cstddef>
#include <string>

namespace tracecore {

class OutputFile {
 public:
  explicit OutputFile(const std::string& path);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  void Write(const char* data, size_t n);
  // Closes the file, reporting close's error (the last chance to see a failed write-back).
  void Close();

 private:
  int fd_ = -1;
};

}  // namespace tracecore
