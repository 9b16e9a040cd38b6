#include "reflector.h"

#include <spdlog/spdlog.h>

#include <random>

#include "gpu_extender/common/quantity.h"

namespace gpu_extender::kube {
namespace {

// Only pods on a node hold resources there: "spec.nodeName!=" keeps pending pods out of the view.
constexpr const char* kPodsPath = "/api/v1/pods?fieldSelector=spec.nodeName%21%3D";
constexpr const char* kNodesPath = "/api/v1/nodes?";
constexpr const char* kResourceSlicesPath = "/apis/resource.k8s.io/v1/resourceslices?";
constexpr const char* kResourceClaimsPath = "/apis/resource.k8s.io/v1/resourceclaims?";
constexpr const char* kResourceClaimTemplatesPath = "/apis/resource.k8s.io/v1/resourceclaimtemplates?";

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

Reflector::Reflector(Kind kind, std::shared_ptr<const ApiClient> api, std::shared_ptr<ClusterView> view,
                     std::shared_ptr<PlacementLedger> ledger, ViewSchema schema, ReflectorOptions options)
    : kind_(kind),
      api_(std::move(api)),
      view_(std::move(view)),
      ledger_(std::move(ledger)),
      schema_(std::move(schema)),
      options_(options) {}

const char* Reflector::name() const {
  switch (kind_) {
    case Kind::kPods: return "pods";
    case Kind::kNodes: return "nodes";
    case Kind::kResourceSlices: return "resourceslices";
    case Kind::kResourceClaims: return "resourceclaims";
    case Kind::kResourceClaimTemplates: return "resourceclaimtemplates";
  }
  return "?";
}

const char* Reflector::path() const {
  switch (kind_) {
    case Kind::kPods: return kPodsPath;
    case Kind::kNodes: return kNodesPath;
    case Kind::kResourceSlices: return kResourceSlicesPath;
    case Kind::kResourceClaims: return kResourceClaimsPath;
    case Kind::kResourceClaimTemplates: return kResourceClaimTemplatesPath;
  }
  return "";
}

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

void Reflector::check_understood(const PodRequest& pod) {
  if (pod.invalid_reason.empty()) return;
  not_understood("pod " + std::string(pod.ns) + "/" + std::string(pod.name), pod.invalid_reason);
}

void Reflector::check_understood(const ResourceSliceView& slice) {
  if (!slice.invalid_reason.empty()) not_understood("resourceslice " + std::string(slice.name), slice.invalid_reason);
}

void Reflector::check_understood(const ResourceClaimView& claim) {
  // A claim the scheduler allocated on a node has a node selector naming it; one holding devices of the
  // GPU driver without it (devices of several nodes) is counted on no node, and said so.
  if (!claim.results.empty() && claim.node.empty())
    for (const DraResultView& r : claim.results)
      if (r.driver == schema_.dra_gpu_driver) {
        not_understood("resourceclaim " + std::string(claim.ns) + "/" + std::string(claim.name),
                       "holds " + schema_.dra_gpu_driver + " devices but its allocation names no single node");
        return;
      }
}

void Reflector::check_understood(const NodeView& node) {
  std::string error;
  if (node.gpu_memory && !parse_mebibytes(*node.gpu_memory, &error)) {
    not_understood("node " + std::string(node.name), "label " + schema_.node_gpu_memory_labels[node.gpu_memory_label] + ": " + error);
    return;
  }
  if (!node.gpu_count) return;
  if (const QuantityParse count = parse_quantity(*node.gpu_count); !count.milli)
    not_understood("node " + std::string(node.name), "label " + schema_.node_gpu_count_labels[node.gpu_count_label] + ": " + count.error);
}

bool Reflector::decode_page(const std::string& body, ListMeta& meta, Listed& listed) {
  try {
    switch (kind_) {
      case Kind::kPods:
        meta = decoder_.decode_pod_list(body, schema_, [&](const PodRequest& pod) {
          check_understood(pod);
          if (pod.node_name.empty() || pod.terminated() || pod.uid.empty()) return;
          listed.pods.push_back({std::string(pod.uid), std::string(pod.node_name), pod.requests,
                                 view_->cost_details_of(pod), PendingPod::member_of(pod)});
          view_->add_claimed_gpus(pod, listed.pods.back().requests);
        });
        break;
      case Kind::kNodes:
        meta = decoder_.decode_node_list(body, schema_, [&](const NodeView& node) {
          check_understood(node);
          listed.nodes.push_back(CachedNode::copy_of(node));
        });
        break;
      case Kind::kResourceSlices:
        meta = decoder_.decode_resource_slice_list(body, schema_, [&](const ResourceSliceView& slice) {
          check_understood(slice);
          listed.slices.push_back(DraSlice::of(slice, schema_));
        });
        break;
      case Kind::kResourceClaims:
        meta = decoder_.decode_resource_claim_list(body, [&](const ResourceClaimView& claim) {
          check_understood(claim);
          listed.claims.push_back(DraClaim::of(claim, schema_));
        });
        break;
      case Kind::kResourceClaimTemplates:
        meta = decoder_.decode_resource_claim_template_list(
            body, [&](const ResourceClaimView& t) { listed.claims.push_back(DraClaim::of(t, schema_)); });
        break;
    }
  } catch (const DecodeError& e) {
    spdlog::error("cluster view: list {} answered something unreadable: {}", name(), e.what());
    return false;
  }
  return true;
}

void Reflector::replace_all(Listed& listed, const ListMeta& meta) {
  switch (kind_) {
    case Kind::kPods:
      ledger_->observe_relist(listed.pods);  // the view and the assumptions, in one step
      view_->mark_pods_synced();
      spdlog::info("cluster view: listed {} pods holding resources (resourceVersion {})", listed.pods.size(),
                   meta.resource_version);
      break;
    case Kind::kNodes:
      view_->replace_nodes(listed.nodes);
      view_->mark_nodes_synced();
      spdlog::info("cluster view: listed {} nodes (resourceVersion {})", listed.nodes.size(), meta.resource_version);
      break;
    case Kind::kResourceSlices:
      spdlog::info("cluster view: listed {} ResourceSlices (resourceVersion {})", listed.slices.size(),
                   meta.resource_version);
      view_->replace_slices(std::move(listed.slices));
      break;
    case Kind::kResourceClaims:
      spdlog::info("cluster view: listed {} ResourceClaims (resourceVersion {})", listed.claims.size(),
                   meta.resource_version);
      view_->replace_claims(std::move(listed.claims));
      break;
    case Kind::kResourceClaimTemplates:
      spdlog::info("cluster view: listed {} ResourceClaimTemplates (resourceVersion {})", listed.claims.size(),
                   meta.resource_version);
      view_->replace_claim_templates(std::move(listed.claims));
      break;
  }
}

bool Reflector::list() {
  ++counters_.lists;
  std::string continue_token;
  Listed listed;
  ListMeta meta;
  do {
    std::string path = std::string(this->path()) + "&limit=" + std::to_string(options_.page_size);
    if (!continue_token.empty()) path += "&continue=" + url_escape(continue_token);
    const ApiResponse res = api_->get(path, std::chrono::seconds(60));
    const bool was_served = !not_served_;
    not_served_ = dra() && res.status == 404;
    if (not_served_) {
      if (was_served)
        spdlog::info("cluster view: this API server does not serve resource.k8s.io/v1 {} (before 1.34, or DRA turned "
                     "off): GPUs come from node labels and allocatable only; asked again every {} minutes",
                     name(), kNotServedRetry.count());
      Listed none;
      replace_all(none, meta);
      return false;
    }
    if (!res.ok()) {
      spdlog::warn("cluster view: list {} failed: {}{}", name(), res.describe(),
                   res.status == 403 && dra()
                       ? std::string(" (the extender's ClusterRole needs list and watch on ") + name() +
                             " in group resource.k8s.io: apply this release's manifests)"
                       : std::string());
      return false;
    }
    if (!decode_page(res.body, meta, listed)) return false;
    continue_token = meta.continue_token;
  } while (!continue_token.empty() && !stopping_);
  replace_all(listed, meta);
  resource_version_ = meta.resource_version;
  view_->touch();
  heard_from_server();
  return true;
}

bool Reflector::apply_event(std::string_view line, WatchEnd& end) {
  if (line.empty() || line == "\r") return true;
  ++counters_.events;
  try {
    WatchEventHeader header;
    if (kind_ == Kind::kPods) {
      PodRequest pod;
      header = decoder_.decode_pod_event(line, schema_, pod);
      if (header.type == "ADDED" || header.type == "MODIFIED") {
        check_understood(pod);
        // A bound pod asking through claims holds their GPUs before their allocation may show (another
        // watch); the view stops counting them once a claim reserved for it holds the devices.
        if (!pod.node_name.empty()) view_->add_claimed_gpus(pod, pod.requests);
        ledger_->observe_pod(pod);  // the view and the assumption, in one step
      } else if (header.type == "DELETED") {
        ledger_->observe_deleted(pod.uid);
      }
    } else if (kind_ == Kind::kNodes) {
      NodeView node;
      header = decoder_.decode_node_event(line, schema_, node);
      if (header.type == "ADDED" || header.type == "MODIFIED") {
        check_understood(node);
        view_->upsert_node(node);
      } else if (header.type == "DELETED") {
        view_->delete_node(node.name);
      }
    } else if (kind_ == Kind::kResourceSlices) {
      ResourceSliceView slice;
      header = decoder_.decode_resource_slice_event(line, schema_, slice);
      if (header.type == "ADDED" || header.type == "MODIFIED") {
        check_understood(slice);
        view_->upsert_slice(DraSlice::of(slice, schema_));
      } else if (header.type == "DELETED") {
        view_->delete_slice(slice.name);
      }
    } else if (kind_ == Kind::kResourceClaimTemplates) {
      ResourceClaimView claim_template;
      header = decoder_.decode_resource_claim_template_event(line, claim_template);
      if (header.type == "ADDED" || header.type == "MODIFIED")
        view_->upsert_claim_template(DraClaim::of(claim_template, schema_));
      else if (header.type == "DELETED")
        view_->delete_claim_template(std::string(claim_template.ns) + "/" + std::string(claim_template.name));
    } else {
      ResourceClaimView claim;
      header = decoder_.decode_resource_claim_event(line, claim);
      if (header.type == "ADDED" || header.type == "MODIFIED") {
        check_understood(claim);
        view_->upsert_claim(DraClaim::of(claim, schema_));
      } else if (header.type == "DELETED") {
        view_->delete_claim(std::string(claim.ns) + "/" + std::string(claim.name));
      }
    }
    if (header.type == "ERROR") {
      spdlog::warn("cluster view: watch {} ended with an error event: {} {}", name(), header.error_code,
                   header.error_message);
      end = header.error_code == 410 ? WatchEnd::kRelist : WatchEnd::kFailed;
      return false;
    }
    if (!header.resource_version.empty()) resource_version_ = header.resource_version;
    view_->touch();
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
  const std::string path = std::string(this->path()) + "&watch=1&allowWatchBookmarks=true&resourceVersion=" + url_escape(resource_version_) +
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
