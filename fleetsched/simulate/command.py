"""``fleetsched simulate``'s command line: its flags, the configuration and profiles it builds,
and the run: load, plan, schedule, write, each refusal one line on stderr and exit status 2."""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import gc
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from fleetsched.api.text import for_terminal
from fleetsched.flags import (
    CUSTOMIZED_CLUSTER_RESOURCE_MODELING,
    MULTIPLE_POD_TEMPLATES_SCHEDULING,
    SCHEDULING_OVERCOMMIT_PROTECTION,
    WORKLOAD_AFFINITY,
    explicit_flags,
    gate_enabled,
    merge_feature_gates,
    parse_feature_gates,
    plugins_contradiction,
    record_explicit_flags,
)
from fleetsched.scheduler.convert import (
    ConversionError,
    binding_from_dict,
    cluster_from_dict,
    peer_from_dict,
    status_from_dict,
)
from fleetsched.scheduler.framework import PluginSelectionError, containment
from fleetsched.scheduler.outcome import ScheduleResult, render_into_binding
from fleetsched.scheduler.pipeline import Scheduler, Settings
from fleetsched.scheduler.snapshot import Snapshot
from fleetsched.scheduler.types import ClusterInfo, PeerBinding

if TYPE_CHECKING:
    from fleetsched.scheduler.config import LoadedConfiguration

from fleetsched.simulate.listers import attach_input
from fleetsched.simulate.output import Writer
from fleetsched.simulate.plan import (
    BadInput,
    Checks,
    Plan,
    WorkerError,
    binding_key,
    binding_ref,
    check_inventory_clusters,
    derived_bindings,
    dump_model,
    plan_work,
    scheduler_name_of,
)
from fleetsched.simulate.pool import Job, schedule_all
from fleetsched.simulate.progress import Progress, isatty

EXIT_BAD_INPUT = 2
# --fail-on-unschedulable: some binding was tried and not scheduled (Scheduled=False).
EXIT_UNSCHEDULABLE = 3


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="YAML files with Clusters and bindings and/or policies + workloads ('-' = stdin)",
    )
    parser.add_argument(
        "-o",
        "--output",
        choices=("table", "yaml", "json"),
        default="table",
        help="table (default): one row per binding; yaml/json: a List of the scheduled bindings",
    )
    parser.add_argument(
        "--explain",
        action="store_true",
        help="print per binding and affinity group: filter verdicts, scores, estimates, division",
    )
    parser.add_argument(
        "--plugins",
        default="*",
        help="scheduler plugins, Karmada syntax: '*' all, '-Name' disables, 'Name' enables "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--enable-empty-workload-propagation",
        action="store_true",
        help="also list selected clusters that got 0 replicas (Karmada flag of the same name)",
    )
    parser.add_argument(
        "--feature-gates",
        default="",
        help="Karmada's gates; those that change results here: CustomizedClusterResourceModeling "
        "(default true), WorkloadAffinity (default false; peers are the input ResourceBindings as "
        "written), MultiplePodTemplatesScheduling (default false), SchedulingOvercommitProtection "
        "(default false; when on, the bindings are scheduled one at a time in queue order, priority "
        "then input order, each against the capacity assumed for those placed before it, so a burst "
        "shows which would fail; --jobs then only derives, and --explain shows the capacity "
        "deducted per cluster; the output keeps input order)",
    )
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="a SchedulerConfiguration file (config.fleetsched.io/v1alpha1, see `fleetsched config "
        "default`): each binding is scheduled by the profile of its spec.schedulerName; --plugins and "
        "--enable-empty-workload-propagation, when given, must agree with it; its featureGates add "
        "to --feature-gates (a gate named in both must agree)",
    )
    parser.add_argument(
        "-j",
        "--jobs",
        type=_jobs,
        default=1,
        metavar="N",
        help="derive and schedule in N worker processes (0: one per CPU); the output is the same, in "
        "the same order, as with one (default: %(default)s)",
    )
    parser.add_argument(
        "--progress",
        action="store_true",
        help="print the progress line (phase and counts) on stderr even when stderr is not a "
        "terminal; on a terminal it appears by itself when the work takes more than 2 seconds",
    )
    parser.add_argument(
        "--fail-on-unschedulable",
        action="store_true",
        help=f"exit {EXIT_UNSCHEDULABLE} when any binding was tried and not scheduled (Scheduled=False), "
        "after printing everything, so CI can gate on it; without it a binding that cannot be placed "
        "is a result and the exit status is 0 (a binding no profile serves is not counted)",
    )
    add_validate_argument(parser)
    record_explicit_flags(parser)


