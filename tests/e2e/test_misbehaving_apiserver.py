"""The live scheduler behind a proxy that answers some of its requests the way a broken server or
middlebox would, in front of the real kube-apiserver.

The proxy forwards everything to the apiserver (as the admin user) except every other binding write
(spec or status PATCH), which it answers itself, without forwarding, with one of: a flood of
``100 Continue``, a status-0 answer, a negative Content-Length, chunk data without its CRLF, an
endless chunked body, two different Content-Lengths, a 429 with Retry-After; the first watch of
ResourceBindings gets an endless event line. The scheduler must take each as a failed request and
retry: every binding ends up scheduled with its condition, the scheduler never counts more status
writes as done than the apiserver answered 2xx for (and counts each refused answer as a failed
write), and its memory stays far below the 1 GiB the install gives it (an endless chunked answer
took it to 5.1 GB before).
"""

from __future__ import annotations

import asyncio
import collections
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import aiohttp
import pytest

from tests.support.controlplane import APIServer, free_port, wait_until
from tests.support.karmada import (
    apply_with_status,
    binding_state,
    create_objects,
    divided_binding,
    get_json,
    ready_cluster,
)
from tests.support.processes import SchedulerProcess

NAMESPACE = "misbehaving"
CLUSTERS = ["m1", "m2"]
BINDINGS = 12
MiB = 1024 * 1024
ENDLESS_CAP = 512 * MiB  # what the proxy sends at most of an endless body: a bound for a broken client


async def write_all(writer: asyncio.StreamWriter, *pieces: bytes) -> None:
    for piece in pieces:
        writer.write(piece)
        await writer.drain()


async def endless_chunked(writer: asyncio.StreamWriter) -> None:
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
    chunk = b"10000\r\n" + b"x" * 0x10000 + b"\r\n"
    for _ in range(ENDLESS_CAP // len(chunk)):
        await write_all(writer, chunk)


MISBEHAVIOURS: dict[str, Callable[[asyncio.StreamWriter], object]] = {
    "1xx flood": lambda w: write_all(w, b"HTTP/1.1 100 Continue\r\n\r\n" * 5000),
    "status 0": lambda w: write_all(w, b"HTTP/1.1 000 \r\nContent-Length: 2\r\n\r\n{}"),
    "negative length": lambda w: write_all(w, b"HTTP/1.1 200 OK\r\nContent-Length: -2\r\n\r\n{}"),
    "chunk without CRLF": lambda w: write_all(
        w, b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}XX0\r\n\r\n"
    ),
    "endless chunked body": endless_chunked,
    "two lengths": lambda w: write_all(
        w, b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}"
    ),
    "429": lambda w: write_all(
        w, b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nContent-Length: 2\r\n\r\n{}"
    ),
}


