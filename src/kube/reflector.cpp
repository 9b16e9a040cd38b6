#include "reflector.h"

#include <spdlog/spdlog.h>

#include <random>


namespace gpu_extender::kube {
namespace {

std::string url_escape(const std::string& text) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
  }
  return out;
}

}  // namespace

Reflector::Reflector(Watched kind, std::shared_ptr<const ApiClient> api, WatchTarget target, ReflectorOptions options)
    : api_(std::move(api)), ledger_(target.ledger), options_(options) {
  target.not_understood = [this](std::string_view what, std::string_view why) { not_understood(what, why); };
  kind_ = make_watched_kind(kind, std::move(target));
}

const char* Reflector::name() const { return kind_->name(); }

void Reflector::stop() {
  stopping_ = true;
  std::lock_guard<std::mutex> lock(sleep_mutex_);
  sleep_cv_.notify_all();
}

void Reflector::sleep_for(std::chrono::milliseconds duration) {
  std::unique_lock<std::mutex> lock(sleep_mutex_);
  sleep_cv_.wait_for(lock, duration, [this] { return stopping_.load(); });
}

void Reflector::list_after(const Reflector* earlier, std::chrono::milliseconds limit) {
  list_after_.emplace_back(earlier, limit);
}

void Reflector::wait_first_list(std::chrono::milliseconds limit) const {
  std::unique_lock<std::mutex> lock(sleep_mutex_);
  sleep_cv_.wait_for(lock, limit, [this] { return first_list_tried_ || stopping_.load(); });
}

void Reflector::run() {
  std::mt19937 jitter(std::random_device{}());
  auto backoff = options_.min_backoff;
  bool need_list = true;
  for (const auto& [earlier, limit] : list_after_) earlier->wait_first_list(limit);
  while (!stopping_) {
    bool ok = true;
    if (need_list) {
      ok = list();
      need_list = !ok;
      std::lock_guard<std::mutex> lock(sleep_mutex_);
      if (!first_list_tried_) {
        first_list_tried_ = true;
        sleep_cv_.notify_all();
      }
    }
    if (!ok && not_served_) {  // no DRA on this server: nothing to watch, and no failure
      heard_from_server();
      sleep_for(kNotServedRetry);
      continue;
    }
    if (ok) {
      switch (watch()) {
        case WatchEnd::kResume:  // the server closed the stream normally: resume from where we are
          heard_from_server();
          backoff = options_.min_backoff;
          continue;
        case WatchEnd::kRelist:
          ++counters_.relists_after_gone;
          need_list = true;
          backoff = options_.min_backoff;
          continue;
        case WatchEnd::kRefused:
          need_list = true;
          break;  // counted and backed off below, then listed
        case WatchEnd::kFailed:
          break;  // counted and backed off below
      }
    }
    if (stopping_) break;
    ++counters_.failures;
    int64_t not_failing = 0;
    failing_since_ns_.compare_exchange_strong(not_failing, std::chrono::steady_clock::now().time_since_epoch().count());
    // Exponential backoff with jitter, so replicas do not reconnect in lockstep after an outage.
    const auto wait = backoff / 2 + std::chrono::milliseconds(jitter() % (backoff.count() / 2 + 1));
    sleep_for(wait);
    backoff = std::min(backoff * 2, options_.max_backoff);
  }
}

std::chrono::steady_clock::duration Reflector::failing_for() const {
  const int64_t since = failing_since_ns_.load(std::memory_order_relaxed);
  if (since == 0) return {};
  return std::chrono::steady_clock::now().time_since_epoch() - std::chrono::steady_clock::duration(since);
}

void Reflector::not_understood(std::string_view what, std::string_view why) {
  const uint64_t count = ++counters_.not_understood;
  const auto now = std::chrono::steady_clock::now();
  if (count > 1 && now - last_not_understood_log_ < std::chrono::minutes(1)) return;
  last_not_understood_log_ = now;
  spdlog::warn("cluster view: {}: {}; counting what can be read ({} such {} so far; logged at most once a minute)",
               what, why, count, name());
}

