#!/usr/bin/env python3
"""The end-to-end suite on one real control plane: run_e2e.py --bin DIR --extender BINARY [--only NAME,...].

Starts etcd, kube-apiserver and kube-controller-manager (ReplicaSet, Job, garbage collector) from DIR once, then,
for each scenario of the modules in MODULES (one a feature, run in that order), the shipped RBAC, the real
gpu-extender and kube-scheduler with the shipped configuration; after each, stops both and deletes what it made.
Prints one line per scenario with its figures and a summary; exits 1 if any scenario failed (its assertion and
the last lines of each log are printed), 2 if --only names a scenario there is not. Work folders (logs,
certificates, configurations) stay in --work for a failed run."""
import argparse
import contextlib
import os
import shutil
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import deployment  # noqa: E402
import autoscaler_scenarios  # noqa: E402
import burst_scenarios  # noqa: E402
import deletion_cost_scenarios  # noqa: E402
import dra_scenarios  # noqa: E402
import gpu_sharing_scenarios  # noqa: E402
import group_preemption_scenarios  # noqa: E402
import group_scenarios  # noqa: E402
import helm_scenarios  # noqa: E402
import native_group_scenarios  # noqa: E402
import objects  # noqa: E402
import placement_scenarios  # noqa: E402
import plane  # noqa: E402
import preemption_scenarios  # noqa: E402
import throughput_scenarios  # noqa: E402

REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
# The scenario modules, each its SCENARIOS in order: the suite runs them in this order.
MODULES = [placement_scenarios, burst_scenarios, gpu_sharing_scenarios, deletion_cost_scenarios, group_scenarios,
           preemption_scenarios, group_preemption_scenarios, native_group_scenarios, dra_scenarios, autoscaler_scenarios, helm_scenarios,
           throughput_scenarios]


class Env:
    """What a scenario works with: the API, the release's minor version, and deploy/reset."""

    def __init__(self, control_plane, extender_binary, helm=None, karpenter=None):
        self.plane = control_plane
        self.helm = helm  # the real helm binary (tests/e2e/helm/build.sh), for the chart's scenario
        self.repo = REPO
        self.karpenter = karpenter  # (binary, module folder) of Karpenter's kwok provider, or None
        self.api = control_plane.kube
        self.extender_binary = extender_binary
        self.minor = int(control_plane.version().split(".")[1])
        self.extender = None
        self.scheduler = None
        self.namespaces = set()

    def deploy(self, mode, extender_args=(), client_connection=None, with_extender=True):
        """The extender and the second scheduler, as rendered for `mode` (deployment.RENDERED: names, full,
        gpu-share, deletion-costs, dra-claims);
        `client_connection` replaces the scheduler's client settings (all but its kubeconfig); without the
        extender, the scheduler runs the same profile with no extenders (the extender still starts, idle)."""
        kubeconfigs = deployment.install(self.plane, REPO, mode)
        self.extender = deployment.Extender(self.plane, REPO, self.extender_binary, kubeconfigs["gpu-extender"],
                                            mode, extender_args)
        self.scheduler = deployment.Scheduler(self.plane, REPO, mode, self.extender, kubeconfigs["gpu-scheduler"],
                                              client_connection, with_extender)
        return self.extender

    @contextlib.contextmanager
    def separate_plane(self, name, feature_gates, apiserver_flags=()):
        """A second control plane of the same release with feature gates on (scheduler and API server), for
        a scenario that needs them; stopped when the block ends."""
        control_plane = plane.ControlPlane(self.plane.bin, os.path.join(self.plane.work, name),
                                           apiserver_flags=apiserver_flags, feature_gates=feature_gates)
        other = Env(control_plane, self.extender_binary)
        try:
            yield other
        finally:
            other.reset()
            control_plane.stop()

    def log_size(self, process_name):
        """How long a process's log is now (a restarted process's log goes on in the same file)."""
        path = os.path.join(self.plane.work, f"{process_name}.log")
        return os.path.getsize(path) if os.path.exists(path) else 0

    def reset(self, keep_nodes=False):
        if self.scheduler:
            self.scheduler.stop()
        if self.extender:
            self.extender.stop()
        self.scheduler = self.extender = None
        namespaces = [n["metadata"]["name"] for n in self.api.get("/api/v1/namespaces")["items"]
                      if n["metadata"]["name"] not in ("default", "kube-system", "kube-public", "kube-node-lease",
                                                       deployment.NAMESPACE)]
        objects.delete_all(self.api, namespaces, keep_nodes)


