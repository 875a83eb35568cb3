"""fleetsched.kube.http1: answers framed every way HTTP/1.1 allows are read whole, in any split;
connections are reused until the server closes them, and a GET on one it closed silently is sent again."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from fleetsched.kube import http1


def answer_of(*pieces: bytes) -> tuple[http1.Response | BaseException, bool]:
    """Feed ``pieces`` to a connection waiting for an answer; what it got and whether it is reusable."""
    loop = asyncio.new_event_loop()
    try:
        connection = http1._Connection()
        waiter: asyncio.Future[http1.Response] = loop.create_future()
        connection.waiter = waiter
        for piece in pieces:
            connection.data_received(piece)
        if not waiter.done():
            connection.connection_lost(None)
        assert waiter.done()
        exc = waiter.exception()
        return (exc if exc is not None else waiter.result()), connection.keep_alive
    finally:
        loop.close()


CHUNKED = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;x=y\r\n world\r\n0\r\n\r\n"


@pytest.mark.parametrize(
    ("pieces", "status", "body", "keep_alive"),
    [
        pytest.param([b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"], 200, b"{}", True,
                     id="content length"),
        pytest.param([CHUNKED], 200, b"hello world", True, id="chunked with an extension"),
        pytest.param([CHUNKED[:1], CHUNKED[1:30], CHUNKED[30:31], CHUNKED[31:]], 200,
                     b"hello world", True, id="chunked, split anywhere"),
        pytest.param([b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n0\r\nX-T: 1\r\n\r\n"],
                     200, b"ab", True, id="chunked with a trailer"),
        pytest.param([b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 409 Conflict\r\nContent-Length: 1\r\n\r\nx"],
                     409, b"x", True, id="an interim answer first"),
        pytest.param([b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\nx"], 200, b"x",
                     False, id="connection close"),
        pytest.param([b"HTTP/1.1 200 OK\r\n\r\nuntil", b" the close"], 200, b"until the close", False,
                     id="no framing: until the close"),
        pytest.param([b"HTTP/1.1 204 No Content\r\n\r\n"], 204, b"", True, id="no content"),
    ],
)
def test_an_answer_is_read_whole(pieces: list[bytes], status: int, body: bytes, keep_alive: bool) -> None:
    got, reusable = answer_of(*pieces)
    assert isinstance(got, http1.Response), got
    assert (got.status, got.body, reusable) == (status, body, keep_alive)


def test_a_close_mid_answer_or_before_it_is_a_connection_error() -> None:
    got, _ = answer_of(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")
    assert isinstance(got, ConnectionError) and "mid-answer" in str(got)
    got, _ = answer_of()
    assert isinstance(got, http1._Stale)
    got, _ = answer_of(b"SMTP ready\r\n\r\n")
    assert isinstance(got, ConnectionError) and "malformed" in str(got)


def loopback_server(answers_per_connection: int, *, polite: bool) -> tuple[Any, list[int]]:
    """An HTTP/1.1 server echoing bodies with keep-alive; after ``answers_per_connection`` answers it
    closes the connection, saying so in the last answer when ``polite``."""
    accepted: list[int] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(1)
        for number in range(answers_per_connection):
            head = await reader.readuntil(b"\r\n\r\n")
            length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                           if line.lower().startswith(b"content-length")), 0)
            body = await reader.readexactly(length) + b"!"
            close = b"Connection: close\r\n" if polite and number == answers_per_connection - 1 else b""
            writer.write(b"HTTP/1.1 200 OK\r\n%sContent-Length: %d\r\n\r\n%s" % (close, len(body), body))
            await writer.drain()
        writer.close()

    return serve, accepted


async def test_connections_are_reused_until_the_server_says_close() -> None:
    serve, accepted = loopback_server(2, polite=True)
    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    pool = http1.Http1Pool(f"http://127.0.0.1:{port}", ssl_context=None, headers={"User-Agent": "t"})
    try:
        bodies = [(await pool.request("PATCH", "/x", b"%d" % i)).body for i in range(5)]
        assert bodies == [b"0!", b"1!", b"2!", b"3!", b"4!"]
        assert len(accepted) == 3  # two answers per connection, then a new one
    finally:
        await pool.close()
        server.close()
        await server.wait_closed()


async def test_a_get_is_sent_again_when_its_reused_connection_was_closed_silently() -> None:
    serve, accepted = loopback_server(1, polite=False)
    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    pool = http1.Http1Pool(f"http://127.0.0.1:{port}", ssl_context=None, headers={"User-Agent": "t"})
    try:
        for _ in range(3):
            assert (await pool.request("GET", "/x")).body == b"!"
        assert len(accepted) == 3
    finally:
        await pool.close()
        server.close()
        await server.wait_closed()


def test_framing_headers_are_found_whatever_their_case_and_spacing() -> None:
    head = b"HTTP/1.1 200 OK\r\nX-Other: content-length: 99\r\ncontent-LENGTH  :  3\r\n\r\n"
    got, reusable = answer_of(head + b"abc")
    assert isinstance(got, http1.Response) and (got.body, reusable) == (b"abc", True)
    got, reusable = answer_of(b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 1\r\n\r\nx")
    assert isinstance(got, http1.Response) and (got.body, reusable) == (b"x", True)
    got, reusable = answer_of(b"HTTP/1.1 200 OK\r\nTRANSFER-ENCODING: Chunked\r\n\r\n1\r\nz\r\n0\r\n\r\n")
    assert isinstance(got, http1.Response) and (got.body, reusable) == (b"z", True)


async def test_the_client_adds_its_field_manager_to_writes_only_and_skips_unread_answers() -> None:
    from fleetsched.kube.client import ApiError, Connection, KubeClient

    targets: list[bytes] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError:
                break
            target = head.split(b" ")[1]
            targets.append(target)
            length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                           if line.lower().startswith(b"content-length")), 0)
            await reader.readexactly(length)
            if b"missing" in target:
                status, body = b"404 Not Found", b'{"reason":"NotFound","message":"gone"}'
            else:
                status, body = b"200 OK", b'{"metadata":{"name":"x"}}'

            writer.write(b"HTTP/1.1 %s\r\nContent-Length: %d\r\n\r\n%s" % (status, len(body), body))
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    client = KubeClient(Connection(server=f"http://127.0.0.1:{port}"), field_manager="fleetsched/r 1")
    try:
        assert await client.get("/a") == {"metadata": {"name": "x"}}
        assert await client.merge_patch("/b", {"x": 1}) == {"metadata": {"name": "x"}}
        assert await client.create("/c", {"x": 1}, decode=False) == {}
        await client.request("PUT", "/d", body={}, params={"dryRun": "All"})
        client.field_manager = "other"
        await client.create("/e", {})
        with pytest.raises(ApiError) as caught:  # an error answer is read even when the answer is not
            await client.create("/missing", {}, decode=False)
        assert (caught.value.status, caught.value.reason, caught.value.message) == (404, "NotFound", "gone")
    finally:
        await client.close()
        server.close()
    assert targets == [
        b"/a",
        b"/b?fieldManager=fleetsched%2Fr+1",
        b"/c?fieldManager=fleetsched%2Fr+1",
        b"/d?dryRun=All&fieldManager=fleetsched%2Fr+1",
        b"/e?fieldManager=other",
        b"/missing?fieldManager=other",
    ]


# -- strictness: what is refused, and the clear error it gets ------------------------------------

OK_HEAD = b"HTTP/1.1 200 OK\r\n"


@pytest.mark.parametrize(
    ("pieces", "error"),
    [
        pytest.param([b"HTTP/1.1 000 Nothing\r\nContent-Length: 0\r\n\r\n"], "bad status line",
                     id="status 0"),
        pytest.param([b"HTTP/1.1 20 OK\r\nContent-Length: 0\r\n\r\n"], "bad status line", id="two digits"),
        pytest.param([b"HTTP/1.1 OK\r\nContent-Length: 0\r\n\r\n"], "bad status line", id="no status"),
        pytest.param([b"HTTP/2 200 OK\r\nContent-Length: 0\r\n\r\n"], "bad status line", id="not HTTP/1.x"),
        pytest.param([b"HTTP/1.1 101 Switching Protocols\r\n\r\n"], "no upgrade", id="101"),
        pytest.param([b"HTTP/1.1 100 Continue\r\n\r\n" * 9 + OK_HEAD + b"Content-Length: 0\r\n\r\n"],
                     "more than 8 interim (1xx) answers", id="1xx flood"),
        pytest.param([OK_HEAD + b"Content-Length: -1\r\n\r\n"], "bad Content-Length", id="negative length"),
        pytest.param([OK_HEAD + b"Content-Length: 0x10\r\n\r\n"], "bad Content-Length", id="hex length"),
        pytest.param([OK_HEAD + b"Content-Length: 1\r\nContent-Length: 2\r\n\r\nxy"],
                     "conflicting Content-Length", id="two lengths"),
        pytest.param([OK_HEAD + b"Content-Length: 1, 2\r\n\r\nxy"], "conflicting Content-Length",
                     id="a list of two lengths"),
        pytest.param([OK_HEAD + b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"],
                     "both Content-Length and Transfer-Encoding", id="length and chunked"),
        pytest.param([OK_HEAD + b"Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n"],
                     "unsupported Transfer-Encoding", id="a coding not asked for"),
        pytest.param([OK_HEAD + b"Transfer-Encoding: chunked\r\n\r\n5\r\nhelloXX0\r\n\r\n"],
                     "chunk data not followed by CRLF", id="chunk without CRLF"),
        pytest.param([OK_HEAD + b"Transfer-Encoding: chunked\r\n\r\nzz\r\nhi\r\n0\r\n\r\n"],
                     "bad chunk-size line", id="chunk size not hex"),
        pytest.param([OK_HEAD + b"Transfer-Encoding: chunked\r\n\r\n-1\r\n\r\n"],
                     "bad chunk-size line", id="negative chunk size"),
        pytest.param([OK_HEAD + b"Transfer-Encoding: chunked\r\n\r\n1;" + b"x" * 2000],
                     "chunk-size line over 1024 bytes", id="endless chunk-size line"),
        pytest.param([OK_HEAD + b"X: " + b"y" * 70000], "head over 64 KiB", id="endless head"),
        pytest.param([OK_HEAD + b"Content-Length: 99999999999\r\n\r\n"], "over 16 MiB", id="length over cap"),
    ],
)
def test_a_malformed_answer_is_refused_with_a_clear_error(pieces: list[bytes], error: str) -> None:
    got, reusable = answer_of(*pieces)
    assert isinstance(got, http1.ProtocolError), got
    assert error in str(got) and " HTTP answer from " in str(got)
    assert not reusable


def test_what_http_allows_is_still_read() -> None:
    got, _ = answer_of(b"HTTP/1.1 100 Continue\r\n\r\n" * 8 + OK_HEAD + b"Content-Length: 2\r\n\r\nok")
    assert isinstance(got, http1.Response) and (got.status, got.body) == (200, b"ok")
    got, _ = answer_of(OK_HEAD + b"Content-Length: 2\r\nContent-Length: 02, 2\r\n\r\nok")
    assert isinstance(got, http1.Response) and got.body == b"ok"  # the same length twice
    got, _ = answer_of(b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 3\r\nContent-Length: 0\r\n\r\n")
    assert isinstance(got, http1.Response) and (got.status, got.retry_after) == (429, "3")


def test_bodies_over_the_limit_are_refused_however_they_are_framed() -> None:
    small = http1.Limits(body=1000)

    def answer(*pieces: bytes) -> http1.Response | BaseException:
        loop = asyncio.new_event_loop()
        try:
            connection = http1._Connection(small)
            waiter: asyncio.Future[http1.Response] = loop.create_future()
            connection.expect(waiter, small.body)
            for piece in pieces:
                connection.data_received(piece)
                if waiter.done():
                    break
            else:
                connection.connection_lost(None)
            return waiter.exception() or waiter.result()
        finally:
            loop.close()

    chunked = OK_HEAD + b"Transfer-Encoding: chunked\r\n\r\n"
    for pieces in (
        [chunked] + [b"100\r\n" + b"x" * 256 + b"\r\n"] * 5,  # 1,280 bytes in five chunks
        [chunked] + [b"1\r\nx\r\n"] * 300,  # small chunks: the framing counts too
        [OK_HEAD + b"\r\n"] + [b"x" * 100] * 11,  # until the close
        [OK_HEAD + b"Content-Length: 1001\r\n\r\n"],
    ):
        got = answer(*pieces)
        assert isinstance(got, http1.AnswerTooLarge), got
    assert isinstance(answer(OK_HEAD + b"Content-Length: 900\r\n\r\n" + b"x" * 900), http1.Response)


def test_the_answers_in_flight_share_one_budget() -> None:
    loop = asyncio.new_event_loop()
    try:
        limits = http1.Limits(body=1000, in_flight=1400)
        budget = http1._Budget(limits.in_flight)
        first, second = http1._Connection(limits, budget), http1._Connection(limits, budget)
        waiters = [loop.create_future(), loop.create_future()]
        first.expect(waiters[0], limits.body)
        second.expect(waiters[1], limits.body)
        first.data_received(OK_HEAD + b"Content-Length: 900\r\n\r\n" + b"x" * 700)
        second.data_received(OK_HEAD + b"Content-Length: 900\r\n\r\n" + b"x" * 700)
        assert not waiters[0].done()
        assert isinstance(waiters[1].exception(), http1.AnswerTooLarge)
        assert "answers in flight over 1400 bytes together" in str(waiters[1].exception())
        first.data_received(b"x" * 200)
        assert waiters[0].result().body == b"x" * 900
        assert budget.used == 0  # both released: one finished, one refused
    finally:
        loop.close()


def test_bytes_nobody_asked_for_close_the_connection() -> None:
    loop = asyncio.new_event_loop()
    try:
        connection = http1._Connection()
        waiter: asyncio.Future[http1.Response] = loop.create_future()
        connection.expect(waiter, 1000)
        connection.data_received(OK_HEAD + b"Content-Length: 1\r\n\r\nx")
        assert waiter.result().body == b"x" and connection.keep_alive and not connection.closed
        connection.data_received(b"x" * 10000)  # the server floods an idle connection
        assert connection.closed and not connection.reusable and not connection._buffer
    finally:
        loop.close()
