"""Loading multi-document YAML into typed objects, with one-line errors.

Owns: dispatch by ``apiVersion`` + ``kind`` of decoded documents (bytes to documents, with the
hostile-input refusals, is ``yamlload``), ``kind: List`` documents, refusing two objects that are
one to the API server, and turning every problem into one ``LoadError`` whose text names the
file, the 1-based document number, the field path in Karmada style
(``spec.placement.clusterAffinities[1].affinityName``) and the reason. Nothing here schedules.

Karmada kinds become pydantic models; plain Kubernetes kinds (workload templates, Nodes, Pods,
ConfigMaps, ...) become ``ResourceTemplate`` values that keep the raw object. With
``compact_bindings`` (``fleetsched simulate`` on large inputs), ResourceBindings and
ClusterResourceBindings are validated as usual, then kept only as ``BindingDocument`` values: the
JSON of their fields as given, about a tenth of the memory of the model and the decoded document.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from fleetsched.api import strict
from fleetsched.api.cluster import Cluster
from fleetsched.api.document import BindingDocument, plain_json_default
from fleetsched.api.meta import ObjectMeta
from fleetsched.api.policy import ClusterPropagationPolicy, PropagationPolicy
from fleetsched.api.quantity import QuantityError, parse_quantity
from fleetsched.api.work import ClusterResourceBinding, ResourceBinding
from fleetsched.api.yamlload import (
    DEFAULT_BUDGET,
    Budget,
    LoadError,
    Source,
    decode_text,
    field_path,
    iter_documents,
    read_input,
)

__all__ = [
    "CLUSTER_SCOPED_TEMPLATE_KINDS",
    "KARMADA_KINDS",
    "MEMBER_CLUSTER_KEY",
    "TEMPLATE_KINDS",
    "ApiObject",
    "BindingDocument",
    "Budget",
    "LoadError",
    "LoadResult",
    "Loaded",
    "ObjectIdentity",
    "ResourceTemplate",
    "Source",
    "UnknownFieldError",
    "field_path",
    "identity_of",
    "load_files",
    "load_text",
    "parse_object",
    "plain_json_default",
    "refuse_duplicate_objects",
]

KARMADA_KINDS: dict[tuple[str, str], type[BaseModel]] = {
    ("cluster.karmada.io/v1alpha1", "Cluster"): Cluster,
    ("policy.karmada.io/v1alpha1", "PropagationPolicy"): PropagationPolicy,
    ("policy.karmada.io/v1alpha1", "ClusterPropagationPolicy"): ClusterPropagationPolicy,
    ("work.karmada.io/v1alpha2", "ResourceBinding"): ResourceBinding,
    ("work.karmada.io/v1alpha2", "ClusterResourceBinding"): ClusterResourceBinding,
}

# Plain Kubernetes kinds accepted as resource templates (or, for Node/Pod, estimator inputs).
TEMPLATE_KINDS: frozenset[tuple[str, str]] = frozenset(
    {
        ("apps/v1", "Deployment"),
        ("apps/v1", "StatefulSet"),
        ("apps/v1", "ReplicaSet"),
        ("apps/v1", "DaemonSet"),
        ("batch/v1", "Job"),
        ("batch/v1", "CronJob"),
        ("v1", "Pod"),
        ("v1", "Node"),
        ("v1", "ConfigMap"),
        ("v1", "Secret"),
        ("v1", "Service"),
        ("v1", "ServiceAccount"),
        ("v1", "Namespace"),
        ("v1", "PersistentVolumeClaim"),
        ("v1", "PersistentVolume"),
        ("v1", "LimitRange"),
        ("v1", "ResourceQuota"),
        ("rbac.authorization.k8s.io/v1", "Role"),
        ("rbac.authorization.k8s.io/v1", "RoleBinding"),
        ("rbac.authorization.k8s.io/v1", "ClusterRole"),
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
        ("networking.k8s.io/v1", "Ingress"),
        ("networking.k8s.io/v1", "NetworkPolicy"),
        ("autoscaling/v2", "HorizontalPodAutoscaler"),
        ("policy/v1", "PodDisruptionBudget"),
        ("scheduling.k8s.io/v1", "PriorityClass"),
        ("storage.k8s.io/v1", "StorageClass"),
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
    }
)

CLUSTER_SCOPED_TEMPLATE_KINDS: frozenset[str] = frozenset(
    {
        "Node",
        "Namespace",
        "PersistentVolume",
        "ClusterRole",
        "ClusterRoleBinding",
        "PriorityClass",
        "StorageClass",
        "CustomResourceDefinition",
    }
)

_DEFAULT_NAMESPACE = "default"


@dataclass(frozen=True, slots=True)
class ResourceTemplate:
    """A plain Kubernetes object (workload template, Node, Pod, ConfigMap, ...), kept as its raw dict.

    ``raw`` must not be mutated: the detector reads pod templates from it.
    """

    api_version: str
    kind: str
    metadata: ObjectMeta
    raw: Mapping[str, Any]
    # Scope from API discovery when known (the operator); otherwise from the built-in kinds.
    scope_namespaced: bool | None = None

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any], *, namespaced: bool | None = None) -> ResourceTemplate:
        """A template from an object read from an API server (no defaulting, no checks)."""
        return cls(
            api_version=str(raw.get("apiVersion", "")),
            kind=str(raw.get("kind", "")),
            metadata=ObjectMeta.model_validate(raw.get("metadata") or {}),
            raw=raw,
            scope_namespaced=namespaced,
        )

    @property
    def name(self) -> str:
        return self.metadata.name or ""

    @property
    def namespace(self) -> str | None:
        return self.metadata.namespace

    @property
    def namespaced(self) -> bool:
        if self.scope_namespaced is not None:
            return self.scope_namespaced
        return self.kind not in CLUSTER_SCOPED_TEMPLATE_KINDS

    @property
    def annotations(self) -> Mapping[str, str]:
        return self.metadata.annotations or {}

    @property
    def uid(self) -> str | None:
        return self.metadata.uid

    @property
    def labels(self) -> Mapping[str, str]:
        return self.metadata.labels or {}

    @property
    def spec(self) -> Mapping[str, Any]:
        spec = self.raw.get("spec")
        return spec if isinstance(spec, Mapping) else {}


ApiObject = (
    Cluster
    | PropagationPolicy
    | ClusterPropagationPolicy
    | ResourceBinding
    | ClusterResourceBinding
    | ResourceTemplate
    | BindingDocument
)

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class Loaded:
    obj: ApiObject
    source: Source


@dataclass(slots=True)
class LoadResult:
    """Every object loaded, in input order, each with its source."""

    objects: list[Loaded] = field(default_factory=list)
    _index: dict[int, Source] | None = field(default=None, repr=False, compare=False)
    _indexed: int = field(default=0, repr=False, compare=False)

    def of_type(self, cls: type[_T]) -> list[_T]:
        return [item.obj for item in self.objects if isinstance(item.obj, cls)]

    @property
    def clusters(self) -> list[Cluster]:
        return self.of_type(Cluster)

    @property
    def propagation_policies(self) -> list[PropagationPolicy]:
        return self.of_type(PropagationPolicy)

    @property
    def cluster_propagation_policies(self) -> list[ClusterPropagationPolicy]:
        return self.of_type(ClusterPropagationPolicy)

    @property
    def policies(self) -> list[PropagationPolicy | ClusterPropagationPolicy]:
        return [
            item.obj
            for item in self.objects
            if isinstance(item.obj, PropagationPolicy | ClusterPropagationPolicy)
        ]

    @property
    def bindings(self) -> list[ResourceBinding | ClusterResourceBinding | BindingDocument]:
        """Bindings in input order: models, or ``BindingDocument`` values when loaded compact."""
        return [
            item.obj
            for item in self.objects
            if isinstance(item.obj, ResourceBinding | ClusterResourceBinding | BindingDocument)
        ]

    @property
    def templates(self) -> list[ResourceTemplate]:
        """Plain Kubernetes objects except Nodes (which are never propagated from here)."""
        return [t for t in self.of_type(ResourceTemplate) if t.kind != "Node"]

    @property
    def nodes(self) -> list[Mapping[str, Any]]:
        return [t.raw for t in self.of_type(ResourceTemplate) if t.kind == "Node" and t.api_version == "v1"]

    @property
    def pods(self) -> list[Mapping[str, Any]]:
        return [t.raw for t in self.of_type(ResourceTemplate) if t.kind == "Pod" and t.api_version == "v1"]

    def source_of(self, obj: object) -> Source | None:
        """Where ``obj`` (one of the loaded objects, by identity) came from."""
        if self._index is None or self._indexed != len(self.objects):
            self._index = {id(item.obj): item.source for item in self.objects}
            self._indexed = len(self.objects)
        return self._index.get(id(obj))

    def extend(self, other: LoadResult) -> None:
        self.objects.extend(other.objects)


# ---------------------------------------------------------------------------------------------
# Field paths and messages

def _render(value: Any) -> str:
    try:
        return json.dumps(value, default=str, separators=(",", ":"))
    except (TypeError, ValueError):
        return repr(value)


def _reason(error: Mapping[str, Any]) -> str:
    """Kubernetes-flavoured wording for one pydantic error."""
    kind = error["type"]
    value = error.get("input")
    ctx = error.get("ctx") or {}
    if kind == "missing":
        return "Required value"
    if kind == "literal_error":
        allowed = re.findall(r"'([^']*)'", str(ctx.get("expected", "")))
        listed = ", ".join(f'"{a}"' for a in allowed)
        return f"Unsupported value: {_render(value)}: supported values: {listed}"
    if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        words = {
            "greater_than_equal": ("ge", "greater than or equal to"),
            "greater_than": ("gt", "greater than"),
            "less_than_equal": ("le", "less than or equal to"),
            "less_than": ("lt", "less than"),
        }[kind]
        return f"Invalid value: {_render(value)}: must be {words[1]} {ctx.get(words[0])}"
    if kind == "too_short" and ctx.get("min_length") == 1:
        return "Required value: must have at least 1 item"
    expected_type = {
        "model_type": "must be an object",
        "dict_type": "must be an object",
        "model_attributes_type": "must be an object",
        "list_type": "must be a list",
        "string_type": "must be a string",
        "int_type": "must be an integer",
        "bool_type": "must be a boolean",
    }.get(kind)
    if expected_type is not None:
        return f"Invalid value: {_render(value)}: {expected_type}"
    if kind == "string_too_short":
        return f"Invalid value: {_render(value)}: must be at least {ctx.get('min_length')} characters long"
    if kind == "string_too_long":
        return f"Invalid value: {_render(value)}: must be at most {ctx.get('max_length')} characters long"
    if kind == "string_pattern_mismatch":
        return f"Invalid value: {_render(value)}: must match the pattern {ctx.get('pattern')}"
    if kind == "value_error":
        cause = ctx.get("error")
        return f"Invalid value: {_render(value)}: {cause}"
    message = str(error.get("msg", "invalid"))
    message = message[0].lower() + message[1:] if message else message
    return f"Invalid value: {_render(value)}: {message}"


def _from_validation_error(exc: ValidationError, source: Source | None, prefix: str = "") -> LoadError:
    errors = exc.errors(include_url=False)
    first = errors[0]
    reason = _reason(first)
    if len(errors) > 1:
        reason += f" (and {len(errors) - 1} more error{'s' if len(errors) > 2 else ''})"
    loc = tuple(first["loc"]) if not prefix else ()
    return LoadError(reason, source=source, path=field_path(first["loc"], prefix=prefix), loc=loc)


# ---------------------------------------------------------------------------------------------
# Objects


class UnknownFieldError(LoadError):
    """Fields the kind does not declare (``strict.unknown_fields``), refused as kubectl refuses them;
    ``locs`` are their paths in the object (``loc``: the first's, for its position)."""

    def __init__(self, locs: list[tuple[str | int, ...]], source: Source | None = None) -> None:
        self.locs = locs
        super().__init__(strict.unknown_field_message(locs), source=source, loc=locs[0])


def parse_object(
    doc: Any,
    source: Source | None = None,
    *,
    crd_defaults: bool = False,
    validate: str = "strict",
    warn: Callable[[str], None] | None = None,
) -> ApiObject:
    """One decoded object (a dict) to a typed object; raises ``LoadError``.

    ``crd_defaults``: fill the CRD defaults first, as the API server would (``fleetsched.api.defaults``).
    ``validate``: kubectl's ``--validate`` (``strict.normalize_mode``): a field the kind does not
    declare is refused (``UnknownFieldError``), passed to ``warn`` (one line each), or ignored as the
    API server's pruning would.
    """
    if validate != "ignore" and isinstance(doc, Mapping):
        _check_unknown(doc, source, validate, warn)
    if not isinstance(doc, Mapping):
        raise LoadError(f"expected an object (a YAML mapping), got {type(doc).__name__}", source=source)
    api_version = doc.get("apiVersion")
    kind = doc.get("kind")
    if not isinstance(api_version, str) or not api_version:
        raise LoadError("Required value", source=source, path="apiVersion")
    if not isinstance(kind, str) or not kind:
        raise LoadError("Required value", source=source, path="kind")
    model = KARMADA_KINDS.get((api_version, kind))
    if model is not None:
        if crd_defaults:
            from fleetsched.api.defaults import apply_crd_defaults

            doc = apply_crd_defaults(dict(doc))
        try:
            obj = model.model_validate(doc)
        except ValidationError as exc:
            raise _from_validation_error(exc, source) from None
        if not obj.metadata.name:  # type: ignore[attr-defined]
            raise LoadError(
                "Required value: name or generateName is required", source=source, path="metadata.name"
            )
        if isinstance(obj, PropagationPolicy) and not obj.metadata.namespace:
            obj.metadata.namespace = _DEFAULT_NAMESPACE
        return obj  # type: ignore[return-value]
    if (api_version, kind) in TEMPLATE_KINDS:
        return _parse_template(doc, api_version, kind, source)
    known_versions = sorted({v for v, k in (*KARMADA_KINDS, *TEMPLATE_KINDS) if k == kind})
    if known_versions:
        raise LoadError(
            f'Unsupported value: "{api_version}": kind {kind} is supported in apiVersion '
            + ", ".join(f'"{v}"' for v in known_versions),
            source=source,
            path="apiVersion",
        )
    raise LoadError(
        f'Unsupported value: "{kind}": unknown kind (apiVersion "{api_version}")', source=source, path="kind"
    )


def _check_unknown(
    doc: Mapping[str, Any], source: Source | None, validate: str, warn: Callable[[str], None] | None
) -> None:
    model = KARMADA_KINDS.get((doc.get("apiVersion"), doc.get("kind")))  # type: ignore[arg-type]
    if model is None and (doc.get("apiVersion"), doc.get("kind")) not in TEMPLATE_KINDS:
        return  # an unsupported kind: parse_object says so
    locs = strict.unknown_fields(doc, model)
    if not locs:
        return
    if validate == "strict":
        raise UnknownFieldError(locs, source)
    if warn is not None:
        where = f"{source.describe()}: " if source is not None else ""
        for loc in locs:
            warn(f"{where}{strict.unknown_field_message([loc])} (ignored: --validate=warn)")


def _parse_template(
    doc: Mapping[str, Any], api_version: str, kind: str, source: Source | None
) -> ResourceTemplate:
    try:
        metadata = ObjectMeta.model_validate(doc.get("metadata") or {})
    except ValidationError as exc:
        raise _from_validation_error(exc, source, prefix="metadata") from None
    if not metadata.name:
        raise LoadError("Required value", source=source, path="metadata.name")
    if kind not in CLUSTER_SCOPED_TEMPLATE_KINDS and not metadata.namespace:
        # What kubectl does for a namespaced object without a namespace.
        metadata.namespace = _DEFAULT_NAMESPACE
    _check_template(doc, kind, source)
    return ResourceTemplate(api_version=api_version, kind=kind, metadata=metadata, raw=doc)


def _check_template(doc: Mapping[str, Any], kind: str, source: Source | None) -> None:
    """The fields the detector reads from a template, checked the way the API server would."""
    spec = doc.get("spec")
    if spec is None:
        return
    if not isinstance(spec, Mapping):
        raise LoadError(f"Invalid value: {_render(spec)}: must be an object", source=source, path="spec")
    count_fields = {
        "Deployment": ("replicas",),
        "StatefulSet": ("replicas",),
        "ReplicaSet": ("replicas",),
        "Job": ("parallelism", "completions"),
    }.get(kind, ())
    for name in count_fields:
        value = spec.get(name)
        if value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool):
            raise LoadError(
                f"Invalid value: {_render(value)}: must be an integer", source=source, path=f"spec.{name}"
            )
        if value < 0:
            raise LoadError(
                f"Invalid value: {value}: must be greater than or equal to 0",
                source=source,
                path=f"spec.{name}",
            )
        if value > 2**31 - 1:
            raise LoadError(f"Invalid value: {value}: must fit in int32", source=source, path=f"spec.{name}")
    if kind == "Pod":
        _check_pod_spec(spec, source, "spec")
        return
    template = spec.get("template")
    if isinstance(template, Mapping) and kind in (
        "Deployment",
        "StatefulSet",
        "ReplicaSet",
        "DaemonSet",
        "Job",
    ):
        pod_spec = template.get("spec")
        if pod_spec is not None:
            _check_pod_spec(pod_spec, source, "spec.template.spec")


