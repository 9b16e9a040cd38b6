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

#include "gpu_extender/policy/policy.h"
#include "gpu_extender/state/cluster_view.h"
#include "gpu_extender/state/node_source.h"
#include "gpu_extender/state/placement_ledger.h"
#include "gpu_extender/state/view_snapshot.h"
#include "gpu_extender/wire/wire.h"
#include "gpu_extender/wire/wire_encode.h"
#include "server/service/names_mode.h"

namespace gpu_extender {

// Full mode (and /explain): the request's own node objects, with the usage the extender knows of them.
struct FullModeNodes {
  std::vector<NodeInput> inputs;                     // one per node of the request
  std::vector<std::optional<ResourceAmounts>> usage;  // what inputs[i].used points to
  std::vector<std::string_view> names;               // the nodes' names, to find them in the snapshot
  std::vector<uint32_t> slots;                       // per node, its slot in the snapshot (kNoSlot: none)
};

// /filter's buffers, per node name of the request.
struct FilterScratch {
  std::vector<const NodeVerdict*> verdict_of;  // the verdict of each name (full mode: into verdicts)
  std::vector<NodeVerdict> verdicts;           // full mode: every node's; names mode: unknown names'
  std::vector<std::string> reason_json;        // names mode: the unknown names' reasons, as JSON
  std::vector<EncodedVerdict> encoded;         // names mode: what the answer writes for each name
  std::vector<uint32_t> passing_slots;         // names mode: the slots of the names that passed
};

// /prioritize's buffers.
struct PrioritizeScratch {
  static constexpr size_t kNotScored = static_cast<size_t>(-1);
  std::vector<size_t> place;             // per name: its place among the scored nodes, or kNotScored
  std::vector<NodeVerdict> verdicts;     // full mode: every node's
  std::vector<NodeInput> scored_inputs;  // full mode: the nodes that pass the filter
  std::vector<uint32_t> scored_slots;    // names mode: the slots that pass the filter
  ScoreSheet sheet;
  std::vector<int64_t> scores;           // per name
};

// A group member's verdicts (verbs/group_member.h), per name of the request. Every node outside the
// plan (or every node, when the group is refused) shares one verdict: a member of a planned group is
// judged on its few planned nodes only, not once per node sent.
struct GroupScratch {
  std::vector<NodeInput> candidates;      // the nodes sent with usage, built only when the group is planned now
  NodeVerdict refused;                    // the verdict every node outside the plan shares
  std::string refused_json;               // its reason as JSON
  std::vector<NodeVerdict> planned;       // the planned nodes' own verdicts
  std::vector<std::string> planned_json;  // their reasons as JSON
  std::vector<const NodeVerdict*> verdict_of;  // per name: `refused` or one of `planned`
  std::vector<EncodedVerdict> encoded;    // names mode: what the answer writes for each name
  std::vector<NodeVerdict> verdicts;      // full mode: each name's verdict, as the encoder takes them
  std::vector<NodeVerdict> one;           // the policy's working space for one node
  GroupBook::Admission admission;
};

// One request's memory. Each field means one thing: the verbs' own buffers are theirs alone.
struct Workspace {
  std::shared_ptr<const Policy> policy;  // the policy this request uses, even if a reload swaps it
  std::string body;    // the request body, read with kJsonPadding bytes of spare capacity
  std::string answer;  // the response body
  WireDecoder decoder;
  // What the request reads of the cluster view, brought up to date when it starts judging; kept across
  // requests, so that only what changed since the last one is copied (view_snapshot.h).
  ViewSnapshot snapshot;
  FullModeNodes full;
  NamesMode names{snapshot};  // kept across requests: its memos are what make names mode cheap
  FilterScratch filter;
  PrioritizeScratch prioritize;
  GroupScratch group;
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
