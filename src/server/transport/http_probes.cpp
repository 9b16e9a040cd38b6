// The probe routes of HttpService (/healthz, /readyz, /version, /metrics); wrong methods and bodies are
// refused before them (listener.h).
#include <httplib.h>

#include <string>

#include "common/json_writer.h"
#include "gpu_extender/common/build_info.h"
#include "server/observability/metrics.h"
#include "server/transport/http_answers.h"
#include "server/transport/http_service.h"

namespace gpu_extender {

// /healthz, /readyz, /version, /metrics: on the service port, and on --metrics-port when given.
void HttpService::install_probe_routes(httplib::Server& svr) {
  svr.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"status":"ok"})", kJson);
  });
  svr.Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
    const std::string why = service_->unready_reason();
    if (why.empty()) {
      res.set_content(R"({"status":"ready"})", kJson);
    } else {
      std::string body = R"({"status":"not ready","Error":)";
      append_json_string(body, why);
      body += "}";
      res.status = 503;
      res.set_content(body, kJson);
    }
  });
  svr.Get("/version", [this](const httplib::Request&, httplib::Response& res) {
    std::string body = "{\"version\":";
    append_json_string(body, version());
    body += ",\"commit\":";
    append_json_string(body, git_commit());
    body += ",\"policy\":";
    append_json_string(body, service_->policy()->config().source);
    body += ",\"usage\":";
    append_json_string(body, service_->usage().describe());
    body += "}";
    res.set_content(body, kJson);
  });
  svr.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics_->render(), "text/plain; version=0.0.4; charset=utf-8");
  });
}

}  // namespace gpu_extender
