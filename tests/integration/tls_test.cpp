// HTTPS and mutual TLS on the extender port, as kube-scheduler's tlsConfig uses them.
#include <httplib.h>

#include <catch2/catch.hpp>

#include "extender_process.h"
#include "fake_api_server.h"

using test_support::ExtenderProcess;
using test_support::TestCertificate;

TEST_CASE("tls: HTTPS answers verified clients; plain HTTP is refused") {
  const auto& cert = TestCertificate::get();
  ExtenderProcess p({"--tls-cert-file", cert.cert_file, "--tls-key-file", cert.key_file});
  httplib::SSLClient tls("127.0.0.1", p.port());
  tls.set_ca_cert_path(cert.cert_file.c_str());
  tls.enable_server_certificate_verification(true);
  auto res = tls.Get("/healthz");
  REQUIRE(res);
  CHECK(res->status == 200);
  httplib::Client plain("127.0.0.1", p.port());
  plain.set_read_timeout(std::chrono::seconds(2));
  auto refused = plain.Get("/healthz");
  CHECK((!refused || refused->status != 200));
}

TEST_CASE("tls: with a client CA, only clients holding a certificate are answered") {
  const auto& cert = TestCertificate::get();
  ExtenderProcess p({"--tls-cert-file", cert.cert_file, "--tls-key-file", cert.key_file, "--tls-client-ca-file",
                     cert.cert_file});
  httplib::SSLClient anonymous("127.0.0.1", p.port());
  anonymous.set_ca_cert_path(cert.cert_file.c_str());
  CHECK_FALSE(anonymous.Get("/healthz"));
  httplib::SSLClient with_cert("127.0.0.1", p.port(), cert.cert_file, cert.key_file);
  with_cert.set_ca_cert_path(cert.cert_file.c_str());
  auto res = with_cert.Get("/healthz");
  REQUIRE(res);
  CHECK(res->status == 200);
}

TEST_CASE("tls: unreadable certificate files stop the start with a message") {
  auto r = test_support::run_binary({"--tls-cert-file", "/nonexistent.crt", "--tls-key-file", "/nonexistent.key"});
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("cannot serve HTTPS") != std::string::npos);
  r = test_support::run_binary({"--tls-cert-file", "/x.crt"});
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("--tls-cert-file and --tls-key-file go together") != std::string::npos);
}
