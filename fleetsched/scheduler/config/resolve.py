"""From a structurally valid file to ``SchedulerConfiguration``: defaults, merge rules, cross-field checks.

Merge rules, kube-scheduler's (``apis/config/v1/default_plugins.go`` ``mergePluginSet`` and the
framework's ``multiPoint`` expansion), over our defaults which are per extension point:

* a point starts from its default plugins; ``disabled`` names remove defaults, ``*`` removes all;
* an ``enabled`` plugin that is also a default replaces it in place (its weight counts), any other
  is appended after the defaults, in the order written; a name twice in one ``enabled`` is an error;
* ``multiPoint.enabled`` adds a plugin at every point it implements, after that point's defaults and
  before the point's own additions, unless the point disables it (or ``*``) or configures it itself
  (the point's own entry wins); ``multiPoint.disabled`` removes defaults at every point;
* a score weight not written is 1; exactly one queueSort plugin per profile, the same in every one.

Numbers are held to ranges a running scheduler can use (``Bounds`` below): a duration, weight or
count past them is refused here, naming the field, rather than overflowing a timer or a thread pool
later. An extender's ``urlPrefix`` may not carry user info (``user:password@``): the name of an
extender is its URL, and it is shown in conditions, Events, metrics labels, logs and ``--explain``.

Checks name the field path and the reason; every problem is collected, the first is reported.
Which plugins exist, and at which points, comes in as a catalogue: the in-tree one
(``framework.defaults.in_tree_points``) plus the out-of-tree plugins found through entry points.
"""

from __future__ import annotations

import base64
import binascii
import math
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from fleetsched.flags import ALL_STAGES, KARMADA_FEATURE_GATES, expand_feature_gates
from fleetsched.scheduler.config import v1alpha1 as v1
from fleetsched.scheduler.config.configuration import (
    DEFAULT_ASSUMPTION_TTL,
    SHARD_MODES,
    ClientConnection,
    EstimatorSettings,
    LeaderElection,
    SchedulerConfiguration,
)
from fleetsched.scheduler.config.durations import format_duration
from fleetsched.scheduler.framework.defaults import default_plugins
from fleetsched.scheduler.framework.profile import (
    DEFAULT_SCHEDULER_NAME,
    ExtenderConfig,
    ExtenderTLS,
    ExtensionPoint,
    PluginEntry,
    Profile,
    redact_url,
)
from fleetsched.scheduler.stepping import IntOrPercent, MoveBudget

__all__ = ["Catalog", "Problem", "referenced_plugins", "resolve"]

# Plugin name -> the extension points it implements; None: an out-of-tree factory whose points
# cannot be told before it is built (accepted where the file names a point, refused in multiPoint).
Catalog = Mapping[str, frozenset[ExtensionPoint] | None]

ALL = "*"
# client-go's leaderelection.JitterFactor, which the renew deadline must exceed times retryPeriod.
JITTER_FACTOR = 1.2
MAX_PORT = 65535
# kube-scheduler's Plugin.weight and the parallelism are int32 fields; an extender's weight is held
# to the same range, so a weighted total (at most 100 per plugin) stays far inside an int64.
MAX_WEIGHT = 2**31 - 1
# One worker thread each: more than this is a typo, not a machine.
MAX_PARALLELISM = 1024
# A single call (extender, estimator) or plugin run: longer than this is no timeout at all.
MAX_CALL_TIMEOUT = 600.0
# Leader election periods and the assumption TTL.
MAX_PERIOD = 86400.0
MAX_QPS = 1e6
MAX_BURST = 2**31 - 1

_FIELD_OF_POINT: dict[ExtensionPoint, str] = {
    ExtensionPoint.QUEUE_SORT: "queue_sort",
    ExtensionPoint.PRE_FILTER: "pre_filter",
    ExtensionPoint.FILTER: "filter",
    ExtensionPoint.POST_FILTER: "post_filter",
    ExtensionPoint.PRE_SCORE: "pre_score",
    ExtensionPoint.SCORE: "score",
    ExtensionPoint.RESERVE: "reserve",
    ExtensionPoint.PERMIT: "permit",
    ExtensionPoint.PRE_BIND: "pre_bind",
    ExtensionPoint.POST_BIND: "post_bind",
}


@dataclass(frozen=True, slots=True)
class Problem:
    path: str
    reason: str
    # (line, column) in the file, where the problem is a key written there (an unknown field)
    position: tuple[int, int] | None = None