def describe(figures):
    return ", ".join(f"{k} {v:.1f}" if isinstance(v, float) else f"{k} {v}" for k, v in figures.items())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True, help="folder of etcd, kube-apiserver, ... (controlplane/build.sh)")
    parser.add_argument("--extender", default=os.path.join(REPO, "build", "gpu-extender"),
                        help="the gpu-extender binary (default: build/gpu-extender)")
    parser.add_argument("--work", default=None, help="where logs go (default: a new folder under /tmp)")
    parser.add_argument("--only", default="", help="comma-separated scenario names (one no scenario has: exit 2)")
    parser.add_argument("--helm", default=os.environ.get("HELM", ""), help="the helm binary (helm/build.sh)")
    parser.add_argument("--karpenter", default=os.environ.get("KARPENTER", ""),
                        help="Karpenter's kwok binary and its module folder, as 'BIN:DIR' (karpenter/build.sh)")
    args = parser.parse_args()
    every = [s for module in MODULES for s in module.SCENARIOS]
    names = [n for n in args.only.split(",") if n]
    # A name that matches nothing is a typo or a renamed scenario: running the rest (or nothing) and passing
    # would hide it.
    unknown = [n for n in names if n not in {s.__name__ for s in every}]
    if unknown:
        parser.error(f"--only names no scenario called {', '.join(unknown)} "
                     f"(the scenarios: {', '.join(s.__name__ for s in every)})")
    chosen = [s for s in every if not names or s.__name__ in names]
    if any(s in helm_scenarios.SCENARIOS for s in chosen) and not os.access(args.helm, os.X_OK):
        parser.error("the chart's scenario needs --helm (or $HELM): tests/e2e/helm/build.sh builds it")
    work = args.work or tempfile.mkdtemp(prefix="gpu-extender-e2e.")  # after the checks: none left by a refusal

    started = time.monotonic()
    control_plane = plane.ControlPlane(args.bin, work)
    failures, skipped = [], []
    placed = 0
    try:
        env = Env(control_plane, os.path.abspath(args.extender), args.helm,
                  tuple(args.karpenter.split(":", 1)) if args.karpenter else None)
        version = control_plane.version()
        print(f"e2e {version}: control plane up in {time.monotonic() - started:.1f}s (work folder {work})", flush=True)
        for scenario in chosen:
            t0 = time.monotonic()
            try:
                figures = scenario(env)
                if "skipped" in figures:  # a scenario for other releases only
                    skipped.append(scenario.__name__)
                    print(f"e2e {version} SKIP {scenario.__name__}: {figures['skipped']}", flush=True)
                    continue
                placed += int(figures.get("pods placed", 0))
                print(f"e2e {version} PASS {scenario.__name__} ({time.monotonic() - t0:.1f}s): {describe(figures)}",
                      flush=True)
            except Exception as error:  # noqa: BLE001 - every failure is reported, then the next scenario runs
                failures.append(scenario.__name__)
                print(f"e2e {version} FAIL {scenario.__name__} ({time.monotonic() - t0:.1f}s): {error}", flush=True)
                traceback.print_exc()
                for process in control_plane.processes:
                    if process.name in ("gpu-extender", "kube-scheduler"):
                        print(f"--- last lines of {process.log_path}\n{process.tail(15)}")
            finally:
                env.reset()
    finally:
        control_plane.stop()
    ran = len(chosen) - len(skipped)
    print(f"e2e {version}: {ran - len(failures)}/{ran} scenarios passed"
          f"{f' ({len(skipped)} not for this release)' if skipped else ''} in "
          f"{time.monotonic() - started:.0f}s, {placed} pods placed by the real kube-scheduler through the extender" +
          (f"; failed: {', '.join(failures)}" if failures else ""), flush=True)
    if not failures and not args.work:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
