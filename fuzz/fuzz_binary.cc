// libFuzzer target: ParseTrace(format="binary") on a heap buffer; see fuzz_common.h.
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tracecore_fuzz::RunInput(data, size, "binary", /*queries=*/false);
  return 0;
}
