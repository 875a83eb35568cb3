"""The install's TLS between scheduler and estimators, with the certificates hack/gen-estimators.sh makes.

The estimator runs with the TLS flags of its generated Deployment and the scheduler's side uses the
flags of the scheduler Deployment, each file read from where the Deployment mounts the Secret that
the generated kustomization builds (so a wrong path, key or Secret name fails here). The client
checks the server's certificate against the Service DNS name the scheduler dials.
"""

from __future__ import annotations

import argparse
import itertools
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml

from fleetsched import cli
from fleetsched.estimator import server_cmd, wire
from fleetsched.estimator.pb import service_pb2_grpc

from .conftest import StartedServer, node

pytestmark = pytest.mark.component

ROOT = Path(__file__).resolve().parents[3]
MEMBER = "member1"
DIALED = f"karmada-scheduler-estimator-{MEMBER}.fleetsched-system.svc.cluster.local"
NODES = [node("n1", "4"), node("n2", "4")]
REQUEST = {"cluster": MEMBER, "replicaRequirements": {"resourceRequest": {"cpu": "1"}}}


def generate(directory: Path, *args: str) -> Path:
    """hack/gen-estimators.sh into ``directory``/manifests/estimators, as a user runs it."""
    out = directory / "manifests" / "estimators"
    subprocess.run([str(ROOT / "hack" / "gen-estimators.sh"), *args], check=True, capture_output=True,
                   env={"PATH": "/usr/bin:/bin", "ESTIMATORS_DIR": str(out)})
    return out


def _documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def mounted_files(estimators: Path, deployment: dict[str, Any]) -> dict[str, Path]:
    """In-pod path -> generated file, through the Deployment's secret volumes and the generated
    kustomization's secretGenerator (key=file)."""
    generators = {g["name"]: dict(f.split("=", 1) for f in g["files"])
                  for g in yaml.safe_load((estimators / "kustomization.yaml").read_text())["secretGenerator"]}
    pod = deployment["spec"]["template"]["spec"]
    secrets = {v["name"]: v["secret"]["secretName"] for v in pod["volumes"] if "secret" in v}
    files = {}
    for mount in pod["containers"][0]["volumeMounts"]:
        secret = secrets.get(mount["name"])
        if secret in generators:
            for key, source in generators[secret].items():
                files[f"{mount['mountPath']}/{key}"] = estimators / source
    return files


def container(deployment: dict[str, Any], estimators: Path) -> argparse.Namespace:
    """The container's parsed args with every mounted path replaced by the generated file."""
    files = mounted_files(estimators, deployment)
    argv = []
    for arg in deployment["spec"]["template"]["spec"]["containers"][0]["args"]:
        flag, equals, value = arg.partition("=")
        argv.append(f"{flag}={files[value]}" if equals and value in files else arg)
    return cli.build_parser(argv).parse_args(argv)


def _deployment(path: Path, name: str) -> dict[str, Any]:
    return next(d for d in _documents(path) if d["kind"] == "Deployment" and d["metadata"]["name"] == name)


def scheduler_credentials(estimators: Path) -> grpc.ChannelCredentials:
    scheduler = container(_deployment(ROOT / "manifests" / "scheduler" / "workload" / "deployment.yaml",
                                      "fleetsched-scheduler"), estimators)
    return grpc.ssl_channel_credentials(
        root_certificates=Path(scheduler.scheduler_estimator_ca_file).read_bytes(),
        private_key=Path(scheduler.scheduler_estimator_key_file).read_bytes(),
        certificate_chain=Path(scheduler.scheduler_estimator_cert_file).read_bytes())


def start_installed(start: Callable[..., StartedServer], estimators: Path) -> StartedServer:
    args = container(_deployment(estimators / f"{MEMBER}.yaml", f"karmada-scheduler-estimator-{MEMBER}"),
                     estimators)
    assert server_cmd._validate(args) == []
    tls = server_cmd._tls(args)
    assert tls is not None, "the install serves the estimator with TLS"
    assert tls.client_ca is not None and not tls.skip_client_verify, "and requires client certificates"
    return start(args.cluster_name, NODES, tls=tls)