@dataclass(slots=True)
class _Problems:
    items: list[Problem] = field(default_factory=list)

    def add(self, path: str, reason: str) -> None:
        self.items.append(Problem(path, reason))


def referenced_plugins(model: v1.SchedulerConfigurationModel) -> frozenset[str]:
    """Every plugin name an ``enabled`` list of any profile mentions (what must be loaded)."""
    names: set[str] = set()
    for profile in model.profiles or ():
        plugins = profile.plugins
        if plugins is None:
            continue
        for attribute in ("multi_point", *_FIELD_OF_POINT.values()):
            plugin_set: v1.PluginSetModel | None = getattr(plugins, attribute)
            if plugin_set is not None:
                names.update(p.name for p in plugin_set.enabled or ())
    return frozenset(names)


def resolve(
    model: v1.SchedulerConfigurationModel, *, catalog: Catalog, workload_affinity: bool = False
) -> tuple[SchedulerConfiguration | None, tuple[Problem, ...]]:
    """The configuration the file means, or None and every problem found (in file order)."""
    problems = _Problems()
    defaults = default_plugins(workload_affinity=workload_affinity)
    extenders = tuple(_extender(e, f"extenders[{i}]", problems) for i, e in enumerate(model.extenders or ()))
    _check_unique_extenders(model.extenders or (), problems)
    written = model.profiles or [v1.ProfileModel()]
    profiles = [
        _profile(p, f"profiles[{i}]", catalog=catalog, defaults=defaults, extenders=extenders,
                 several=len(written) > 1, problems=problems)
        for i, p in enumerate(written)
    ]
    _check_across_profiles(profiles, problems)
    workers = 32
    if model.parallelism is not None:
        if model.parallelism < 1:
            problems.add("parallelism", "must be a positive integer")
        elif model.parallelism > MAX_PARALLELISM:
            problems.add("parallelism", f"must be at most {MAX_PARALLELISM} (one worker thread each)")
        workers = model.parallelism
    config = SchedulerConfiguration(
        profiles=tuple(profiles),
        workers=workers,
        enable_empty_workload_propagation=bool(model.enable_empty_workload_propagation),
        leader_election=_leader_election(model.leader_election, problems),
        client_connection=_client_connection(model.client_connection, problems),
        estimator=_estimator(model.estimator, problems),
        feature_gates=_feature_gates(model.feature_gates, problems),
        assumption_ttl=_assumption_ttl(model.assumption_ttl, problems),
        move_budget=_move_budget(model.move_budget, problems),
    )
    if problems.items:
        return None, tuple(problems.items)
    return config, ()


def _check_duration(seconds: float, path: str, maximum: float, problems: _Problems) -> None:
    """A duration that must be positive and at most ``maximum`` seconds."""
    if seconds <= 0:
        problems.add(path, "must be a positive duration")
    elif seconds > maximum:
        problems.add(path, f"must be at most {format_duration(maximum)}")


# ---- profiles -----------------------------------------------------------------------------------


def _profile(
    model: v1.ProfileModel,
    path: str,
    *,
    catalog: Catalog,
    defaults: Mapping[ExtensionPoint, tuple[PluginEntry, ...]],
    extenders: tuple[ExtenderConfig, ...],
    several: bool,
    problems: _Problems,
) -> Profile:
    name = model.scheduler_name
    if name is None:
        # kube-scheduler's defaulting: only a lone profile is named for the default scheduler.
        name = "" if several else DEFAULT_SCHEDULER_NAME
        if several:
            problems.add(f"{path}.schedulerName", "required when there is more than one profile")
    elif not name.strip():
        problems.add(f"{path}.schedulerName", "must not be empty")
    plugins = _plugins(model.plugins or v1.PluginsModel(), f"{path}.plugins", catalog, defaults, problems)
    enabled = {entry.name for entries in plugins.values() for entry in entries}

    args: dict[str, Mapping[str, Any]] = {}
    for i, entry in enumerate(model.plugin_config or ()):
        where = f"{path}.pluginConfig[{i}].name"
        if entry.name in args:
            problems.add(where, f"duplicate pluginConfig for plugin {entry.name!r}")
        elif entry.name not in enabled:
            problems.add(where, f"plugin {entry.name!r} is not enabled in this profile")
        args[entry.name] = MappingProxyType(dict(entry.args or {}))

    ignorable: set[str] = set()
    for i, plugin in enumerate(model.ignorable_plugins or ()):
        where = f"{path}.ignorablePlugins[{i}]"
        if plugin in ignorable:
            problems.add(where, f"duplicate plugin {plugin!r}")
        elif plugin not in enabled:
            problems.add(where, f"plugin {plugin!r} is not enabled in this profile")
        ignorable.add(plugin)

    timeout = model.plugin_timeout
    if timeout is not None:
        _check_duration(timeout, f"{path}.pluginTimeout", MAX_CALL_TIMEOUT, problems)

    return Profile(
        scheduler_name=name,
        plugins=MappingProxyType(plugins),
        plugin_args=MappingProxyType(args),
        extenders=extenders,
        ignorable_plugins=frozenset(ignorable),
        plugin_timeout_seconds=timeout,
    )


