// The kinds the extender watches (watched_kind.h), one traits struct each: its collection, the object
// its decoder reads (WireDecoder::decode_list and decode_event of that object), what is said of an object
// that makes no sense, and what the cluster state keeps of one.
#include <vector>

#include "gpu_extender/common/quantity.h"
#include "watched_kind.h"

namespace gpu_extender::kube {
namespace {

// What a list keeps of each object until it is whole (see KindOf).
template <typename Traits>
struct ListedOf {
  using type = typename Traits::Kept;
};
template <typename Traits>
  requires requires { typename Traits::Stored; }
struct ListedOf<Traits> {
  using type = typename Traits::Stored::Listed;
};

// Drives one kind through its traits: a list's objects are kept until the list is whole, then replace
// the state's; an event's object is applied as it comes. A kind only the view keeps names its tag
// (Stored, stored_kinds.h), what the view keeps of an object (stored_of, and listed_of where a list
// keeps something else) and the key its deletion names (key_of), and reaches the view through the
// ledger's generic writers. Pods name what a list keeps (Kept) and their own keep, replace, upsert
// and remove: their events also confirm what the ledger holds in flight.
template <typename Traits>
class KindOf final : public WatchedKind {
 public:
  explicit KindOf(WatchTarget target) : target_(std::move(target)) {}
  const char* name() const override { return Traits::kName; }
  const char* path() const override { return Traits::kPath; }
  const char* optional_group() const override { return Traits::kOptionalGroup; }
  ListMeta decode_page(WireDecoder& decoder, const std::string& body) override {
    return decoder.decode_list<Object>(body, target_.schema, [&](const Object& object) {
      Traits::check(object, target_);
      keep(object);
    });
  }
  size_t replace_with_list() override {
    const size_t count = listed_.size();
    if constexpr (kStored) target_.ledger->template observe_list<typename Traits::Stored>(std::move(listed_));
    else Traits::replace(listed_, target_);
    listed_.clear();
    return count;
  }
  void discard_list() override { listed_.clear(); }
  WatchEventHeader apply_event(WireDecoder& decoder, std::string_view line) override {
    Object object;
    WatchEventHeader header = decoder.decode_event<Object>(line, target_.schema, object);
    if (header.type == "ADDED" || header.type == "MODIFIED") {
      Traits::check(object, target_);
      if constexpr (kStored) target_.ledger->template observe<typename Traits::Stored>(Traits::stored_of(object, target_));
      else Traits::upsert(object, target_);
    } else if (header.type == "DELETED") {
      if constexpr (kStored) target_.ledger->template observe_deleted<typename Traits::Stored>(Traits::key_of(object));
      else Traits::remove(object, target_);
    }
    return header;
  }

