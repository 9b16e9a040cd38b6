#include "server/service/names_mode.h"

#include <algorithm>

#include "common/json_writer.h"
#include "gpu_extender/usage/gpu_utilization.h"

namespace gpu_extender {

void NamesMode::lookup(const ClusterView& view, const ExtenderArgs& args) {
  snapshot_.update_and_find(view, args.node_names, slots_, args.node_names_json);
  // What the view changed is neither judged nor scored any more (slots past the memo's size are new:
  // reset_if_other_pod sizes them unjudged).
  snapshot_.take_changes([&](uint32_t slot) {
    if (slot < memo_.judged.size()) memo_.judged[slot] = 0;
    if (slot < memo_.scored.size()) memo_.scored[slot] = 0;
  });
}

void NamesMode::reset_if_other_pod(const std::shared_ptr<const Policy>& policy, const PodRequest& pod) {
  if (memo_.policy != policy || !(memo_.facts == pod.facts())) {
    // Another pod (or policy): nothing judged or scored before holds.
    memo_.policy = policy;
    memo_.facts = pod.facts();
    std::fill(memo_.judged.begin(), memo_.judged.end(), 0);
    std::fill(memo_.scored.begin(), memo_.scored.end(), 0);
  }
  const size_t slots = snapshot_.size();
  if (memo_.judged.size() < slots) {
    memo_.judged.resize(slots, 0);
    memo_.verdict.resize(slots);
    memo_.reason_json.resize(slots);
    memo_.passed.resize(slots, 0);
  }
  if (memo_.scored.size() < slots) {
    memo_.scored.resize(slots, 0);
    memo_.scored_live.resize(slots);
    memo_.combined.resize(slots);
  }
}

void NamesMode::judge(const ClusterView& view, const std::shared_ptr<const Policy>& policy, const ExtenderArgs& args) {
  lookup(view, args);
  reset_if_other_pod(policy, args.pod);
  stale_slots_.clear();
  stale_inputs_.clear();
  for (uint32_t slot : slots_) {
    if (slot == ViewSnapshot::kNoSlot || memo_.judged[slot] != 0) continue;
    memo_.judged[slot] = 1;  // also once only for a name sent twice
    stale_slots_.push_back(slot);
    stale_inputs_.push_back(input(slot));
  }
  if (stale_slots_.empty()) return;
  policy->filter(args.pod, stale_inputs_, stale_verdicts_);
  for (size_t k = 0; k < stale_slots_.size(); ++k) {
    const uint32_t slot = stale_slots_[k];
    std::swap(memo_.verdict[slot], stale_verdicts_[k]);  // swapped, not copied: each keeps a reason buffer
    memo_.reason_json[slot].clear();
    memo_.passed[slot] = memo_.verdict[slot].passed() ? 1 : 0;
    if (!memo_.verdict[slot].passed()) append_json_string(memo_.reason_json[slot], memo_.verdict[slot].reason);
  }
}

void NamesMode::read_live(const GpuUtilizationSource* utilization, std::span<const uint32_t> scored) {
  live_.assign(scored.size(), std::nullopt);
  if (!utilization) return;
  const auto now = GpuUtilizationSource::Clock::now();
  for (size_t k = 0; k < scored.size(); ++k) live_[k] = utilization->fresh(snapshot_.node(scored[k])->view().name, now);
}

void NamesMode::score(const PodRequest& pod, const GpuUtilizationSource* utilization, std::span<const uint32_t> scored,
                      ScoreSheet& sheet) {
  const Policy& policy = *memo_.policy;  // judge() has reset the memo for another pod or policy
  const size_t per_slot = policy.scorer_count();
  memo_.raw_scores.resize(memo_.scored.size() * per_slot);
  // Live utilisation (with --prometheus-url) is part of a node's state for gpuIdle: a change scores
  // the node again.
  read_live(utilization, scored);
  const size_t count = scored.size();
  stale_inputs_.clear();
  stale_slots_.clear();
  for (size_t k = 0; k < count; ++k) {
    const uint32_t slot = scored[k];
    // Without a utilisation source every live value is empty: nothing to compare.
    if (memo_.scored[slot] != 0 && (utilization == nullptr || memo_.scored_live[slot] == live_[k])) continue;
    memo_.scored[slot] = 1;  // also once only for a name sent twice
    memo_.scored_live[slot] = live_[k];
    stale_slots_.push_back(slot);
    stale_inputs_.push_back(input(slot));
    stale_inputs_.back().live_gpu_utilization = live_[k];
  }
  const bool alone = policy.scores_nodes_alone(pod);
  if (!stale_inputs_.empty()) {
    stale_raw_.assign(stale_inputs_.size() * per_slot, 0.0);
    policy.score_alone(pod, stale_inputs_, stale_raw_, score_scratch_);
    for (size_t k = 0; k < stale_slots_.size(); ++k) {
      const std::span<const double> raw(stale_raw_.data() + k * per_slot, per_slot);
      const uint32_t slot = stale_slots_[k];
      std::copy(raw.begin(), raw.end(), memo_.raw_scores.begin() + static_cast<std::ptrdiff_t>(slot * per_slot));
      if (alone) memo_.combined[slot] = policy.combine(pod, raw);
    }
  }
  if (alone) {
    // Every scorer that applies scores a node alone: the kept combined scores are the sheet's, and
    // only the scaling (which ranks the nodes together) is done again. sheet.columns are not filled.
    sheet.combined.resize(count);
    for (size_t k = 0; k < count; ++k) sheet.combined[k] = memo_.combined[scored[k]];
    policy.scale(sheet.combined, sheet.final, sheet.order);
    return;
  }
  // A scorer ranks the nodes against one another (resourcePacking): score them all, with the kept
  // raw scores of the others.
  scored_inputs_.clear();
  alone_.resize(count * per_slot);
  for (size_t k = 0; k < count; ++k) {
    const uint32_t slot = scored[k];
    scored_inputs_.push_back(input(slot));
    scored_inputs_.back().live_gpu_utilization = live_[k];
    std::copy_n(memo_.raw_scores.begin() + static_cast<std::ptrdiff_t>(slot * per_slot), per_slot,
                alone_.begin() + static_cast<std::ptrdiff_t>(k * per_slot));
  }
  policy.score(pod, scored_inputs_, sheet, alone_);
}

}  // namespace gpu_extender
