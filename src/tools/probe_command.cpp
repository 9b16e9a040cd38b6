// gpu-extender probe URL: GET one http URL, exit 0 on a 2xx answer. The container image has no curl
// (debian slim, the binary alone), so `helm test` and exec probes ask the binary itself.
#include <httplib.h>

#include <chrono>
#include <string>

#include "tools.h"

namespace gpu_extender {

int run_probe(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  if (args.size() != 1 || args[0] == "--help") {
    (args.size() == 1 ? out : err) << "Usage: gpu-extender probe http://HOST:PORT/PATH\n"
                                      "GETs the URL (5 s at most); exit 0 on a 2xx answer, 1 otherwise.\n";
    return args.size() == 1 ? 0 : 2;
  }
  const std::string& url = args[0];
  if (url.rfind("http://", 0) != 0) {
    err << "probe: " << url << ": only http:// URLs (the metrics port, where /healthz and /readyz answer)\n";
    return 2;
  }
  const size_t path_start = url.find('/', 7);
  const std::string origin = url.substr(0, path_start);
  const std::string path = path_start == std::string::npos ? "/" : url.substr(path_start);
  httplib::Client client(origin);
  client.set_connection_timeout(std::chrono::seconds(5));
  client.set_read_timeout(std::chrono::seconds(5));
  const auto res = client.Get(path);
  if (!res) {
    err << "probe: " << url << ": " << httplib::to_string(res.error()) << "\n";
    return 1;
  }
  out << "probe: " << url << ": " << res->status << " " << res->body << (res->body.empty() || res->body.back() != '\n' ? "\n" : "");
  return res->status >= 200 && res->status < 300 ? 0 : 1;
}

}  // namespace gpu_extender
