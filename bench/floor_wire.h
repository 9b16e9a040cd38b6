#pragma once
// What the two floor extenders (floor_extender.cpp on cpp-httplib, wire_floor_extender.cpp on bare
// sockets) read from kube-scheduler's requests and write to the API server: the least the node-cache
// wire needs, with no validation (names and UIDs hold no escapes). Measuring sticks, not parsers.
#include "common/file_text.h"

#include <unistd.h>

#include <cctype>
#include <string>
#include <string_view>

namespace floor_wire {

// The text of a JSON string member `"key":"value"`, or "".
inline std::string string_member(std::string_view body, std::string_view key) {
  const std::string needle = "\"" + std::string(key) + "\":\"";
  const size_t at = body.find(needle);
  if (at == std::string_view::npos) return {};
  const size_t start = at + needle.size();
  const size_t end = body.find('"', start);
  return end == std::string_view::npos ? std::string() : std::string(body.substr(start, end - start));
}

// The `[...]` of the NodeNames member, as sent (node names hold no ']').
inline std::string_view node_names_array(std::string_view body) {
  const size_t at = body.find("\"NodeNames\":");
  if (at == std::string_view::npos) return "[]";
  const size_t open = body.find('[', at);
  const size_t close = body.find(']', open);
  if (open == std::string_view::npos || close == std::string_view::npos) return "[]";
  return body.substr(open, close - open + 1);
}

// The filter answer that passes every node sent.
inline std::string pass_all_answer(std::string_view body) {
  std::string answer = "{\"NodeNames\":";
  answer += node_names_array(body);
  answer += ",\"FailedNodes\":{},\"FailedAndUnresolvableNodes\":{},\"Error\":\"\"}";
  return answer;
}

// The bearer token in a file, without its trailing newline ("" when missing or empty).
inline std::string bearer_token(const char* path) {
  std::string token = gpu_extender::read_file_text(path).value_or("");
  while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) token.pop_back();
  return token;
}

// A bind request's pod, and the Binding object and path that bind it.
struct PodBinding {
  std::string path;  // /api/v1/namespaces/NS/pods/NAME/binding
  std::string body;  // the v1 Binding
};
inline PodBinding pod_binding(std::string_view bind_args) {
  const std::string name = string_member(bind_args, "PodName");
  const std::string ns = string_member(bind_args, "PodNamespace");
  return {"/api/v1/namespaces/" + ns + "/pods/" + name + "/binding",
          "{\"apiVersion\":\"v1\",\"kind\":\"Binding\",\"metadata\":{\"name\":\"" + name + "\",\"namespace\":\"" + ns +
              "\",\"uid\":\"" + string_member(bind_args, "PodUID") + "\"},\"target\":{\"kind\":\"Node\",\"name\":\"" +
              string_member(bind_args, "Node") + "\"}}"};
}

// One line on stdout a pod bound, as the extender's request log has one: bench/control_plane_cpu.sh
// counts them to know when a burst is placed. One write(2), unbuffered, so that the count is current.
inline void note_bound() {
  constexpr std::string_view kLine = "verb=bind\n";
  [[maybe_unused]] const ssize_t written = write(STDOUT_FILENO, kLine.data(), kLine.size());
}

}  // namespace floor_wire
