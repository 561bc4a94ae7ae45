// Recognises Chrome trace event JSON by content (never by file name).
#pragma once

#include <string_view>

namespace tracecore::chrome_json {

// True when the first bytes of an input look like Chrome trace JSON: an object whose
// top-level keys (as far as `head` goes) include traceEvents, displayTimeUnit or
// systemTraceEvents, or schemaVersion together with one of Kineto's deviceProperties,
// distributedInfo, baseTimeNanoseconds, traceName; or an array whose first element is an
// object with a "ph" key. `head` may stop anywhere (a prefix of the file); a UTF-8 byte order
// mark and whitespace before the value are skipped.
bool LooksLikeChromeJson(std::string_view head);

}  // namespace tracecore::chrome_json
