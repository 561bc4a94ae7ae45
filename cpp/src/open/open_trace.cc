#include "open/open_trace.h"

#include <string>
#include <utility>

#include "core/error.h"

namespace tracecore {

bool IsGzip(const MappedFile& file) {
  return file.size() >= 2 && static_cast<unsigned char>(file.data()[0]) == 0x1f &&
         static_cast<unsigned char>(file.data()[1]) == 0x8b;
}

std::shared_ptr<TraceTables> OpenTrace(const MappedFile& file, const OpenOptions& options,
                                       const InflateLimits& limits) {
  if (!IsGzip(file)) return ParseTrace(file, options);
  InflateOptions gzip;
  gzip.format = CompressionFormat::kGzip;
  InflatedBuffer inflated;
  try {
    inflated = InflateAll(reinterpret_cast<const uint8_t*>(file.data()), file.size(), limits, gzip);
  } catch (const TraceFormatError&) {
    if (file.ShrankSinceOpen()) {
      throw TraceFormatError("the file was truncated by another process while it was being read");
    }
    throw;
  }
  inflated.ShrinkToFit();
  auto owner = std::make_shared<InflatedBuffer>(std::move(inflated));
  const auto view = MappedFile::FromMemory(reinterpret_cast<const char*>(owner->data()),
                                           owner->size(), owner);
  try {
    return ParseTrace(*view, options);
  } catch (const TraceFormatError& e) {
    throw e.Appended(" (in the decompressed gzip data)");
  }
}

}  // namespace tracecore
