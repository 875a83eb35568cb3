#!/usr/bin/env python3
"""``make dev-up``: the whole fleetsched stack on loopback, in the foreground, in one command.

Starts, each on a free loopback port: etcd and kube-apiserver with crds/ applied
(tests/support/controlplane.py, the binaries from hack/envtest.sh), kube-controller-manager with
its garbage collector (deleting a workload deletes its binding through the owner reference), the
namespaces, ``fleetsched webhook`` with a throwaway CA and registered by URL with the manifests'
webhook configurations, ``fleetsched controller --standalone=true`` and ``fleetsched scheduler``.
With ``--estimator NAME`` it also starts a member kube-apiserver and ``fleetsched estimator`` for
the Cluster ``NAME`` behind Karmada's ExternalName Service, and the scheduler asks it. With
``--descheduler`` it also starts ``fleetsched descheduler`` (every 30 s; pods unschedulable for a
minute are moved; with ``--estimator``, that member's estimator is the one it asks).

Prints the lines of a first walk-through (tests/e2e/test_dev_up.py runs each of them), then
``dev-up: ready`` (a test waits for that line). Ctrl-C (or SIGTERM) stops every process it
started, newest first. Logs stay in ``--dir``; without it, in a temporary directory that is removed
at stop (its name is printed at start and at stop). Every component runs with the admin kubeconfig:
RBAC is what ``tests/e2e/test_story.py`` checks. The controller watches ClusterRoles beside its
default kinds, for examples/cluster-policies.yaml.

Scheduler flags: ``--scheduler-args="--feature-gates=... --config=FILE"`` (with ``=``: the value
starts with ``--``; split as a shell would), or ``--overcommit-protection`` for ``--feature-gates
SchedulingOvercommitProtection=true``.

The live burst: ``hack/dev_up.py --overcommit-protection`` and the walk-through. examples/policies.yaml
asks more of examples/fleet.yaml than it has: without the gate every binding is placed (each
decision sees the whole free capacity, as before the members report what they run); with it the
bindings late in the queue stay Unschedulable (cache-deployment, when they arrive in file order),
their message naming the capacity assumed for those placed before them, until the assumptions
expire (5 minutes: no member reports here). ``kubectl apply -f examples/burst.yaml`` then adds 12
Deployments of 10 x 4 cpu at once; ``fleetsched simulate examples/fleet.yaml examples/burst.yaml
--feature-gates SchedulingOvercommitProtection=true`` shows the same burst offline (7 placed, 5 not).

    hack/dev_up.py [--dir DIR] [--estimator CLUSTER] [--descheduler] [--overcommit-protection]
                   [--scheduler-args=ARGS]
"""

from __future__ import annotations

import argparse
import base64
import copy
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from fleetsched.webhook.testing import make_certificates  # noqa: E402
from tests.support.controlplane import (  # noqa: E402
    ControlPlane,
    ControlPlaneUnavailable,
    free_port,
)

NAMESPACES = ("karmada-system", "fleetsched-system", "shop", "analytics")
WEBHOOK_CONFIGURATION = ROOT / "manifests" / "webhook" / "base" / "webhook-configuration.yaml"
READY_LINE = "dev-up: ready"


def log(message: str) -> None:
    print(f"dev-up: {message}", file=sys.stderr, flush=True)


@dataclass
class Component:
    """One ``python -m fleetsched`` process with /readyz on ``probe_port``."""

    name: str
    argv: list[str]
    probe_port: int
    log_path: Path
    process: subprocess.Popen[bytes] | None = None

    def start(self, *, timeout: float = 120.0) -> None:
        with self.log_path.open("wb") as out:
            self.process = subprocess.Popen([sys.executable, "-m", "fleetsched", *self.argv], cwd=ROOT,
                                            stdout=out, stderr=subprocess.STDOUT,
                                            start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.process.returncode}:\n{self.tail()}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.probe_port}/readyz", timeout=2):
                    return
            except (OSError, urllib.error.URLError):
                time.sleep(0.3)
        raise RuntimeError(f"{self.name} not ready after {timeout:.0f}s:\n{self.tail()}")

    def tail(self, lines: int = 20) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def probe_flags(port: int) -> list[str]:
    return [f"--metrics-bind-address=127.0.0.1:{port}", f"--health-probe-bind-address=127.0.0.1:{port}"]


