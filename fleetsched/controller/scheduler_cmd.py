"""``fleetsched scheduler``: the scheduler operator's command line, HTTP endpoints and lifecycle.

Flags follow karmada-scheduler where it has one (``--scheduler-name``, ``--plugins``,
``--enable-scheduler-estimator``, ``--scheduler-estimator-timeout``, ``--kube-api-qps``,
``--kube-api-burst``, ``--leader-elect*``, ``--metrics-bind-address``,
``--health-probe-bind-address``); ``--workers`` and ``--scheduling-timeout`` are ours (Karmada has
one worker and no budget). The core runs in threads of its own, one per worker, within the budget
(``controller/compute.py``); the event loop only does I/O.

Endpoints: ``/healthz`` (the process is alive), ``/readyz`` (caches synced and, with leader
election, holding the Lease), ``/metrics`` (Prometheus). SIGTERM/SIGINT stop taking new work,
finish in-flight writes, release the Lease and exit 0.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import structlog

from fleetsched.controller import command, compute, metrics
from fleetsched.controller.decision import DEFAULT_SCHEDULER_NAME
from fleetsched.controller.http import start_endpoints, stop_endpoints
from fleetsched.controller.kube import load_connection
from fleetsched.controller.operator import OperatorConfig, SchedulerOperator
from fleetsched.scheduler import Scheduler, Settings
from fleetsched.scheduler.framework import PluginSelectionError

# Gates whose scheduling behaviour the live scheduler does not have: WorkloadAffinity needs the
# peers' placements in every snapshot, SchedulingOvercommitProtection the assumption cache (§7.5).
UNSUPPORTED_GATES = ("SchedulingOvercommitProtection", "WorkloadAffinity")

log = structlog.get_logger("fleetsched.scheduler")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kubeconfig", help="kubeconfig of the Karmada control plane (in-cluster when absent)"
    )
    parser.add_argument(
        "--scheduler-name",
        default=DEFAULT_SCHEDULER_NAME,
        help="only bindings whose spec.schedulerName matches are scheduled (default %(default)s)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=32,
        help="concurrent scheduling workers, each with a thread of its own for the scheduling core and "
        "its estimator calls (default %(default)s)",
    )
    parser.add_argument(
        "--scheduling-timeout",
        type=command.non_negative_duration,
        default=compute.DEFAULT_BUDGET,
        help="budget of one binding's scheduling; past it the binding gets Scheduled=False "
        "(SchedulerError) and is retried with backoff while the others go on; 0 disables (default 30s)",
    )
    command.add_kube_api_arguments(parser, qps=500.0, burst=1000)
    parser.add_argument(
        "--plugins",
        default="*",
        help="scheduler plugins: '*' all in-tree, '-Name' disables one (default %(default)s)",
    )
    command.add_boolean(parser, "--enable-empty-workload-propagation", default=False)
    parser.add_argument(
        "--feature-gates",
        type=command.feature_gates,
        default={},
        help="Karmada's gates, Gate=true|false,...; those that change results here: "
        "CustomizedClusterResourceModeling (default true), MultiplePodTemplatesScheduling (default "
        "false). WorkloadAffinity and SchedulingOvercommitProtection are refused when on (not "
        "implemented in the live scheduler); the others are accepted and have no effect",
    )
    command.add_boolean(
        parser, "--enable-scheduler-estimator", default=False,
        help="ask each member's accurate estimator (gRPC) as well as the general one",
    )
    command.add_boolean(
        parser, "--disable-scheduler-estimator-in-pull-mode", default=False,
        help="do not ask the accurate estimator about Pull-mode clusters; a binding with one among its "
        "candidates then uses the general estimate alone (default false)",
    )
    parser.add_argument(
        "--scheduler-estimator-timeout",
        type=command.duration,
        default=3.0,
        help="deadline for one binding's estimator calls (default 3s)",
    )
    parser.add_argument("--scheduler-estimator-port", type=int, default=10352)
    parser.add_argument("--scheduler-estimator-ca-file", help="CA of the estimators' serving certificates")
    parser.add_argument("--scheduler-estimator-cert-file", help="client certificate for the estimators")
    parser.add_argument("--scheduler-estimator-key-file", help="client key for the estimators")
    parser.add_argument(
        "--insecure-skip-estimator-verify",
        action="store_true",
        help="TLS to the estimators without verifying their host names",
    )
    parser.add_argument("--scheduler-estimator-service-prefix", default="karmada-scheduler-estimator")
    parser.add_argument("--scheduler-estimator-service-namespace", default="karmada-system")
    command.add_leader_election_arguments(parser, resource_name="fleetsched-scheduler")
    command.add_serving_arguments(parser, metrics=":8080", health=":10351")


def scheduler_settings(args: argparse.Namespace) -> Settings:
    """The core's settings from the flags; ValueError for a gate the live scheduler cannot honour."""
    gates = args.feature_gates
    unsupported = sorted(gate for gate in UNSUPPORTED_GATES if gates.get(gate))
    if unsupported:
        raise ValueError(f"{', '.join(unsupported)}: not implemented in fleetsched scheduler (leave off)")
    return Settings(
        plugins=args.plugins,
        enable_empty_workload_propagation=args.enable_empty_workload_propagation,
        customized_cluster_resource_modeling=gates.get("CustomizedClusterResourceModeling", True),
        multiple_pod_templates=gates.get("MultiplePodTemplatesScheduling", False),
    )


