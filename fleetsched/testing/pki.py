"""A throwaway PKI for tests, benchmarks and local trials: one CA type that issues serving and client
certificates.

The control plane under test (kube-apiserver), the estimator's mutual-TLS tests and the webhook's
HTTPS server all need the same thing, an ECDSA CA and leaves signed by it, so there is one builder.
The certificates carry what strict verifiers ask for (Python's ``VERIFY_X509_STRICT``, Go's
crypto/x509): a critical BasicConstraints and KeyUsage on the CA, a Subject Key Identifier on the CA
and an Authority Key Identifier on each leaf, the leaf's purpose in ExtendedKeyUsage.
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = ["CertificateAuthority", "pem_cert", "pem_key", "write_private"]

# Long enough for a local control plane left running; the margin before now absorbs clock skew.
_VALID_BEFORE = datetime.timedelta(minutes=5)
_VALID_FOR = datetime.timedelta(days=365)


def pem_cert(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def pem_key(key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> bytes:
    """The private key as unencrypted PKCS#8 PEM."""
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def write_private(path: Path, data: bytes) -> None:
    """Write key (or other secret) material readable by the owner only."""
    path.write_bytes(data)
    path.chmod(0o600)


@dataclass(frozen=True)
class CertificateAuthority:
    """A throwaway ECDSA (P-256) CA that issues serving and client certificates."""

    key: ec.EllipticCurvePrivateKey
    cert: x509.Certificate

    @classmethod
    def create(cls, common_name: str) -> CertificateAuthority:
        key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
        now = datetime.datetime.now(datetime.UTC)
        usage = x509.KeyUsage(
            digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
            key_encipherment=False, data_encipherment=False, key_agreement=False,
            encipher_only=False, decipher_only=False,
        )
        cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - _VALID_BEFORE)
            .not_valid_after(now + _VALID_FOR)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(usage, critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256())
        )
        return cls(key=key, cert=cert)

    @property
    def cert_pem(self) -> bytes:
        return pem_cert(self.cert)

    @property
    def key_pem(self) -> bytes:
        return pem_key(self.key)

    def issue(
        self,
        common_name: str,
        *,
        organizations: Sequence[str] = (),
        dns_names: Sequence[str] = (),
        ip_addresses: Sequence[str] = (),
        server: bool = False,
    ) -> tuple[bytes, bytes]:
        """A leaf certificate and its key as (cert PEM, key PEM): a serving certificate when ``server``,
        else a client certificate (for kube-apiserver, CN is the user and O the groups)."""
        key = ec.generate_private_key(ec.SECP256R1())
        attributes = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
        attributes += [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
        now = datetime.datetime.now(datetime.UTC)
        purpose = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name(attributes))
            .issuer_name(self.cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - _VALID_BEFORE)
            .not_valid_after(now + _VALID_FOR)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([purpose]), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()), critical=False
            )
        )
        sans: list[x509.GeneralName] = [x509.DNSName(n) for n in dns_names]
        sans += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ip_addresses]
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        return pem_cert(builder.sign(self.key, hashes.SHA256())), pem_key(key)
