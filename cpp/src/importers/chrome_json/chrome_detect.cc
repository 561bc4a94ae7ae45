#include "importers/chrome_json/chrome_detect.h"

#include "core/error.h"
#include "importers/chrome_json/json_reader.h"

namespace tracecore::chrome_json {

bool LooksLikeChromeJson(std::string_view head) {
  json::JsonReader reader(head.data(), head.data() + head.size());
  bool schema = false;  // Kineto: schemaVersion and one of its other top-level keys
  bool kineto = false;
  try {
    const json::ValueKind kind = reader.Peek();
    std::string_view key;
    if (kind == json::ValueKind::kArray) {
      reader.EnterArray();
      if (!reader.NextElement() || reader.Peek() != json::ValueKind::kObject) return false;
      reader.EnterObject();
      while (reader.NextMember(&key)) {
        if (key == "ph") return true;
        reader.SkipValue();
      }
      return false;
    }
    if (kind != json::ValueKind::kObject) return false;
    reader.EnterObject();
    while (reader.NextMember(&key)) {
      if (key == "traceEvents" || key == "displayTimeUnit" || key == "systemTraceEvents")
        return true;
      schema = schema || key == "schemaVersion";
      kineto = kineto || key == "deviceProperties" || key == "distributedInfo" ||
               key == "baseTimeNanoseconds" || key == "traceName";
      if (schema && kineto) return true;
      reader.SkipValue();
      reader.ResetScratch();
    }
  } catch (const TraceFormatError&) {
    // The head ends inside a value, or is not JSON: what was seen decides.
  }
  return false;
}

}  // namespace tracecore::chrome_json
