"""``fleetsched estimate FILE -o json``: the estimator server's answers, offline.

The input is one member cluster as its estimator would see it: an ``EstimatorOptions`` document
(``clusterName``, optional ``featureGates``), the cluster's objects (Nodes, Pods, ResourceQuotas,
Deployments, ReplicaSets, StatefulSets) and request documents (``MaxAvailableReplicasRequest``,
``MaxAvailableComponentSetsRequest``, ``UnschedulableReplicasRequest``) in Kubernetes JSON form. Each
request is encoded to protobuf exactly as a scheduler would send it, decoded and answered by the same
code as the gRPC server; the output has one entry per request, in order (docs/simulate.md,
"Estimating offline", shows both formats).

A field nobody reads is refused first, as kubectl's ``--validate`` refuses it (``strict decoding
error: unknown field "spec.taint"``, with file, document, line and column): for Nodes, Pods and
ResourceQuotas the fields Kubernetes' core API declares (``fleetsched.api.corefields``), for the
other cluster objects their top level and metadata, for ``EstimatorOptions`` and the requests the
fields of the formats above (``OPTIONS_FIELDS``, ``REQUEST_FIELDS``). ``--validate=warn`` says so
and goes on, ``ignore`` does not look.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import yaml

from fleetsched.api import strict, yamlload
from fleetsched.api.corefields import CORE_FIELDS, ITEM, FieldTable
from fleetsched.api.quantity import QuantityError
from fleetsched.estimator import handlers, wire
from fleetsched.estimator.inventory import MemberInventory
from fleetsched.estimator.model import EstimatorError
from fleetsched.estimator.pb import estimator_pb2
from fleetsched.estimator.service import EstimatorService, FeatureGates
from fleetsched.flags import ALL_STAGES, KARMADA_FEATURE_GATES, expand_feature_gates

__all__ = ["OPTIONS_FIELDS", "REQUEST_FIELDS", "add_arguments", "answer_requests", "check_fields", "run"]

REQUEST_KINDS: dict[str, tuple[Callable[[Mapping[str, Any]], Any], Any, Callable[..., Any], str]] = {
    "MaxAvailableReplicasRequest": (wire.replicas_request_to_pb, estimator_pb2.MaxAvailableReplicasRequest,
                                    handlers.max_available_replicas, "maxReplicas"),
    "MaxAvailableComponentSetsRequest": (wire.component_sets_request_to_pb,
                                         estimator_pb2.MaxAvailableComponentSetsRequest,
                                         handlers.max_available_component_sets, "maxSets"),
    "UnschedulableReplicasRequest": (wire.unschedulable_request_to_pb,
                                     estimator_pb2.UnschedulableReplicasRequest,
                                     handlers.get_unschedulable_replicas, "unschedulableReplicas"),
}


# The documented formats (module docstring), as tables of known fields per path (strict.unknown_in_table):
# the fields of Karmada's estimator request messages in their Kubernetes JSON form.
OPTIONS_FIELDS: FieldTable = {(): frozenset({"kind", "clusterName", "featureGates"})}
_NODE_SELECTOR_REQUIREMENT = frozenset({"key", "operator", "values"})
_TOLERATION = frozenset({"key", "operator", "value", "effect", "tolerationSeconds"})


def _requirements(at: tuple[str, ...], *, component: bool) -> dict[tuple[str, ...], frozenset[str]]:
    claim = (*at, "nodeClaim")
    term = (*claim, "hardNodeAffinity", "nodeSelectorTerms", ITEM)
    fields = {"resourceRequest", "nodeClaim", "priorityClassName"} | (set() if component else {"namespace"})
    return {
        at: frozenset(fields),
        claim: frozenset({"nodeSelector", "hardNodeAffinity", "tolerations"}),
        (*claim, "hardNodeAffinity"): frozenset({"nodeSelectorTerms"}),
        term: frozenset({"matchExpressions", "matchFields"}),
        (*term, "matchExpressions", ITEM): _NODE_SELECTOR_REQUIREMENT,
        (*term, "matchFields", ITEM): _NODE_SELECTOR_REQUIREMENT,
        (*claim, "tolerations", ITEM): _TOLERATION,
    }


def _components(at: tuple[str, ...]) -> dict[tuple[str, ...], frozenset[str]]:
    return {(*at, ITEM): frozenset({"name", "replicas", "replicaRequirements"}),
            **_requirements((*at, ITEM, "replicaRequirements"), component=True)}


def _assumed(at: tuple[str, ...]) -> dict[tuple[str, ...], frozenset[str]]:
    return {(*at, ITEM): frozenset({"namespace", "components"}), **_components((*at, ITEM, "components"))}


REQUEST_FIELDS: Mapping[str, FieldTable] = {
    "MaxAvailableReplicasRequest": {
        (): frozenset({"kind", "cluster", "replicaRequirements", "assumedWorkloads"}),
        **_requirements(("replicaRequirements",), component=False),
        **_assumed(("assumedWorkloads",)),
    },
    "MaxAvailableComponentSetsRequest": {
        (): frozenset({"kind", "cluster", "namespace", "components", "assumedWorkloads"}),
        **_components(("components",)),
        **_assumed(("assumedWorkloads",)),
    },
    "UnschedulableReplicasRequest": {
        (): frozenset({"kind", "cluster", "resource", "unschedulableThreshold"}),
        ("resource",): frozenset({"apiVersion", "kind", "namespace", "name"}),
    },
}
# The cluster objects the estimator reads; those not in corefields.CORE_FIELDS are checked at their
# top level and metadata (the workloads GetUnschedulableReplicas looks up).
_TOP_LEVEL_KINDS = frozenset({("apps/v1", "Deployment"), ("apps/v1", "ReplicaSet"),
                              ("apps/v1", "StatefulSet")})


class InputError(ValueError):
    """The input file is not a valid estimator input; the message names the document and field."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE", help="multi-document YAML input ('-' for stdin)")
    parser.add_argument("-o", "--output", choices=("json", "yaml"), default="json", help="output format")
    parser.add_argument(
        "--validate",
        type=_validate_mode,
        default="strict",
        metavar="MODE",
        help="a field nobody reads (for Nodes, Pods and ResourceQuotas one Kubernetes' API does not "
        "declare; for EstimatorOptions and the requests one their format lacks), as kubectl's "
        "--validate: strict (default; also true) refuses it, exit 2, with kubectl's words (strict "
        "decoding error: unknown field \"spec.taint\") and where it is; warn says so on stderr and "
        "goes on; ignore (also false) drops it as the API server's pruning would",
    )


