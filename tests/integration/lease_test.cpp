// Leader election on a Lease against the fake API server (conditional updates, 409 on a stale
// resourceVersion): one leader at a time, release on stop, takeover after a holder stops renewing.
#include <catch2/catch.hpp>

#include <chrono>
#include <mutex>
#include <optional>

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
  // Past the expiry a's record states (its renewTime plus its duration) before b first reads it: what
  // keeps b from taking the lease at its first read is then b's own clock alone, which counts the
  // lease's duration from when b saw the record (lease_elector.h), not the record's times.
  REQUIRE(eventually([&] {
    const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    return now > test_support::lease_expiry(api, kNs, kLease);
  }));
  // b's requests up to the moment it leads, counted when it starts leading (the callback runs on b's
  // thread, right after the update that took the lease; the fake counts a request as it arrives).
  const size_t requests_before = api.seen_tokens().size();
  std::mutex mutex;
  std::optional<size_t> requests_to_lead;
  std::chrono::steady_clock::time_point led_at;
  kube::LeaseElector b(test_support::api_client_for(api), fast("replica-b"), [&](bool leading) {
    std::lock_guard<std::mutex> lock(mutex);
    if (!leading || requests_to_lead) return;
    requests_to_lead = api.seen_tokens().size() - requests_before;
    led_at = std::chrono::steady_clock::now();
  });
  const auto started = std::chrono::steady_clock::now();
  b.start();
  REQUIRE(eventually([&] {
    std::lock_guard<std::mutex> lock(mutex);
    return requests_to_lead.has_value();  // set once b leads (leader() turns true a moment before)
  }));
  CHECK(b.leader());
  {
    std::lock_guard<std::mutex> lock(mutex);
    // Its first read only noted a's record: the lease was taken by the update after a later read.
    CHECK(*requests_to_lead >= 3);
    // And no sooner than the lease's duration after b started, so after its first read. Neither depends
    // on the machine's speed: b's first read never takes the lease, and a slower machine only makes b
    // lead later.
    CHECK(led_at - started >= fast("replica-b").lease_duration);
  }
  const json after = api.lease("gpu-extender", "gpu-extender-deletion-costs");
  CHECK(after["spec"]["holderIdentity"] == "replica-b");
  CHECK(after["spec"]["leaseTransitions"] == 1);
  CHECK(after["spec"]["acquireTime"] != before["spec"]["acquireTime"]);
  b.stop();
}