def webhook_configurations(port: int, ca_file: Path) -> str:
    """The manifests' registrations with clientConfig pointing at the loopback URL, under names of
    their own (fleetsched-dev-up-...): a registration by URL and the chart's or the manifests' by
    Service under one name would merge webhook by webhook, which the API server refuses."""
    docs = [d for d in yaml.safe_load_all(WEBHOOK_CONFIGURATION.read_text()) if d]
    bundle = base64.b64encode(ca_file.read_bytes()).decode()
    out = []
    for doc in docs:
        doc = copy.deepcopy(doc)
        doc["metadata"]["name"] = doc["metadata"]["name"].replace("fleetsched-", "fleetsched-dev-up-", 1)
        for hook in doc["webhooks"]:
            path = hook["clientConfig"].pop("service")["path"]
            hook["clientConfig"]["url"] = f"https://127.0.0.1:{port}{path}"
            hook["clientConfig"]["caBundle"] = bundle
        out.append(doc)
    return yaml.safe_dump_all(out, sort_keys=False)


def estimator_service(cluster: str, port: int) -> str:
    """Karmada's ExternalName Service for a member's estimator, pointing at loopback."""
    return yaml.safe_dump({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": f"karmada-scheduler-estimator-{cluster}", "namespace": "karmada-system"},
        "spec": {"type": "ExternalName", "externalName": "localhost",
                 "ports": [{"port": 10352, "targetPort": port}]},
    })


# The controller's kinds: its defaults and ClusterRoles (examples/cluster-policies.yaml).
CONTROLLER_RESOURCES = "--resources=*,clusterroles.rbac.authorization.k8s.io"
OVERCOMMIT_GATE = "--feature-gates=SchedulingOvercommitProtection=true"


def walk_through(
    kubeconfig: Path, estimator: str | None, *, overcommit_protection: bool = False
) -> list[str]:
    """The lines a new user pastes, in order; tests/e2e/test_dev_up.py runs every one of them
    (comments are skipped, ``fleetsched`` is the installed command)."""
    lines = [
        f"export KUBECONFIG={kubeconfig}",
        "kubectl apply -f examples/fleet.yaml",
        "# no member agent reports the Clusters' status here: write it through the status subresource",
        "kubectl apply --server-side --subresource=status -f examples/fleet.yaml",
        "kubectl apply -f examples/policies.yaml -f examples/cluster-policies.yaml",
        "kubectl get rb -A && kubectl get crb",
        "kubectl get rb -n shop web-deployment -o yaml   # spec.clusters and the Scheduled condition",
        "fleetsched explain rb/shop/web-deployment   # why it went there",
        "fleetsched explain crb/fleet-reader-clusterrole",
    ]
    if overcommit_protection:
        lines += [
            "# SchedulingOvercommitProtection: the bindings late in the queue wait Unschedulable, their",
            "# message naming the capacity assumed for those placed before them; then a burst of 12 more",
            "kubectl apply -f examples/burst.yaml && kubectl get rb -n shop",
        ]
    lines.append("kubectl delete deployment -n shop web && kubectl get rb -n shop   # the garbage collector")
    if estimator:
        lines.append(f"# the member {estimator!r} has its own kube-apiserver (KUBECONFIG above); "
                     "the scheduler asks its estimator")
    return lines


def scheduler_flags(args: argparse.Namespace) -> list[str]:
    """The scheduler's own flags: --scheduler-args split as a shell would, then the gate option."""
    flags = shlex.split(args.scheduler_args or "")
    if args.overcommit_protection:
        flags.append(OVERCOMMIT_GATE)
    return flags


def run(args: argparse.Namespace) -> int:
    try:
        extra = scheduler_flags(args)
    except ValueError as exc:
        print(f"error: --scheduler-args: {exc}", file=sys.stderr)
        return 2
    temporary = not args.dir
    workdir = Path(args.dir).resolve() if args.dir else Path(tempfile.mkdtemp(prefix="fleetsched-dev-"))
    if not temporary and workdir.exists() and any(workdir.iterdir()):
        print(f"error: --dir {workdir}: is not empty", file=sys.stderr)
        return 2
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        return _run(args, workdir, extra)
    finally:
        if temporary:
            shutil.rmtree(workdir, ignore_errors=True)
            log(f"removed {workdir} (--dir DIR keeps the logs)")


