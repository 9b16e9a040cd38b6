// /bind at the speed of the API: the extender's /bind p50 against a direct POST .../binding over a
// kept-alive TLS connection to the same fake API server (the floor). Three ways:
//   direct      POST pods/NAME/binding from here, one kept-alive connection
//   after-filter /bind of a pod the extender saw in /filter (requests known: one API call)
//   cold         /bind of a pod it never saw (another replica scored it: GET the pod, then bind)
// Usage: bind_bench [PODS]   (default 300 per way; prints medians and ratios)
#include <httplib.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "../tests/integration/extender_process.h"
#include "../tests/integration/fake_api_server.h"
#include "../tests/integration/scheduler_driver.h"
#include "bench_support.h"

using nlohmann::json;

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// The extender's own time per /bind, from its request log: what is not the loopback hop.
std::vector<double> bind_times_logged(const std::string& log) {
  std::vector<double> out;
  for (size_t at = log.find("verb=bind"); at != std::string::npos; at = log.find("verb=bind", at + 1)) {
    const size_t ms = log.find(" ms=", at);
    if (ms != std::string::npos) out.push_back(std::atof(log.c_str() + ms + 4));
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const int pods = argc > 1 ? std::atoi(argv[1]) : 300;
  test_support::FakeApiServer api;
  api.put_node(test_support::make_node("a100-8", "A100", 8, 100000));
  test_support::ExtenderProcess extender(api.extender_args());
  httplib::Client verbs("127.0.0.1", extender.port());
  verbs.set_keep_alive(true);
  verbs.set_tcp_nodelay(true);
  while (true) {  // ready: the view has listed
    auto res = verbs.Get("/readyz");
    if (res && res->status == 200) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }

  httplib::SSLClient direct("127.0.0.1", api.port());
  direct.enable_server_certificate_verification(false);
  direct.set_keep_alive(true);
  direct.set_tcp_nodelay(true);
  direct.set_bearer_token_auth("test-token");

  auto make = [&](const std::string& name) {
    json pod = test_support::pending_pod(name, 0, 1);
    api.put_pod(pod);
    return pod;
  };
  std::vector<double> direct_ms, after_filter_ms, cold_ms;
  for (int i = 0; i < pods; ++i) {
    // Direct.
    {
      const json pod = make("direct-" + std::to_string(i));
      const json binding = {{"apiVersion", "v1"},
                            {"kind", "Binding"},
                            {"metadata", {{"name", pod["metadata"]["name"]}, {"namespace", "burst"}, {"uid", pod["metadata"]["uid"]}}},
                            {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", "a100-8"}}}};
      const std::string path = "/api/v1/namespaces/burst/pods/" + pod["metadata"]["name"].get<std::string>() + "/binding";
      const auto t = Clock::now();
      auto res = direct.Post(path.c_str(), binding.dump(), "application/json");
      direct_ms.push_back(ms_since(t));
      if (!res || res->status != 201) return std::fprintf(stderr, "direct bind failed\n"), 1;
    }
    for (bool filtered : {true, false}) {
      const json pod = make((filtered ? "filtered-" : "cold-") + std::to_string(i));
      if (filtered) {
        const json args = {{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", {"a100-8"}}};
        auto res = verbs.Post("/filter", args.dump(), "application/json");
        if (!res || res->status != 200 || json::parse(res->body).value("Error", "") != "" ||
            json::parse(res->body)["NodeNames"] != json::array({"a100-8"}))
          return std::fprintf(stderr, "filter failed: %s\n", res ? res->body.c_str() : "no answer"), 1;
      }
      const json bind = {{"PodName", pod["metadata"]["name"]}, {"PodNamespace", "burst"},
                         {"PodUID", pod["metadata"]["uid"]}, {"Node", "a100-8"}};
      const auto t = Clock::now();
      auto res = verbs.Post("/bind", bind.dump(), "application/json");
      (filtered ? after_filter_ms : cold_ms).push_back(ms_since(t));
      if (!res || res->status != 200 || json::parse(res->body).value("Error", "") != "")
        return std::fprintf(stderr, "bind failed: %s\n", res ? res->body.c_str() : "no answer"), 1;
    }
  }
  std::vector<double> hop_ms;  // the loopback hop to the extender alone: GET /healthz, kept alive
  for (int i = 0; i < pods; ++i) {
    const auto t = Clock::now();
    verbs.Get("/healthz");
    hop_ms.push_back(ms_since(t));
  }
  const double floor = bench::percentile(direct_ms, 0.5);
  std::printf("bind p50 over %d pods each (loopback, TLS, kept-alive):\n", pods);
  std::printf("  direct POST .../binding       %.3f ms (p90 %.3f)\n", floor, bench::percentile(direct_ms, 0.9));
  std::printf("  GET /healthz of the extender    %.3f ms (the hop alone)\n", bench::percentile(hop_ms, 0.5));
  std::printf("  /bind after /filter            %.3f ms (p90 %.3f)  %.2fx direct\n", bench::percentile(after_filter_ms, 0.5),
              bench::percentile(after_filter_ms, 0.9), bench::percentile(after_filter_ms, 0.5) / floor);
  std::printf("  /bind of a pod never seen      %.3f ms (p90 %.3f)  %.2fx direct (GET + POST)\n",
              bench::percentile(cold_ms, 0.5), bench::percentile(cold_ms, 0.9), bench::percentile(cold_ms, 0.5) / floor);
  const std::vector<double> server_ms = bind_times_logged(extender.log());
  if (server_ms.empty()) return std::fprintf(stderr, "no verb=bind line with ms= in the extender's log\n"), 1;
  std::printf("  the extender's own time per /bind (request log), p50 %.3f ms\n", bench::percentile(server_ms, 0.5));
  return 0;
}