def _known(name: str, catalog: Catalog) -> str | None:
    """None when ``name`` is a plugin of the catalogue, else the reason."""
    if name in catalog:
        return None
    return f"unknown plugin {name!r} (known: {', '.join(sorted(catalog))})"


def _check_entries(
    entries: Sequence[v1.PluginModel],
    path: str,
    *,
    point: ExtensionPoint | None,
    catalog: Catalog,
    problems: _Problems,
) -> list[PluginEntry]:
    """Entries of one ``enabled`` list that are usable; ``point`` None means multiPoint."""
    seen: dict[str, int] = {}
    out: list[PluginEntry] = []
    weighted = point in (None, ExtensionPoint.SCORE)
    for i, entry in enumerate(entries):
        where = f"{path}[{i}]"
        reason = _known(entry.name, catalog)
        if reason is not None:
            problems.add(f"{where}.name", reason)
            continue
        if entry.name in seen:
            first = f"{path}[{seen[entry.name]}]"
            problems.add(f"{where}.name", f"duplicate plugin {entry.name!r} (also {first})")
            continue
        seen[entry.name] = i
        points = catalog[entry.name]
        if point is not None and points is not None and point not in points:
            problems.add(f"{where}.name", f"plugin {entry.name!r} does not implement {point.value}")
            continue
        if point is None and points is None:
            problems.add(
                f"{where}.name",
                f"plugin {entry.name!r} does not say which extension points it implements; "
                "enable it at each point instead",
            )
            continue
        if entry.weight is not None:
            if not weighted:
                problems.add(f"{where}.weight", "only score and multiPoint plugins take a weight")
                continue
            if entry.weight < 1:
                problems.add(f"{where}.weight", "must be a positive integer")
                continue
            if entry.weight > MAX_WEIGHT:
                problems.add(f"{where}.weight", f"must be at most {MAX_WEIGHT}")
                continue
        out.append(PluginEntry(entry.name, entry.weight if entry.weight is not None and weighted else 1))
    return out


def _disabled(
    entries: Sequence[v1.DisabledPluginModel], path: str, catalog: Catalog, problems: _Problems
) -> set[str]:
    names: set[str] = set()
    for i, entry in enumerate(entries):
        if entry.name != ALL and (reason := _known(entry.name, catalog)) is not None:
            problems.add(f"{path}[{i}].name", reason)
        names.add(entry.name)
    return names


