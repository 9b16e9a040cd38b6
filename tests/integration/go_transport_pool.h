#pragma once
// The connections kube-scheduler keeps to an extender, as its Go transport keeps them: one pool for
// every verb of every goroutine (the scheduling cycle's /filter and /prioritize, the binding cycles'
// /bind), each request on an idle connection when there is one (the one used last: Go's idle list is
// taken from its end), else on a new one, and given back after its answer; at most two idle kept, a
// connection given back while two are idle closed.
//
// Why two: kube-scheduler 1.26 builds its extender transport as `utilnet.SetTransportDefaults(&http.
// Transport{...})` (pkg/scheduler/extender.go makeTransport), which sets no MaxIdleConnsPerHost, so
// net/http's DefaultMaxIdleConnsPerHost (2) holds. With a bind in flight beside each cycle's requests,
// that closes connections all the time: on the real control plane a 500-pod burst opened ~100 (strace
// of the extender: 102 accept, 100 close), where a stand-in that kept one connection per thread opened
// none and so never paid for accepting them.
//
// Thread-safe. The clients (and their 1 MB answer buffers) are kept for reuse; closing one closes
// its socket only.
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "raw_http_client.h"

namespace test_support {

class GoTransportPool {
 public:
  static constexpr size_t kMaxIdleConnsPerHost = 2;  // net/http DefaultMaxIdleConnsPerHost

  GoTransportPool(std::string host, int port, std::chrono::milliseconds read_timeout)
      : host_(std::move(host)), port_(port), read_timeout_(read_timeout) {}

  // One request's connection: given back to the pool when the lease ends.
  class Lease {
   public:
    Lease(GoTransportPool& pool, std::unique_ptr<RawHttpClient> client) : pool_(pool), client_(std::move(client)) {}
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease() { pool_.give_back(std::move(client_)); }
    RawHttpClient& operator*() const { return *client_; }
    RawHttpClient* operator->() const { return client_.get(); }

   private:
    GoTransportPool& pool_;
    std::unique_ptr<RawHttpClient> client_;
  };

  Lease take() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!idle_.empty()) {
      auto client = std::move(idle_.back());
      idle_.pop_back();
      return Lease(*this, std::move(client));
    }
    ++dials_;  // a closed client, connected by its first request
    if (closed_.empty()) {
      closed_.push_back(std::make_unique<RawHttpClient>(host_, port_, "/", ""));
      closed_.back()->set_read_timeout(read_timeout_);
    }
    auto client = std::move(closed_.back());
    closed_.pop_back();
    return Lease(*this, std::move(client));
  }

  // Connections opened so far (each new one a request found no idle connection for).
  size_t dials() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return dials_;
  }

 private:
  void give_back(std::unique_ptr<RawHttpClient> client) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (client->connected() && idle_.size() < kMaxIdleConnsPerHost) {
      idle_.push_back(std::move(client));
      return;
    }
    client->disconnect();  // errTooManyIdleHost: Go closes it
    closed_.push_back(std::move(client));
  }

  const std::string host_;
  const int port_;
  const std::chrono::milliseconds read_timeout_;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<RawHttpClient>> idle_;    // connected, oldest first
  std::vector<std::unique_ptr<RawHttpClient>> closed_;  // not connected, kept for their buffers
  size_t dials_ = 0;
};

}  // namespace test_support