def _validate_mode(text: str) -> str:
    try:
        return strict.normalize_mode(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)


def _table(doc: Mapping[str, Any]) -> FieldTable | None:
    kind = str(doc.get("kind"))
    if kind == "EstimatorOptions":
        return OPTIONS_FIELDS
    if kind in REQUEST_FIELDS:
        return REQUEST_FIELDS[kind]
    return None


def check_fields(doc: Mapping[str, Any], source: yamlload.Source, text: str, validate: str,
                 warn: Callable[[str], None] | None = None) -> None:
    """Refuse (``strict``: ``load.UnknownFieldError``, with the first one's line and column) or pass to
    ``warn`` (``warn``) the fields of ``doc`` its kind does not declare (module docstring)."""
    if validate == "ignore":
        return
    table = _table(doc)
    key = (str(doc.get("apiVersion")), str(doc.get("kind")))
    if table is not None:
        locs = strict.unknown_in_table(doc, table)
    elif key in CORE_FIELDS or key in _TOP_LEVEL_KINDS:
        locs = strict.unknown_fields(doc, None)
    else:
        return  # a kind the estimator does not read
    if not locs:
        return
    if validate == "strict":
        from fleetsched.api.load import UnknownFieldError

        raise UnknownFieldError(locs, source).with_position(text)
    if warn is not None:
        for loc in locs:
            warn(f"{source.describe()}: {strict.unknown_field_message([loc])} (ignored: --validate=warn)")


def _documents(paths: list[str], validate: str = "strict", warn: Callable[[str], None] | None = None,
               ) -> Iterator[tuple[str, int, Mapping[str, Any]]]:
    # The shared hardened reader: strict UTF-8 (files and stdin), duplicate keys, huge integers
    # and alias expansion refused before any value is built, one-line errors (LoadError).
    for path in paths:
        text = yamlload.decode_text(yamlload.read_input(path), path)
        for number, doc in yamlload.iter_documents(text, path):
            if doc is None:
                continue
            if not isinstance(doc, Mapping):
                raise InputError(f"{path}: document {number} is not a mapping")
            check_fields(doc, yamlload.Source(path, number), text, validate, warn)
            yield path, number, doc


