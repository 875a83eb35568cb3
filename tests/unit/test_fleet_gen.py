"""bench/fleet_gen.py makes fleets that fleetsched reads and schedules, the same for the same seed."""

from __future__ import annotations

import io
import random
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import fleet_gen  # noqa: E402


def _run(*args: str) -> str:
    out = io.StringIO()
    namespace = fleet_gen.argparse.Namespace(
        clusters=40,
        bindings=300,
        policies=0,
        workloads=0,
        distinct_requests=None,
        placements=None,
        models_share=0.3,
        seed=3,
    )
    for arg in args:
        key, _, value = arg.partition("=")
        setattr(namespace, key, int(value))
    fleet_gen.write_documents(fleet_gen.fleet_documents(namespace), out)
    return out.getvalue()


def test_the_same_seed_gives_the_same_bytes_and_another_seed_does_not() -> None:
    assert _run() == _run()
    assert _run() != _run("seed=4")


def test_every_binding_has_its_own_request_by_default_and_shares_them_when_asked() -> None:
    def requests(text: str) -> set[str]:
        docs = [d for d in yaml.safe_load_all(text) if d["kind"] == "ResourceBinding"]
        return {repr(sorted(d["spec"]["replicaRequirements"]["resourceRequest"].items())) for d in docs}

    assert len(requests(_run())) == 300
    assert len(requests(_run("distinct_requests=7"))) == 7


def test_placements_cover_every_replica_scheduling_mode_and_spread() -> None:
    docs = [d for d in yaml.safe_load_all(_run("bindings=2000")) if d["kind"] == "ResourceBinding"]
    modes = set()
    for d in docs:
        rs = d["spec"]["placement"]["replicaScheduling"]
        weights = rs.get("weightPreference") or {}
        modes.add(
            (
                rs["replicaSchedulingType"],
                rs.get("replicaDivisionPreference"),
                "static" if "staticWeightList" in weights else "dynamic" if weights else "",
            )
        )
    assert modes == {
        ("Duplicated", None, ""),
        ("Divided", "Aggregated", ""),
        ("Divided", "Weighted", "static"),
        ("Divided", "Weighted", "dynamic"),
    }
    fields = {sc["spreadByField"] for d in docs for sc in d["spec"]["placement"].get("spreadConstraints", ())}
    assert fields == {"cluster", "region"}
    assert any(
        "overflowAffinities" in t for d in docs for t in d["spec"]["placement"].get("clusterAffinities", ())
    )


def test_a_heartbeat_changes_only_the_resource_usage() -> None:
    rng = random.Random(1)
    (cluster,) = fleet_gen.generate_clusters(rng, 1)
    updated = fleet_gen.heartbeat(rng, cluster)
    assert updated["metadata"] == cluster["metadata"] and updated["spec"] == cluster["spec"]
    assert updated["status"]["apiEnablements"] == cluster["status"]["apiEnablements"]
    assert (
        updated["status"]["resourceSummary"]["allocated"] != cluster["status"]["resourceSummary"]["allocated"]
    )


def test_generated_fleets_go_through_simulate(tmp_path: Path) -> None:
    bindings = tmp_path / "bindings.yaml"
    bindings.write_text(_run("bindings=120"))
    policies = tmp_path / "policies.yaml"
    policies.write_text(_run("policies=30", "workloads=120"))
    for path, expected in ((bindings, 120), (policies, None)):
        done = subprocess.run(
            [sys.executable, "-m", "fleetsched", "simulate", str(path), "-o", "table"],
            capture_output=True,
            text=True,
            check=False,
            cwd=ROOT,
        )
        assert done.returncode == 0, done.stderr
        rows = done.stdout.splitlines()[1:]
        if expected is not None:
            assert len(rows) == expected
        else:
            assert 0 < len(rows) <= 120  # the policies webhook-admitted offline, and some matched
        assert sum(" True " in row for row in rows) > len(rows) // 2
