// PlacementLedger's calls for the kinds only the view keeps (placement_ledger.h, "the watch"): each is
// the view's call of that name, made with the ledger's Write, so that every change of the cluster state
// goes through its one owner. No ledger lock: nothing the ledger holds depends on these kinds, and the
// view's own lock makes each call atomic for the verbs.
#include "gpu_extender/state/placement_ledger.h"

namespace gpu_extender {

void PlacementLedger::observe_pods_synced() { view_->mark_pods_synced(ClusterView::Write{}); }

void PlacementLedger::observe_node(const NodeView& node) { view_->upsert_node(ClusterView::Write{}, node); }
void PlacementLedger::observe_node_deleted(std::string_view name) { view_->delete_node(ClusterView::Write{}, name); }
void PlacementLedger::observe_node_list(const std::vector<std::shared_ptr<const CachedNode>>& nodes) {
  view_->replace_nodes(ClusterView::Write{}, nodes);
}
void PlacementLedger::observe_nodes_synced() { view_->mark_nodes_synced(ClusterView::Write{}); }

void PlacementLedger::observe_slice(DraSlice slice) { view_->upsert_slice(ClusterView::Write{}, std::move(slice)); }
void PlacementLedger::observe_slice_deleted(std::string_view name) { view_->delete_slice(ClusterView::Write{}, name); }
void PlacementLedger::observe_slice_list(std::vector<DraSlice> slices) {
  view_->replace_slices(ClusterView::Write{}, std::move(slices));
}

void PlacementLedger::observe_claim(DraClaim claim) { view_->upsert_claim(ClusterView::Write{}, std::move(claim)); }
void PlacementLedger::observe_claim_deleted(std::string_view key) { view_->delete_claim(ClusterView::Write{}, key); }
void PlacementLedger::observe_claim_list(std::vector<DraClaim> claims) {
  view_->replace_claims(ClusterView::Write{}, std::move(claims));
}

void PlacementLedger::observe_claim_template(DraClaim claim_template) {
  view_->upsert_claim_template(ClusterView::Write{}, std::move(claim_template));
}
void PlacementLedger::observe_claim_template_deleted(std::string_view key) {
  view_->delete_claim_template(ClusterView::Write{}, key);
}
void PlacementLedger::observe_claim_template_list(std::vector<DraClaim> templates) {
  view_->replace_claim_templates(ClusterView::Write{}, std::move(templates));
}

void PlacementLedger::observe_taint_rule(DraTaintRule rule) {
  view_->upsert_taint_rule(ClusterView::Write{}, std::move(rule));
}
void PlacementLedger::observe_taint_rule_deleted(std::string_view name) {
  view_->delete_taint_rule(ClusterView::Write{}, name);
}
void PlacementLedger::observe_taint_rule_list(std::vector<DraTaintRule> rules) {
  view_->replace_taint_rules(ClusterView::Write{}, std::move(rules));
}

void PlacementLedger::observe_heard() { view_->touch(ClusterView::Write{}); }

}  // namespace gpu_extender