def _gates(options: Mapping[str, Any]) -> FeatureGates:
    gates = options.get("featureGates") or {}
    if not isinstance(gates, Mapping):
        raise InputError("EstimatorOptions.featureGates: must be a mapping of gate name to bool")
    for name, value in gates.items():
        if not isinstance(value, bool):
            raise InputError(f"EstimatorOptions.featureGates.{name}: must be true or false")
        if name not in KARMADA_FEATURE_GATES and name not in ALL_STAGES:
            print(f"warning: unknown feature gate {name!r} ignored", file=sys.stderr)
    return FeatureGates.from_mapping(expand_feature_gates(gates))


_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)


def _need(ok: bool, where: str, what: str, value: Any) -> None:
    if not ok:
        raise InputError(f"{where}: must be {what}, got {value!r}")


def _check_int(value: Any, where: str, bounds: tuple[int, int], what: str) -> None:
    # what the wire conversion accepts (int() of a number or numeric text) and the field can hold
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = None
    _need(number is not None and bounds[0] <= number <= bounds[1], where, what, value)


def _check_requirements(raw: Any, where: str) -> None:
    _need(isinstance(raw, Mapping), where, "a mapping", raw)
    for key in ("namespace", "priorityClassName"):
        if raw.get(key) is not None:
            _need(isinstance(raw[key], str), f"{where}.{key}", "a string", raw[key])
    request = raw.get("resourceRequest")
    if request is not None:
        # an unparsable quantity is sent as written: the estimator's error is the answer (spec 2.3)
        _need(isinstance(request, Mapping), f"{where}.resourceRequest",
              "a mapping of resource name to quantity", request)
    claim = raw.get("nodeClaim")
    if claim is None:
        return
    _need(isinstance(claim, Mapping), f"{where}.nodeClaim", "a mapping", claim)
    if claim.get("nodeSelector") is not None:
        _need(isinstance(claim["nodeSelector"], Mapping), f"{where}.nodeClaim.nodeSelector", "a mapping",
              claim["nodeSelector"])
    affinity = claim.get("hardNodeAffinity")
    if affinity is not None:
        at = f"{where}.nodeClaim.hardNodeAffinity"
        _need(isinstance(affinity, Mapping), at, "a v1 NodeSelector", affinity)
        terms = affinity.get("nodeSelectorTerms") or []
        _need(isinstance(terms, list), f"{at}.nodeSelectorTerms", "a list", terms)
        for i, term in enumerate(terms):
            term_at = f"{at}.nodeSelectorTerms[{i}]"
            _need(term is None or isinstance(term, Mapping), term_at, "a mapping", term)
            for field in ("matchExpressions", "matchFields"):
                items = (term or {}).get(field) or []
                _need(isinstance(items, list) and all(isinstance(r, Mapping) for r in items),
                      f"{term_at}.{field}", "a list of requirements", items)
                for j, requirement in enumerate(items):
                    values = requirement.get("values") or []
                    _need(isinstance(values, list), f"{term_at}.{field}[{j}].values", "a list", values)
    tolerations = claim.get("tolerations")
    if tolerations is not None:
        _need(isinstance(tolerations, list) and all(isinstance(t, Mapping) for t in tolerations),
              f"{where}.nodeClaim.tolerations", "a list of tolerations", tolerations)
        for i, toleration in enumerate(tolerations):
            if toleration.get("tolerationSeconds") is not None:
                _check_int(toleration["tolerationSeconds"],
                           f"{where}.nodeClaim.tolerations[{i}].tolerationSeconds", _INT64, "an int64")


def _check_components(raw: Any, where: str) -> None:
    _need(isinstance(raw, list) and all(isinstance(c, Mapping) for c in raw), where, "a list of components",
          raw)
    for i, item in enumerate(raw):
        _check_int(item.get("replicas", 0) or 0, f"{where}[{i}].replicas", _INT32, "an integer (int32)")
        if item.get("replicaRequirements") is not None:
            _check_requirements(item["replicaRequirements"], f"{where}[{i}].replicaRequirements")


