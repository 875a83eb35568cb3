"""What ``simulate --explain`` and the live explanation annotation say about a profile's scores."""

from __future__ import annotations

import json

from fleetsched.controller.scheduler.writer import explanation
from fleetsched.scheduler.framework.profile import ExtensionPoint
from fleetsched.scheduler.pipeline import Scheduler
from fleetsched.scheduler.snapshot import Snapshot
from fleetsched.simulate import explain

from ..builders import a_binding, a_cluster
from .test_runtime import Exploding, FakeExtender, LabelScore, NormalizedLabelScore, profile_with, registry_of

FLEET = [
    a_cluster("a").labeled(x="1", y="50").free(10).build(),
    a_cluster("b").labeled(x="4", y="10").free(10).build(),
]
OBJ = {"kind": "ResourceBinding", "spec": {"replicas": 1}}


def test_explain_shows_raw_normalised_weight_and_weighted_sum_and_the_profile() -> None:
    registry = registry_of(NormalizedLabelScore("X", "x"), LabelScore("Y", "y"), Exploding())
    profile = profile_with(
        {ExtensionPoint.SCORE: [("X", 2), ("Y", 3)], ExtensionPoint.FILTER: ["Exploding"]},
        scheduler_name="gpu-binpack",
        ignorable_plugins=frozenset({"Exploding"}),
    )
    extender = FakeExtender("https://cost", scores={"a": 2}, weight=5)
    scheduler = Scheduler(profile=profile, registry=registry, extenders=[extender])
    binding = a_binding().replicas(1).duplicated()
    result = scheduler.schedule(binding.build(), binding.status(), Snapshot(FLEET))
    text = explain(result, OBJ)
    assert "  profile: gpu-binpack" in text
    assert "a: score=300 (X=1->25 x2=50, Y=50 x3=150, extender https://cost=2->20 x5=100)" in text
    assert "b: score=230 (X=4->100 x2=200, Y=10 x3=30, extender https://cost=0 x5=0)" in text
    assert "skipped (ignorable) Exploding at Filter: RuntimeError: boom" in text
    annotation = json.loads(explanation(result))
    assert annotation["profile"] == "gpu-binpack"
    assert annotation["groups"][0]["scores"] == {"a": 300, "b": 230}
    assert annotation["groups"][0]["skipped"] == ["Exploding@Filter"]


def test_the_default_profile_keeps_its_explanations() -> None:
    binding = a_binding().replicas(1).duplicated()
    result = Scheduler().schedule(binding.build(), binding.status(), Snapshot(FLEET))
    text = explain(result, OBJ)
    assert "profile:" not in text
    assert "a: score=0 (ClusterAffinity=0, ClusterLocality=0) allocatable=10 available=10" in text
    annotation = json.loads(explanation(result))
    assert set(annotation) == {"strategy", "mode", "groups"}
    assert "scores" not in annotation["groups"][0]
