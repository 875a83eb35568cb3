"""The chart's values that chart users expect of any chart (issue 29, item 4), on ``helm template``.

Resources merge key by key; the image is required; pod settings, ServiceAccount settings, feature
gates, PodDisruptionBudgets and monitoring labels reach the objects they name; the cluster-scoped
objects' names are release-scoped (fullnameOverride, nameOverride), so two releases do not collide.
What the API server says of these renderings: tests/e2e/test_helm_chart.py.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.helm import CHART, CI_VALUES, ROOT, helm, template, template_text

Obj = dict[str, Any]
CLUSTER_SCOPED = ("ClusterRole", "ClusterRoleBinding", "MutatingWebhookConfiguration",
                  "ValidatingWebhookConfiguration", "ValidatingAdmissionPolicy",
                  "ValidatingAdmissionPolicyBinding")
# every Deployment of a standalone release with the descheduler and one estimator
EVERYTHING = ("descheduler.enabled=true", "estimators.members[0].name=member1")
COMPONENTS = {"fleetsched-scheduler": "scheduler", "fleetsched-descheduler": "descheduler",
              "fleetsched-controller": "controller", "fleetsched-webhook": "webhook",
              "karmada-scheduler-estimator-member1": "estimators"}


def _deployments(objs: list[Obj]) -> dict[str, Obj]:
    return {o["metadata"]["name"]: o for o in objs if o["kind"] == "Deployment"}


def _container(deployment: Obj) -> Obj:
    return dict(deployment["spec"]["template"]["spec"]["containers"][0])


def test_default_resources_are_the_manifests() -> None:
    """values.yaml shows the manifests' resources (so a user sees and merges into them)."""
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    rendered = _deployments(template(*EVERYTHING))
    for name, component in COMPONENTS.items():
        assert values[component]["resources"] == _container(rendered[name])["resources"], name
    files = {"scheduler": "scheduler/workload/deployment.yaml", "controller": "controller/deployment.yaml",
             "descheduler": "descheduler/workload/deployment.yaml", "webhook": "webhook/base/deployment.yaml",
             "estimators": "estimator/template.yaml"}
    for component, path in files.items():
        doc = next(d for d in yaml.safe_load_all((ROOT / "manifests" / path).read_text())
                   if d and d["kind"] == "Deployment")
        assert _container(doc)["resources"] == values[component]["resources"], path


def test_a_resource_value_merges_with_the_defaults() -> None:
    objs = _deployments(template("scheduler.resources.limits.memory=2Gi", "scheduler.resources.limits.cpu=2",
                                 "controller.resources.requests.cpu=null"))
    assert _container(objs["fleetsched-scheduler"])["resources"] == {
        "requests": {"cpu": "200m", "memory": "256Mi"}, "limits": {"cpu": 2, "memory": "2Gi"}}
    assert _container(objs["fleetsched-controller"])["resources"] == {
        "requests": {"memory": "256Mi"}, "limits": {"memory": "1Gi"}}


def test_the_image_is_required_and_tagged_with_the_app_version() -> None:
    done = template_text("image.repository=", check=False)
    assert done.returncode != 0
    assert "image.repository: required: fleetsched publishes no image" in done.stderr
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert chart["appVersion"] == version
    images = {_container(d)["image"] for d in _deployments(template(*EVERYTHING)).values()}
    assert images == {f"registry.example/fleetsched:{version}"}


