"""The webhook's Go field tables name exactly the fields the CRDs in crds/ allow.

The mutating patch drops keys the Go tables do not know (as Karmada's re-encoding does). If the
CRDs ever gained a field the tables lack, the webhook would silently delete it from every policy;
this test fails first.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from fleetsched.webhook import schema

CRDS = Path(__file__).resolve().parents[3] / "crds"


def crd_schema(name: str) -> dict[str, Any]:
    doc = yaml.safe_load((CRDS / name).read_text())
    return doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def mismatches(openapi: dict[str, Any], typ: Any, path: str) -> list[str]:
    if isinstance(typ, schema.Struct):
        properties = openapi.get("properties")
        if properties is None:
            return [f"{path}: CRD has no properties for Go struct {typ.go_name}"]
        ours = {f.json for f in typ.fields}
        problems = [f"{path}.{k}: in the CRD, not in the Go table" for k in sorted(set(properties) - ours)]
        problems += [f"{path}.{k}: in the Go table, not in the CRD" for k in sorted(ours - set(properties))]
        for f in typ.fields:
            if f.json in properties:
                problems += mismatches(properties[f.json], f.type, f"{path}.{f.json}")
        return problems
    if isinstance(typ, schema.Slice):
        return mismatches(openapi.get("items", {}), typ.elem, f"{path}[]")
    if isinstance(typ, schema.Map):
        return [] if "additionalProperties" in openapi else [f"{path}: CRD is not a map"]
    if isinstance(typ, schema.Scalar):
        expected = {"string": "string", "bool": "boolean", "int": "integer"}[typ.kind]
        actual = openapi.get("type")
        return [] if actual == expected else [f"{path}: CRD type {actual}, Go {typ.kind}"]
    return []


@pytest.mark.parametrize("crd", ["policy.karmada.io_propagationpolicies.yaml",
                                 "policy.karmada.io_clusterpropagationpolicies.yaml"])
def test_policy_spec_fields_match_the_crd(crd: str) -> None:
    assert mismatches(crd_schema(crd)["properties"]["spec"], schema.PROPAGATION_SPEC, "spec") == []


@pytest.mark.parametrize("crd", ["work.karmada.io_resourcebindings.yaml",
                                 "work.karmada.io_clusterresourcebindings.yaml"])
def test_binding_spec_fields_match_the_crd(crd: str) -> None:
    assert mismatches(crd_schema(crd)["properties"]["spec"], schema.BINDING_SPEC, "spec") == []
