"""The client's credentials over real HTTPS on loopback: one TLS context for requests and watches
(client certificate included, also with insecure-skip-tls-verify), a client certificate replaced on
disk, a 401 sent once more with a token file read again, an http proxy's CONNECT and
tls-server-name. The servers are aiohttp with Python's TLS; the e2e against kube-apiserver is
tests/e2e/test_credentials.py."""

from __future__ import annotations

import asyncio
import dataclasses
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from fleetsched.kube import auth
from fleetsched.kube.client import ApiError, Connection, KubeClient
from fleetsched.testing.pki import CertificateAuthority, write_private


@dataclass
class Pki:
    directory: Path
    serving: CertificateAuthority = field(default_factory=lambda: CertificateAuthority.create("serving"))
    clients: CertificateAuthority = field(default_factory=lambda: CertificateAuthority.create("clients"))

    def write(self, name: str, data: bytes) -> str:
        write_private(self.directory / name, data)
        return str(self.directory / name)

    def client_pair(self, user: str, prefix: str = "client") -> tuple[str, str]:
        cert, key = self.clients.issue(user)
        return self.write(f"{prefix}.crt", cert), self.write(f"{prefix}.key", key)

    def server_context(self, dns_names: tuple[str, ...] = (), ips: tuple[str, ...] = ("127.0.0.1",)
                       ) -> ssl.SSLContext:
        cert, key = self.serving.issue("server", dns_names=dns_names, ip_addresses=ips, server=True)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=self.write("clients.crt",
                                                                                       self.clients.cert_pem))
        context.load_cert_chain(self.write("server.crt", cert), self.write("server.key", key))
        context.verify_mode = ssl.CERT_OPTIONAL
        return context


@pytest.fixture
def pki(tmp_path: Path) -> Pki:
    return Pki(tmp_path)


def peer_user(request: web.Request) -> str:
    transport = request.transport
    cert = transport.get_extra_info("peercert") if transport is not None else None
    if not cert:
        return ""
    return next((value for rdn in cert["subject"] for key, value in rdn if key == "commonName"), "")


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
Serve = Callable[[Handler, ssl.SSLContext], Awaitable[int]]


@pytest.fixture
async def serve() -> AsyncIterator[Serve]:
    runners: list[web.AppRunner] = []

    async def start(handler: Handler, context: ssl.SSLContext) -> int:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", handler)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context).start()
        runners.append(runner)
        return int(runner.addresses[0][1])

    yield start
    for runner in runners:
        await runner.cleanup()


async def whoami(request: web.Request) -> web.StreamResponse:
    """The user of the client certificate, as JSON; a watch streams it as one event line."""
    user = peer_user(request)
    if not user:
        return web.json_response({"message": "Unauthorized"}, status=401)
    if request.query.get("watch"):
        response = web.StreamResponse()
        await response.prepare(request)
        await response.write(b'{"type":"ADDED","object":{"user":"%s"}}\n' % user.encode())
        return response
    return web.json_response({"user": user})


async def watched_user(client: KubeClient) -> str:
    timeout = aiohttp.ClientTimeout(total=10)
    async with client.stream("/api/v1/nodes", {"watch": "true"}, timeout=timeout) as it:
        async for chunk in it:
            return str(chunk.split(b'"user":"')[1].split(b'"')[0].decode())
    return ""


async def test_requests_and_watches_present_the_client_certificate_also_when_insecure(pki: Pki,
                                                                                        serve: Serve) -> None:
    port = await serve(whoami, pki.server_context())
    certificate, key = pki.client_pair("fleetsched")
    for insecure in (True, False):
        ca = None if insecure else pki.write("serving.crt", pki.serving.cert_pem)
        client = KubeClient(Connection(server=f"https://127.0.0.1:{port}", ca_path=ca, insecure=insecure,
                                       certificate_path=certificate, private_key_path=key))
        try:
            assert await client.get("/api/v1/nodes/x") == {"user": "fleetsched"}
            assert await watched_user(client) == "fleetsched"  # the watches' TLS is the requests' TLS
        finally:
            await client.close()


