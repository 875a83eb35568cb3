"""``fleetsched simulate`` with member-cluster Nodes in its input: the user stories become node-accurate."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from fleetsched import cli

from .stories import CLUSTERS, placed, story_binding, story_clusters, story_nodes


def annotated(obj: dict[str, Any], cluster: str) -> dict[str, Any]:
    obj["metadata"].setdefault("annotations", {})["fleetsched.io/member-cluster"] = cluster
    return obj


def _simulate(tmp_path: Path, capsys: pytest.CaptureFixture[str],
              docs: list[dict[str, Any]]) -> dict[str, int]:
    path = tmp_path / "fleet.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    assert cli.main(["simulate", str(path), "-o", "json"]) == 0
    items = json.loads(capsys.readouterr().out)["items"]
    return placed(items[0])


@pytest.mark.parametrize("story", [1, 2])
def test_simulate_is_node_accurate_when_nodes_are_given(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                        story: int) -> None:
    base: list[dict[str, Any]] = [*story_clusters(story), story_binding(story)]
    assert _simulate(tmp_path, capsys, base) == {"member-a": 1}
    nodes = [annotated(n, c) for c in CLUSTERS for n in story_nodes(story, c)]
    assert _simulate(tmp_path, capsys, [*base, *nodes]) == {"member-b": 1}
