#pragma once
// Constructors of the built-in predicates and scorers, one per file; the registry maps names to them.
#include <memory>

#include "gpu_extender/policy.h"

namespace gpu_extender::rules {

std::unique_ptr<Predicate> make_gpu_model_predicate(const PolicyConfig& config);
std::unique_ptr<Predicate> make_gpu_memory_predicate(const PolicyConfig& config);
std::unique_ptr<Predicate> make_gpu_count_predicate(const PolicyConfig& config);
std::unique_ptr<Predicate> make_excluded_resources_predicate(const PolicyConfig& config);
std::unique_ptr<Predicate> make_packed_resource_fit_predicate(const PolicyConfig& config);
std::unique_ptr<Predicate> make_gpu_share_predicate(const PolicyConfig& config);

std::unique_ptr<Scorer> make_gpu_fit_scorer(const PolicyConfig& config);
std::unique_ptr<Scorer> make_gpu_idle_scorer(const PolicyConfig& config);
std::unique_ptr<Scorer> make_resource_packing_scorer(const PolicyConfig& config);
std::unique_ptr<Scorer> make_gpu_share_scorer(const PolicyConfig& config);

}  // namespace gpu_extender::rules
