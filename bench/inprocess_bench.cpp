// In-process cost of each verb (decode + policy + encode) on generated request bodies, against two
// references on the same bytes: simdjson's validating DOM parse (the limit: reading the bytes once)
// and an nlohmann::json tree of the whole body with the passing nodes dumped back (the baseline an
// extender that decodes everything would pay). Prints a table and writes JSON.
//
// Usage: inprocess_bench OUT.json BODY.json [BODY.json ...]   (file names say verb, mode, nodes)
#include <simdjson.h>

#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "bench_support.h"
#include "verb_timing.h"

using namespace gpu_extender;

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: inprocess_bench OUT.json BODY.json...\n";
    return 2;
  }
  auto policy = Policy::build(default_policy_config());
  const ExtenderService service(policy, make_no_usage());
  nlohmann::json report = nlohmann::json::array();
  std::printf("%-34s %10s %9s %9s %9s %10s %9s %9s\n", "body", "bytes", "filter", "prio", "simdjson", "nlohmann",
              "f/simd", "nl/f");
  for (int i = 2; i < argc; ++i) {
    const std::string path = argv[i];
    const std::string body = bench::read_file(path);

    VerbSummary summary;
    const Reply probe = service.handle(Verb::kFilter, body, summary);
    bench::require_answered(Verb::kFilter, probe.status, summary, probe.body);
    VerbSummary prioritize_summary;
    const Reply prioritized = service.handle(Verb::kPrioritize, body, prioritize_summary);
    bench::require_answered(Verb::kPrioritize, prioritized.status, prioritize_summary, prioritized.body);
    const bench::VerbTimings verbs = bench::time_verbs(service, body);
    const bench::Timing& filter = verbs.filter;
    const bench::Timing& prioritize = verbs.prioritize;
    simdjson::dom::parser dom;
    const bench::Timing simd = bench::measure([&] {
      simdjson::dom::element doc;
      if (dom.parse(body.data(), body.size(), false).get(doc)) std::abort();
    });
    // Baseline: the whole body as a tree, passing nodes (the ones our filter passed) dumped back.
    const auto passing = nlohmann::json::parse(probe.body)["NodeNames"];
    std::vector<std::string> pass_names;
    for (const auto& n : passing) pass_names.push_back(n.get<std::string>());
    const bench::Timing tree = bench::measure(
        [&] {
          const auto args = nlohmann::json::parse(body);
          nlohmann::json out;
          out["NodeNames"] = pass_names;
          auto& items = out["Nodes"]["items"];
          items = nlohmann::json::array();
          if (args["Nodes"].is_object())
            for (const auto& node : args["Nodes"]["items"])
              if (std::find(pass_names.begin(), pass_names.end(), node["metadata"]["name"].get<std::string>()) !=
                  pass_names.end())
                items.push_back(node);
          std::string text = out.dump();
        },
        3000, 5, 50);

    const std::string name = path.substr(path.find_last_of('/') + 1);
    std::printf("%-34s %10zu %8.2fms %8.2fms %8.2fms %9.2fms %8.2fx %8.1fx\n", name.c_str(), body.size(),
                filter.median_ms, prioritize.median_ms, simd.median_ms, tree.median_ms,
                filter.median_ms / simd.median_ms, tree.median_ms / filter.median_ms);
    report.push_back({{"body", name},
                      {"bytes", body.size()},
                      {"nodes_in", summary.nodes_in},
                      {"nodes_passing", summary.nodes_out},
                      {"filter_ms", {{"median", filter.median_ms}, {"p90", filter.p90_ms}, {"runs", filter.runs}}},
                      {"prioritize_ms",
                       {{"median", prioritize.median_ms}, {"p90", prioritize.p90_ms}, {"runs", prioritize.runs}}},
                      {"simdjson_dom_parse_ms", {{"median", simd.median_ms}, {"runs", simd.runs}}},
                      {"nlohmann_tree_ms", {{"median", tree.median_ms}, {"runs", tree.runs}}},
                      {"filter_over_simdjson", filter.median_ms / simd.median_ms},
                      {"nlohmann_over_filter", tree.median_ms / filter.median_ms}});
  }
  std::ofstream(argv[1]) << report.dump(2) << "\n";
  return 0;
}
