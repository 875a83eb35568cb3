"""The client against a real loopback server that misbehaves: an endless chunked body, a flood of
1xx answers, bad lengths, a slow drip, 429s, garbage. Each ends in a clear error (or, for 429 with
Retry-After, a retry), the memory it takes stays bounded, and the next request on the same client
gets its answer. A hypothesis fuzz sends generated answers, well-formed (read exactly, in any split)
and mangled (a clear error or a plausible answer, never anything else)."""

from __future__ import annotations

import asyncio
import collections
import tracemalloc
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fleetsched.kube import http1
from fleetsched.kube.client import ApiError, Connection, KubeClient

Script = Callable[[asyncio.StreamWriter], Awaitable[bool]]  # True: keep the connection open
GOOD = b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\n{\"good\":true}"


class Loopback:
    """A real TCP server on 127.0.0.1: each request it reads gets the next scripted answer (a
    well-formed one when none is left); it records the request lines it read."""

    def __init__(self) -> None:
        self.scripts: collections.deque[Script] = collections.deque()
        self.requests: list[bytes] = []
        self.server: asyncio.Server | None = None
        self.port = 0
        self.handlers: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> Loopback:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()
        for task in self.handlers:
            task.cancel()
        await asyncio.gather(*self.handlers, return_exceptions=True)
        await self.server.wait_closed()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def answer(self, *scripts: Script) -> None:
        self.scripts.extend(scripts)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self.handlers.add(task)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                self.requests.append(head.partition(b"\r\n")[0])
                length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length")), 0)
                await reader.readexactly(length)
                script = self.scripts.popleft() if self.scripts else sends(GOOD)
                if not await script(writer):
                    break
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass  # the client hung up, or the test is over
        finally:
            writer.close()
            self.handlers.discard(task)


def sends(*pieces: bytes, keep: bool = True) -> Script:
    async def script(writer: asyncio.StreamWriter) -> bool:
        for piece in pieces:
            writer.write(piece)
            await writer.drain()
        return keep

    return script


def endless_chunks(limit: int = 200 * http1.MiB) -> Script:
    """Chunks of 64 KiB until the client hangs up (or ``limit``, so that a client without a
    bound does not take the machine with it)."""

    async def script(writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        chunk = b"10000\r\n" + b"x" * 0x10000 + b"\r\n"
        sent = 0
        while sent < limit:
            writer.write(chunk)
            await writer.drain()
            sent += len(chunk)
        await asyncio.sleep(3600)
        return False

    return script


def drip(data: bytes, every: float) -> Script:
    async def script(writer: asyncio.StreamWriter) -> bool:
        for byte in data:
            writer.write(bytes([byte]))
            await writer.drain()
            await asyncio.sleep(every)
        return False

    return script


async def peak_memory(action: Awaitable[Any]) -> tuple[Any, int]:
    """What ``action`` returned or raised, and the peak of Python's traced memory while it ran."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        try:
            outcome: Any = await action
        except Exception as exc:  # the outcome under test
            outcome = exc
        return outcome, tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


MISBEHAVIOURS = {
    "1xx flood": (sends(b"HTTP/1.1 100 Continue\r\n\r\n" * 20000, keep=False), "interim (1xx) answers"),
    "status 0": (sends(b"HTTP/1.1 000 \r\nContent-Length: 2\r\n\r\n{}", keep=False), "bad status line"),
    "negative length": (sends(b"HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\n{}"), "bad Content-Length"),
    "two lengths": (sends(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}"),
                    "conflicting Content-Length"),
    "length and chunked": (sends(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked"
                                 b"\r\n\r\n2\r\n{}\r\n0\r\n\r\n"),
                           "both Content-Length and Transfer-Encoding"),
    "chunk without CRLF": (sends(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}0\r\n\r\n"),
                           "chunk data not followed by CRLF"),
    "chunk size not hex": (sends(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\ng\r\n{}\r\n"),
                           "bad chunk-size line"),
    "endless chunk-size line": (sends(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2"
                                      + b" " * 5000),
                                "chunk-size line over"),
    "endless chunked body": (endless_chunks(), "answer over 16 MiB"),
}


@pytest.mark.parametrize("name", list(MISBEHAVIOURS))
async def test_each_misbehaviour_ends_in_a_clear_error_and_the_retry_gets_its_answer(name: str) -> None:
    script, error = MISBEHAVIOURS[name]
    async with Loopback() as server:
        client = KubeClient(Connection(server=server.url))
        client._http.timeout = 30.0  # a bound for a client that never gives up; never reached here
        try:
            server.answer(script)
            outcome, peak = await peak_memory(client.merge_patch("/apis/x/v1/things/a/status", {"s": 1}))
            assert isinstance(outcome, http1.ProtocolError), outcome
            assert isinstance(outcome, OSError)  # what every caller retries
            assert error in str(outcome) and f"127.0.0.1:{server.port}" in str(outcome)
            assert peak < 48 * http1.MiB  # the 16 MiB answer limit, with room; unbounded, it was GBs
            # the retry, as the caller's queue would send it
            assert await client.merge_patch("/apis/x/v1/things/a/status", {"s": 1}) == {"good": True}
        finally:
            await client.close()
    assert len(server.requests) == 2


async def test_a_slow_drip_ends_at_the_request_deadline_and_the_retry_gets_its_answer() -> None:
    async with Loopback() as server:
        client = KubeClient(Connection(server=server.url))
        client._http.timeout = 1.0
        try:
            server.answer(drip(b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n" + b"x" * 50, 0.05))
            with pytest.raises(TimeoutError, match=r"no complete answer from 127\.0\.0\.1:\d+ within 1s"):
                await client.get("/api/v1/namespaces/a")
            server.answer(drip(b"HTTP/1.1 100 Continue\r\n\r\n" * 100, 0.05))  # interim answers only
            with pytest.raises(TimeoutError):
                await client.get("/api/v1/namespaces/a")
            assert await client.get("/api/v1/namespaces/a") == {"good": True}
        finally:
            await client.close()


def status(code: bytes, *headers: bytes, body: bytes = b"{}") -> Script:
    head = b"".join(h + b"\r\n" for h in headers)
    return sends(b"HTTP/1.1 %s\r\n%sContent-Length: %d\r\n\r\n%s" % (code, head, len(body), body))


async def test_429_with_retry_after_is_sent_again_after_the_wait_and_never_counted_done(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    waits: list[float] = []
    real_sleep = asyncio.sleep

    async def sleep(seconds: float) -> None:  # the waits are recorded, not waited
        waits.append(seconds)
        await real_sleep(0)

    monkeypatch.setattr(asyncio, "sleep", sleep)
    async with Loopback() as server:
        client = KubeClient(Connection(server=server.url))
        guarded: list[int] = []
        client.write_guard = lambda: guarded.append(1)
        try:
            # 429 then 503, both with Retry-After, then the answer: sent three times, each wait honoured
            server.answer(status(b"429 Too Many Requests", b"Retry-After: 2"),
                          status(b"503 Service Unavailable", b"Retry-After: 600"))
            assert await client.merge_patch("/x", {"a": 1}) == {"good": True}
            assert waits == [2.0, client.retry_after_max] and len(guarded) == 3
            # no Retry-After (or not whole seconds): not sent again, an ApiError for the caller
            for headers in ((), (b"Retry-After: Fri, 31 Dec 1999 23:59:59 GMT",), (b"Retry-After: -1",)):
                server.answer(status(b"429 Too Many Requests", *headers))
                with pytest.raises(ApiError) as caught:
                    await client.merge_patch("/x", {"a": 1})
                assert caught.value.status == 429
            # a 500 without Retry-After is an error at once
            server.answer(status(b"500 Internal Server Error"))
            with pytest.raises(ApiError):
                await client.merge_patch("/x", {"a": 1})
            # 429 for ever: at most max_retries more sends, then the 429 is the caller's
            client.max_retries = 3
            waits.clear()
            server.answer(*[status(b"429 Too Many Requests", b"Retry-After: 0")] * 10)
            sent = len(server.requests)
            with pytest.raises(ApiError) as caught:
                await client.merge_patch("/x", {"a": 1})
            assert caught.value.status == 429 and len(server.requests) - sent == 4 and len(waits) == 3
        finally:
            await client.close()


async def test_only_2xx_is_a_success() -> None:
    async with Loopback() as server:
        client = KubeClient(Connection(server=server.url))
        try:
            server.answer(status(b"302 Found", b"Location: /elsewhere"))
            with pytest.raises(ApiError) as caught:
                await client.merge_patch("/x", {"a": 1})
            assert caught.value.status == 302
            server.answer(status(b"200 OK", body=b"<html>proxy says hi</html>"))
            with pytest.raises(http1.ProtocolError, match="a 200 answer that is no JSON"):
                await client.merge_patch("/x", {"a": 1})
            server.answer(status(b"200 OK", body=b'"a string"'))
            with pytest.raises(http1.ProtocolError, match="no JSON object"):
                await client.get("/x")
            assert await client.get("/x") == {"good": True}
        finally:
            await client.close()


async def test_a_list_page_over_the_limit_is_asked_for_again_with_half_the_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("fleetsched.kube.client.MAX_PAGE", 3000)
    item = b'{"metadata":{"name":"%d"},"data":"' + b"x" * 900 + b'"}'

    def page(count: int, start: int, last: bool) -> Script:
        items = b",".join(item % (start + i) for i in range(count))
        cont = b'""' if last else b'"next"'
        body = b'{"metadata":{"resourceVersion":"7","continue":%s},"items":[%s]}' % (cont, items)
        return status(b"200 OK", body=body)

    async with Loopback() as server:
        client = KubeClient(Connection(server=server.url))
        try:
            server.answer(page(8, 0, False), page(4, 0, False), page(2, 0, False), page(2, 2, True))
            items, version = await client.list_all("/api/v1/configmaps", page_size=8)
        finally:
            await client.close()
    assert [i["metadata"]["name"] for i in items] == ["0", "1", "2", "3"] and version == "7"
    assert [line.split(b"?")[1].split(b" ")[0] for line in server.requests] == [
        b"limit=8", b"limit=4", b"limit=2", b"limit=2&continue=next"
    ]


# -- the fuzz: generated answers from a real socket -------------------------------------------------

settings.register_profile(
    "kube-fuzz", max_examples=150, derandomize=True, deadline=None, database=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@st.composite
def wellformed(draw: st.DrawFn) -> tuple[bytes, int, bytes]:
    """An answer HTTP/1.1 allows (wire bytes), its status and its body."""
    code = draw(st.sampled_from([200, 201, 204, 404, 409, 410, 429, 500, 503]))
    body = b"" if code == 204 else draw(st.binary(max_size=3000))
    interim = b"HTTP/1.1 100 Continue\r\n\r\n" * draw(st.integers(0, 8))
    extra = b"".join(b"X-H%d: %s\r\n" % (i, v) for i, v in enumerate(
        draw(st.lists(st.binary(min_size=0, max_size=20).filter(lambda v: b"\r" not in v and b"\n" not in v),
                      max_size=3))))
    framing = draw(st.sampled_from(["length", "chunked", "close"]))
    head = b"HTTP/1.1 %d Reason\r\n%s" % (code, extra)
    if framing == "length" or code == 204:
        wire = head + b"Content-Length: %d\r\n\r\n" % len(body) + body
    elif framing == "chunked":
        cuts = sorted(draw(st.lists(st.integers(0, len(body)), max_size=6)))
        parts = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True) if b > a]
        chunks = b"".join(b"%x%s\r\n%s\r\n" % (len(p), draw(st.sampled_from([b"", b";ext=1", b" "])), p)
                          for p in parts)
        trailer = draw(st.sampled_from([b"", b"X-Trailer: 1\r\n"]))
        wire = head + b"Transfer-Encoding: chunked\r\n\r\n" + chunks + b"0\r\n" + trailer + b"\r\n"
    else:
        wire = head + b"Connection: close\r\n\r\n" + body
    return interim + wire, code, body


@st.composite
def mangled(draw: st.DrawFn) -> bytes:
    """A well-formed answer with bytes replaced, inserted, dropped or cut off, or plain garbage."""
    wire = bytearray(draw(wellformed())[0])
    for _ in range(draw(st.integers(1, 4))):
        edit = draw(st.sampled_from(["replace", "insert", "delete", "truncate", "garbage"]))
        at = draw(st.integers(0, max(len(wire) - 1, 0)))
        noise = draw(st.sampled_from([b"\r\n", b"-1", b"0", b" ", b"\n", b"ffffffffff", b";", b":"])) \
            if draw(st.booleans()) else draw(st.binary(min_size=1, max_size=8))
        if edit == "replace":
            wire[at : at + len(noise)] = noise
        elif edit == "insert":
            wire[at:at] = noise
        elif edit == "delete":
            del wire[at : at + draw(st.integers(1, 8))]
        elif edit == "truncate":
            del wire[at:]
        else:
            wire = bytearray(draw(st.binary(max_size=200)))
    return bytes(wire)


def splits(wire: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({min(c, len(wire)) for c in cuts})
    return [wire[a:b] for a, b in zip([0, *points], [*points, len(wire)], strict=True) if b > a]


class FuzzRig:
    """One event loop, one loopback server and one pool for all the examples of a fuzz test."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.server = Loopback()
        self.loop.run_until_complete(self.server.__aenter__())
        self.pool = http1.Http1Pool(self.server.url, ssl_context=None, headers={"User-Agent": "fuzz"},
                                    timeout=5.0, limits=http1.Limits(body=64 * 1024))

    def exchange(
        self, pieces: list[bytes], *, keep: bool, method: str = "PATCH"
    ) -> http1.Response | BaseException:
        """A PATCH is never sent twice, so what it gets is what the server sent for it."""
        self.server.answer(sends(*pieces, keep=keep))

        async def one() -> http1.Response | BaseException:
            try:
                return await self.pool.request(method, "/fuzz", b"{}")
            except (http1.ProtocolError, ConnectionError, TimeoutError) as exc:
                return exc

        return self.loop.run_until_complete(one())

    def close(self) -> None:
        self.loop.run_until_complete(self.pool.close())
        self.loop.run_until_complete(self.server.__aexit__())
        self.loop.close()


@pytest.fixture(scope="module")
def rig() -> Any:
    rig = FuzzRig()
    yield rig
    rig.close()


def test_fuzz_wellformed_answers_are_read_exactly_in_any_split(rig: FuzzRig) -> None:
    @settings(settings.get_profile("kube-fuzz"))
    @given(answer=wellformed(), cuts=st.lists(st.integers(0, 4000), max_size=8))
    def check(answer: tuple[bytes, int, bytes], cuts: list[int]) -> None:
        wire, code, body = answer
        got = rig.exchange(splits(wire, cuts), keep=b"Connection: close" not in wire)
        assert isinstance(got, http1.Response), got
        assert (got.status, bytes(got.body)) == (code, body)

    check()


def test_fuzz_mangled_answers_end_in_a_clear_error_or_a_plausible_answer(rig: FuzzRig) -> None:
    @settings(settings.get_profile("kube-fuzz"))
    @given(wire=mangled(), cuts=st.lists(st.integers(0, 4000), max_size=4))
    def check(wire: bytes, cuts: list[int]) -> None:
        got = rig.exchange(splits(wire, cuts), keep=False)  # the server hangs up after it
        if isinstance(got, http1.Response):
            assert 200 <= got.status <= 599 and len(got.body) <= len(wire)
        else:
            assert isinstance(got, (http1.ProtocolError, ConnectionError)), repr(got)
            assert str(got)  # a message that says what was wrong
        # and the pool goes on: the next request gets its answer on a fresh connection
        good = rig.exchange([GOOD], keep=True, method="GET")
        assert isinstance(good, http1.Response) and good.body == b'{"good":true}', good

    check()
