#pragma once
// The fuzz targets' entry points, one per input the extender reads from outside: libFuzzer calls them
// in the clang fuzz build (scripts/fuzz.sh), and the regression test replays saved inputs through
// the very same functions in every build.
#include <cstddef>
#include <cstdint>

namespace fuzz {

int extender_args(const uint8_t* data, size_t size);
int binding_args(const uint8_t* data, size_t size);
int preemption_args(const uint8_t* data, size_t size);
int watch_event(const uint8_t* data, size_t size);
int quantity(const uint8_t* data, size_t size);
int policy(const uint8_t* data, size_t size);
int admission_review(const uint8_t* data, size_t size);

}  // namespace fuzz
