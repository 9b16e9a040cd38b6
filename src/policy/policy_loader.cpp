// Reading the policy file (YAML or JSON) into a PolicyConfig, strictly: unknown keys and wrong types
// are errors that name the file and the key.
#include "common/file_text.h"
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <initializer_list>
#include <set>
#include <string_view>
#include <utility>

#include "gpu_extender/common/build_info.h"
#include "gpu_extender/policy/policy_config.h"

namespace gpu_extender {
namespace {

class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw PolicyError(source_ + ": " + (key.empty() ? "" : key + ": ") + what);
  }

  void only_keys(const YAML::Node& map, const std::string& where, const std::set<std::string>& allowed) const {
    if (!map.IsMap()) fail(where, "expected a mapping");
    std::set<std::string> seen;
    for (const auto& entry : map) {
      const std::string key = entry.first.as<std::string>();
      std::string path = where;
      if (!path.empty()) path += ".";
      path += key;
      // YAML parsers keep one of two equal keys silently; a policy must not lose a setting that way.
      if (!seen.insert(key).second) fail(path, "duplicate key");
      if (!allowed.count(key)) {
        std::string known;
        for (const auto& k : allowed) {
          if (!known.empty()) known += ", ";
          known += k;
        }
        fail(path, "unknown key (known: " + known + ")");
      }
    }
  }

  void string_at(const YAML::Node& map, const char* key, const std::string& where, std::string& out) const {
    const YAML::Node value = map[key];
    if (!value) return;
    if (!value.IsScalar() || value.Scalar().empty()) fail(where + "." + key, "expected a non-empty string");
    out = value.Scalar();
  }

  // One of `choices` (its name in the policy, its value) at map[key], when given; an error names them.
  template <typename Value>
  void choice_at(const YAML::Node& map, const char* key, const std::string& where,
                 std::initializer_list<std::pair<std::string_view, Value>> choices, Value& out) const {
    std::string name;
    string_at(map, key, where, name);
    if (name.empty()) return;
    std::string expected;
    for (const auto& [choice, value] : choices) {
      if (name == choice) {
        out = value;
        return;
      }
      expected += std::string(expected.empty() ? "" : " or ") + std::string(choice);
    }
    fail(where.empty() ? key : where + "." + key, "expected " + expected + ", not \"" + name + "\"");
  }

  // A whole number in [min, max] at map[key], when given.
  template <typename Int>
  void whole_number_at(const YAML::Node& map, const char* key, const std::string& where, Int& out, int64_t min,
                       int64_t max) const {
    const YAML::Node value = map[key];
    if (!value) return;
    const std::string field = where.empty() ? key : where + "." + key;
    int64_t n = 0;
    try {
      n = value.as<int64_t>();
    } catch (const YAML::Exception&) {
      fail(field, "expected a whole number");
    }
    if (n < min || n > max) fail(field, "must be " + std::to_string(min) + ".." + std::to_string(max));
    out = static_cast<Int>(n);
  }

  // One label, or a list of labels in order of precedence (the first one a node carries is read).
  void labels_at(const YAML::Node& map, const char* key, const std::string& where, std::vector<std::string>& out) const {
    const YAML::Node value = map[key];
    if (!value) return;
    const std::string field = where + "." + key;
    if (value.IsScalar()) {
      if (value.Scalar().empty()) fail(field, "expected a label name, or a list of them");
      out = {value.Scalar()};
      return;
    }
    std::vector<std::string> labels = string_list(value, field);
    if (labels.empty() || labels.size() > ViewSchema::kMaxLabelsPerFact)
      fail(field, "expected 1 to " + std::to_string(ViewSchema::kMaxLabelsPerFact) + " label names");
    out = std::move(labels);
  }

  std::vector<std::string> string_list(const YAML::Node& value, const std::string& where) const {
    if (value.IsNull()) return {};
    if (!value.IsSequence()) fail(where, "expected a list");
    std::vector<std::string> out;
    for (size_t i = 0; i < value.size(); ++i) {
      if (!value[i].IsScalar() || value[i].Scalar().empty())
        fail(where + "[" + std::to_string(i) + "]", "expected a non-empty string");
      out.push_back(value[i].Scalar());
    }
    return out;
  }

