#pragma once
// Every built-in rule, one line each: the name the policy file gives it, and the constructor its own
// file in this folder defines. A new rule is its file, its test (tests/unit/policy/rules/), and one line here;
// the build finds both files by their folder.
//
// X-macros, so that the declarations (rules.h) and the registry (registry.cpp) come from this one list.
#define GPU_EXTENDER_PREDICATES(RULE)                         \
  RULE("gpuModel", make_gpu_model_predicate)                  \
  RULE("gpuMemory", make_gpu_memory_predicate)                \
  RULE("gpuCount", make_gpu_count_predicate)                  \
  RULE("excludedResources", make_excluded_resources_predicate) \
  RULE("packedResourceFit", make_packed_resource_fit_predicate) \
  RULE("gpuShare", make_gpu_share_predicate)

#define GPU_EXTENDER_SCORERS(RULE)                    \
  RULE("gpuFit", make_gpu_fit_scorer)                 \
  RULE("gpuIdle", make_gpu_idle_scorer)               \
  RULE("resourcePacking", make_resource_packing_scorer) \
  RULE("gpuShare", make_gpu_share_scorer)
