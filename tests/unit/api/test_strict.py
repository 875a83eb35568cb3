"""Unknown fields refused as kubectl refuses them (``--validate``), with where they are."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fleetsched.api.load import UnknownFieldError, load_text
from fleetsched.api.policy import PropagationPolicy
from fleetsched.api.strict import normalize_mode, render, unknown_fields
from fleetsched.api.work import ResourceBinding
from fleetsched.api.yamlload import iter_documents, position_of
from fleetsched.cli import main

ROOT = Path(__file__).resolve().parents[3]
POLICY = """\
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: web
  namespace: shop
  labels: {anything: goes}
spec:
  resourceSelectors:
  - apiVersion: apps/v1
    kind: Deployment
    name: web
  placement:
    clusterAffinity:
      clusterNames: [m1]
"""


def test_a_declared_object_has_no_unknown_field() -> None:
    doc = next(d for _, d in iter_documents(POLICY, "p.yaml"))
    assert unknown_fields(doc, PropagationPolicy) == []


@pytest.mark.parametrize(
    ("old", "new", "path"),
    [
        ("  placement:", "  placment:", "spec.placment"),
        ("    kind: Deployment", "    kindd: Deployment", "spec.resourceSelectors[0].kindd"),
        ("      clusterNames: [m1]", "      clusterNamez: [m1]",
         "spec.placement.clusterAffinity.clusterNamez"),
        ("  namespace: shop", "  namspace: shop", "metadata.namspace"),
        ("spec:", "spex: {}\nspec:", "spex"),
    ],
)
def test_an_unknown_field_is_refused_with_kubectls_words_and_its_place(old: str, new: str, path: str) -> None:
    text = POLICY.replace(old, new, 1)
    with pytest.raises(UnknownFieldError) as caught:
        load_text(text, filename="p.yaml")
    message = str(caught.value)
    assert message.endswith(f'strict decoding error: unknown field "{path}"'), message
    line = next(i for i, row in enumerate(text.splitlines(), 1) if new.splitlines()[0] in row)
    assert re.match(rf"^p\.yaml: document 1 \(line {line}, column \d+\): ", message), message


def test_every_unknown_field_is_named() -> None:
    text = POLICY.replace("  placement:", "  placment:")
    text = text.replace("    kind: Deployment", "    kindd: Deployment")
    with pytest.raises(UnknownFieldError) as caught:
        load_text(text, filename="p.yaml")
    assert str(caught.value).endswith(
        'unknown field "spec.resourceSelectors[0].kindd", unknown field "spec.placment"'), caught.value


def test_warn_goes_on_and_says_so_and_ignore_prunes() -> None:
    text = POLICY.replace("  placement:", "  placment:")
    warnings: list[str] = []
    result = load_text(text, filename="p.yaml", validate="warn", warn=warnings.append)
    assert len(result.policies) == 1 and result.policies[0].spec.placement is None
    assert warnings == ['p.yaml: document 1: strict decoding error: unknown field "spec.placment" '
                        "(ignored: --validate=warn)"]
    assert len(load_text(text, filename="p.yaml", validate="ignore").policies) == 1


def test_free_form_values_and_maps_are_not_checked() -> None:
    binding = {
        "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
        "metadata": {"name": "b", "namespace": "n", "annotations": {"x": "y"}},
        "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "b"},
                 "replicaRequirements": {"resourceRequest": {"example.com/gpu": "1"}}},
        "status": {"aggregatedStatus": [{"clusterName": "m1", "status": {"readyReplicas": 1, "any": {}}}]},
    }
    assert unknown_fields(binding, ResourceBinding) == []
    binding["status"]["aggregatedStatus"][0]["healthy"] = True
    assert unknown_fields(binding, ResourceBinding) == [("status", "aggregatedStatus", 0, "healthy")]


def test_plain_kinds_are_checked_at_their_top_level_and_metadata() -> None:
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "lables": {}},
                  "spec": {"anything": 1}, "specs": {}}
    assert unknown_fields(deployment, None) == [("specs",), ("metadata", "lables")]
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {}, "spec": {}}
    assert unknown_fields(config_map, None) == [("spec",)]


def test_validate_takes_kubectls_values() -> None:
    assert [normalize_mode(v) for v in ("true", "Strict", "warn", "false", "ignore")] == [
        "strict", "strict", "warn", "ignore", "ignore"]
    with pytest.raises(ValueError, match="must be one of strict, warn, ignore"):
        normalize_mode("yes")


def test_a_position_inside_a_list_document() -> None:
    text = "apiVersion: v1\nkind: List\nitems:\n- kind: A\n  spec:\n    x: 1\n"
    assert position_of(text, 1, ("items", 0, "spec", "x")) == (6, 5)
    assert position_of(text, 1, ("items", 1)) is None
    assert position_of(text, 2, ("items",)) is None


# Every example simulate reads, with one key misspelled: kubectl's words, exit 2; warn: goes on.
EXAMPLES = [
    ("examples/fleet.yaml", ()),
    ("examples/gpu-fleet.yaml", ()),
    ("examples/policies.yaml", ("examples/fleet.yaml",)),
    ("examples/cluster-policies.yaml", ("examples/fleet.yaml",)),
    ("examples/burst.yaml", ("examples/fleet.yaml",)),
    ("examples/what-if/checkout-eu-clouds.yaml", ("examples/fleet.yaml",)),
    ("examples/plugins/fleet.yaml", ()),
    ("examples/plugins/pool-fleet.yaml", ()),
]


# Every example estimate reads, and every SchedulerConfiguration example (through config validate).
ESTIMATE_EXAMPLES = ["examples/estimate/member.yaml"]
CONFIG_EXAMPLES = ["examples/binpack-config.yaml", "examples/plugins/cost-tenant-config.yaml",
                   "examples/plugins/pool-config.yaml"]


def test_every_example_file_is_replayed_with_a_typo() -> None:
    shipped = {str(p.relative_to(ROOT)) for p in (ROOT / "examples").rglob("*.yaml")}
    assert shipped == {e for e, _ in EXAMPLES} | set(ESTIMATE_EXAMPLES) | set(CONFIG_EXAMPLES)


def _under(doc: object, at: tuple[str | int, ...]) -> object:
    for step in at:
        if isinstance(doc, dict):
            doc = doc.get(step)
        elif isinstance(doc, list) and isinstance(step, int) and step < len(doc):
            doc = doc[step]
        else:
            return None
    return doc


def _misspelled(
    path: Path, tmp_path: Path, at: tuple[str | int, ...] = ("spec",)
) -> tuple[Path, str, int, str]:
    """A copy of ``path`` whose first document with a mapping at ``at`` has the last key there (never
    a required one) misspelled with an ``x`` added: the copy, the field's path, its document, and
    where the key is (``line L, column C``)."""
    text = path.read_text()
    number, doc = next((n, d) for n, d in iter_documents(text, str(path)) if isinstance(_under(d, at), dict))
    key = list(_under(doc, at))[-1]  # type: ignore[call-overload]
    position = position_of(text, number, (*at, key))
    assert position is not None
    lines = text.splitlines(keepends=True)
    row, column = position
    lines[row - 1] = lines[row - 1][: column - 1] + lines[row - 1][column - 1:].replace(key, key + "x", 1)
    out = tmp_path / path.name
    out.write_text("".join(lines))
    return out, render((*at, f"{key}x")), number, f"line {row}, column {column}"


@pytest.mark.parametrize(("example", "beside"), EXAMPLES)
def test_simulate_refuses_a_misspelled_key_in_every_example(
    example: str, beside: tuple[str, ...], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    typo, field, number, _ = _misspelled(ROOT / example, tmp_path)
    others = [str(ROOT / b) for b in beside]
    assert main(["simulate", *others, str(typo)]) == 2
    _, err = capsys.readouterr()
    assert err.count("\n") == 1, err
    assert f"{typo}: document {number} (line " in err and f'unknown field "{field}"' in err, err
    assert main(["simulate", *others, str(typo), "--validate=warn"]) == 0
    _, err = capsys.readouterr()
    assert f'warning: {typo}: document {number}: strict decoding error: unknown field "{field}"' in err, err


@pytest.mark.parametrize("example", ESTIMATE_EXAMPLES)
def test_estimate_refuses_a_misspelled_key_in_every_example(
    example: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    typo, field, number, where = _misspelled(ROOT / example, tmp_path)
    assert main(["estimate", str(typo)]) == 2
    out, err = capsys.readouterr()
    assert (out, err) == ("", f"fleetsched estimate: {typo}: document {number} ({where}): "
                              f'strict decoding error: unknown field "{field}"\n')
    assert main(["estimate", str(typo), "--validate=warn"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("[") and err == (
        f'warning: {typo}: document {number}: strict decoding error: unknown field "{field}" '
        "(ignored: --validate=warn)\n"), err


@pytest.mark.parametrize("example", CONFIG_EXAMPLES)
@pytest.mark.parametrize("at", [(), ("profiles", 0)], ids=["top level", "nested"])
def test_config_validate_refuses_a_misspelled_key_in_every_example(
    example: str, at: tuple[str | int, ...], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The scheduler's own file has no --validate: kube-scheduler refuses an unknown field in its
    configuration, and ``config validate`` checks what start-up would refuse."""
    typo, field, _, where = _misspelled(ROOT / example, tmp_path, at)
    assert main(["config", "validate", str(typo)]) == 2
    out, err = capsys.readouterr()
    assert (out, err) == ("", f"fleetsched config validate: {typo} ({where}): "
                              f'strict decoding error: unknown field "{field}"\n')
    # and the example as shipped is valid
    assert main(["config", "validate", str(ROOT / example)]) == 0
    capsys.readouterr()
