#pragma once
// A fake Kubernetes API server for tests, as strict as kube-apiserver where the extender could tell:
// - lists with metadata.resourceVersion, paginated with limit/continue, every page read at the first
//   page's version (410 Expired for a continue token older than the compaction);
// - newline-delimited WatchEvent streams filtered as the watch cache filters them: with a field
//   selector, ADDED when an object starts to match and DELETED when it stops; BOOKMARKs (empty objects
//   with a resourceVersion) only with allowWatchBookmarks=true; a compacted resourceVersion is a 200
//   with one ERROR event carrying a 410 Expired Status;
// - field selectors with =, == and !=, on the fields each kind supports (400 for any other);
// - GET of a pod; POST .../binding answering 201, 400 (a Binding for another pod than the URL's), 404
//   and 409 as the real one does; POST .../eviction (see evictions()) and .../events; PATCH of a pod with a JSON merge patch (metadata.uid immutable);
// - Leases: create; PUT only with the current resourceVersion (409 Conflict otherwise, 422 without
//   one), a PUT of a missing Lease creates it; spec.renewTime and acquireTime must be MicroTime.
// Faults on demand: failing binds, dropped watch streams, ERROR events, slow answers, split lines.
#include <httplib.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace test_support {

using nlohmann::json;

// A self-signed certificate for 127.0.0.1, made once per test process with the openssl command.
struct TestCertificate {
  std::string dir, cert_file, key_file;
  static const TestCertificate& get();
};

// One term of a field selector: field=value (or ==), or field!=value.
struct FieldTerm {
  std::string field, value;
  bool negated = false;
};

class FakeApiServer {
 public:
  FakeApiServer();
  ~FakeApiServer();

  int port() const { return port_; }
  std::string url() const { return "https://127.0.0.1:" + std::to_string(port_); }

  // The flags that point a gpu-extender at this server: its URL, its CA, and a token file holding
  // "test-token" (written once, removed with the server).
  std::vector<std::string> extender_args();
  // A kubeconfig (server, CA, token) for this server, written next to the token file; its path.
  std::string write_kubeconfig();

  // Tokens the server accepts (others get 401).
  void accept_tokens(std::set<std::string> tokens);

  // Objects. Each change gets the next resourceVersion and an event for watchers.
  void put_node(json node);
  void delete_node(const std::string& name);
  void put_pod(json pod);
  void delete_pod(const std::string& ns, const std::string& name);
  // DRA (resource.k8s.io/v1) ResourceSlices and ResourceClaims: the first put makes the server serve the
  // group (404 before). Claims are keyed "namespace/name", slices by name.
  void put_resource_slice(json slice) { put_dra("resourceslices", std::move(slice)); }
  void delete_resource_slice(const std::string& name) { delete_dra("resourceslices", name); }
  void put_device_taint_rule(json rule) { put_dra("devicetaintrules", std::move(rule)); }
  void delete_device_taint_rule(const std::string& name) { delete_dra("devicetaintrules", name); }
  void put_resource_claim(json claim) { put_dra("resourceclaims", std::move(claim)); }
  void delete_resource_claim(const std::string& key) { delete_dra("resourceclaims", key); }
  void put_resource_claim_template(json t) { put_dra("resourceclaimtemplates", std::move(t)); }
  static const char* kind_of(const std::string& resource);  // "pods" -> "Pod", ...
  json pod(const std::string& ns, const std::string& name) const;
  std::vector<json> nodes() const;
  std::vector<json> pods() const;

  // Faults.
  void fail_next_binds(int count, int status);  // then behave normally
  void fail_next_patches(int count, int status);  // then behave normally
  int patches() const;                            // pod patches applied
  json lease(const std::string& ns, const std::string& name) const;  // null when there is none
  void forbid_binds(bool forbid);               // 403
  void silent_binds(bool silent);               // bind without emitting a watch event
  void drop_watches();                          // end every open watch stream abruptly
  void send_error_event(int code);              // an ERROR event on every open watch, then close it
  void compact();                               // history before now is gone: old versions get 410
  void send_bookmarks();
  int bookmarks_sent() const;       // BOOKMARK events written to watch streams so far
  uint64_t resource_version() const;  // of the last change
  // Each list answered this late; only lists of `resource` ("pods", "resourceclaimtemplates") when named.
  void delay_lists(std::chrono::milliseconds delay, const std::string& resource = "");
  // Lists are counted, then not answered until released (hold_lists(false)).
  void hold_lists(bool hold);
  // Every watch write is sent in two parts a moment apart, the first ending mid-line.
  void split_watch_lines(bool split);
  void fail_reads(int status);  // every list and watch answers this status (0: normal again)

