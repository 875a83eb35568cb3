"""The extender wire protocol, version ``extender.fleetsched.io/v1alpha1``.

kube-scheduler's extender API (``k8s.io/kube-scheduler/extender/v1``: ``ExtenderArgs``,
``ExtenderFilterResult``, ``HostPriorityList``) with Node replaced by Cluster and camelCase field
names. The scheduler POSTs JSON to ``{urlPrefix}/{filterVerb}`` and ``{urlPrefix}/{prioritizeVerb}``;
``docs/extending.md`` shows full examples.

* Request (both verbs), ``ExtenderArgs``: ``apiVersion``, ``kind: ExtenderArgs``, ``binding`` (the
  ResourceBinding or ClusterResourceBinding, ``objects.binding_object``), ``clusters`` (the
  candidate Cluster objects, ``objects.cluster_object``; left out for an extender that caches
  clusters itself, kube's ``nodeCacheCapable``) and ``clusterNames`` (their names, in the same
  order).
* Filter response, ``ExtenderFilterResult``: ``clusterNames`` (kept; required, ``null`` = none),
  ``failedClusters`` and ``failedAndUnresolvableClusters`` (name -> reason), ``error``.
* Prioritize response, ``ClusterPriorityList``: ``priorities: [{cluster, score}]`` and ``error``;
  kube's bare list ``[{"host": ..., "score": ...}]`` is accepted as well. Scores are integers in
  0..10 (``MaxExtenderPriority``).

Responses are read strictly as to types (``"5"`` is not a score) but tolerate unknown fields, so an
extender may answer a newer minor version; ``apiVersion`` and ``kind`` may be omitted, and when given
must be this version. Pure: bytes in, values or ``ExtenderError`` out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, NamedTuple

import orjson
from pydantic import AliasChoices, BaseModel, ConfigDict, Field, TypeAdapter, ValidationError
from pydantic.alias_generators import to_camel

from fleetsched.extender.errors import ExtenderError, FaultKind
from fleetsched.scheduler.framework.interface import MAX_EXTENDER_PRIORITY
from fleetsched.scheduler.framework.interface import ExtenderFilterResult as FilterResult

__all__ = [
    "API_VERSION",
    "MIN_EXTENDER_PRIORITY",
    "VERB_FILTER",
    "VERB_PRIORITIZE",
    "ClusterPriority",
    "ClusterPriorityList",
    "ExtenderArgs",
    "ExtenderFilterResult",
    "decode_filter_result",
    "decode_priorities",
    "encode_args",
]

API_VERSION = "extender.fleetsched.io/v1alpha1"
ARGS_KIND = "ExtenderArgs"
FILTER_RESULT_KIND = "ExtenderFilterResult"
PRIORITY_LIST_KIND = "ClusterPriorityList"
# kube-scheduler's extender/v1 MinExtenderPriority (MaxExtenderPriority, 10, is the core's).
MIN_EXTENDER_PRIORITY = 0
# The verbs as the errors and the metrics name them (whatever the configured filterVerb/prioritizeVerb).
VERB_FILTER = "filter"
VERB_PRIORITIZE = "prioritize"


class _Wire(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, strict=True, frozen=True,
                              extra="allow")


class ExtenderArgs(_Wire):
    """What the scheduler sends to both verbs. ``binding`` and ``clusters`` are Karmada objects
    (``work.karmada.io/v1alpha2``, ``cluster.karmada.io/v1alpha1``)."""

    model_config = ConfigDict(extra="forbid")

    api_version: Literal["extender.fleetsched.io/v1alpha1"]
    kind: Literal["ExtenderArgs"]
    binding: dict[str, Any]
    clusters: list[dict[str, Any]] | None = None
    cluster_names: list[str]


class ExtenderFilterResult(_Wire):
    """A filter verb's answer. ``clusterNames`` must be present unless ``error`` is set."""

    api_version: str | None = None
    kind: str | None = None
    cluster_names: list[str] | None = None
    failed_clusters: dict[str, str] | None = None
    failed_and_unresolvable_clusters: dict[str, str] | None = None
    error: str = ""


class ClusterPriority(_Wire):
    """One cluster's score; ``host`` is accepted for ``cluster`` (kube's ``HostPriority``)."""

    cluster: str = Field(validation_alias=AliasChoices("cluster", "host"))
    score: int


class ClusterPriorityList(_Wire):
    """A prioritize verb's answer. ``priorities`` must be present unless ``error`` is set."""

    api_version: str | None = None
    kind: str | None = None
    priorities: list[ClusterPriority] | None = None
    error: str = ""


