#pragma once
// Starting and stopping a child process from a multi-threaded test (the real gpu-extender, Prometheus).
//
// Between fork() and exec() the child may make only async-signal-safe calls: another thread may hold
// a lock at the moment of the fork (the allocator's, under ASan), and the child's copy of it is never
// released. A child that built its argument strings there hung forever in a sanitizer run, and the
// test with it. So every string is made before the fork; the child only moves descriptors and execs.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

namespace test_support {

// Runs args[0] (found on PATH when `search_path`) with stdout and stderr on `output_fd`, which the
// caller still owns. The child's pid, or -1.
inline pid_t spawn_child(const std::vector<std::string>& args, int output_fd, bool search_path = false) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::fflush(nullptr);  // the child must not write our buffered output again
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(output_fd, STDOUT_FILENO);
    dup2(output_fd, STDERR_FILENO);
    if (output_fd > STDERR_FILENO) close(output_fd);
    if (search_path) execvp(argv[0], argv.data());
    else execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

// SIGTERM, and SIGKILL if the child has not exited within `grace`: its wait status. A test never
// waits without bound on a child that does not stop.
inline int stop_child(pid_t pid, std::chrono::milliseconds grace = std::chrono::seconds(30)) {
  kill(pid, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + grace;
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() >= deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return status;
}

}  // namespace test_support
