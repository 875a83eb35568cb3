"""``fleetsched controller``: the policy controller's command line, HTTP endpoints and lifecycle.

Flags follow the scheduler command's (kubeconfig, QPS, leader election, metrics and health
addresses) plus Karmada's ``--skipped-propagating-namespaces`` and ``--feature-gates`` for the gates
the detector honours, ``--resources`` for the template kinds to watch (by default neither Secrets nor RBAC
kinds: see ``policy_operator.OPT_IN_RESOURCES``), and ``--standalone`` for an
install without Karmada's binding controller (the manifests turn it on; beside Karmada it stays off).

``--shard-mode=lease`` (``controller/policy/shard.py``): every replica holds a member Lease and
reconciles the templates, policies and bindings it owns; ``--shard-identity`` names it.

``--controllers`` reads as karmada-controller-manager's: ``*`` the controllers on by default,
``-workloadRebalancer`` leaves out the WorkloadRebalancer controller (``controller/rebalancer/``), the
one controller of Karmada's list that runs here (the detector always runs).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from typing import Any

import structlog

from fleetsched import flags, karmada_flags
from fleetsched.controller.policy.operator import (
    DEFAULT_RESOURCES,
    KNOWN_RESOURCES,
    PolicyController,
    PolicyControllerConfig,
)
from fleetsched.controller.runtime import command, metrics
from fleetsched.controller.runtime.http import ListenError, start_endpoints, stop_endpoints
from fleetsched.detector import FeatureGates
from fleetsched.kube.client import load_connection

log = structlog.get_logger("fleetsched.controller")

# The Karmada gates that change what the detector builds, and the FeatureGates field of each.
_GATES = {
    flags.PRIORITY_BASED_SCHEDULING: "priority_based_scheduling",
    flags.WORKLOAD_AFFINITY: "workload_affinity",
    flags.RESOURCE_QUOTA_ESTIMATE: "resource_quota_estimate",
    flags.PROPAGATION_POLICY_PREEMPTION: "policy_preemption",
}


def _gates(text: str) -> FeatureGates:
    gates = command.feature_gates(text)
    return FeatureGates(**{field: gates[name] for name, field in _GATES.items() if name in gates})


def _unknown_resources(terms: Sequence[str]) -> list[str]:
    return [t for t in terms if t.removeprefix("-") != "*" and t.removeprefix("-") not in KNOWN_RESOURCES]


def resolve_resources(terms: Sequence[str], start: Sequence[str] = ()) -> tuple[str, ...]:
    """Apply ``--resources`` terms to ``start``: ``*`` adds the default kinds, ``NAME`` adds one,
    ``-NAME`` (or ``-*``) takes them out again, as kube-controller-manager's ``--controllers``
    reads ``*`` and ``-foo``. The result is in catalogue order. Raises ``ArgumentTypeError`` naming
    unknown kinds, or when nothing is left to watch."""
    unknown = _unknown_resources(terms)
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown {', '.join(unknown)} (known: *, {', '.join(sorted(KNOWN_RESOURCES))})"
        )
    chosen = set(start)
    for term in terms:
        name = term.removeprefix("-")
        group = set(DEFAULT_RESOURCES) if name == "*" else {name}
        chosen = chosen - group if term.startswith("-") else chosen | group
    if not chosen:
        raise argparse.ArgumentTypeError("no resource kind left to watch")
    return tuple(name for name in KNOWN_RESOURCES if name in chosen)


def _resource_terms(text: str) -> tuple[str, ...]:
    terms = tuple(filter(None, (part.strip() for part in text.split(","))))
    unknown = _unknown_resources(terms)
    if unknown:
        resolve_resources(unknown)  # raises, naming them
    return terms


class _ResourcesAction(argparse.Action):
    """``--resources`` given several times adds up, as a Kubernetes string-slice flag does; the first
    occurrence replaces the default (so ``--resources=configmaps`` watches ConfigMaps only)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        seen = getattr(namespace, "_resources_given", False)
        start = getattr(namespace, self.dest) if seen else ()
        try:
            resolved = resolve_resources(values, start=start)
        except argparse.ArgumentTypeError as exc:
            raise argparse.ArgumentError(self, str(exc)) from exc
        setattr(namespace, self.dest, resolved)
        namespace._resources_given = True


# Karmada's controller names that run here, each on by default ('*').
CONTROLLERS = ("workloadRebalancer",)