def _check_pod_spec(pod_spec: Any, source: Source | None, path: str) -> None:
    if not isinstance(pod_spec, Mapping):
        raise LoadError(f"Invalid value: {_render(pod_spec)}: must be an object", source=source, path=path)
    for list_name in ("containers", "initContainers"):
        containers = pod_spec.get(list_name)
        if containers is None:
            continue
        if not isinstance(containers, list):
            raise LoadError("Invalid value: must be a list", source=source, path=f"{path}.{list_name}")
        for index, container in enumerate(containers):
            where = f"{path}.{list_name}[{index}]"
            if not isinstance(container, Mapping):
                raise LoadError("Invalid value: must be an object", source=source, path=where)
            resources = container.get("resources")
            if resources is None:
                continue
            if not isinstance(resources, Mapping):
                raise LoadError("Invalid value: must be an object", source=source, path=f"{where}.resources")
            for section in ("requests", "limits"):
                _check_resource_list(resources.get(section), source, f"{where}.resources.{section}")
    _check_resource_list(pod_spec.get("overhead"), source, f"{path}.overhead")
    node_selector = pod_spec.get("nodeSelector")
    if node_selector is not None and (
        not isinstance(node_selector, Mapping) or not all(isinstance(v, str) for v in node_selector.values())
    ):
        raise LoadError("Invalid value: must be a map of strings", source=source, path=f"{path}.nodeSelector")
    tolerations = pod_spec.get("tolerations")
    if tolerations is not None and not isinstance(tolerations, list):
        raise LoadError("Invalid value: must be a list", source=source, path=f"{path}.tolerations")


