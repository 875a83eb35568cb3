"""A plain-HTTP scheduler extender on loopback that rejects every candidate cluster, with reasons
the test chooses (hostile, huge): what tests of long or raw extender messages talk to."""

from __future__ import annotations

import contextlib
import http.server
import json
import threading
from collections.abc import Callable, Iterator

Reasons = Callable[[list[str]], dict[str, str]]


@contextlib.contextmanager
def rejecting_extender(reasons: Reasons, path: str = "/ext") -> Iterator[str]:
    """Serve an extender whose Filter answers no cluster, with ``reasons(clusterNames)`` as its
    ``failedClusters``; yields its URL."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            args = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            body = json.dumps({"clusterNames": [], "failedClusters": reasons(args["clusterNames"])}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}{path}"
    finally:
        server.shutdown()
        server.server_close()
