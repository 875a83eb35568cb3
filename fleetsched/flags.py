"""Flag values shared by every long-running command (scheduler, controller, estimator, webhook).

Plain parsing only: no I/O, no imports beyond the standard library, so any command can use it.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

__all__ = [
    "ALL_STAGES",
    "KARMADA_FEATURE_GATES",
    "KARMADA_FEATURE_GATE_STAGES",
    "expand_feature_gates",
    "explicit_flags",
    "gate_enabled",
    "merge_feature_gates",
    "parse_bind_address",
    "parse_feature_gates",
    "record_explicit_flags",
]

# Karmada's feature gates (pkg/features/features.go) by their flag names: default and pre-release
# stage. As in Karmada, every command accepts all of them; each acts on the ones that concern it.
ALPHA, BETA = "Alpha", "Beta"
# Each gate's name, declared once; its default and stage are in KARMADA_FEATURE_GATE_STAGES.
CONTEXTUAL_LOGGING = "ContextualLogging"
CONTROLLER_PRIORITY_QUEUE = "ControllerPriorityQueue"
CUSTOMIZED_CLUSTER_RESOURCE_MODELING = "CustomizedClusterResourceModeling"
FAILOVER = "Failover"
FEDERATED_QUOTA_ENFORCEMENT = "FederatedQuotaEnforcement"
GRACEFUL_EVICTION = "GracefulEviction"
LOGGING_ALPHA_OPTIONS = "LoggingAlphaOptions"
LOGGING_BETA_OPTIONS = "LoggingBetaOptions"
MULTI_CLUSTER_SERVICE = "MultiClusterService"
MULTIPLE_POD_TEMPLATES_SCHEDULING = "MultiplePodTemplatesScheduling"
PRIORITY_BASED_SCHEDULING = "PriorityBasedScheduling"
PROPAGATE_DEPS = "PropagateDeps"
PROPAGATION_POLICY_PREEMPTION = "PropagationPolicyPreemption"
RESOURCE_QUOTA_ESTIMATE = "ResourceQuotaEstimate"
SCHEDULING_OVERCOMMIT_PROTECTION = "SchedulingOvercommitProtection"
STATEFUL_FAILOVER_INJECTION = "StatefulFailoverInjection"
WORKLOAD_AFFINITY = "WorkloadAffinity"
KARMADA_FEATURE_GATE_STAGES: Mapping[str, tuple[bool, str]] = MappingProxyType(
    {
        CONTEXTUAL_LOGGING: (True, BETA),
        CONTROLLER_PRIORITY_QUEUE: (True, BETA),
        CUSTOMIZED_CLUSTER_RESOURCE_MODELING: (True, BETA),
        FAILOVER: (False, BETA),
        FEDERATED_QUOTA_ENFORCEMENT: (False, ALPHA),
        GRACEFUL_EVICTION: (True, BETA),
        LOGGING_ALPHA_OPTIONS: (False, ALPHA),
        LOGGING_BETA_OPTIONS: (True, BETA),
        MULTI_CLUSTER_SERVICE: (False, ALPHA),
        MULTIPLE_POD_TEMPLATES_SCHEDULING: (False, ALPHA),
        PRIORITY_BASED_SCHEDULING: (True, BETA),
        PROPAGATE_DEPS: (True, BETA),
        PROPAGATION_POLICY_PREEMPTION: (False, ALPHA),
        RESOURCE_QUOTA_ESTIMATE: (False, ALPHA),
        SCHEDULING_OVERCOMMIT_PROTECTION: (False, ALPHA),
        STATEFUL_FAILOVER_INJECTION: (False, ALPHA),
        WORKLOAD_AFFINITY: (False, ALPHA),
    }
)
KARMADA_FEATURE_GATES: Mapping[str, bool] = MappingProxyType(
    {name: default for name, (default, _) in KARMADA_FEATURE_GATE_STAGES.items()}
)
# component-base's special gates: ``AllAlpha=v`` / ``AllBeta=v`` set every gate of that stage the
# same flag does not name to ``v``.
ALL_STAGES: Mapping[str, str] = MappingProxyType({"AllAlpha": ALPHA, "AllBeta": BETA})


def gate_enabled(gates: Mapping[str, bool], name: str) -> bool:
    """Whether gate ``name`` is on in ``gates`` (a ``--feature-gates`` value), its Karmada default
    when ``gates`` does not name it."""
    return bool(gates.get(name, KARMADA_FEATURE_GATES[name]))


def expand_feature_gates(gates: Mapping[str, bool]) -> dict[str, bool]:
    """``gates`` with ``AllAlpha``/``AllBeta`` expanded as component-base does: each sets every gate
    of its stage that ``gates`` does not name itself (a named gate wins, whatever the order)."""
    out = {name: value for name, value in gates.items() if name not in ALL_STAGES}
    for special, stage in ALL_STAGES.items():
        if special not in gates:
            continue
        for name, (_, gate_stage) in KARMADA_FEATURE_GATE_STAGES.items():
            if gate_stage == stage and name not in out:
                out[name] = gates[special]
    return out


def parse_bind_address(text: str) -> tuple[str, int] | None:
    """A Kubernetes-style bind address: ``:8080`` -> ("0.0.0.0", 8080); ``0`` or empty -> disabled."""
    if text in ("0", ""):
        return None
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"bind address {text!r} is not HOST:PORT, :PORT or 0")
    return (host.strip("[]") or "0.0.0.0", int(port))


def parse_feature_gates(text: str) -> dict[str, bool]:
    """``A=true,B=false`` as Kubernetes' ``--feature-gates`` reads it (Go's ParseBool values), for
    Karmada's gates and ``AllAlpha``/``AllBeta`` (expanded: ``expand_feature_gates``); the errors are
    Kubernetes' messages (callers prefix the flag's name)."""
    out: dict[str, bool] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        name, sep, raw = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise ValueError(f"missing bool value for {item}")
        value = raw.strip().lower()
        if value not in ("true", "false", "1", "0", "t", "f"):
            raise ValueError(
                f"invalid value of {name}={raw.strip()}, err: strconv.ParseBool: parsing {raw.strip()!r}: "
                "invalid syntax"
            )
        if name not in KARMADA_FEATURE_GATES and name not in ALL_STAGES:
            raise ValueError(f"unrecognized feature gate: {name}")
        out[name] = value in ("true", "1", "t")
    return expand_feature_gates(out)


def merge_feature_gates(
    flag: Mapping[str, bool], file: Mapping[str, bool], *, source: str
) -> dict[str, bool]:
    """``--feature-gates`` beside a configuration file's ``featureGates`` (``source``): the union of
    both; a gate both name with different values is a ValueError, one line naming both."""
    for name in sorted(flag.keys() & file.keys()):
        if flag[name] != file[name]:
            raise ValueError(
                f"--feature-gates={name}={str(flag[name]).lower()} contradicts {source} "
                f"(featureGates.{name}: {str(file[name]).lower()}); set it in one place"
            )
    return {**file, **flag}


_EXPLICIT = "_explicit_flags"


def _recording(base: type[argparse.Action]) -> type[argparse.Action]:
    def __call__(
        self: argparse.Action,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        base.__call__(self, parser, namespace, values, option_string)
        explicit = set(getattr(namespace, _EXPLICIT, ()))
        explicit.add(self.dest)
        setattr(namespace, _EXPLICIT, frozenset(explicit))

    return type(f"Recording{base.__name__}", (base,), {"__call__": __call__})


def record_explicit_flags(parser: argparse.ArgumentParser) -> None:
    """Make ``parser`` remember which flags the command line gave (argparse calls an action only for
    a flag that is present; defaults are set without it), for ``explicit_flags``. A flag given with
    its default value still counts as given: ``--workers 32`` says something a file may contradict."""
    for action in parser._actions:
        if action.option_strings and not isinstance(action, argparse._HelpAction | argparse._VersionAction):
            action.__class__ = _recording(type(action))


def explicit_flags(args: argparse.Namespace) -> frozenset[str]:
    """The ``dest`` of every flag the command line gave (needs ``record_explicit_flags``)."""
    return frozenset(getattr(args, _EXPLICIT, ()))


def plugins_contradiction(
    plugins_flag: str, wanted: Mapping[Any, Any], profiles: Any, source: str
) -> str | None:
    """``--plugins`` given beside a configuration file: the message naming the first profile that
    enables other plugins than the flag would (the plugins are set in one place), or None."""
    for i, profile in enumerate(profiles):
        if dict(profile.plugins) != dict(wanted):
            return (
                f"--plugins={plugins_flag} contradicts {source}: profiles[{i}] "
                f"({profile.scheduler_name}) enables other plugins; set the plugins in one place"
            )
    return None
