// The floor extender: the least CPU any extender on this stack (cpp-httplib, OpenSSL, one thread a
// connection) can spend per placed pod on a real kube-scheduler, so that the extender's own figure can
// be split into what the stack costs and what the extender adds. It answers the node-cache wire with
// no policy at all: /filter passes every node it is sent, /prioritize scores every node 0, /bind posts
// the pod's binding to the API server on a TLS connection the thread keeps open. No node or pod watch,
// no request log, no metrics, no validation: a measuring stick, not a server anyone should run.
//
// Usage: floor_extender PORT API_SERVER_URL TOKEN_FILE CA_FILE
//   e.g. floor_extender 18888 https://127.0.0.1:6443 /etc/kubernetes/token /etc/kubernetes/pki/ca.crt
#include <httplib.h>

#include "floor_wire.h"

#include <iostream>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: floor_extender PORT API_SERVER_URL TOKEN_FILE CA_FILE\n";
    return 2;
  }
  const std::string api_url = argv[2];
  const std::string token = floor_wire::bearer_token(argv[3]);
  if (token.empty()) {
    std::cerr << "floor_extender: no token in " << argv[3] << "\n";
    return 2;
  }
  const std::string ca_file = argv[4];

  httplib::Server server;
  server.new_task_queue = [] { return new httplib::ThreadPool(8); };
  server.set_payload_max_length(size_t{1} << 30);
  server.set_keep_alive_max_count(100000);
  server.set_tcp_nodelay(true);  // as the extender: without it small answers wait 40 ms for a delayed ACK

  server.Post("/filter", [](const httplib::Request& req, httplib::Response& res) {
    res.set_content(floor_wire::pass_all_answer(req.body), "application/json");
  });
  server.Post("/prioritize", [](const httplib::Request& req, httplib::Response& res) {
    const std::string_view names = floor_wire::node_names_array(req.body);
    std::string answer = "[";
    for (size_t at = names.find('"'); at != std::string_view::npos;) {
      const size_t end = names.find('"', at + 1);
      if (answer.size() > 1) answer += ',';
      answer += "{\"Host\":";
      answer += names.substr(at, end - at + 1);
      answer += ",\"Score\":0}";
      at = names.find('"', end + 1);
    }
    answer += ']';
    res.set_content(answer, "application/json");
  });
  server.Post("/bind", [&](const httplib::Request& req, httplib::Response& res) {
    // One client a worker thread, kept alive: one TLS handshake a thread, not one a bind.
    thread_local std::unique_ptr<httplib::Client> api;
    if (!api) {
      api = std::make_unique<httplib::Client>(api_url);
      api->set_ca_cert_path(ca_file.c_str());
      api->set_bearer_token_auth(token.c_str());
      api->set_keep_alive(true);
    }
    const floor_wire::PodBinding binding = floor_wire::pod_binding(req.body);
    const auto answer = api->Post(binding.path, binding.body, "application/json");
    if (answer && answer->status == 201) {
      floor_wire::note_bound();
      res.set_content("{\"Error\":\"\"}", "application/json");
    } else {
      res.set_content("{\"Error\":\"binding failed\"}", "application/json");
    }
  });
  if (!server.listen("127.0.0.1", std::atoi(argv[1]))) {
    // Said aloud: a harness run waiting for binds from a floor that never listened waits forever.
    std::cerr << "floor_extender: cannot listen on 127.0.0.1:" << argv[1] << " (address in use?)\n";
    return 1;
  }
}
