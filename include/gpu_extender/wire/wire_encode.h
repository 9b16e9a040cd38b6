#pragma once
// Encoding the extender results (k8s.io/kube-scheduler/extender/v1), keys as Go writes them.
// Each function appends to `out`, which callers reuse across requests. Thread-safe: pure functions.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpu_extender/common/verdict.h"
#include "gpu_extender/wire/wire.h"

namespace gpu_extender {

// One node's verdict as the filter answer carries it: its reason already encoded as a JSON string
// (quotes included), so that a reason kept from an earlier request is copied, not escaped again.
struct EncodedVerdict {
  Fit fit = Fit::kPass;
  std::string_view reason_json;
};

// ExtenderFilterResult. Full mode: "Nodes":{"metadata":{},"items":[...]} with each passing node's bytes
// exactly as received, plus "NodeNames". Names mode: "Nodes":null and "NodeNames". `verdicts` are in
// the order of args.node_names. Returns where in `out` the NodeNames array's bytes are ('[' to ']').
struct ByteRange {
  size_t begin = 0, end = 0;
};
ByteRange encode_filter_result(const ExtenderArgs& args, std::span<const EncodedVerdict> verdicts, std::string& out);
// The same from plain verdicts (their reasons are escaped here).
ByteRange encode_filter_result(const ExtenderArgs& args, std::span<const NodeVerdict> verdicts, std::string& out);

// ExtenderFilterResult that fails the pod's scheduling cycle with `error` (the scheduler logs it).
void encode_filter_error(std::string_view error, std::string& out);

// HostPriorityList: [{"Host":"node-a","Score":7},...], the hosts that score 0 left out. kube-scheduler
// adds an extender's scores up by host name (schedule_one.go, prioritizeNodes: combinedScores[host] +=
// score * weight; a host not listed adds nothing), so leaving a 0 out is the same answer, and most of a
// large cluster scores 0 (past the 11th distinct level): 5,000 entries would be ~150 KB to write and for
// the scheduler to decode. `hosts_verbatim`: see ExtenderArgs::names_verbatim.
void encode_host_priorities(std::span<const std::string_view> hosts, std::span<const int64_t> scores,
                            std::string& out, bool hosts_verbatim = false);

// ExtenderPreemptionResult: the candidates with keep[i] set, victims always as UIDs
// (NodeNameToMetaVictims), whichever form came in.
void encode_preemption_result(const PreemptionArgs& args, const std::vector<bool>& keep, std::string& out);

// {"Error":"..."}: the ExtenderBindingResult ("" on success), and the body of every error response.
void encode_error_object(std::string_view error, std::string& out);

}  // namespace gpu_extender
