"""The one throwaway PKI: leaves chain to their CA, carry their purpose, and pass a strict TLS handshake."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from fleetsched.testing.pki import CertificateAuthority, write_private


def _handshake(server: ssl.SSLContext, client: ssl.SSLContext, hostname: str) -> None:
    """A TLS handshake over memory buffers: no sockets, the verification is the real one."""
    c_in, c_out, s_in, s_out = ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()
    client_side = client.wrap_bio(c_in, c_out, server_hostname=hostname)
    server_side = server.wrap_bio(s_in, s_out, server_side=True)
    done = {"client": False, "server": False}
    for _ in range(20):
        for name, side, out, peer_in in (("client", client_side, c_out, s_in),
                                         ("server", server_side, s_out, c_in)):
            if not done[name]:
                try:
                    side.do_handshake()
                    done[name] = True
                except ssl.SSLWantReadError:
                    pass
            peer_in.write(out.read())
        if all(done.values()):
            return
    raise AssertionError("handshake did not finish")


def test_server_and_client_certificates_pass_strict_mutual_tls(tmp_path: Path) -> None:
    ca = CertificateAuthority.create("test-ca")
    server_cert, server_key = ca.issue("srv", dns_names=["localhost"], ip_addresses=["127.0.0.1"],
                                       server=True)
    client_cert, client_key = ca.issue("admin", organizations=["system:masters"])
    (tmp_path / "ca.crt").write_bytes(ca.cert_pem)
    for name, data in (("s.crt", server_cert), ("c.crt", client_cert)):
        (tmp_path / name).write_bytes(data)
    write_private(tmp_path / "s.key", server_key)
    write_private(tmp_path / "c.key", client_key)
    assert (tmp_path / "s.key").stat().st_mode & 0o777 == 0o600

    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(tmp_path / "s.crt", tmp_path / "s.key")
    server.load_verify_locations(tmp_path / "ca.crt")
    server.verify_mode = ssl.CERT_REQUIRED
    server.verify_flags |= ssl.VERIFY_X509_STRICT
    client = ssl.create_default_context(cafile=str(tmp_path / "ca.crt"))
    client.verify_flags |= ssl.VERIFY_X509_STRICT
    client.load_cert_chain(tmp_path / "c.crt", tmp_path / "c.key")
    _handshake(server, client, "localhost")

    leaf = x509.load_pem_x509_certificate(client_cert)
    leaf.verify_directly_issued_by(ca.cert)
    assert leaf.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value == x509.ExtendedKeyUsage(
        [ExtendedKeyUsageOID.CLIENT_AUTH])
    organizations = leaf.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)
    assert [a.value for a in organizations] == ["system:masters"]
    with pytest.raises(x509.ExtensionNotFound):
        leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName)


def test_a_server_certificate_is_refused_for_a_name_it_does_not_carry(tmp_path: Path) -> None:
    ca = CertificateAuthority.create("test-ca")
    cert, key = ca.issue("srv", dns_names=["localhost"], server=True)
    (tmp_path / "s.crt").write_bytes(cert)
    write_private(tmp_path / "s.key", key)
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(tmp_path / "s.crt", tmp_path / "s.key")
    client = ssl.create_default_context(cadata=ca.cert_pem.decode())
    with pytest.raises(ssl.SSLCertVerificationError):
        _handshake(server, client, "elsewhere.example")
    other = ssl.create_default_context(cadata=CertificateAuthority.create("other").cert_pem.decode())
    with pytest.raises(ssl.SSLCertVerificationError):
        _handshake(server, other, "localhost")
