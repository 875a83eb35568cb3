"""A real HTTPS scheduler extender for tests, benchmarks and local trials (never used by the operator).

It speaks ``extender.fleetsched.io/v1alpha1`` (``fleetsched.extender.protocol``), validating every
request it receives with the protocol's own ``ExtenderArgs`` model, and serves one behaviour per
URL prefix, so one server covers every case: ``https://HOST:PORT/<behaviour>`` is the ``urlPrefix``
and ``filter``/``prioritize`` the verbs.

Behaviours (``Behaviour``):

* ``ok``: filter by the cluster label ``extender.test/filter`` (``reject`` -> failedClusters,
  ``unresolvable`` -> failedAndUnresolvableClusters, anything else or absent -> kept); prioritize
  with the integer in the label ``extender.test/score`` (absent: 0);
* ``slow``: answers as ``ok`` after ``slow_seconds``;
* ``garbage``: a 200 whose body is not JSON; ``wrong-shape``: JSON of the wrong types;
  ``stranger``: keeps / scores a cluster that was not a candidate;
* ``http-500``: HTTP 500; ``error-field``: a 200 whose ``error`` field is set;
* ``huge``: a 1 MiB answer in chunks, without a Content-Length; ``redirect``: a 307 to ``ok``.

A *down* extender is a port nothing listens on (``closed_port()``). The server counts the TCP
connections and requests it saw (``stats``, or ``GET /stats`` with the CPU time when it runs as a
process), so tests
can check keep-alive reuse. With ``client_ca`` it requires a client certificate signed by that CA.
Requests are checked against ``ExtenderArgs`` (a 400 otherwise) unless ``validate=False``; without
``clusters`` in the request (a cluster-cache-capable client) it knows no labels, so it keeps every
cluster and scores 0.

Run it as a process (as ``bench/extender.py`` does):
``python -m fleetsched.testing.extender --cert C --key K [--client-ca CA] [--port P]``; it prints
``listening <port>`` once it accepts connections.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import enum
import socket
import ssl
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import uvloop
from aiohttp import web
from pydantic import ValidationError

from fleetsched.extender.protocol import API_VERSION, ExtenderArgs

__all__ = ["FILTER_LABEL", "SCORE_LABEL", "Behaviour", "ExtenderServer", "ServerStats", "closed_port"]

FILTER_LABEL = "extender.test/filter"
SCORE_LABEL = "extender.test/score"


class Behaviour(enum.StrEnum):
    OK = "ok"
    SLOW = "slow"
    GARBAGE = "garbage"
    WRONG_SHAPE = "wrong-shape"
    STRANGER = "stranger"
    HTTP_500 = "http-500"
    ERROR_FIELD = "error-field"
    HUGE = "huge"
    REDIRECT = "redirect"


@dataclass
class ServerStats:
    """What the server saw: distinct TCP connections (by client address), requests per path, and the
    last request body it decoded."""

    peers: set[tuple[str, int]] = field(default_factory=set)
    requests: dict[str, int] = field(default_factory=dict)
    last_args: ExtenderArgs | None = None

    @property
    def connections(self) -> int:
        return len(self.peers)

    @property
    def total_requests(self) -> int:
        return sum(self.requests.values())

    def reset(self) -> None:
        self.peers.clear()
        self.requests.clear()
        self.last_args = None


def closed_port() -> int:
    """A loopback port with nothing listening on it: the *down* extender."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _labels(cluster: Mapping[str, Any]) -> Mapping[str, str]:
    labels: Mapping[str, str] = cluster.get("metadata", {}).get("labels", {})
    return labels


def _candidates(args: Mapping[str, Any]) -> list[tuple[str, Mapping[str, str]]]:
    """(name, labels) per candidate; without ``clusters`` (names only) no cluster has labels."""
    if args.get("clusters") is None:
        return [(name, {}) for name in args["clusterNames"]]
    return [(c["metadata"]["name"], _labels(c)) for c in args["clusters"]]


def _filter(args: Mapping[str, Any]) -> dict[str, Any]:
    kept: list[str] = []
    failed: dict[str, str] = {}
    unresolvable: dict[str, str] = {}
    for name, labels in _candidates(args):
        verdict = labels.get(FILTER_LABEL, "")
        if verdict == "reject":
            failed[name] = f"label {FILTER_LABEL}=reject"
        elif verdict == "unresolvable":
            unresolvable[name] = f"label {FILTER_LABEL}=unresolvable"
        else:
            kept.append(name)
    return {"apiVersion": API_VERSION, "kind": "ExtenderFilterResult", "clusterNames": kept,
            "failedClusters": failed, "failedAndUnresolvableClusters": unresolvable, "error": ""}


def _prioritize(args: Mapping[str, Any]) -> dict[str, Any]:
    priorities = [{"cluster": name, "score": int(labels.get(SCORE_LABEL, "0"))}
                  for name, labels in _candidates(args)]
    return {"apiVersion": API_VERSION, "kind": "ClusterPriorityList", "priorities": priorities, "error": ""}


