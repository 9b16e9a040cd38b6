// HTTPS and mutual TLS on the extender port, as kube-scheduler's tlsConfig uses them.
#include <httplib.h>

#include <catch2/catch.hpp>
#include <ctime>

#include "../unit/test_support.h"
#include "extender_process.h"
#include "fake_api_server.h"
#include "metrics_support.h"
#include "raw_connection.h"

using test_support::ExtenderProcess;
using test_support::TestCertificate;

TEST_CASE("tls: HTTPS answers verified clients, plain HTTP is refused") {
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

namespace {
// The SHA-256 fingerprint of the certificate a TLS server presents, as the openssl command prints it.
std::string served_fingerprint(int port) {
  return test_support::run_command("echo | openssl s_client -connect 127.0.0.1:" + std::to_string(port) +
                                   " 2>/dev/null | openssl x509 -noout -fingerprint -sha256 2>/dev/null")
      .output;
}
}  // namespace

TEST_CASE("tls: a certificate renewed on disk is served without a restart") {
  char tmpl[] = "/tmp/gpu-extender-rotate-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  auto make_cert = [&](const std::string& cn) {
    const std::string cmd = "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=" + cn +
                            " -addext subjectAltName=IP:127.0.0.1 -keyout " + dir + "/new.key -out " + dir +
                            "/new.crt >/dev/null 2>&1 && mv " + dir + "/new.key " + dir + "/tls.key && mv " + dir +
                            "/new.crt " + dir + "/tls.crt";
    REQUIRE(std::system(cmd.c_str()) == 0);
  };
  make_cert("first");
  ExtenderProcess p({"--tls-cert-file", dir + "/tls.crt", "--tls-key-file", dir + "/tls.key"});
  const std::string first = served_fingerprint(p.port());
  REQUIRE(first.find("Fingerprint") != std::string::npos);
  make_cert("second");
  std::string now = first;
  test_support::eventually([&] { return (now = served_fingerprint(p.port())) != first; }, std::chrono::seconds(10));
  CHECK(now.find("Fingerprint") != std::string::npos);
  CHECK(now != first);
  CHECK(p.logged("TLS certificate reloaded"));
  std::system(("rm -rf " + dir).c_str());
}

TEST_CASE("tls: protocols older than TLS 1.2 are refused") {
  const auto& cert = TestCertificate::get();
  ExtenderProcess p({"--tls-cert-file", cert.cert_file, "--tls-key-file", cert.key_file});
  auto handshake = [&](const char* version) {
    const std::string cmd = "echo | openssl s_client -" + std::string(version) + " -cipher DEFAULT@SECLEVEL=0 -connect 127.0.0.1:" +
                            std::to_string(p.port()) + " >/dev/null 2>&1";
    return std::system(cmd.c_str()) == 0;
  };
  CHECK(handshake("tls1_2"));
  CHECK_FALSE(handshake("tls1_1"));
  CHECK_FALSE(handshake("tls1"));
}

TEST_CASE("tls: a handshake trickled a byte at a time is cut off at the header deadline") {
  const auto& cert = TestCertificate::get();
  ExtenderProcess p({"--tls-cert-file", cert.cert_file, "--tls-key-file", cert.key_file, "--header-timeout-seconds", "1"});
  // The start of a ClientHello, then padding: 100 bytes at 200 ms each would take 20 s; the 10 s read
  // timeout never trips, so only the deadline can end it.
  test_support::RawConnection connection(p.port());
  const std::string hello = std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11) + std::string(89, '\0');
  CHECK(connection.trickle(hello, std::chrono::milliseconds(200)));  // the server closed before the end
  // And a real client is still served.
  httplib::SSLClient tls("127.0.0.1", p.port());
  tls.set_ca_cert_path(cert.cert_file.c_str());
  auto res = tls.Get("/healthz");
  REQUIRE(res);
  CHECK(res->status == 200);
}