 private:
  using Object = typename Traits::Object;
  static constexpr bool kStored = requires { typename Traits::Stored; };
  void keep(const Object& object) {
    if constexpr (!kStored) Traits::keep(object, target_, listed_);
    else if constexpr (requires { Traits::listed_of(object, target_); }) listed_.push_back(Traits::listed_of(object, target_));
    else listed_.push_back(Traits::stored_of(object, target_));  // the same for a list as for an event
  }
  WatchTarget target_;
  std::vector<typename ListedOf<Traits>::type> listed_;
};

// Only pods on a node hold resources there: "spec.nodeName!=" keeps pending pods out of the view.
struct Pods {
  static constexpr const char* kName = "pods";
  static constexpr const char* kPath = "/api/v1/pods?fieldSelector=spec.nodeName%21%3D";
  static constexpr const char* kOptionalGroup = "";
  using Object = PodRequest;
  using Kept = ClusterView::BoundPod;
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
  static void remove(const Object& pod, const WatchTarget& t) { t.ledger->observe_pod_deleted(pod.uid); }
};

struct Nodes {
  static constexpr const char* kName = "nodes";
  static constexpr const char* kPath = "/api/v1/nodes?";
  static constexpr const char* kOptionalGroup = "";
  using Object = NodeView;
  using Stored = stored::Nodes;
  // A node label that makes no sense (a memory label "lots") is said once; what could be read counts.
  static void check(const Object& node, const WatchTarget& t) {
    if (node.gpu_memory)
      if (const Result<int64_t> mib = parse_mebibytes(*node.gpu_memory); !mib.ok()) {
        t.not_understood("node " + std::string(node.name),
                         "label " + t.schema.node_gpu_memory_labels[node.gpu_memory_label] + ": " + mib.why());
        return;
      }
    if (!node.gpu_count) return;
    if (const QuantityParse count = parse_quantity(*node.gpu_count); !count.milli)
      t.not_understood("node " + std::string(node.name),
                       "label " + t.schema.node_gpu_count_labels[node.gpu_count_label] + ": " + count.error);
  }
  static const NodeView& stored_of(const Object& node, const WatchTarget&) { return node; }
  static Stored::Listed listed_of(const Object& node, const WatchTarget&) { return CachedNode::copy_of(node); }
  static std::string_view key_of(const Object& node) { return node.name; }
};

struct ResourceSlices {
  static constexpr const char* kName = "resourceslices";
  static constexpr const char* kPath = "/apis/resource.k8s.io/v1/resourceslices?";
  static constexpr const char* kOptionalGroup = "resource.k8s.io";
  using Object = ResourceSliceView;
  using Stored = stored::ResourceSlices;
  static void check(const Object& slice, const WatchTarget& t) {
    if (!slice.invalid_reason.empty()) t.not_understood("resourceslice " + std::string(slice.name), slice.invalid_reason);
  }
  static DraSlice stored_of(const Object& slice, const WatchTarget& t) { return DraSlice::of(slice, t.schema); }
  static std::string_view key_of(const Object& slice) { return slice.name; }
};

struct ResourceClaims {
  static constexpr const char* kName = "resourceclaims";
  static constexpr const char* kPath = "/apis/resource.k8s.io/v1/resourceclaims?";
  static constexpr const char* kOptionalGroup = "resource.k8s.io";
  using Object = ResourceClaimView;
  using Stored = stored::ResourceClaims;
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
  static DraClaim stored_of(const Object& claim, const WatchTarget& t) { return DraClaim::of(claim, t.schema); }
  static std::string key_of(const Object& claim) { return std::string(claim.ns) + "/" + std::string(claim.name); }
};

struct ResourceClaimTemplates {
  static constexpr const char* kName = "resourceclaimtemplates";
  static constexpr const char* kPath = "/apis/resource.k8s.io/v1/resourceclaimtemplates?";
  static constexpr const char* kOptionalGroup = "resource.k8s.io";
  using Object = ResourceClaimTemplateView;
  using Stored = stored::ResourceClaimTemplates;
  static void check(const Object&, const WatchTarget&) {}
  static DraClaim stored_of(const Object& claim_template, const WatchTarget& t) {
    return DraClaim::of(claim_template, t.schema);
  }
  static std::string key_of(const Object& claim_template) { return ResourceClaims::key_of(claim_template); }
};

// resource.k8s.io/v1 DeviceTaintRules (GA and on by default in 1.37; alpha and beta before, in other
// versions of the group, off by default: a 1.34-1.36 server answers 404 here and no rule applies).
struct DeviceTaintRules {
  static constexpr const char* kName = "devicetaintrules";
  static constexpr const char* kPath = "/apis/resource.k8s.io/v1/devicetaintrules?";
  static constexpr const char* kOptionalGroup = "resource.k8s.io";
  using Object = DeviceTaintRuleView;
  using Stored = stored::DeviceTaintRules;
  static void check(const Object&, const WatchTarget&) {}
  static DraTaintRule stored_of(const Object& rule, const WatchTarget& t) { return DraTaintRule::of(rule, t.schema); }
  static std::string_view key_of(const Object& rule) { return rule.name; }
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