class ExtenderServer:
    """The test extender on its own event loop in a daemon thread (``with ExtenderServer(...) as s``),
    so the code under test may block the test's thread."""

    def __init__(self, *, cert_file: Path | None = None, key_file: Path | None = None,
                 client_ca_file: Path | None = None, host: str = "127.0.0.1", port: int = 0,
                 slow_seconds: float = 1.0, validate: bool = True) -> None:
        self.host = host
        self.validate = validate
        self.port = port
        self.slow_seconds = slow_seconds
        self.stats = ServerStats()
        self._ssl: ssl.SSLContext | None = None
        if cert_file is not None:
            ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            ctx.load_cert_chain(cert_file, key_file)
            if client_ca_file is not None:
                ctx.load_verify_locations(cafile=client_ca_file)
                ctx.verify_mode = ssl.CERT_REQUIRED
            self._ssl = ctx
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None

    @property
    def scheme(self) -> str:
        return "https" if self._ssl is not None else "http"

    def url(self, behaviour: Behaviour | str = Behaviour.OK) -> str:
        """The ``urlPrefix`` of one behaviour."""
        return f"{self.scheme}://{self.host}:{self.port}/{behaviour}"

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/{behaviour}/{verb}", self._handle)
        app.router.add_get("/stats", self._stats)
        return app

    async def _stats(self, _: web.Request) -> web.Response:
        return web.json_response({"connections": self.stats.connections, "requests": self.stats.requests,
                                  "cpu_seconds": time.process_time()})

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        peer = request.transport.get_extra_info("peername") if request.transport else None
        if peer is not None:
            self.stats.peers.add((str(peer[0]), int(peer[1])))
        self.stats.requests[request.path] = self.stats.requests.get(request.path, 0) + 1
        verb = request.match_info["verb"]
        try:
            behaviour = Behaviour(request.match_info["behaviour"])
        except ValueError:
            return web.Response(status=404, text="no such behaviour")
        if verb not in ("filter", "prioritize"):
            return web.Response(status=404, text="no such verb")
        body = await request.read()
        if self.validate:
            try:
                self.stats.last_args = ExtenderArgs.model_validate_json(body)
            except ValidationError as exc:
                return web.Response(status=400, text=f"bad ExtenderArgs: {exc.errors()[0]}")
        args = orjson.loads(body)
        if behaviour is Behaviour.SLOW:
            await asyncio.sleep(self.slow_seconds)
        elif behaviour is Behaviour.HTTP_500:
            return web.Response(status=500, text="extender broke")
        elif behaviour is Behaviour.GARBAGE:
            return web.Response(status=200, body=b"<html>not json", content_type="application/json")
        elif behaviour is Behaviour.ERROR_FIELD:
            return web.json_response({"error": "cost database unavailable"})
        elif behaviour is Behaviour.WRONG_SHAPE:
            body: Any = ({"clusterNames": "m1"} if verb == "filter"
                         else {"priorities": [{"cluster": "m1", "score": "7"}]})
            return web.json_response(body)
        elif behaviour is Behaviour.STRANGER:
            body = ({"clusterNames": ["not-a-candidate"]} if verb == "filter"
                    else [{"host": "not-a-candidate", "score": 1}])
            return web.json_response(body)
        elif behaviour is Behaviour.HUGE:
            # chunked, so no Content-Length announces the size: only the running count can stop it
            stream = web.StreamResponse(headers={"Content-Type": "application/json"})
            stream.enable_chunked_encoding()
            await stream.prepare(request)
            await stream.write(b'{"clusterNames": [], "padding": "')
            for _ in range(64):
                await stream.write(b"x" * 16384)
            await stream.write(b'"}')
            await stream.write_eof()
            return stream
        elif behaviour is Behaviour.REDIRECT:
            raise web.HTTPTemporaryRedirect(f"/{Behaviour.OK}/{verb}")
        answer = _filter(args) if verb == "filter" else _prioritize(args)
        return web.Response(body=orjson.dumps(answer), content_type="application/json")

    async def start_here(self) -> None:
        """Start listening on the running loop (the process mode and the thread mode both use it)."""
        # A slow handler stops when its client gives up, as a real server's would.
        self._runner = web.AppRunner(self.app(), access_log=None, shutdown_timeout=0.5,
                                     handler_cancellation=True)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port, ssl_context=self._ssl)
        await site.start()
        self.port = int(self._runner.addresses[0][1])

    async def stop_here(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def __enter__(self) -> ExtenderServer:
        self._loop = uvloop.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="test-extender", daemon=True)
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self.start_here(), self._loop).result(10)
        return self

    def __exit__(self, *_: object) -> None:
        assert self._loop is not None and self._thread is not None
        asyncio.run_coroutine_threadsafe(self.stop_here(), self._loop).result(10)
        asyncio.run_coroutine_threadsafe(asyncio.sleep(0.05), self._loop).result(5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop.close()


async def _serve(server: ExtenderServer) -> None:
    await server.start_here()
    print(f"listening {server.port}", flush=True)
    await asyncio.Event().wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fleetsched.testing.extender", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cert", type=Path, help="serving certificate (PEM); without it, plain HTTP")
    parser.add_argument("--key", type=Path, help="its private key (PEM)")
    parser.add_argument("--client-ca", type=Path, help="require client certificates signed by this CA")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--slow-seconds", type=float, default=1.0)
    parser.add_argument("--no-validate", action="store_true",
                        help="decode requests as plain JSON, without checking them against ExtenderArgs "
                             "(what a lean extender does; for benchmarks)")
    args = parser.parse_args(argv)
    server = ExtenderServer(cert_file=args.cert, key_file=args.key, client_ca_file=args.client_ca,
                            host=args.host, port=args.port, slow_seconds=args.slow_seconds,
                            validate=not args.no_validate)
    with contextlib.suppress(KeyboardInterrupt), asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(_serve(server))
    return 0


if __name__ == "__main__":
    sys.exit(main())
