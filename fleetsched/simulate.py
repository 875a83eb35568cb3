"""``fleetsched simulate``: the whole scheduling pipeline offline, from YAML files to scheduled bindings.

Owns the command line (files, output format, ``--explain``, plugins or ``--config``), turning loaded
objects into a cluster snapshot and bindings (given directly, or derived from policies and
workload templates by the detector), scheduling each binding independently against the same
snapshot (scheduler.md §3.7a) and printing the result. Bad input is one line on stderr and exit
status 2; a binding that cannot be placed is a result, not an error.

Without ``--config`` every binding is scheduled by the one profile the flags describe, whatever its
``spec.schedulerName`` (as before configuration files existed). With ``--config`` each binding goes
to the profile of its ``spec.schedulerName`` (empty: ``default-scheduler``), as the live scheduler
does; a binding no profile serves is printed as given, with a note.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from collections.abc import Mapping, Sequence, Set
from typing import TYPE_CHECKING, Any

from fleetsched.flags import explicit_flags, parse_feature_gates, record_explicit_flags
from fleetsched.scheduler.config.types import DEFAULT_SCHEDULER_NAME
from fleetsched.scheduler.convert import (
    ConversionError,
    binding_from_dict,
    cluster_from_dict,
    peer_from_dict,
    status_from_dict,
)
from fleetsched.scheduler.framework import PluginSelectionError
from fleetsched.scheduler.outcome import PluginScore, ScheduleResult, render_into_binding
from fleetsched.scheduler.pipeline import Scheduler, Settings, Snapshot
from fleetsched.scheduler.types import PeerBinding

if TYPE_CHECKING:
    from fleetsched.scheduler.config import LoadedConfiguration

__all__ = ["add_arguments", "merge_bindings", "run", "simulate_objects"]

EXIT_BAD_INPUT = 2


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
        "written), MultiplePodTemplatesScheduling (default false)",
    )
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="a SchedulerConfiguration file (config.fleetsched.io/v1alpha1, see `fleetsched config "
        "default`): each binding is scheduled by the profile of its spec.schedulerName; --plugins and "
        "--enable-empty-workload-propagation, when given, must agree with it",
    )
    record_explicit_flags(parser)


class _BadInput(Exception):
    pass


def _gates(text: str) -> dict[str, bool]:
    try:
        return parse_feature_gates(text)
    except ValueError as exc:
        raise _BadInput(f"--feature-gates: {exc}") from None


def _dump(model: Any) -> dict[str, Any]:
    # Only fields present in the input: bindings are taken as written, no defaults (§3.7a).
    return model.model_dump(mode="python", by_alias=True, exclude_unset=True)  # type: ignore[no-any-return]


def _derive_bindings(loaded: Any) -> list[Any]:
    """Bindings the detector derives from policies + workload templates, when both are given."""
    if not loaded.policies or not loaded.templates:
        return []
    try:
        from fleetsched import detector
    except ImportError:
        raise _BadInput("policies and workload templates need the detector, which is not available") from None
    derive = getattr(detector, "derive_bindings", None)
    if derive is None:
        raise _BadInput("policies and workload templates need fleetsched.detector.derive_bindings")
    return list(derive(loaded))


def _binding_key(obj: Mapping[str, Any]) -> tuple[str, str, str]:
    kind = obj.get("kind") or "ResourceBinding"
    md = obj.get("metadata") or {}
    namespace = "" if kind == "ClusterResourceBinding" else (md.get("namespace") or "")
    return (kind, namespace, md.get("name") or "")


def merge_bindings(
    explicit: Sequence[Mapping[str, Any]], derived: Sequence[Mapping[str, Any]]
) -> tuple[list[Mapping[str, Any]], list[str]]:
    """The bindings to schedule: every given one, then each derived one not already given.

    A binding given in the input and also derived from a policy + template (same kind, namespace
    and name) is one object in Karmada; the given one wins, because it may carry a previous
    result and status. Returns the bindings and one note per derived binding dropped.
    """
    seen = {_binding_key(b) for b in explicit}
    out: list[Mapping[str, Any]] = list(explicit)
    notes: list[str] = []
    for b in derived:
        key = _binding_key(b)
        if key in seen:
            kind, namespace, name = key
            ref = f"{namespace}/{name}" if namespace else name
            notes.append(
                f"{kind} {ref} is given in the input and also derived from a policy; using the given one"
            )
            continue
        seen.add(key)
        out.append(b)
    return out, notes


def unknown_target_notes(bindings: Sequence[Mapping[str, Any]], cluster_names: Set[str]) -> list[str]:
    """One note per previous target that names no Cluster of the input.

    Not an error: Karmada meets the same when a member was removed, and simply re-places those
    replicas. But a typo looks the same, so the user hears about it.
    """
    notes = []
    for b in bindings:
        kind, namespace, name = _binding_key(b)
        ref = f"{namespace}/{name}" if namespace else name
        for i, target in enumerate((b.get("spec") or {}).get("clusters") or []):
            if target.get("name") not in cluster_names:
                notes.append(
                    f"{kind} {ref}: spec.clusters[{i}].name: {target.get('name')!r} is not a Cluster of the "
                    "input; treated as a removed cluster (its replicas are placed again)"
                )
    return notes


def _check_inventory_clusters(loaded: Any, cluster_names: Set[str]) -> None:
    """Nodes assigned to a member cluster the input does not define are a mistake, not a what-if."""
    from fleetsched.api.load import LoadError
    from fleetsched.estimator.inprocess import MEMBER_CLUSTER_ANNOTATION, member_cluster_of

    for item in loaded.objects:
        if getattr(item.obj, "kind", None) != "Node":
            continue
        name = member_cluster_of(item.obj.raw)
        if name and name not in cluster_names:
            raise LoadError(
                f"unknown cluster {name!r}: no Cluster of that name in the input",
                source=item.source,
                path=f"metadata.annotations[{MEMBER_CLUSTER_ANNOTATION}]",
            )


def scheduler_name_of(binding: Mapping[str, Any]) -> str:
    """The profile a binding asks for: ``spec.schedulerName``, Karmada's default when empty."""
    return (binding.get("spec") or {}).get("schedulerName") or DEFAULT_SCHEDULER_NAME


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
    scheduler, and one that no profile serves is returned as given, with no condition.
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
            _, namespace, name = _binding_key(raw)
            key = f"{namespace}/{name}" if namespace else name
            out.append((dict(raw), ScheduleResult(key, None, None, None, False)))
        else:
            result = chosen.schedule(binding_from_dict(raw), status_from_dict(raw), snapshot)
            out.append((render_into_binding(raw, result, now=now), result))
        if progress is not None:
            progress(i + 1, len(bindings))
    return out