def _plugins(
    model: v1.PluginsModel,
    path: str,
    catalog: Catalog,
    defaults: Mapping[ExtensionPoint, tuple[PluginEntry, ...]],
    problems: _Problems,
) -> dict[ExtensionPoint, tuple[PluginEntry, ...]]:
    multi = model.multi_point or v1.PluginSetModel()
    multi_enabled = _check_entries(
        multi.enabled or (), f"{path}.multiPoint.enabled", point=None, catalog=catalog, problems=problems
    )
    multi_disabled = _disabled(multi.disabled or (), f"{path}.multiPoint.disabled", catalog, problems)
    multi_by_name = {e.name: e for e in multi_enabled}

    out: dict[ExtensionPoint, tuple[PluginEntry, ...]] = {}
    for point, attribute in _FIELD_OF_POINT.items():
        written: v1.PluginSetModel = getattr(model, attribute) or v1.PluginSetModel()
        where = f"{path}.{point.value}"
        explicit = _check_entries(
            written.enabled or (), f"{where}.enabled", point=point, catalog=catalog, problems=problems
        )
        disabled = _disabled(written.disabled or (), f"{where}.disabled", catalog, problems)
        explicit_by_name = {e.name: e for e in explicit}
        base = () if ALL in multi_disabled else tuple(
            e for e in defaults.get(point, ()) if e.name not in multi_disabled
        )
        merged: list[PluginEntry] = []
        placed: set[str] = set()
        if ALL not in disabled:
            for entry in base:
                if entry.name in disabled:
                    continue
                chosen = explicit_by_name.get(entry.name) or multi_by_name.get(entry.name) or entry
                merged.append(chosen)
                placed.add(entry.name)
            for entry in multi_enabled:
                points = catalog.get(entry.name)
                if (
                    points is not None
                    and point in points
                    and entry.name not in placed
                    and entry.name not in disabled
                    and entry.name not in explicit_by_name
                ):
                    merged.append(entry)
                    placed.add(entry.name)
        merged.extend(e for e in explicit if e.name not in placed)
        if point is not ExtensionPoint.SCORE:
            merged = [PluginEntry(e.name) for e in merged]
        if merged:
            out[point] = tuple(merged)
    sorts = out.get(ExtensionPoint.QUEUE_SORT, ())
    if len(sorts) != 1:
        listed = f": {', '.join(e.name for e in sorts)}" if sorts else ""
        reason = f"exactly one queueSort plugin must be enabled, got {len(sorts)}{listed}"
        problems.add(f"{path}.queueSort", reason)
    return out


def _check_across_profiles(profiles: Sequence[Profile], problems: _Problems) -> None:
    names: dict[str, int] = {}
    for i, profile in enumerate(profiles):
        if not profile.scheduler_name.strip():
            continue  # already reported
        if profile.scheduler_name in names:
            first = f"profiles[{names[profile.scheduler_name]}]"
            reason = f"duplicate schedulerName {profile.scheduler_name!r} (also {first})"
            problems.add(f"profiles[{i}].schedulerName", reason)
        names.setdefault(profile.scheduler_name, i)
    if not profiles:
        return
    first = profiles[0].enabled(ExtensionPoint.QUEUE_SORT)
    for i, profile in enumerate(profiles[1:], start=1):
        sort = profile.enabled(ExtensionPoint.QUEUE_SORT)
        if first and sort and sort != first:
            problems.add(
                f"profiles[{i}].plugins.queueSort",
                f"must be the same in every profile (profiles[0] uses {first[0].name!r})",
            )
        elif first and sort:
            # One queue serves every profile, so its order's args must agree too (kube-scheduler's rule).
            name = first[0].name
            if profile.plugin_args.get(name) != profiles[0].plugin_args.get(name):
                problems.add(
                    f"profiles[{i}].pluginConfig",
                    f"the args of the queue sort plugin {name!r} must be the same in every profile",
                )


# ---- extenders ----------------------------------------------------------------------------------


def _url_problem(url: str) -> str | None:
    parsed = urllib.parse.urlsplit(url)
    if parsed.username is not None or parsed.password is not None:
        # Never echo it: the reason names the problem, not the secret.
        return (
            "must not carry user info (user:password@): the URL names the extender in conditions, "
            "Events, metrics and logs; authenticate with tlsConfig.certFile and tlsConfig.keyFile"
        )
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        return "must be an http:// or https:// URL with a host"
    if parsed.query or parsed.fragment:
        return "must not have a query or fragment (the verb is appended to it)"
    try:
        parsed.port  # noqa: B018 - raises on a port out of range
    except ValueError:
        return "has an invalid port"
    return None


def _extender(model: v1.ExtenderModel, path: str, problems: _Problems) -> ExtenderConfig:
    url_problem = _url_problem(model.url_prefix)
    if url_problem is not None:
        problems.add(f"{path}.urlPrefix", url_problem)
    filter_verb = model.filter_verb or ""
    prioritize_verb = model.prioritize_verb or ""
    if not filter_verb and not prioritize_verb:
        problems.add(path, "must set filterVerb or prioritizeVerb")
    weight = 1 if model.weight is None else model.weight
    if prioritize_verb and weight < 1:
        problems.add(f"{path}.weight", "must be a positive integer when prioritizeVerb is set")
    elif weight > MAX_WEIGHT:
        problems.add(f"{path}.weight", f"must be at most {MAX_WEIGHT}")
    timeout = 5.0 if model.http_timeout is None else model.http_timeout
    _check_duration(timeout, f"{path}.httpTimeout", MAX_CALL_TIMEOUT, problems)
    tls = None
    if model.tls_config is not None:
        tls = _tls(model.tls_config, f"{path}.tlsConfig", problems)
        if url_problem is None and model.url_prefix.startswith("http://"):
            problems.add(f"{path}.tlsConfig", "needs an https:// urlPrefix")
    return ExtenderConfig(
        url_prefix=model.url_prefix,
        filter_verb=filter_verb,
        prioritize_verb=prioritize_verb,
        weight=weight,
        http_timeout_seconds=timeout,
        ignorable=bool(model.ignorable),
        tls=tls,
    )