TEST_CASE("tls: the admission webhook answers over HTTPS on its own port, without asking a client certificate") {
  const auto& cert = TestCertificate::get();
  const int webhook_port = test_support::free_port();
  // The verbs ask a client certificate (mutual TLS); the webhook port does not, as the API server shows none.
  ExtenderProcess p({"--tls-cert-file", cert.cert_file, "--tls-key-file", cert.key_file, "--tls-client-ca-file",
                     cert.cert_file, "--webhook-port", std::to_string(webhook_port)});
  httplib::SSLClient api_server("127.0.0.1", webhook_port);
  api_server.set_ca_cert_path(cert.cert_file.c_str());
  api_server.enable_server_certificate_verification(true);
  const std::string review =
      R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"r-9","operation":"CREATE",)"
      R"("object":{"metadata":{"name":"w","namespace":"train","annotations":{"gpu.nvidia.com/model":"H100"}},)"
      R"("spec":{"schedulerName":"gpu-scheduler","containers":[{"name":"c","image":"x",)"
      R"("resources":{"limits":{"nvidia.com/gpu":"8"}}}]}}}})";
  auto res = api_server.Post("/mutate-pods", review, "application/json");
  REQUIRE(res);
  CHECK(res->status == 200);
  const auto answer = nlohmann::json::parse(res->body);
  CHECK(answer["response"]["uid"] == "r-9");
  CHECK(answer["response"]["allowed"] == true);
  CHECK(answer["response"]["patchType"] == "JSONPatch");
  auto bad = api_server.Post("/mutate-pods", "{", "application/json");
  REQUIRE(bad);
  CHECK(bad->status == 400);
  // Without a certificate for it, the flag is refused at start with what it needs.
  auto r = test_support::run_binary({"--webhook-port", "9443", "--check-config"});
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("--webhook-port needs a certificate") != std::string::npos);
}

namespace {
// What `openssl s_client` prints for a handshake with these options (stdin closed at once, unless `input`).
std::string s_client(int port, const std::string& options, const std::string& input = "") {
  return test_support::run_command((input.empty() ? std::string("echo") : "(" + input + ")") + " | openssl s_client " +
                                   options + " -connect 127.0.0.1:" + std::to_string(port) + " 2>&1")
      .output;
}

// Certificate authorities and the client certificates they sign, in a directory removed at the end.
class TestAuthority {
 public:
  TestAuthority() {
    char tmpl[] = "/tmp/gpu-extender-ca-XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  ~TestAuthority() { std::system(("rm -rf " + dir_).c_str()); }
  // A new CA named `ca`: its certificate's path.
  std::string make_ca(const std::string& ca) {
    run("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=" + ca +
        " -keyout " + path(ca + ".key") + " -out " + path(ca + ".crt"));
    return path(ca + ".crt");
  }
  // A client certificate of subject CN `cn` signed by `ca` (its key beside it as `cn`.key): its path.
  std::string sign(const std::string& ca, const std::string& cn) {
    run("openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=" + cn + " -keyout " +
        path(cn + ".key") + " -out " + path(cn + ".csr"));
    run("openssl x509 -req -in " + path(cn + ".csr") + " -CA " + path(ca + ".crt") + " -CAkey " + path(ca + ".key") +
        " -CAcreateserial -days 2 -out " + path(cn + ".crt"));
    return path(cn + ".crt");
  }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }

 private:
  static void run(const std::string& cmd) { REQUIRE(std::system((cmd + " >/dev/null 2>&1").c_str()) == 0); }
  std::string dir_;
};

// Whether a client holding `cn`'s certificate (from `authority`) gets /healthz answered.
bool answered_with(const TestAuthority& authority, const std::string& cn, int port) {
  httplib::SSLClient client("127.0.0.1", port, authority.path(cn + ".crt"), authority.path(cn + ".key"));
  client.set_ca_cert_path(TestCertificate::get().cert_file.c_str());
  auto res = client.Get("/healthz");
  return res && res->status == 200;
}
}  // namespace

