#pragma once
// The verbs' side of pod groups (group_book.h): a member of a group passes only its group's planned
// nodes with a slot left, and is refused everywhere, with the group's reason, while no domain holds
// the group. Internal to the verbs.
#include "gpu_extender/common/status.h"
#include "server/service/verb_context.h"

namespace gpu_extender::verbs {

enum class GroupJudgement {
  kNotMember,  // a plain pod (or a member past its group's size): the policy alone judges it
  kJudged,     // ws.group holds every name's verdict
};

// Fails when the pod is a member and this extender cannot plan (it has no cluster view), saying so.
Result<GroupJudgement> judge_group_member(const VerbContext& ctx, Workspace& ws, const ExtenderArgs& args);

}  // namespace gpu_extender::verbs
