#pragma once
// Names the calling thread as `top -H`, `ps -L`, perf and /proc/PID/task/*/comm show it (at most 15
// characters; longer names are cut). Which thread spends the CPU is then visible without a debugger.
#include <pthread.h>

#include <string>

namespace gpu_extender {

inline void name_this_thread(const std::string& name) { pthread_setname_np(pthread_self(), name.substr(0, 15).c_str()); }

}  // namespace gpu_extender
