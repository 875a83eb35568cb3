"""Karmada's first-fit simulator table (pkg/estimator/scheduling_simulator_components_test.go),
asked through the whole server path: nodes in name order, upper bound 2147483647."""

from __future__ import annotations

import pytest

from .builders import a_node, component, member, sets


@pytest.mark.parametrize(("nodes", "components", "want"), [
    pytest.param([("node1", "4", "8Gi", "10")], [component("web", 2, cpu="1", memory="2Gi")], 2,
                 id="single component fits perfectly"),
    pytest.param([("node1", "8", "16Gi", "10")],
                 [component("web", 2, cpu="1", memory="2Gi"), component("db", 1, cpu="2", memory="4Gi")], 2,
                 id="multiple components with resource constraints"),
    pytest.param([("node1", "0", "0", "10")], [component("web", 1, cpu="1")], 0, id="no resources available"),
    pytest.param([("node1", "2", "0", "10"), ("node2", "2", "0", "10")], [component("web", 3, cpu="1")], 1,
                 id="multiple nodes distribution"),
    pytest.param([("small-node", "1", "2Gi", "10"), ("medium-node", "4", "8Gi", "20"),
                  ("large-node", "8", "16Gi", "30")],
                 [component("frontend", 2, cpu="500m", memory="1Gi"),
                  component("backend", 1, cpu="2", memory="4Gi")], 4, id="nodes with different capacities"),
    pytest.param([(f"node{i}", "1", "0", "5") for i in range(1, 5)], [component("microservice", 1, cpu="2")],
                 0, id="many small nodes"),
])
def test_simulator_table(nodes: list[tuple[str, str, str, str]], components: list[dict], want: int) -> None:
    inventory = member(*(a_node(name, cpu, memory, pods) for name, cpu, memory, pods in nodes))
    assert sets(inventory, components) == want
