#!/usr/bin/env python3
"""Where the extender's CPU goes, from `perf script` output of a call-graph profile (bench/profile.sh).

Each sample is put in one share by the frames on its stack, the first rule that matches (so a bind's
TLS write counts as the bind, a filter's body decoding as the filter), and, apart, by the library its
innermost frame is in (kernel, TLS, cpp-httplib, ...). Samples under the first list of the cluster
(Reflector::list: the start, before the burst) are left out and counted on their own line.

Usage: perf script -i perf.data | bench/profile_shares.py
"""
import collections
import sys

# (share, substrings of a frame's symbol that put a sample there), first match wins.
SHARES = [
    ("binds: the /bind verb and its API request", ["verbs::bind", "ApiBinder::"]),
    ("filter: decode, judge, encode", ["verbs::filter"]),
    ("prioritize: decode, score, encode", ["verbs::prioritize"]),
    ("other verbs (preempt, explain)", ["verbs::preempt", "verbs::explain"]),
    ("request log: formatting a line", ["log_request"]),
    ("metrics: observing a request", ["Metrics::observe", "prometheus::"]),
    ("HTTP serving: writing answers", ["write_response_core", "ConnectionStream::flush", "send_held_then",
                                       "StreamExchange::answer"]),
    ("HTTP serving: waiting for a request", ["await_request"]),
    ("HTTP serving: reading requests, headers, routing", ["Server::process_request", "parse_simple_head",
                                                           "StreamExchange::read_body", "serve_simple",
                                                           "answer_verb"]),
    ("watch: reading and applying events", ["Reflector::watch", "Reflector::apply_event", "Reflector::run"]),
    ("API client, stack cut short (binds and watch: TLS reads, waits)", ["ApiClient::exchange", "ApiConnection::", "AnswerReader::"]),
    ("log writer thread", ["BatchedLogSink"]),
]
# Mostly stacks perf could not unwind past a thread's start (its kernel frames are still counted).
OTHER = "other (stack not unwound)"
LIBRARIES = [
    ("kernel", ["[kernel.kallsyms]", "[k]"]),
    ("TLS (libssl, libcrypto)", ["libssl", "libcrypto"]),
    ("cpp-httplib", ["libcpp-httplib"]),
    ("libc (memcpy, malloc, ...)", ["libc.so"]),
    ("libstdc++", ["libstdc++"]),
    ("spdlog, fmt", ["libspdlog", "libfmt"]),
    ("prometheus-cpp", ["libprometheus"]),
    ("simdjson", ["libsimdjson"]),
    ("gpu-extender's own code", ["gpu-extender"]),
]


def samples(lines):
    """Yields each sample's thread name and frames, innermost first (perf script: a header line that
    starts with the thread's name, then a frame a line)."""
    stack, thread = [], ""
    for line in lines:
        line = line.rstrip("\n")
        if not line.strip():
            if stack:
                yield thread, stack
            stack = []
        elif line[0] in "\t ":
            parts = line.strip().split(None, 1)
            if len(parts) == 2:
                stack.append(parts[1])
        else:
            if stack:
                yield thread, stack
            stack, thread = [], line.split(None, 1)[0]
    if stack:
        yield thread, stack


def main():
    shares, libraries, threads = collections.Counter(), collections.Counter(), collections.Counter()
    total = start_list = 0
    for thread, stack in samples(sys.stdin):
        if any("Reflector::list" in f for f in stack):
            start_list += 1
            continue
        total += 1
        share = next((name for name, keys in SHARES if any(k in f for f in stack for k in keys)), OTHER)
        shares[share] += 1
        threads[thread] += 1
        # An inlined frame names no library: the innermost frame that does.
        leaf = next((f for f in stack if not f.endswith("(inlined)")), stack[0])
        libraries[next((name for name, keys in LIBRARIES if any(k in leaf for k in keys)), "other")] += 1
    if total == 0:
        sys.exit("no samples: was the profile empty, or recorded without --call-graph?")
    print(f"{total} samples in the burst ({start_list} more in the first list of the cluster, left out)")
    print("by what the extender was doing:")
    for name, _ in SHARES + [(OTHER, None)]:
        if shares[name]:
            print(f"  {100.0 * shares[name] / total:5.1f}%  {name}")
    print("by thread (named by the extender; perf shows a name's first 15 characters):")
    for name, count in threads.most_common():
        print(f"  {100.0 * count / total:5.1f}%  {name}")
    print("by the library of the innermost frame:")
    for name, count in libraries.most_common():
        print(f"  {100.0 * count / total:5.1f}%  {name}")


if __name__ == "__main__":
    main()
