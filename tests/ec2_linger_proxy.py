"""A pass-through HTTP proxy in front of moto that refuses deletes EC2 refuses for a while.

After an instance terminates, EC2 keeps its network interface a little longer, and
until that is released ``DeleteSecurityGroup`` answers ``DependencyViolation``
("resource sg-… has a dependent object"). moto deletes at once, so this proxy sits
between boto3 and moto and answers the first ``linger`` deletes of each group with
EC2's own error document (HTTP 400, ``<Response><Errors><Error>``); every other
request, and every later delete, goes to moto unchanged. The provider under test
sees the wire answer a real EC2 would give; nothing in gpudesk is patched.
"""

from __future__ import annotations

import http.client
import http.server
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import parse_qs, urlsplit

REFUSAL = ('<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error>'
           '<Code>DependencyViolation</Code><Message>resource {group} has a dependent object'
           '</Message></Error></Errors><RequestID>{request}</RequestID></Response>')


class LingerProxy:
    """``url`` is what ``AWS_ENDPOINT_URL`` takes; ``refused`` counts refusals per group."""

    def __init__(self, upstream: str, linger: int = 2) -> None:
        self.upstream = urlsplit(upstream)
        self.linger = linger
        self.refused: Counter[str] = Counter()
        self._lock = threading.Lock()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                group = proxy.refusal_for(body)
                if group:
                    self._answer(400, {"Content-Type": "text/xml"}, REFUSAL.format(
                        group=group, request=uuid.uuid4()).encode())
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
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def refusal_for(self, body: bytes) -> str:
        """The group a DeleteSecurityGroup body names, when it is still to be refused."""
        form = parse_qs(body.decode("utf-8", "replace"))
        if form.get("Action") != ["DeleteSecurityGroup"]:
            return ""
        group = (form.get("GroupId") or [""])[0]
        with self._lock:
            if not group or self.refused[group] >= self.linger:
                return ""
            self.refused[group] += 1
        return group

    def start(self) -> LingerProxy:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@contextmanager
def linger_proxy(upstream: str, linger: int = 2) -> Iterator[LingerProxy]:
    proxy = LingerProxy(upstream, linger).start()
    try:
        yield proxy
    finally:
        proxy.stop()