 private:
  std::string source_;
};

// Section resources: the tracked resources' names, kept in the schema's table.
void apply_resources(const YAML::Node& root, const Reader& in, ViewSchema& schema) {
  std::vector<std::string> names;  // the named roles: gpu, packed, shared memory, shared count, cpu, memory
  for (size_t i = 0; i < ViewSchema::kFirstExcludedResource; ++i) names.push_back(schema.resources.name(i));
  std::vector<std::string> excluded, mig;
  for (size_t i = ViewSchema::kFirstExcludedResource; i < schema.first_mig_resource(); ++i)
    excluded.push_back(schema.resources.name(i));
  for (size_t k = 0; k < schema.mig_profiles(); ++k) mig.push_back(schema.resources.name(schema.mig_resource(k)));

  if (const YAML::Node r = root["resources"]) {
    in.only_keys(r, "resources", {"gpu", "packed", "sharedGpuMemory", "sharedGpuCount", "excluded", "mig"});
    in.string_at(r, "gpu", "resources", names[ViewSchema::kGpuResource]);
    in.string_at(r, "packed", "resources", names[ViewSchema::kPackedResource]);
    in.string_at(r, "sharedGpuMemory", "resources", names[ViewSchema::kSharedGpuMemory]);
    in.string_at(r, "sharedGpuCount", "resources", names[ViewSchema::kSharedGpuCount]);
    if (r["excluded"]) excluded = in.string_list(r["excluded"], "resources.excluded");
    if (r["mig"]) mig = in.string_list(r["mig"], "resources.mig");
  }
  if (excluded.size() > kMaxExcludedResources)
    in.fail("resources.excluded", "at most " + std::to_string(kMaxExcludedResources) + " resources");
  if (mig.size() > kMaxMigProfiles)
    in.fail("resources.mig", "at most " + std::to_string(kMaxMigProfiles) + " MIG profiles");
  std::vector<std::string> all = names;
  all.insert(all.end(), excluded.begin(), excluded.end());
  all.insert(all.end(), mig.begin(), mig.end());
  for (size_t i = 0; i < all.size(); ++i)
    for (size_t j = i + 1; j < all.size(); ++j)
      if (all[i] == all[j]) in.fail("resources", "\"" + all[i] + "\" is named twice");
  schema.set_resources(names, excluded, mig);
}

// Sections nodeLabels, nodeAnnotations and podAnnotations: where the decoders read each fact.
void apply_names(const YAML::Node& root, const Reader& in, ViewSchema& schema) {
  if (const YAML::Node n = root["nodeLabels"]) {
    in.only_keys(n, "nodeLabels", {"gpuModel", "gpuMemory", "gpuCount", "gpuFamily", "gpuReplicas"});
    in.labels_at(n, "gpuModel", "nodeLabels", schema.node_gpu_model_labels);
    in.labels_at(n, "gpuMemory", "nodeLabels", schema.node_gpu_memory_labels);
    in.labels_at(n, "gpuCount", "nodeLabels", schema.node_gpu_count_labels);
    in.labels_at(n, "gpuFamily", "nodeLabels", schema.node_gpu_family_labels);
    in.labels_at(n, "gpuReplicas", "nodeLabels", schema.node_gpu_replicas_labels);
  }
  if (const YAML::Node n = root["nodeAnnotations"]) {
    in.only_keys(n, "nodeAnnotations", {"gpuUtilization"});
    in.string_at(n, "gpuUtilization", "nodeAnnotations", schema.node_gpu_utilization_annotation);
  }
  if (const YAML::Node p = root["podAnnotations"]) {
    in.only_keys(p, "podAnnotations", {"gpuModel", "gpuMemory", "gpuFamily", "placement"});
    in.string_at(p, "placement", "podAnnotations", schema.pod_placement_annotation);
    in.string_at(p, "gpuModel", "podAnnotations", schema.pod_gpu_model_annotation);
    in.string_at(p, "gpuMemory", "podAnnotations", schema.pod_gpu_memory_annotation);
    in.string_at(p, "gpuFamily", "podAnnotations", schema.pod_gpu_family_annotation);
  }
}

