// The transport floor: a bare cpp-httplib server that reads a POSTed body and answers as many bytes as
// the request's X-Answer-Bytes header asks, without looking at the body. What any extender built on
// this HTTP library pays before doing any work.
//
// Usage: transport_floor PORT
#include <httplib.h>

#include <cstdlib>
#include <iostream>
#include <thread>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: transport_floor PORT\n";
    return 2;
  }
  httplib::Server server;
  const size_t threads = std::max(4U, 2 * std::thread::hardware_concurrency());
  server.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  server.set_payload_max_length(size_t{1} << 30);
  server.set_keep_alive_max_count(100000);
  server.set_tcp_nodelay(true);  // as the extender: without it small answers wait 40 ms for a delayed ACK
  server.Post(".*", [](const httplib::Request& req, httplib::Response& res) {
    const size_t n = std::strtoull(req.get_header_value("X-Answer-Bytes").c_str(), nullptr, 10);
    auto answer = std::make_shared<std::string>(n, ' ');
    res.set_content_provider(n, "application/json", [answer](size_t offset, size_t length, httplib::DataSink& sink) {
      return sink.write(answer->data() + offset, length);
    });
  });
  server.listen("127.0.0.1", std::atoi(argv[1]));
}