bool Reflector::list() {
  ++counters_.lists;
  std::string continue_token;
  ListMeta meta;
  kind_->discard_list();
  const std::string group = kind_->optional_group();
  do {
    std::string path = std::string(kind_->path()) + "&limit=" + std::to_string(options_.page_size);
    if (!continue_token.empty()) path += "&continue=" + url_escape(continue_token);
    const ApiResponse res = api_->get(path, std::chrono::seconds(60));
    const bool was_served = !not_served_;
    not_served_ = !group.empty() && res.status == 404;
    if (not_served_) {
      if (was_served)
        spdlog::info("cluster view: this API server does not serve {}/v1 {} (an older release, or the feature turned "
                     "off): none counts; asked again every {} minutes",
                     group, name(), kNotServedRetry.count());
      kind_->discard_list();
      kind_->replace_with_list();
      return false;
    }
    if (!res.ok()) {
      spdlog::warn("cluster view: list {} failed: {}{}", name(), res.describe(),
                   res.status == 403 ? std::string(" (the extender's ClusterRole needs list and watch on ") + name() +
                                           (group.empty() ? std::string() : " in group " + group) +
                                           ": apply this release's manifests)"
                                     : std::string());
      return false;
    }
    try {
      meta = kind_->decode_page(decoder_, res.body);
    } catch (const DecodeError& e) {
      spdlog::error("cluster view: list {} answered something unreadable: {}", name(), e.what());
      return false;
    }
    continue_token = meta.continue_token;
  } while (!continue_token.empty() && !stopping_);
  const size_t listed = kind_->replace_with_list();
  spdlog::info("cluster view: listed {} {} (resourceVersion {})", listed, name(), meta.resource_version);
  resource_version_ = meta.resource_version;
  ledger_->observe_heard();
  heard_from_server();
  return true;
}

bool Reflector::apply_event(std::string_view line, WatchEnd& end) {
  if (line.empty() || line == "\r") return true;
  ++counters_.events;
  try {
    const WatchEventHeader header = kind_->apply_event(decoder_, line);
    if (header.type == "ERROR") {
      spdlog::warn("cluster view: watch {} ended with an error event: {} {}", name(), header.error_code,
                   header.error_message);
      end = header.error_code == 410 ? WatchEnd::kRelist : WatchEnd::kFailed;
      return false;
    }
    if (!header.resource_version.empty()) resource_version_ = header.resource_version;
    ledger_->observe_heard();
  } catch (const DecodeError& e) {
    // One unreadable event must not stop the view; a relist will set it right.
    spdlog::error("cluster view: unreadable {} watch event ({}); relisting", name(), e.what());
    end = WatchEnd::kRelist;
    return false;
  }
  return true;
}

Reflector::WatchEnd Reflector::watch() {
  ++counters_.watches;
  const std::string path = std::string(kind_->path()) + "&watch=1&allowWatchBookmarks=true&resourceVersion=" + url_escape(resource_version_) +
                           "&timeoutSeconds=" + std::to_string(options_.watch_timeout.count());
  WatchEnd end = WatchEnd::kResume;
  const ApiResponse res =
      api_->watch(path, [&](std::string_view line) {
        heard_from_server();  // an event or a bookmark: the watch is up
        return !stopping_ && apply_event(line, end);
      },
                  options_.idle_timeout, options_.watch_batch, [this] { heard_from_server(); });  // open: up
  if (end != WatchEnd::kResume) return end;
  if (res.status == 410) return WatchEnd::kRelist;
  if (stopping_) return WatchEnd::kResume;
  if (res.status == 0 || res.status == 429) {  // unreachable, or asked to slow down: watch again
    spdlog::warn("cluster view: watch {} failed: {}", name(), res.describe());
    return WatchEnd::kFailed;
  }
  if (res.status != 200) {
    spdlog::warn("cluster view: watch {} failed: {}; relisting", name(), res.describe());
    return WatchEnd::kRefused;
  }
  if (!res.error.empty()) {
    // The stream broke mid-way: resume from the last version seen, after a backoff.
    spdlog::warn("cluster view: watch {} dropped ({}); resuming from resourceVersion {}", name(), res.error,
                 resource_version_);
    return WatchEnd::kFailed;
  }
  return WatchEnd::kResume;
}

}  // namespace gpu_extender::kube