def _json_default(value: Any) -> Any:
    """What the JSON encoder cannot write itself: times (RFC 3339) and quantities (canonical text)."""
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    if isinstance(value, tuple):
        return list(value)
    return str(value)


def _target(t: Mapping[str, Any]) -> str:
    return f"{t['name']}:{t['replicas']}" if "replicas" in t else str(t["name"])


def _table(results: list[tuple[dict[str, Any], ScheduleResult]]) -> str:
    rows = [("KIND", "NAMESPACE", "NAME", "SCHEDULED", "REASON", "AFFINITY", "CLUSTERS")]
    for obj, result in results:
        md = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        clusters = ", ".join(_target(t) for t in spec.get("clusters") or []) or "<none>"
        cond = result.condition
        rows.append(
            (
                "RB" if obj.get("kind") != "ClusterResourceBinding" else "CRB",
                md.get("namespace") or "-",
                md.get("name") or "",
                "-" if cond is None else ("True" if cond.status else "False"),
                "-" if cond is None else cond.reason,
                status.get("schedulerObservingAffinityName") or "-",
                clusters,
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    lines = [
        "   ".join(c.ljust(w) for c, w in zip(r[:-1], widths, strict=True)) + "   " + r[-1] for r in rows
    ]
    return "\n".join(line.rstrip() for line in lines)


def explain(result: ScheduleResult, obj: Mapping[str, Any], *, unserved: bool = False) -> str:
    """Human-readable account of one binding's attempt: per affinity group, every decision.
    ``unserved``: no profile serves the binding's schedulerName, so it was left alone."""
    kind = obj.get("kind") or "ResourceBinding"
    lines = [f"{kind} {result.key}"]
    spec = obj.get("spec") or {}
    if unserved:
        lines.append(f"  left alone: no profile serves schedulerName {scheduler_name_of(obj)!r}")
        return "\n".join(lines)
    lines.append(f"  replicas: {spec.get('replicas', 0)}   strategy: {result.strategy}   mode: {result.mode}")
    if result.profile and result.profile != DEFAULT_SCHEDULER_NAME:
        lines.append(f"  profile: {result.profile}")
    if result.condition is None:
        lines.append("  not scheduled: the binding has no spec.placement")
        return "\n".join(lines)
    if not result.attempts:
        lines.append(
            "  clusterAffinities is an empty list: nothing to try (reported as success, nothing written)"
        )
    for attempt in result.attempts:
        title = f"affinity group {attempt.affinity_name!r}" if attempt.affinity_name else "placement"
        lines.append(f"  {title}{' (with overflow tiers)' if attempt.overflow else ''}:")
        rejected = [v for v in attempt.verdicts if not v.feasible]
        feasible = [v for v in attempt.verdicts if v.feasible]
        lines.append(f"    filter: {len(feasible)} feasible, {len(rejected)} rejected")
        for v in rejected:
            if v.deleting:
                lines.append(f"      x {v.cluster}: being deleted")
            else:
                lines.append(f"      x {v.cluster}: {v.plugin}: {'; '.join(v.reasons)}")
        for e in attempt.extenders:
            verdict = f"skipped: {e.skipped}" if e.skipped else f"kept {e.kept}, rejected {e.rejected}"
            lines.append(f"    extender {e.extender} (filter): {verdict}")
        for name, text in attempt.post_filter:
            lines.append(f"    post-filter {name}: {text}")
        for skipped in attempt.skipped:
            lines.append(f"    skipped (ignorable) {skipped.plugin} at {skipped.point}: {skipped.reason}")
        if attempt.numbers:
            lines.append("    candidates (sort order: tier, score desc, available desc, name):")
            for n in attempt.numbers:
                if n.plain:
                    per_plugin = ", ".join(f"{p}={s}" for p, s in n.scores)
                else:
                    per_plugin = ", ".join(_part(p) for p in n.parts)
                tier = f" tier={n.overflow_order}" if attempt.overflow else ""
                lines.append(
                    f"      {n.cluster}: score={n.score} ({per_plugin}){tier} "
                    f"allocatable={n.allocatable} available={n.available}"
                )
        if attempt.selected:
            lines.append(f"    selected: {', '.join(attempt.selected)}")
        if attempt.targets is not None:
            division = ", ".join(f"{t.name}:{t.replicas}" for t in attempt.targets) or "<none>"
            lines.append(f"    division: {division}")
        if attempt.error:
            lines.append(f"    failed ({attempt.error_reason}): {attempt.error}")
    cond = result.condition
    lines.append(f"  => Scheduled={'True' if cond.status else 'False'} reason={cond.reason}: {cond.message}")
    clusters = (obj.get("spec") or {}).get("clusters") or []
    lines.append(
        "  => spec.clusters: "
        + (", ".join(f"{t['name']}:{t.get('replicas', 0)}" for t in clusters) or "<none>")
    )
    observed = (obj.get("status") or {}).get("schedulerObservingAffinityName")
    if observed:
        lines.append(f"  => schedulerObservingAffinityName: {observed}")
    return "\n".join(lines)


def _configuration(args: argparse.Namespace, *, workload_affinity: bool) -> LoadedConfiguration | None:
    """The ``--config`` file resolved and checked against the flags given beside it; None without one."""
    if not args.config:
        return None
    from fleetsched.scheduler import config

    try:
        loaded = config.load_configuration(args.config, workload_affinity=workload_affinity)
    except (config.ConfigError, config.PluginLoadError) as exc:
        raise _BadInput(str(exc)) from None
    configuration = loaded.configuration
    explicit = explicit_flags(args)
    if "plugins" in explicit:
        try:
            wanted = config.default_profile(args.plugins, workload_affinity=workload_affinity).plugins
        except ValueError as exc:
            raise _BadInput(f"--plugins: {exc}") from None
        for i, profile in enumerate(configuration.profiles):
            if dict(profile.plugins) != dict(wanted):
                raise _BadInput(
                    f"--plugins={args.plugins} contradicts {args.config}: profiles[{i}] "
                    f"({profile.scheduler_name}) enables other plugins; set the plugins in one place"
                )
    in_file = configuration.enable_empty_workload_propagation
    if "enable_empty_workload_propagation" in explicit and args.enable_empty_workload_propagation != in_file:
        raise _BadInput(
            f"--enable-empty-workload-propagation contradicts {args.config} "
            f"(enableEmptyWorkloadPropagation: {str(in_file).lower()}); set it in one place"
        )
    return loaded


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
        raise _BadInput(str(exc)) from None


def _extenders(loaded: LoadedConfiguration | None) -> tuple[Mapping[str, Sequence[Any]], Sequence[Any]]:
    """The file's HTTP(S) extenders, built once (imported only when a profile lists one)."""
    if loaded is None or not any(p.extenders for p in loaded.configuration.profiles):
        return {}, ()
    from fleetsched.extender import ExtenderConfigError, build_profile_extenders

    try:
        return build_profile_extenders(loaded.configuration.profiles)
    except ExtenderConfigError as exc:
        raise _BadInput(str(exc)) from None


def _part(part: PluginScore) -> str:
    """One plugin's (or extender's) share of a total: raw[->normalised][ x weight = weighted]."""
    text = f"{'extender ' if part.extender else ''}{part.plugin}={part.raw}"
    if part.normalized != part.raw:
        text += f"->{part.normalized}"
    if part.weight != 1:
        text += f" x{part.weight}={part.weighted}"
    return text


def run(args: argparse.Namespace) -> int:
    from fleetsched.api.load import LoadError, load_files

    all_extenders: Sequence[Any] = ()
    try:
        gates = _gates(args.feature_gates)
        settings = Settings(
            plugins=args.plugins,
            enable_empty_workload_propagation=args.enable_empty_workload_propagation,
            customized_cluster_resource_modeling=gates.get("CustomizedClusterResourceModeling", True),
            workload_affinity=gates.get("WorkloadAffinity", False),
            multiple_pod_templates=gates.get("MultiplePodTemplatesScheduling", False),
        )
        configuration = _configuration(args, workload_affinity=settings.workload_affinity)
        extenders, all_extenders = _extenders(configuration)
        profiles = (
            None
            if configuration is None
            else _profile_schedulers(configuration, settings, extenders=extenders)
        )
        scheduler = Scheduler(settings=settings) if profiles is None else next(iter(profiles.values()))
        loaded = load_files(args.files)
        # Nodes (and Pods) of member clusters in the input make those clusters node-accurate.
        cluster_names = {c.metadata.name for c in loaded.clusters}
        if loaded.nodes:  # imported only then: it brings numpy along
            from fleetsched.estimator.inprocess import InventoryEstimator, inventories_from_objects

            inventories = inventories_from_objects(loaded.nodes, loaded.pods)
            _check_inventory_clusters(loaded, cluster_names)
            if inventories:
                estimator = InventoryEstimator(inventories)
                scheduler = Scheduler(settings=scheduler.settings, estimators=[estimator])
                if configuration is not None:
                    profiles = _profile_schedulers(
                        configuration, settings, estimators=[estimator], extenders=extenders
                    )
        clusters = [_dump(c) for c in loaded.clusters]
        explicit = [_dump(b) for b in loaded.bindings]
        derived = [_dump(b) if hasattr(b, "model_dump") else dict(b) for b in _derive_bindings(loaded)]
        bindings, notes = merge_bindings(explicit, derived)
        unserved: set[tuple[str, str, str]] = set()
        for b in bindings if profiles is not None else ():
            if scheduler_name_of(b) not in profiles:
                kind, namespace, name = _binding_key(b)
                unserved.add((kind, namespace, name))
                ref = f"{namespace}/{name}" if namespace else name
                notes.append(
                    f"{kind} {ref}: no profile serves schedulerName {scheduler_name_of(b)!r}; left alone"
                )
        for note in [*notes, *unknown_target_notes(bindings, cluster_names)]:
            print(f"fleetsched simulate: note: {note}", file=sys.stderr)
        progress = None
        if sys.stderr.isatty() and len(bindings) > 50:

            def progress(done: int, total: int) -> None:
                if done == total or done % 100 == 0:
                    sys.stderr.write(f"\rscheduled {done}/{total} bindings")
                    if done == total:
                        sys.stderr.write("\n")
                    sys.stderr.flush()

        results = simulate_objects(clusters, bindings, scheduler, progress=progress, profiles=profiles)
    except (LoadError, ConversionError, PluginSelectionError, _BadInput) as e:
        print(f"fleetsched simulate: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    finally:
        for extender in all_extenders:  # their connection pools
            extender.close()
    try:
        _print_results(args, results, unserved)
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): not an error of ours; silence the final flush.
        import os

        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return 0


def _print_results(
    args: argparse.Namespace,
    results: list[tuple[dict[str, Any], ScheduleResult]],
    unserved: Set[tuple[str, str, str]] = frozenset(),
) -> None:
    items = [obj for obj, _ in results]
    if args.explain:
        text = "\n\n".join(explain(r, obj, unserved=_binding_key(obj) in unserved) for obj, r in results)
        # Keep machine-readable output on stdout clean: with -o json/yaml, explanations go to stderr.
        print(text, file=sys.stdout if args.output == "table" else sys.stderr)
        if args.output == "table":
            print()
    if args.output == "json":
        doc = {"apiVersion": "v1", "kind": "List", "items": items}
        sys.stdout.write(json.dumps(doc, indent=2, default=_json_default))
        sys.stdout.write("\n")
    elif args.output == "yaml":
        import yaml

        # Through JSON: plain types only (times and quantities as text), then YAML.
        text = json.dumps({"apiVersion": "v1", "kind": "List", "items": items}, default=_json_default)
        yaml.safe_dump(json.loads(text), sys.stdout, sort_keys=False)
    else:
        print(_table(results))
