// Leader election on a Lease against the fake API server (conditional updates, 409 on a stale
// resourceVersion): one leader at a time, release on stop, takeover after a holder stops renewing.
#include <catch2/catch.hpp>

#include "../unit/test_support.h"
#include "api_client_support.h"
#include "fake_api_server.h"
#include "lease_support.h"
#include "kube/lease_elector.h"

using namespace gpu_extender;
using nlohmann::json;
using test_support::eventually;
using test_support::FakeApiServer;

namespace {

const std::string kNs = "gpu-extender", kLease = "gpu-extender-deletion-costs";

kube::LeaseConfig fast(const std::string& identity) {
  using std::chrono::milliseconds;
  return {"gpu-extender", "gpu-extender-deletion-costs", identity, milliseconds(1500), milliseconds(1000),
          milliseconds(100)};
}

}  // namespace

TEST_CASE("lease: one leader at a time, released on stop, taken over by the other") {
  FakeApiServer api;
  std::atomic<int> changes{0};
  kube::LeaseElector a(test_support::api_client_for(api), fast("replica-a"), [&](bool) { ++changes; });
  kube::LeaseElector b(test_support::api_client_for(api), fast("replica-b"));
  a.start();
  REQUIRE(eventually([&] { return a.leader(); }));
  b.start();
  // b keeps trying while a holds the lease past its duration twice over (a's renewals say so): a
  // renews, so b never leads.
  REQUIRE(eventually([&] {
    CHECK_FALSE((a.leader() && b.leader()));
    return test_support::renewed_past_duration(api, kNs, kLease, 2);
  }));
  CHECK(a.leader());
  CHECK_FALSE(b.leader());
  const json held = api.lease("gpu-extender", "gpu-extender-deletion-costs");
  CHECK(held["spec"]["holderIdentity"] == "replica-a");
  CHECK(held["spec"]["leaseDurationSeconds"] == 1);

  // a stops and releases: b takes over without waiting for the lease to expire.
  const auto released = std::chrono::steady_clock::now();
  a.stop();
  CHECK_FALSE(a.leader());
  CHECK(changes == 2);  // gained, then lost
  REQUIRE(eventually([&] { return b.leader(); }));
  INFO("takeover after release in ms: "
       << std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - released).count());
  const json taken = api.lease("gpu-extender", "gpu-extender-deletion-costs");
  CHECK(taken["spec"]["holderIdentity"] == "replica-b");
  CHECK(taken["spec"]["leaseTransitions"] == 0);  // the lease was free when b took it
  b.stop();
}

TEST_CASE("lease: a holder that stops renewing (a crash) is taken over once the lease expires") {
  FakeApiServer api;
  kube::LeaseElector a(test_support::api_client_for(api), fast("replica-a"));
  a.start();
  REQUIRE(eventually([&] { return a.leader(); }));
  a.stop(false);  // gone without releasing, as a killed process
  const json before = api.lease("gpu-extender", "gpu-extender-deletion-costs");
  REQUIRE(before["spec"]["holderIdentity"] == "replica-a");
  kube::LeaseElector b(test_support::api_client_for(api), fast("replica-b"));
  const size_t requests_before = api.seen_tokens().size();
  b.start();
  // b has read the lease (its first request) while the lease is still a's: it must not take it.
  REQUIRE(eventually([&] { return api.seen_tokens().size() > requests_before; }));
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  if (now < test_support::lease_expiry(api, kNs, kLease)) CHECK_FALSE(b.leader());
  else WARN("the machine was too slow to see b try within the lease's duration");
  REQUIRE(eventually([&] { return b.leader(); }));
  const json after = api.lease("gpu-extender", "gpu-extender-deletion-costs");
  CHECK(after["spec"]["holderIdentity"] == "replica-b");
  CHECK(after["spec"]["leaseTransitions"] == 1);
  CHECK(after["spec"]["acquireTime"] != before["spec"]["acquireTime"]);
  b.stop();
}