def _check_resource_list(resources: Any, source: Source | None, path: str) -> None:
    if resources is None:
        return
    if not isinstance(resources, Mapping):
        raise LoadError(
            f"Invalid value: {_render(resources)}: must be a map of quantities", source=source, path=path
        )
    for name, value in resources.items():
        try:
            quantity = parse_quantity(value)
        except QuantityError as exc:
            raise LoadError(
                f"Invalid value: {_render(value)}: {exc}", source=source, path=f"{path}[{name}]"
            ) from None
        if quantity.value_exact < 0:
            raise LoadError(
                f"Invalid value: {_render(value)}: must be greater than or equal to 0",
                source=source,
                path=f"{path}[{name}]",
            )


# ---------------------------------------------------------------------------------------------
# Documents


def load_text(
    text: str,
    *,
    filename: str = "<input>",
    crd_defaults: bool = False,
    budget: Budget = DEFAULT_BUDGET,
    validate: str = "strict",
    warn: Callable[[str], None] | None = None,
) -> LoadResult:
    """Every object in a multi-document YAML text. Empty documents are skipped but counted.

    Two objects with the same identity (a duplicate the API server would hold as one) are refused.
    ``validate``/``warn``: unknown fields, as ``parse_object``.
    """
    result = _load_text(text, filename=filename, crd_defaults=crd_defaults, budget=budget,
                        validate=validate, warn=warn)
    refuse_duplicate_objects(result.objects)
    return result


