"""hack/gen-certs.sh makes a CA and a serving certificate the webhook can serve and clients trust."""

from __future__ import annotations

import ipaddress
import subprocess
import urllib.request
from pathlib import Path

from cryptography import x509

from fleetsched.webhook.testing import WebhookProcess

SCRIPT = Path(__file__).resolve().parents[3] / "hack" / "gen-certs.sh"


def test_generated_certificate_serves_and_verifies(tmp_path: Path) -> None:
    result = subprocess.run([str(SCRIPT), str(tmp_path), "wh", "ns-x"], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    cert = x509.load_pem_x509_certificate((tmp_path / "tls.crt").read_bytes())
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    names = set(sans.get_values_for_type(x509.DNSName))
    assert {"wh.ns-x.svc", "wh.ns-x.svc.cluster.local", "localhost"} <= names
    assert ipaddress.ip_address("127.0.0.1") in sans.get_values_for_type(x509.IPAddress)
    with WebhookProcess(tmp_path) as webhook, urllib.request.urlopen(
            f"{webhook.base_url}/readyz", context=webhook.client_context(), timeout=5) as resp:
        assert resp.read() == b"ok"


def test_usage_message_without_arguments() -> None:
    result = subprocess.run([str(SCRIPT)], capture_output=True, text=True, timeout=30)
    assert result.returncode != 0 and "usage: hack/gen-certs.sh DIR" in result.stderr
