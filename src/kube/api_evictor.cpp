#include "api_evictor.h"

#include <spdlog/spdlog.h>

#include <ctime>

#include "common/json_writer.h"

namespace gpu_extender::kube {
namespace {

constexpr std::string_view kComponent = "gpu-extender";

std::string pod_path(const PreemptionVictim& v) { return "/api/v1/namespaces/" + v.ns + "/pods/" + v.name; }

std::string now_rfc3339() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

}  // namespace

std::string eviction_json(const PreemptionVictim& v) {
  std::string out = R"({"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":)";
  append_json_string(out, v.name);
  out += ",\"namespace\":";
  append_json_string(out, v.ns);
  // The UID as precondition: a pod re-created under the same name is not the one chosen.
  out += R"(},"deleteOptions":{"preconditions":{"uid":)";
  append_json_string(out, v.uid);
  out += "}}}";
  return out;
}

std::string preempted_event_json(const PreemptionVictim& v, const std::string& message, const std::string& instance,
                                 const std::string& timestamp) {
  std::string out = R"({"apiVersion":"v1","kind":"Event","metadata":{"generateName":)";
  append_json_string(out, v.name + ".");
  out += ",\"namespace\":";
  append_json_string(out, v.ns);
  out += R"(},"involvedObject":{"apiVersion":"v1","kind":"Pod","namespace":)";
  append_json_string(out, v.ns);
  out += ",\"name\":";
  append_json_string(out, v.name);
  out += ",\"uid\":";
  append_json_string(out, v.uid);
  out += R"(},"reason":"Preempted","type":"Normal","message":)";
  append_json_string(out, message);
  out += ",\"source\":{\"component\":";
  append_json_string(out, kComponent);
  out += "},\"reportingComponent\":";
  append_json_string(out, kComponent);
  out += ",\"reportingInstance\":";
  append_json_string(out, instance);
  out += ",\"action\":\"Preempting\",\"count\":1,\"firstTimestamp\":";
  append_json_string(out, timestamp);
  out += ",\"lastTimestamp\":";
  append_json_string(out, timestamp);
  out += "}";
  return out;
}

ApiEvictor::ApiEvictor(std::shared_ptr<const ApiClient> api, std::string instance, std::chrono::milliseconds timeout)
    : api_(std::move(api)), instance_(std::move(instance)), timeout_(timeout) {}

Evictor::Result ApiEvictor::evict(const PreemptionVictim& v, bool dry_run) {
  const std::string path = pod_path(v) + "/eviction" + (dry_run ? "?dryRun=All" : "");
  const ApiResponse res = api_->post(path, eviction_json(v), timeout_);
  if (res.ok()) return {Outcome::kEvicted, ""};
  // pkg/registry/core/pod/storage/eviction.go: a budget's refusal carries a cause of type DisruptionBudget
  // (429 "would violate the pod's disruption budget", 403 when a budget's status is unusable), and so does
  // the 500 for a pod that more than one budget selects; a 429 without it is the API server's own
  // throttling, a 429 "still being processed" a budget not yet seen by the disruption controller.
  const bool budget = res.body.find("DisruptionBudget") != std::string::npos;
  switch (res.status) {
    case 404:
      return {Outcome::kGone, res.describe()};
    case 409:
      // The UID precondition failed: the pod was replaced. Other conflicts (resourceVersion, on retries
      // inside the registry) leave the pod there.
      if (res.body.find("UID") != std::string::npos) return {Outcome::kGone, res.describe()};
      break;
    case 429:
    case 403:
    case 500:
      if (budget && res.body.find("still being processed") == std::string::npos)
        return {Outcome::kBudgetRefused, res.describe()};
      if (res.status == 403 && !budget)
        return {Outcome::kFailed, "forbidden; the extender's role needs create on pods/eviction (" + res.describe() + ")"};
      break;
    default:
      break;
  }
  return {Outcome::kFailed, res.describe()};
}

void ApiEvictor::record_preempted(const PreemptionVictim& v, const std::string& message) {
  const ApiResponse res =
      api_->post("/api/v1/namespaces/" + v.ns + "/events", preempted_event_json(v, message, instance_, now_rfc3339()), timeout_);
  if (!res.ok()) spdlog::warn("event on pod {}/{} not recorded: {}", v.ns, v.name, res.describe());
}

}  // namespace gpu_extender::kube
