#include "gpu_extender/policy/policy_holder.h"

namespace gpu_extender {

Status PolicyHolder::replace(std::shared_ptr<const Policy> next) {
  if (!(current()->schema() == next->schema()))
    return Status::failed(
        "the new policy changes resources, labels or annotations; those need a restart (filters, scorers and "
        "weights reload live)");
  current_.store(std::move(next));
  return Status::done();
}

}  // namespace gpu_extender
