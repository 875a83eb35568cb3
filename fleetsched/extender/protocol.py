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
from typing import Any, Literal

import orjson
from pydantic import AliasChoices, BaseModel, ConfigDict, Field, TypeAdapter, ValidationError
from pydantic.alias_generators import to_camel

from fleetsched.extender.errors import ExtenderError, FaultKind
from fleetsched.extender.run import MAX_EXTENDER_PRIORITY, MIN_EXTENDER_PRIORITY, FilterResult

__all__ = [
    "API_VERSION",
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


def decode_filter_result(
    body: bytes, candidates: Sequence[str], *, extender: str, verb: str = "filter"
) -> FilterResult:
    """Read a filter answer for ``candidates``; kept names come back in the candidates' order."""
    try:
        result = ExtenderFilterResult.model_validate_json(body)
    except ValidationError as exc:
        raise ExtenderError(extender, verb, FaultKind.MALFORMED, _first_problem(exc)) from None
    _check_version(extender, verb, result.api_version, result.kind, FILTER_RESULT_KIND)
    if result.error:
        raise ExtenderError(extender, verb, FaultKind.ERRORING, f"extender error: {result.error}")
    if "cluster_names" not in result.model_fields_set:
        raise ExtenderError(extender, verb, FaultKind.MALFORMED, "clusterNames: Field required")
    known = frozenset(candidates)
    kept = result.cluster_names or []
    failed = result.failed_clusters or {}
    unresolvable = result.failed_and_unresolvable_clusters or {}
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
    body: bytes, candidates: Sequence[str], *, extender: str, verb: str = "prioritize"
) -> dict[str, int]:
    """Read a prioritize answer for ``candidates``: raw scores by cluster name."""
    try:
        if body.lstrip()[:1] == b"[":
            items = _BARE_PRIORITIES.validate_json(body)
        else:
            result = ClusterPriorityList.model_validate_json(body)
            _check_version(extender, verb, result.api_version, result.kind, PRIORITY_LIST_KIND)
            if result.error:
                raise ExtenderError(extender, verb, FaultKind.ERRORING, f"extender error: {result.error}")
            if "priorities" not in result.model_fields_set:
                raise ExtenderError(extender, verb, FaultKind.MALFORMED, "priorities: Field required")
            items = result.priorities or []
    except ValidationError as exc:
        raise ExtenderError(extender, verb, FaultKind.MALFORMED, _first_problem(exc)) from None
    known = frozenset(candidates)
    scores: dict[str, int] = {}
    for item in items:
        if item.cluster not in known:
            _unknown(extender, verb, "priorities", [item.cluster], known)
        if item.cluster in scores:
            raise ExtenderError(extender, verb, FaultKind.MALFORMED,
                                f"priorities: cluster {item.cluster!r} is scored twice")
        if not MIN_EXTENDER_PRIORITY <= item.score <= MAX_EXTENDER_PRIORITY:
            raise ExtenderError(
                extender, verb, FaultKind.MALFORMED,
                f"priorities: score {item.score} for cluster {item.cluster!r} is outside "
                f"{MIN_EXTENDER_PRIORITY}..{MAX_EXTENDER_PRIORITY}")
        scores[item.cluster] = item.score
    return scores
