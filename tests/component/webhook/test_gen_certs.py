"""hack/gen-certs.sh makes a CA and a serving certificate the webhook can serve and clients trust,
and keeps the CA's private key out of the directory kustomize reads."""

from __future__ import annotations

import ipaddress
import subprocess
import urllib.request
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature

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
    assert result.returncode != 0 and "usage: hack/gen-certs.sh [--ca-dir CA_DIR] DIR" in result.stderr


def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SCRIPT), *map(str, args)], capture_output=True, text=True, timeout=60)


def private_keys(directory: Path) -> set[str]:
    return {p.name for p in directory.rglob("*") if p.is_file() and b"PRIVATE KEY" in p.read_bytes()}


def issuer_key_matches(ca_crt: Path, cert: Path) -> bool:
    ca = x509.load_pem_x509_certificate(ca_crt.read_bytes())
    leaf = x509.load_pem_x509_certificate(cert.read_bytes())
    try:
        leaf.verify_directly_issued_by(ca)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def test_the_ca_key_is_not_written_into_the_certificate_directory(tmp_path: Path) -> None:
    certs = tmp_path / "certs"
    result = run(certs)
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in certs.iterdir()) == ["ca.crt", "tls.crt", "tls.key"]
    assert private_keys(tmp_path) == {"tls.key"}, "only the serving key is anywhere on disk"
    assert (certs / "tls.key").stat().st_mode & 0o077 == 0
    assert issuer_key_matches(certs / "ca.crt", certs / "tls.crt")


def test_a_kept_ca_signs_the_next_certificate_so_the_ca_bundle_stays(tmp_path: Path) -> None:
    ca_dir, certs = tmp_path / "private" / "ca", tmp_path / "install" / "certs"
    assert run("--ca-dir", ca_dir, certs).returncode == 0
    assert sorted(p.name for p in ca_dir.iterdir()) == ["ca.crt", "ca.key"]
    assert (ca_dir / "ca.key").stat().st_mode & 0o077 == 0
    assert private_keys(certs) == {"tls.key"}
    first_ca, first_cert = (certs / "ca.crt").read_bytes(), (certs / "tls.crt").read_bytes()
    result = run(f"--ca-dir={ca_dir}", certs)
    assert result.returncode == 0, result.stderr
    assert (certs / "ca.crt").read_bytes() == first_ca
    assert (certs / "tls.crt").read_bytes() != first_cert
    assert issuer_key_matches(certs / "ca.crt", certs / "tls.crt")
    # without --ca-dir, a new CA: the old bundle no longer verifies the new certificate
    assert run(certs).returncode == 0
    assert not issuer_key_matches(ca_dir / "ca.crt", certs / "tls.crt")


def test_a_ca_dir_inside_the_certificates_or_a_kustomization_is_refused(tmp_path: Path) -> None:
    certs = tmp_path / "manifests" / "certs"
    (tmp_path / "manifests").mkdir()
    (tmp_path / "manifests" / "kustomization.yaml").write_text("resources: []\n")
    for ca_dir, reason in ((certs / "ca", "inside"), (tmp_path / "manifests" / "ca", "kustomization")):
        result = run("--ca-dir", ca_dir, certs)
        assert result.returncode == 2
        assert len(result.stderr.strip().splitlines()) == 1 and reason in result.stderr, result.stderr
        assert not certs.exists() and not ca_dir.exists(), "nothing is written when refused"


def test_a_ca_key_left_by_an_older_version_stops_the_script(tmp_path: Path) -> None:
    certs = tmp_path / "certs"
    certs.mkdir()
    (certs / "ca.key").write_text("old\n")
    result = run(certs)
    assert result.returncode == 2 and "ca.key" in result.stderr and "--ca-dir" in result.stderr
    assert sorted(p.name for p in certs.iterdir()) == ["ca.key"]
