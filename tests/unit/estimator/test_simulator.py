"""First fit (spec 3.6): invariants of whole-set placement."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fleetsched.estimator.simulator import FirstFit, SimComponent


def _free(cpus: list[int], pods: list[int]) -> dict[str, np.ndarray]:
    return {"cpu": np.array(cpus, dtype=np.int64), "pods": np.array(pods, dtype=np.int64)}


nodes = st.lists(st.tuples(st.integers(0, 9000), st.integers(0, 12)), min_size=1, max_size=6)
parts = st.lists(st.tuples(st.integers(0, 3), st.integers(1, 3000), st.booleans()), min_size=1, max_size=3)


@settings(max_examples=150, deadline=None)
@given(nodes=nodes, parts=parts)
def test_sets_are_bounded_by_capacity_and_the_fast_path_agrees(nodes, parts) -> None:  # type: ignore[no-untyped-def]
    cpus, pods = [c for c, _ in nodes], [p for _, p in nodes]
    order = list(range(len(nodes)))
    everywhere = np.ones(len(nodes), dtype=bool)
    components = [SimComponent(everywhere if anywhere else np.arange(len(nodes)) % 2 == 0,
                               (("cpu", demand),), replicas) for replicas, demand, anywhere in parts]
    placed = FirstFit(_free(cpus, pods), order).simulate(components, 10_000)
    fast = FirstFit(_free(cpus, pods), order).simulate(components, 10_000, keep_state=False)
    assert placed == fast
    per_set_pods = sum(c.replicas for c in components)
    if per_set_pods:
        assert placed * per_set_pods <= sum(pods)
        per_set_cpu = sum(c.replicas * c.demand[0][1] for c in components)
        assert placed * per_set_cpu <= sum(cpus)
    else:
        assert placed == 10_000


def test_a_failed_set_keeps_what_it_consumed() -> None:
    simulator = FirstFit(_free([3000, 5000], [110, 110]), [0, 1])
    worker = SimComponent(np.ones(2, dtype=bool), (("cpu", 2000),), 2)
    assert simulator.simulate([worker], 10) == 1
    after = simulator.arrays(_free([0, 0], [0, 0]))
    # set 1: one on each node; set 2: one on the second node, then nowhere - and it stays placed
    assert after["cpu"].tolist() == [1000, 1000]
