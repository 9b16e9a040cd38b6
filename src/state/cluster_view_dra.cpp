// The cluster view's DRA part (cluster_view.h): a node's ResourceSlices, which give its GPU facts, and the
// allocated ResourceClaims, whose devices count as used there. A claim's event touches only its own node
// and pods: the GPUs it occupies are counted per node by how many claims hold each (a device shared by
// several claims, or a GPU several of whose partitions are held, counts once).
#include "gpu_extender/state/cluster_view.h"

namespace gpu_extender {

void ClusterView::remove_slice(std::string_view name) {
  auto at = slice_nodes_.find(name);
  if (at == slice_nodes_.end()) return;
  auto it = nodes_.find(at->second);
  slice_nodes_.erase(at);
  if (it == nodes_.end()) return;
  if (auto slice = it->second.dra.find(name); slice != it->second.dra.end()) it->second.dra.erase(slice);
  refresh_node(it->second);
  erase_if_unused(it);
}

template <>
void ClusterView::upsert<stored::ResourceSlices>(Write, DraSlice slice) {
  std::unique_lock lock(mutex_);
  remove_slice(slice.name);
  // Slices of no node, or of another driver, change nothing. A slice of the driver without devices still
  // counts toward its pool's size (a pool's counter sets have a slice of their own).
  if (!slice.node.empty() && slice.of_driver) {
    NodeEntry& entry = entry_for(slice.node)->second;
    slice_nodes_[slice.name] = slice.node;
    std::string name = slice.name;
    entry.dra.insert_or_assign(std::move(name), std::move(slice));
    refresh_node(entry);
  }
  reindex_if_names_changed();
}

template <>
void ClusterView::erase<stored::ResourceSlices>(Write, std::string_view name) {
  std::unique_lock lock(mutex_);
  remove_slice(name);
  reindex_if_names_changed();
}

template <>
void ClusterView::replace<stored::ResourceSlices>(Write, std::vector<DraSlice> slices) {
  {
    std::unique_lock lock(mutex_);
    while (!slice_nodes_.empty()) remove_slice(std::string(slice_nodes_.begin()->first));
  }
  for (DraSlice& slice : slices) upsert<stored::ResourceSlices>(Write{}, std::move(slice));
}

void ClusterView::refresh_dra_nodes() {
  for (auto& [name, entry] : nodes_)
    if (!entry.dra.empty()) refresh_node(entry);
}

template <>
void ClusterView::upsert<stored::DeviceTaintRules>(Write, DraTaintRule rule) {
  std::unique_lock lock(mutex_);
  // Only rules that select devices of the schema's driver are kept; one that selects none, before and
  // after, changes no node.
  const bool had = taint_rules_.erase(rule.name) > 0;
  const bool has = rule.selects_any;
  if (has) {
    std::string name = rule.name;
    taint_rules_.emplace(std::move(name), std::move(rule));
  }
  if (had || has) refresh_dra_nodes();
}

template <>
void ClusterView::erase<stored::DeviceTaintRules>(Write, std::string_view name) {
  std::unique_lock lock(mutex_);
  auto at = taint_rules_.find(name);
  if (at == taint_rules_.end()) return;
  taint_rules_.erase(at);
  refresh_dra_nodes();
}

template <>
void ClusterView::replace<stored::DeviceTaintRules>(Write, std::vector<DraTaintRule> rules) {
  std::unique_lock lock(mutex_);
  DraTaintRules next;
  for (DraTaintRule& rule : rules)
    if (rule.selects_any) next.insert_or_assign(rule.name, std::move(rule));
  if (next.empty() && taint_rules_.empty()) return;
  taint_rules_ = std::move(next);
  refresh_dra_nodes();
}

namespace {
// What a claim or template asks, kept only while it asks GPUs.
template <typename Map>
void set_requested(Map& requests, std::string key, int64_t gpus, std::vector<DeviceToleration> tolerations = {}) {
  if (gpus > 0) requests.insert_or_assign(std::move(key), typename Map::mapped_type{gpus, std::move(tolerations)});
  else if (auto at = requests.find(key); at != requests.end()) requests.erase(at);
}
}  // namespace

ResourceAmounts ClusterView::claimed_amounts(const NodeEntry& entry) {
  ResourceAmounts out;
  if (entry.dra_counted > 0) out.set(ViewSchema::kGpuResource, entry.dra_counted * 1000);
  return out;
}

void ClusterView::recount_dra(NodeEntry& entry) {
  // In use: each GPU a claim holds, and each GPU no whole-GPU claim can get (in MIG mode, vfio only, its
  // pool being republished, tainted), once.
  entry.held_gpus.clear();
  for (const auto& [device, claims] : entry.held_devices) entry.held_gpus.insert(entry.dra_gpus.occupied(device));
  int64_t counted = static_cast<int64_t>(entry.held_gpus.size());
  for (const DraNodeGpus::Gpu& gpu : entry.dra_gpus.gpus)
    if (!gpu.available() && !entry.held_gpus.contains(gpu.key)) ++counted;
  if (counted == entry.dra_counted) return;
  entry.used.subtract(claimed_amounts(entry));
  entry.dra_counted = counted;
  entry.used.add(claimed_amounts(entry));
  changed(entry);
}

ResourceAmounts ClusterView::counted(const PodEntry& pod) {
  if (!pod.covered || !pod.requests.has(ViewSchema::kGpuResource)) return pod.requests;
  ResourceAmounts out = pod.requests;
  out.set(ViewSchema::kGpuResource, 0);  // its claim's devices are counted instead
  return out;
}

void ClusterView::cover_pod(const std::string& uid, bool cover) {
  auto at = claimed_pods_.find(uid);
  if (cover) {
    if (at == claimed_pods_.end()) at = claimed_pods_.emplace(uid, 0).first;
    if (++at->second > 1) return;
  } else {
    if (at == claimed_pods_.end() || --at->second > 0) return;
    claimed_pods_.erase(at);
  }
  auto pod = pods_.find(uid);
  if (pod == pods_.end() || pod->second.covered == cover) return;
  add_usage(pod->second.node, counted(pod->second), false);
  pod->second.covered = cover;
  add_usage(pod->second.node, counted(pod->second), true);
}

void ClusterView::hold_gpus(ClaimEntry& claim, bool hold) {
  auto it = entry_for(claim.node);
  NodeEntry& entry = it->second;
  for (const std::string& device : claim.devices) {
    if (hold) {
      ++entry.held_devices[device];
    } else if (auto at = entry.held_devices.find(device); at != entry.held_devices.end() && --at->second == 0) {
      entry.held_devices.erase(at);
    }
  }
  recount_dra(entry);
  erase_if_unused(it);
}

void ClusterView::remove_claim(std::string_view key) {
  auto at = claims_.find(key);
  if (at == claims_.end()) return;
  ClaimEntry claim = std::move(at->second);
  claims_.erase(at);
  for (const std::string& uid : claim.pods) cover_pod(uid, false);
  hold_gpus(claim, false);
}

void ClusterView::add_claim(DraClaim claim) {
  // Only what holds GPUs on a node counts: an unallocated claim, or one of another driver, holds nothing.
  if (claim.node.empty() || claim.devices.empty()) return;
  ClaimEntry entry{claim.node, {}, std::move(claim.pods)};
  for (const DraClaim::Device& d : claim.devices) entry.devices.push_back(DraNodeGpus::device_key(d.pool, d.device));
  hold_gpus(entry, true);
  for (const std::string& uid : entry.pods) cover_pod(uid, true);
  claims_.insert_or_assign(std::move(claim.key), std::move(entry));
}

template <>
void ClusterView::upsert<stored::ResourceClaims>(Write, DraClaim claim) {
  std::unique_lock lock(mutex_);
  remove_claim(claim.key);
  set_requested(claim_requests_, claim.key, claim.requested_gpus, claim.tolerations);
  add_claim(std::move(claim));
  reindex_if_names_changed();
}

template <>
void ClusterView::erase<stored::ResourceClaims>(Write, std::string_view key) {
  std::unique_lock lock(mutex_);
  remove_claim(key);
  set_requested(claim_requests_, std::string(key), 0);
  reindex_if_names_changed();
}

template <>
void ClusterView::replace<stored::ResourceClaims>(Write, std::vector<DraClaim> claims) {
  std::unique_lock lock(mutex_);
  while (!claims_.empty()) remove_claim(std::string(claims_.begin()->first));
  claim_requests_.clear();
  for (DraClaim& claim : claims) {
    set_requested(claim_requests_, claim.key, claim.requested_gpus, claim.tolerations);
    add_claim(std::move(claim));
  }
  reindex_if_names_changed();
}

template <>
void ClusterView::upsert<stored::ResourceClaimTemplates>(Write, DraClaim claim_template) {
  std::unique_lock lock(mutex_);
  set_requested(template_requests_, std::move(claim_template.key), claim_template.requested_gpus,
                std::move(claim_template.tolerations));
}

template <>
void ClusterView::erase<stored::ResourceClaimTemplates>(Write, std::string_view key) {
  std::unique_lock lock(mutex_);
  set_requested(template_requests_, std::string(key), 0);
}

template <>
void ClusterView::replace<stored::ResourceClaimTemplates>(Write, std::vector<DraClaim> templates) {
  std::unique_lock lock(mutex_);
  template_requests_.clear();
  for (DraClaim& t : templates)
    set_requested(template_requests_, std::move(t.key), t.requested_gpus, std::move(t.tolerations));
}

int64_t ClusterView::claimed_gpus_of(const PodRequest& pod, std::vector<DeviceToleration>* tolerations) const {
  int64_t gpus = 0;
  std::string key;
  std::shared_lock lock(mutex_);
  for (const PodRequest::ClaimRef& ref : pod.claims) {
    key.assign(pod.ns).append("/").append(ref.claim.empty() ? ref.claim_template : ref.claim);
    const auto& requests = ref.claim.empty() ? template_requests_ : claim_requests_;
    if (auto at = requests.find(key); at != requests.end()) {
      gpus += at->second.gpus;
      if (tolerations) tolerations->insert(tolerations->end(), at->second.tolerations.begin(), at->second.tolerations.end());
    }
  }
  return gpus;
}

ClusterView::DraStats ClusterView::dra_stats() const {
  DraStats out;
  std::shared_lock lock(mutex_);
  out.slices = slice_nodes_.size();
  out.claims = claims_.size();
  for (const auto& [name, entry] : nodes_) {
    out.gpus += static_cast<int64_t>(entry.dra_gpus.gpus.size());
    out.held_gpus += static_cast<int64_t>(entry.held_gpus.size());
    out.unavailable_gpus += entry.dra_counted - static_cast<int64_t>(entry.held_gpus.size());
    if (!entry.dra.empty()) ++out.nodes;
  }
  return out;
}

std::optional<ClusterView::DraNode> ClusterView::dra_node(std::string_view node) const {
  std::shared_lock lock(mutex_);
  auto it = nodes_.find(node);
  if (it == nodes_.end() || (it->second.dra.empty() && it->second.held_gpus.empty())) return std::nullopt;
  DraNode out;
  for (const auto& [name, slice] : it->second.dra) out.slices.push_back(name);
  for (const DraNodeGpus::Gpu& gpu : it->second.dra_gpus.gpus) {
    out.gpus.push_back(gpu.key);
    if (gpu.available() || it->second.held_gpus.contains(gpu.key)) continue;
    std::string why = !gpu.pool_complete ? "its pool is being republished (not all slices of its newest generation listed)"
                      : !gpu.whole       ? "no whole device: in MIG mode (its MIG devices are claimed instead) or vfio only"
                                         : "tainted";
    for (const DeviceTaint& t : gpu.taints)
      why.append(" ").append(t.key).append(t.value.empty() ? "" : "=").append(t.value).append(":").append(t.effect);
    out.unavailable.emplace_back(gpu.key, std::move(why));
  }
  for (const auto& [key, claim] : claims_)
    if (claim.node == node)
      for (const std::string& device : claim.devices) out.held.emplace_back(it->second.dra_gpus.occupied(device), key);
  return out;
}

}  // namespace gpu_extender