def _load_text(
    text: str,
    *,
    filename: str,
    crd_defaults: bool,
    budget: Budget,
    compact_bindings: bool = False,
    progress: Callable[[int], None] | None = None,
    validate: str = "strict",
    warn: Callable[[str], None] | None = None,
) -> LoadResult:
    result = LoadResult()

    def parse(item: Any, item_source: Source) -> ApiObject:
        try:
            obj = parse_object(item, item_source, crd_defaults=crd_defaults, validate=validate, warn=warn)
        except LoadError as exc:
            prefix: tuple[str | int, ...] = () if item_source.item is None else ("items", item_source.item)
            raise exc.with_position(text, prefix) from None
        if compact_bindings and isinstance(obj, ResourceBinding | ClusterResourceBinding):
            return BindingDocument.of(obj)  # the model and the decoded document go now
        return obj

    for number, doc in iter_documents(text, filename, budget=budget):
        if progress is not None:
            progress(1)
        if doc is None:
            continue
        source = Source(filename, number)
        if isinstance(doc, Mapping) and doc.get("kind") == "List" and doc.get("apiVersion") in ("v1", None):
            items = doc.get("items") or []
            if not isinstance(items, list):
                raise LoadError("Invalid value: must be a list", source=source, path="items")
            for index in range(len(items)):
                item_source = Source(filename, number, index)
                obj = parse(items[index], item_source)
                items[index] = None  # each item's decoded form goes once it is parsed
                result.objects.append(Loaded(obj, item_source))
            continue
        result.objects.append(Loaded(parse(doc, source), source))
        del doc
    return result