// Section dra: which DRA driver publishes GPUs, and which of its attributes and capacities carry each fact
// (dra_inventory.h). NVIDIA's names by default.
void apply_dra(const YAML::Node& root, const Reader& in, ViewSchema& schema) {
  const YAML::Node d = root["dra"];
  if (!d) return;
  in.only_keys(d, "dra", {"driver", "gpuType", "deviceClasses", "attributes", "capacities"});
  if (d["deviceClasses"]) schema.set_dra_gpu_classes(in.string_list(d["deviceClasses"], "dra.deviceClasses"));
  in.string_at(d, "driver", "dra", schema.dra_gpu_driver);
  in.string_at(d, "gpuType", "dra", schema.dra_gpu_type);
  if (const YAML::Node a = d["attributes"]) {
    in.only_keys(a, "dra.attributes", {"model", "architecture", "type", "uuid", "parent"});
    in.string_at(a, "model", "dra.attributes", schema.dra_model_attribute);
    in.string_at(a, "architecture", "dra.attributes", schema.dra_architecture_attribute);
    in.string_at(a, "type", "dra.attributes", schema.dra_type_attribute);
    in.string_at(a, "uuid", "dra.attributes", schema.dra_uuid_attribute);
    in.string_at(a, "parent", "dra.attributes", schema.dra_parent_attribute);
  }
  if (const YAML::Node c = d["capacities"]) {
    in.only_keys(c, "dra.capacities", {"memory"});
    in.string_at(c, "memory", "dra.capacities", schema.dra_memory_capacity);
  }
  if (schema.dra_gpu_driver.empty()) in.fail("dra.driver", "empty");
}

// Sections topology and groups: the network's levels, and the keys that make pods a group (group_plan.h).
void apply_groups(const YAML::Node& root, const Reader& in, ViewSchema& schema) {
  if (const YAML::Node t = root["topology"]) {
    in.only_keys(t, "topology", {"levels"});
    if (t["levels"]) {
      std::vector<std::string> levels = in.string_list(t["levels"], "topology.levels");
      if (levels.size() > kMaxTopologyLevels)
        in.fail("topology.levels", "at most " + std::to_string(kMaxTopologyLevels) + " levels");
      for (size_t i = 0; i < levels.size(); ++i)
        for (size_t j = i + 1; j < levels.size(); ++j)
          if (levels[i] == levels[j]) in.fail("topology.levels", "\"" + levels[i] + "\" is named twice");
      schema.node_topology_labels = std::move(levels);
    }
  }
  if (const YAML::Node g = root["groups"]) {
    in.only_keys(g, "groups",
                 {"nameAnnotations", "nameLabels", "sizeAnnotations", "requiredTopologyAnnotations",
                  "preferredTopologyAnnotations"});
    in.labels_at(g, "nameAnnotations", "groups", schema.pod_group_annotations);
    in.labels_at(g, "nameLabels", "groups", schema.pod_group_labels);
    in.labels_at(g, "sizeAnnotations", "groups", schema.pod_group_size_annotations);
    in.labels_at(g, "requiredTopologyAnnotations", "groups", schema.pod_required_topology_annotations);
    in.labels_at(g, "preferredTopologyAnnotations", "groups", schema.pod_preferred_topology_annotations);
  }
}

// Sections prometheus, sharing, deletionCost, scoreScaling and scoreBaseline.
void apply_settings(const YAML::Node& root, const Reader& in, PolicyConfig& config) {
  if (const YAML::Node n = root["prometheus"]) {
    in.only_keys(n, "prometheus", {"gpuUtilizationQuery"});
    in.string_at(n, "gpuUtilizationQuery", "prometheus", config.gpu_utilization_query);
  }
  if (const YAML::Node n = root["sharing"]) {
    in.only_keys(n, "sharing", {"memoryUnit"});
    in.string_at(n, "memoryUnit", "sharing", config.shared_gpu_memory_unit);
    if (config.shared_gpu_memory_unit != "GiB" && config.shared_gpu_memory_unit != "MiB")
      in.fail("sharing.memoryUnit", "expected GiB or MiB, not \"" + config.shared_gpu_memory_unit + "\"");
  }
  if (const YAML::Node n = root["deletionCost"]) {
    in.only_keys(n, "deletionCost", {"buckets", "maxCost"});
    // Costs are an int32 annotation: maxCost at most its limit; users' own costs keep the rest.
    in.whole_number_at(n, "buckets", "deletionCost", config.deletion_cost.buckets, 1, 100);
    in.whole_number_at(n, "maxCost", "deletionCost", config.deletion_cost.max_cost, 1, 2147483647);
  }
  in.choice_at(root, "scoreScaling", "",
               {std::pair{std::string_view("ordered"), ScoreScaling::kOrdered}, {"proportional", ScoreScaling::kProportional}},
               config.score_scaling);
  in.choice_at(root, "scoreBaseline", "",
               {std::pair{std::string_view("lowest"), ScoreBaseline::kLowest}, {"zero", ScoreBaseline::kZero}},
               config.score_baseline);
}

