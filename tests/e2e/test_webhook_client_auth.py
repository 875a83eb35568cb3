"""The API server authenticates to the webhook with a client certificate (``--client-ca-file``).

kube-apiserver gets ``--admission-control-config-file`` with a ``WebhookAdmissionConfiguration``
whose kubeconfig names the client certificate for one webhook address (as docs/webhook.md shows).
A webhook at that address that requires certificates from the client CA answers; a second one
requiring the same CA, for which the API server has no credentials, cannot be called, so
``failurePolicy: Fail`` refuses the write.
"""

from __future__ import annotations

import base64
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from fleetsched.webhook.testing import WebhookProcess, free_port, make_certificates, make_client_certificate
from tests.e2e.test_webhook_admission import INVALID_PP, VALID_PP, apply_error, registrations
from tests.support.controlplane import APIServer, ControlPlane

DENIAL = 'admission webhook "propagationpolicy.karmada.io" denied the request: spec.placement: Invalid value'


def admission_configuration(directory: Path, *, user: str, cert: Path, key: Path) -> Path:
    kubeconfig = directory / "webhook-kubeconfig.yaml"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config",
        "users": [{"name": user, "user": {"client-certificate": str(cert), "client-key": str(key)}}],
    }))
    plugin = {"apiVersion": "apiserver.config.k8s.io/v1", "kind": "WebhookAdmissionConfiguration",
              "kubeConfigFile": str(kubeconfig)}
    config = directory / "admission-configuration.yaml"
    config.write_text(yaml.safe_dump({
        "apiVersion": "apiserver.config.k8s.io/v1", "kind": "AdmissionConfiguration",
        "plugins": [{"name": "ValidatingAdmissionWebhook", "configuration": plugin},
                    {"name": "MutatingAdmissionWebhook", "configuration": plugin}],
    }))
    return config


class Setup:
    def __init__(self, server: APIServer, trusted: WebhookProcess, unknown: WebhookProcess, ca_bundle: str):
        self.server, self.trusted, self.unknown, self.ca_bundle = server, trusted, unknown, ca_bundle

    def register(self, webhook: WebhookProcess) -> None:
        self.server.kubectl("apply", "-f", "-", input=registrations(webhook.port, self.ca_bundle))


@pytest.fixture(scope="module")
def setup(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    work = tmp_path_factory.mktemp("webhook-client-auth")
    ca_file = make_certificates(work)
    client_cert, client_key = make_client_certificate(work / "apiserver", "kube-apiserver")
    client_ca = work / "apiserver" / "client-ca.crt"
    trusted_port = free_port()
    config = admission_configuration(work, user=f"127.0.0.1:{trusted_port}", cert=client_cert, key=client_key)
    unique = f"client-auth-{os.urandom(3).hex()}"
    server = APIServer(name="client-auth", binaries=control_plane.binaries, workdir=work / "apiserver-run",
                       pki=control_plane.pki, etcd_url=control_plane.etcd.url, etcd_prefix=f"/{unique}",
                       extra_args=(f"--admission-control-config-file={config}",))
    try:
        server.start()
        server.apply_crds()
        args = ("--client-ca-file", str(client_ca))
        ours = (client_cert, client_key)
        with WebhookProcess(work, port=trusted_port, extra_args=args, client_cert=ours) as a, \
                WebhookProcess(work, extra_args=args, client_cert=ours) as b:
            yield Setup(server, a, b, base64.b64encode(ca_file.read_bytes()).decode())
    finally:
        server.stop()


def dry_run(server: APIServer, manifest: str) -> str:
    """What a server-side dry run of ``manifest`` says ("" when admitted)."""
    try:
        server.kubectl("apply", "--dry-run=server", "-f", "-", input=manifest)
    except RuntimeError as exc:
        return str(exc)
    return ""


def wait_for(server: APIServer, manifest: str, text: str) -> None:
    """The API server picks registrations up asynchronously: wait until ``text`` comes back."""
    deadline = time.monotonic() + 60
    while text not in (message := dry_run(server, manifest)):
        assert time.monotonic() < deadline, f"never got {text!r}; last answer: {message!r}"
        time.sleep(0.5)


def test_the_api_server_presents_its_certificate_and_is_answered(setup: Setup) -> None:
    setup.register(setup.trusted)
    wait_for(setup.server, INVALID_PP, DENIAL)
    assert DENIAL in apply_error(setup.server, INVALID_PP)
    setup.server.kubectl("apply", "-f", "-", input=VALID_PP)
    stored = setup.server.kubectl("get", "pp", "nginx", "-n", "default", "-o", "yaml")
    assert "propagationpolicy.karmada.io/permanent-id" in stored  # the mutating call went through too


def test_without_credentials_for_the_address_the_call_fails_closed(setup: Setup) -> None:
    refused = VALID_PP.replace("name: nginx,", "name: refused,")
    setup.register(setup.unknown)
    wait_for(setup.server, refused, "failed calling webhook")
    assert "failed calling webhook" in apply_error(setup.server, refused)
    assert setup.server.kubectl("get", "pp", "refused", "-n", "default", "--ignore-not-found") == ""
    log = setup.unknown.log_path.read_text() if setup.unknown.log_path else ""
    assert '"event": "admission_reviewed"' not in log
