// libFuzzer target: ParseTrace(format="auto") on a heap buffer; see fuzz_common.h.
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tracecore_fuzz::RunInput(data, size, "auto", /*queries=*/false);
  return 0;
}
