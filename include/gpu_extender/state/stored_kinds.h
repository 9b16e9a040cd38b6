#pragma once
// The kinds of object the cluster view stores as the watch reports them, and nothing in flight waits
// for: one tag each, naming what an event gives the view (Object) and what a list keeps of one (Listed).
// The view's writers (ClusterView::upsert, erase, replace) and the ledger's (PlacementLedger::observe,
// observe_deleted, observe_list) are templates over these tags, so a new kind is a tag here, its store
// (for a DRA kind, in the view's DRA store: src/state/dra_store.h), its decoder (wire.h) and its traits entry
// (kube/watched_kinds.cpp), and nothing in between.
//
// Pods are not one of them: their events also confirm what the ledger holds in flight, so the ledger
// applies them itself (PlacementLedger::observe_pod).
#include <memory>

#include "gpu_extender/common/node_view.h"
#include "gpu_extender/state/dra_inventory.h"

namespace gpu_extender {

class CachedNode;  // node_source.h

namespace stored {

// A full list also marks the nodes synced (ClusterView::ready).
struct Nodes {
  using Object = NodeView;
  using Listed = std::shared_ptr<const CachedNode>;
};
// A kind whose list keeps what its events give.
template <typename T>
struct KeptAsGiven {
  using Object = T;
  using Listed = T;
};
// Keyed by name.
struct ResourceSlices : KeptAsGiven<DraSlice> {};
// Keyed "namespace/name".
struct ResourceClaims : KeptAsGiven<DraClaim> {};
// Keyed "namespace/name"; what the claims made from them ask (DraClaim::of a template).
struct ResourceClaimTemplates : KeptAsGiven<DraClaim> {};
// Keyed by name.
struct DeviceTaintRules : KeptAsGiven<DraTaintRule> {};

}  // namespace stored
}  // namespace gpu_extender
