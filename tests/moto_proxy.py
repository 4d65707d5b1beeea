"""A pass-through HTTP proxy in front of moto's server, for what moto does not do.

moto answers EC2 as a cloud that never refuses and lacks a few actions. Tests that
need a refusal (a security group that lingers, an action the account may not call) or
an action moto lacks (``GetSpotPlacementScores``) put this proxy between gpudesk and
moto: ``intercept`` answers a request itself; every other request goes on to moto
unchanged, so gpudesk still speaks HTTP to a real server (``url`` is what
``AWS_ENDPOINT_URL`` takes).
"""

from __future__ import annotations

import http.client
import http.server
import threading
from typing import Self
from urllib.parse import urlsplit


class MotoProxy:
    """Subclasses override :meth:`intercept`."""

    def __init__(self, upstream: str) -> None:
        self.upstream = urlsplit(upstream)
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                answered = proxy.intercept(body)
                if answered is not None:
                    status, data = answered
                    self._answer(status, {"Content-Type": "text/xml"}, data.encode())
                    return
                self._forward("POST", body)

            def do_GET(self) -> None:  # noqa: N802
                self._forward("GET", b"")

            def _forward(self, method: str, body: bytes) -> None:
                conn = http.client.HTTPConnection(proxy.upstream.hostname or "127.0.0.1",
                                                  proxy.upstream.port, timeout=30)
                try:
                    headers = {k: v for k, v in self.headers.items()
                               if k.lower() not in ("connection", "content-length")}
                    conn.request(method, self.path, body=body, headers=headers)
                    reply = conn.getresponse()
                    data = reply.read()
                    kept = {k: v for k, v in reply.getheaders() if k.lower() not in (
                        "connection", "content-length", "transfer-encoding")}
                    self._answer(reply.status, kept, data)
                finally:
                    conn.close()

            def _answer(self, status: int, headers: dict[str, str], data: bytes) -> None:
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def intercept(self, body: bytes) -> tuple[int, str] | None:
        """(HTTP status, XML body) to answer a POST here; None sends it on to moto."""
        return None

    def start(self) -> Self:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
