#pragma once
// The memory one request works in (body, answer, parser, per-node vectors), reused across requests.
//
// A 5,000-node request is ~54 MB: allocating its buffers afresh each time means faulting in ~13,000
// new pages per request, which on these VMs costs more than parsing them. The pool hands out a
// workspace per request and keeps at most `max_idle` of them (with their capacity) for the next ones,
// so retained memory is bounded by max_idle x the largest request, whatever the concurrency was.
//
// Thread-safe: acquire() may be called from any thread; a workspace is used by one request at a time.
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gpu_extender/cluster_view.h"
#include "gpu_extender/node_source.h"
#include "gpu_extender/policy.h"
#include "gpu_extender/wire.h"
#include "gpu_extender/wire_encode.h"

namespace gpu_extender {

// Names mode: per node slot (see NodeMemo), the verdict the policy gave the node, in the state the
// NodeMemo version names, for a pod with `facts` under `policy`. Reused while all of these hold, so a
// node is judged again only after it changed or for a pod that asks for something else.
struct VerdictMemo {
  std::shared_ptr<const Policy> policy;  // held: a reloaded policy must not reuse this one's address
  PodFacts facts;
  std::vector<uint64_t> judged_version;  // per slot: the NodeMemo version judged; 0: none
  std::vector<NodeVerdict> verdict;
  std::vector<std::string> reason_json;  // the verdict's reason as a JSON string ("" when it passed)
  // Per slot, the raw scores of the per-node scorers (Policy::score_alone, scorer_count() per slot),
  // as of the NodeMemo version in scored_version (0: none) and the live GPU utilisation of that time.
  std::vector<uint64_t> scored_version;
  std::vector<std::optional<double>> scored_live;
  std::vector<double> raw_scores;
  std::vector<double> combined;  // per slot, their weighted mean, when every scorer that applies is per-node
};

struct Workspace {
  std::shared_ptr<const Policy> policy;  // the policy this request uses, even if a reload swaps it
  std::string body;    // the request body, read with kJsonPadding bytes of spare capacity
  std::string answer;  // the response body
  WireDecoder decoder;
  std::vector<NodeInput> inputs;
  std::vector<std::optional<ResourceAmounts>> usage;            // full mode: what inputs[i].used points to
  std::vector<std::shared_ptr<const CachedNode>> cached_nodes;  // preemption: the candidates' nodes
  std::vector<size_t> input_index;                              // node_names[i] -> inputs index or npos
  std::vector<uint32_t> slots;                                  // names mode: node_names[i] -> slot
  std::vector<uint32_t> stale_slots;                            // names mode: slots judged again now
  std::vector<uint32_t> passing_slots;                          // names-mode filter: slots of the names passed
  NodeMemo node_memo;                                           // names mode, kept across requests
  VerdictMemo verdict_memo;                                     // names mode, kept across requests
  std::vector<EncodedVerdict> encoded;                          // names-mode filter: one per node name
  std::vector<const NodeVerdict*> verdict_of;                   // filter: one per node name
  std::vector<NodeVerdict> verdicts;                            // judged for this request only
  std::vector<std::string> reason_json;                         // names mode: reasons of unknown names, as JSON
  std::vector<NodeInput> scored_inputs;  // prioritize: the inputs that pass the filter (names mode: when scored together)
  std::vector<uint32_t> scored_slots;    // names-mode prioritize: the slots that pass the filter
  std::vector<std::optional<double>> scored_live;  // names-mode prioritize: their live GPU utilisation (with --prometheus-url)
  std::vector<NodeInput> stale_inputs;   // names-mode prioritize: scored nodes the memo had no scores for
  std::vector<double> stale_raw, alone, score_scratch;  // names-mode prioritize: raw scores, see score_names
  std::vector<int64_t> scores;           // prioritize: one per node name
  ScoreSheet sheet;
};

class WorkspacePool {
 public:
  explicit WorkspacePool(size_t max_idle);
  // A workspace with empty body and answer; it returns to the pool when the last copy is destroyed.
  std::shared_ptr<Workspace> acquire();
  size_t idle() const;

 private:
  struct State {
    mutable std::mutex mutex;
    std::vector<std::unique_ptr<Workspace>> idle;
    size_t max_idle = 0;
    bool large_idle = false;  // one idle workspace holds buffers of a very large request
  };
  std::shared_ptr<State> state_;
};

}  // namespace gpu_extender