def test_pod_settings_reach_every_pod() -> None:
    objs = _deployments(template(
        *EVERYTHING, "imagePullSecrets[0]=regcred", "imagePullSecrets[1].name=mirror",
        "podAnnotations.team=fleet", "podLabels.tier=control", "podLabels.app=hijacked",
        "nodeSelector.pool=system", "tolerations[0].key=dedicated", "tolerations[0].operator=Exists",
        "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
        ".nodeSelectorTerms[0].matchExpressions[0].key=pool",
        "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
        ".nodeSelectorTerms[0].matchExpressions[0].operator=Exists",
        "priorityClassName=system-cluster-critical",
        "scheduler.priorityClassName=fleet-critical", "scheduler.podAnnotations.extra=1",
        "scheduler.podLabels.shard=a", "scheduler.nodeSelector.zone=a",
        "webhook.tolerations[0].key=webhook", "webhook.tolerations[0].operator=Exists",
    ))
    assert sorted(objs) == sorted(COMPONENTS)
    for name, deployment in objs.items():
        pod = deployment["spec"]["template"]
        spec = pod["spec"]
        assert spec["imagePullSecrets"] == [{"name": "regcred"}, {"name": "mirror"}], name
        assert pod["metadata"]["annotations"]["team"] == "fleet", name
        # the selector's label stays the manifests'
        selector = deployment["spec"]["selector"]["matchLabels"]
        assert pod["metadata"]["labels"]["app"] == selector["app"] == name
        assert pod["metadata"]["labels"]["tier"] == "control", name
        assert spec["nodeSelector"]["pool"] == "system", name
        assert spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"], name
        want = "fleet-critical" if name == "fleetsched-scheduler" else "system-cluster-critical"
        assert spec["priorityClassName"] == want, name
        keys = [t["key"] for t in spec["tolerations"]]
        assert keys == (["webhook"] if name == "fleetsched-webhook" else ["dedicated"]), name
    scheduler = objs["fleetsched-scheduler"]["spec"]["template"]
    # the manifests' spreading and scrape annotations stay beside the values
    assert scheduler["spec"]["affinity"]["podAntiAffinity"]
    assert scheduler["metadata"]["annotations"]["prometheus.io/scrape"] == "true"
    assert scheduler["metadata"]["annotations"]["extra"] == "1"
    assert scheduler["metadata"]["labels"]["shard"] == "a"
    assert scheduler["spec"]["nodeSelector"] == {"pool": "system", "zone": "a"}
    assert "shard" not in objs["fleetsched-controller"]["spec"]["template"]["metadata"]["labels"]