  struct Binding {
    std::string ns, name, uid, node;
  };
  // What clients asked of this server: requests by "METHOD resource" (resource: the last path segment
  // naming a kind, e.g. "GET pods", "POST binding", "GET pods?watch"), TCP connections (distinct client
  // ports), bytes of request and answer bodies (watch streams included), watch events written; and
  // each call by "METHOD /path" (the query left out, " watch" added for a watch), once it is answered
  // (a watch when its stream ends).
  struct Traffic {
    std::map<std::string, uint64_t> requests, calls;
    uint64_t connections = 0, bytes_in = 0, bytes_out = 0, watch_events = 0;
  };
  Traffic traffic() const;
  // A Binding as kube-scheduler's default binder posts it, from the test's side: "" when bound, else
  // the Status message the API server would answer.
  std::string bind_pod(const std::string& ns, const std::string& name, const std::string& uid, const std::string& node);
  std::vector<Binding> bindings() const;
  // Evictions (policy/v1, POST .../pods/NAME/eviction): 201, 404 (no such pod), 409 (the UID
  // precondition fails), 429 for a pod protect_from_eviction() names (its budget allows no disruption);
  // ?dryRun=All changes nothing; otherwise the pod is deleted at once (no kubelet to wait for).
  void protect_from_eviction(const std::string& ns_name);
  std::vector<std::string> evictions() const;  // "ns/name", real ones, in order
  // core/v1 Events posted (POST .../events), as sent.
  std::vector<json> posted_events() const;
  int list_requests(const std::string& resource) const;
  int watch_requests(const std::string& resource) const;
  std::vector<std::string> seen_tokens() const;
  std::string last_watch_query(const std::string& resource) const;

  // A change, as the watch cache keeps one: the object after it and before it (null when created).
  struct Event {
    uint64_t rv;
    std::string resource;  // "pods" | "nodes"
    std::string type;      // ADDED, MODIFIED, DELETED
    json object;
    json prev;
  };

 private:
  struct ListSnapshot {
    uint64_t rv = 0;
    std::vector<json> items;
  };
  struct WatchState {
    std::string resource;
    std::vector<FieldTerm> terms;
    uint64_t position = 0;
    bool bookmarks = false, expired = false;
    std::chrono::steady_clock::time_point deadline;
    uint64_t drop_at = 0, error_at = 0, bookmark_at = 0;
  };
  // The routes, by kind (fake_api_reads.cpp, fake_api_writes.cpp).
  void install_read_routes();
  void install_write_routes();
  void install_lease_routes();
  bool authorised(const httplib::Request& req, httplib::Response& res);
  bool failing(httplib::Response& res);
  void record(const std::string& resource, const std::string& type, json object, json prev);
  void list(const std::string& resource, const httplib::Request& req, httplib::Response& res);
  void watch(const std::string& resource, const httplib::Request& req, httplib::Response& res);
  void bind(const httplib::Request& req, httplib::Response& res, const std::string& ns, const std::string& name);
  void patch_pod(const httplib::Request& req, httplib::Response& res, const std::string& ns, const std::string& name);
  void evict(const httplib::Request& req, httplib::Response& res, const std::string& ns, const std::string& name);
  bool stream_watch(WatchState& w, httplib::DataSink& sink);
  void count(const httplib::Request& req, const httplib::Response& res);
  bool bad_request(httplib::Response& res, const std::string& message);
  // Answers a Status of `code` (kube-apiserver's failure body).
  static void respond(httplib::Response& res, int code, const std::string& reason, const std::string& message);
  std::pair<int, json> apply_binding(const std::string& ns, const std::string& name, const std::string& uid,
                                     const std::string& node);
  void store_lease(const std::string& key, json lease, httplib::Response& res, int code);
  static json status(int code, const std::string& reason, const std::string& message);

  httplib::SSLServer server_;
  std::string token_dir_;
  std::thread thread_;
  int port_ = 0;

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  uint64_t rv_ = 100;
  uint64_t compacted_rv_ = 0;
  std::map<std::string, json> nodes_;  // by name
  std::map<std::string, json> pods_;   // by ns/name
  std::map<std::string, std::map<std::string, json>> dra_;  // per DRA resource, its objects by key
  std::atomic<bool> serves_dra_{false};
  std::map<std::string, json>& objects_of(const std::string& resource);  // under mutex_
  void put_dra(const std::string& resource, json object);
  void delete_dra(const std::string& resource, const std::string& key);
  std::map<std::string, json> leases_;  // by ns/name
  int lease_writes_ = 0;
  std::vector<Event> events_;
  std::set<std::string> tokens_{"test-token"};
  std::vector<std::string> seen_tokens_;
  std::vector<Binding> bindings_;
  std::set<std::string> eviction_protected_;
  std::vector<std::string> evictions_;
  std::vector<json> posted_events_;
  std::map<std::string, int> lists_, watches_;
  std::map<std::string, std::string> last_watch_query_;
  int fail_binds_ = 0, fail_status_ = 500;
  int fail_patches_ = 0, fail_patch_status_ = 500, patches_ = 0;
  bool forbid_ = false, silent_ = false;
  uint64_t drop_generation_ = 0, error_generation_ = 0, bookmark_generation_ = 0;
  int error_code_ = 410;
  std::chrono::milliseconds list_delay_{0};
  std::string list_delay_resource_;  // empty: every list
  int fail_reads_ = 0;
  bool split_watch_lines_ = false;
  bool hold_lists_ = false;
  int bookmarks_sent_ = 0;
  Traffic traffic_;
  std::set<int> client_ports_;
  std::map<std::string, ListSnapshot> snapshots_;  // by continue-token id
  uint64_t next_snapshot_ = 0;
  std::atomic<bool> stopping_{false};
};

// Small builders of Kubernetes objects as the API server returns them.
json make_node(const std::string& name, const std::string& model, int gpus, int aaa = 0, int bbb = 0,
               const std::string& memory = "40960");
json make_pod(const std::string& ns, const std::string& name, const std::string& uid, const std::string& node,
              int gpus, int aaa = 0, const std::string& phase = "Running");

}  // namespace test_support
