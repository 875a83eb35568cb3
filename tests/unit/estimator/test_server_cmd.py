"""``fleetsched estimator`` flags: Karmada's names and defaults, and clear errors for bad values."""

from __future__ import annotations

import argparse

import pytest

from fleetsched import cli
from fleetsched.estimator import server_cmd
from fleetsched.estimator.limits import DEFAULT_LIMITS
from fleetsched.estimator.server import Capacity
from fleetsched.flags import parse_feature_gates


def test_flags_and_defaults_are_karmadas() -> None:
    parser = argparse.ArgumentParser()
    server_cmd.add_arguments(parser)
    args = parser.parse_args(["--cluster-name", "member1"])
    assert (args.server_port, args.kube_api_qps, args.kube_api_burst) == (10352, 20.0, 30)
    assert args.parallelism == 0
    assert (args.metrics_bind_address, args.health_probe_bind_address) == (":8080", ":10351")
    assert (args.grpc_auth_cert_file, args.grpc_auth_key_file, args.grpc_client_ca_file) == ("", "", "")
    assert args.insecure_skip_grpc_client_verify is False


@pytest.mark.parametrize(("argv", "message"), [
    pytest.param(["--server-port", "70000"], "--server-port: 70000 must be between 0 and 65535", id="port"),
    pytest.param(["--feature-gates", "Nope=true"], "unrecognized feature gate: Nope", id="unknown gate"),
    pytest.param(["--feature-gates", "ResourceQuotaEstimate=yes"],
                 "invalid value of ResourceQuotaEstimate=yes", id="gate value"),
    pytest.param(["--grpc-auth-cert-file", "c.pem"], "give both or neither", id="cert without key"),
    pytest.param(["--kubeconfig", "/does/not/exist"], "--kubeconfig: cannot load /does/not/exist",
                 id="kubeconfig"),
    pytest.param(["--max-affinity-terms", "0"], "--max-affinity-terms: 0 must be at least 1", id="limit"),
    pytest.param(["--max-concurrent-requests", "0"], "--max-concurrent-requests: 0 must be at least 1",
                 id="concurrency"),
])
def test_bad_flags_exit_2_with_the_reason(argv: list[str], message: str,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["estimator", "--cluster-name", "member1", *argv]) == 2
    assert message in capsys.readouterr().err


def test_feature_gates_parse_like_kubernetes() -> None:
    assert parse_feature_gates("ResourceQuotaEstimate=true, SchedulingOvercommitProtection=false") == {
        "ResourceQuotaEstimate": True, "SchedulingOvercommitProtection": False}
    assert parse_feature_gates("") == {}


def test_limit_and_capacity_flags_reach_the_server() -> None:
    parser = argparse.ArgumentParser()
    server_cmd.add_arguments(parser)
    defaults = parser.parse_args(["--cluster-name", "m"])
    assert server_cmd.limits_from(defaults) == DEFAULT_LIMITS
    assert server_cmd.capacity_from(defaults) == Capacity(workers=16, max_concurrent_requests=64)
    args = parser.parse_args(["--cluster-name", "m", "--max-affinity-terms", "7", "--max-request-bytes",
                              "1024", "--parallelism", "3", "--max-concurrent-requests", "5"])
    limits = server_cmd.limits_from(args)
    assert (limits.max_affinity_terms, limits.max_request_bytes) == (7, 1024)
    assert limits.max_tolerations == DEFAULT_LIMITS.max_tolerations
    assert server_cmd.capacity_from(args) == Capacity(workers=3, max_concurrent_requests=5)
