// The kinds the extender watches (watched_kind.h), one traits struct each: its collection, its decoder,
// what a list keeps of an object, and how the cluster state takes a list, an object and a deletion.
#include <vector>

#include "gpu_extender/common/quantity.h"
#include "watched_kind.h"

namespace gpu_extender::kube {
namespace {

// Drives one kind through its traits: a list's objects are kept until the list is whole, then replace
// the state's; an event's object is applied as it comes.
template <typename Traits>
class KindOf final : public WatchedKind {
 public:
  explicit KindOf(WatchTarget target) : target_(std::move(target)) {}
  const char* name() const override { return Traits::kName; }
  const char* path() const override { return Traits::kPath; }
  const char* optional_group() const override { return Traits::kOptionalGroup; }
  ListMeta decode_page(WireDecoder& decoder, const std::string& body) override {
    return Traits::decode_list(decoder, body, target_.schema, [&](const typename Traits::Object& object) {
      Traits::check(object, target_);
      Traits::keep(object, target_, listed_);
    });
  }
  size_t replace_with_list() override {
    const size_t count = listed_.size();
    Traits::replace(listed_, target_);
    listed_.clear();
    return count;
  }
  void discard_list() override { listed_.clear(); }
  WatchEventHeader apply_event(WireDecoder& decoder, std::string_view line) override {
    typename Traits::Object object;
    WatchEventHeader header = Traits::decode_event(decoder, line, target_.schema, object);
    if (header.type == "ADDED" || header.type == "MODIFIED") {
      Traits::check(object, target_);
      Traits::upsert(object, target_);
    } else if (header.type == "DELETED") {
      Traits::remove(object, target_);
    }
    return header;
  }

