// The cluster view at scale, through the same code the watch uses (decode a watch event line, apply it):
//   * apply rate of pod events on one core (ADDED, then MODIFIED, then DELETED);
//   * resident memory of a view of N nodes and M pods;
//   * names-mode /filter and /prioritize in process with the view filled.
//
// Usage: cluster_view_bench OUT.json FULL_BODY.json NAMES_BODY.json [PODS]
//   FULL_BODY: a full-mode ExtenderArgs (its nodes fill the view); NAMES_BODY: the same cluster, names mode.
#include <malloc.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "bench_support.h"
#include "gpu_extender/state/cluster_view.h"
#include "gpu_extender/state/placement_ledger.h"
#include "gpu_extender/state/view_snapshot.h"
#include "verb_timing.h"

using namespace gpu_extender;

namespace {

// Resident memory after handing freed memory back to the system, so only live data counts.
long rss_kb() {
  malloc_trim(0);
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return 0;
}

// A realistic pod watch event (the generator's pod, ~2 KB), with its uid, name and node replaced.
struct PodEventTemplate {
  std::string before_uid, between_uid_and_node, after_node;
  std::string make(const std::string& type, size_t i, const std::string& node) const {
    return "{\"type\":\"" + type + "\",\"object\":" + before_uid + "uid-" + std::to_string(i) + between_uid_and_node +
           node + after_node + "}";
  }
};

PodEventTemplate pod_template(const nlohmann::json& pod) {
  nlohmann::json p = pod;
  p["metadata"]["uid"] = "@UID@";
  p["spec"]["nodeName"] = "@NODE@";
  p["status"]["phase"] = "Running";
  const std::string text = p.dump();
  const size_t uid = text.find("@UID@"), node = text.find("@NODE@");
  return {text.substr(0, uid), text.substr(uid + 5, node - uid - 5), text.substr(node + 6)};
}

// The names body again, `count` times, each with its NodeNames in the order kube-scheduler's parallel
// filter would produce: 16 workers take chunks of the node list in turn (parallelize.chunkSizeFor:
// sqrt(n), at most n/16+1) and append each node they pass as they finish it, so the chunks in flight
// interleave node by node.
std::vector<std::string> scheduler_ordered_bodies(const std::string& names_body, size_t count) {
  nlohmann::json body = nlohmann::json::parse(names_body);
  const std::vector<std::string> names = body["NodeNames"].get<std::vector<std::string>>();
  const size_t workers = 16;
  const size_t chunk = std::max<size_t>(1, std::min<size_t>(static_cast<size_t>(std::sqrt(names.size())),
                                                            names.size() / workers + 1));
  std::mt19937 random(1);
  std::vector<std::string> bodies;
  for (size_t b = 0; b < count; ++b) {
    std::vector<std::pair<size_t, size_t>> in_flight;  // [next, end) of each worker's chunk
    size_t next_chunk = 0;
    nlohmann::json ordered = nlohmann::json::array();
    while (true) {
      while (in_flight.size() < workers && next_chunk < names.size()) {
        in_flight.emplace_back(next_chunk, std::min(names.size(), next_chunk + chunk));
        next_chunk += chunk;
      }
      if (in_flight.empty()) break;
      const size_t worker = random() % in_flight.size();
      auto& [next, end] = in_flight[worker];
      ordered.push_back(names[next++]);
      if (next == end) {
        std::swap(in_flight[worker], in_flight.back());
        in_flight.pop_back();
      }
    }
    body["NodeNames"] = std::move(ordered);
    bodies.push_back(body.dump());
  }
  return bodies;
}

// The body's nodes, each as an ADDED watch event line, and their names.
struct NodeEvents {
  std::vector<std::string> names, lines;
};

NodeEvents node_events(const std::string& full_body_path, const ViewSchema& schema) {
  NodeEvents out;
  WireDecoder decoder;
  std::string full = bench::read_file(full_body_path);
  const ExtenderArgs& args = decoder.decode_extender_args(full, schema);
  for (const NodeView& n : args.nodes) {
    out.lines.push_back("{\"type\":\"ADDED\",\"object\":" + std::string(n.raw_json) + "}");
    out.names.emplace_back(n.name);
  }
  return out;
}

// A view of the nodes of `events`; `all_fit`: each made an 8-GPU A100 of 80 GB (every node feasible).
// A cluster view with the ledger that writes it, as the watch has them (PlacementLedger::observe_*).
struct Cluster {
  std::shared_ptr<ClusterView> view;
  std::shared_ptr<PlacementLedger> ledger;
  void mark_synced() const {
    ledger->observe_nodes_synced();
    ledger->observe_pods_synced();
  }
};

Cluster cluster_of(const NodeEvents& events, const ViewSchema& schema, bool all_fit) {
  auto view = std::make_shared<ClusterView>();
  Cluster cluster{view, std::make_shared<PlacementLedger>(view)};
  WireDecoder decoder;
  NodeView node;
  for (const std::string& line : events.lines) {
    if (!all_fit) {
      decoder.decode_event<NodeView>(line, schema, node);
    } else {
      nlohmann::json event = nlohmann::json::parse(line);
      nlohmann::json& object = event["object"];
      object["metadata"]["labels"]["gpu.nvidia.com/model"] = "A100";
      object["metadata"]["labels"]["gpu.nvidia.com/memory"] = "81920";
      object["metadata"]["labels"]["gpu.nvidia.com/count"] = "8";
      object["status"]["capacity"]["nvidia.com/gpu"] = "8";
      object["status"]["allocatable"]["nvidia.com/gpu"] = "8";
      decoder.decode_event<NodeView>(event.dump(), schema, node);
    }
    cluster.ledger->observe<stored::Nodes>(node);
  }
  return cluster;
}

// Pods through the watch code: generated in batches (not timed), applied through decode + upsert (timed).
struct PodLoad {
  PodEventTemplate tmpl;
  WireDecoder decoder;
  PodRequest pod;
  double seconds = 0;
  size_t applied = 0, bytes = 0;
  void apply(PlacementLedger& ledger, const ViewSchema& schema, const std::vector<std::string>& nodes, const std::string& type,
             size_t from, size_t to) {
    std::vector<std::string> batch;
    batch.reserve(to - from);
    for (size_t i = from; i < to; ++i) batch.push_back(tmpl.make(type, i, nodes[i % nodes.size()]));
    const auto t0 = std::chrono::steady_clock::now();
    for (const std::string& line : batch) {
      const WatchEventHeader h = decoder.decode_event<PodRequest>(line, schema, pod);
      if (h.type == "DELETED") ledger.observe_pod_deleted(pod.uid);
      else ledger.observe_pod(pod);
      bytes += line.size();
    }
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    applied += to - from;
  }
  void apply_all(PlacementLedger& ledger, const ViewSchema& schema, const std::vector<std::string>& nodes,
                 const std::string& type, size_t count) {
    for (size_t i = 0; i < count; i += 10000) apply(ledger, schema, nodes, type, i, std::min(count, i + 10000));
  }
};

// One names-mode /filter, checked: the benchmark stops when it fails.
VerbSummary checked_filter(const ExtenderService& service, const std::string& body, const char* what) {
  VerbSummary probe;
  const Reply reply = service.handle(Verb::kFilter, body, probe);
  if (reply.status != 200 || !probe.error.empty() || reply.body.find("\"Error\":\"\"") == std::string::npos) {
    std::cerr << what << ": names-mode filter failed (status " << reply.status << "): " << reply.body.substr(0, 300)
              << "\n";
    std::exit(1);
  }
  return probe;
}

struct Figures {
  size_t nodes, pods;
  double view_mib, process_mib;
  const PodLoad& load;
  const VerbSummary &probe, &all_fit_probe;
  const bench::VerbTimings &verbs, &scheduled, &all_fit;
  const bench::Timing &parse_only, &parse_and_lookup;
};

void report(const Figures& f, const char* out_path) {
  const double rate = static_cast<double>(f.load.applied) / f.load.seconds;
  std::printf("cluster view: %zu nodes, %zu pods: RSS %.1f MiB for the view (process %.1f MiB)\n", f.nodes,
              f.pods, f.view_mib, f.process_mib);
  std::printf("watch events applied: %zu in %.2f s on one core = %.0f events/s (%.1f MB/s of event JSON)\n",
              f.load.applied, f.load.seconds, rate, static_cast<double>(f.load.bytes) / f.load.seconds / 1e6);
  std::printf("names mode, %zu nodes in process: filter p50 %.3f ms (p90 %.3f), prioritize p50 %.3f ms (p90 %.3f); "
              "%zu of %zu nodes pass\n",
              f.nodes, f.verbs.filter.median_ms, f.verbs.filter.p90_ms, f.verbs.prioritize.median_ms, f.verbs.prioritize.p90_ms,
              f.probe.nodes_out, f.probe.nodes_in);
  std::printf("  of which: parsing the body p50 %.3f ms, parsing and looking up the names %.3f ms\n",
              f.parse_only.median_ms, f.parse_and_lookup.median_ms);
  std::printf("  prioritize sent what passed the filter, as kube-scheduler sends it: filter p50 %.3f ms, "
              "prioritize p50 %.3f ms\n",
              f.scheduled.filter.median_ms, f.scheduled.prioritize.median_ms);
  std::printf("  every node feasible (%zu of %zu pass): filter p50 %.3f ms (p90 %.3f), prioritize p50 %.3f ms (p90 %.3f)\n",
              f.all_fit_probe.nodes_out, f.all_fit_probe.nodes_in, f.all_fit.filter.median_ms, f.all_fit.filter.p90_ms,
              f.all_fit.prioritize.median_ms, f.all_fit.prioritize.p90_ms);
  const nlohmann::json report = {{"nodes", f.nodes},
                                 {"pods", f.pods},
                                 {"view_rss_mib", f.view_mib},
                                 {"process_rss_mib", f.process_mib},
                                 {"events_applied", f.load.applied},
                                 {"events_per_second", rate},
                                 {"names_filter_ms", {{"median", f.verbs.filter.median_ms}, {"p90", f.verbs.filter.p90_ms}}},
                                 {"names_prioritize_ms", {{"median", f.verbs.prioritize.median_ms}, {"p90", f.verbs.prioritize.p90_ms}}},
                                 {"scheduled_prioritize_ms", {{"median", f.scheduled.prioritize.median_ms}}},
                                 {"all_feasible_filter_ms", {{"median", f.all_fit.filter.median_ms}, {"p90", f.all_fit.filter.p90_ms}}},
                                 {"all_feasible_prioritize_ms",
                                  {{"median", f.all_fit.prioritize.median_ms}, {"p90", f.all_fit.prioritize.p90_ms}}}};
  std::ofstream(out_path) << report.dump(2) << "\n";
}

}  // namespace

