// Least privilege for the second scheduler: in every rendered file that deploys it, its account holds no
// lease cluster-wide (not the default scheduler's in kube-system, nor anyone's), only its own lease where
// its configuration keeps it, beside what it schedules with (upstream's rules, scheduler-rbac.yaml).
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <set>
#include <string>
#include <vector>

#include "deploy_support.h"
#include "rbac_support.h"

using namespace deploy_support;
using namespace rbac_support;

TEST_CASE("rbac: the second scheduler has no cluster-wide lease rights, only its own lease") {
  for (const std::string& file : {std::string(""), std::string("dra-claims"), std::string("full-mode-groups")}) {
    INFO((file.empty() ? "manifests/gpu-extender.yaml" : "manifests/examples/" + file + ".yaml"));
    const auto docs = rendered_manifests(file);
    const YAML::Node* scheduler = named(docs, "Deployment", "gpu-scheduler");
    const YAML::Node* config_map = named(docs, "ConfigMap", "gpu-scheduler-config");
    REQUIRE((scheduler && config_map));
    const YAML::Node election = YAML::Load((*config_map)["data"]["config.yaml"].as<std::string>())["leaderElection"];
    const std::string lease = election["resourceName"].as<std::string>();
    const std::string lease_ns = election["resourceNamespace"].as<std::string>();
    std::set<std::string> elsewhere;
    const std::vector<Grant> grants = grants_of(docs, *scheduler, elsewhere);
    REQUIRE(!grants.empty());
    // Upstream's roles it is bound to besides: volume binding (PersistentVolumes, their claims,
    // StorageClasses) and the authentication ConfigMap in kube-system; neither holds a lease.
    CHECK(elsewhere == std::set<std::string>{"ClusterRole system:volume-scheduler",
                                             "Role extension-apiserver-authentication-reader"});
    auto granted = [&](const Access& a) {
      return std::any_of(grants.begin(), grants.end(), [&](const Grant& g) { return allows(g, a); });
    };
    for (const auto& b : docs)
      if (b["kind"].as<std::string>() == "ClusterRoleBinding" && is_subject(b, "gpu-scheduler", "gpu-extender"))
        CHECK(b["roleRef"]["name"].as<std::string>() != "system:kube-scheduler");  // it grants kube-system's lease
    // Nothing of coordination.k8s.io everywhere: the default scheduler's lease, or anyone's, is out of reach.
    for (const Grant& g : grants)
      if (g.scope.empty()) {
        INFO(g.from);
        CHECK_FALSE(has(g.rule["apiGroups"], "coordination.k8s.io"));
      }
    for (const char* verb : {"get", "update", "create", "delete"})
      CHECK_FALSE(granted({"coordination.k8s.io", "leases", verb, "kube-system", "kube-scheduler"}));
    // Its own lease: made, read and renewed, where its configuration keeps it; no other lease there.
    CHECK(granted({"coordination.k8s.io", "leases", "create", lease_ns, ""}));
    CHECK(granted({"coordination.k8s.io", "leases", "get", lease_ns, lease}));
    CHECK(granted({"coordination.k8s.io", "leases", "update", lease_ns, lease}));
    CHECK_FALSE(granted({"coordination.k8s.io", "leases", "update", lease_ns, "gpu-extender-deletion-costs"}));
    // What it schedules with stays: binding pods, reading what they use, the DRA allocation.
    CHECK(granted({"", "pods/binding", "create", "ml", "p"}));
    CHECK(granted({"", "nodes", "watch", "", ""}));
    CHECK(granted({"resource.k8s.io", "resourceclaims/status", "update", "ml", "c"}));
  }
}