_BARE_PRIORITIES = TypeAdapter(list[ClusterPriority])


def encode_args(binding_json: bytes, cluster_jsons: Sequence[bytes] | None, names: Sequence[str]) -> bytes:
    """An ``ExtenderArgs`` body from already-rendered parts (``objects.binding_json``/``cluster_json``);
    ``cluster_jsons=None`` leaves ``clusters`` out (an extender that caches clusters)."""
    clusters = (b',"clusters":[' + b",".join(cluster_jsons) + b"]") if cluster_jsons is not None else b""
    return b"".join((
        b'{"apiVersion":"', API_VERSION.encode(), b'","kind":"', ARGS_KIND.encode(), b'","binding":',
        binding_json, clusters, b',"clusterNames":', orjson.dumps(list(names)), b"}",
    ))


def _first_problem(exc: ValidationError) -> str:
    err = exc.errors(include_url=False)[0]
    if err["type"] == "json_invalid":
        return f"response is not JSON: {err['msg']}"
    path = "".join(f"[{p}]" if isinstance(p, int) else (f".{p}" if i else str(p))
                   for i, p in enumerate(err["loc"]))
    return f"{path or 'response'}: {err['msg']}" + (f" (and {exc.error_count() - 1} more)"
                                                    if exc.error_count() > 1 else "")


def _check_version(extender: str, verb: str, api_version: str | None, kind: str | None, want: str) -> None:
    if api_version is not None and api_version != API_VERSION:
        raise ExtenderError(extender, verb, FaultKind.MALFORMED,
                            f"apiVersion: {api_version!r} is not {API_VERSION!r}")
    if kind is not None and kind != want:
        raise ExtenderError(extender, verb, FaultKind.MALFORMED, f"kind: {kind!r} is not {want!r}")


def _unknown(extender: str, verb: str, field: str, names: Sequence[str], candidates: frozenset[str]) -> None:
    strangers = [n for n in names if n not in candidates]
    if strangers:
        listed = ", ".join(repr(n) for n in strangers[:3]) + (", ..." if len(strangers) > 3 else "")
        raise ExtenderError(extender, verb, FaultKind.MALFORMED,
                            f"{field} names {listed}, which {'was' if len(strangers) == 1 else 'were'} "
                            "not a candidate")


class _FilterFields(NamedTuple):
    api_version: str | None
    kind: str | None
    error: str
    has_names: bool
    names: list[str] | None
    failed: dict[str, str] | None
    unresolvable: dict[str, str] | None


class _PriorityFields(NamedTuple):
    bare: bool
    api_version: str | None
    kind: str | None
    error: str
    has_priorities: bool
    items: list[tuple[str, int]] | None


# The fast paths read the answer with orjson and check every type by hand; anything they do not
# accept outright goes to the pydantic models, which decide and word the error. They accept a
# subset of what the models accept and read it the same way (a property test holds them together):
# validating a hundred items through models costs a few hundred microseconds a binding.
def _str_or_none(value: Any) -> bool:
    return value is None or type(value) is str


def _reasons(value: Any) -> bool:
    return value is None or (type(value) is dict and all(type(v) is str for v in value.values()))


def _fast_filter(body: bytes) -> _FilterFields | None:
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if type(data) is not dict:
        return None
    api_version, kind, error = data.get("apiVersion"), data.get("kind"), data.get("error", "")
    names = data.get("clusterNames")
    failed, unresolvable = data.get("failedClusters"), data.get("failedAndUnresolvableClusters")
    if not (_str_or_none(api_version) and _str_or_none(kind) and type(error) is str and _reasons(failed)
            and _reasons(unresolvable)):
        return None
    if names is not None and (type(names) is not list or any(type(n) is not str for n in names)):
        return None
    return _FilterFields(api_version, kind, error, "clusterNames" in data, names, failed, unresolvable)


def _model_filter(body: bytes, extender: str, verb: str) -> _FilterFields:
    try:
        r = ExtenderFilterResult.model_validate_json(body)
    except ValidationError as exc:
        raise ExtenderError(extender, verb, FaultKind.MALFORMED, _first_problem(exc)) from None
    return _FilterFields(r.api_version, r.kind, r.error, "cluster_names" in r.model_fields_set,
                         r.cluster_names, r.failed_clusters, r.failed_and_unresolvable_clusters)


