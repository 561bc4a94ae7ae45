#include "importers/open_trace.h"

#include <stdexcept>

#include "core/error.h"
#include "importers/binary_proto/binary_parser.h"
#include "importers/text_proto/text_parser.h"
#include "importers/trace_builder.h"

namespace tracecore {

std::string DetectFormat(const char* data, size_t size) {
  size_t i = 0;
  while (i < size && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n' ||
                      data[i] == '\f' || data[i] == '\v')) {
    ++i;
  }
  if (i == size) return "text";  // empty or blank: the text parser reports it
  const char first = data[i];
  const bool text_start = (first >= 'a' && first <= 'z') || (first >= 'A' && first <= 'Z') ||
                          first == '_' || first == '#' || first == '[';
  if (!text_start) return "binary";
  // Text dumps hold no control bytes other than whitespace; binary ones are full of them.
  const size_t probe = size < 65536 ? size : 65536;
  for (size_t k = i; k < probe; ++k) {
    const auto c = static_cast<unsigned char>(data[k]);
    if (c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != '\v') return "binary";
  }
  return "text";
}

std::shared_ptr<TraceTables> ParseTrace(const MappedFile& file, const OpenOptions& options) {
  std::string format = options.format;
  if (format == "auto") {
    format = DetectFormat(file.data(), file.size());
  } else if (format != "text" && format != "binary") {
    throw std::invalid_argument("format must be 'auto', 'text' or 'binary', not '" + format + "'");
  }
  auto tables = std::make_shared<TraceTables>();
  tables->format = format;
  tables->input_bytes = file.size();
  TraceBuilder builder(*tables);
  builder.Reserve(file.size(), format == "text");
  if (format == "text") {
    ParseTextProto(file.data(), file.data() + file.size(), builder);
  } else {
    const auto* bytes = reinterpret_cast<const uint8_t*>(file.data());
    ParseBinaryProto(bytes, file.size(), DetectBinaryKind(bytes, file.size()), builder);
  }
  if (file.ShrankSinceOpen()) {
    throw TraceFormatError("the file was truncated by another process while it was being read");
  }
  builder.Finish();
  return tables;
}

}  // namespace tracecore