def operator_config(args: argparse.Namespace) -> OperatorConfig:
    """The operator's settings from the flags (``--scheduling-timeout=0``: no budget)."""
    return OperatorConfig(
        scheduler_name=args.scheduler_name,
        workers=max(args.workers, 1),
        leader_election=command.leader_election(args),
        scheduling_timeout=args.scheduling_timeout or None,
    )


async def _serve(args: argparse.Namespace) -> int:
    connection = load_connection(args.kubeconfig)
    client = command.kube_client(connection, args, agent="fleetsched-scheduler")

    estimators: list[Any] = []
    accurate: Any = None
    if args.enable_scheduler_estimator:
        try:
            from fleetsched.controller.estimation import accurate_estimator
        except ImportError as exc:
            log.error(
                "invalid_flag",
                flag="--enable-scheduler-estimator",
                error=f"the accurate estimator client is not available: {exc}",
            )
            await client.close()
            return 2
        accurate = await accurate_estimator(client, args)
        estimators.append(accurate)
        if 0 < args.scheduling_timeout <= args.scheduler_estimator_timeout:
            log.warning(
                "flag_conflict",
                flag="--scheduling-timeout",
                error="not above --scheduler-estimator-timeout: a binding whose estimator hangs "
                "runs out of budget before the general estimate can be used",
            )
    try:
        settings = scheduler_settings(args)
    except ValueError as exc:
        log.error("invalid_flag", flag="--feature-gates", error=str(exc))
        await client.close()
        return 2
    try:
        scheduler = Scheduler(
            settings=settings,
            estimators=estimators,
            observe_step=compute.observe_step,  # the step's metric, then a budget checkpoint
        )
    except PluginSelectionError as exc:
        log.error("invalid_flag", flag="--plugins", error=str(exc))
        await client.close()
        return 2
    operator = SchedulerOperator(
        client=client,
        connection=connection,
        scheduler=scheduler,
        accurate=accurate,
        config=operator_config(args),
    )

    runners = await start_endpoints(
        operator.ready,
        health_probe_bind_address=args.health_probe_bind_address,
        metrics_bind_address=args.metrics_bind_address,
    )
    stop = command.stop_on_signals()
    log.info(
        "scheduler_starting",
        scheduler_name=args.scheduler_name,
        workers=args.workers,
        scheduling_timeout=args.scheduling_timeout,
        leader_elect=args.leader_elect,
        pid=os.getpid(),
    )
    try:
        code = await operator.run(stop)
    finally:
        await stop_endpoints(runners)
        await client.close()
        if accurate is not None:
            accurate.close()
    log.info("scheduler_stopped", exit_code=code)
    return code


def run(args: argparse.Namespace) -> int:
    code = command.run_command(_serve, args)
    abandoned = metrics.REGISTRY.get_sample_value("fleetsched_scheduler_abandoned_computations") or 0
    if abandoned:
        # Everything is written and the Lease released; what is left is a computation past its
        # budget whose result would be discarded anyway. The interpreter would join its thread
        # at exit, so a stop could take as long as that computation: leave without it.
        log.warning("exiting_with_abandoned_computations", computations=int(abandoned), exit_code=code)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code
