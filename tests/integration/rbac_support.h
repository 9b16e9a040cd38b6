#pragma once
// RBAC as the API server applies it, for the least-privilege tests (rbac_test.cpp,
// rbac_scheduler_lease_test.cpp): a recorded call as the request RBAC authorizes, the rules a rendered
// file binds to a service account, and whether one of them allows a request.
#include <yaml-cpp/yaml.h>

#include <catch2/catch.hpp>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

namespace rbac_support {

// The attributes RBAC authorizes a request by (a resource request; the extender makes no other).
struct Access {
  std::string group, resource, verb, ns, name;  // ns "": cluster-scoped or across all namespaces
  bool operator<(const Access& o) const {
    return std::tie(group, resource, verb, ns, name) < std::tie(o.group, o.resource, o.verb, o.ns, o.name);
  }
  std::string describe() const {
    return verb + " " + (group.empty() ? "core" : group) + "/" + resource + (name.empty() ? "" : " " + name) +
           (ns.empty() ? "" : " in " + ns);
  }
};

inline std::vector<std::string> split(const std::string& text, char by) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, by);)
    if (!part.empty()) parts.push_back(part);
  return parts;
}

// A recorded call ("METHOD /path", " watch" after a watch) as kube-apiserver's request-info resolver
// reads it: /api/v1/... is the core group, /apis/GROUP/VERSION/... another; then optionally
// namespaces/NS, the resource, its name and a subresource. GET of a name is get, of a collection list
// (watch with watch=true), POST create, PUT update, PATCH patch, DELETE delete.
inline Access access_of(const std::string& call) {
  const std::vector<std::string> words = split(call, ' ');
  REQUIRE(words.size() >= 2);
  const std::string& method = words[0];
  const bool watch = words.size() == 3 && words[2] == "watch";
  std::vector<std::string> s = split(words[1], '/');
  INFO(call);
  REQUIRE(s.size() >= 3);
  Access a;
  size_t at = 0;
  if (s[0] == "api") {
    at = 2;
  } else {
    REQUIRE(s[0] == "apis");
    a.group = s[1];
    at = 3;
  }
  std::vector<std::string> rest(s.begin() + static_cast<long>(at), s.end());
  REQUIRE(!rest.empty());
  if (rest[0] == "namespaces" && rest.size() >= 3) {
    a.ns = rest[1];
    rest.erase(rest.begin(), rest.begin() + 2);
  }
  a.resource = rest[0];
  if (rest.size() >= 2) a.name = rest[1];
  if (rest.size() >= 3) a.resource += "/" + rest[2];
  if (method == "GET") a.verb = !a.name.empty() ? "get" : watch ? "watch" : "list";
  else if (method == "POST") a.verb = "create";
  else if (method == "PUT") a.verb = "update";
  else if (method == "PATCH") a.verb = "patch";
  else if (method == "DELETE") a.verb = a.name.empty() ? "deletecollection" : "delete";
  else FAIL("a method RBAC has no verb for: " << call);
  return a;
}

// A rule bound to the extender's account, where it holds: everywhere (a ClusterRoleBinding) or in
// one namespace (a RoleBinding).
struct Grant {
  YAML::Node rule;
  std::string scope;  // "": every namespace and the cluster
  std::string from;   // the role's kind and name
};

inline bool has(const YAML::Node& list, const std::string& value) {
  for (const auto& v : list)
    if (v.as<std::string>() == value || v.as<std::string>() == "*") return true;
  return false;
}

inline bool allows(const Grant& g, const Access& a) {
  if (!g.scope.empty() && g.scope != a.ns) return false;
  if (!has(g.rule["apiGroups"], a.group) || !has(g.rule["resources"], a.resource) || !has(g.rule["verbs"], a.verb))
    return false;
  // resourceNames restrict to requests naming one of them: never a create, list or watch of a collection.
  return !g.rule["resourceNames"] || (!a.name.empty() && has(g.rule["resourceNames"], a.name));
}

inline bool is_subject(const YAML::Node& binding, const std::string& account, const std::string& ns) {
  for (const auto& s : binding["subjects"])
    if (s["kind"].as<std::string>() == "ServiceAccount" && s["name"].as<std::string>() == account &&
        s["namespace"].as<std::string>() == ns)
      return true;
  return false;
}

inline const YAML::Node* named(const std::vector<YAML::Node>& docs, const std::string& kind, const std::string& name,
                               const std::string& ns = "") {
  for (const auto& d : docs)
    if (d["kind"].as<std::string>() == kind && d["metadata"]["name"].as<std::string>() == name &&
        (ns.empty() || d["metadata"]["namespace"].as<std::string>() == ns))
      return &d;
  return nullptr;
}

// Every rule bound to the service account the pods of `deployment` run as, of the roles the file holds;
// the others (the cluster's own, such as system:volume-scheduler) named in `elsewhere`.
inline std::vector<Grant> grants_of(const std::vector<YAML::Node>& docs, const YAML::Node& deployment,
                                    std::set<std::string>& elsewhere) {
  const std::string account = deployment["spec"]["template"]["spec"]["serviceAccountName"].as<std::string>();
  const std::string ns = deployment["metadata"]["namespace"].as<std::string>();
  std::vector<Grant> out;
  for (const auto& b : docs) {
    const std::string kind = b["kind"].as<std::string>();
    if ((kind != "ClusterRoleBinding" && kind != "RoleBinding") || !is_subject(b, account, ns)) continue;
    const std::string role_kind = b["roleRef"]["kind"].as<std::string>();
    const std::string role_name = b["roleRef"]["name"].as<std::string>();
    const std::string scope = kind == "RoleBinding" ? b["metadata"]["namespace"].as<std::string>() : "";
    const YAML::Node* role = named(docs, role_kind, role_name, role_kind == "Role" ? scope : "");
    if (!role) {
      elsewhere.insert(role_kind + " " + role_name);
      continue;
    }
    for (const auto& rule : (*role)["rules"]) out.push_back({rule, scope, role_kind + " " + role_name});
  }
  return out;
}

}  // namespace rbac_support