// A member of a 64-pod group (preferred layer 3) in names mode, every node feasible: the first /filter
// plans the group and holds its room; the member's later /filter and /prioritize follow the plan, as
// every member after the first does. Printed, not in the JSON figures.
void time_group_member(const NodeEvents& nodes, const ViewSchema& schema, const std::shared_ptr<const Policy>& policy,
                       const std::string& names_body) {
  const Cluster cluster = cluster_of(nodes, schema, true);
  cluster.mark_synced();
  ServiceParts parts{policy, nullptr, cluster.view, nullptr};
  parts.ledger = cluster.ledger;
  const ExtenderService service(parts);
  nlohmann::json body = nlohmann::json::parse(names_body);
  auto& annotations = body["Pod"]["metadata"]["annotations"];
  annotations["gpu.nvidia.com/group"] = "bench";
  annotations["gpu.nvidia.com/group-size"] = "64";
  annotations["gpu.nvidia.com/preferred-topology"] = "topology.k8s.aws/network-node-layer-3";
  // Planning, 21 times: each a new group's first member (the last one's room given back first).
  std::vector<double> planning_ms;
  std::string member_body;
  VerbSummary first;
  for (int k = 0; k < 21; ++k) {
    parts.ledger->expire(PlacementLedger::Clock::now() + parts.ledger->options().group_ttl + std::chrono::seconds(1));
    annotations["gpu.nvidia.com/group"] = "bench-" + std::to_string(k);
    member_body = body.dump();
    first = checked_filter(service, member_body, "a group's first member");
    planning_ms.push_back(parts.ledger->stats().groups.last_planning_seconds * 1e3);
  }
  const GroupBook::Stats stats = parts.ledger->stats().groups;
  if (stats.planned != planning_ms.size()) {
    std::cerr << "a group's first member: the group was not planned\n";
    std::exit(1);
  }
  std::sort(planning_ms.begin(), planning_ms.end());
  const bench::VerbTimings member = bench::time_verbs(service, member_body);
  std::printf("names mode, %zu nodes, a member of a planned 64-pod group: filter p50 %.3f ms (p90 %.3f), prioritize "
              "p50 %.3f ms (p90 %.3f); %zu nodes pass; planning p50 %.3f ms (max %.3f)\n",
              nodes.names.size(), member.filter.median_ms, member.filter.p90_ms, member.prioritize.median_ms,
              member.prioritize.p90_ms, first.nodes_out, planning_ms[planning_ms.size() / 2], planning_ms.back());
}

