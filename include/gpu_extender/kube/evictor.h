#pragma once
// Evicting a pod through the Eviction API (POST .../pods/NAME/eviction), which honours the pod's
// PodDisruptionBudgets and its graceful termination, and saying so on the pod (an Event). What group
// preemption (kube/group_preemptor.h) evicts with. Thread-safe.
#include <string>

#include "gpu_extender/policy/group_preemption.h"

namespace gpu_extender {

class Evictor {
 public:
  virtual ~Evictor() = default;
  enum class Outcome {
    kEvicted,        // the eviction was accepted (dry run: it would be)
    kGone,           // the pod no longer exists, or was replaced (its UID differs): nothing to evict
    kBudgetRefused,  // a PodDisruptionBudget allows no disruption now, or several select the pod
    kFailed,         // anything else (forbidden, the API server unreachable): `why`
  };
  struct Result {
    Outcome outcome = Outcome::kEvicted;
    std::string why;
  };
  // `dry_run`: the API server checks everything (budgets included) and evicts nothing.
  virtual Result evict(const PreemptionVictim& victim, bool dry_run) = 0;
  // An Event on the victim, reason Preempted, as kube-scheduler records one on the pods it preempts.
  virtual void record_preempted(const PreemptionVictim& victim, const std::string& message) = 0;
};

}  // namespace gpu_extender
