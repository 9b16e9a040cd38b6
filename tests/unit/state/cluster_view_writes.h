#pragma once
// The view's own tests feed its store directly, as the placement ledger does (ClusterView::Write): a
// store is tested without a ledger around it. Everywhere else the ledger is the only writer.
#include "gpu_extender/state/cluster_view.h"

namespace gpu_extender {

struct ClusterViewTestWrites {
  static ClusterView::Write write() { return {}; }
};

// The key for one write of a test: view.upsert<stored::Nodes>(test_write(), node).
inline ClusterView::Write test_write() { return ClusterViewTestWrites::write(); }

}  // namespace gpu_extender
