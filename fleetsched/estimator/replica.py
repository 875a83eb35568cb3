"""GetUnschedulableReplicas: pods of a Deployment's newest ReplicaSet that have stayed unschedulable
longer than a threshold (Karmada's GetUnschedulableReplicas).

Pure over plain Kubernetes objects (JSON form): the caller supplies a :class:`WorkloadSource` that finds
the workload, the namespace's ReplicaSets and its non-terminal pods.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from fractions import Fraction
from typing import Any, Protocol

from fleetsched.api.resources import as_quantity
from fleetsched.estimator.model import EstimatorError, ObjectReference

__all__ = [
    "KNOWN_KINDS",
    "WorkloadSource",
    "find_new_replica_set",
    "may_be_unschedulable",
    "not_found_message",
    "resolve_kind",
    "selector_matches",
    "slim_pod",
    "unschedulable_pods_of",
    "unschedulable_replicas",
]

_TEMPLATE_HASH = "pod-template-hash"

# (group, kind) -> (resource, versions served, namespaced) for the built-in kinds discovery knows.
KNOWN_KINDS: dict[tuple[str, str], tuple[str, tuple[str, ...], bool]] = {
    ("apps", "Deployment"): ("deployments", ("v1",), True),
    ("apps", "ReplicaSet"): ("replicasets", ("v1",), True),
    ("apps", "StatefulSet"): ("statefulsets", ("v1",), True),
    ("apps", "DaemonSet"): ("daemonsets", ("v1",), True),
    ("apps", "ControllerRevision"): ("controllerrevisions", ("v1",), True),
    ("batch", "Job"): ("jobs", ("v1",), True),
    ("batch", "CronJob"): ("cronjobs", ("v1",), True),
    ("", "Pod"): ("pods", ("v1",), True),
    ("", "ReplicationController"): ("replicationcontrollers", ("v1",), True),
    ("", "Service"): ("services", ("v1",), True),
    ("", "ConfigMap"): ("configmaps", ("v1",), True),
    ("", "Secret"): ("secrets", ("v1",), True),
    ("", "ResourceQuota"): ("resourcequotas", ("v1",), True),
    ("", "Namespace"): ("namespaces", ("v1",), False),
    ("", "Node"): ("nodes", ("v1",), False),
    ("", "PersistentVolumeClaim"): ("persistentvolumeclaims", ("v1",), True),
    ("autoscaling", "HorizontalPodAutoscaler"): ("horizontalpodautoscalers", ("v1", "v2"), True),
    ("policy", "PodDisruptionBudget"): ("poddisruptionbudgets", ("v1",), True),
}


def split_api_version(api_version: str) -> tuple[str, str]:
    group, _, version = api_version.rpartition("/")
    return group, version


def resolve_kind(api_version: str, kind: str) -> tuple[str, bool]:
    """``(resource.group, namespaced)`` for a served kind, else Karmada's REST-mapping error."""
    group, version = split_api_version(api_version)
    known = KNOWN_KINDS.get((group, kind))
    if known is None or version not in known[1]:
        raise EstimatorError(f'no matches for kind "{kind}" in version "{api_version}"')
    resource, _, namespaced = known
    return (f"{resource}.{group}" if group else resource), namespaced


def not_found_message(api_version: str, kind: str, namespace: str, name: str) -> str:
    """Deployments come from the informer cache (key ``namespace/name``); other kinds from a GET (name)."""
    resource, _ = resolve_kind(api_version, kind)
    if kind == "Deployment" and split_api_version(api_version)[0] == "apps":
        key = f"{namespace}/{name}" if namespace else name
        return f'{resource} "{key}" not found'
    return f'{resource} "{name}" not found'


class WorkloadSource(Protocol):
    def get(self, ref: ObjectReference) -> Mapping[str, Any]:
        """The workload object; raises EstimatorError with Karmada's text when unknown or absent."""
        ...

    def replica_sets(self, namespace: str) -> Iterable[Mapping[str, Any]]:
        ...

    def pods(self, namespace: str) -> Iterable[Mapping[str, Any]]:
        """Non-terminal pods of the namespace, assigned or not."""
        ...


def slim_pod(obj: Mapping[str, Any]) -> dict[str, Any]:
    """Only what GetUnschedulableReplicas reads, so 50,000 pods stay small in memory."""
    meta = obj.get("metadata") or {}
    status = obj.get("status") or {}
    return {
        "metadata": {"namespace": meta.get("namespace"), "name": meta.get("name"),
                     "labels": meta.get("labels") or {},
                     "ownerReferences": meta.get("ownerReferences") or []},
        "status": {"phase": status.get("phase"),
                   "conditions": [c for c in status.get("conditions") or ()
                                  if c.get("type") == "PodScheduled"]},
    }


def may_be_unschedulable(obj: Mapping[str, Any]) -> bool:
    """Whether a pod can ever count for GetUnschedulableReplicas: non-terminal and its PodScheduled
    condition False for reason Unschedulable. Only such pods need to be remembered."""
    status = obj.get("status") or {}
    if status.get("phase") in ("Succeeded", "Failed"):
        return False
    for condition in status.get("conditions") or ():
        if condition.get("type") == "PodScheduled":
            return condition.get("status") == "False" and condition.get("reason") == "Unschedulable"
    return False


def selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """A metav1.LabelSelector; an empty selector matches everything, a missing one nothing."""
    if selector is None:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value or key not in labels:
            return False
    for expression in selector.get("matchExpressions") or ():
        key = expression.get("key", "")
        op = expression.get("operator", "")
        values = set(expression.get("values") or ())
        if op == "In" and not (key in labels and labels[key] in values):
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
        if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            return False
    return True


def _controller_uid(obj: Mapping[str, Any]) -> str | None:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller"):
            return str(ref.get("uid", ""))
    return None


_QUANTITY_KEYS = frozenset({"requests", "limits", "overhead", "capacity", "allocatable"})


def _normalize(value: Any, parent_key: str = "") -> Any:
    """Semantic-equality form: empty collections and nulls drop out, quantities compare by value."""
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            if parent_key in _QUANTITY_KEYS and isinstance(item, str | int | float):
                try:
                    out[key] = ("quantity", as_quantity(item).value_exact)
                    continue
                except ValueError:
                    pass
            normal = _normalize(item, str(key))
            if normal in (None, {}, [], ""):
                continue
            out[key] = normal
        return out
    if isinstance(value, list):
        return [_normalize(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return Fraction(int(value))
    return value


def _template_without_hash(template: Mapping[str, Any] | None) -> Any:
    template = dict(template or {})
    metadata = dict(template.get("metadata") or {})
    labels = dict(metadata.get("labels") or {})
    labels.pop(_TEMPLATE_HASH, None)
    metadata["labels"] = labels
    template["metadata"] = metadata
    return _normalize(template)


def _creation(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    stamp = _parse_time(meta.get("creationTimestamp"))
    return (stamp.isoformat() if stamp else "", str(meta.get("name", "")))


def find_new_replica_set(deployment: Mapping[str, Any],
                         replica_sets: Iterable[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The oldest ReplicaSet controlled by the Deployment whose template equals the Deployment's
    (ignoring the pod-template-hash label)."""
    spec = deployment.get("spec") or {}
    selector = spec.get("selector")
    uid = str((deployment.get("metadata") or {}).get("uid", ""))
    owned = [rs for rs in replica_sets
             if _controller_uid(rs) == uid
             and selector_matches(selector, (rs.get("metadata") or {}).get("labels") or {})]
    owned.sort(key=_creation)
    wanted = _template_without_hash(spec.get("template"))
    for rs in owned:
        if _template_without_hash((rs.get("spec") or {}).get("template")) == wanted:
            return rs
    return None


def _parse_time(text: Any) -> datetime | None:
    if not text:
        return None
    if isinstance(text, datetime):
        return text
    value = str(text)
    if value.endswith("Z"):
        value = value[:-1] + "+00:00"
    return datetime.fromisoformat(value)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# Go's zero time.Time (year 1), what a missing lastTransitionTime reads as, in ns since the epoch
_ZERO_TIME_NS = -62135596800 * 10**9


def _unix_ns(moment: datetime) -> int:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    delta = moment - _EPOCH
    return (delta.days * 86400 + delta.seconds) * 10**9 + delta.microseconds * 1000


def _is_unschedulable(pod: Mapping[str, Any], threshold_ns: int, now_ns: int) -> bool:
    for condition in (pod.get("status") or {}).get("conditions") or ():
        if condition.get("type") != "PodScheduled":
            continue
        if condition.get("status") != "False" or condition.get("reason") != "Unschedulable":
            return False
        since = _parse_time(condition.get("lastTransitionTime"))
        since_ns = _ZERO_TIME_NS if since is None else _unix_ns(since)
        # exact integer nanoseconds, as Go's time.Add(Duration).Before(now)
        return since_ns + threshold_ns < now_ns
    return False


def unschedulable_replicas(source: WorkloadSource, ref: ObjectReference, threshold_ns: int,
                           now: datetime) -> int:
    return unschedulable_pods_of(source, source.get(ref), ref, threshold_ns, now)


def unschedulable_pods_of(source: WorkloadSource, workload: Mapping[str, Any], ref: ObjectReference,
                          threshold_ns: int, now: datetime) -> int:
    """The count for a workload already fetched (Karmada's GetWorkloadUnschedulablePods step)."""
    kind = str(workload.get("kind") or ref.kind)
    if kind != "Deployment":
        raise EstimatorError(f"kind({kind}) of workload({ref.namespace}/{ref.name}) is not supported")
    namespace = str((workload.get("metadata") or {}).get("namespace") or ref.namespace)
    new_rs = find_new_replica_set(workload, source.replica_sets(namespace))
    if new_rs is None:
        return 0
    rs_uid = str((new_rs.get("metadata") or {}).get("uid", ""))
    selector = (workload.get("spec") or {}).get("selector")
    threshold = max(threshold_ns, 0)
    now_ns = _unix_ns(now)
    count = 0
    for pod in source.pods(namespace):
        labels = (pod.get("metadata") or {}).get("labels") or {}
        if _controller_uid(pod) != rs_uid or not selector_matches(selector, labels):
            continue
        phase = (pod.get("status") or {}).get("phase")
        if phase in ("Succeeded", "Failed"):
            continue
        if _is_unschedulable(pod, threshold, now_ns):
            count += 1
    return count
