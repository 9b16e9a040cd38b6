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

#include "common/file_text.h"

#include <cctype>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

namespace {

// The text of a JSON string member `"key":"value"` (names and UIDs hold no escapes), or "".
std::string string_member(std::string_view body, std::string_view key) {
  const std::string needle = "\"" + std::string(key) + "\":\"";
  const size_t at = body.find(needle);
  if (at == std::string_view::npos) return {};
  const size_t start = at + needle.size();
  const size_t end = body.find('"', start);
  return end == std::string_view::npos ? std::string() : std::string(body.substr(start, end - start));
}

// The `[...]` of the NodeNames member, as sent (node names hold no ']').
std::string_view node_names_array(std::string_view body) {
  const size_t at = body.find("\"NodeNames\":");
  if (at == std::string_view::npos) return "[]";
  const size_t open = body.find('[', at);
  const size_t close = body.find(']', open);
  if (open == std::string_view::npos || close == std::string_view::npos) return "[]";
  return body.substr(open, close - open + 1);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: floor_extender PORT API_SERVER_URL TOKEN_FILE CA_FILE\n";
    return 2;
  }
  const std::string api_url = argv[2];
  std::string token = gpu_extender::read_file_text(argv[3]).value_or("");
  while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) token.pop_back();
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
    std::string answer = "{\"NodeNames\":";
    answer += node_names_array(req.body);
    answer += ",\"FailedNodes\":{},\"FailedAndUnresolvableNodes\":{},\"Error\":\"\"}";
    res.set_content(answer, "application/json");
  });
  server.Post("/prioritize", [](const httplib::Request& req, httplib::Response& res) {
    const std::string_view names = node_names_array(req.body);
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
    const std::string name = string_member(req.body, "PodName");
    const std::string ns = string_member(req.body, "PodNamespace");
    const std::string binding = "{\"apiVersion\":\"v1\",\"kind\":\"Binding\",\"metadata\":{\"name\":\"" + name +
                                "\",\"namespace\":\"" + ns + "\",\"uid\":\"" + string_member(req.body, "PodUID") +
                                "\"},\"target\":{\"kind\":\"Node\",\"name\":\"" + string_member(req.body, "Node") +
                                "\"}}";
    const auto answer = api->Post("/api/v1/namespaces/" + ns + "/pods/" + name + "/binding", binding, "application/json");
    if (answer && answer->status == 201) {
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
