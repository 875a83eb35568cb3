"""What-if's pure part: the overlay of files on the live state, which live bindings are derived
again, and the comparison binding by binding with totals per cluster."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest

from fleetsched.cli import main
from fleetsched.live.diff import ObjectKey, Placement, compare, object_key, overlay, text_lines, to_schedule
from fleetsched.live.state import parse_binding_ref

ROOT = Path(__file__).resolve().parents[3]


def binding(
    name: str,
    clusters: dict[str, int] | None,
    *,
    scheduled: bool | None = True,
    reason: str = "Success",
    kind: str = "ResourceBinding",
    owner: str | None = None,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if kind == "ResourceBinding":
        metadata["namespace"] = "shop"
    if owner is not None:
        metadata["ownerReferences"] = [{"kind": "Deployment", "name": owner, "controller": True}]
    out: dict[str, Any] = {"apiVersion": "work.karmada.io/v1alpha2", "kind": kind, "metadata": metadata,
                           "spec": {}}
    if clusters is not None:
        out["spec"]["clusters"] = [{"name": n, "replicas": r} for n, r in clusters.items()]
    if scheduled is not None:
        out["status"] = {"conditions": [{"type": "Scheduled", "status": str(scheduled), "reason": reason}]}
    return out


def obj(kind: str, name: str, namespace: str | None = None, **fields: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    return {"kind": kind, "metadata": metadata, **fields}


def test_overlay_replaces_in_place_and_appends_new_objects() -> None:
    live = [obj("Cluster", "m1", spec={"a": 1}), obj("PropagationPolicy", "p", "shop", spec={"v": 1})]
    changes = [obj("PropagationPolicy", "p", "shop", spec={"v": 2}), obj("Cluster", "m2"),
               obj("Cluster", "m1", "ignored-namespace", spec={"a": 3})]
    out = overlay(live, changes)
    assert [object_key(o) for o in out] == [
        ObjectKey("Cluster", "", "m1"),
        ObjectKey("PropagationPolicy", "shop", "p"),
        ObjectKey("Cluster", "", "m2"),
    ]
    assert out[0]["spec"] == {"a": 3} and out[1]["spec"] == {"v": 2}
    assert live[1]["spec"] == {"v": 1}  # the live list is left as it was


def test_a_namespaced_object_without_namespace_is_in_default() -> None:
    out = overlay([obj("Deployment", "web", "default", spec={"replicas": 1})],
                  [obj("Deployment", "web", spec={"replicas": 5})])
    assert len(out) == 1 and out[0]["spec"] == {"replicas": 5}


def test_bindings_a_template_of_the_state_controls_are_derived_again() -> None:
    policy = obj("PropagationPolicy", "p", "shop")
    derived = binding("web-deployment", {"m1": 1}, owner="web")
    orphan = binding("old-deployment", {"m1": 1}, owner="old")  # its Deployment is gone: kept
    given = binding("api", {"m1": 1})
    template = obj("Deployment", "web", "shop")
    assert to_schedule([policy, derived, orphan, given, template]) == [policy, orphan, given, template]
    # without any policy nothing would be derived: every binding stays
    assert to_schedule([derived, given, template]) == [derived, given, template]


@pytest.mark.parametrize(
    ("before", "after", "changed", "becomes"),
    [
        pytest.param({"m1": 2}, {"m1": 2}, False, False, id="same placement"),
        pytest.param({"m1": 2}, {"m2": 2}, True, False, id="moved"),
        pytest.param({"m1": 2, "m2": 2}, {"m1": 1, "m2": 3}, True, False, id="replicas moved"),
    ],
)
def test_compare_lists_a_binding_when_its_placement_differs(
    before: dict[str, int], after: dict[str, int], changed: bool, becomes: bool
) -> None:
    result = compare([binding("web", before)], [binding("web", after)])
    assert bool(result.changes) is changed
    assert result.compared == 1
    assert [c.becomes_unschedulable for c in result.changes] == ([becomes] if changed else [])


def test_becoming_unschedulable_is_scheduled_before_and_not_after() -> None:
    before = [binding("a", {"m1": 1}), binding("b", None, scheduled=False, reason="NoClusterFit"),
              binding("c", {"m1": 1})]
    after = [binding("a", None, scheduled=False, reason="NoClusterFit"),
             binding("b", None, scheduled=False, reason="Unschedulable"),  # was already: changed only
             binding("c", {"m1": 1}),
             binding("d", None, scheduled=False, reason="NoClusterFit")]  # new and unschedulable
    result = compare(before, after)
    assert [(c.key.name, c.becomes_unschedulable) for c in result.changes] == [
        ("a", True), ("b", False), ("d", True)
    ]
    assert [c.key.name for c in result.unschedulable] == ["a", "d"]
    assert result.to_json()["becomeUnschedulable"] == ["ResourceBinding shop/a", "ResourceBinding shop/d"]


def test_a_binding_that_becomes_unschedulable_is_told_the_mistake() -> None:
    """Issue 29: ``clusterNames: [aws-us-east1]`` (no such Cluster) in a what-if file: beside
    Karmada's reason, the name that names nothing and the nearest Cluster's."""
    from fleetsched.scheduler.types import ClusterInfo

    wrong = binding("web", None, scheduled=False, reason="NoClusterFit")
    wrong["spec"]["placement"] = {"clusterAffinity": {"clusterNames": ["aws-us-east1"]}}
    reported = frozenset({("apps/v1", "Deployment")})
    clusters = [ClusterInfo("aws-us-east-1", api_enablements=reported), ClusterInfo("new-one")]
    result = compare([binding("web", {"aws-us-east-1": 3})], [wrong], clusters=clusters)
    [change] = result.changes
    # the Cluster without status is no candidate of this placement: not named
    assert change.hints == (
        'spec.placement.clusterAffinity.clusterNames[0]: "aws-us-east1" names no Cluster '
        '(did you mean "aws-us-east-1"?)',
    )
    lines = text_lines(result)
    assert lines[lines.index("WHY (beside the reason: what the placement names that is not there)") + 1] == (
        'RB shop/web: spec.placement.clusterAffinity.clusterNames[0]: "aws-us-east1" names no Cluster '
        '(did you mean "aws-us-east-1"?)'
    )
    assert result.to_json()["changed"][0]["hints"] == list(change.hints)
    # a binding that stays scheduled is told nothing
    moved = compare([binding("web", {"a": 1})], [binding("web", {"b": 1})], clusters=clusters)
    assert not moved.changes[0].hints


def test_a_binding_no_profile_serves_is_not_unschedulable() -> None:
    result = compare([binding("a", {"m1": 1})], [binding("a", {"m1": 1}, scheduled=None)])
    assert len(result.changes) == 1 and not result.unschedulable
    assert result.changes[0].after == Placement(None, "", (("m1", 1),))


def test_totals_per_cluster_sum_every_binding_before_and_after() -> None:
    before = [
        binding("a", {"m1": 2, "m2": 2}),
        binding("b", {"m1": 1}),
        binding("x", {"m3": 1}, kind="ClusterResourceBinding"),
    ]
    after = [binding("a", {"m2": 4}), binding("b", {"m1": 1})]
    result = compare(before, after)
    assert result.totals == (("m1", 3, 1), ("m2", 2, 4), ("m3", 1, 0))
    assert [c.key for c in result.changes] == [
        ObjectKey("ClusterResourceBinding", "", "x"), ObjectKey("ResourceBinding", "shop", "a")
    ]
    assert result.changes[0].after is None  # gone after
    lines = text_lines(result)
    assert lines[0] == "2 of 3 bindings would change."
    assert lines[2].split() == ["KIND", "NAMESPACE", "NAME", "BEFORE", "AFTER"]
    assert lines[3].split() == ["CRB", "-", "x", "m3:1", "<none>"]
    assert lines[4].split() == ["RB", "shop", "a", "m1:2,", "m2:2", "m2:4"]
    assert [line.split() for line in lines[6:]] == [
        ["CLUSTER", "BEFORE", "AFTER", "CHANGE"], ["m1", "3", "1", "-2"], ["m2", "2", "4", "+2"],
        ["m3", "1", "0", "-1"],
    ]
    assert json.loads(json.dumps(result.to_json()))["clusters"][0] == {"name": "m1", "before": 3, "after": 1}


def test_nothing_changes() -> None:
    result = compare([binding("a", {"m1": 1})], [binding("a", {"m1": 1})])
    assert text_lines(result) == ["0 of 1 bindings would change."]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("rb/shop/web", ("ResourceBinding", "shop", "web"), id="rb"),
        pytest.param("resourcebinding/shop/web", ("ResourceBinding", "shop", "web"), id="kind name"),
        pytest.param("crb/web", ("ClusterResourceBinding", "", "web"), id="crb"),
    ],
)
def test_binding_references(text: str, expected: tuple[str, str, str]) -> None:
    assert parse_binding_ref(text) == expected


@pytest.mark.parametrize("text", ["rb/web", "crb/a/b", "pod/x/y", "rb//web", "rb/shop/web/x"])
def test_a_bad_binding_reference_is_refused(text: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ValueError, match="expected rb/NAMESPACE/NAME or crb/NAME"):
        parse_binding_ref(text)
    assert main(["explain", text]) == 2
    assert capsys.readouterr().err.startswith("fleetsched explain: ")


def test_kubectl_plugin_is_installed_by_pip() -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["kubectl-fleetsched"] == scripts["fleetsched"] == "fleetsched.cli:main"


def test_what_if_refuses_a_file_object_without_a_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "change.yaml"
    path.write_text("kind: Cluster\nmetadata: {}\n")
    assert main(["what-if", "-f", str(path), "--kubeconfig", str(tmp_path / "none")]) == 2
    assert capsys.readouterr().err.strip() == (
        f"fleetsched what-if: {path}: document 1: kind and metadata.name: Required value"
    )


def test_what_if_reads_lists_and_names_the_bad_item(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from fleetsched.live.command import _read_changes

    path = tmp_path / "changes.yaml"
    path.write_text("apiVersion: v1\nkind: List\nitems:\n- {kind: Cluster, metadata: {name: m1}}\n"
                    "---\nkind: Cluster\nmetadata: {name: m2}\n")
    assert [object_key(o).name for o in _read_changes([str(path)])] == ["m1", "m2"]
    path.write_text("apiVersion: v1\nkind: List\nitems:\n- {kind: Cluster, metadata: {name: m1}}\n- 7\n")
    assert main(["what-if", "-f", str(path), "--kubeconfig", str(tmp_path / "none")]) == 2
    assert capsys.readouterr().err.strip() == (
        f"fleetsched what-if: {path}: document 1, items[1]: must be an object"
    )


def test_what_if_files_are_checked_as_simulate_checks_them(tmp_path: Path) -> None:
    from fleetsched.live.command import _read_changes, _Refused

    policy = (
        "apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\n"
        "metadata: {name: web, namespace: shop}\n"
        "spec:\n  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: web}]\n"
        "  placement:\n    replicaScheduling: {replicaSchedulingType: Divided}\n"
    )
    path = tmp_path / "typo.yaml"
    typo = policy.replace("  placement:", "  placment:")
    path.write_text("apiVersion: v1\nkind: List\nitems: []\n---\n" + typo)
    with pytest.raises(_Refused, match=rf'^{path}: document 2 \(line 10, column 3\): strict decoding error: '
                                       r'unknown field "spec.placment"$'):
        _read_changes([str(path)])
    assert len(_read_changes([str(path)], "ignore")) == 1
    path.write_text(policy.replace("Divided", "Divded"))
    with pytest.raises(_Refused, match=rf"^{path}: document 1 \(line 7, column 25\): spec.placement."
                                       "replicaScheduling.replicaSchedulingType: Unsupported value"):
        _read_changes([str(path)])


def test_with_a_move_budget_what_if_prints_the_steps() -> None:
    from fleetsched.scheduler.stepping import IntOrPercent, MoveBudget

    before, after = binding("web", {"m1": 40, "m2": 60}), binding("web", {"m2": 70, "m3": 30})
    after["spec"]["replicas"] = 100
    budget = MoveBudget(max_unavailable=IntOrPercent(10))
    result = compare([before], [after], budget=budget)
    steps = [dict(step) for step in result.changes[0].steps]
    assert steps == [{"m1": 30, "m2": 70}, {"m1": 20, "m2": 70, "m3": 10}, {"m1": 10, "m2": 70, "m3": 20},
                     {"m2": 70, "m3": 30}]
    lines = text_lines(result)
    at = lines.index("RB shop/web: 4 steps")
    assert lines[at + 1 : at + 5] == [
        "  1. m1:30, m2:70", "  2. m1:20, m2:70, m3:10", "  3. m1:10, m2:70, m3:20", "  4. m2:70, m3:30"
    ]
    assert result.to_json()["changed"][0]["steps"][-1] == [{"name": "m2", "replicas": 70},
                                                           {"name": "m3", "replicas": 30}]
    # the binding's own annotation; and without any budget, no steps (Karmada's single write)
    after["metadata"]["annotations"] = {"scheduler.fleetsched.io/max-surge": "40"}
    assert len(compare([before], [after]).changes[0].steps) == 2
    del after["metadata"]["annotations"]
    plain = compare([before], [after])
    assert plain.changes[0].steps == () and "steps" not in plain.to_json()["changed"][0]