def add_validate_argument(parser: argparse.ArgumentParser) -> None:
    """kubectl's ``--validate`` for the commands that read objects the API server never saw."""
    parser.add_argument(
        "--validate",
        type=_validate_mode,
        default="strict",
        metavar="MODE",
        help="a field a Karmada kind does not declare (Nodes, Pods, ResourceQuotas: one Kubernetes' API "
        "does not declare; other kinds: one their top level or metadata lacks), as kubectl's "
        "--validate: strict (default; also true) refuses it, exit 2, with kubectl's words "
        "(strict decoding error: unknown field \"spec.placment\") and where "
        "it is; warn says so on stderr and goes on; ignore (also false) drops it as the API server's "
        "pruning would",
    )


def _validate_mode(text: str) -> str:
    from fleetsched.api.strict import normalize_mode

    try:
        return normalize_mode(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def warn_on_stderr(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)


def _jobs(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 (one per CPU) or more, got {value}")
    return value


def _gates(text: str) -> dict[str, bool]:
    try:
        return parse_feature_gates(text)
    except ValueError as exc:
        raise BadInput(f"--feature-gates: {exc}") from None


def simulate_objects(
    clusters: Sequence[Mapping[str, Any]],
    bindings: Sequence[Mapping[str, Any]],
    scheduler: Scheduler,
    *,
    now: dt.datetime | None = None,
    progress: Any = None,
    profiles: Mapping[str, Scheduler] | None = None,
) -> list[tuple[dict[str, Any], ScheduleResult]]:
    """Schedule every JSON-shaped binding independently against one snapshot of ``clusters``.

    With ``profiles`` (schedulerName -> Scheduler) each binding is scheduled by its profile's
    scheduler, and one that no profile serves is returned as given, with no condition. (The
    library form, every result in a list; the command streams, binding by binding.)
    """
    peers: tuple[PeerBinding, ...] = ()
    if scheduler.settings.workload_affinity:
        # Workload (anti-)affinity peers: the ResourceBindings as given (ClusterResourceBindings are
        # not tracked, §11).
        peers = tuple(peer_from_dict(b) for b in bindings if b.get("kind") != "ClusterResourceBinding")
    snapshot = Snapshot((cluster_from_dict(c) for c in clusters), peers)
    now = now or dt.datetime.now(dt.UTC)
    out = []
    for i, raw in enumerate(bindings):
        chosen = scheduler if profiles is None else profiles.get(scheduler_name_of(raw))
        if chosen is None:
            out.append((dict(raw), ScheduleResult(binding_ref(binding_key(raw)), None, None, None, False)))
        else:
            result = chosen.schedule(binding_from_dict(raw), status_from_dict(raw), snapshot)
            out.append((render_into_binding(raw, result, now=now), result))
        if progress is not None:
            progress(i + 1, len(bindings))
    return out


def _configuration(
    args: argparse.Namespace, gates: dict[str, bool]
) -> tuple[LoadedConfiguration | None, dict[str, bool]]:
    """The ``--config`` file resolved and checked against the flags given beside it (None without
    one), and the feature gates: ``gates`` (``--feature-gates``) and the file's ``featureGates``."""
    if not args.config:
        return None, gates
    from fleetsched.scheduler import config

    try:
        loaded = config.load_configuration(
            args.config, workload_affinity=gate_enabled(gates, WORKLOAD_AFFINITY)
        )
    except (config.ConfigError, config.PluginLoadError) as exc:
        raise BadInput(str(exc)) from None
    configuration = loaded.configuration
    try:
        gates = merge_feature_gates(gates, configuration.feature_gates, source=args.config)
    except ValueError as exc:
        raise BadInput(str(exc)) from None
    workload_affinity = gate_enabled(gates, WORKLOAD_AFFINITY)
    explicit = explicit_flags(args)
    if "plugins" in explicit:
        try:
            wanted = config.default_profile(args.plugins, workload_affinity=workload_affinity).plugins
        except ValueError as exc:
            raise BadInput(f"--plugins: {exc}") from None
        conflict = plugins_contradiction(args.plugins, wanted, configuration.profiles, args.config)
        if conflict is not None:
            raise BadInput(conflict)
    in_file = configuration.enable_empty_workload_propagation
    if "enable_empty_workload_propagation" in explicit and args.enable_empty_workload_propagation != in_file:
        raise BadInput(
            f"--enable-empty-workload-propagation contradicts {args.config} "
            f"(enableEmptyWorkloadPropagation: {str(in_file).lower()}); set it in one place"
        )
    return loaded, gates


def _profile_schedulers(loaded: LoadedConfiguration, base: Settings, **options: Any) -> dict[str, Scheduler]:
    """One real Scheduler (Framework) per profile, out-of-tree plugins merged into the registry."""
    from fleetsched.scheduler.profiles import ProfileError, profile_schedulers

    configuration = loaded.configuration
    try:
        return profile_schedulers(
            configuration.profiles,
            base,
            out_of_tree=loaded.out_of_tree,
            enable_empty_workload_propagation=configuration.enable_empty_workload_propagation,
            **options,
        )
    except ProfileError as exc:
        from fleetsched.scheduler.config.load import unknown_arg_message

        raise BadInput(unknown_arg_message(exc, loaded) or str(exc)) from None


def _clock() -> dt.datetime:
    """The one time of the run: every binding scheduled "now" carries the same timestamps."""
    return dt.datetime.now(dt.UTC)


def _job_count(requested: int) -> int:
    if requested:
        return requested
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _extenders(loaded: LoadedConfiguration | None) -> tuple[Mapping[str, Sequence[Any]], Sequence[Any]]:
    """The file's HTTP(S) extenders, built once (imported only when a profile lists one)."""
    if loaded is None or not any(p.extenders for p in loaded.configuration.profiles):
        return {}, ()
    from fleetsched.extender import ExtenderConfigError, build_profile_extenders

    try:
        return build_profile_extenders(loaded.configuration.profiles)
    except ExtenderConfigError as exc:
        raise BadInput(str(exc)) from None


def run(args: argparse.Namespace) -> int:
    # A plugin's SystemExit/KeyboardInterrupt fails its binding; Ctrl-C (marked as the process's own
    # shutdown by this block's SIGINT handler) still stops the run.
    with containment.interrupts_shut_down():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    from fleetsched.api.load import LoadError

    progress = Progress(
        sys.stderr, enabled=args.progress or isatty(sys.stderr), delay=0.0 if args.progress else None
    )
    all_extenders: Sequence[Any] = ()
    try:
        configuration, gates = _configuration(args, _gates(args.feature_gates))
        settings = Settings(
            plugins=args.plugins,
            enable_empty_workload_propagation=args.enable_empty_workload_propagation,
            customized_cluster_resource_modeling=gate_enabled(gates, CUSTOMIZED_CLUSTER_RESOURCE_MODELING),
            workload_affinity=gate_enabled(gates, WORKLOAD_AFFINITY),
            multiple_pod_templates=gate_enabled(gates, MULTIPLE_POD_TEMPLATES_SCHEDULING),
        )
        extenders, all_extenders = _extenders(configuration)
        profiles = (
            None
            if configuration is None
            else _profile_schedulers(configuration, settings, extenders=extenders)
        )
        scheduler = Scheduler(settings=settings) if profiles is None else next(iter(profiles.values()))
        jobs = _job_count(args.jobs)
        # An extender's connection pool runs on a thread of this process, which a forked worker
        # would not have: with extenders, one process derives and schedules.
        ignore_jobs = bool(all_extenders) and jobs > 1
        jobs = 1 if ignore_jobs else jobs
        overcommit = gate_enabled(gates, SCHEDULING_OVERCOMMIT_PROTECTION)
        with _collector_paused():
            plan, clusters, scheduler, profiles = _load_and_plan(
                args, scheduler, profiles, configuration, settings, extenders, progress, jobs=jobs
            )
        progress.clear()
        for note in plan.notes:
            print(for_terminal(f"fleetsched simulate: note: {note}"), file=sys.stderr)
        job = Job(
            clusters=clusters,
            peers=tuple(plan.peers),
            scheduler=scheduler,
            profiles=profiles,
            now=_clock(),
            output=args.output,
            explain=args.explain,
            overcommit_protection=overcommit,
        )
        work = plan.work
        del plan
        if ignore_jobs:
            print("fleetsched simulate: note: --jobs ignored: the profiles call HTTP extenders",
                  file=sys.stderr)
        elif overcommit and jobs > 1:
            # Derivation used the workers; scheduling is one sequence, each binding after the last.
            print("fleetsched simulate: note: --jobs ignored for scheduling: with "
                  f"{SCHEDULING_OVERCOMMIT_PROTECTION} each binding is scheduled against the assumptions "
                  "of those before it, one at a time",
                  file=sys.stderr)
            jobs = 1
        unschedulable = _write(job, work, jobs=jobs, progress=progress)
        if unschedulable and args.fail_on_unschedulable:
            print(f"fleetsched simulate: {unschedulable} binding(s) not scheduled", file=sys.stderr)
            return EXIT_UNSCHEDULABLE
    except (LoadError, ConversionError, PluginSelectionError, BadInput, WorkerError) as e:
        progress.clear()
        print(for_terminal(f"fleetsched simulate: {e}"), file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): not an error of ours; silence the final flush.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        gc.unfreeze()  # what _collector_paused froze: collectable again (in-process callers)
        for extender in all_extenders:  # their connection pools
            extender.close()
    return 0


def _load_and_plan(
    args: argparse.Namespace,
    scheduler: Scheduler,
    profiles: dict[str, Scheduler] | None,
    configuration: LoadedConfiguration | None,
    settings: Settings,
    extenders: Mapping[str, Sequence[Any]],
    progress: Progress,
    *,
    jobs: int,
) -> tuple[Plan, tuple[ClusterInfo, ...], Scheduler, dict[str, Scheduler] | None]:
    """Read the files and check and compact every binding (given or derived): the plan, the
    clusters, and the schedulers (node-accurate when the input has Nodes). What is loaded goes
    when this returns; from then on a binding is its compact JSON until it is scheduled."""
    from fleetsched.api.load import load_files

    progress.phase("loading", unit="documents")
    loaded = load_files(args.files, compact_bindings=True, progress=progress.advance,
                        validate=args.validate, warn=warn_on_stderr)
    # Nodes (and Pods) of member clusters in the input make those clusters node-accurate.
    cluster_names = {c.metadata.name for c in loaded.clusters}
    if loaded.nodes:  # imported only then: it brings numpy along
        from fleetsched.estimator.inprocess import InventoryEstimator, inventories_from_objects

        inventories = inventories_from_objects(loaded.nodes, loaded.pods)
        check_inventory_clusters(loaded, cluster_names)
        if inventories:
            estimator = InventoryEstimator(inventories)
            scheduler = Scheduler(settings=scheduler.settings, estimators=[estimator])
            if configuration is not None:
                profiles = _profile_schedulers(
                    configuration, settings, estimators=[estimator], extenders=extenders
                )
    clusters = tuple(cluster_from_dict(dump_model(c)) for c in loaded.clusters)
    explicit = loaded.bindings
    progress.phase("checking bindings", total=len(explicit), unit="bindings")
    checks = Checks(cluster_names, profiles, scheduler.settings.workload_affinity)
    derived = derived_bindings(loaded, progress, jobs=jobs)
    plan = plan_work(explicit, derived, checks=checks, progress=progress)
    if loaded.policies and loaded.templates:  # (admitted above already: admission cannot fail here)
        from fleetsched.detector import admit_offline
        from fleetsched.simulate.selects import selects_nothing_notes

        admitted = [admit_offline(p, source=loaded.source_of(p)) for p in loaded.policies]
        plan.selects_nothing_notes = selects_nothing_notes(admitted, loaded.templates)
    namespaces = [t.raw for t in loaded.templates if t.kind == "Namespace" and t.api_version == "v1"]
    cores = (scheduler, *(profiles or {}).values())
    attach_input(cores, namespaces=namespaces, clusters=clusters, work=plan.work)
    return plan, clusters, scheduler, profiles


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """No cyclic garbage collection while the input is loaded and planned.

    Those phases build a large heap of small containers that lives until they end and holds no
    cycles; the collector would only traverse it again and again as it grows (a sixth of the
    CPU on 50,000 workloads). What they leave is collected once, then frozen, so the collections
    while bindings are scheduled look at the new objects only (and forked --jobs workers share
    those pages instead of copying them).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
    gc.collect()
    gc.freeze()


def _write(job: Job, work: list[tuple[bytes, bool]], *, jobs: int, progress: Progress) -> int:
    """Schedule ``work`` and write each result as it comes, in input order; the number of bindings
    tried and not scheduled."""
    writer = Writer(
        output=job.output, explain=job.explain, stdout=sys.stdout, stderr=sys.stderr, progress=progress
    )
    progress.phase("scheduling", total=len(work), unit="bindings")
    started = False
    unschedulable = 0
    for rendered in schedule_all(job, work, jobs=jobs):
        unschedulable += sum(r.unschedulable for r in rendered)
        if not started:  # nothing on stdout before the first binding is scheduled
            writer.begin()
            started = True
        writer.add(rendered)
        progress.advance(len(rendered))
    if not started:
        writer.begin()
    writer.end()
    progress.finish(f"scheduled {len(work)} bindings" + (f" ({jobs} processes)" if jobs > 1 else ""))
    return unschedulable
