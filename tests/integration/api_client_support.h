#pragma once
// The extender's API client, pointed at a fake API server with the token and CA it accepts.
#include <memory>

#include "../unit/test_support.h"
#include "fake_api_server.h"
#include "gpu_extender/kube/api_client.h"

namespace test_support {

inline std::shared_ptr<gpu_extender::kube::ApiClient> api_client_for(FakeApiServer& api) {
  gpu_extender::ApiEndpoint endpoint;
  endpoint.server = api.url();
  endpoint.token = "test-token";
  endpoint.ca_pem = read_file(TestCertificate::get().cert_file);
  return std::make_shared<gpu_extender::kube::ApiClient>(endpoint);
}

}  // namespace test_support
