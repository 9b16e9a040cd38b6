#!/usr/bin/env python3
"""Assembles the benchmark pieces in bench/results/ into results.json and prints the table."""
import json
import sys
from pathlib import Path

out = Path(sys.argv[1])
inprocess = json.loads((out / "inprocess.json").read_text())
http = [json.loads(line) for line in (out / "http.jsonl").read_text().splitlines() if line.strip()]
throughput = [json.loads(line) for line in (out / "throughput.jsonl").read_text().splitlines() if line.strip()]
rss = json.loads((out / "rss.json").read_text())
soak = json.loads((out / "soak.json").read_text())
cluster = json.loads((out / "cluster_view.json").read_text())

print("\nIn process, medians (decode + policy + encode; references on the same bytes)")
print(f"{'body':30} {'MB':>7} {'filter':>9} {'prio':>9} {'simdjson':>9} {'nlohmann':>10} {'filt/simd':>9} {'nl/filt':>8}")
for r in inprocess:
    print(f"{r['body']:30} {r['bytes']/1e6:7.2f} {r['filter_ms']['median']:8.2f}ms {r['prioritize_ms']['median']:8.2f}ms "
          f"{r['simdjson_dom_parse_ms']['median']:8.2f}ms {r['nlohmann_tree_ms']['median']:9.1f}ms "
          f"{r['filter_over_simdjson']:8.2f}x {r['nlohmann_over_filter']:7.1f}x")

print("\nEnd to end over loopback HTTP (full mode, GPU pod), against the bare cpp-httplib floor")
print(f"{'nodes':>6} {'verb':11} {'p50':>9} {'p99':>9} {'floor p50':>10} {'floor p99':>10} {'p50/floor':>9}")
failed = [r for r in http if r["extender"]["errors"] or r["floor"]["errors"]] + [t for t in throughput if t["errors"]]
if failed:
    sys.exit(f"benchmark refused: requests failed in {failed}")
for r in http:
    e, f = r["extender"], r["floor"]
    print(f"{r['nodes']:6} {r['verb']:11} {e['p50_ms']:8.2f}ms {e['p99_ms']:8.2f}ms {f['p50_ms']:9.2f}ms "
          f"{f['p99_ms']:9.2f}ms {e['p50_ms']/f['p50_ms']:8.2f}x  ({e['requests']} requests, {e['errors']} errors)")

print("\nThroughput, 100-node filter")
for t in throughput:
    print(f"  concurrency {t['concurrency']:3}: {t['requests_per_s']:8.1f} req/s, {t['errors']} errors")

body_mb = rss["body_bytes"] / 1e6
peak_mb = rss["peak_rss_kb"] / 1024
print(f"\nPeak RSS serving the 5,000-node filter: {peak_mb:.1f} MiB (body {body_mb:.1f} MB; "
      f"target 2.5 x body + 30 MB = {2.5*body_mb+30:.0f} MB)")
s = soak["result"]
print(f"Soak {soak['seconds']}s at concurrency 64: {s['ok']} ok, {s['errors']} errors; RSS "
      f"{soak['rss_kb_after_warmup']/1024:.1f} MiB after warm-up, {soak['rss_kb_after_soak']/1024:.1f} MiB after")

print(f"\nCluster view: {cluster['nodes']} nodes + {cluster['pods']} pods = {cluster['view_rss_mib']:.1f} MiB resident; "
      f"{cluster['events_per_second']:.0f} watch events/s on one core")
print(f"Names mode with the view filled, in process: filter p50 {cluster['names_filter_ms']['median']:.2f} ms, "
      f"prioritize p50 {cluster['names_prioritize_ms']['median']:.2f} ms")

results = {"cluster_view": cluster, "inprocess": inprocess, "http": http, "throughput": throughput, "peak_rss": rss, "soak": soak}
(out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
print(f"\nwritten: {out / 'results.json'}")