 private:
  WatchTarget target_;
  std::vector<typename Traits::Kept> listed_;
};

template <typename Object>
using Each = std::function<void(const Object&)>;

std::string key_of(const ResourceClaimView& claim) { return std::string(claim.ns) + "/" + std::string(claim.name); }

// Only pods on a node hold resources there: "spec.nodeName!=" keeps pending pods out of the view.
struct Pods {
  static constexpr const char* kName = "pods";
  static constexpr const char* kPath = "/api/v1/pods?fieldSelector=spec.nodeName%21%3D";
  static constexpr const char* kOptionalGroup = "";
  using Object = PodRequest;
  using Kept = ClusterView::BoundPod;
  static ListMeta decode_list(WireDecoder& d, const std::string& body, const ViewSchema& s, const Each<Object>& each) {
    return d.decode_pod_list(body, s, each);
  }
  static WatchEventHeader decode_event(WireDecoder& d, std::string_view line, const ViewSchema& s, Object& pod) {
    return d.decode_pod_event(line, s, pod);
  }
  static void check(const Object& pod, const WatchTarget& t) {
    if (!pod.invalid_reason.empty()) t.not_understood("pod " + std::string(pod.ns) + "/" + std::string(pod.name), pod.invalid_reason);
  }
  static void keep(const Object& pod, const WatchTarget& t, std::vector<Kept>& listed) {
    if (pod.node_name.empty() || pod.terminated() || pod.uid.empty()) return;
    listed.push_back({std::string(pod.uid), std::string(pod.node_name), pod.requests, t.view->cost_details_of(pod),
                      PendingPod::member_of(pod)});
    t.view->add_claimed_gpus(pod, listed.back().requests);
    listed.back().victim = t.view->victim_details_of(pod, listed.back().requests);
  }
  static void replace(std::vector<Kept>& listed, const WatchTarget& t) {
    t.ledger->observe_relist(listed);  // the view and the assumptions, in one step
    t.ledger->observe_pods_synced();
  }
  static void upsert(Object& pod, const WatchTarget& t) {
    // A bound pod asking through claims holds their GPUs before their allocation may show (another
    // watch); the view stops counting them once a claim reserved for it holds the devices.
    if (!pod.node_name.empty()) t.view->add_claimed_gpus(pod, pod.requests);
    t.ledger->observe_pod(pod);  // the view and the assumption, in one step
  }
  static void remove(const Object& pod, const WatchTarget& t) { t.ledger->observe_deleted(pod.uid); }
};

struct Nodes {
  static constexpr const char* kName = "nodes";
  static constexpr const char* kPath = "/api/v1/nodes?";
  static constexpr const char* kOptionalGroup = "";
  using Object = NodeView;
  using Kept = std::shared_ptr<const CachedNode>;
  static ListMeta decode_list(WireDecoder& d, const std::string& body, const ViewSchema& s, const Each<Object>& each) {
    return d.decode_node_list(body, s, each);
  }
  static WatchEventHeader decode_event(WireDecoder& d, std::string_view line, const ViewSchema& s, Object& node) {
    return d.decode_node_event(line, s, node);
  }
  // A node label that makes no sense (a memory label "lots") is said once; what could be read counts.
  static void check(const Object& node, const WatchTarget& t) {
    std::string error;
    if (node.gpu_memory && !parse_mebibytes(*node.gpu_memory, &error)) {
      t.not_understood("node " + std::string(node.name),
                       "label " + t.schema.node_gpu_memory_labels[node.gpu_memory_label] + ": " + error);
      return;
    }
    if (!node.gpu_count) return;
    if (const QuantityParse count = parse_quantity(*node.gpu_count); !count.milli)
      t.not_understood("node " + std::string(node.name),
                       "label " + t.schema.node_gpu_count_labels[node.gpu_count_label] + ": " + count.error);
  }
  static void keep(const Object& node, const WatchTarget&, std::vector<Kept>& listed) {
    listed.push_back(CachedNode::copy_of(node));
  }
  static void replace(std::vector<Kept>& listed, const WatchTarget& t) {
    t.ledger->observe_node_list(listed);
    t.ledger->observe_nodes_synced();
  }
  static void upsert(const Object& node, const WatchTarget& t) { t.ledger->observe_node(node); }
  static void remove(const Object& node, const WatchTarget& t) { t.ledger->observe_node_deleted(node.name); }
};

struct ResourceSlices {
  static constexpr const char* kName = "resourceslices";
  static constexpr const char* kPath = "/apis/resource.k8s.io/v1/resourceslices?";
  static constexpr const char* kOptionalGroup = "resource.k8s.io";
  using Object = ResourceSliceView;
  using Kept = DraSlice;
  static ListMeta decode_list(WireDecoder& d, const std::string& body, const ViewSchema& s, const Each<Object>& each) {
    return d.decode_resource_slice_list(body, s, each);
  }
  static WatchEventHeader decode_event(WireDecoder& d, std::string_view line, const ViewSchema& s, Object& slice) {
    return d.decode_resource_slice_event(line, s, slice);
  }
  static void check(const Object& slice, const WatchTarget& t) {
    if (!slice.invalid_reason.empty()) t.not_understood("resourceslice " + std::string(slice.name), slice.invalid_reason);
  }
  static void keep(const Object& slice, const WatchTarget& t, std::vector<Kept>& listed) {
    listed.push_back(DraSlice::of(slice, t.schema));
  }
  static void replace(std::vector<Kept>& listed, const WatchTarget& t) { t.ledger->observe_slice_list(std::move(listed)); }
  static void upsert(const Object& slice, const WatchTarget& t) { t.ledger->observe_slice(DraSlice::of(slice, t.schema)); }
  static void remove(const Object& slice, const WatchTarget& t) { t.ledger->observe_slice_deleted(slice.name); }
};

struct ResourceClaims {
  static constexpr const char* kName = "resourceclaims";
  static constexpr const char* kPath = "/apis/resource.k8s.io/v1/resourceclaims?";
  static constexpr const char* kOptionalGroup = "resource.k8s.io";
  using Object = ResourceClaimView;
  using Kept = DraClaim;
  static ListMeta decode_list(WireDecoder& d, const std::string& body, const ViewSchema&, const Each<Object>& each) {
    return d.decode_resource_claim_list(body, each);
  }
  static WatchEventHeader decode_event(WireDecoder& d, std::string_view line, const ViewSchema&, Object& claim) {
    return d.decode_resource_claim_event(line, claim);
  }
  // A claim the scheduler allocated on a node has a node selector naming it; one holding devices of the
  // GPU driver without it (devices of several nodes) is counted on no node, and said so.
  static void check(const Object& claim, const WatchTarget& t) {
    if (claim.results.empty() || !claim.node.empty()) return;
    for (const DraResultView& r : claim.results)
      if (r.driver == t.schema.dra_gpu_driver) {
        t.not_understood("resourceclaim " + key_of(claim),
                         "holds " + t.schema.dra_gpu_driver + " devices but its allocation names no single node");
        return;
      }
  }
  static void keep(const Object& claim, const WatchTarget& t, std::vector<Kept>& listed) {
    listed.push_back(DraClaim::of(claim, t.schema));
  }
  static void replace(std::vector<Kept>& listed, const WatchTarget& t) { t.ledger->observe_claim_list(std::move(listed)); }
  static void upsert(const Object& claim, const WatchTarget& t) { t.ledger->observe_claim(DraClaim::of(claim, t.schema)); }
  static void remove(const Object& claim, const WatchTarget& t) { t.ledger->observe_claim_deleted(key_of(claim)); }
};

struct ResourceClaimTemplates {
  static constexpr const char* kName = "resourceclaimtemplates";
  static constexpr const char* kPath = "/apis/resource.k8s.io/v1/resourceclaimtemplates?";
  static constexpr const char* kOptionalGroup = "resource.k8s.io";
  using Object = ResourceClaimView;  // its spec.spec's requests
  using Kept = DraClaim;
  static ListMeta decode_list(WireDecoder& d, const std::string& body, const ViewSchema&, const Each<Object>& each) {
    return d.decode_resource_claim_template_list(body, each);
  }
  static WatchEventHeader decode_event(WireDecoder& d, std::string_view line, const ViewSchema&, Object& claim_template) {
    return d.decode_resource_claim_template_event(line, claim_template);
  }
  static void check(const Object&, const WatchTarget&) {}
  static void keep(const Object& claim_template, const WatchTarget& t, std::vector<Kept>& listed) {
    listed.push_back(DraClaim::of(claim_template, t.schema));
  }
  static void replace(std::vector<Kept>& listed, const WatchTarget& t) {
    t.ledger->observe_claim_template_list(std::move(listed));
  }
  static void upsert(const Object& claim_template, const WatchTarget& t) {
    t.ledger->observe_claim_template(DraClaim::of(claim_template, t.schema));
  }
  static void remove(const Object& claim_template, const WatchTarget& t) {
    t.ledger->observe_claim_template_deleted(key_of(claim_template));
  }
};

// resource.k8s.io/v1 DeviceTaintRules (GA and on by default in 1.37; alpha and beta before, in other
// versions of the group, off by default: a 1.34-1.36 server answers 404 here and no rule applies).
struct DeviceTaintRules {
  static constexpr const char* kName = "devicetaintrules";
  static constexpr const char* kPath = "/apis/resource.k8s.io/v1/devicetaintrules?";
  static constexpr const char* kOptionalGroup = "resource.k8s.io";
  using Object = DeviceTaintRuleView;
  using Kept = DraTaintRule;
  static ListMeta decode_list(WireDecoder& d, const std::string& body, const ViewSchema&, const Each<Object>& each) {
    return d.decode_device_taint_rule_list(body, each);
  }
  static WatchEventHeader decode_event(WireDecoder& d, std::string_view line, const ViewSchema&, Object& rule) {
    return d.decode_device_taint_rule_event(line, rule);
  }
  static void check(const Object&, const WatchTarget&) {}
  static void keep(const Object& rule, const WatchTarget& t, std::vector<Kept>& listed) {
    listed.push_back(DraTaintRule::of(rule, t.schema));
  }
  static void replace(std::vector<Kept>& listed, const WatchTarget& t) { t.ledger->observe_taint_rule_list(std::move(listed)); }
  static void upsert(const Object& rule, const WatchTarget& t) { t.ledger->observe_taint_rule(DraTaintRule::of(rule, t.schema)); }
  static void remove(const Object& rule, const WatchTarget& t) { t.ledger->observe_taint_rule_deleted(rule.name); }
};

}  // namespace

std::unique_ptr<WatchedKind> make_watched_kind(Watched kind, WatchTarget target) {
  switch (kind) {
    case Watched::kNodes: return std::make_unique<KindOf<Nodes>>(std::move(target));
    case Watched::kPods: return std::make_unique<KindOf<Pods>>(std::move(target));
    case Watched::kResourceSlices: return std::make_unique<KindOf<ResourceSlices>>(std::move(target));
    case Watched::kResourceClaims: return std::make_unique<KindOf<ResourceClaims>>(std::move(target));
    case Watched::kResourceClaimTemplates: return std::make_unique<KindOf<ResourceClaimTemplates>>(std::move(target));
    case Watched::kDeviceTaintRules: return std::make_unique<KindOf<DeviceTaintRules>>(std::move(target));
  }
  return nullptr;
}

}  // namespace gpu_extender::kube