def check_request(number: int, doc: Mapping[str, Any]) -> None:
    """Reject a request document the wire form cannot carry, naming the field (before anything is
    answered)."""
    where = f"request {number} ({doc.get('kind')})"
    if doc.get("cluster") is not None:
        _need(isinstance(doc["cluster"], str), f"{where}: cluster", "a string", doc["cluster"])
    if doc.get("replicaRequirements") is not None:
        _check_requirements(doc["replicaRequirements"], f"{where}: replicaRequirements")
    if doc.get("components") is not None:
        _check_components(doc["components"], f"{where}: components")
    if doc.get("namespace") is not None:
        _need(isinstance(doc["namespace"], str), f"{where}: namespace", "a string", doc["namespace"])
    workloads = doc.get("assumedWorkloads")
    if workloads is not None:
        _need(isinstance(workloads, list) and all(isinstance(w, Mapping) for w in workloads),
              f"{where}: assumedWorkloads", "a list of {namespace, components}", workloads)
        for i, workload in enumerate(workloads):
            _check_components(workload.get("components") or [], f"{where}: assumedWorkloads[{i}].components")
    if doc.get("resource") is not None:
        _need(isinstance(doc["resource"], Mapping), f"{where}: resource", "an object reference",
              doc["resource"])
    if doc.get("unschedulableThreshold") is not None:
        _check_int(doc["unschedulableThreshold"], f"{where}: unschedulableThreshold", _INT64,
                   "an integer number of nanoseconds (int64)")


def answer_requests(service: EstimatorService, requests: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    answers: list[dict[str, Any]] = []
    for request in requests:
        to_pb, message_type, handler, key = REQUEST_KINDS[str(request["kind"])]
        # Through the wire bytes, as a scheduler's request would arrive.
        message = message_type.FromString(to_pb(request).SerializeToString())
        try:
            response = handler(service, message)
        except EstimatorError as exc:
            answers.append({"error": {"code": exc.code, "message": exc.message}})
            continue
        except Exception as exc:  # a bug fails this request, as the gRPC server answers it
            print(f"fleetsched estimate: request {len(answers) + 1}: internal error: {exc!r}",
                  file=sys.stderr)
            answers.append({"error": {"code": "Unknown", "message": f"internal error: {exc}"}})
            continue
        answers.append({key: getattr(response, key)})
    return answers


def load(paths: list[str], *, validate: str = "strict", warn: Callable[[str], None] | None = None,
         ) -> tuple[MemberInventory, list[Mapping[str, Any]]]:
    """The member cluster and the requests the files describe; ``validate``/``warn``: unknown fields,
    as kubectl's ``--validate`` (``check_fields``)."""
    options: Mapping[str, Any] | None = None
    inventory = MemberInventory()
    requests: list[Mapping[str, Any]] = []
    for path, index, doc in _documents(paths, validate, warn):
        kind = doc.get("kind")
        if kind == "EstimatorOptions":
            if options is not None:
                raise InputError(f"{path}: document {index}: a second EstimatorOptions document")
            options = doc
        elif kind in REQUEST_KINDS:
            check_request(len(requests) + 1, doc)
            requests.append(doc)
        elif isinstance(kind, str) and kind:
            inventory.add(doc)  # as it is parsed: the document is garbage right after
        else:
            raise InputError(f"{path}: document {index}: kind: missing or not a string")
    if options is None:
        raise InputError("no EstimatorOptions document: it names the cluster (clusterName)")
    cluster = options.get("clusterName")
    if not isinstance(cluster, str) or not cluster:
        raise InputError("EstimatorOptions.clusterName: required, a non-empty string")
    inventory.finish(cluster, _gates(options))
    return inventory, requests


def run(args: argparse.Namespace) -> int:
    try:
        inventory, requests = load(args.files, validate=getattr(args, "validate", "strict"), warn=_warn)
        answers = answer_requests(inventory.service, requests)
    except (InputError, yamlload.LoadError, QuantityError, OSError) as exc:
        print(f"fleetsched estimate: {exc}", file=sys.stderr)
        return 2
    if args.output == "json":
        json.dump(answers, sys.stdout)
        sys.stdout.write("\n")
    else:
        yaml.safe_dump(answers, sys.stdout, sort_keys=False)
    return 0
