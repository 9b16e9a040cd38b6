#include "dra_store.h"

namespace gpu_extender {

DraStore::NodeParts::iterator DraStore::part_for(const std::string& node) { return nodes_.try_emplace(node).first; }

const DraNodePart* DraStore::node(std::string_view name) const {
  if (nodes_.empty()) return nullptr;  // a cluster without DRA pays one branch per node refresh
  auto it = nodes_.find(name);
  return it != nodes_.end() ? &it->second : nullptr;
}

const DraNodePart* DraStore::erase_if_empty(NodeParts::iterator it) {
  if (!it->second.slices.empty() || !it->second.held_devices.empty()) return &it->second;
  nodes_.erase(it);
  return nullptr;
}

void DraStore::recount(DraNodePart& part) {
  // In use: each GPU a claim holds, and each GPU no whole-GPU claim can get (in MIG mode, vfio only, its
  // pool being republished, tainted), once.
  part.held_gpus.clear();
  for (const auto& [device, claims] : part.held_devices) part.held_gpus.insert(part.gpus.occupied(device));
  int64_t in_use = static_cast<int64_t>(part.held_gpus.size());
  for (const DraNodeGpus::Gpu& gpu : part.gpus.gpus)
    if (!gpu.available() && !part.held_gpus.contains(gpu.key)) ++in_use;
  part.in_use = in_use;
}

void DraStore::refresh(DraNodePart& part) {
  part.gpus = DraNodeGpus::of(part.slices, taint_rules_);
  part.summary = DraGpuSummary::of(part.gpus);
  recount(part);
}

void DraStore::refresh_all(DraChanges& out) {
  for (auto& [name, part] : nodes_) {
    if (part.slices.empty()) continue;
    refresh(part);
    out.gpus_changed(name, &part);
  }
}

// --- ResourceSlices: a node's GPUs, where it has any, in place of its labels' and allocatable's ---

void DraStore::remove_slice(std::string_view name, DraChanges& out) {
  auto at = slice_nodes_.find(name);
  if (at == slice_nodes_.end()) return;
  const std::string node = std::move(at->second);
  slice_nodes_.erase(at);
  auto it = nodes_.find(node);
  if (it == nodes_.end()) return;
  if (auto slice = it->second.slices.find(name); slice != it->second.slices.end()) it->second.slices.erase(slice);
  refresh(it->second);
  out.gpus_changed(node, erase_if_empty(it));
}

void DraStore::add_slice(DraSlice slice, DraChanges& out) {
  // Slices of no node, or of another driver, change nothing. A slice of the driver without devices still
  // counts toward its pool's size (a pool's counter sets have a slice of their own).
  if (slice.node.empty() || !slice.of_driver) return;
  DraNodePart& part = part_for(slice.node)->second;
  const std::string& node = slice_nodes_[slice.name] = slice.node;  // stays put: it is the map's
  std::string name = slice.name;
  part.slices.insert_or_assign(std::move(name), std::move(slice));
  refresh(part);
  out.gpus_changed(node, &part);
}

template <>
void DraStore::upsert<stored::ResourceSlices>(DraSlice slice, DraChanges& out) {
  remove_slice(slice.name, out);  // it may have moved to another node
  add_slice(std::move(slice), out);
}

template <>
void DraStore::erase<stored::ResourceSlices>(std::string_view name, DraChanges& out) {
  remove_slice(name, out);
}

template <>
void DraStore::replace<stored::ResourceSlices>(std::vector<DraSlice> slices, DraChanges& out) {
  while (!slice_nodes_.empty()) remove_slice(std::string(slice_nodes_.begin()->first), out);
  for (DraSlice& slice : slices) upsert<stored::ResourceSlices>(std::move(slice), out);
}

// --- DeviceTaintRules: taints on the devices they select, as their slices' own. A rule is rare and may
// select devices on every node: each change refreshes every node with slices. ---

template <>
void DraStore::upsert<stored::DeviceTaintRules>(DraTaintRule rule, DraChanges& out) {
  // Only rules that select devices of the schema's driver are kept; one that selects none, before and
  // after, changes no node.
  const bool had = taint_rules_.erase(rule.name) > 0;
  const bool has = rule.selects_any;
  if (has) {
    std::string name = rule.name;
    taint_rules_.emplace(std::move(name), std::move(rule));
  }
  if (had || has) refresh_all(out);
}

template <>
void DraStore::erase<stored::DeviceTaintRules>(std::string_view name, DraChanges& out) {
  auto at = taint_rules_.find(name);
  if (at == taint_rules_.end()) return;
  taint_rules_.erase(at);
  refresh_all(out);
}

template <>
void DraStore::replace<stored::DeviceTaintRules>(std::vector<DraTaintRule> rules, DraChanges& out) {
  DraTaintRules next;
  for (DraTaintRule& rule : rules)
    if (rule.selects_any) next.insert_or_assign(rule.name, std::move(rule));
  if (next.empty() && taint_rules_.empty()) return;
  taint_rules_ = std::move(next);
  refresh_all(out);
}

// --- ResourceClaims: the GPUs an allocated claim holds count as used on its node, each once however
// many claims share it; a pod the claim is reserved for or owned by no longer counts its own GPU
// request there (a DRA extended-resource pod's nvidia.com/gpu is its claim's devices). ---

void DraStore::set_asked(Asks& asks, std::string key, int64_t gpus, std::vector<DeviceToleration> tolerations) {
  // What a claim or template asks is kept only while it asks GPUs.
  if (gpus > 0) asks.insert_or_assign(std::move(key), ClaimAsk{gpus, std::move(tolerations)});
  else if (auto at = asks.find(key); at != asks.end()) asks.erase(at);
}

void DraStore::cover(const std::string& uid, bool cover, DraChanges& out) {
  auto at = claimed_pods_.find(uid);
  if (cover) {
    if (at == claimed_pods_.end()) at = claimed_pods_.emplace(uid, 0).first;
    if (++at->second > 1) return;
  } else {
    if (at == claimed_pods_.end() || --at->second > 0) return;
    claimed_pods_.erase(at);
  }
  out.covered(uid, cover);
}

void DraStore::hold(const ClaimEntry& claim, bool hold, DraChanges& out) {
  auto it = part_for(claim.node);
  DraNodePart& part = it->second;
  for (const std::string& device : claim.devices) {
    if (hold) {
      ++part.held_devices[device];
    } else if (auto at = part.held_devices.find(device); at != part.held_devices.end() && --at->second == 0) {
      part.held_devices.erase(at);
    }
  }
  recount(part);
  out.holds_changed(claim.node, erase_if_empty(it));
}

void DraStore::remove_claim(std::string_view key, DraChanges& out) {
  auto at = claims_.find(key);
  if (at == claims_.end()) return;
  ClaimEntry claim = std::move(at->second);
  claims_.erase(at);
  for (const std::string& uid : claim.pods) cover(uid, false, out);
  hold(claim, false, out);
}

void DraStore::add_claim(DraClaim claim, DraChanges& out) {
  // Only what holds GPUs on a node counts: an unallocated claim, or one of another driver, holds nothing.
  if (claim.node.empty() || claim.devices.empty()) return;
  ClaimEntry entry{claim.node, {}, std::move(claim.pods)};
  for (const DraClaim::Device& d : claim.devices) entry.devices.push_back(DraNodeGpus::device_key(d.pool, d.device));
  hold(entry, true, out);
  for (const std::string& uid : entry.pods) cover(uid, true, out);
  claims_.insert_or_assign(std::move(claim.key), std::move(entry));
}

template <>
void DraStore::upsert<stored::ResourceClaims>(DraClaim claim, DraChanges& out) {
  remove_claim(claim.key, out);
  set_asked(claim_asks_, claim.key, claim.requested_gpus, claim.tolerations);
  add_claim(std::move(claim), out);
}

template <>
void DraStore::erase<stored::ResourceClaims>(std::string_view key, DraChanges& out) {
  remove_claim(key, out);
  set_asked(claim_asks_, std::string(key), 0);
}

template <>
void DraStore::replace<stored::ResourceClaims>(std::vector<DraClaim> claims, DraChanges& out) {
  while (!claims_.empty()) remove_claim(std::string(claims_.begin()->first), out);
  claim_asks_.clear();
  for (DraClaim& claim : claims) {
    set_asked(claim_asks_, claim.key, claim.requested_gpus, claim.tolerations);
    add_claim(std::move(claim), out);
  }
}

// --- ResourceClaimTemplates: what the claims made from them ask; they hold nothing. ---

template <>
void DraStore::upsert<stored::ResourceClaimTemplates>(DraClaim claim_template, DraChanges&) {
  set_asked(template_asks_, std::move(claim_template.key), claim_template.requested_gpus,
            std::move(claim_template.tolerations));
}

template <>
void DraStore::erase<stored::ResourceClaimTemplates>(std::string_view key, DraChanges&) {
  set_asked(template_asks_, std::string(key), 0);
}

template <>
void DraStore::replace<stored::ResourceClaimTemplates>(std::vector<DraClaim> templates, DraChanges&) {
  template_asks_.clear();
  for (DraClaim& t : templates) set_asked(template_asks_, std::move(t.key), t.requested_gpus, std::move(t.tolerations));
}

// --- reads ---

int64_t DraStore::claimed_gpus_of(const PodRequest& pod, std::vector<DeviceToleration>* tolerations) const {
  int64_t gpus = 0;
  std::string key;
  for (const PodRequest::ClaimRef& ref : pod.claims) {
    key.assign(pod.ns).append("/").append(ref.claim.empty() ? ref.claim_template : ref.claim);
    const Asks& asks = ref.claim.empty() ? template_asks_ : claim_asks_;
    if (auto at = asks.find(key); at != asks.end()) {
      gpus += at->second.gpus;
      if (tolerations) tolerations->insert(tolerations->end(), at->second.tolerations.begin(), at->second.tolerations.end());
    }
  }
  return gpus;
}

DraStats DraStore::stats() const {
  DraStats out;
  out.slices = slice_nodes_.size();
  out.claims = claims_.size();
  for (const auto& [name, part] : nodes_) {
    out.gpus += static_cast<int64_t>(part.gpus.gpus.size());
    out.held_gpus += static_cast<int64_t>(part.held_gpus.size());
    out.unavailable_gpus += part.in_use - static_cast<int64_t>(part.held_gpus.size());
    if (!part.slices.empty()) ++out.nodes;
  }
  return out;
}

std::optional<DraNodeReport> DraStore::report(std::string_view node) const {
  const DraNodePart* part = this->node(node);
  if (part == nullptr || (part->slices.empty() && part->held_gpus.empty())) return std::nullopt;
  DraNodeReport out;
  for (const auto& [name, slice] : part->slices) out.slices.push_back(name);
  for (const DraNodeGpus::Gpu& gpu : part->gpus.gpus) {
    out.gpus.push_back(gpu.key);
    if (gpu.available() || part->held_gpus.contains(gpu.key)) continue;
    std::string why = !gpu.pool_complete ? "its pool is being republished (not all slices of its newest generation listed)"
                      : !gpu.whole       ? "no whole device: in MIG mode (its MIG devices are claimed instead) or vfio only"
                                         : "tainted";
    for (const DeviceTaint& t : gpu.taints)
      why.append(" ").append(t.key).append(t.value.empty() ? "" : "=").append(t.value).append(":").append(t.effect);
    out.unavailable.emplace_back(gpu.key, std::move(why));
  }
  for (const auto& [key, claim] : claims_)
    if (claim.node == node)
      for (const std::string& device : claim.devices) out.held.emplace_back(part->gpus.occupied(device), key);
  return out;
}

}  // namespace gpu_extender
