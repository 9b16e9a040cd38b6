#pragma once
// Runs the real gpu-extender binary for a test: on a free loopback port (--port 0, the port read from
// its log), stopped with SIGTERM when the test ends.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "child_process.h"

namespace test_support {

struct ProcessResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

// Runs a shell command to completion: its exit code and what it printed on stdout (and on stderr when
// the command sends it there with 2>&1).
inline ProcessResult run_command(const std::string& command) {
  ProcessResult result;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) throw std::runtime_error("popen failed");
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) result.output.append(buf, n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

// Runs the binary to completion (for flag and config checks).
inline ProcessResult run_binary(const std::vector<std::string>& args) {
  std::string command = std::string(GPU_EXTENDER_BINARY);
  for (const auto& a : args) command += " '" + a + "'";
  return run_command(command + " 2>&1");
}

class ExtenderProcess {
 public:
  explicit ExtenderProcess(std::vector<std::string> extra_args = {}) {
    int fds[2];
    // Close-on-exec: the child keeps only its copies on stdout and stderr, never the read end.
    if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
    // No drain on SIGTERM unless a test asks for one: stopping stays instant.
    std::vector<std::string> args{GPU_EXTENDER_BINARY, "--address", "127.0.0.1", "--port", "0",
                                  "--shutdown-drain-seconds", "0"};
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    pid_ = spawn_child(args, fds[1]);
    close(fds[1]);
    if (pid_ < 0) {
      close(fds[0]);
      throw std::runtime_error("fork failed");
    }
    log_fd_ = fds[0];
    // Read the log all the time: a full pipe would block the server's logging.
    reader_ = std::thread([this] {
      char buf[4096];
      ssize_t n;
      while ((n = read(log_fd_, buf, sizeof buf)) > 0) {
        std::lock_guard<std::mutex> lock(mutex_);
        log_.append(buf, static_cast<size_t>(n));
      }
    });
    // Wait (bounded) for "listening on http(s)://ADDRESS:PORT" (127.0.0.1, unless a test passes another
    // --address: reached on loopback all the same).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    const std::string marker = "listening on http";
    while (std::chrono::steady_clock::now() < deadline) {
      const std::string text = log();
      const size_t at = text.find(marker);
      const size_t end = at == std::string::npos ? at : text.find('\n', at);
      if (end != std::string::npos) {
        const size_t host = text.find("://", at) + 3;
        port_ = std::stoi(text.substr(text.find(':', host) + 1));
        return;
      }
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        reader_.join();
        close(log_fd_);
        throw std::runtime_error("gpu-extender exited at start: " + log());
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    stop();
    throw std::runtime_error("gpu-extender did not start listening: " + log());
  }

  ~ExtenderProcess() { stop(); }

  // The log as soon as it holds `needle` (the log is read from a pipe by a thread of its own, so a
  // line written before an answer may arrive here after it), or after `timeout` without it.
  std::string log_with(const std::string& needle, std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::string text = log();
    while (text.find(needle) == std::string::npos && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      text = log();
    }
    return text;
  }

  // Whether the log holds `needle` (waiting for it as log_with does).
  bool logged(const std::string& needle, std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    return log_with(needle, timeout).find(needle) != std::string::npos;
  }

  // SIGTERM, then the exit code (0 is a clean stop).
  int stop() {
    if (pid_ <= 0) return exit_code_;
    const int status = stop_child(pid_);
    pid_ = -1;
    reader_.join();  // EOF once the process is gone
    close(log_fd_);
    exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return exit_code_;
  }

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  // Waits (bounded) for the process to exit by itself; the exit code, or -1 if it is still running.
  int wait_exit(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        reader_.join();
        close(log_fd_);
        exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        return exit_code_;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return -1;
  }
  std::string log() {
    std::lock_guard<std::mutex> lock(mutex_);
    return log_;
  }

 private:
  pid_t pid_ = -1;
  int log_fd_ = -1;
  int port_ = 0;
  int exit_code_ = -1;
  std::mutex mutex_;
  std::string log_;
  std::thread reader_;
};

}  // namespace test_support
