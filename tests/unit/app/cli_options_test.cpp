#include <catch2/catch.hpp>

#include "app/cli_options.h"

using gpu_extender::parse_cli;

TEST_CASE("cli: defaults and every flag") {
  auto d = parse_cli({});
  REQUIRE(d.options);
  CHECK(d.options->server.address == "127.0.0.1");
  CHECK(d.options->server.port == 8888);
  auto all = parse_cli({"--address", "0.0.0.0", "--port=9000", "--policy", "p.yaml", "--pods-snapshot", "s.json",
                        "--log-level", "debug", "--max-body-bytes", "1048576", "--threads", "3", "--check-config"});
  REQUIRE(all.options);
  CHECK(all.options->server.address == "0.0.0.0");
  CHECK(all.options->server.port == 9000);
  CHECK(all.options->policy_file == "p.yaml");
  CHECK(all.options->pods_snapshot_file == "s.json");
  CHECK(all.options->log_level == "debug");
  CHECK(all.options->server.max_body_bytes == 1048576);
  CHECK(all.options->server.threads == 3);
  CHECK(all.options->check_config);
  CHECK(parse_cli({"--help"}).options->help);
  CHECK(parse_cli({"--version"}).options->version);
}

TEST_CASE("cli: invalid flags name the flag") {
  CHECK(parse_cli({"--prot", "1"}).error == "unknown flag --prot (see --help)");
  CHECK(parse_cli({"--port", "70000"}).error == "invalid value \"70000\" for --port");
  CHECK(parse_cli({"--port", "12ab"}).error == "invalid value \"12ab\" for --port");
  CHECK(parse_cli({"--port"}).error == "--port needs a value");
  CHECK(parse_cli({"--log-level", "loud"}).error == "invalid value \"loud\" for --log-level");
  CHECK(parse_cli({"--max-body-bytes", "10"}).error == "invalid value \"10\" for --max-body-bytes");
  // The memory budget must hold one largest body (6 bytes charged per body byte).
  CHECK(parse_cli({"--max-body-bytes", "200000000"}).error ==
        "--memory-budget-bytes 671088640 cannot hold one body of --max-body-bytes 200000000: it needs at least 6 "
        "times as much");
  CHECK(parse_cli({"--max-body-bytes", "200000000", "--memory-budget-bytes", "1200000000"}).options);
}
