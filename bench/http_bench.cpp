// End-to-end latency and throughput over loopback HTTP against a running server.
//
//   http_bench latency HOST PORT PATH BODY SECONDS [ANSWER_BYTES]
//       sequential requests on one kept-alive connection: p50/p99 in ms, as JSON on stdout
//   http_bench throughput HOST PORT PATH BODY SECONDS CONCURRENCY [ANSWER_BYTES]
//       CONCURRENCY connections for SECONDS: requests/s, errors, as JSON on stdout
// ANSWER_BYTES is sent as X-Answer-Bytes (for the transport floor server).
#include <atomic>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "bench_support.h"
#include "../tests/integration/raw_http_client.h"

namespace {

std::string headers_for(const std::string& answer_bytes) {
  return answer_bytes.empty() ? "" : "X-Answer-Bytes: " + answer_bytes + "\r\n";
}

// A sample counts only when it is an answer: status 200 and no Error in the body (the protocol's
// Error field, inside a 200).
bool answered(int status, std::string_view body) {
  if (status != 200) return false;
  const size_t error = body.find("\"Error\":\"");
  return error == std::string_view::npos || body.compare(error + 9, 1, "\"") == 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 7) {
    std::cerr << "usage: see the comment at the top of http_bench.cpp\n";
    return 2;
  }
  const std::string mode = argv[1], host = argv[2], path = argv[4];
  const int port = std::atoi(argv[3]);
  const std::string body = bench::read_file(argv[5]);
  const double seconds = std::atof(argv[6]);
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + std::chrono::duration<double>(seconds);

  if (mode == "latency") {
    test_support::RawHttpClient client(host, port, path, body, headers_for(argc > 7 ? argv[7] : ""));
    std::vector<double> samples;
    size_t errors = 0, answer_bytes = 0;
    // One warm-up request, then as many as fit (at least 5, at most 2000).
    client.post();
    while (samples.size() < 5 || (clock::now() < deadline && samples.size() < 2000)) {
      const auto t0 = clock::now();
      const int status = client.post();
      const double ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
      if (!answered(status, client.answer())) {
        ++errors;
        std::cerr << "http_bench: " << path << " answered " << status << ": " << client.answer().substr(0, 300) << "\n";
        break;
      }
      samples.push_back(ms);
      answer_bytes = client.answer_bytes();
    }
    nlohmann::json out = {{"p50_ms", bench::percentile(samples, 0.5)},
                          {"p99_ms", bench::percentile(samples, 0.99)},
                          {"requests", samples.size()},
                          {"errors", errors},
                          {"answer_bytes", answer_bytes}};
    std::cout << out.dump() << "\n";
    return errors == 0 ? 0 : 1;  // figures of failed requests are no figures
  }
  if (mode == "throughput" && argc >= 8) {
    const int concurrency = std::atoi(argv[7]);
    const std::string headers = headers_for(argc > 8 ? argv[8] : "");
    std::atomic<size_t> ok{0}, errors{0}, shed{0}, transport{0};
    std::vector<std::thread> threads;
    const auto start = clock::now();
    for (int t = 0; t < concurrency; ++t) {
      threads.emplace_back([&] {
        test_support::RawHttpClient client(host, port, path, body, headers);
        while (clock::now() < deadline) {
          const int status = client.post();
          if (answered(status, client.answer())) {
            ++ok;
            continue;
          }
          ++errors;
          if (status == 503) ++shed;
          if (status < 0) ++transport;
        }
      });
    }
    for (auto& t : threads) t.join();
    const double elapsed = std::chrono::duration<double>(clock::now() - start).count();
    nlohmann::json out = {{"concurrency", concurrency},
                          {"requests_per_s", static_cast<double>(ok) / elapsed},
                          {"ok", ok.load()},
                          {"errors", errors.load()},
                          {"shed_503", shed.load()},
                          {"transport_errors", transport.load()},
                          {"seconds", elapsed}};
    std::cout << out.dump() << "\n";
    if (errors > 0) std::cerr << "http_bench: " << errors << " requests failed (" << shed << " shed with 503)\n";
    return errors == 0 ? 0 : 1;
  }
  std::cerr << "unknown mode " << mode << "\n";
  return 2;
}
