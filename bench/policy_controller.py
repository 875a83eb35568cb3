"""The policy controller (``fleetsched controller``) end to end on a real kube-apiserver + etcd.

    .venv/bin/python bench/policy_controller.py [--templates 1000] [--policies 200] [--rounds 2]
        [--baseline-ref REF | --baseline-tree DIR] [--workers N] [--standalone=false]

Each run starts a kube-apiserver of its own on one shared etcd (the CRDs applied, nothing else in
it), then ``fleetsched controller`` as a process (``--leader-elect=false``, ``--kube-api-qps=0``,
``--standalone=true`` as the install runs it unless told otherwise), waits until it is ready and
idle, and measures five phases in one namespace:

1. policy first, then templates: one PropagationPolicy selecting label ``bench=tmpl``, then
   ``--templates`` Deployments with that label created ``--concurrency`` at a time. templates/s is
   N over the time from the first creation to the last ResourceBinding seen (a watch of the
   namespace's bindings, the same in every run); latency creation -> binding p50/p99.
2. status events: the ``status`` of every template patched (what the deployment controller does
   all day): events the controller must read and drop. No binding changes.
3. template updates: ``spec.replicas`` of every template changed; templates/s until every binding
   carries the new replicas.
4. policies: ``--policies`` templates no policy selects, then one PropagationPolicy per template
   (selecting it by label) created at once; policies/s until every one's binding exists.
5. for each phase: the controller's CPU milliseconds per template event (per policy in phase 4),
   counted from the first request until the controller is idle again (so its tail of Events and
   claims is in), kube-apiserver's and etcd's, the applies the controller counted by result, and
   the load average. Between phases the bench waits until the controller is idle and its applies
   counter still, so one phase's tail (the echoes of its own writes) is not counted in the next.

``--baseline-ref REF`` runs the same with the code of another git commit (a detached ``git
worktree`` of REF in a temporary directory, run by the same Python with that tree first on its
path); ``--baseline-tree DIR`` with the code of a working tree as it is on disk (uncommitted
changes included). The two alternate round by round (the order flips) and the median of each
figure and the ratio current / baseline are printed: the comparison of two versions in one run.
The current code is this file's tree.

Prints figures; it asserts nothing about time. Exits 1 when a binding never appeared (INCOMPLETE).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from operator_e2e import baseline_tree, cpu_seconds, peak_rss_mib, run_pool, wait_idle  # noqa: E402

from fleetsched.kube.client import ApiError, KubeClient, load_connection  # noqa: E402
from fleetsched.kube.watch import Watch, WatchSettings  # noqa: E402
from tests.support.controlplane import APIServer, ControlPlane  # noqa: E402
from tests.support.processes import SchedulerProcess  # noqa: E402

NAMESPACE = "bench-policy"
DEPLOYMENTS = f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments"
POLICIES = f"/apis/policy.karmada.io/v1alpha1/namespaces/{NAMESPACE}/propagationpolicies"
BINDINGS = f"/apis/work.karmada.io/v1alpha2/namespaces/{NAMESPACE}/resourcebindings"
PP_LABEL = "propagationpolicy.karmada.io/permanent-id"
MERGE = "application/merge-patch+json"
STALL = 60.0  # seconds without progress before a phase is given up (INCOMPLETE)


@dataclass
class ControllerProcess(SchedulerProcess):
    """``fleetsched controller``; with ``tree``, that tree's code (its directory first on the module
    path, so its ``fleetsched`` is the one imported; the first log line names the file)."""

    tree: Path | None = None

    def argv(self) -> list[str]:
        args = [
            "controller",
            f"--kubeconfig={self.kubeconfig}",
            f"--health-probe-bind-address=127.0.0.1:{self.port}",
            f"--metrics-bind-address=127.0.0.1:{self.port}",
            *self.extra_args,
        ]
        if self.tree is None:
            return [sys.executable, "-m", "fleetsched", *args]
        boot = (
            f"import runpy, sys; sys.path.insert(0, {str(self.tree)!r}); import fleetsched; "
            "print('baseline fleetsched from', fleetsched.__file__, file=sys.stderr, flush=True); "
            "runpy.run_module('fleetsched', run_name='__main__', alter_sys=True)"
        )
        return [sys.executable, "-c", boot, *args]


@contextlib.contextmanager
def given_tree(path: str) -> Iterator[tuple[str, Path]]:
    tree = Path(path).resolve()
    if not (tree / "fleetsched" / "__init__.py").is_file():
        raise SystemExit(f"error: --baseline-tree {path}: no fleetsched/ package in it")
    yield str(tree), tree


def compared_trees(stack: contextlib.ExitStack, args: argparse.Namespace) -> list[tuple[str, Path | None]]:
    """The code each round runs: this tree (None), and ``--baseline-ref``'s worktree or
    ``--baseline-tree`` as given (closed with ``stack``)."""
    variants: list[tuple[str, Path | None]] = [("current", None)]
    if args.baseline_ref:
        commit, tree = stack.enter_context(baseline_tree(args.baseline_ref))
        variants.append((args.baseline_ref, tree))
        print(f"baseline: {args.baseline_ref} = {commit[:12]}")
    elif args.baseline_tree:
        _, tree = stack.enter_context(given_tree(args.baseline_tree))
        variants.append((args.baseline_tree, tree))
    return variants


def deployment(name: str, labels: dict[str, str], replicas: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"app": name, **labels}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "registry.example/app:1",
                                         "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]},
            },
        },
    }


def policy(name: str, number: int, match: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
        "metadata": {"name": name, "namespace": NAMESPACE,
                     "labels": {PP_LABEL: f"00000000-0000-4000-8000-{number:012d}"}},
        "spec": {
            "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                   "labelSelector": {"matchLabels": match}}],
            "placement": {"clusterAffinity": {"clusterNames": ["m1", "m2"]}},
        },
    }


class BindingWatch:
    """The measuring watch (the reflector of kube/watch.py on the namespace's bindings): when each
    expected binding first met the phase's condition."""

    def __init__(self, client: KubeClient) -> None:
        self.objects: dict[str, dict[str, Any]] = {}
        self.expected: set[str] = set()
        self.condition: Callable[[dict[str, Any]], bool] = lambda _: True
        self.seen: dict[str, float] = {}
        self.watch = Watch(client, BINDINGS, self._on_event, api_version="work.karmada.io/v1alpha2",
                           kind="ResourceBinding", settings=WatchSettings(backoff_initial=0.1))
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._task = asyncio.create_task(self.watch.run())
        await self.watch.listed.wait()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def expect(self, names: set[str], condition: Callable[[dict[str, Any]], bool]) -> None:
        self.expected, self.condition, self.seen = names, condition, {}
        now = time.perf_counter()
        for name in names:
            obj = self.objects.get(name)
            if obj is not None and condition(obj):
                self.seen[name] = now

    def _on_event(self, kind: str | None, obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        if kind == "DELETED":
            self.objects.pop(name, None)
            return
        self.objects[name] = obj
        if name in self.expected and name not in self.seen and self.condition(obj):
            self.seen[name] = time.perf_counter()

    async def wait(self) -> float | None:
        """The time the last expected binding met the condition; None if progress stalled."""
        last_progress, count = time.perf_counter(), -1
        while len(self.seen) < len(self.expected):
            if len(self.seen) != count:
                last_progress, count = time.perf_counter(), len(self.seen)
            elif time.perf_counter() - last_progress > STALL:
                return None
            await asyncio.sleep(0.05)
        return max(self.seen.values(), default=time.perf_counter())


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0


@dataclass
class Phase:
    name: str
    count: int  # template events (or policies) of the phase
    rate: float | None  # per second until the last binding met the condition (None: no binding waited)
    cpu: dict[str, float]  # CPU seconds by process
    applies: dict[str, float]
    latency: tuple[float, float] | None
    load: float
    incomplete: int = 0

    def line(self) -> str:
        per = "policy" if self.name == "policies" else "template event"
        rate = f"{self.rate:7.1f}/s; " if self.rate is not None else " " * 11
        cpu = ", ".join(f"{name} {1000 * used / self.count:.2f}" for name, used in self.cpu.items())
        applies = ", ".join(f"{k} {v:g}" for k, v in sorted(self.applies.items()) if v) or "none"
        latency = ""
        if self.latency:
            p50, p99 = (1000 * x for x in self.latency)
            latency = f"; creation -> binding p50 {p50:.0f} ms, p99 {p99:.0f} ms"
        missing = f"; INCOMPLETE: {self.incomplete} bindings never seen" if self.incomplete else ""
        return (f"    {self.name + ':':<17}{rate}CPU ms per {per}: {cpu}; applies: {applies}{latency}; "
                f"load average {self.load:.2f}{missing}")


APPLY_RESULTS = ("created", "updated", "unchanged", "waiting", "error")


def applies(proc: ControllerProcess) -> dict[str, float]:
    return {r: proc.metric("fleetsched_policy_controller_applies_total", result=r) for r in APPLY_RESULTS}


async def settle(proc: ControllerProcess, *, limit: float = 300.0) -> None:
    """Until the controller is idle and its applies counted nothing new for a second: the echoes of
    its own writes, which a loaded apiserver may deliver late, are handled before the next phase."""
    assert proc.process is not None
    started = time.perf_counter()
    while time.perf_counter() - started < limit:
        await wait_idle(proc.process.pid, limit=limit)
        before = applies(proc)
        await asyncio.sleep(1.0)
        if applies(proc) == before:
            return


class Run:
    """One controller on a fresh kube-apiserver: the phases of the module docstring."""

    def __init__(self, plane: ControlPlane, server: APIServer, client: KubeClient, proc: ControllerProcess,
                 args: argparse.Namespace) -> None:
        self.plane, self.server, self.client, self.proc, self.args = plane, server, client, proc, args
        self.bindings = BindingWatch(client)

    def pids(self) -> dict[str, int]:
        assert self.proc.process is not None and self.server.process is not None
        assert self.plane.etcd.process is not None
        return {"controller": self.proc.process.pid, "kube-apiserver": self.server.process.pid,
                "etcd": self.plane.etcd.process.pid}

    async def measure(self, name: str, count: int, action: Callable[[], Any], expected: set[str],
                      condition: Callable[[dict[str, Any]], bool] | None,
                      created: dict[str, float] | None = None) -> Phase:
        pids = self.pids()
        before = {k: cpu_seconds(pid) for k, pid in pids.items()}
        applied = applies(self.proc)
        if condition is not None:
            self.bindings.expect(expected, condition)
        first = time.perf_counter()
        await action()
        rate = None
        incomplete = 0
        if condition is not None:
            last = await self.bindings.wait()
            incomplete = len(expected) - len(self.bindings.seen)
            rate = len(self.bindings.seen) / (last - first) if last and last > first else None
        load = os.getloadavg()[0]
        await settle(self.proc)
        cpu = {k: cpu_seconds(pid) - before[k] for k, pid in pids.items()}
        after = applies(self.proc)
        latency = None
        if created:
            waits = [self.bindings.seen[f"{n}-deployment"] - t for n, t in created.items()
                     if f"{n}-deployment" in self.bindings.seen]
            latency = (_percentile(waits, 0.5), _percentile(waits, 0.99))
        return Phase(name, count, rate, cpu, {k: after[k] - applied[k] for k in after}, latency, load,
                     incomplete)

    async def phases(self) -> list[Phase]:
        args, client = self.args, self.client
        await client.create("/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
        await self.bindings.start()
        await client.create(POLICIES, policy("bench-templates", 0, {"bench": "tmpl"}))
        await settle(self.proc)
        names = [f"web-{i:05d}" for i in range(args.templates)]
        expected = {f"{n}-deployment" for n in names}
        created: dict[str, float] = {}

        async def create_templates() -> None:
            async def one(name: str) -> None:
                await client.create(DEPLOYMENTS, deployment(name, {"bench": "tmpl"}))
                created[name] = time.perf_counter()

            await run_pool([lambda n=n: one(n) for n in names], args.concurrency)

        phases = [await self.measure("templates", len(names), create_templates, expected,
                                     lambda b: True, created)]

        async def status_events() -> None:
            async def one(name: str, number: int) -> None:
                status = {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1,
                          "availableReplicas": number % 2, "readyReplicas": number % 2}
                await client.request("PATCH", f"{DEPLOYMENTS}/{name}/status", body={"status": status},
                                     content_type=MERGE, decode=False)

            await run_pool([lambda n=n, i=i: one(n, i) for i, n in enumerate(names)], args.concurrency)

        phases.append(await self.measure("status events", len(names), status_events, set(), None))

        async def scale() -> None:
            async def one(name: str) -> None:
                await client.request("PATCH", f"{DEPLOYMENTS}/{name}", body={"spec": {"replicas": 3}},
                                     content_type=MERGE, decode=False)

            await run_pool([lambda n=n: one(n) for n in names], args.concurrency)

        phases.append(await self.measure("template updates", len(names), scale, expected,
                                         lambda b: (b.get("spec") or {}).get("replicas") == 3))

        targets = [f"solo-{i:05d}" for i in range(args.policies)]
        await run_pool([lambda n=n: client.create(DEPLOYMENTS, deployment(n, {"target": n}))
                        for n in targets], args.concurrency)
        await settle(self.proc)

        async def create_policies() -> None:
            await run_pool([lambda i=i, n=n: client.create(POLICIES, policy(f"pp-{n}", i + 1, {"target": n}))
                            for i, n in enumerate(targets)], args.concurrency)

        phases.append(await self.measure("policies", len(targets), create_policies,
                                         {f"{n}-deployment" for n in targets}, lambda b: True))
        await self.bindings.stop()
        return phases


async def one_run(plane: ControlPlane, label: str, tree: Path | None, number: int,
                  args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    name = f"pc-{number}-{'base' if tree is not None else 'cur'}"
    print(f"round {number}: {label}: starting a kube-apiserver and the controller ...", file=sys.stderr)
    server = plane.add_apiserver(name, apply_crds=True)
    client = KubeClient(load_connection(str(server.kubeconfig)), user_agent="fleetsched-bench")
    extra = ["--leader-elect=false", "--kube-api-qps=0", "--log-level=warning",
             f"--standalone={'true' if args.standalone else 'false'}"]
    if args.workers:
        extra.append(f"--workers={args.workers}")
    proc = ControllerProcess(kubeconfig=server.kubeconfig, log_path=workdir / f"{name}.log",
                             extra_args=tuple(extra), tree=tree)
    try:
        started = time.perf_counter()
        proc.start(timeout=120)
        ready = time.perf_counter() - started
        assert proc.process is not None
        await settle(proc)
        idle_rss = peak_rss_mib(proc.process.pid)[1]
        phases = await Run(plane, server, client, proc, args).phases()
        peak = peak_rss_mib(proc.process.pid)[0]
        return {"label": label, "ready": ready, "idle_rss": idle_rss, "peak_rss": peak, "phases": phases,
                "log": proc.log_path}
    finally:
        proc.stop()
        await client.close()
        plane.remove_apiserver(name)


def report(run: dict[str, Any]) -> None:
    print(f"  {run['label']}: ready in {run['ready']:.1f} s, RSS idle {run['idle_rss']:.0f} MiB, "
          f"peak {run['peak_rss']:.0f} MiB")
    for phase in run["phases"]:
        print(phase.line())


def summary(runs: list[dict[str, Any]], labels: list[str]) -> None:
    def figures(label: str) -> dict[str, list[float]]:
        out: dict[str, list[float]] = {}
        for run in runs:
            if run["label"] != label:
                continue
            for phase in run["phases"]:
                if phase.rate is not None:
                    out.setdefault(f"{phase.name} /s", []).append(phase.rate)
                out.setdefault(f"{phase.name} controller CPU ms", []).append(
                    1000 * phase.cpu["controller"] / phase.count)
        return out

    by_label = {label: figures(label) for label in labels}
    print(f"median over {sum(r['label'] == labels[0] for r in runs)} round(s):")
    for key in by_label[labels[0]]:
        cells = [f"{label} {statistics.median(by_label[label][key]):.2f}" for label in labels
                 if by_label[label].get(key)]
        ratio = ""
        if len(labels) == 2 and by_label[labels[1]].get(key):
            current, other = (statistics.median(by_label[label][key]) for label in labels)
            ratio = f"; current / {labels[1]} {current / other:.2f}"
        print(f"  {key}: {', '.join(cells)}{ratio}")


async def main_async(args: argparse.Namespace) -> int:
    load_before = os.getloadavg()
    runs: list[dict[str, Any]] = []
    with contextlib.ExitStack() as stack:
        variants = compared_trees(stack, args)
        workdir = Path(tempfile.mkdtemp(prefix="fleetsched-bench-policy-"))
        print(f"starting etcd in {workdir} ...", file=sys.stderr)
        plane = ControlPlane.start(workdir=workdir / "cp", apply_crds=False)
        try:
            print(f"policy controller: {args.templates} templates, {args.policies} policies, "
                  f"--standalone={str(args.standalone).lower()}, workers {args.workers or 'default'}, "
                  f"{args.concurrency} requests in flight; {os.cpu_count()} cores")
            for number in range(1, args.rounds + 1):
                order = variants if number % 2 else variants[::-1]
                print(f"round {number}:")
                for label, tree in order:
                    run = await one_run(plane, label, tree, number, args, workdir)
                    report(run)
                    runs.append(run)
        finally:
            plane.stop()
    summary(runs, [label for label, _ in variants])
    load_after = os.getloadavg()
    print(f"load average before {'/'.join(f'{x:.2f}' for x in load_before)}, "
          f"after {'/'.join(f'{x:.2f}' for x in load_after)}")
    incomplete = [r for r in runs if any(p.incomplete for p in r["phases"])]
    for run in incomplete:
        print(f"INCOMPLETE run ({run['label']}): see {run['log']}", file=sys.stderr)
    if incomplete:
        return 1
    shutil.rmtree(workdir, ignore_errors=True)
    return 0


def boolean(text: str) -> bool:
    if text.lower() in ("true", "1", "yes"):
        return True
    if text.lower() in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--templates", type=int, default=1000, help="Deployments of phases 1-3")
    parser.add_argument("--policies", type=int, default=200, help="PropagationPolicies of phase 4")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=16, help="client requests in flight")
    parser.add_argument("--workers", type=int, default=0, help="the controller's --workers (0: its default)")
    parser.add_argument("--standalone", type=boolean, default=True, metavar="BOOL",
                        help="the controller's --standalone (default true, as manifests/controller runs it)")
    baseline = parser.add_mutually_exclusive_group()
    baseline.add_argument("--baseline-ref", metavar="REF",
                          help="also run the controller of this git commit, round by round, and compare")
    baseline.add_argument("--baseline-tree", metavar="DIR",
                          help="also run the controller of this working tree as it is on disk, and compare")
    args = parser.parse_args()
    for name in ("templates", "policies", "rounds", "concurrency"):
        if getattr(args, name) < 1:
            parser.error(f"--{name}: must be at least 1")
    try:
        return asyncio.run(main_async(args))
    except ApiError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
