// One libFuzzer binary per target: FUZZ_TARGET names the entry point (set by CMake).
#include "fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) { return fuzz::FUZZ_TARGET(data, size); }
