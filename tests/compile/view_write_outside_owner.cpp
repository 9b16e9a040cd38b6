// Compiled by tests/compile/check_view_writes.sh, never built: a change of the cluster view made outside
// its owner must not compile (ClusterView::Write), while the same change through the ledger does.
#include "gpu_extender/state/placement_ledger.h"

void write_node(gpu_extender::ClusterView& view, gpu_extender::PlacementLedger& ledger,
                const gpu_extender::NodeView& node) {
#ifdef THROUGH_THE_LEDGER
  (void)view;
  ledger.observe<gpu_extender::stored::Nodes>(node);
#else
  (void)ledger;
  view.upsert<gpu_extender::stored::Nodes>({}, node);  // a Write made outside the ledger: refused
#endif
}
