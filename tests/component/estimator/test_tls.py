"""TLS and mutual TLS between the estimator server and a gRPC client (spec 2.7)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import grpc
import pytest

from fleetsched.estimator import wire
from fleetsched.estimator.client import AccurateEstimatorClient, ClientTLS, EstimatorClientConfig
from fleetsched.estimator.pb import service_pb2_grpc
from fleetsched.estimator.server import ServerTLS

from .conftest import Pki, StartedServer, node

pytestmark = pytest.mark.component

NODES = [node("n1", "4"), node("n2", "4")]
REQUEST = {"cluster": "member1", "replicaRequirements": {"resourceRequest": {"cpu": "1"}}}


def _call(address: str, credentials: grpc.ChannelCredentials | None) -> int:
    channel = grpc.secure_channel(address, credentials) if credentials else grpc.insecure_channel(address)
    with channel:
        stub = service_pb2_grpc.EstimatorStub(channel)
        return int(stub.MaxAvailableReplicas(wire.replicas_request_to_pb(REQUEST), timeout=5).maxReplicas)


def test_tls_server_answers_a_client_that_trusts_its_ca(
        start: Callable[..., StartedServer], pki: Pki) -> None:
    server = start("member1", NODES, tls=ServerTLS(pki.server_cert, pki.server_key))
    assert _call(server.address, grpc.ssl_channel_credentials(root_certificates=pki.ca)) == 8


def test_tls_server_rejects_plaintext_and_untrusted_clients(
        start: Callable[..., StartedServer], pki: Pki) -> None:
    server = start("member1", NODES, tls=ServerTLS(pki.server_cert, pki.server_key))
    with pytest.raises(grpc.RpcError) as plaintext:
        _call(server.address, None)
    assert plaintext.value.code() is grpc.StatusCode.UNAVAILABLE
    with pytest.raises(grpc.RpcError) as untrusted:
        _call(server.address, grpc.ssl_channel_credentials(root_certificates=pki.other_ca))
    assert untrusted.value.code() is grpc.StatusCode.UNAVAILABLE


def test_mutual_tls_requires_a_client_certificate_from_the_client_ca(
        start: Callable[..., StartedServer], pki: Pki) -> None:
    server = start("member1", NODES, tls=ServerTLS(pki.server_cert, pki.server_key, client_ca=pki.ca))
    good = grpc.ssl_channel_credentials(root_certificates=pki.ca, private_key=pki.client_key,
                                        certificate_chain=pki.client_cert)
    assert _call(server.address, good) == 8
    with pytest.raises(grpc.RpcError) as anonymous:
        _call(server.address, grpc.ssl_channel_credentials(root_certificates=pki.ca))
    assert anonymous.value.code() is grpc.StatusCode.UNAVAILABLE
    stranger = grpc.ssl_channel_credentials(root_certificates=pki.ca, private_key=pki.other_client_key,
                                            certificate_chain=pki.other_client_cert)
    with pytest.raises(grpc.RpcError) as foreign:
        _call(server.address, stranger)
    assert foreign.value.code() is grpc.StatusCode.UNAVAILABLE


def test_skip_client_verify_does_not_ask_for_a_certificate(
        start: Callable[..., StartedServer], pki: Pki) -> None:
    server = start("member1", NODES, tls=ServerTLS(pki.server_cert, pki.server_key, client_ca=pki.ca,
                                                   skip_client_verify=True))
    assert _call(server.address, grpc.ssl_channel_credentials(root_certificates=pki.ca)) == 8


def test_scheduler_client_speaks_mutual_tls(start: Callable[..., StartedServer], pki: Pki) -> None:
    server = start("member1", NODES, tls=ServerTLS(pki.server_cert, pki.server_key, client_ca=pki.ca))
    client = AccurateEstimatorClient(EstimatorClientConfig(
        addresses={"member1": server.address},
        tls=ClientTLS(ca=pki.ca, cert=pki.client_cert, key=pki.client_key)))
    try:
        assert client.max_available_replicas(["member1"], REQUEST["replicaRequirements"]) == [8]
    finally:
        client.close()


def test_client_without_ca_stays_plaintext_like_karmadas(
        start: Callable[..., StartedServer], pki: Pki) -> None:
    # Karmada's client ignores a certificate and key when it has no CA: plaintext to a plaintext server.
    server = start("member1", NODES)
    client = AccurateEstimatorClient(EstimatorClientConfig(
        addresses={"member1": server.address}, tls=ClientTLS(cert=pki.client_cert, key=pki.client_key)))
    try:
        assert client.max_available_replicas(["member1"], None) == [220]
    finally:
        client.close()


def test_config_from_karmadas_scheduler_flags(start: Callable[..., StartedServer], pki: Pki,
                                              tmp_path: Path) -> None:
    files = {}
    for name, data in (("ca", pki.ca), ("cert", pki.client_cert), ("key", pki.client_key)):
        files[name] = tmp_path / f"{name}.pem"
        files[name].write_bytes(data)
    server = start("member1", NODES, tls=ServerTLS(pki.server_cert, pki.server_key, client_ca=pki.ca))
    config = EstimatorClientConfig.from_flags(
        timeout=2.0, ca_file=str(files["ca"]), cert_file=str(files["cert"]), key_file=str(files["key"]),
        addresses={"member1": server.address})
    client = AccurateEstimatorClient(config)
    try:
        assert client.max_available_replicas(["member1"], REQUEST["replicaRequirements"]) == [8]
    finally:
        client.close()
    with pytest.raises(ValueError, match="give both or neither"):
        EstimatorClientConfig.from_flags(cert_file=str(files["cert"]))
