"""Compiled cluster-affinity predicates and their caches (scheduler.md §5.3)."""

from __future__ import annotations

from fleetsched.scheduler import matching

from .builders import a_cluster, labels, names


def test_compiled_affinity_matches_like_cluster_matches() -> None:
    prod = a_cluster("m1").labeled(env="prod").build()
    for affinity in (names("m1"), names("m2"), labels(env="prod"), labels(env="dev")):
        assert matching.compile_affinity(affinity)(prod) == matching.cluster_matches(prod, affinity)


def test_clear_caches_forgets_compiled_selectors() -> None:
    matching.compile_affinity(names("m1", "m2"))
    assert matching.compile_affinity.cache_info().currsize > 0
    matching.clear_caches()
    assert matching.compile_affinity.cache_info().currsize == 0
