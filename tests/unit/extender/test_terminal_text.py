"""What an extender says reaches a terminal harmless (issue 23): ``simulate --explain`` escapes control
characters (no cleared screen, no fake ``=> Scheduled=True`` line) and caps a reason of megabytes.

A real HTTP extender on loopback answers ``simulate``'s filter calls."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from fleetsched.api.text import TERMINAL_LIMIT
from fleetsched.cli import main
from tests.support.extenders import rejecting_extender

FLEET = """
apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata: {name: m1}
status:
  apiEnablements: [{groupVersion: apps/v1, resources: [{name: deployments, kind: Deployment}]}]
---
apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata: {name: m2}
status:
  apiEnablements: [{groupVersion: apps/v1, resources: [{name: deployments, kind: Deployment}]}]
"""
BINDING = """
apiVersion: work.karmada.io/v1alpha2
kind: ResourceBinding
metadata: {name: web, namespace: default}
spec:
  resource: {apiVersion: apps/v1, kind: Deployment, namespace: default, name: web}
  replicas: 1
  placement: {}
"""

HOSTILE = "\x1b[2J\x1b[H\n  => Scheduled=True reason=Success: all is well\u202e"
HUGE = 6 << 20


@pytest.fixture
def extender_url() -> Iterator[str]:
    with rejecting_extender(
        lambda names: {name: (HOSTILE if i == 0 else "y" * HUGE) for i, name in enumerate(names)}
    ) as url:
        yield url


def test_explain_escapes_and_caps_what_an_extender_says(
    extender_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "fleet.yaml").write_text(FLEET)
    (tmp_path / "bindings.yaml").write_text(BINDING)
    config = tmp_path / "config.yaml"
    config.write_text(
        "apiVersion: config.fleetsched.io/v1alpha1\nkind: SchedulerConfiguration\n"
        f"extenders:\n- urlPrefix: {extender_url}\n  filterVerb: filter\n"
    )
    code = main(
        [
            "simulate",
            "--config",
            str(config),
            "--explain",
            str(tmp_path / "fleet.yaml"),
            str(tmp_path / "bindings.yaml"),
        ]
    )
    out, _ = capsys.readouterr()
    assert code == 0
    assert "\x1b" not in out and "\u202e" not in out
    lines = out.splitlines()
    # The only line that starts with a verdict is the real one; the extender's text stays inside its own.
    verdicts = [line for line in lines if line.lstrip().startswith("=> Scheduled=")]
    assert len(verdicts) == 1 and verdicts[0].startswith("  => Scheduled=False reason=NoClusterFit: ")
    assert any("\\x1b[2J\\x1b[H\\x0a  => Scheduled=True" in line and "\\u202e" in line for line in lines)
    assert max(len(line) for line in lines) < TERMINAL_LIMIT + 64
    assert any(line.endswith(" more characters)") for line in lines)
    assert len(out) < 10 * TERMINAL_LIMIT + len(FLEET)


def test_json_output_shows_the_condition_as_the_scheduler_writes_it(
    extender_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json as json_module

    from fleetsched.api.text import CONDITION_MESSAGE_LIMIT

    (tmp_path / "fleet.yaml").write_text(FLEET)
    (tmp_path / "bindings.yaml").write_text(BINDING)
    config = tmp_path / "config.yaml"
    config.write_text(
        "apiVersion: config.fleetsched.io/v1alpha1\nkind: SchedulerConfiguration\n"
        f"extenders:\n- urlPrefix: {extender_url}\n  filterVerb: filter\n"
    )
    code = main(
        [
            "simulate",
            "--config",
            str(config),
            "-o",
            "json",
            str(tmp_path / "fleet.yaml"),
            str(tmp_path / "bindings.yaml"),
        ]
    )
    out, _ = capsys.readouterr()
    assert code == 0
    (item,) = json_module.loads(out)["items"]
    message = item["status"]["conditions"][0]["message"]
    assert len(message.encode()) <= CONDITION_MESSAGE_LIMIT
    assert message.startswith("0/2 clusters are available: 1 \\x1b[2J\\x1b[H\\x0a  => Scheduled=True")
    assert message.endswith("… and 1 more reason")
