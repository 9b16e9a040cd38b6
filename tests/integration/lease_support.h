#pragma once
// Reading Leases in tests: MicroTimes, and whether a holder has kept a lease past its duration.
#include <catch2/catch.hpp>
#include <cstdio>
#include <ctime>
#include <string>

#include "fake_api_server.h"

namespace test_support {

// A MicroTime ("2026-12-01T10:00:00.123456Z") in seconds since the epoch.
inline double micro_time_seconds(const std::string& t) {
  std::tm tm{};
  double fraction = 0;
  REQUIRE(std::sscanf(t.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%lfZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                      &tm.tm_min, &tm.tm_sec, &fraction) == 7);
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<double>(timegm(&tm)) + fraction;
}

// The holder has renewed the lease for longer than `times` its duration (its own renewTime and
// acquireTime say so): a rival had every chance to take it had the holder stopped renewing.
inline bool renewed_past_duration(const FakeApiServer& api, const std::string& ns, const std::string& name,
                                  double times = 1) {
  const json lease = api.lease(ns, name);
  if (lease.is_null()) return false;
  const json& spec = lease["spec"];
  return micro_time_seconds(spec["renewTime"]) - micro_time_seconds(spec["acquireTime"]) >
         times * spec["leaseDurationSeconds"].get<double>();
}

// When the lease, as last renewed, expires (seconds since the epoch).
inline double lease_expiry(const FakeApiServer& api, const std::string& ns, const std::string& name) {
  const json spec = api.lease(ns, name)["spec"];
  return micro_time_seconds(spec["renewTime"]) + spec["leaseDurationSeconds"].get<double>();
}

}  // namespace test_support