def _fast_items(items: Any) -> list[tuple[str, int]] | None:
    if type(items) is not list:
        return None
    out = []
    for item in items:
        if type(item) is not dict:
            return None
        name = item["cluster"] if "cluster" in item else item.get("host")
        score = item.get("score")
        if type(name) is not str or type(score) is not int:
            return None
        out.append((name, score))
    return out


def _fast_priorities(body: bytes) -> _PriorityFields | None:
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if type(data) is list:
        items = _fast_items(data)
        return None if items is None else _PriorityFields(True, None, None, "", True, items)
    if type(data) is not dict:
        return None
    api_version, kind, error = data.get("apiVersion"), data.get("kind"), data.get("error", "")
    if not (_str_or_none(api_version) and _str_or_none(kind) and type(error) is str):
        return None
    raw = data.get("priorities")
    items = None if raw is None else _fast_items(raw)
    if raw is not None and items is None:
        return None
    return _PriorityFields(False, api_version, kind, error, "priorities" in data, items)


def _model_priorities(body: bytes, extender: str, verb: str) -> _PriorityFields:
    try:
        if body.lstrip()[:1] == b"[":
            bare = _BARE_PRIORITIES.validate_json(body)
            return _PriorityFields(True, None, None, "", True, [(i.cluster, i.score) for i in bare])
        r = ClusterPriorityList.model_validate_json(body)
    except ValidationError as exc:
        raise ExtenderError(extender, verb, FaultKind.MALFORMED, _first_problem(exc)) from None
    items = None if r.priorities is None else [(i.cluster, i.score) for i in r.priorities]
    return _PriorityFields(False, r.api_version, r.kind, r.error, "priorities" in r.model_fields_set, items)


def decode_filter_result(
    body: bytes, candidates: Sequence[str], *, extender: str, verb: str = VERB_FILTER
) -> FilterResult:
    """Read a filter answer for ``candidates``; kept names come back in the candidates' order."""
    result = _fast_filter(body) or _model_filter(body, extender, verb)
    _check_version(extender, verb, result.api_version, result.kind, FILTER_RESULT_KIND)
    if result.error:
        raise ExtenderError(extender, verb, FaultKind.ERRORING, f"extender error: {result.error}")
    if not result.has_names:
        raise ExtenderError(extender, verb, FaultKind.MALFORMED, "clusterNames: Field required")
    known = frozenset(candidates)
    kept = result.names or []
    failed = result.failed or {}
    unresolvable = result.unresolvable or {}
    _unknown(extender, verb, "clusterNames", kept, known)
    _unknown(extender, verb, "failedClusters", list(failed), known)
    _unknown(extender, verb, "failedAndUnresolvableClusters", list(unresolvable), known)
    kept_set = set(kept)
    both = [n for n in candidates if n in kept_set and (n in failed or n in unresolvable)]
    if both:
        raise ExtenderError(extender, verb, FaultKind.MALFORMED,
                            f"cluster {both[0]!r} is both kept and failed")
    return FilterResult(tuple(n for n in candidates if n in kept_set), failed, unresolvable)


def decode_priorities(
    body: bytes, candidates: Sequence[str], *, extender: str, verb: str = VERB_PRIORITIZE
) -> dict[str, int]:
    """Read a prioritize answer for ``candidates``: raw scores by cluster name."""
    result = _fast_priorities(body) or _model_priorities(body, extender, verb)
    if not result.bare:
        _check_version(extender, verb, result.api_version, result.kind, PRIORITY_LIST_KIND)
        if result.error:
            raise ExtenderError(extender, verb, FaultKind.ERRORING, f"extender error: {result.error}")
        if not result.has_priorities:
            raise ExtenderError(extender, verb, FaultKind.MALFORMED, "priorities: Field required")
    known = frozenset(candidates)
    scores: dict[str, int] = {}
    for cluster, score in result.items or []:
        if cluster not in known:
            _unknown(extender, verb, "priorities", [cluster], known)
        if cluster in scores:
            raise ExtenderError(extender, verb, FaultKind.MALFORMED,
                                f"priorities: cluster {cluster!r} is scored twice")
        if not MIN_EXTENDER_PRIORITY <= score <= MAX_EXTENDER_PRIORITY:
            raise ExtenderError(
                extender, verb, FaultKind.MALFORMED,
                f"priorities: score {score} for cluster {cluster!r} is outside "
                f"{MIN_EXTENDER_PRIORITY}..{MAX_EXTENDER_PRIORITY}")
        scores[cluster] = score
    return scores
