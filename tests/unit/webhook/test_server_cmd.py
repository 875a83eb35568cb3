"""Flag parsing of ``fleetsched webhook``: Karmada's defaults and clear errors."""

from __future__ import annotations

import argparse

import pytest

from fleetsched.webhook import server_cmd


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    server_cmd.add_arguments(parser)
    return parser.parse_args(argv)


def test_karmada_defaults() -> None:
    args = parse()
    assert (args.bind_address, args.port) == ("0.0.0.0", 8443)
    assert args.cert_dir == "/tmp/k8s-webhook-server/serving-certs"
    assert (args.tls_cert_file_name, args.tls_private_key_file_name, args.tls_min_version) == (
        "tls.crt", "tls.key", "1.3")
    assert (args.metrics_bind_address, args.health_probe_bind_address) == (":8080", ":8000")
    assert (args.kube_api_qps, args.kube_api_burst) == (40.0, 60)


def test_port_is_an_alias_of_secure_port() -> None:
    assert parse("--port", "9443").port == parse("--secure-port", "9443").port == 9443


@pytest.mark.parametrize(("text", "expected"), [
    pytest.param(":8080", ("0.0.0.0", 8080), id="port only"),
    pytest.param("127.0.0.1:9", ("127.0.0.1", 9), id="host and port"),
    pytest.param("[::1]:9", ("::1", 9), id="ipv6"),
    pytest.param("0", None, id="disabled"),
])
def test_bind_addresses(text: str, expected: tuple[str, int] | None) -> None:
    assert server_cmd.parse_bind_address(text) == expected


def test_bad_bind_address_names_the_value() -> None:
    with pytest.raises(ValueError, match="'localhost' is not HOST:PORT"):
        server_cmd.parse_bind_address("localhost")


def test_feature_gates() -> None:
    gates = server_cmd.parse_feature_gates(
        "MultiplePodTemplatesScheduling=true, FederatedQuotaEnforcement=false")
    assert gates == {"MultiplePodTemplatesScheduling": True, "FederatedQuotaEnforcement": False}
    with pytest.raises(ValueError, match="--feature-gates: unrecognized feature gate: Nope"):
        server_cmd.parse_feature_gates("Nope=true")
    with pytest.raises(ValueError, match="missing bool value for MultiplePodTemplatesScheduling"):
        server_cmd.parse_feature_gates("MultiplePodTemplatesScheduling")
    # Karmada's webhook accepts every Karmada gate, also those that change nothing it checks
    assert server_cmd.parse_feature_gates("PropagateDeps=false") == {"PropagateDeps": False}
