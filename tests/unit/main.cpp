#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <csignal>

// Tests talk to servers that may close a connection while a client still writes (a refused TLS
// handshake, a shed request): that must be an error the test sees, not SIGPIPE ending the process.
int main(int argc, char* argv[]) {
  std::signal(SIGPIPE, SIG_IGN);
  return Catch::Session().run(argc, argv);
}
