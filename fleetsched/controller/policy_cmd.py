"""``fleetsched controller``: the policy controller's command line, HTTP endpoints and lifecycle.

Flags follow the scheduler command's (kubeconfig, QPS, leader election, metrics and health
addresses) plus Karmada's ``--skipped-propagating-namespaces`` and ``--feature-gates`` for the gates
the detector honours, ``--resources`` for the template kinds to watch, and ``--standalone`` for an
install without Karmada's binding controller (the manifests turn it on; beside Karmada it stays off).
"""

from __future__ import annotations

import argparse
import os

import structlog

from fleetsched.controller import command
from fleetsched.controller.http import start_endpoints, stop_endpoints
from fleetsched.controller.kube import load_connection
from fleetsched.controller.policy_operator import (
    DEFAULT_RESOURCES,
    KNOWN_RESOURCES,
    PolicyController,
    PolicyControllerConfig,
)
from fleetsched.detector import FeatureGates

log = structlog.get_logger("fleetsched.controller")

# The Karmada gates that change what the detector builds, and the FeatureGates field of each.
_GATES = {
    "PriorityBasedScheduling": "priority_based_scheduling",
    "WorkloadAffinity": "workload_affinity",
    "ResourceQuotaEstimate": "resource_quota_estimate",
    "PropagationPolicyPreemption": "policy_preemption",
}


def _gates(text: str) -> FeatureGates:
    gates = command.feature_gates(text)
    return FeatureGates(**{field: gates[name] for name, field in _GATES.items() if name in gates})


def _resources(text: str) -> tuple[str, ...]:
    names = tuple(filter(None, (part.strip() for part in text.split(","))))
    unknown = [n for n in names if n not in KNOWN_RESOURCES]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"--resources: unknown {', '.join(unknown)} (known: {', '.join(sorted(KNOWN_RESOURCES))})"
        )
    return names


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kubeconfig", help="kubeconfig of the Karmada control plane (in-cluster when absent)"
    )
    parser.add_argument(
        "--resources",
        type=_resources,
        default=DEFAULT_RESOURCES,
        help="comma-separated resource templates to watch, as plural.group (default: common workloads "
        "and their dependencies, without pods)",
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


async def _serve(args: argparse.Namespace) -> int:
    connection = load_connection(args.kubeconfig)
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
        ),
    )
    runners = await start_endpoints(
        controller.ready,
        health_probe_bind_address=args.health_probe_bind_address,
        metrics_bind_address=args.metrics_bind_address,
    )
    stop = command.stop_on_signals()
    log.info(
        "controller_starting",
        resources=list(args.resources),
        workers=args.workers,
        leader_elect=args.leader_elect,
        standalone=args.standalone,
        pid=os.getpid(),
    )
    try:
        await controller.run(stop)
    finally:
        await stop_endpoints(runners)
        await client.close()
    log.info("controller_stopped")
    return 0


def run(args: argparse.Namespace) -> int:
    return command.run_command(_serve, args)
