"""``fleetsched descheduler``: karmada-descheduler's command line, endpoints and lifecycle.

Flags are karmada-descheduler's, with its defaults: ``--descheduling-interval`` (2m),
``--unschedulable-threshold`` (5m), the accurate estimator's connection and TLS
(``--scheduler-estimator-*``, ``--insecure-skip-estimator-verify``, as ``fleetsched scheduler``
takes them), ``--kube-api-qps``/``--kube-api-burst`` (40/60), leader election on the Lease
``karmada-system/karmada-descheduler`` (Karmada's: beside or instead of karmada-descheduler,
only one of the two works at a time), ``--metrics-bind-address`` (:8080) and
``--health-probe-bind-address`` (:10358); ``--v``, ``--master``, ``--enable-pprof`` and
``--profiling-bind-address`` as Karmada's other components take them.

Endpoints: ``/healthz``, ``/readyz`` (with leader election: holding the Lease, after a first
round), ``/metrics``. SIGTERM/SIGINT: finish the binding being written, flush the Events, release
the Lease, exit 0.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
from typing import Any

import structlog

from fleetsched import karmada_flags
from fleetsched.controller.runtime import command, metrics
from fleetsched.controller.runtime.events import EventRecorder
from fleetsched.controller.runtime.http import ListenError, start_endpoints, stop_endpoints
from fleetsched.controller.runtime.leader import ApiLeaseStore, LeaderElector
from fleetsched.controller.scheduler import estimation
from fleetsched.descheduler.runner import COMPONENT, Descheduler, run_rounds
from fleetsched.kube.client import load_connection

log = structlog.get_logger("fleetsched.descheduler")

LEASE_NAME = "karmada-descheduler"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kubeconfig",
        help="kubeconfig of the Karmada control plane (absent: KUBECONFIG, in-cluster, ~/.kube/config)",
    )
    parser.add_argument(
        "--descheduling-interval",
        type=command.positive_duration,
        default=120.0,
        help="time between the end of one descheduling round and the start of the next (default 2m)",
    )
    parser.add_argument(
        "--unschedulable-threshold",
        type=command.non_negative_duration,
        default=300.0,
        help="a pod counts as unschedulable once its PodScheduled condition has been False "
        "(Unschedulable) for this long (default 5m)",
    )
    command.add_kube_api_arguments(parser, qps=40.0, burst=60)
    estimation.add_connection_arguments(parser)
    command.add_boolean(
        parser, "--leader-elect", default=True,
        help="use a coordination.k8s.io Lease so only one replica is active (default true)",
    )
    parser.add_argument(
        "--leader-elect-resource-name",
        default=LEASE_NAME,
        help="the Lease; karmada-descheduler's by default, so that this and a karmada-descheduler "
        "never work at the same time (default %(default)s)",
    )
    parser.add_argument("--leader-elect-resource-namespace", default="karmada-system")
    parser.add_argument("--leader-elect-lease-duration", type=command.duration, default=15.0)
    parser.add_argument("--leader-elect-renew-deadline", type=command.duration, default=10.0)
    parser.add_argument("--leader-elect-retry-period", type=command.duration, default=2.0)
    command.add_serving_arguments(parser, metrics=":8080", health=":10358")
    karmada_flags.add_arguments(
        parser, flags=("--v", "--master", "--enable-pprof", "--profiling-bind-address")
    )


async def _serve(args: argparse.Namespace) -> int:
    try:
        election = command.leader_election(args)
    except ValueError as exc:  # timings a Lease cannot have
        log.error("invalid_flag", flag="--leader-elect-lease-duration", error=str(exc))
        return 2
    connection = karmada_flags.with_master(load_connection(args.kubeconfig), args)
    client = command.kube_client(connection, args, agent=COMPONENT)
    # the estimator client's settings as the scheduler's flags give them (no Pull-mode switch here)
    estimator_args = argparse.Namespace(**vars(args), disable_scheduler_estimator_in_pull_mode=False)
    try:
        estimator = await estimation.accurate_estimator(client, estimator_args)
    except ValueError as exc:  # a certificate file that is not a readable, bounded regular file
        log.error("invalid_flag", flag="--scheduler-estimator-ca-file", error=str(exc))
        await client.close()
        return 2

    def clusters_changed(added: set[str], removed: set[str]) -> None:
        for name in removed:
            estimator.forget(name)
        if added:
            estimator.connect_in_background(sorted(added))

    events = EventRecorder(client, component=COMPONENT, dedupe_window=0.0)
    descheduler = Descheduler(client=client, estimator=estimator, events=events,
                              unschedulable_threshold=args.unschedulable_threshold,
                              on_clusters=clusters_changed)
    elector: LeaderElector | None = None
    if election is not None:
        store = ApiLeaseStore(client, election.namespace, election.name)
        elector = LeaderElector(config=election, store=store)

    def leading() -> bool:
        return elector is None or elector.is_leader

    synced = asyncio.Event()

    def ready() -> tuple[bool, str]:
        if not leading():
            return False, "not the leader"
        return (True, "ok") if synced.is_set() else (False, "first round not done")

    metrics.serve_as("descheduler")  # /metrics: this process's series only
    try:
        runners = await start_endpoints(
            ready,
            health_probe_bind_address=args.health_probe_bind_address,
            metrics_bind_address=args.metrics_bind_address,
        )
    except ListenError as exc:
        log.error("invalid_flag", flag=exc.flag, error=str(exc))
        await client.close()
        estimator.close()
        return 2
    stop = command.stop_on_signals()
    events.start()
    tasks: list[asyncio.Task[Any]] = []
    if elector is not None:
        tasks.append(asyncio.create_task(elector.run(), name="leader-election"))
    log.info(
        "descheduler_starting",
        descheduling_interval=args.descheduling_interval,
        unschedulable_threshold=args.unschedulable_threshold,
        leader_elect=election is not None,
        lease=f"{election.namespace}/{election.name}" if election else None,
        pid=os.getpid(),
    )
    rounds = asyncio.create_task(
        run_rounds(descheduler, interval=args.descheduling_interval, stop=stop, leading=leading,
                   synced=synced),
        name="descheduling-rounds",
    )
    try:
        await stop.wait()
        with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError, Exception):
            await asyncio.wait_for(rounds, 30)  # the binding being written is finished
    finally:
        rounds.cancel()
        await events.flush(2.0)
        if elector is not None:
            await elector.release()
        for task in tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await events.stop()
        await stop_endpoints(runners)
        await client.close()
        estimator.close()
    log.info("descheduler_stopped", exit_code=0)
    return 0


def run(args: argparse.Namespace) -> int:
    return command.run_command(_serve, args)