class MisbehavingProxy:
    """A plain-HTTP proxy on loopback in a thread of its own, forwarding to ``server`` over TLS."""

    def __init__(self, server: APIServer) -> None:
        self.server = server
        self.port = free_port()
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.binding_writes = 0
        self.sabotaged: collections.Counter[str] = collections.Counter()
        self.status_2xx = 0  # status writes of bindings the apiserver answered 2xx
        self.watch_sabotaged = False
        self._rotation = list(MISBEHAVIOURS)
        self._session: aiohttp.ClientSession | None = None
        self._server: asyncio.Server | None = None

    def __enter__(self) -> MisbehavingProxy:
        self.thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self.loop).result(10)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)

    async def _start(self) -> None:
        connector = aiohttp.TCPConnector(ssl=self.server.ssl_context(), limit=200)
        self._session = aiohttp.ClientSession(connector=connector, auto_decompress=True)
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)

    async def _stop(self) -> None:
        assert self._server is not None and self._session is not None
        self._server.close()
        for task in asyncio.all_tasks():
            if task is not asyncio.current_task():
                task.cancel()
        await self._session.close()

    def kubeconfig(self, path: Path) -> Path:
        path.write_text(f"""apiVersion: v1
kind: Config
clusters:
- name: proxy
  cluster:
    server: http://127.0.0.1:{self.port}
users:
- name: anonymous
  user: {{}}
contexts:
- name: proxy
  context: {{cluster: proxy, user: anonymous}}
current-context: proxy
""")
        return path

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, target, _ = lines[0].split(" ", 2)
                headers = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
                length = int(next((v for k, v in headers.items() if k.lower() == "content-length"), "0"))
                body = await reader.readexactly(length) if length else None
                path = target.split("?", 1)[0]
                if method == "PATCH" and "/resourcebindings/" in path:
                    self.binding_writes += 1
                    if self.binding_writes % 2 == 0:
                        name = self._rotation[self.sabotaged.total() % len(self._rotation)]
                        self.sabotaged[name] += 1
                        await MISBEHAVIOURS[name](writer)  # type: ignore[misc]
                        return  # and hang up
                if "watch=true" in target and path.endswith("/resourcebindings") and not self.watch_sabotaged:
                    self.watch_sabotaged = True
                    await write_all(writer, b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
                    for _ in range(64):  # 64 MiB of one event line that never ends
                        await write_all(writer, b"100000\r\n" + b"y" * MiB + b"\r\n")
                    return
                await self._forward(method, target, headers, body, writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def _forward(
        self, method: str, target: str, headers: dict[str, str], body: bytes | None,
        writer: asyncio.StreamWriter,
    ) -> None:
        assert self._session is not None
        kept = ("content-type", "accept", "user-agent")
        forwarded = {k: v for k, v in headers.items() if k.lower() in kept}
        async with self._session.request(
            method, self.server.url + target, data=body, headers=forwarded,
            timeout=aiohttp.ClientTimeout(total=None, sock_read=None),
        ) as response:
            reason = (response.reason or "").encode()
            content_type = response.headers.get("Content-Type", "application/json").encode()
            if "watch=true" in target:
                writer.write(b"HTTP/1.1 %d %s\r\nContent-Type: %s\r\nTransfer-Encoding: chunked\r\n\r\n"
                             % (response.status, reason, content_type))
                async for chunk in response.content.iter_any():
                    await write_all(writer, b"%x\r\n%s\r\n" % (len(chunk), chunk))
                await write_all(writer, b"0\r\n\r\n")
                return
            data = await response.read()
            status_write = method == "PATCH" and target.split("?")[0].endswith("/status")
            if status_write and 200 <= response.status < 300:
                self.status_2xx += 1
            await write_all(writer, b"HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s"
                            % (response.status, reason, content_type, len(data), data))


@pytest.fixture
def proxy(isolated_apiserver: APIServer) -> Iterator[MisbehavingProxy]:
    with MisbehavingProxy(isolated_apiserver) as running:
        yield running


def peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


def test_every_binding_gets_its_condition_through_a_misbehaving_proxy(
    isolated_apiserver: APIServer, proxy: MisbehavingProxy, tmp_path: Path
) -> None:
    server = isolated_apiserver
    server.kubectl("create", "namespace", NAMESPACE)
    apply_with_status(server, [ready_cluster(name, 100) for name in CLUSTERS])
    scheduler = SchedulerProcess(
        kubeconfig=proxy.kubeconfig(tmp_path / "kubeconfig"),
        log_path=tmp_path / "scheduler.log",
        extra_args=("--leader-elect=false",),
    )
    scheduler.start()
    try:
        names = [f"b{i}" for i in range(BINDINGS)]
        create_objects(
            server, [divided_binding(name, NAMESPACE, 3 + i, CLUSTERS) for i, name in enumerate(names)]
        )

        def states() -> dict[str, dict[str, object]]:
            return {n: binding_state(get_json(server, "rb", "-n", NAMESPACE, n)) for n in names}

        def all_scheduled() -> bool:
            return all(s["scheduled"] and sum(s["clusters"].values()) == 3 + i  # type: ignore[attr-defined]
                       for i, s in enumerate(states().values()))

        wait_until(all_scheduled, timeout=180, interval=1,
                   message=lambda: f"bindings without their condition: {states()}\n"
                   f"sabotaged {dict(proxy.sabotaged)}\n{scheduler.log_tail()}")
        assert scheduler.alive()
        assert set(proxy.sabotaged) == set(MISBEHAVIOURS), proxy.sabotaged  # each one met at least once
        assert proxy.watch_sabotaged
        # no status write counted as done that the apiserver did not answer 2xx for
        writes = "fleetsched_scheduler_binding_writes_total"
        counted = scheduler.metric(writes, part="status", result="success")
        assert BINDINGS <= counted <= proxy.status_2xx, (counted, proxy.status_2xx)
        # and each refused answer was counted as a failed write (a 429 is sent again inside the client)
        failed = scheduler.metric(writes, result="error")
        assert failed >= proxy.sabotaged.total() - proxy.sabotaged["429"], (failed, proxy.sabotaged)
        log = scheduler.log_path.read_text(errors="replace")
        assert "malformed HTTP answer from 127.0.0.1" in log and "refused HTTP answer from" in log
        assert "watch event line over 16 MiB" in log
        assert scheduler.process is not None
        assert peak_rss_mib(scheduler.process.pid) < 512  # the install's limit is 1 GiB
        wait_until(scheduler.ready, timeout=30, message="scheduler not ready")
    finally:
        scheduler.stop()
