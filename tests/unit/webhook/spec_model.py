"""A second, independent reading of webhook.md §4 and §6 for the policy validating webhook.

Written from the spec text for the audit, deliberately without sharing code with
``fleetsched.webhook``: it renders values with ``json.dumps`` and hand-written struct tables and
checks the rules in §6.3 order. ``test_spec_audit`` feeds it the kinds of policies the
conformance generator produces and compares its message with the webhook's. It covers the
generator's domain (ASCII strings), not every Go corner the webhook itself handles.
"""

from __future__ import annotations

import json
import re
from typing import Any

J = dict[str, Any]

NAME_FORMAT = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
SUBDOMAIN = (
    "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
    "'-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)


def quote(s: str) -> str:
    """Go's %q for ASCII text."""
    escapes = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r"}
    body = "".join(escapes.get(c, f"\\x{ord(c):02x}" if ord(c) < 0x20 or ord(c) == 0x7F else c) for c in s)
    return f'"{body}"'


def go_json(value: Any) -> str:
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _requirement(r: J) -> J:
    out: J = {"key": r.get("key") or "", "operator": r.get("operator") or ""}
    if r.get("values"):
        out["values"] = [v or "" for v in r["values"]]
    return out


def _label_selector(s: J) -> J:
    out: J = {}
    if s.get("matchLabels"):
        out["matchLabels"] = {k: s["matchLabels"][k] or "" for k in sorted(s["matchLabels"])}
    if s.get("matchExpressions"):
        out["matchExpressions"] = [_requirement(r or {}) for r in s["matchExpressions"]]
    return out


def _field_selector(s: J) -> J:
    return (
        {"matchExpressions": [_requirement(r or {}) for r in s["matchExpressions"]]}
        if s.get("matchExpressions")
        else {}
    )


def _affinity(a: J, *, named: bool = False, overflow: bool = False) -> J:
    out: J = {"affinityName": a.get("affinityName") or ""} if named else {}
    if a.get("labelSelector") is not None:
        out["labelSelector"] = _label_selector(a["labelSelector"])
    if a.get("fieldSelector") is not None:
        out["fieldSelector"] = _field_selector(a["fieldSelector"])
    for key in ("clusterNames", "exclude"):
        if a.get(key):
            out[key] = [x or "" for x in a[key]]
    if overflow and a.get("overflowAffinities"):
        out["overflowAffinities"] = [_affinity(x or {}, named=True) for x in a["overflowAffinities"]]
    return out


def _plain(obj: J, keys: tuple[str, ...]) -> J:
    return {k: obj[k] for k in keys if obj.get(k)}


def _toleration(t: J) -> J:
    out = _plain(t, ("key", "operator", "value", "effect"))
    if t.get("tolerationSeconds") is not None:
        out["tolerationSeconds"] = t["tolerationSeconds"]
    return out


def _spread(c: J) -> J:
    return _plain(c, ("spreadByField", "spreadByLabel", "maxGroups", "minGroups"))


def _strategy(s: J) -> J:
    out = _plain(s, ("replicaSchedulingType", "replicaDivisionPreference"))
    if s.get("weightPreference") is not None:
        w = s["weightPreference"]
        prefs: J = {}
        if w.get("staticWeightList"):
            prefs["staticWeightList"] = [
                {
                    "targetCluster": _affinity((x or {}).get("targetCluster") or {}),
                    "weight": (x or {}).get("weight") or 0,
                }
                for x in w["staticWeightList"]
            ]
        if w.get("dynamicWeight"):
            prefs["dynamicWeight"] = w["dynamicWeight"]
        out["weightPreference"] = prefs
    return out


def _workload(w: J) -> J:
    return {
        k: {"groupByLabelKey": w[k].get("groupByLabelKey") or ""}
        for k in ("affinity", "antiAffinity")
        if w.get(k) is not None
    }


def _placement(p: J) -> J:
    out: J = {}
    if p.get("clusterAffinity") is not None:
        out["clusterAffinity"] = _affinity(p["clusterAffinity"])
    if p.get("clusterAffinities"):
        out["clusterAffinities"] = [
            _affinity(t or {}, named=True, overflow=True) for t in p["clusterAffinities"]
        ]
    if p.get("clusterTolerations"):
        out["clusterTolerations"] = [_toleration(t or {}) for t in p["clusterTolerations"]]
    if p.get("spreadConstraints"):
        out["spreadConstraints"] = [_spread(c or {}) for c in p["spreadConstraints"]]
    if p.get("replicaScheduling") is not None:
        out["replicaScheduling"] = _strategy(p["replicaScheduling"])
    if p.get("workloadAffinity") is not None:
        out["workloadAffinity"] = _workload(p["workloadAffinity"])
    return out


def label_key_messages(key: str) -> list[str]:
    parts = key.split("/")
    if len(parts) > 2:
        return [
            "a valid label key " + NAME_FORMAT + " with an optional DNS subdomain prefix and '/' "
            "(e.g. 'example.com/MyName')"
        ]
    out: list[str] = []
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            out.append("prefix part must be non-empty")
        else:
            if len(prefix.encode()) > 253:
                out.append("prefix part must be no more than 253 bytes")
            if not re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*", prefix):
                out.append(SUBDOMAIN)
    name = parts[-1]
    if not name:
        out.append("name part must be non-empty")
    elif len(name.encode()) > 63:
        out.append("name part must be no more than 63 bytes")
    if not re.fullmatch(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]", name):
        out.append("name part " + NAME_FORMAT)
    return out


def _key_errors(path: str, key: str) -> list[str]:
    return [f"{path}: Invalid value: {quote(key)}: {m}" for m in label_key_messages(key)]


def _field_selector_error(a: J, path: str) -> list[str]:
    selector = a.get("fieldSelector")
    if selector is None:
        return []
    for e in selector.get("matchExpressions") or []:
        key, operator = (e or {}).get("key") or "", (e or {}).get("operator") or ""
        shown = go_json(_field_selector(selector))
        if key not in ("provider", "region", "zone"):
            return [
                f"{path}: Invalid value: {shown}: unsupported key {quote(key)}, "
                "must be provider, region, or zone"
            ]
        if operator not in ("In", "NotIn"):
            return [
                f"{path}: Invalid value: {shown}: unsupported operator {quote(operator)}, must be In or NotIn"
            ]
    return []


def _overflow_allowed(p: J) -> bool:
    s = p.get("replicaScheduling")
    if s is None or s.get("replicaSchedulingType") != "Divided":
        return False
    if s.get("replicaDivisionPreference") == "Aggregated":
        return True
    w = s.get("weightPreference")
    return s.get("replicaDivisionPreference") == "Weighted" and w is not None and bool(w.get("dynamicWeight"))


def _placement_errors(p: J) -> list[str]:
    out: list[str] = []
    base = "spec.placement"
    if p.get("clusterAffinity") is not None and p.get("clusterAffinities") is not None:
        out.append(
            f"{base}: Invalid value: {go_json(_placement(p))}: clusterAffinities cannot co-exist with "
            "clusterAffinity"
        )
    terms = [t or {} for t in p.get("clusterAffinities") or []]
    if not _overflow_allowed(p):
        for i, t in enumerate(terms):
            if t.get("overflowAffinities") is not None:
                shown = go_json([_affinity(x or {}, named=True) for x in t["overflowAffinities"]])
                out.append(
                    f"{base}.clusterAffinities[{i}].overflowAffinities: Invalid value: {shown}: "
                    "overflowAffinities can only be used together with dynamic weight or "
                    "aggregated scheduling"
                )
    if p.get("clusterAffinity") is not None:
        out += _field_selector_error(p["clusterAffinity"], f"{base}.clusterAffinity.fieldSelector")
    seen: set[str] = set()
    for i, t in enumerate(terms):
        path = f"{base}.clusterAffinities[{i}]"
        name = t.get("affinityName") or ""
        out += _key_errors(path, name)
        if name in seen:
            out.append(
                f"{base}.clusterAffinities: Invalid value: "
                f"{go_json([_affinity(x, named=True, overflow=True) for x in terms])}: "
                "each affinity term in a policy must have a unique name"
            )
        seen.add(name)
        out += _field_selector_error(t, f"{path}.fieldSelector")
        overflows = t.get("overflowAffinities")
        if overflows is None:
            continue
        if (
            t.get("labelSelector") is None
            and t.get("fieldSelector") is None
            and not t.get("clusterNames")
            and not t.get("exclude")
        ):
            out.append(
                f"{path}.overflowAffinities: Invalid value: "
                f"{go_json([_affinity(x or {}, named=True) for x in overflows])}: "
                "overflowAffinities can only be used together with the inline ClusterAffinity"
            )
        names = {name}
        for j, o in enumerate(overflows):
            o = o or {}
            opath = f"{path}.overflowAffinities[{j}]"
            oname = o.get("affinityName") or ""
            out += _key_errors(f"{opath}.affinityName", oname)
            if oname in names:
                out.append(
                    f"{opath}.affinityName: Invalid value: {quote(oname)}: overflow affinity name must be "
                    "unique and must not duplicate the primary group's affinityName"
                )
            names.add(oname)
            out += _field_selector_error(o, f"{opath}.fieldSelector")
    constraints = [c or {} for c in p.get("spreadConstraints") or []]
    whole = go_json([_spread(c) for c in constraints])
    fields: list[str] = []
    for i, c in enumerate(constraints):
        shown, cpath = go_json(_spread(c)), f"{base}.spreadConstraints[{i}]"
        by_field, by_label = c.get("spreadByField") or "", c.get("spreadByLabel") or ""
        low, high = c.get("minGroups") or 0, c.get("maxGroups") or 0
        if by_field and by_label:
            out.append(
                f"{cpath}: Invalid value: {shown}: spreadByLabel should not co-exist with spreadByField"
            )
        if low < 0:
            out.append(f"{cpath}: Invalid value: {shown}: minGroups lower than 0 is not allowed")
        if high < 0:
            out.append(f"{cpath}: Invalid value: {shown}: maxGroups lower than 0 is not allowed")
        if 0 < high < low:
            out.append(f"{cpath}: Invalid value: {shown}: maxGroups lower than minGroups is not allowed")
        if by_field:
            if by_field in fields:
                out.append(
                    f"{base}.spreadConstraints: Invalid value: {whole}: multiple {by_field} spread "
                    "constraints are not allowed"
                )
            fields.append(by_field)
    if fields and "cluster" not in fields:
        out.append(
            f"{base}.spreadConstraints: Invalid value: {whole}: the cluster spread constraint must be "
            "enabled in one of the constraints in case of SpreadByField is enabled"
        )
    workload = p.get("workloadAffinity")
    if workload is not None:
        for term in ("affinity", "antiAffinity"):
            if workload.get(term) is not None:
                out += _key_errors(
                    f"{base}.workloadAffinity.{term}.groupByLabelKey",
                    workload[term].get("groupByLabelKey") or "",
                )
        if (
            workload.get("affinity") is not None
            and workload.get("antiAffinity") is not None
            and (workload["affinity"].get("groupByLabelKey") or "")
            == (workload["antiAffinity"].get("groupByLabelKey") or "")
        ):
            out.append(
                f"{base}.workloadAffinity: Invalid value: {go_json(_workload(workload))}: affinity and "
                "antiAffinity must not use the same groupByLabelKey"
            )
    for i, t in enumerate(p.get("clusterTolerations") or []):
        operator = (t or {}).get("operator") or ""
        if operator in ("Lt", "Gt"):
            out.append(
                f"{base}.clusterTolerations[{i}].operator: Unsupported value: {quote(operator)}: "
                'supported values: "", "Exists", "Equal"'
            )
    return out


def _rules_errors(behavior: J, path: str) -> list[str]:
    rules = ((behavior.get("statePreservation") or {}).get("rules")) or []
    out: list[str] = []
    for k, rule in enumerate(rules):
        out += _key_errors(
            f"{path}.statePreservation.rules[{k}].aliasLabelName", (rule or {}).get("aliasLabelName") or ""
        )
    return out


def validate(spec: J, *, namespaced: bool, request_namespace: str) -> str | None:
    """The denial message for a policy spec whose metadata rules pass, ``None`` when allowed."""
    errors = _placement_errors(spec.get("placement") or {})
    failover = spec.get("failover") or {}
    app = failover.get("application")
    if app is not None and not spec.get("propagateDeps"):
        errors.append(
            "spec.propagateDeps: Invalid value: false: application failover is set, propagateDeps must "
            "be true"
        )
    if app is not None:
        path = "spec.failover.application"
        toleration = (app.get("decisionConditions") or {}).get("tolerationSeconds")
        toleration = 300 if toleration is None else toleration
        if toleration < 0:
            errors.append(
                f"{path}.decisionConditions.tolerationSeconds: Invalid value: {toleration}: must be "
                "greater than or equal to 0"
            )
        grace, mode = app.get("gracePeriodSeconds"), app.get("purgeMode") or ""
        if mode != "Gracefully" and grace is not None:
            errors.append(
                f"{path}.gracePeriodSeconds: Invalid value: {grace}: only takes effect when purgeMode "
                "is gracefully"
            )
        if mode == "Gracefully" and grace is None:
            errors.append(
                f"{path}.gracePeriodSeconds: Invalid value: null: should not be empty when purgeMode "
                "is gracefully"
            )
        if grace is not None and grace <= 0:
            errors.append(f"{path}.gracePeriodSeconds: Invalid value: {grace}: must be greater than 0")
        errors += _rules_errors(app, path)
    if failover.get("cluster") is not None:
        errors += _rules_errors(failover["cluster"], "spec.failover.cluster")
    selectors = [s or {} for s in spec.get("resourceSelectors") or []]
    if namespaced:
        for i, s in enumerate(selectors):
            if (s.get("namespace") or "") != request_namespace:
                errors.append(
                    f"spec.resourceSelectors[{i}].namespace: Invalid value: {quote(s.get('namespace') or '')}"
                    ": namespace of resource selector must be the same as the namespace of the policy"
                )
    if spec.get("preemption") == "Always":
        for i, s in enumerate(selectors):
            if not s.get("name"):
                errors.append(
                    f'spec.resourceSelectors[{i}].name: Invalid value: "": name cannot be empty if '
                    "preemption is Always, the empty name may cause unexpected resources preemption"
                )
    suspension = spec.get("suspension")
    if suspension is not None and suspension.get("dispatching") is True:
        names = (suspension.get("dispatchingOnClusters") or {}).get("clusterNames")
        if names:
            shown = go_json({"dispatching": True, "dispatchingOnClusters": {"clusterNames": names}})
            errors.append(
                f"spec.suspension.suspension: Invalid value: {shown}: suspension dispatching cannot "
                "co-exist with dispatchingOnClusters.clusterNames"
            )
    unique = list(dict.fromkeys(errors))
    if not unique:
        return None
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


def mutate(
    obj: J, *, namespaced: bool, request_namespace: str, create: bool, label: str, finalizer: str
) -> J:
    """§5.1/§5.2 on a plain copy of the request object (the permanent id is written as ``<generated>``)."""
    out = json.loads(json.dumps(obj))
    spec = out.setdefault("spec", {}) or {}
    out["spec"] = spec
    selectors = spec.get("resourceSelectors") or []
    if namespaced:
        for s in selectors:
            if not s.get("namespace"):
                s["namespace"] = request_namespace
    placement = spec.get("placement") or {}
    for c in placement.get("spreadConstraints") or []:
        if not c.get("spreadByField") and not c.get("spreadByLabel"):
            c["spreadByField"] = "cluster"
        if not c.get("minGroups"):
            c["minGroups"] = 1
    if any(
        s.get("apiVersion") == "multicluster.x-k8s.io/v1alpha1" and s.get("kind") == "ServiceImport"
        for s in selectors
    ):
        spec["propagateDeps"] = True
    strategy = placement.get("replicaScheduling")
    if (
        strategy is not None
        and strategy.get("replicaSchedulingType") == "Divided"
        and not strategy.get("replicaDivisionPreference")
    ):
        strategy["replicaDivisionPreference"] = "Weighted"
    app = (spec.get("failover") or {}).get("application")
    if app is not None and app.get("purgeMode") == "Gracefully" and app.get("gracePeriodSeconds") is None:
        app["gracePeriodSeconds"] = 600
    if create:
        meta = out.setdefault("metadata", {})
        meta["labels"] = {**(meta.get("labels") or {}), label: "<generated>"}
        finalizers = list(meta.get("finalizers") or [])
        if finalizer not in finalizers:
            finalizers.append(finalizer)
        meta["finalizers"] = finalizers
    return out
