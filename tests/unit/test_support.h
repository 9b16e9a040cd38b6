#pragma once
// Helpers shared by the unit tests: files, the default policy, and small builders of views.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <thread>
#include <sstream>
#include <string>

#include "common/file_text.h"
#include "gpu_extender/policy/policy.h"
#include "gpu_extender/common/quantity.h"
#include "gpu_extender/wire/wire.h"

namespace test_support {

// A loopback port nobody listens on right now, chosen by the kernel (a process started a moment later
// takes it). Ports derived from the pid could fall in the ephemeral range and be in use.
inline int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

// Polls `condition` until it holds or `timeout` passes, and says whether it held. For states another
// process or thread reaches in its own time (a reload, a watch, a gauge): the condition decides what
// happened, the pause between looks only how often it is asked.
inline bool eventually(const std::function<bool()>& condition,
                       std::chrono::milliseconds timeout = std::chrono::seconds(15)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return condition();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

inline std::string source_path(const std::string& relative) {
  return std::string(GPU_EXTENDER_SOURCE_DIR) + "/" + relative;
}

inline std::string read_file(const std::string& path) {
  std::optional<std::string> text = gpu_extender::read_file_text(path);
  if (!text) throw std::runtime_error("cannot read " + path);
  return std::move(*text);
}

inline std::string fixture(const std::string& name) {
  return read_file(source_path("tests/fixtures/kube-scheduler-v1.26/" + name));
}

inline std::string sample(const std::string& name) { return read_file(source_path("extender-config/samples/" + name)); }

inline std::shared_ptr<const gpu_extender::Policy> default_policy() {
  return gpu_extender::Policy::build(gpu_extender::default_policy_config());
}

inline int64_t milli(const char* quantity) { return *gpu_extender::parse_quantity(quantity).milli; }

// A node with GPU labels and allocatable GPUs; strings must outlive the view (literals do).
inline gpu_extender::NodeView gpu_node(std::string_view name, std::string_view model, std::string_view memory_mib,
                                       int gpus) {
  gpu_extender::NodeView n;
  n.name = name;
  n.gpu_model = model;
  n.gpu_memory = memory_mib;
  n.allocatable.set(gpu_extender::ViewSchema::kGpuResource, gpus * 1000LL);
  return n;
}

inline gpu_extender::PodRequest gpu_pod(int gpus, std::optional<std::string_view> model = std::nullopt,
                                        std::optional<int64_t> memory_mib = std::nullopt) {
  gpu_extender::PodRequest p;
  p.name = "pod";
  p.ns = "default";
  p.gpu_model = model;
  p.gpu_memory_mib = memory_mib;
  if (gpus > 0) p.requests.set(gpu_extender::ViewSchema::kGpuResource, gpus * 1000LL);
  return p;
}

// A pod of `gpus` GPUs as the watch reports it: on `node` ("" while unbound), in `phase`.
inline gpu_extender::PodRequest watched_pod(std::string_view uid, std::string_view node, int gpus,
                                            std::string_view phase = "Running") {
  gpu_extender::PodRequest p;
  p.uid = uid;
  p.node_name = node;
  p.phase = phase;
  p.requests.set(gpu_extender::ViewSchema::kGpuResource, gpus * 1000LL);
  return p;
}

// GPUs counted on `node` by `view` (any UsageSource).
template <typename View>
int64_t gpus_on(const View& view, std::string_view node) {
  return view.used_on(node)->get(gpu_extender::ViewSchema::kGpuResource) / 1000;
}

inline gpu_extender::ResourceAmounts used(size_t resource, int64_t units) {
  gpu_extender::ResourceAmounts a;
  a.set(resource, units * 1000);
  return a;
}

}  // namespace test_support