// The same nodes with their GPUs published as DRA ResourceSlices instead of labels (each node's model,
// memory and count as its labels say, as NVIDIA's driver would publish them), and allocated claims
// holding 2 GPUs on every other node: names-mode /filter and /prioritize as scheduled, and claim watch
// events (decoded and applied) a second. Printed, not in the JSON figures.
void time_dra_inventory(const NodeEvents& nodes, const ViewSchema& schema, const std::shared_ptr<const Policy>& policy,
                        const std::vector<std::string>& bodies, const std::string& pod_text) {
  const Cluster cluster = cluster_of(nodes, schema, false);
  const std::shared_ptr<ClusterView>& view = cluster.view;
  WireDecoder decoder;
  NodeView node;
  for (const std::string& line : nodes.lines) {
    decoder.decode_event<NodeView>(line, schema, node);
    const int64_t count = node.gpu_count ? std::stoll(std::string(*node.gpu_count)) : 0;
    const int64_t mib = node.gpu_memory ? std::stoll(std::string(*node.gpu_memory)) : 0;
    DraSlice slice{std::string(node.name) + "-gpu.nvidia.com", std::string(node.name), std::string(node.name), 1, 1,
                   true, {}};
    for (int64_t i = 0; i < count; ++i) {
      DraDevice gpu{"gpu-" + std::to_string(i), DraDevice::Kind::kWholeGpu,
                    "NVIDIA " + std::string(node.gpu_model.value_or("")), "Ampere", mib << 20, {}, {}};
      gpu.physical = {"pci:0000:" + std::to_string(16 + i) + ":00.0", "uuid:GPU-" + std::string(node.name) + "-" +
                                                                           std::to_string(i)};
      slice.devices.push_back(std::move(gpu));
    }
    cluster.ledger->observe<stored::ResourceSlices>(std::move(slice));
  }
  // Claim events as the API server sends them, one per node of two; timed through decode and upsert.
  std::vector<std::string> claims;
  for (size_t i = 0; i < nodes.names.size(); i += 2) {
    const std::string& n = nodes.names[i];
    claims.push_back(R"({"type":"ADDED","object":{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":)"
                     R"({"name":"job-)" + std::to_string(i) + R"(-gpus","namespace":"train","uid":"c-)" + std::to_string(i) +
                     R"(","resourceVersion":"7"},"spec":{"devices":{"requests":[{"name":"gpus","exactly":{"deviceClassName":)"
                     R"("gpu.nvidia.com","count":2}}]}},"status":{"allocation":{"devices":{"results":[{"request":"gpus",)"
                     R"("driver":"gpu.nvidia.com","pool":")" + n + R"(","device":"gpu-0"},{"request":"gpus","driver":)"
                     R"("gpu.nvidia.com","pool":")" + n + R"(","device":"gpu-1"}]},"nodeSelector":{"nodeSelectorTerms":)"
                     R"([{"matchFields":[{"key":"metadata.name","operator":"In","values":[")" + n + R"("]}]}]}},)"
                     R"("reservedFor":[{"resource":"pods","name":"job","uid":"p-)" + std::to_string(i) + R"("}]}}})");
  }
  ResourceClaimView claim;
  const auto t0 = std::chrono::steady_clock::now();
  for (const std::string& line : claims) {
    decoder.decode_event<ResourceClaimView>(line, schema, claim);
    cluster.ledger->observe<stored::ResourceClaims>(DraClaim::of(claim, schema));
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  cluster.mark_synced();
  const ExtenderService service(ServiceParts{policy, nullptr, view, nullptr});
  const VerbSummary probe = checked_filter(service, bodies.front(), "a DRA inventory");
  const bench::VerbTimings timings = bench::time_cycles_as_scheduled(service, bodies, pod_text);
  const DraStats dra = view->dra_stats();
  std::printf("names mode, %zu nodes from DRA ResourceSlices (%lld GPUs, %zu claims holding %lld): filter p50 %.3f ms "
              "(p90 %.3f), prioritize p50 %.3f ms; %zu nodes pass; claim events applied: %.0f/s\n",
              dra.nodes, static_cast<long long>(dra.gpus), dra.claims, static_cast<long long>(dra.held_gpus),
              timings.filter.median_ms, timings.filter.p90_ms, timings.prioritize.median_ms, probe.nodes_out,
              static_cast<double>(claims.size()) / seconds);
}

int main(int argc, char** argv) {
  if (argc < 4) {
    std::cerr << "usage: cluster_view_bench OUT.json FULL_BODY.json NAMES_BODY.json [PODS]\n";
    return 2;
  }
  const size_t pod_count = argc > 4 ? std::stoul(argv[4]) : 150000;
  auto policy = Policy::build(default_policy_config());
  const ViewSchema& schema = policy->schema();
  const NodeEvents nodes = node_events(argv[2], schema);
  const std::string names_body = bench::read_file(argv[3]);
  // Most pods of a cluster hold no GPU: the template keeps the generator's pod (its size and shape)
  // without its GPU request, so the names-mode filter below still finds free GPUs.
  nlohmann::json pod_json = nlohmann::json::parse(names_body)["Pod"];
  for (auto& c : pod_json["spec"]["containers"]) c["resources"] = nlohmann::json::object();
  const long rss_start = rss_kb();
  const Cluster cluster = cluster_of(nodes, schema, false);
  const std::shared_ptr<ClusterView>& view = cluster.view;
  PodLoad load{pod_template(pod_json), {}, {}, 0, 0, 0};
  load.apply_all(*cluster.ledger, schema, nodes.names, "ADDED", pod_count);
  cluster.mark_synced();
  const long rss_loaded = rss_kb();
  load.apply_all(*cluster.ledger, schema, nodes.names, "MODIFIED", pod_count / 3);

  // Names mode with the view filled, as kube-scheduler calls it: /filter then /prioritize for each pod,
  // alternately, each with the names in a new order. The scheduler's filter runs on 16 goroutines,
  // each appending the nodes it passes to one list as it goes, so the names arrive interleaved in a
  // different order pod after pod (findNodesThatPassFilters); the bench does the same.
  const ExtenderService service(ServiceParts{policy, nullptr, view, nullptr});
  const VerbSummary probe = checked_filter(service, names_body, "the filled view");
  const std::vector<std::string> bodies = scheduler_ordered_bodies(names_body, 16);
  const bench::VerbTimings verbs = bench::time_scheduling_cycles(service, bodies);
  const std::string pod_text = nlohmann::json::parse(names_body)["Pod"].dump();
  const bench::VerbTimings scheduled = bench::time_cycles_as_scheduled(service, bodies, pod_text);

  // Every node feasible (the most /prioritize is ever sent), with nothing in use, in a view of its own.
  const Cluster all_fit_cluster = cluster_of(nodes, schema, true);
  all_fit_cluster.mark_synced();
  const ExtenderService all_fit_service(ServiceParts{policy, nullptr, all_fit_cluster.view, nullptr});
  const VerbSummary all_fit_probe = checked_filter(all_fit_service, names_body, "every node feasible");
  if (all_fit_probe.nodes_out * 10 < all_fit_probe.nodes_in * 8) {
    std::cerr << "every node feasible: only " << all_fit_probe.nodes_out << " of " << all_fit_probe.nodes_in
              << " nodes passed\n";
    return 1;
  }
  const bench::VerbTimings all_fit = bench::time_cycles_as_scheduled(all_fit_service, bodies, pod_text);
  time_group_member(nodes, schema, policy, names_body);
  time_dra_inventory(nodes, schema, policy, bodies, pod_text);
  // Where a request's time goes: parsing the body alone, and parsing plus looking the names up.
  std::vector<std::string> padded(bodies.begin(), bodies.end());
  for (std::string& b : padded) b.reserve(b.size() + kJsonPadding);
  WireDecoder phase_decoder;
  ViewSnapshot phase_snapshot;
  std::vector<uint32_t> phase_slots;
  size_t next_body = 0;
  const bench::Timing parse_only = bench::measure(
      [&] { phase_decoder.decode_extender_args(padded[next_body++ % padded.size()], schema); });
  const bench::Timing parse_and_lookup = bench::measure([&] {
    const ExtenderArgs& args = phase_decoder.decode_extender_args(padded[next_body++ % padded.size()], schema);
    phase_snapshot.update_and_find(*view, args.node_names, phase_slots);
  });

  load.apply_all(*cluster.ledger, schema, nodes.names, "DELETED", pod_count);
  const Figures figures{nodes.names.size(), pod_count, (rss_loaded - rss_start) / 1024.0, rss_loaded / 1024.0,
                        load, probe, all_fit_probe, verbs, scheduled, all_fit, parse_only, parse_and_lookup};
  report(figures, argv[1]);
  return 0;
}
