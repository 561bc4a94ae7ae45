// libFuzzer target: ParseTrace(format="auto") and, on success, every query (overlaps, window,
// occupancy with and without bins, replay of records and tensors, op_stats); see fuzz_common.h.
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tracecore_fuzz::RunInput(data, size, "auto", /*queries=*/true);
  return 0;
}