def test_a_component_affinity_key_replaces_the_manifests() -> None:
    objs = _deployments(template("scheduler.affinity.podAntiAffinity=null",
                                 "controller.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution"
                                 "[0].topologyKey=zone"))
    controller = objs["fleetsched-controller"]["spec"]["template"]["spec"]["affinity"]
    assert controller == {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": "zone"}]}}


def test_service_account_settings() -> None:
    objs = template("scheduler.serviceAccount.create=false", "scheduler.serviceAccount.name=sched-sa",
                    "controller.serviceAccount.name=policy-sa",
                    "controller.serviceAccount.annotations.iam\\.example/role=fleet",
                    "sharding.enabled=true", "controller.propagateSecrets=true")
    accounts = {o["metadata"]["name"]: o for o in objs if o["kind"] == "ServiceAccount"}
    assert sorted(accounts) == ["policy-sa"]
    assert accounts["policy-sa"]["metadata"]["annotations"] == {"iam.example/role": "fleet"}
    deployments = _deployments(objs)
    for name, account in (("fleetsched-scheduler", "sched-sa"), ("fleetsched-controller", "policy-sa")):
        assert deployments[name]["spec"]["template"]["spec"]["serviceAccountName"] == account
    subjects = {(o["kind"], o["metadata"]["name"]): [s["name"] for s in o["subjects"]]
                for o in objs if o["kind"] in ("RoleBinding", "ClusterRoleBinding")}
    for (kind, name), names in subjects.items():
        want = "sched-sa" if name.startswith("fleetsched-scheduler") else "policy-sa"
        assert names == [want], (kind, name)
    assert len([k for k in subjects if k[1].startswith("fleetsched-controller")]) == 4
    policy = next(o for o in objs if o["kind"] == "ValidatingAdmissionPolicy")
    [condition] = policy["spec"]["matchConditions"]
    assert "endsWith(':policy-sa')" in condition["expression"]
    assert "fleetsched-controller'" not in condition["expression"]


def _cluster_scoped(objs: list[Obj]) -> set[tuple[str, str]]:
    return {(o["kind"], o["metadata"]["name"]) for o in objs if o["kind"] in CLUSTER_SCOPED}


@pytest.mark.parametrize(("release", "sets", "prefix"), [
    pytest.param("fleetsched", (), "fleetsched-", id="release fleetsched: the manifests' names"),
    pytest.param("fleetsched-team-b", (), "fleetsched-team-b-", id="release containing the chart name"),
    pytest.param("team-b", (), "team-b-fleetsched-", id="other release"),
    pytest.param("team-b", ("nameOverride=sched",), "team-b-sched-", id="nameOverride"),
    pytest.param("team-b", ("fullnameOverride=fs",), "fs-", id="fullnameOverride"),
])
def test_cluster_scoped_names_are_release_scoped(release: str, sets: tuple[str, ...], prefix: str) -> None:
    objs = template(*EVERYTHING, "controller.propagateRBAC=true", *sets, namespace="team-b", release=release)
    names = _cluster_scoped(objs)
    assert len(names) == 12
    assert all(name.startswith(prefix) for _, name in names), names
    roles = {name for kind, name in names if kind == "ClusterRole"}
    for obj in objs:
        if obj["kind"] == "ClusterRoleBinding":
            assert obj["roleRef"]["name"] in roles
        if obj["kind"] == "ValidatingAdmissionPolicyBinding":
            assert ("ValidatingAdmissionPolicy", obj["spec"]["policyName"]) in names
    # namespaced objects keep the manifests' names in the release's namespace
    assert sorted(_deployments(objs)) == sorted(COMPONENTS)


def test_two_releases_share_no_cluster_scoped_name() -> None:
    first = template(*EVERYTHING, namespace="team-a", release="team-a")
    second = template(*EVERYTHING, namespace="team-b", release="team-b")
    assert _cluster_scoped(first) and not _cluster_scoped(first) & _cluster_scoped(second)


def test_feature_gates_reach_the_commands_that_take_them() -> None:
    objs = _deployments(template(*EVERYTHING, "featureGates.SchedulingOvercommitProtection=true",
                                 "featureGates.PriorityBasedScheduling=false", "scheduler.extraArgs={--v=4}"))
    flag = "--feature-gates=PriorityBasedScheduling=false,SchedulingOvercommitProtection=true"
    for name, deployment in objs.items():
        args = _container(deployment)["args"]
        if name == "fleetsched-descheduler":
            assert not [a for a in args if a.startswith("--feature-gates")]
        else:
            assert flag in args, name
    assert _container(objs["fleetsched-scheduler"])["args"][-2:] == [flag, "--v=4"]
    plain = _deployments(template(*EVERYTHING))
    assert not [a for d in plain.values() for a in _container(d)["args"] if a.startswith("--feature-gates")]


@pytest.mark.parametrize(("sets", "budget"), [
    pytest.param((), {"maxUnavailable": 1}, id="maxUnavailable"),
    pytest.param(("podDisruptionBudget.minAvailable=50%",), {"minAvailable": "50%"}, id="minAvailable"),
])
def test_pod_disruption_budgets(sets: tuple[str, ...], budget: Obj) -> None:
    objs = template(*EVERYTHING, "podDisruptionBudget.enabled=true", *sets)
    budgets = {o["metadata"]["name"]: o for o in objs if o["kind"] == "PodDisruptionBudget"}
    deployments = _deployments(objs)
    assert sorted(budgets) == sorted(deployments)
    for name, pdb in budgets.items():
        selector = deployments[name]["spec"]["selector"]
        assert pdb["spec"] == {"selector": {"matchLabels": selector["matchLabels"]}, **budget}
        assert pdb["metadata"]["namespace"] == "fleetsched-system"
        assert pdb["metadata"]["labels"]["app.kubernetes.io/instance"] == "fleetsched"
    assert not [o for o in template(*EVERYTHING) if o["kind"] == "PodDisruptionBudget"]


def test_monitoring_labels_select_the_monitors() -> None:
    objs = template("monitoring.enabled=true", "monitoring.labels.release=kube-prometheus-stack")
    monitors = [o for o in objs if o["kind"] in ("ServiceMonitor", "PrometheusRule")]
    assert len(monitors) == 2
    for obj in monitors:
        assert obj["metadata"]["labels"]["release"] == "kube-prometheus-stack"
        assert obj["metadata"]["labels"]["app.kubernetes.io/part-of"] == "fleetsched"


@pytest.mark.parametrize("values", CI_VALUES, ids=lambda p: p.name)
def test_helm_lint_strict_passes_with_each_ci_values_file(values: Path) -> None:
    done = helm("lint", "--strict", str(CHART), "--values", str(values))
    assert "1 chart(s) linted, 0 chart(s) failed" in done.stdout


def _schema_paths(node: Obj, schema: Obj, prefix: str = "") -> set[str]:
    """The value paths values.schema.json describes (following its local $refs)."""
    if "$ref" in node:
        target: Any = schema
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = target
    paths = set()
    for key, child in node.get("properties", {}).items():
        path = f"{prefix}{key}"
        paths.add(path)
        paths |= _schema_paths(child, schema, f"{path}.")
    return paths


def _value_paths(node: Any, prefix: str = "") -> set[str]:
    paths = set()
    if isinstance(node, dict):
        for key, child in node.items():
            paths.add(f"{prefix}{key}")
            if key not in ("resources",):  # resource names are the user's (cpu, memory, ...)
                paths |= _value_paths(child, f"{prefix}{key}.")
    return paths


def test_the_schema_describes_every_value_and_no_other() -> None:
    schema = json.loads((CHART / "values.schema.json").read_text())
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    described = {p for p in _schema_paths(schema, schema) if p != "global"}
    given = _value_paths(values)
    # what an empty default leaves to the user: resource names, affinity kinds
    open_keys = {p for p in described if ".resources." in p or "affinity." in p}
    assert given == described - open_keys


@pytest.mark.parametrize(("value", "message"), [
    pytest.param("scheduler.replicaz=3", "at '/scheduler': additional properties 'replicaz' not allowed",
                 id="misspelt key"),
    pytest.param("scheduler.replicas=two", "at '/scheduler/replicas': got string, want integer", id="type"),
    pytest.param("image.pullPolicy=Sometimes", "at '/image/pullPolicy': value must be one of", id="enum"),
    pytest.param("featureGates.SchedulingOvercommitProtection=yes",
                 "at '/featureGates/SchedulingOvercommitProtection': got string, want boolean", id="gate"),
    pytest.param("imagePullSecrets[0].secret=regcred", "at '/imagePullSecrets/0'", id="pull secret"),
])
def test_the_schema_names_a_bad_value(value: str, message: str) -> None:
    done = template_text(value, check=False)
    assert done.returncode != 0
    assert message in done.stderr, done.stderr


def _readme_generator() -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location("gen_chart_readme", ROOT / "hack" / "gen_chart_readme.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_the_chart_readme_is_generated_from_values_yaml() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "hack" / "gen_chart_readme.py"), "--check"],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    readme = (CHART / "README.md").read_text()
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert "| `scheduler.resources` | object | " in readme
    assert '| `image.pullPolicy` | string | `"IfNotPresent"` | Every container' in readme
    assert len(re.findall(r"^\| `", readme, re.M)) == len(_readme_generator().rows(
        values, _readme_generator().documented((CHART / "values.yaml").read_text())))


def test_the_readme_generator_finds_drift_and_undocumented_values() -> None:
    gen = _readme_generator()
    readme = (CHART / "README.md").read_text()
    drifted = readme.replace("| Every container's imagePullPolicy. |", "| stale |")
    assert drifted != readme and gen.rendered(drifted) == readme
    text = "# -- documented\na: 1\nb:\n  # -- inner\n  c: []\nd: {e: 1}\n"
    with pytest.raises(ValueError, match=r"values.yaml: d.e has no `# --` comment"):
        gen.rows(yaml.safe_load(text), gen.documented(text))
    assert [r.key for r in gen.rows({"a": 1, "b": {"c": []}}, gen.documented(text))] == ["a", "b.c"]
