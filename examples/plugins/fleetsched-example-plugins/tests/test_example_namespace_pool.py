"""ExampleNamespacePool through the public plugin API only: the pool comes from the binding's label,
else its namespace's (read through the Handle's lister); verdicts, key and the look-up counter."""

from __future__ import annotations

import dataclasses

import pytest
from fleetsched_example_plugins.namespace_pool import (
    LOOKUPS,
    ExampleNamespacePool,
    ExampleNamespacePoolArgs,
)

from fleetsched.plugin import (
    ClusterFacet,
    ClusterInfo,
    Code,
    DeclaresInputs,
    FilterContext,
    Listers,
    NamespaceInfo,
    PluginMetrics,
    SchedulingBinding,
)

POOL = "pool.example.com/name"


class Namespaces:
    """A lister of Namespaces as the scheduler gives one (``get``, ``list``), over a dict."""

    def __init__(self, labels: dict[str, dict[str, str]]) -> None:
        self.labels = labels

    def get(self, key: str) -> NamespaceInfo | None:
        found = self.labels.get(key)
        return None if found is None else NamespaceInfo(key, found)

    def list(self) -> tuple[NamespaceInfo, ...]:
        return tuple(NamespaceInfo(k, v) for k, v in sorted(self.labels.items()))


@dataclasses.dataclass
class Handle:
    listers: Listers
    metrics_registry: PluginMetrics = dataclasses.field(default_factory=PluginMetrics)
    profile_name: str = "default-scheduler"

    def clock(self) -> float:
        return 0.0

    def waiting_binding(self, key: str) -> None:
        return None


def plugin(namespaces: dict[str, dict[str, str]], key: str = POOL) -> tuple[ExampleNamespacePool, Handle]:
    handle = Handle(Listers(namespaces=Namespaces(namespaces)))
    return ExampleNamespacePool(ExampleNamespacePoolArgs(labelKey=key), handle), handle  # type: ignore[arg-type]


def ctx(namespace: str, labels: dict[str, str] | None = None) -> FilterContext:
    binding = SchedulingBinding(kind="ResourceBinding", name="web", namespace=namespace, labels=labels or {})
    return FilterContext(binding, "", frozenset(), is_workload=True)


def cluster(pool: str | None) -> ClusterInfo:
    return ClusterInfo(name="m", labels={} if pool is None else {POOL: pool})


def count(source: str) -> float:
    return LOOKUPS.labels(source)._value.get()


def test_the_namespace_label_picks_the_pool() -> None:
    pool, _ = plugin({"ml": {POOL: "gpu"}, "web": {}})
    assert pool.filter(ctx("ml"), cluster("gpu")).is_success
    other = pool.filter(ctx("ml"), cluster("cpu"))
    assert other.code is Code.UNSCHEDULABLE
    assert other.reasons == (f"cluster(s) not in pool {POOL}=gpu",)
    assert pool.filter(ctx("ml"), cluster(None)).is_rejection


def test_without_a_pool_every_cluster_fits() -> None:
    pool, _ = plugin({"web": {"team": "a"}})
    for namespace in ("web", "not-listed"):
        assert pool.filter(ctx(namespace), cluster("gpu")).is_success
        assert pool.filter(ctx(namespace), cluster(None)).is_success


def test_the_bindings_own_label_wins_over_its_namespaces() -> None:
    pool, _ = plugin({"ml": {POOL: "gpu"}})
    assert pool.filter(ctx("ml", {POOL: "cpu"}), cluster("cpu")).is_success
    assert pool.filter(ctx("ml", {POOL: "cpu"}), cluster("gpu")).is_rejection


def test_the_key_is_the_pool_read_once_per_attempt() -> None:
    namespaces = {"ml": {POOL: "gpu"}}
    pool, handle = plugin(namespaces)
    assert isinstance(pool, DeclaresInputs) and pool.cluster_inputs is ClusterFacet.LABELS
    attempt = ctx("ml")
    assert pool.binding_key(attempt) == "gpu"
    handle.listers.namespaces()  # the lister is live: a change is seen by the next attempt only
    namespaces["ml"] = {POOL: "cpu"}
    assert pool.filter(attempt, cluster("gpu")).is_success  # the verdict matches the key
    assert pool.binding_key(ctx("ml")) == "cpu"


def test_it_asks_for_the_namespace_lister_and_registers_its_counter() -> None:
    pool, handle = plugin({})
    assert "namespaces" in handle.listers.asked
    assert handle.metrics_registry.collectors() == (LOOKUPS,)
    before = {s: count(s) for s in ("binding", "namespace", "none")}
    pool2, _ = plugin({"ml": {POOL: "gpu"}})
    pool2.binding_key(ctx("ml", {POOL: "cpu"}))
    pool2.binding_key(ctx("ml"))
    attempt = ctx("web")
    pool2.binding_key(attempt)
    pool2.filter(attempt, cluster("gpu"))  # the same attempt: not counted again
    assert {s: count(s) - before[s] for s in before} == {"binding": 1, "namespace": 1, "none": 1}


@pytest.mark.parametrize("key", ["", None, 5])
def test_an_invalid_label_key_is_refused(key: object) -> None:
    with pytest.raises(ValueError, match="labelKey: must be a non-empty label key"):
        ExampleNamespacePoolArgs(labelKey=key)  # type: ignore[arg-type]