def resolve_controllers(text: str) -> frozenset[str]:
    """``--controllers``: comma-separated names; ``*`` the default ones, ``NAME`` one more, ``-NAME``
    one left out. Raises ``ArgumentTypeError`` naming unknown controllers."""
    terms = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [t for t in terms if t.removeprefix("-") not in ("*", *CONTROLLERS)]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown controller {', '.join(unknown)} (known: *, {', '.join(CONTROLLERS)})"
        )
    chosen: set[str] = set()
    for term in terms:
        name = term.removeprefix("-")
        group = set(CONTROLLERS) if name == "*" else {name}
        chosen = chosen - group if term.startswith("-") else chosen | group
    return frozenset(chosen)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kubeconfig",
        help="kubeconfig of the Karmada control plane (absent: KUBECONFIG, in-cluster, ~/.kube/config)",
    )
    parser.add_argument(
        "--resources",
        type=_resource_terms,
        action=_ResourcesAction,
        default=DEFAULT_RESOURCES,
        help="comma-separated resource templates to watch, as plural.group; '*' is the default set, "
        "'-NAME' leaves one out, and repeated flags add up (e.g. '*,secrets'). Default: common "
        "workloads and their dependencies, but not pods, secrets, nor the RBAC kinds (roles, "
        "rolebindings, clusterroles, clusterrolebindings): reading Secrets is reading every "
        "credential, and patching RBAC objects needs 'escalate' and 'bind', which let the holder "
        "grant itself anything. The install grants neither; manifests/overlays/propagate-secrets and "
        "propagate-rbac add the kinds with the rights they need",
    )
    parser.add_argument(
        "--controllers",
        type=resolve_controllers,
        default="*",
        help="Karmada controllers to run beside the detector, as karmada-controller-manager's flag: '*' "
        "all on by default, 'NAME' enables one, '-NAME' disables one. Known: workloadRebalancer "
        "(WorkloadRebalancers request a fresh schedule of their workloads' bindings; off with "
        "'*,-workloadRebalancer')",
    )
    parser.add_argument("--workers", type=int, default=2, help="concurrent workers (default %(default)s)")
    parser.add_argument(
        "--skipped-propagating-namespaces",
        default="kube-.*",
        help="comma-separated regular expressions of namespaces never propagated (default %(default)s)",
    )
    parser.add_argument(
        "--feature-gates",
        type=_gates,
        default=FeatureGates(),
        help="Karmada's gates, e.g. PropagationPolicyPreemption=true,WorkloadAffinity=true; those that "
        "change bindings: PriorityBasedScheduling, WorkloadAffinity, ResourceQuotaEstimate, "
        "PropagationPolicyPreemption (Karmada's defaults otherwise)",
    )
    command.add_boolean(
        parser, "--standalone", default=False,
        help="no Karmada binding controller runs: remove its finalizer (karmada.io/binding-controller, "
        "karmada.io/cluster-resource-binding-controller) from terminating bindings this controller "
        "derived, so deleting a workload deletes its binding. Keep off beside Karmada, whose binding "
        "controller removes it after cleaning up member clusters; ignored, with a warning, where the "
        "control plane serves Karmada's works.work.karmada.io (default %(default)s)",
    )
    command.add_kube_api_arguments(parser, qps=40.0, burst=60)
    command.add_leader_election_arguments(parser, resource_name="fleetsched-controller")
    command.add_serving_arguments(parser, metrics=":8081", health=":10358")
    karmada_flags.add_arguments(parser)


async def _serve(args: argparse.Namespace) -> int:
    try:
        sharding = command.sharding(args)
    except ValueError as exc:  # a group name or timings a member Lease cannot have
        log.error("invalid_flag", flag="--shard-mode", error=str(exc))
        return 2
    connection = karmada_flags.with_master(load_connection(args.kubeconfig), args)
    client = command.kube_client(connection, args, agent="fleetsched-controller")
    skipped = tuple(filter(None, (p.strip() for p in args.skipped_propagating_namespaces.split(","))))
    controller = PolicyController(
        client=client,
        connection=connection,
        config=PolicyControllerConfig(
            resources=tuple(KNOWN_RESOURCES[name] for name in args.resources),
            workers=max(args.workers, 1),
            gates=args.feature_gates,
            skipped_namespaces=skipped,
            leader_election=command.leader_election(args),
            standalone=args.standalone,
            sharding=sharding,
            workload_rebalancer="workloadRebalancer" in args.controllers,
        ),
    )
    metrics.instrument_queue(controller.queue, metrics.POLICY_CONTROLLER_QUEUE)
    metrics.serve_as("policy-controller")  # /metrics: this process's series only
    try:
        runners = await start_endpoints(
            controller.ready,
            health_probe_bind_address=args.health_probe_bind_address,
            metrics_bind_address=args.metrics_bind_address,
        )
    except ListenError as exc:  # a taken port: one line, exit 2
        log.error("invalid_flag", flag=exc.flag, error=str(exc))
        await client.close()
        return 2
    stop = command.stop_on_signals()
    log.info(
        "controller_starting",
        resources=list(args.resources),
        workers=args.workers,
        leader_elect=args.leader_elect and sharding is None,
        shard_mode=args.shard_mode,
        shard_member=sharding.member if sharding else None,
        standalone=args.standalone,
        controllers=sorted(args.controllers),
        pid=os.getpid(),
    )
    try:
        code = await controller.run(stop)
    finally:
        await stop_endpoints(runners)
        await client.close()
    log.info("controller_stopped", exit_code=code)
    return code


def run(args: argparse.Namespace) -> int:
    return command.run_command(_serve, args)
