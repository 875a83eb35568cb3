"""A ``SchedulerConfiguration`` written back as the file that means it (``fleetsched config default``).

Every setting is written out, at its value, so the printed default is a complete, editable record
of today's behaviour. Plugin lists are written so that loading gives the same lists: the defaults
that are kept, in place, with what else is enabled after them; ``disabled: [{name: "*"}]`` where
the order or the set cannot be said that way.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

import yaml

from fleetsched.scheduler.config.configuration import API_VERSION, KIND, SchedulerConfiguration
from fleetsched.scheduler.config.durations import format_duration
from fleetsched.scheduler.config.resolve import ALL
from fleetsched.scheduler.framework.defaults import default_plugins
from fleetsched.scheduler.framework.profile import ExtenderConfig, ExtensionPoint, PluginEntry, Profile
from fleetsched.scheduler.stepping import IntOrPercent

__all__ = ["configuration_to_dict", "configuration_to_yaml"]


def _entry(entry: PluginEntry, point: ExtensionPoint) -> dict[str, Any]:
    if point is ExtensionPoint.SCORE:
        return {"name": entry.name, "weight": entry.weight}
    return {"name": entry.name}


def _plugin_set(
    point: ExtensionPoint, enabled: tuple[PluginEntry, ...], defaults: tuple[PluginEntry, ...]
) -> dict[str, Any] | None:
    enabled_names = [e.name for e in enabled]
    kept = [d.name for d in defaults if d.name in enabled_names]
    out: dict[str, Any] = {}
    if enabled_names[: len(kept)] == kept:
        removed = [d.name for d in defaults if d.name not in enabled_names]
        if removed:
            out["disabled"] = [{"name": name} for name in removed]
    else:
        out["disabled"] = [{"name": ALL}]
    if enabled:
        out["enabled"] = [_entry(e, point) for e in enabled]
    return out or None


def _profile(profile: Profile, defaults: Mapping[ExtensionPoint, tuple[PluginEntry, ...]]) -> dict[str, Any]:
    plugins: dict[str, Any] = {}
    for point in ExtensionPoint:
        written = _plugin_set(point, profile.enabled(point), defaults.get(point, ()))
        if written is not None:
            plugins[point.value] = written
    out: dict[str, Any] = {"schedulerName": profile.scheduler_name, "plugins": plugins}
    if profile.plugin_args:
        out["pluginConfig"] = [
            {"name": name, "args": dict(args)} for name, args in profile.plugin_args.items()
        ]
    if profile.ignorable_plugins:
        out["ignorablePlugins"] = sorted(profile.ignorable_plugins)
    if profile.plugin_timeout_seconds is not None:
        out["pluginTimeout"] = format_duration(profile.plugin_timeout_seconds)
    return out


def _extender(extender: ExtenderConfig) -> dict[str, Any]:
    out: dict[str, Any] = {"urlPrefix": extender.url_prefix}
    if extender.filter_verb:
        out["filterVerb"] = extender.filter_verb
    if extender.prioritize_verb:
        out["prioritizeVerb"] = extender.prioritize_verb
    out["weight"] = extender.weight
    out["httpTimeout"] = format_duration(extender.http_timeout_seconds)
    out["ignorable"] = extender.ignorable
    tls = extender.tls
    if tls is not None:
        written: dict[str, Any] = {
            key: value
            for key, value in (
                ("caFile", tls.ca_file),
                ("certFile", tls.cert_file),
                ("keyFile", tls.key_file),
                ("serverName", tls.server_name),
            )
            if value
        }
        if tls.ca_data:
            written["caData"] = base64.b64encode(tls.ca_data).decode()
        if tls.insecure:
            written["insecure"] = True
        out["tlsConfig"] = written
    return out


def configuration_to_dict(
    config: SchedulerConfiguration, *, workload_affinity: bool = False
) -> dict[str, Any]:
    """The file form (camelCase keys, durations as Go text) of ``config``."""
    defaults = default_plugins(workload_affinity=workload_affinity)
    extenders = config.profiles[0].extenders if config.profiles else ()
    le, client, est = config.leader_election, config.client_connection, config.estimator
    out: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "parallelism": config.workers,
        "enableEmptyWorkloadPropagation": config.enable_empty_workload_propagation,
        "featureGates": dict(sorted(config.feature_gates.items())),
        "assumptionTTL": format_duration(config.assumption_ttl),
        "leaderElection": {
            "leaderElect": le.leader_elect,
            "leaseDuration": format_duration(le.lease_duration),
            "renewDeadline": format_duration(le.renew_deadline),
            "retryPeriod": format_duration(le.retry_period),
            "resourceName": le.resource_name,
            "resourceNamespace": le.resource_namespace,
            "shardMode": le.shard_mode,
            "shardIdentity": le.shard_identity,
        },
        "clientConnection": {
            "kubeconfig": client.kubeconfig,
            "qps": int(client.qps) if client.qps.is_integer() else client.qps,
            "burst": client.burst,
        },
        "estimator": {
            "enabled": est.enabled,
            "disableInPullMode": est.disable_in_pull_mode,
            "timeout": format_duration(est.timeout_seconds),
            "port": est.port,
            "servicePrefix": est.service_prefix,
            "serviceNamespace": est.service_namespace,
            "caFile": est.ca_file,
            "certFile": est.cert_file,
            "keyFile": est.key_file,
            "insecureSkipVerify": est.insecure_skip_verify,
        },
        "profiles": [_profile(p, defaults) for p in config.profiles],
    }
    if extenders:
        out["extenders"] = [_extender(e) for e in extenders]
    budget = config.move_budget
    if budget is not None:  # absent: no budget (the default)
        out["moveBudget"] = {
            "maxUnavailable": _int_or_percent(budget.max_unavailable),
            "maxSurge": _int_or_percent(budget.max_surge),
            "stepTimeout": format_duration(budget.step_timeout),
        }
    return out


def _int_or_percent(value: IntOrPercent) -> int | str:
    return str(value) if value.percent else value.value


def configuration_to_yaml(config: SchedulerConfiguration, *, workload_affinity: bool = False) -> str:
    written = configuration_to_dict(config, workload_affinity=workload_affinity)
    return yaml.safe_dump(written, sort_keys=False, default_flow_style=False)
