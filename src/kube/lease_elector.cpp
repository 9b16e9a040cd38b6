#include "lease_elector.h"
#include "common/thread_name.h"

#include <simdjson.h>

#include <cstdio>
#include <ctime>

#include "common/json_writer.h"

namespace gpu_extender::kube {

namespace {
using Clock = std::chrono::steady_clock;

// A metav1.MicroTime: RFC 3339 with microseconds, UTC.
std::string micro_time_now() {
  const auto now = std::chrono::system_clock::now();
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count();
  const std::time_t seconds = static_cast<std::time_t>(us / 1000000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<long long>(us % 1000000));
  return buf;
}

struct LeaseRecord {
  std::string resource_version, holder, acquire_time, renew_time;
  int64_t transitions = 0;
};

// Parses the Lease fields election needs; false when the body is not a Lease.
bool parse_lease(const std::string& body, LeaseRecord& out) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(body).get(doc)) return false;
  std::string_view s;
  if (!doc["metadata"]["resourceVersion"].get(s)) out.resource_version = s;
  simdjson::dom::element spec;
  if (doc["spec"].get(spec)) return true;  // no spec yet: nobody holds it
  if (!spec["holderIdentity"].get(s)) out.holder = s;
  if (!spec["acquireTime"].get(s)) out.acquire_time = s;
  if (!spec["renewTime"].get(s)) out.renew_time = s;
  int64_t n = 0;
  if (!spec["leaseTransitions"].get(n)) out.transitions = n;
  return true;
}

std::string lease_json(const LeaseConfig& c, const LeaseRecord& r, int64_t duration_seconds) {
  std::string out = R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":)";
  append_json_string(out, c.name);
  out += ",\"namespace\":";
  append_json_string(out, c.ns);
  if (!r.resource_version.empty()) {
    out += ",\"resourceVersion\":";
    append_json_string(out, r.resource_version);
  }
  out += "},\"spec\":{\"holderIdentity\":";
  append_json_string(out, r.holder);
  out += ",\"leaseDurationSeconds\":" + std::to_string(duration_seconds) + ",\"acquireTime\":";
  append_json_string(out, r.acquire_time);
  out += ",\"renewTime\":";
  append_json_string(out, r.renew_time);
  out += ",\"leaseTransitions\":" + std::to_string(r.transitions) + "}}";
  return out;
}
}  // namespace

LeaseElector::LeaseElector(std::shared_ptr<const ApiClient> api, LeaseConfig config, std::function<void(bool)> on_change)
    : api_(std::move(api)), config_(std::move(config)), on_change_(std::move(on_change)) {}

LeaseElector::~LeaseElector() { stop(false); }

std::string LeaseElector::lease_path(bool collection) const {
  std::string path = "/apis/coordination.k8s.io/v1/namespaces/" + config_.ns + "/leases";
  return collection ? path : path + "/" + config_.name;
}

void LeaseElector::start() {
  thread_ = std::thread([this] {
    name_this_thread("lease-elector");
    run();
  });
}

void LeaseElector::stop(bool release_lease) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (leader_.load()) {
    set_leader(false);  // writers stop before the lease is given up
    if (release_lease) release();
  }
}

void LeaseElector::set_leader(bool leader) {
  if (leader_.exchange(leader) != leader && on_change_) on_change_(leader);
}

void LeaseElector::run() {
  auto last_renewal = Clock::now();
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    lock.unlock();
    const Attempt attempt = try_acquire_or_renew();
    const auto now = Clock::now();
    if (attempt == Attempt::kHeld) {
      last_renewal = now;
      set_leader(true);
    } else if (attempt == Attempt::kHeldByOther || now - last_renewal >= config_.renew_deadline) {
      // Another replica holds it, or no renewal got through in time (another may take it from now
      // on): stop at once.
      set_leader(false);
    }
    lock.lock();
    wake_.wait_for(lock, config_.retry_period, [this] { return stopping_; });
  }
}

LeaseElector::Attempt LeaseElector::try_acquire_or_renew() {
  const auto timeout = std::max(config_.retry_period, std::chrono::milliseconds(1000));
  const int64_t duration_s = std::max<int64_t>(1, std::chrono::duration_cast<std::chrono::seconds>(config_.lease_duration).count());
  const ApiResponse got = api_->get(lease_path(false), timeout);
  const std::string now = micro_time_now();
  if (got.status == 404) {
    LeaseRecord fresh{"", config_.identity, now, now, 0};
    return api_->post(lease_path(true), lease_json(config_, fresh, duration_s), timeout).ok() ? Attempt::kHeld
                                                                                              : Attempt::kFailed;
  }
  LeaseRecord record;
  if (!got.ok() || !parse_lease(got.body, record)) return Attempt::kFailed;
  const bool mine = record.holder == config_.identity;
  if (!record.holder.empty() && !mine) {
    // Another holder: it keeps the lease while its record keeps changing within lease_duration.
    if (record.holder != observed_holder_ || record.renew_time != observed_renew_) {
      observed_holder_ = record.holder;
      observed_renew_ = record.renew_time;
      observed_at_ = Clock::now();
      return Attempt::kHeldByOther;
    }
    if (Clock::now() - observed_at_ < config_.lease_duration) return Attempt::kHeldByOther;
  }
  LeaseRecord next = record;
  next.holder = config_.identity;
  next.renew_time = now;
  if (!mine) {
    next.acquire_time = now;
    next.transitions = record.transitions + (record.holder.empty() ? 0 : 1);
  }
  return api_->put(lease_path(false), lease_json(config_, next, duration_s), timeout).ok() ? Attempt::kHeld
                                                                                          : Attempt::kFailed;
}

void LeaseElector::release() {
  const ApiResponse got = api_->get(lease_path(false), std::chrono::seconds(2));
  LeaseRecord record;
  if (!got.ok() || !parse_lease(got.body, record) || record.holder != config_.identity) return;
  record.holder = "";
  record.renew_time = micro_time_now();
  api_->put(lease_path(false), lease_json(config_, record, 1), std::chrono::seconds(2));
}

}  // namespace gpu_extender::kube
