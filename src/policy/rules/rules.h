#pragma once
// Constructors of the built-in predicates and scorers, one per file, declared from rule_table.h.
#include <memory>

#include "gpu_extender/policy/policy.h"
#include "rule_table.h"

namespace gpu_extender::rules {

#define GPU_EXTENDER_DECLARE_PREDICATE(name, make) std::unique_ptr<Predicate> make(const PolicyConfig& config);
#define GPU_EXTENDER_DECLARE_SCORER(name, make) std::unique_ptr<Scorer> make(const PolicyConfig& config);
GPU_EXTENDER_PREDICATES(GPU_EXTENDER_DECLARE_PREDICATE)
GPU_EXTENDER_SCORERS(GPU_EXTENDER_DECLARE_SCORER)
#undef GPU_EXTENDER_DECLARE_PREDICATE
#undef GPU_EXTENDER_DECLARE_SCORER

}  // namespace gpu_extender::rules
