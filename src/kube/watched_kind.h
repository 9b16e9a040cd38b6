#pragma once
// One kind of object the extender watches, as the generic Reflector (reflector.h) drives it: where its
// collection is, how a list page and a watch event line are decoded, and what the cluster state does
// with them. Each kind is one traits struct in watched_kinds.cpp (client-go's informer: one reflector,
// a store per type), so a new kind is one entry there plus its decoder (wire.h) and its store (a tag in
// state/stored_kinds.h and the view's three writers of it), and the order in which a kind's events reach
// the view and the ledger lives in one place.
//
// Not thread-safe: each instance belongs to the one thread of its Reflector.
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "gpu_extender/state/cluster_view.h"
#include "gpu_extender/state/placement_ledger.h"
#include "gpu_extender/wire/wire.h"

namespace gpu_extender::kube {

// What a kind's objects are applied to, and where one that makes no sense is reported (counted and
// logged, at most once a minute, by the reflector: `what` names the object, `why` says what is wrong).
struct WatchTarget {
  std::shared_ptr<ClusterView> view;
  std::shared_ptr<PlacementLedger> ledger;
  ViewSchema schema;
  std::function<void(std::string_view what, std::string_view why)> not_understood;
};

class WatchedKind {
 public:
  virtual ~WatchedKind() = default;
  virtual const char* name() const = 0;  // the collection, in logs and metrics: "pods"
  virtual const char* path() const = 0;  // the collection's path with the query's start
  // The API group, when only some servers serve it ("resource.k8s.io": 1.34+, or DRA turned off): a 404
  // then means "none", not a failure. Empty for the core kinds.
  virtual const char* optional_group() const = 0;
  // One page of a list, added to what the list has given so far. Throws DecodeError.
  virtual ListMeta decode_page(WireDecoder& decoder, const std::string& body) = 0;
  // The whole list replaces what the state holds of this kind (none: the server serves no such kind);
  // returns how many objects it held.
  virtual size_t replace_with_list() = 0;
  virtual void discard_list() = 0;
  // One watch event line, applied. Throws DecodeError.
  virtual WatchEventHeader apply_event(WireDecoder& decoder, std::string_view line) = 0;
};

// The kinds the extender watches. Pods are those on a node (pending pods hold nothing).
enum class Watched { kNodes, kPods, kResourceSlices, kResourceClaims, kResourceClaimTemplates, kDeviceTaintRules };
std::unique_ptr<WatchedKind> make_watched_kind(Watched kind, WatchTarget target);

}  // namespace gpu_extender::kube