def load_files(
    paths: Sequence[str | Path],
    *,
    crd_defaults: bool = False,
    budget: Budget = DEFAULT_BUDGET,
    compact_bindings: bool = False,
    progress: Callable[[int], None] | None = None,
    validate: str = "strict",
    warn: Callable[[str], None] | None = None,
) -> LoadResult:
    """Load every file in order; ``-`` reads standard input. Raises ``LoadError`` on the first problem,
    including an object defined twice, in one file or across files.

    ``compact_bindings``: keep bindings as ``BindingDocument`` values, not models (same checks).
    ``progress(n)`` is called as documents are read (n of them each time). ``validate``/``warn``:
    unknown fields, as ``parse_object``."""
    result = LoadResult()
    for path in paths:
        name = str(path)
        text = decode_text(read_input(name), name)
        result.extend(
            _load_text(
                text,
                filename=name,
                crd_defaults=crd_defaults,
                budget=budget,
                compact_bindings=compact_bindings,
                progress=progress,
                validate=validate,
                warn=warn,
            )
        )
        del text
    refuse_duplicate_objects(result.objects)
    return result


# The annotation (or label) that puts a Node or Pod of the input into a member cluster's API; the
# same name as ``fleetsched.estimator.inprocess.MEMBER_CLUSTER_ANNOTATION`` (a test holds them equal).
MEMBER_CLUSTER_KEY = "fleetsched.io/member-cluster"


