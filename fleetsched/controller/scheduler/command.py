"""``fleetsched scheduler``: the scheduler operator's command line, HTTP endpoints and lifecycle.

Flags follow karmada-scheduler where it has one (``--scheduler-name``, ``--plugins``,
``--enable-scheduler-estimator``, ``--scheduler-estimator-timeout``, ``--kube-api-qps``,
``--kube-api-burst``, ``--leader-elect*``, ``--metrics-bind-address``,
``--health-probe-bind-address``); ``--workers`` and ``--scheduling-timeout`` are ours (Karmada has
one worker and no budget). The core runs in threads of its own, one per worker, within the budget
(``controller/scheduler/compute.py``); the event loop only does I/O.

``--config FILE`` reads a ``SchedulerConfiguration`` (``fleetsched config default`` prints the
default one): its profiles, one per ``schedulerName``, and the settings the flags above carry. A
flag given beside it must say what the file says (otherwise: a one-line refusal, exit 2); a flag
not given takes the file's value.

``--shard-mode=lease`` (``controller/runtime/shard.py``): every replica holds a member Lease and schedules
the bindings it owns; ``--shard-identity`` names it (default: the host name).

Endpoints: ``/healthz`` (the process is alive), ``/readyz`` (caches synced and, with leader
election, holding the Lease; sharded, holding its member Lease), ``/metrics`` (Prometheus).
SIGTERM/SIGINT stop taking new work, finish in-flight writes, release the Lease (sharded: delete
the member Lease) and exit 0.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import structlog

from fleetsched import karmada_flags
from fleetsched.controller.runtime import command, metrics
from fleetsched.controller.runtime.http import ListenError, start_endpoints, stop_endpoints
from fleetsched.controller.runtime.queue import SchedulingQueue
from fleetsched.controller.scheduler import compute, estimation
from fleetsched.controller.scheduler.decision import DEFAULT_SCHEDULER_NAME
from fleetsched.controller.scheduler.operator import OperatorConfig, SchedulerOperator
from fleetsched.extender.metrics import count_ignored_failure
from fleetsched.flags import (
    CUSTOMIZED_CLUSTER_RESOURCE_MODELING,
    MULTIPLE_POD_TEMPLATES_SCHEDULING,
    PRIORITY_BASED_SCHEDULING,
    SCHEDULING_OVERCOMMIT_PROTECTION,
    WORKLOAD_AFFINITY,
    explicit_flags,
    gate_enabled,
    merge_feature_gates,
    plugins_contradiction,
    record_explicit_flags,
)
from fleetsched.kube.client import KubeClient, load_connection
from fleetsched.scheduler import Scheduler, Settings
from fleetsched.scheduler.framework import PluginSelectionError
from fleetsched.scheduler.stepping import MoveBudget

if TYPE_CHECKING:
    from fleetsched.scheduler.config import LoadedConfiguration, SchedulerConfiguration

log = structlog.get_logger("fleetsched.scheduler")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kubeconfig",
        help="kubeconfig of the Karmada control plane (absent: KUBECONFIG, in-cluster, ~/.kube/config)",
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
    parser.add_argument(
        "--assumption-ttl",
        type=command.positive_duration,
        default="5m",
        help="with --feature-gates SchedulingOvercommitProtection=true: how long a decided placement's "
        "footprint is deducted from a cluster's capacity when its aggregatedStatus never turns Healthy "
        "(default 5m, Karmada's)",
    )
    parser.add_argument(
        "--binding-update-debounce",
        type=command.non_negative_duration,
        default="0s",
        help="spec updates of one binding within this window are scheduled once, when it ends (the "
        "first update opens it); 0 schedules every update at once (default 0s)",
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
        "false), PriorityBasedScheduling (default true; false: Karmada's FIFO work queue), "
        "SchedulingOvercommitProtection (default false; see --assumption-ttl), WorkloadAffinity "
        "(default false); the others are accepted and have no effect. AllAlpha=true|false and "
        "AllBeta=true|false set every gate of that stage not named itself. With --config, the file's "
        "featureGates are added (a gate named in both must agree)",
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
    estimation.add_connection_arguments(parser)
    command.add_leader_election_arguments(parser, resource_name="fleetsched-scheduler")
    command.add_serving_arguments(parser, metrics=":8080", health=":10351")
    karmada_flags.add_arguments(parser)
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="a SchedulerConfiguration file (config.fleetsched.io/v1alpha1, see `fleetsched config "
        "default`): profiles by schedulerName and the settings of the flags above; a flag given "
        "beside it must agree with it",
    )
    record_explicit_flags(parser)


def _seconds(value: float) -> str:
    from fleetsched.scheduler.config.durations import format_duration

    return format_duration(value)


# flag dest -> (the file's field, its value in a configuration, how the file writes it)
_FILE_FIELDS: tuple[tuple[str, str, Callable[[SchedulerConfiguration], Any], Callable[[Any], str]], ...] = (
    ("workers", "parallelism", lambda c: c.workers, str),
    ("kubeconfig", "clientConnection.kubeconfig", lambda c: c.client_connection.kubeconfig or None, str),
    ("kube_api_qps", "clientConnection.qps", lambda c: c.client_connection.qps, lambda v: f"{v:g}"),
    ("kube_api_burst", "clientConnection.burst", lambda c: c.client_connection.burst, str),
    ("leader_elect", "leaderElection.leaderElect", lambda c: c.leader_election.leader_elect,
     lambda v: str(v).lower()),
    ("leader_elect_resource_name", "leaderElection.resourceName",
     lambda c: c.leader_election.resource_name, str),
    ("leader_elect_resource_namespace", "leaderElection.resourceNamespace",
     lambda c: c.leader_election.resource_namespace, str),
    ("leader_elect_lease_duration", "leaderElection.leaseDuration",
     lambda c: c.leader_election.lease_duration, _seconds),
    ("leader_elect_renew_deadline", "leaderElection.renewDeadline",
     lambda c: c.leader_election.renew_deadline, _seconds),
    ("leader_elect_retry_period", "leaderElection.retryPeriod",
     lambda c: c.leader_election.retry_period, _seconds),
    ("shard_mode", "leaderElection.shardMode", lambda c: c.leader_election.shard_mode, str),
    ("shard_identity", "leaderElection.shardIdentity",
     lambda c: c.leader_election.shard_identity or None, str),
    ("enable_empty_workload_propagation", "enableEmptyWorkloadPropagation",
     lambda c: c.enable_empty_workload_propagation, lambda v: str(v).lower()),
    ("enable_scheduler_estimator", "estimator.enabled", lambda c: c.estimator.enabled,
     lambda v: str(v).lower()),
    ("disable_scheduler_estimator_in_pull_mode", "estimator.disableInPullMode",
     lambda c: c.estimator.disable_in_pull_mode, lambda v: str(v).lower()),
    ("scheduler_estimator_timeout", "estimator.timeout", lambda c: c.estimator.timeout_seconds, _seconds),
    ("scheduler_estimator_port", "estimator.port", lambda c: c.estimator.port, str),
    ("scheduler_estimator_ca_file", "estimator.caFile", lambda c: c.estimator.ca_file or None, str),
    ("scheduler_estimator_cert_file", "estimator.certFile", lambda c: c.estimator.cert_file or None, str),
    ("scheduler_estimator_key_file", "estimator.keyFile", lambda c: c.estimator.key_file or None, str),
    ("insecure_skip_estimator_verify", "estimator.insecureSkipVerify",
     lambda c: c.estimator.insecure_skip_verify, lambda v: str(v).lower()),
    ("scheduler_estimator_service_prefix", "estimator.servicePrefix",
     lambda c: c.estimator.service_prefix, str),
    ("scheduler_estimator_service_namespace", "estimator.serviceNamespace",
     lambda c: c.estimator.service_namespace, str),
    ("assumption_ttl", "assumptionTTL", lambda c: c.assumption_ttl, _seconds),
)


class FlagConflict(ValueError):
    """A flag given beside ``--config`` says something else than the file (one line)."""


def _flag(dest: str) -> str:
    return "--" + dest.replace("_", "-")


def apply_configuration(
    args: argparse.Namespace, configuration: SchedulerConfiguration
) -> argparse.Namespace:
    """``args`` with every setting the file carries taken from it; FlagConflict for a flag given
    beside the file with another value (a flag given with the same value is fine). A path the
    file leaves empty (``kubeconfig``, the estimator's TLS files) is not set: the flag gives it.
    ``--feature-gates`` and the file's ``featureGates`` add up; a gate both name must agree."""
    from fleetsched.scheduler import config

    explicit = explicit_flags(args)
    source = args.config
    if "scheduler_name" in explicit:
        names = sorted(configuration.scheduler_names())
        if names != [args.scheduler_name]:
            raise FlagConflict(
                f"--scheduler-name={args.scheduler_name} contradicts {source} (profiles serve: "
                f"{', '.join(names)}); name the profiles in the file only"
            )
    if "plugins" in explicit:
        try:
            wanted = config.default_profile(args.plugins).plugins
        except ValueError as exc:
            raise FlagConflict(f"--plugins: {exc}") from None
        conflict = plugins_contradiction(args.plugins, wanted, configuration.profiles, source)
        if conflict is not None:
            raise FlagConflict(conflict)
    updated = argparse.Namespace(**vars(args))
    for dest, field, value_of, written in _FILE_FIELDS:
        value = value_of(configuration)
        if value is None and dest in explicit:
            continue  # an empty path in the file (kubeconfig, estimator TLS files) is not set
        if dest in explicit and getattr(args, dest) != value:
            shown = "" if value is None else written(value)
            raise FlagConflict(
                f"{_flag(dest)}={getattr(args, dest)} contradicts {source} ({field}: {shown or '<empty>'}); "
                "set it in one place"
            )
        setattr(updated, dest, value)
    try:
        gates = merge_feature_gates(args.feature_gates, configuration.feature_gates, source=source)
    except ValueError as exc:
        raise FlagConflict(str(exc)) from None
    updated.feature_gates = gates
    return updated


def profile_schedulers(
    loaded: LoadedConfiguration, settings: Settings, **scheduler_options: Any
) -> dict[str, Scheduler]:
    """One real Scheduler (Framework) per profile, by schedulerName, over the in-tree registry with
    the file's out-of-tree plugins merged in. ``ProfileError`` (one line) for a profile that cannot
    be built."""
    from fleetsched.scheduler.profiles import profile_schedulers as build

    return build(
        loaded.configuration.profiles,
        settings,
        out_of_tree=loaded.out_of_tree,
        enable_empty_workload_propagation=loaded.configuration.enable_empty_workload_propagation,
        **scheduler_options,
    )


def load_configuration(args: argparse.Namespace) -> tuple[argparse.Namespace, LoadedConfiguration | None]:
    """With ``--config``: the flags completed from the file, and the loaded file (its configuration
    and the out-of-tree plugins its profiles enable)."""
    if not args.config:
        return args, None
    from fleetsched.scheduler import config

    loaded = config.load_configuration(
        args.config, workload_affinity=gate_enabled(args.feature_gates, WORKLOAD_AFFINITY)
    )
    return apply_configuration(args, loaded.configuration), loaded


def scheduler_settings(args: argparse.Namespace) -> Settings:
    """The core's settings from the flags (every Karmada gate is honoured or has no effect here)."""
    gates = args.feature_gates
    return Settings(
        plugins=args.plugins,
        enable_empty_workload_propagation=args.enable_empty_workload_propagation,
        customized_cluster_resource_modeling=gate_enabled(gates, CUSTOMIZED_CLUSTER_RESOURCE_MODELING),
        multiple_pod_templates=gate_enabled(gates, MULTIPLE_POD_TEMPLATES_SCHEDULING),
        workload_affinity=gate_enabled(gates, WORKLOAD_AFFINITY),
    )


def operator_config(
    args: argparse.Namespace, *, scheduler_names: frozenset[str] | None = None,
    move_budget: MoveBudget | None = None,
) -> OperatorConfig:
    """The operator's settings from the flags (``--scheduling-timeout=0``: no budget); one
    schedulerName per profile (default: ``--scheduler-name``); the file's ``moveBudget``."""
    return OperatorConfig(
        scheduler_names=scheduler_names or frozenset({args.scheduler_name}),
        workers=max(args.workers, 1),
        leader_election=command.leader_election(args),
        scheduling_timeout=args.scheduling_timeout or None,
        sharding=command.sharding(args),
        overcommit_protection=gate_enabled(args.feature_gates, SCHEDULING_OVERCOMMIT_PROTECTION),
        assumption_ttl=args.assumption_ttl,
        move_budget=move_budget,
        binding_update_debounce=args.binding_update_debounce,
    )


def scheduling_queue(args: argparse.Namespace) -> SchedulingQueue:
    """Karmada's priority queue, or with ``PriorityBasedScheduling=false`` its legacy FIFO work queue."""
    if gate_enabled(args.feature_gates, PRIORITY_BASED_SCHEDULING):
        return SchedulingQueue()
    return SchedulingQueue.legacy()


async def _close_extenders(extenders: Sequence[Any]) -> None:
    """Close the extenders' connection pools (their blocking face, off this event loop)."""
    for extender in extenders:
        try:
            await asyncio.to_thread(extender.close)
        except Exception as exc:  # a pool that fails to close must not hide the exit code
            log.warning("extender_close_failed", extender=extender.name, error=str(exc))


async def _serve(args: argparse.Namespace) -> int:
    configuration: LoadedConfiguration | None = None
    extenders: Mapping[str, Sequence[Any]] = {}
    all_extenders: Sequence[Any] = ()
    if args.config:
        from fleetsched.extender import ExtenderConfigError, build_profile_extenders
        from fleetsched.scheduler.config import ConfigError, PluginLoadError
        from fleetsched.scheduler.profiles import ProfileError

        try:
            args, configuration = load_configuration(args)
            # Built once before connecting, so a profile that cannot be built is refused at start-up.
            profile_schedulers(configuration, scheduler_settings(args))
            # One pooled HTTPS client per configured extender, on the extender edge's own loop.
            extenders, all_extenders = build_profile_extenders(configuration.configuration.profiles)
        except (ConfigError, PluginLoadError, FlagConflict, ProfileError, ExtenderConfigError) as exc:
            from fleetsched.scheduler.config.load import unknown_arg_message

            error = unknown_arg_message(exc, configuration) or str(exc)
            log.error("invalid_flag", flag="--config", error=error)
            return 2
    try:
        command.sharding(args)
    except ValueError as exc:  # a group name or timings a member Lease cannot have
        log.error("invalid_flag", flag="--shard-mode", error=str(exc))
        await _close_extenders(all_extenders)
        return 2
    try:
        return await _run(args, configuration, extenders)
    finally:
        await _close_extenders(all_extenders)


class _Refused(Exception):
    """A flag whose value cannot be used: said in one line naming it, and the process exits 2."""

    def __init__(self, flag: str, error: str) -> None:
        super().__init__(error)
        self.flag = flag


async def _accurate_estimator(client: KubeClient, args: argparse.Namespace) -> Any:
    """The accurate estimator client of --enable-scheduler-estimator (``_Refused`` when it cannot
    be built)."""
    flag = "--enable-scheduler-estimator"
    try:
        from fleetsched.controller.scheduler.estimation import accurate_estimator
    except ImportError as exc:
        raise _Refused(flag, f"the accurate estimator client is not available: {exc}") from None
    try:
        accurate = await accurate_estimator(client, args)
    except ValueError as exc:  # a certificate file that is not a readable, bounded regular file
        raise _Refused(flag, str(exc)) from None
    if 0 < args.scheduling_timeout <= args.scheduler_estimator_timeout:
        log.warning(
            "flag_conflict",
            flag="--scheduling-timeout",
            error="not above --scheduler-estimator-timeout: a binding whose estimator hangs "
            "runs out of budget before the general estimate can be used",
        )
    return accurate


def _schedulers(
    args: argparse.Namespace,
    configuration: LoadedConfiguration | None,
    extenders: Mapping[str, Sequence[Any]],
    estimators: list[Any],
) -> tuple[Scheduler, dict[str, Scheduler]]:
    """The core of each profile (one, named --scheduler-name, without a configuration file), and
    the first of them (``_Refused`` naming --plugins for a plugin selection that cannot be run)."""
    settings = scheduler_settings(args)
    observers: dict[str, Any] = {
        "estimators": estimators,
        "observe_step": compute.observe_step,  # the step's metric, then a budget checkpoint
        "observe_point": metrics.observe_point,
        "observe_plugin": metrics.observe_plugin,
        "extender_skipped": count_ignored_failure,
    }
    try:
        scheduler = Scheduler(settings=settings, **observers)
        profiles = {args.scheduler_name: scheduler}
        if configuration is not None:
            profiles = profile_schedulers(configuration, settings, extenders=extenders, **observers)
            scheduler = next(iter(profiles.values()))
    except PluginSelectionError as exc:
        raise _Refused("--plugins", str(exc)) from None
    return scheduler, profiles


async def _run(
    args: argparse.Namespace,
    configuration: LoadedConfiguration | None,
    extenders: Mapping[str, Sequence[Any]],
) -> int:
    connection = karmada_flags.with_master(load_connection(args.kubeconfig), args)
    client = command.kube_client(connection, args, agent="fleetsched-scheduler")
    accurate: Any = None
    try:
        if args.enable_scheduler_estimator:
            accurate = await _accurate_estimator(client, args)
        estimators = [] if accurate is None else [accurate]
        scheduler, profiles = _schedulers(args, configuration, extenders, estimators)
    except _Refused as exc:
        log.error("invalid_flag", flag=exc.flag, error=str(exc))
        await client.close()
        if accurate is not None:
            accurate.close()
        return 2
    operator = SchedulerOperator(
        client=client,
        connection=connection,
        scheduler=scheduler,
        accurate=accurate,
        profiles=profiles,
        config=operator_config(
            args, scheduler_names=frozenset(profiles),
            move_budget=configuration.configuration.move_budget if configuration is not None else None,
        ),
        queue=scheduling_queue(args),
    )
    metrics.instrument_queue(operator.queue, metrics.SCHEDULER_QUEUE)
    metrics.serve_as("scheduler")  # /metrics: this process's series only

    try:
        runners = await start_endpoints(
            operator.ready,
            health_probe_bind_address=args.health_probe_bind_address,
            metrics_bind_address=args.metrics_bind_address,
        )
    except ListenError as exc:  # a taken port: one line, exit 2
        log.error("invalid_flag", flag=exc.flag, error=str(exc))
        await client.close()
        if accurate is not None:
            accurate.close()
        return 2
    stop = command.stop_on_signals()
    log.info(
        "scheduler_starting",
        scheduler_names=sorted(profiles),
        workers=args.workers,
        scheduling_timeout=args.scheduling_timeout,
        leader_elect=args.leader_elect and args.shard_mode != "lease",
        shard_mode=args.shard_mode,
        shard_member=operator.config.sharding.member if operator.config.sharding else None,
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