TEST_CASE("tls: TLS 1.2 offers ECDHE with AEAD only, TLS 1.3 is preferred, renegotiation is refused") {
  const auto& cert = TestCertificate::get();
  ExtenderProcess p({"--tls-cert-file", cert.cert_file, "--tls-key-file", cert.key_file});
  CHECK(s_client(p.port(), "").find("New, TLSv1.3") != std::string::npos);
  CHECK(s_client(p.port(), "-tls1_2 -cipher ECDHE-RSA-AES128-GCM-SHA256").find("Cipher is ECDHE-RSA-AES128-GCM-SHA256") !=
        std::string::npos);
  CHECK(s_client(p.port(), "-tls1_2 -cipher ECDHE-RSA-CHACHA20-POLY1305").find("Cipher is ECDHE-RSA-CHACHA20-POLY1305") !=
        std::string::npos);
  // Static RSA key exchange (no forward secrecy) and CBC suites are refused, even when they are all a client has.
  for (const char* refused : {"AES128-GCM-SHA256", "AES256-SHA", "ECDHE-RSA-AES128-SHA", "ECDHE-RSA-AES256-SHA384"}) {
    INFO(refused);
    CHECK(s_client(p.port(), std::string("-tls1_2 -cipher ") + refused).find("Cipher is (NONE)") != std::string::npos);
  }
  // A client asking to renegotiate (s_client does on "R") gets no new handshake.
  const std::string renegotiation = s_client(p.port(), "-tls1_2", "sleep 1; echo R; sleep 1");
  INFO(renegotiation);
  CHECK(renegotiation.find("RENEGOTIATING") != std::string::npos);
  CHECK(renegotiation.find("no renegotiation") != std::string::npos);
}

TEST_CASE("tls: --tls-client-names admits the scheduler's certificate only, not every one the CA signed") {
  const auto& cert = TestCertificate::get();
  TestAuthority authority;
  const std::string ca = authority.make_ca("issuer");
  authority.sign("issuer", "gpu-scheduler");
  authority.sign("issuer", "some-workload");
  ExtenderProcess p({"--tls-cert-file", cert.cert_file, "--tls-key-file", cert.key_file, "--tls-client-ca-file", ca,
                     "--tls-client-names", "gpu-scheduler"});
  CHECK(answered_with(authority, "gpu-scheduler", p.port()));
  CHECK_FALSE(answered_with(authority, "some-workload", p.port()));
  CHECK(p.logged("some-workload"));  // the refusal names whom it refused
}

TEST_CASE("tls: a client CA bundle renewed on disk is used without a restart") {
  const auto& cert = TestCertificate::get();
  TestAuthority authority;
  const std::string ca = authority.path("client-ca.crt");
  std::system(("cp " + authority.make_ca("old") + " " + ca).c_str());
  authority.make_ca("new");
  authority.sign("old", "scheduler-old");
  authority.sign("new", "scheduler-new");
  ExtenderProcess p({"--tls-cert-file", cert.cert_file, "--tls-key-file", cert.key_file, "--tls-client-ca-file", ca});
  CHECK(answered_with(authority, "scheduler-old", p.port()));
  CHECK_FALSE(answered_with(authority, "scheduler-new", p.port()));
  // The rotation cert-manager does: the new CA beside the old, written in place (a rename, as the kubelet does).
  std::system(("cat " + authority.path("old.crt") + " " + authority.path("new.crt") + " > " + ca + ".tmp && mv " + ca +
               ".tmp " + ca).c_str());
  CHECK(test_support::eventually([&] { return answered_with(authority, "scheduler-new", p.port()); },
                                 std::chrono::seconds(15)));
  CHECK(answered_with(authority, "scheduler-old", p.port()));
}

TEST_CASE("tls: each certificate's expiry is a metric") {
  const auto& cert = TestCertificate::get();
  const int metrics_port = test_support::free_port();
  const int webhook_port = test_support::free_port();
  ExtenderProcess p({"--tls-cert-file", cert.cert_file, "--tls-key-file", cert.key_file, "--tls-client-ca-file",
                     cert.cert_file, "--webhook-port", std::to_string(webhook_port), "--metrics-port",
                     std::to_string(metrics_port)});
  const auto series = test_support::scrape(metrics_port);
  const double now = static_cast<double>(std::time(nullptr));
  // The test certificate is made for 2 days: its expiry lies between 1 and 3 days from now, on each port.
  for (const char* name :
       {R"(gpu_extender_tls_certificate_expiration_timestamp_seconds{port="verbs",certificate="serving"})",
        R"(gpu_extender_tls_certificate_expiration_timestamp_seconds{port="verbs",certificate="client-ca"})",
        R"(gpu_extender_tls_certificate_expiration_timestamp_seconds{port="webhook",certificate="serving"})"}) {
    INFO(name);
    const double expires = test_support::value_of(series, name);
    CHECK(expires > now + 86400);
    CHECK(expires < now + 3 * 86400);
  }
}