@dataclass(frozen=True, slots=True)
class ObjectIdentity:
    """What names one object in an API server: group, kind, namespace, name (and which member's API)."""

    member: str
    group: str
    kind: str
    namespace: str
    name: str

    def describe(self) -> str:
        ref = f"{self.namespace}/{self.name}" if self.namespace else self.name
        where = f" in member cluster {self.member}" if self.member else ""
        return f"{self.kind} {ref}{where}"


def identity_of(obj: ApiObject) -> ObjectIdentity:
    if isinstance(obj, BindingDocument):
        namespace = (obj.namespace or _DEFAULT_NAMESPACE) if obj.kind == "ResourceBinding" else ""
        return ObjectIdentity("", obj.api_version.rpartition("/")[0], obj.kind, namespace, obj.name)
    if isinstance(obj, ResourceTemplate):
        api_version, kind, md = obj.api_version, obj.kind, obj.metadata
        namespaced = obj.namespaced
        member = obj.annotations.get(MEMBER_CLUSTER_KEY) or obj.labels.get(MEMBER_CLUSTER_KEY) or ""
    else:
        api_version, kind, md = obj.api_version, obj.kind, obj.metadata  # type: ignore[union-attr]
        namespaced = isinstance(obj, PropagationPolicy | ResourceBinding)
        member = ""
    group = api_version.rpartition("/")[0]
    namespace = (md.namespace or _DEFAULT_NAMESPACE) if namespaced else ""
    return ObjectIdentity(str(member), group, kind, namespace, md.name or "")


def refuse_duplicate_objects(objects: Iterable[Loaded]) -> None:
    """``LoadError`` naming both places when two loaded objects are one object to the API server."""
    first: dict[ObjectIdentity, Source] = {}
    for item in objects:
        identity = identity_of(item.obj)
        earlier = first.setdefault(identity, item.source)
        if earlier is not item.source:
            raise LoadError(
                f"Duplicate value: {identity.describe()} is also defined in {earlier.describe()}",
                source=item.source,
                path="metadata.name",
            )
