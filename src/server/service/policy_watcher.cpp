#include "common/file_text.h"
#include "common/thread_name.h"
#include "server/service/policy_watcher.h"

#include <spdlog/spdlog.h>


namespace gpu_extender {
namespace {
std::string read_all(const std::string& path) { return read_file_text(path).value_or(""); }
}  // namespace

PolicyWatcher::PolicyWatcher(std::string path, std::shared_ptr<PolicyHolder> policies, std::shared_ptr<Metrics> metrics,
                             std::chrono::milliseconds interval)
    : path_(std::move(path)), policies_(std::move(policies)), metrics_(std::move(metrics)), interval_(interval) {
  last_text_ = read_all(path_);
  thread_ = std::thread([this] {
    name_this_thread("policy-watch");
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stopping_) {
      wake_.wait_for(lock, interval_);
      if (stopping_) break;
      lock.unlock();
      check();
      lock.lock();
    }
  });
}

PolicyWatcher::~PolicyWatcher() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

bool PolicyWatcher::check() {
  const std::string text = read_all(path_);
  if (text.empty() || text == last_text_) return false;  // unchanged, or mid-swap: look again next time
  last_text_ = text;
  Status replaced = Status::done();
  try {
    replaced = policies_->replace(Policy::build(parse_policy(text, path_)));
  } catch (const std::exception& e) {  // PolicyError: the file does not parse or build
    replaced = Status::failed(e.what());
  }
  metrics_->count_reload(replaced.ok());
  if (!replaced.ok()) {
    spdlog::error("policy reload refused, keeping the running policy: {}", replaced.why());
    return false;
  }
  spdlog::info("policy reloaded from {}", path_);
  return true;
}

}  // namespace gpu_extender
