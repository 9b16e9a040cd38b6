// The probe routes of HttpService (/healthz, /readyz, /version, /metrics), and the 405 of every route.
#include <httplib.h>

#include <string>

#include "common/json_writer.h"
#include "gpu_extender/common/build_info.h"
#include "server/observability/metrics.h"
#include "server/transport/http_answers.h"
#include "server/transport/http_service.h"

namespace gpu_extender {

// Known paths answer other methods with 405 and the Allow header, not 404.
void method_not_allowed(httplib::Server& svr, const std::string& path, const char* allow) {
  auto handler = [path, allow](const httplib::Request& req, httplib::Response& res) {
    res.set_header("Allow", allow);
    send_error(res, 405, "method " + req.method + " not allowed on " + path + " (allowed: " + allow + ")");
  };
  if (std::string(allow) != "POST") svr.Post(path, handler);
  if (std::string(allow) != "GET") svr.Get(path, handler);
  svr.Put(path, handler);
  svr.Patch(path, handler);
  svr.Delete(path, handler);
}

// /healthz, /readyz, /version, /metrics: on the service port, and on --metrics-port when given.
void HttpService::install_probe_routes(httplib::Server& svr) {
  svr.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"status":"ok"})", kJson);
  });
  svr.Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
    if (service_->ready()) {
      res.set_content(R"({"status":"ready"})", kJson);
    } else {
      res.status = 503;
      res.set_content(R"({"status":"not ready","Error":"shutting down, or the cluster view has not listed nodes and pods yet"})", kJson);
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
  for (const char* path : {"/healthz", "/readyz", "/version", "/metrics"}) method_not_allowed(svr, path, "GET");
}

}  // namespace gpu_extender
