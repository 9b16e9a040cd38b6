// What group preemption reads of a pod: spec.priority (as the Priority admission plugin writes it from
// the pod's PriorityClass) and spec.preemptionPolicy; bad values name their field.
#include <catch2/catch.hpp>

#include "gpu_extender/policy/group_preemption.h"
#include "gpu_extender/policy/policy_config.h"
#include "gpu_extender/wire/wire.h"

using namespace gpu_extender;

namespace {
// The pod's views point into `body`: the caller keeps it while reading them.
PodRequest decode(WireDecoder& decoder, const std::string& spec, std::string& body) {
  body = R"({"metadata":{"name":"p","namespace":"ns","uid":"u1",)"
                           R"("annotations":{"controller.kubernetes.io/pod-deletion-cost":"-7"}},)"
                           R"("spec":{"nodeName":"n1","containers":[{"name":"c","resources":{"requests":)"
                           R"({"nvidia.com/gpu":"2"}}}],)" +
                           spec + "}}";
  return decoder.decode_pod_object(body, default_policy_config().schema);
}
}  // namespace

TEST_CASE("pod decode: priority and preemptionPolicy, as the API server writes them") {
  WireDecoder decoder;
  std::string body;
  PodRequest pod = decode(decoder, R"("priority":1000000,"priorityClassName":"training","preemptionPolicy":"PreemptLowerPriority")", body);
  CHECK(pod.priority == 1000000);
  CHECK_FALSE(pod.never_preempts);
  const auto victim = preemption_victim_of(pod, pod.requests);
  REQUIRE(victim);
  CHECK(victim->priority == 1000000);
  CHECK(victim->deletion_cost == -7);
  CHECK(victim->node == "n1");
  CHECK(victim->ns == "ns");

  pod = decode(decoder, R"("priority":-5,"preemptionPolicy":"Never")", body);
  CHECK(pod.priority == -5);
  CHECK(pod.never_preempts);
  pod = decode(decoder, R"("priority":null)", body);
  CHECK(pod.priority == 0);
  // A pod holding no GPU is no victim worth keeping.
  CHECK_FALSE(preemption_victim_of(pod, ResourceAmounts{}));
}

TEST_CASE("pod decode: a priority out of range or of another type names its field") {
  WireDecoder decoder;
  std::string body;
  auto error_of = [&](const std::string& spec) {
    try {
      decode(decoder, spec, body);
    } catch (const DecodeError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(error_of(R"("priority":3000000000)").find("priority") != std::string::npos);
  CHECK(error_of(R"("priority":"high")").find("priority") != std::string::npos);
  CHECK(error_of(R"("preemptionPolicy":7)").find("preemptionPolicy") != std::string::npos);
}
