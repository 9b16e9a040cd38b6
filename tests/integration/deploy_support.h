#pragma once
// Reading the rendered manifests, shared by the deploy tests: the files rendered from the chart, objects
// by kind and name, container args, and the real binary's dry run on them.
#include <yaml-cpp/yaml.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "../unit/test_support.h"
#include "extender_process.h"

namespace deploy_support {

// What `kubectl apply -f` of a rendered file installs: manifests/gpu-extender.yaml (the chart's defaults,
// TLS off) or, given an example's name, manifests/examples/NAME.yaml (the defaults plus
// charts/gpu-extender/examples/NAME.yaml). scripts/render-manifests.sh renders them from the chart; the
// e2e suite checks they are what Helm renders now.
inline std::vector<YAML::Node> rendered_manifests(const std::string& example = "") {
  const std::string file = example.empty() ? "manifests/gpu-extender.yaml" : "manifests/examples/" + example + ".yaml";
  std::vector<YAML::Node> docs;
  for (const YAML::Node& d : YAML::LoadAllFromFile(test_support::source_path(file)))
    if (d.IsMap()) docs.push_back(d);
  INFO(file);
  REQUIRE(!docs.empty());
  return docs;
}

inline const YAML::Node* find(const std::vector<YAML::Node>& docs, const std::string& kind, const std::string& name_prefix) {
  for (const auto& d : docs)
    if (d["kind"].as<std::string>() == kind && d["metadata"]["name"].as<std::string>().rfind(name_prefix, 0) == 0)
      return &d;
  return nullptr;
}

// Every label a selector's matchLabels asks for is on the Deployment's pods.
inline void check_selects(const YAML::Node& match_labels, const YAML::Node& deployment) {
  for (const auto& kv : match_labels)
    CHECK(deployment["spec"]["template"]["metadata"]["labels"][kv.first.as<std::string>()].as<std::string>() ==
          kv.second.as<std::string>());
}

// A ClusterRoleBinding grants its role to the service account a Deployment's pods run as.
inline void check_binds_service_account(const YAML::Node& binding, const YAML::Node& deployment) {
  CHECK(binding["subjects"][0]["kind"].as<std::string>() == "ServiceAccount");
  CHECK(binding["subjects"][0]["name"].as<std::string>() ==
        deployment["spec"]["template"]["spec"]["serviceAccountName"].as<std::string>());
  CHECK(binding["subjects"][0]["namespace"].as<std::string>() == deployment["metadata"]["namespace"].as<std::string>());
}

// The real binary takes a container's args (`--check-config` dry run), `extra` added. A --policy is
// dropped: a mounted policy's content is checked apart.
inline void check_binary_accepts(const std::vector<std::string>& args, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> dry{"--check-config"};
  for (const std::string& a : args)
    if (a.rfind("--policy=", 0) != 0) dry.push_back(a);
  dry.insert(dry.end(), extra.begin(), extra.end());
  const auto dry_run = test_support::run_binary(dry);
  INFO(dry_run.output);
  CHECK(dry_run.exit_code == 0);
}

inline std::vector<std::string> container_args(const YAML::Node& container) {
  std::vector<std::string> args;
  for (const auto& a : container["args"]) args.push_back(a.as<std::string>());
  return args;
}

inline YAML::Node extender_container(const YAML::Node& deployment) {
  return deployment["spec"]["template"]["spec"]["containers"][0];
}
// The value of --NAME=VALUE among a container's args ("" when absent).
inline std::string arg_value(const YAML::Node& container, const std::string& name) {
  for (const std::string& a : container_args(container))
    if (a.rfind("--" + name + "=", 0) == 0) return a.substr(name.size() + 3);
  return "";
}
// The mount path of the volume that holds `file`, and that volume's secret name ("" when none).
inline std::string secret_holding(const YAML::Node& pod_spec, const YAML::Node& container, const std::string& file) {
  for (const auto& mount : container["volumeMounts"]) {
    const std::string dir = mount["mountPath"].as<std::string>();
    if (file.rfind(dir + "/", 0) != 0) continue;
    for (const auto& volume : pod_spec["volumes"])
      if (volume["name"].as<std::string>() == mount["name"].as<std::string>() && volume["secret"])
        return volume["secret"]["secretName"].as<std::string>();
  }
  return "";
}

}  // namespace deploy_support
