#pragma once
// Names mode (nodeCacheCapable: true): the nodes come from the cluster view by name, and what was
// judged and scored of them is kept from one request to the next, so a node is judged again only once
// it changed or for a pod that asks for something else.
//
// kube-scheduler sends the same nodes pod after pod, and between two pods only the nodes bound to have
// changed; the memos spare the extender the rest (as NodeInfo generations spare the scheduler).
//
// Not thread-safe: one per workspace, used by one request at a time.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpu_extender/policy/policy.h"
#include "gpu_extender/state/cluster_view.h"
#include "gpu_extender/state/view_snapshot.h"
#include "gpu_extender/wire/wire.h"

namespace gpu_extender {

class GpuUtilizationSource;

// Per node slot (see ViewSnapshot), the verdict the policy gave the node in its state of the last lookup,
// for a pod with `facts` under `policy`. Reused while all of these hold: a slot the snapshot reports
// changed (ViewSnapshot::take_changes) is marked not judged, and not scored.
struct VerdictMemo {
  std::shared_ptr<const Policy> policy;  // held: a reloaded policy must not reuse this one's address
  PodFacts facts;
  // Per slot, a byte (read in the request's order, a new one each cycle: bytes stay in cache where
  // versions did not): 1 when `verdict` is the node's verdict in its current state.
  std::vector<uint8_t> judged;
  std::vector<NodeVerdict> verdict;
  std::vector<std::string> reason_json;  // the verdict's reason as a JSON string ("" when it passed)
  // Per slot, whether the verdict passed: a byte a node, read in the request's order (a new one each
  // cycle) where reading the verdict itself was a cache miss a node.
  std::vector<uint8_t> passed;
  // Per slot, the raw scores of the per-node scorers (Policy::score_alone, scorer_count() per slot),
  // valid where `scored` is 1 (the node's current state), with the live GPU utilisation of that time.
  std::vector<uint8_t> scored;
  std::vector<std::optional<double>> scored_live;
  std::vector<double> raw_scores;
  std::vector<double> combined;  // per slot, their weighted mean, when every scorer that applies is per-node
};

class NamesMode {
 public:
  // Reads nodes through `snapshot` (the workspace's), which lookup() brings up to date.
  explicit NamesMode(ViewSnapshot& snapshot) : snapshot_(snapshot) {}
  // Brings the snapshot up to date and looks up args.node_names in it (see slots()), without judging
  // (/explain).
  void lookup(const ClusterView& view, const ExtenderArgs& args);
  // lookup(), then every known node's verdict, judged again only where the node, the pod's facts or
  // the policy changed.
  void judge(const ClusterView& view, const std::shared_ptr<const Policy>& policy, const ExtenderArgs& args);
  // Per name of the last lookup: its slot, ViewSnapshot::kNoSlot where the view has no node by that name.
  const std::vector<uint32_t>& slots() const { return slots_; }
  // The node in `slot` with its usage, as of the last lookup.
  NodeInput input(uint32_t slot) const { return snapshot_.input(slot); }
  // After judge(): the verdict of the node in `slot`, and its reason as a JSON string.
  const NodeVerdict& verdict(uint32_t slot) const { return memo_.verdict[slot]; }
  bool passed(uint32_t slot) const { return memo_.passed[slot] != 0; }
  std::string_view reason_json(uint32_t slot) const { return memo_.reason_json[slot]; }
  // The filter answered `names_json` (the names of `slots`): /prioritize will be sent that very list,
  // which the next lookup then finds by its bytes.
  void remember_answer(std::string_view names_json, std::span<const uint32_t> slots) {
    snapshot_.remember(names_json, slots);
  }
  // After judge(): sheet.final for `scored` (slots that passed), in that order. The per-node scorers'
  // raw scores (and, when only those apply, their weighted mean) are kept by slot and computed only
  // for nodes that changed since (see Policy::score_alone). `utilization`: live GPU utilisation, or null.
  void score(const PodRequest& pod, const GpuUtilizationSource* utilization, std::span<const uint32_t> scored,
             ScoreSheet& sheet);

 private:
  // Brings the memo's per-slot vectors to the node memo's size, and forgets every verdict and score
  // when the pod's facts or the policy differ from those they were made for.
  void reset_if_other_pod(const std::shared_ptr<const Policy>& policy, const PodRequest& pod);
  // The live utilisation of each of `scored` into live_ (empty without a source).
  void read_live(const GpuUtilizationSource* utilization, std::span<const uint32_t> scored);

  ViewSnapshot& snapshot_;  // the workspace's, kept across requests
  VerdictMemo memo_;   // kept across requests
  std::vector<uint32_t> slots_;        // per name of the last lookup
  std::vector<uint32_t> stale_slots_;  // slots judged or scored again in this request
  std::vector<NodeInput> stale_inputs_;
  std::vector<NodeVerdict> stale_verdicts_;
  std::vector<std::optional<double>> live_;  // per scored slot, with --prometheus-url
  std::vector<double> stale_raw_, alone_, score_scratch_;
  std::vector<NodeInput> scored_inputs_;  // when a scorer ranks the nodes together
};

}  // namespace gpu_extender