def _tls(model: v1.ExtenderTLSModel, path: str, problems: _Problems) -> ExtenderTLS:
    ca_data: bytes | None = None
    if model.ca_data:
        if model.ca_data.lstrip().startswith("-----BEGIN"):
            ca_data = model.ca_data.encode()
        else:
            try:
                ca_data = base64.b64decode(model.ca_data, validate=True)
            except (binascii.Error, ValueError):
                problems.add(f"{path}.caData", "must be PEM text or base64 of PEM")
    if model.ca_file and model.ca_data:
        problems.add(f"{path}.caData", "set caFile or caData, not both")
    if bool(model.cert_file) != bool(model.key_file):
        missing = "keyFile" if model.cert_file else "certFile"
        problems.add(f"{path}.{missing}", "a client certificate needs both certFile and keyFile")
    return ExtenderTLS(
        ca_file=model.ca_file or None,
        ca_data=ca_data,
        cert_file=model.cert_file or None,
        key_file=model.key_file or None,
        server_name=model.server_name or None,
        insecure=bool(model.insecure),
    )


def _check_unique_extenders(models: Sequence[v1.ExtenderModel], problems: _Problems) -> None:
    seen: dict[str, int] = {}
    for i, model in enumerate(models):
        if model.url_prefix in seen:
            problems.add(
                f"extenders[{i}].urlPrefix",
                f"duplicate urlPrefix {redact_url(model.url_prefix)!r} "
                f"(also extenders[{seen[model.url_prefix]}])",
            )
        seen.setdefault(model.url_prefix, i)


# ---- process settings ---------------------------------------------------------------------------


def _leader_election(model: v1.LeaderElectionModel | None, problems: _Problems) -> LeaderElection:
    base = LeaderElection()
    if model is None:
        return base
    value = LeaderElection(
        leader_elect=base.leader_elect if model.leader_elect is None else model.leader_elect,
        lease_duration=base.lease_duration if model.lease_duration is None else model.lease_duration,
        renew_deadline=base.renew_deadline if model.renew_deadline is None else model.renew_deadline,
        retry_period=base.retry_period if model.retry_period is None else model.retry_period,
        resource_name=base.resource_name if model.resource_name is None else model.resource_name,
        resource_namespace=(
            base.resource_namespace if model.resource_namespace is None else model.resource_namespace
        ),
        shard_mode=base.shard_mode if model.shard_mode is None else model.shard_mode,
        shard_identity=base.shard_identity if model.shard_identity is None else model.shard_identity,
    )
    if value.shard_mode not in SHARD_MODES:
        problems.add("leaderElection.shardMode", f"must be one of {', '.join(SHARD_MODES)}")
    for name, seconds in (("leaseDuration", value.lease_duration), ("renewDeadline", value.renew_deadline),
                          ("retryPeriod", value.retry_period)):
        _check_duration(seconds, f"leaderElection.{name}", MAX_PERIOD, problems)
    if value.leader_elect or value.shard_mode == "lease":
        # client-go's leaderelection.NewLeaderElector refuses these, with these words.
        if not value.lease_duration > value.renew_deadline:
            problems.add("leaderElection.leaseDuration", "leaseDuration must be greater than renewDeadline")
        elif not value.renew_deadline > JITTER_FACTOR * value.retry_period:
            problems.add(
                "leaderElection.renewDeadline", "renewDeadline must be greater than retryPeriod*JitterFactor"
            )
    names = (("resourceName", value.resource_name), ("resourceNamespace", value.resource_namespace))
    for name, text in names:
        if not text.strip():
            problems.add(f"leaderElection.{name}", "must not be empty")
    return value


