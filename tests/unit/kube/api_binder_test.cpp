// The binder's bodies: the v1.Binding it posts.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "kube/api_binder.h"

using namespace gpu_extender;

TEST_CASE("binding: the v1.Binding body") {
  BindingArgs args{"p", "ns", "uid-1", "node-a"};
  const auto binding = nlohmann::json::parse(kube::binding_json(args));
  CHECK(binding == nlohmann::json::parse(
                       R"({"apiVersion":"v1","kind":"Binding","metadata":{"name":"p","namespace":"ns","uid":"uid-1"},
                           "target":{"apiVersion":"v1","kind":"Node","name":"node-a"}})"));
}
