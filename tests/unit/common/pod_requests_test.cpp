#include <catch2/catch.hpp>

#include "common/pod_requests.h"

using namespace gpu_extender;

namespace {
constexpr size_t kGpu = 0;
ContainerResources container(int64_t request, int64_t limit = -1, bool sidecar = false) {
  ContainerResources c;
  if (request >= 0) c.requests.set(kGpu, request);
  if (limit >= 0) c.limits.set(kGpu, limit);
  c.restartable_init = sidecar;
  return c;
}
int64_t effective(std::vector<ContainerResources> app, std::vector<ContainerResources> init = {},
                  ResourceAmounts overhead = {}) {
  return effective_pod_requests(app, init, overhead).get(kGpu);
}
}  // namespace

TEST_CASE("pod requests: app containers add up") {
  CHECK(effective({container(1000), container(2000)}) == 3000);
}

TEST_CASE("pod requests: a limit stands in for a missing request") {
  CHECK(effective({container(-1, 2000)}) == 2000);
  CHECK(effective({container(1000, 2000)}) == 1000);
  CHECK_FALSE(effective_pod_requests(std::vector<ContainerResources>{container(-1)}, {}, {}).has(kGpu));
}

TEST_CASE("pod requests: the larger of init containers and the app sum") {
  CHECK(effective({container(1000)}, {container(4000)}) == 4000);
  CHECK(effective({container(3000), container(2000)}, {container(4000)}) == 5000);
  CHECK(effective({container(1000)}, {container(2000), container(3000)}) == 3000);
}

TEST_CASE("pod requests: sidecars run beside app containers and later init containers") {
  // sidecar 1 + app 2 = 3; the init step after the sidecar needs 2 + 1 = 3 as well; with 3 it would be 4.
  CHECK(effective({container(2000)}, {container(1000, -1, true), container(2000)}) == 3000);
  CHECK(effective({container(2000)}, {container(1000, -1, true), container(3000)}) == 4000);
  // An init container before the sidecar does not run beside it.
  CHECK(effective({container(1000)}, {container(3000), container(1000, -1, true)}) == 3000);
}

TEST_CASE("pod requests: overhead is added") {
  ResourceAmounts overhead;
  overhead.set(kGpu, 500);
  CHECK(effective({container(1000)}, {}, overhead) == 1500);
}
