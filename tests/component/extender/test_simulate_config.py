"""``simulate --config`` with an HTTPS extender in the file: the real test extender on loopback
filters by a cluster label and scores by another; down and ignorable is skipped, down and not
ignorable fails the binding naming the extender once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fleetsched.cli import main
from fleetsched.testing.extender import FILTER_LABEL, SCORE_LABEL, ExtenderServer, closed_port

from .conftest import Pki

CLUSTER = """apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata:
  name: {name}
  labels: {{"{filter}": "{verdict}", "{score}": "{points}"}}
spec: {{}}
status:
  apiEnablements: [{{groupVersion: apps/v1, resources: [{{name: deployments, kind: Deployment}}]}}]
  resourceSummary: {{allocatable: {{pods: "10"}}}}
"""
BINDING = """apiVersion: work.karmada.io/v1alpha2
kind: ResourceBinding
metadata: {name: web, namespace: default}
spec:
  resource: {apiVersion: apps/v1, kind: Deployment, namespace: default, name: web}
  replicas: 1
  placement:
    clusterAffinity: {clusterNames: [east, west, north]}
    replicaScheduling: {replicaSchedulingType: Divided, replicaDivisionPreference: Aggregated}
"""


def _files(tmp_path: Path) -> list[str]:
    fleet = "---\n".join(
        CLUSTER.format(name=n, filter=FILTER_LABEL, verdict=v, score=SCORE_LABEL, points=p)
        for n, v, p in (("east", "reject", 9), ("west", "keep", 7), ("north", "keep", 1))
    )
    (tmp_path / "fleet.yaml").write_text(fleet)
    (tmp_path / "binding.yaml").write_text(BINDING)
    return [str(tmp_path / "fleet.yaml"), str(tmp_path / "binding.yaml")]


def _config(tmp_path: Path, url: str, pki: Pki, *, ignorable: bool) -> str:
    text = f"""apiVersion: config.fleetsched.io/v1alpha1
kind: SchedulerConfiguration
extenders:
- urlPrefix: {url}
  filterVerb: filter
  prioritizeVerb: prioritize
  weight: 2
  httpTimeout: 2s
  ignorable: {str(ignorable).lower()}
  tlsConfig: {{caFile: {pki.ca_file}}}
"""
    path = tmp_path / "config.yaml"
    path.write_text(text)
    return str(path)


def _simulate(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, str]:
    code = main(["simulate", *argv, "-o", "json"])
    out, err = capsys.readouterr()
    return code, (json.loads(out)["items"][0] if code == 0 else None), err


def test_the_extender_filters_and_its_score_picks_the_cluster(
    tmp_path: Path, server: ExtenderServer, pki: Pki, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _config(tmp_path, server.url("ok"), pki, ignorable=False)
    code, binding, err = _simulate(capsys, "--config", config, *_files(tmp_path))
    assert code == 0, err
    # east is rejected by the extender; of west (7) and north (1), the extender's score decides
    # (without it, the name order would pick north).
    assert binding["spec"]["clusters"] == [{"name": "west", "replicas": 1}]


def test_a_down_extender_is_skipped_when_ignorable_and_named_once_otherwise(
    tmp_path: Path, pki: Pki, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"https://127.0.0.1:{closed_port()}/ok"
    code, binding, err = _simulate(capsys, "--config", _config(tmp_path, url, pki, ignorable=True),
                                   *_files(tmp_path))
    assert code == 0, err
    assert binding["spec"]["clusters"][0]["name"] in {"east", "west", "north"}
    code, binding, err = _simulate(capsys, "--config", _config(tmp_path, url, pki, ignorable=False),
                                   *_files(tmp_path))
    assert code == 0, err
    condition = binding["status"]["conditions"][0]
    assert condition["status"] == "False"
    assert f"extender {url} failed at Filter: unreachable" in condition["message"]
    assert condition["message"].count(url) == 1