def call(server: StartedServer, credentials: grpc.ChannelCredentials | None) -> int:
    if credentials is None:
        channel = grpc.insecure_channel(server.address)
    else:
        channel = grpc.secure_channel(server.address, credentials,
                                      options=[("grpc.ssl_target_name_override", DIALED)])
    with channel:
        stub = service_pb2_grpc.EstimatorStub(channel)
        return int(stub.MaxAvailableReplicas(wire.replicas_request_to_pb(REQUEST), timeout=10).maxReplicas)


def test_the_scheduler_reaches_the_installed_estimator_over_mutual_tls(
        start: Callable[..., StartedServer], tmp_path: Path) -> None:
    estimators = generate(tmp_path, MEMBER)
    server = start_installed(start, estimators)
    assert call(server, scheduler_credentials(estimators)) == 8
    # the CA key is kept out of the tree kustomize reads
    assert not list((tmp_path / "manifests").rglob("ca.key"))
    assert (tmp_path / ".estimator-ca" / "ca.key").is_file()


def test_the_installed_estimator_refuses_plaintext_anonymous_and_foreign_clients(
        start: Callable[..., StartedServer], tmp_path: Path) -> None:
    estimators = generate(tmp_path / "ours", MEMBER)
    server = start_installed(start, estimators)
    ca = (estimators / "tls" / "ca.crt").read_bytes()
    foreign = generate(tmp_path / "theirs", MEMBER)  # another install: another CA
    refused = []
    for credentials in (None, grpc.ssl_channel_credentials(root_certificates=ca),
                        scheduler_credentials(foreign)):
        with pytest.raises(grpc.RpcError) as failure:
            call(server, credentials)
        refused.append(failure.value.code())
    assert refused == [grpc.StatusCode.UNAVAILABLE] * 3


def test_reissued_certificates_keep_the_ca_so_old_and_new_pods_interoperate(
        start: Callable[..., StartedServer], tmp_path: Path) -> None:
    estimators = generate(tmp_path, MEMBER)
    old_scheduler = scheduler_credentials(estimators)
    old_server_cert = (estimators / "tls" / MEMBER / "tls.crt").read_bytes()
    generate(tmp_path, MEMBER, "member2")  # routine re-run, e.g. adding a member
    assert (estimators / "tls" / MEMBER / "tls.crt").read_bytes() != old_server_cert
    server = start_installed(start, estimators)
    assert call(server, old_scheduler) == 8, "a scheduler pod from before the re-run still gets in"


def test_the_ca_is_replaced_in_three_steps_with_no_moment_pods_refuse_each_other(
        start: Callable[..., StartedServer], tmp_path: Path) -> None:
    """A rollout runs pods of two consecutive steps at once, in both roles: they must all agree."""
    estimators = tmp_path / "manifests" / "estimators"
    phases: list[Path] = []
    for step in ((), ("--stage-ca",), ("--promote-ca",), ("--drop-old-ca",)):
        generate(tmp_path, *step, MEMBER)
        phases.append(tmp_path / f"phase{len(phases)}")
        shutil.copytree(estimators, phases[-1])
    servers = [start_installed(start, phase) for phase in phases]
    schedulers = [scheduler_credentials(phase) for phase in phases]
    for before, after in itertools.pairwise(range(len(phases))):
        assert call(servers[after], schedulers[before]) == 8, (before, after)
        assert call(servers[before], schedulers[after]) == 8, (before, after)
    # the first CA is really gone at the end: a scheduler from before the rotation is refused
    with pytest.raises(grpc.RpcError):
        call(servers[-1], schedulers[0])
    assert not (tmp_path / ".estimator-ca" / "old-ca.crt").exists()
