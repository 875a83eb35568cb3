"""``fleetsched estimate FILE -o json``: the estimator server's answers, offline.

The input is one member cluster as its estimator would see it: an ``EstimatorOptions`` document
(``clusterName``, optional ``featureGates``), the cluster's objects (Nodes, Pods, ResourceQuotas,
Deployments, ReplicaSets, StatefulSets) and request documents (``MaxAvailableReplicasRequest``,
``MaxAvailableComponentSetsRequest``, ``UnschedulableReplicasRequest``) in Kubernetes JSON form. Each
request is encoded to protobuf exactly as a scheduler would send it, decoded and answered by the same
code as the gRPC server; the output has one entry per request, in order (the README's "Estimating
offline" section shows both formats).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import yaml

from fleetsched.api import yamlload
from fleetsched.api.quantity import QuantityError
from fleetsched.estimator import handlers, wire
from fleetsched.estimator.inventory import MemberInventory
from fleetsched.estimator.model import EstimatorError
from fleetsched.estimator.pb import estimator_pb2
from fleetsched.estimator.service import EstimatorService, FeatureGates
from fleetsched.flags import ALL_STAGES, KARMADA_FEATURE_GATES, expand_feature_gates

__all__ = ["add_arguments", "answer_requests", "run"]

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


class InputError(ValueError):
    """The input file is not a valid estimator input; the message names the document and field."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE", help="multi-document YAML input ('-' for stdin)")
    parser.add_argument("-o", "--output", choices=("json", "yaml"), default="json", help="output format")


def _documents(paths: list[str]) -> Iterator[tuple[str, int, Mapping[str, Any]]]:
    # The shared hardened reader: strict UTF-8 (files and stdin), duplicate keys, huge integers
    # and alias expansion refused before any value is built, one-line errors (LoadError).
    for path in paths:
        text = yamlload.decode_text(yamlload.read_input(path), path)
        for number, doc in yamlload.iter_documents(text, path):
            if doc is None:
                continue
            if not isinstance(doc, Mapping):
                raise InputError(f"{path}: document {number} is not a mapping")
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


def load(paths: list[str]) -> tuple[MemberInventory, list[Mapping[str, Any]]]:
    options: Mapping[str, Any] | None = None
    inventory = MemberInventory()
    requests: list[Mapping[str, Any]] = []
    for path, index, doc in _documents(paths):
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
        inventory, requests = load(args.files)
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
