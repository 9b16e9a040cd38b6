#pragma once
// The policy file: which labels, annotations and resources to read, which filters to run and how to
// weigh the scorers. YAML or JSON (JSON is YAML). Every key is optional and defaults to the embedded
// default (extender-config/policy.yaml); unknown keys are errors, so a typo never passes silently.
// Thread-safe: parsing is a pure function; a PolicyConfig is a value.
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "gpu_extender/common/view_schema.h"

namespace gpu_extender {

// A policy that cannot be loaded; what() names the file and the key.
class PolicyError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ScorerSpec {
  std::string name;
  int weight = 1;
};

// How the weighted mean of the scorers (0..100) becomes the scheduler's 0..10 (score_scaling.h).
enum class ScoreScaling {
  kOrdered,       // a strictly better node stays strictly above a worse one, however close
  kProportional,  // best node 10, the others in proportion (kube-scheduler's NormalizeScore)
};

// What /prioritize answers for the nodes it was sent (prioritize.cpp).
enum class ScoreBaseline {
  // Every node's score less the lowest of the request's: kube-scheduler adds an extender's score to
  // every node's total, so the same amount taken from every node ranks none differently, and the nodes
  // at the lowest then score 0 and are left out of the answer (to the scheduler, 0). A burst of pods
  // on 5,000 equal nodes is answered with a few entries instead of 5,000 it decodes pod after pod.
  kLowest,
  kZero,  // the scaled scores as they are: every node above 0 listed
};

// Pod deletion costs (deletion_cost.h), kept with --deletion-costs.
struct DeletionCostPolicy {
  int buckets = 10;         // fullness 0..1 in this many steps; full is bucket `buckets`
  int64_t max_cost = 1000;  // the cost of a pod on a full node; costs are bucket x max_cost / buckets
};

struct PolicyConfig {
  ViewSchema schema;
  std::vector<std::string> filters;
  std::vector<ScorerSpec> scorers;
  ScoreScaling score_scaling = ScoreScaling::kOrdered;
  ScoreBaseline score_baseline = ScoreBaseline::kLowest;
  // PromQL for live GPU utilisation (with --prometheus-url): per node, percent 0..100.
  std::string gpu_utilization_query;
  // GPU sharing: the unit of the shared GPU memory resource, as the device plugin reports it (GiB, or
  // MiB with its -memory-unit MiB). Amounts are counted as they are; the unit names them in messages.
  std::string shared_gpu_memory_unit = "GiB";
  DeletionCostPolicy deletion_cost;
  std::string source;  // where it came from: a path, or "embedded default"
};

// Parses policy text; `source` names it in errors. Throws PolicyError.
PolicyConfig parse_policy(std::string_view text, std::string_view source);
// Reads and parses a policy file. Throws PolicyError.
PolicyConfig load_policy_file(const std::string& path);
// The embedded default policy.
PolicyConfig default_policy_config();

}  // namespace gpu_extender
