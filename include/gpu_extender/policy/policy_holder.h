#pragma once
// The policy in force, one holder shared by everything that reads it: the verbs, the policy file
// watcher that replaces it, the deletion-cost writer and the GPU utilisation poller (which read its
// settings at each pass). A reload changes what each of them reads next, at once and alike.
//
// Thread-safe: current() and replace() from any thread; a reader keeps the policy it loaded for as
// long as it holds the pointer, so a request in flight finishes on the policy it started with.
#include <atomic>
#include <memory>

#include "gpu_extender/policy/policy.h"
#include "gpu_extender/common/status.h"

namespace gpu_extender {

class PolicyHolder {
 public:
  explicit PolicyHolder(std::shared_ptr<const Policy> initial) { current_.store(std::move(initial)); }

  std::shared_ptr<const Policy> current() const { return current_.load(); }
  // Swaps in `next` for new readers. Refused when it reads other labels, annotations or resources
  // than the policy in force (its ViewSchema differs): the cluster view and the usage were built with
  // those, so such a change needs a restart. Filters, scorers and weights change live.
  Status replace(std::shared_ptr<const Policy> next);

 private:
  std::atomic<std::shared_ptr<const Policy>> current_;
};

}  // namespace gpu_extender