async def test_a_client_certificate_replaced_on_disk_is_used_for_new_connections(
        pki: Pki, serve: Serve, monkeypatch: pytest.MonkeyPatch) -> None:
    port = await serve(whoami, pki.server_context())
    certificate, key = pki.client_pair("first")
    ca = pki.write("serving.crt", pki.serving.cert_pem)
    client = KubeClient(Connection(server=f"https://127.0.0.1:{port}", ca_path=ca,
                                   certificate_path=certificate, private_key_path=key))
    try:
        assert await client.get("/a") == {"user": "first"}
        monkeypatch.setattr(auth, "CERT_CHECK_PERIOD", 0.0)
        # the certificate written, not yet its key: the old pair stays in use
        other_cert, other_key = pki.clients.issue("second")
        Path(certificate).write_bytes(other_cert)
        assert await client.get("/a") == {"user": "first"}
        Path(key).write_bytes(other_key)
        assert await client.get("/a") == {"user": "second"}  # the idle connection was dropped
        assert await watched_user(client) == "second"
    finally:
        await client.close()


async def test_a_401_is_sent_once_more_with_the_token_file_read_again(pki: Pki, serve: Serve,
                                                                       tmp_path: Path) -> None:
    valid = {"old"}
    carried_out: list[str] = []
    refused: list[str] = []

    async def handler(request: web.Request) -> web.StreamResponse:
        token = request.headers.get("Authorization", "").removeprefix("Bearer ")
        if token not in valid:
            refused.append(token)
            return web.json_response({"kind": "Status", "message": "Unauthorized", "reason": "Unauthorized"},
                                     status=401)
        carried_out.append(f"{request.method} {token}")
        return web.json_response({"ok": True})

    port = await serve(handler, pki.server_context())
    token = tmp_path / "token"
    token.write_text("old")
    client = KubeClient(Connection(server=f"https://127.0.0.1:{port}", insecure=True, token_file=str(token),
                                   identity="the test's token file"))
    try:
        assert await client.create("/apis/g/v1/namespaces/n/things", {}) == {"ok": True}
        token.write_text("new")  # rotated on disk; the server stops taking the old one
        valid.clear()
        valid.add("new")
        assert await client.create("/apis/g/v1/namespaces/n/things", {}) == {"ok": True}
        assert carried_out == ["POST old", "POST new"] and refused == ["old"]  # one write each, no double
        assert client.credentials.health.problem() is None
        valid.clear()  # revoked, nothing new on disk: refused every time, and said so after three
        for _ in range(3):
            with pytest.raises(ApiError) as caught:
                await client.create("/apis/g/v1/namespaces/n/things", {})
            assert caught.value.status == 401
        assert client.credentials.health.problem() == (
            "credentials refused: create things.g answered 401 Unauthorized 3 times for the test's token "
            "file: Unauthorized")
    finally:
        await client.close()


async def tunnel(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, seen: list[str]) -> None:
    head = await reader.readuntil(b"\r\n\r\n")
    request_line = head.split(b"\r\n")[0].decode()
    seen.append(request_line)
    host, _, port = request_line.split(" ")[1].rpartition(":")
    upstream_reader, upstream_writer = await asyncio.open_connection(host, int(port))
    writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")

    async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        try:
            while data := await source.read(65536):
                sink.write(data)
                await sink.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            sink.close()

    await asyncio.gather(pipe(reader, upstream_writer), pipe(upstream_reader, writer))


async def test_an_http_proxy_tunnels_requests_and_watches_and_tls_server_name_is_checked(
        pki: Pki, serve: Serve) -> None:
    # the server's certificate names only "kubernetes": reached at 127.0.0.1, it verifies by tls-server-name
    port = await serve(whoami, pki.server_context(dns_names=("kubernetes",), ips=()))
    seen: list[str] = []
    proxy = await asyncio.start_server(lambda r, w: tunnel(r, w, seen), "127.0.0.1", 0)
    proxy_port = proxy.sockets[0].getsockname()[1]
    certificate, key = pki.client_pair("proxied")
    ca = pki.write("serving.crt", pki.serving.cert_pem)
    base = Connection(server=f"https://127.0.0.1:{port}", ca_path=ca, certificate_path=certificate,
                      private_key_path=key)
    client = KubeClient(dataclasses.replace(base, tls_server_name="kubernetes",
                                                 proxy_url=f"http://127.0.0.1:{proxy_port}"))
    unnamed = KubeClient(base)
    try:
        assert await client.get("/a") == {"user": "proxied"}
        assert await watched_user(client) == "proxied"
        assert seen == [f"CONNECT 127.0.0.1:{port} HTTP/1.1"] * 2
        with pytest.raises(ssl.SSLCertVerificationError):  # the same server, checked by its address
            await unnamed.get("/a")
    finally:
        await client.close()
        await unnamed.close()
        proxy.close()