def _client_connection(model: v1.ClientConnectionModel | None, problems: _Problems) -> ClientConnection:
    base = ClientConnection()
    if model is None:
        return base
    qps = base.qps if model.qps is None else float(model.qps)
    burst = base.burst if model.burst is None else model.burst
    if not math.isfinite(qps):
        problems.add("clientConnection.qps", "must be a finite number")
    elif qps < 0:
        problems.add("clientConnection.qps", "must not be negative (0 disables the limit)")
    elif qps > MAX_QPS:
        problems.add("clientConnection.qps", f"must be at most {MAX_QPS:g}")
    if burst < 0:
        problems.add("clientConnection.burst", "must not be negative")
    elif burst > MAX_BURST:
        problems.add("clientConnection.burst", f"must be at most {MAX_BURST}")
    return ClientConnection(kubeconfig=model.kubeconfig or "", qps=qps, burst=burst)


def _estimator(model: v1.EstimatorModel | None, problems: _Problems) -> EstimatorSettings:
    base = EstimatorSettings()
    if model is None:
        return base

    def pick(value: Any, default: Any) -> Any:
        return default if value is None else value

    value = EstimatorSettings(
        enabled=pick(model.enabled, base.enabled),
        disable_in_pull_mode=pick(model.disable_in_pull_mode, base.disable_in_pull_mode),
        timeout_seconds=pick(model.timeout, base.timeout_seconds),
        port=pick(model.port, base.port),
        service_prefix=pick(model.service_prefix, base.service_prefix),
        service_namespace=pick(model.service_namespace, base.service_namespace),
        ca_file=pick(model.ca_file, base.ca_file),
        cert_file=pick(model.cert_file, base.cert_file),
        key_file=pick(model.key_file, base.key_file),
        insecure_skip_verify=pick(model.insecure_skip_verify, base.insecure_skip_verify),
    )
    _check_duration(value.timeout_seconds, "estimator.timeout", MAX_CALL_TIMEOUT, problems)
    if not 1 <= value.port <= MAX_PORT:
        problems.add("estimator.port", f"must be between 1 and {MAX_PORT}")
    if bool(value.cert_file) != bool(value.key_file):
        missing = "keyFile" if value.cert_file else "certFile"
        problems.add(f"estimator.{missing}", "a client certificate needs both certFile and keyFile")
    return value


# ---- feature gates and the assumption TTL -------------------------------------------------------


def _feature_gates(gates: Mapping[str, bool] | None, problems: _Problems) -> Mapping[str, bool]:
    """The gates the file names, each one of Karmada's (``--feature-gates``' rule and words)."""
    if not gates:
        return MappingProxyType({})
    for name in gates:
        if name not in KARMADA_FEATURE_GATES and name not in ALL_STAGES:
            problems.add(f"featureGates.{name}", f"unrecognized feature gate: {name}")
    return MappingProxyType(dict(sorted(expand_feature_gates(gates).items())))


def _assumption_ttl(seconds: float | None, problems: _Problems) -> float:
    if seconds is None:
        return DEFAULT_ASSUMPTION_TTL
    _check_duration(seconds, "assumptionTTL", MAX_PERIOD, problems)
    return seconds


def _move_budget(model: v1.MoveBudgetModel | None, problems: _Problems) -> MoveBudget | None:
    """``moveBudget``: each count a non-negative integer or a percentage, not both 0; an unset
    count is 0 and an unset ``stepTimeout`` 5m."""
    if model is None:
        return None
    values: dict[str, Any] = {}
    for attribute, name in (("max_unavailable", "maxUnavailable"), ("max_surge", "maxSurge")):
        raw = getattr(model, attribute)
        if raw is None:
            continue
        try:
            values[attribute] = IntOrPercent.parse(raw, name)
        except ValueError as exc:
            problems.add(f"moveBudget.{name}", str(exc).split(": ", 1)[1])
            return None
    if model.step_timeout is not None:
        before = len(problems.items)
        _check_duration(model.step_timeout, "moveBudget.stepTimeout", MAX_PERIOD, problems)
        if len(problems.items) > before:
            return None
        values["step_timeout"] = model.step_timeout
    try:
        return MoveBudget(**values)
    except ValueError as exc:
        path, _, reason = str(exc).partition(": ")
        if path == "maxUnavailable, maxSurge":
            path = "moveBudget"
            reason = "maxUnavailable and maxSurge may not both be 0 (nothing could ever move)"
        problems.add(path, reason)
        return None
