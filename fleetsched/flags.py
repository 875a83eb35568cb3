"""Flag values shared by every long-running command (scheduler, controller, estimator, webhook).

Plain parsing only: no I/O, no imports beyond the standard library, so any command can use it.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

__all__ = ["KARMADA_FEATURE_GATES", "parse_bind_address", "parse_feature_gates"]

# Karmada's feature gates (pkg/features) by their flag names, with their defaults. As in Karmada,
# every command accepts all of them; each acts on the ones that concern it.
KARMADA_FEATURE_GATES: Mapping[str, bool] = MappingProxyType(
    {
        "ContextualLogging": True,
        "ControllerPriorityQueue": True,
        "CustomizedClusterResourceModeling": True,
        "Failover": False,
        "FederatedQuotaEnforcement": False,
        "GracefulEviction": True,
        "LoggingAlphaOptions": False,
        "LoggingBetaOptions": True,
        "MultiClusterService": False,
        "MultiplePodTemplatesScheduling": False,
        "PriorityBasedScheduling": True,
        "PropagateDeps": True,
        "PropagationPolicyPreemption": False,
        "ResourceQuotaEstimate": False,
        "ResourceQuotaEstimateWithAssumed": False,
        "SchedulingOvercommitProtection": False,
        "StatefulFailoverInjection": False,
        "WorkloadAffinity": False,
    }
)


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
    Karmada's gates; the errors are Kubernetes' messages (callers prefix the flag's name)."""
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
        if name not in KARMADA_FEATURE_GATES:
            raise ValueError(f"unrecognized feature gate: {name}")
        out[name] = value in ("true", "1", "t")
    return out