// Sections filters and scorers: the rules in force, by their names in rules/rule_table.h.
void apply_rules(const YAML::Node& root, const Reader& in, PolicyConfig& config) {
  if (root["filters"]) config.filters = in.string_list(root["filters"], "filters");
  if (const YAML::Node s = root["scorers"]) {
    config.scorers.clear();
    if (!s.IsNull() && !s.IsSequence()) in.fail("scorers", "expected a list of {name, weight}");
    for (size_t i = 0; i < s.size(); ++i) {
      const std::string where = "scorers[" + std::to_string(i) + "]";
      in.only_keys(s[i], where, {"name", "weight"});
      ScorerSpec spec;
      in.string_at(s[i], "name", where, spec.name);
      if (spec.name.empty()) in.fail(where + ".name", "missing");
      in.whole_number_at(s[i], "weight", where, spec.weight, 0, 100);
      config.scorers.push_back(spec);
    }
  }
}

void apply(const YAML::Node& root, const Reader& in, PolicyConfig& config) {
  if (!root || root.IsNull()) return;
  in.only_keys(root, "",
               {"resources", "nodeLabels", "nodeAnnotations", "podAnnotations", "filters", "scorers", "scoreScaling",
                "scoreBaseline", "prometheus", "sharing", "deletionCost", "topology", "groups", "dra"});
  apply_resources(root, in, config.schema);
  apply_names(root, in, config.schema);
  apply_dra(root, in, config.schema);
  apply_groups(root, in, config.schema);
  apply_settings(root, in, config);
  apply_rules(root, in, config);
}

// The settings before any file is read: the names the code knows; the default file sets the rest.
PolicyConfig base_config(std::string source) {
  PolicyConfig config;
  config.schema.set_resources(
      {"nvidia.com/gpu", "custom.resource/aaa", "aliyun.com/gpu-mem", "aliyun.com/gpu-count", "cpu", "memory"}, {}, {});
  config.source = std::move(source);
  return config;
}

PolicyConfig parse_over(PolicyConfig config, std::string_view text) {
  const Reader in(config.source);
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::DeepRecursion& e) {  // yaml-cpp's own bound (its message says only "bad file")
    in.fail("", "not valid YAML or JSON: nested more than " + std::to_string(e.depth() - 1) + " deep (line " +
                    std::to_string(e.mark.line + 1) + ")");
  } catch (const YAML::Exception& e) {
    in.fail("", "not valid YAML or JSON: " + e.msg + " (line " + std::to_string(e.mark.line + 1) + ")");
  }
  try {
    apply(root, in, config);
  } catch (const YAML::Exception& e) {
    in.fail("", e.msg + " (line " + std::to_string(e.mark.line + 1) + ")");
  }
  return config;
}

}  // namespace

PolicyConfig default_policy_config() {
  return parse_over(base_config("embedded default policy"), default_policy_text());
}

PolicyConfig parse_policy(std::string_view text, std::string_view source) {
  // A file overrides the embedded default key by key.
  PolicyConfig defaults = default_policy_config();
  defaults.source = std::string(source);
  return parse_over(std::move(defaults), text);
}

PolicyConfig load_policy_file(const std::string& path) {
  const std::optional<std::string> text = read_file_text(path);
  if (!text) throw PolicyError(path + ": cannot be read");
  return parse_policy(*text, path);
}

}  // namespace gpu_extender
