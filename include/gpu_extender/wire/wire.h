#pragma once
// Decoding the request bodies kube-scheduler sends (k8s.io/kube-scheduler/extender/v1).
//
// The decoder never builds a tree of the request: it walks the bytes once (simdjson On Demand), keeps
// the byte range of every node object so /filter can echo it untouched, and reads only the fields the
// policy needs (ViewSchema). Keys of the extender types are matched case-insensitively, as Go does.
//
// Not thread-safe: use one WireDecoder per worker thread. Results (and every string_view in them) stay
// valid until the next decode call on the same decoder, and only while the body they came from lives.
#include <cstddef>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "gpu_extender/common/device_taint_rule_view.h"
#include "gpu_extender/common/node_view.h"
#include "gpu_extender/common/pod_request.h"
#include "gpu_extender/common/resource_claim_view.h"
#include "gpu_extender/common/resource_slice_view.h"
#include "gpu_extender/common/view_schema.h"

namespace gpu_extender {

// Bytes the JSON parser may read past the end of a body. A body whose capacity leaves this much room
// is parsed in place; any other is copied once.
inline constexpr size_t kJsonPadding = 64;

// Malformed input: `field` names where (e.g. "Nodes.items[3].status.allocatable.nvidia.com/gpu").
class DecodeError : public std::runtime_error {
 public:
  DecodeError(std::string field, const std::string& message);
  const std::string& field() const { return field_; }
  const std::string& reason() const { return reason_; }
  // Adds an outer path segment: "items[3]" + "status" -> "items[3].status".
  DecodeError& within(std::string_view outer);

 private:
  std::string field_;
  std::string reason_;
};

// ExtenderArgs: the body of /filter and /prioritize.
struct ExtenderArgs {
  PodRequest pod;
  bool full_mode = false;                   // Nodes.items given (nodeCacheCapable: false)
  std::vector<NodeView> nodes;              // full mode
  std::vector<std::string_view> node_names; // names mode (nodeCacheCapable: true)
  // Every name is also its own JSON encoding (no escapes, no control characters; the parser has
  // checked the UTF-8): answers copy names instead of escaping them again. Names mode only.
  bool names_verbatim = false;
  // Names mode, kube-scheduler's plain body: the NodeNames array's bytes ('[' to ']'), "" otherwise.
  std::string_view node_names_json;
};

// metadata of a Kubernetes list (one page of it).
struct ListMeta {
  std::string resource_version;
  std::string continue_token;  // non-empty: more pages to read
};

// One line of a watch stream: {"type":"ADDED|MODIFIED|DELETED|BOOKMARK|ERROR","object":{...}}.
struct WatchEventHeader {
  std::string type;
  std::string resource_version;  // of the object (BOOKMARK: the new position)
  int error_code = 0;            // ERROR: the Status code (410: too old, relist)
  std::string error_message;
};

// ExtenderPreemptionArgs: the body of /preempt. Victims come as whole pods (decoded to their
// requests) or as UIDs only (NodeNameToMetaVictims), to be resolved through the pod view.
struct PreemptionCandidate {
  std::string_view node;
  struct Victim {
    std::string_view uid;
    std::optional<ResourceAmounts> requests;  // known when the victim came as a whole pod
    std::string_view node_name;
  };
  std::vector<Victim> victims;
  int64_t pdb_violations = 0;
};
struct PreemptionArgs {
  PodRequest pod;
  bool meta_victims = false;
  std::vector<PreemptionCandidate> candidates;
};

// The most nodes one ExtenderArgs may name (Nodes.items or NodeNames): four times the largest
// cluster Kubernetes supports, so that per-node state stays bounded whatever the body holds.
inline constexpr size_t kMaxNodesPerRequest = 20000;

// ExtenderBindingArgs: the body of /bind.
struct BindingArgs {
  std::string pod_name;
  std::string pod_namespace;
  std::string pod_uid;
  std::string node;
};

class WireDecoder {
 public:
  WireDecoder();
  ~WireDecoder();
  WireDecoder(const WireDecoder&) = delete;
  WireDecoder& operator=(const WireDecoder&) = delete;

  // Frees the parsers' buffers when they were sized for a body above `keep_bytes`. Their indexes take
  // up to 4 bytes per body byte (a body dense with small values touches all of them): kept for the
  // next request, one 90 MB body would hold half a gigabyte. True when something was freed.
  bool release_buffers_above(size_t keep_bytes);

  // Throws DecodeError on malformed input.
  // Mutable, so that a caller may complete the pod with what the body does not say (its claims' GPUs).
  ExtenderArgs& decode_extender_args(const std::string& body, const ViewSchema& schema);
  BindingArgs decode_binding_args(const std::string& body);
  // The watched kinds, one generic pair (kube_objects_decoder.cpp): a list page (`kubectl get pods -A -o
  // json`, or a page of an API list), calling `each` for every item and returning the list's metadata;
  // and one watch event line, whose object (ADDED/MODIFIED/DELETED) is decoded into `object`. Objects:
  // PodRequest, NodeView, ResourceSliceView, ResourceClaimView, ResourceClaimTemplateView,
  // DeviceTaintRuleView (the kinds that read no schema ignore it).
  template <typename Object>
  ListMeta decode_list(const std::string& body, const ViewSchema& schema, const std::function<void(const Object&)>& each);
  template <typename Object>
  WatchEventHeader decode_event(std::string_view line, const ViewSchema& schema, Object& object);
  // A single Pod object (GET .../pods/NAME).
  PodRequest decode_pod_object(const std::string& body, const ViewSchema& schema);
  PreemptionArgs& decode_preemption_args(const std::string& body, const ViewSchema& schema);

  struct Impl;  // the parser and buffers; defined in src/wire, opaque elsewhere

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpu_extender
