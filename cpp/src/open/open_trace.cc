#include "open/open_trace.h"

#include <stdexcept>
#include <string>
#include <utility>

#include "core/error.h"
#include "importers/chrome_json/chrome_importer.h"
#include "importers/xspace/xspace_importer.h"

namespace tracecore {

bool IsGzip(const MappedFile& file) {
  return file.size() >= 2 && static_cast<unsigned char>(file.data()[0]) == 0x1f &&
         static_cast<unsigned char>(file.data()[1]) == 0x8b;
}

namespace {

// read(view) of `file`, or of its decompressed data when it is gzip (see OpenTrace).
template <class Read>
std::shared_ptr<TraceTables> ReadDecompressed(const MappedFile& file, const InflateLimits& limits,
                                              Read&& read) {
  if (!IsGzip(file)) return read(file);
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
    return read(*view);
  } catch (const TraceFormatError& e) {
    throw e.Appended(" (in the decompressed gzip data)");
  }
}

}  // namespace

std::shared_ptr<TraceTables> OpenTrace(const MappedFile& file, const OpenOptions& options,
                                       const InflateLimits& limits) {
  return ReadDecompressed(file, limits, [&](const MappedFile& f) { return ParseTrace(f, options); });
}

bool HasDeferredEventStats(TraceKind kind) {
  return kind == TraceKind::kXSpace || kind == TraceKind::kChromeTrace || kind == TraceKind::kKineto;
}

std::shared_ptr<TraceTables> OpenEventStats(const MappedFile& file, TraceKind kind,
                                            size_t expected_events, const InflateLimits& limits,
                                            bool replace_invalid) {
  if (!HasDeferredEventStats(kind)) throw std::logic_error("OpenEventStats: no deferred event_stats");
  return ReadDecompressed(file, limits, [&](const MappedFile& f) {
    return kind == TraceKind::kXSpace ? ReadXSpaceEventStats(f, expected_events)
                                      : ReadChromeEventStats(f, expected_events, replace_invalid);
  });
}

}  // namespace tracecore