def _run(args: argparse.Namespace, workdir: Path, extra: list[str]) -> int:
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())

    log("starting etcd, kube-apiserver and the garbage collector (binaries are built on the first run)")
    try:
        plane = ControlPlane.start(workdir=workdir / "controlplane", with_controller_manager=True)
    except ControlPlaneUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    components: list[Component] = []
    try:
        kubeconfig = plane.kubeconfig
        for namespace in NAMESPACES:
            plane.kubectl("create", "namespace", namespace, check=False)

        ca_file = make_certificates(workdir / "webhook-certs")
        webhook_port, webhook_probe = free_port(), free_port()
        webhook = Component("webhook", [
            "webhook", "--bind-address=127.0.0.1", f"--secure-port={webhook_port}",
            f"--cert-dir={ca_file.parent}", f"--kubeconfig={kubeconfig}", *probe_flags(webhook_probe),
        ], webhook_probe, workdir / "webhook.log")
        components.append(webhook)
        log(f"starting the webhook on https://127.0.0.1:{webhook_port}")
        webhook.start()
        plane.apply(webhook_configurations(webhook_port, ca_file))

        estimator_flags: list[str] = []
        if args.estimator:
            member = plane.add_apiserver(args.estimator)
            grpc_port, estimator_probe = free_port(), free_port()
            estimator = Component("estimator", [
                "estimator", f"--cluster-name={args.estimator}", f"--kubeconfig={member.kubeconfig}",
                "--server-bind-address=127.0.0.1", f"--server-port={grpc_port}",
                *probe_flags(estimator_probe),
            ], estimator_probe, workdir / "estimator.log")
            components.append(estimator)
            log(f"starting the estimator for {args.estimator} on 127.0.0.1:{grpc_port}")
            estimator.start()
            plane.apply(estimator_service(args.estimator, grpc_port))
            estimator_flags = ["--enable-scheduler-estimator=true"]
            print(f"member {args.estimator}: export KUBECONFIG={member.kubeconfig}", flush=True)

        started: list[tuple[str, list[str]]] = [
            ("controller", ["controller", "--standalone=true", CONTROLLER_RESOURCES]),
            ("scheduler", ["scheduler", *estimator_flags, *extra]),
        ]
        if args.descheduler:
            started.append(("descheduler", ["descheduler", "--leader-elect=false",
                                            "--descheduling-interval=30s", "--unschedulable-threshold=1m"]))
        for name, argv in started:
            port = free_port()
            component = Component(name, [*argv, f"--kubeconfig={kubeconfig}", *probe_flags(port)],
                                  port, workdir / f"{name}.log")
            components.append(component)
            log(f"starting the {name} (metrics and probes on 127.0.0.1:{port})")
            component.start()

        kept = "" if args.dir else " (a temporary directory, removed at stop: --dir DIR keeps it)"
        print(f"fleetsched is live on {plane.apiserver.url}; logs in {workdir}{kept}", flush=True)
        print("a first walk-through, from the repository's root:", flush=True)
        burst = args.overcommit_protection
        for line in walk_through(kubeconfig, args.estimator, overcommit_protection=burst):
            print(f"  {line}", flush=True)
        print(f"{READY_LINE} (press Ctrl-C to stop)", flush=True)
        while not stop.wait(1.0):
            for component in components:
                if not component.alive():
                    print(f"error: {component.name} exited; stopping:\n{component.tail()}", file=sys.stderr)
                    return 1
            if plane.apiserver.process is None or plane.apiserver.process.poll() is not None:
                print("error: kube-apiserver exited; stopping", file=sys.stderr)
                return 1
        return 0
    except (RuntimeError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        log("stopping")
        for component in reversed(components):
            component.stop()
        plane.stop()
        log("stopped")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="hack/dev_up.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", help="working directory for data, certificates and logs (default: temp)")
    parser.add_argument("--estimator", metavar="CLUSTER",
                        help="also start a member kube-apiserver and an estimator for the Cluster CLUSTER")
    parser.add_argument("--descheduler", action="store_true",
                        help="also start the descheduler (fleetsched descheduler: every 30s, a 1m threshold)")
    parser.add_argument("--scheduler-args", metavar="ARGS", default="",
                        help="more flags for `fleetsched scheduler`, split as a shell would; give it with "
                        "'=' (e.g. --scheduler-args=\"--feature-gates=WorkloadAffinity=true --config=FILE\")")
    parser.add_argument("--overcommit-protection", action="store_true",
                        help="the scheduler with --feature-gates SchedulingOvercommitProtection=true; the "
                        "walk-through adds the live burst (examples/burst.yaml)")
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
