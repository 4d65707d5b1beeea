"""The HTTP plumbing the stand-in cloud servers share (aliyun_standin, tencent_standin).

A stand-in subclasses ``StandinServer`` and keeps everything that is its cloud's own:
``reset()`` (its state, which must set ``secrets``, ``requests`` and ``failures``),
signature checks, actions, error codes and the shape of its answers, given by
``respond()``. This module holds only what is the same for every cloud: a threaded
HTTP server on 127.0.0.1, its start and stop, the lock, the keys the server knows,
the request log and failure injection (``fail_next``), and a fresh server for each test
(``fresh_standin``).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from http.server import ThreadingHTTPServer
from typing import Any
from typing import ClassVar
from typing import Self
from typing import TypeVar

import pytest


class ApiError(Exception):
    """An error the cloud answers with: its ``code`` and ``message``."""

    def __init__(self, code: str, message: str = "") -> None:
        super().__init__(code)
        self.code = code
        self.message = message or code


@dataclass
class Failure:
    """A failure ``fail_next`` put in: the next ``times`` matching calls answer ``code``."""

    action: str
    code: str
    message: str
    times: int
    match: dict[str, str]


class StandinServer:
    """A stand-in cloud API served over HTTP; ``endpoint`` is ``127.0.0.1:PORT``."""

    name: ClassVar[str] = "standin"  # the serving thread's name
    methods: ClassVar[frozenset[str]] = frozenset({"POST"})  # others answer 501
    content_type: ClassVar[str] = "application/json"

    secrets: dict[str, str]  # key id → secret, the keys the cloud knows
    requests: list[tuple[str, str, dict[str, Any]]]  # action, region, parameters
    failures: list[Failure]

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.secrets = {}
        self.reset()

    def reset(self) -> None:
        raise NotImplementedError

    def respond(self, method: str, target: str, headers: dict[str, str],
                body: bytes) -> tuple[int, Any]:
        """The HTTP status and the JSON body answering one request (headers lower-cased)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ control

    def add_secret(self, key_id: str, secret: str) -> None:
        with self._lock:
            self.secrets[key_id] = secret

    def fail_next(self, action: str, code: str, message: str = "", *, times: int = 1,
                  **match: str) -> None:
        """Answer the next ``times`` calls of ``action`` with error ``code``; ``match``
        narrows them to calls with those values (``region=``, ``zone=``,
        ``instance_type=``, and what else the stand-in's ``_maybe_fail`` sees)."""
        with self._lock:
            self.failures.append(Failure(action, code, message or f"{code} (stand-in)", times,
                                         match))

    def params(self, action: str) -> list[dict[str, Any]]:
        """The parameters of every call of ``action`` so far, oldest first."""
        with self._lock:
            return [p for a, _, p in self.requests if a == action]

    def _fail_if_asked(self, action: str, seen: dict[str, str]) -> None:
        """Raise the first failure put in for ``action`` whose ``match`` agrees with ``seen``."""
        for failure in self.failures:
            if failure.action == action and failure.times > 0 and all(
                    seen.get(k) == v for k, v in failure.match.items()):
                failure.times -= 1
                raise ApiError(failure.code, failure.message)

    # ------------------------------------------------------------------ serving

    @property
    def endpoint(self) -> str:
        assert self._httpd is not None
        host, port = self._httpd.server_address[:2]
        assert isinstance(host, str)  # an IPv4 server's
        return f"{host}:{port}"

    def start(self) -> Self:
        standin: StandinServer = self

        class Handler(_Handler):
            server_ref = standin

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name=self.name,
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)


S = TypeVar("S", bound=StandinServer)


def fresh_standin(server: S, key_id: str, secret: str, monkeypatch: pytest.MonkeyPatch) -> S:
    """``server`` reset, knowing ``key_id``/``secret``; no proxy between it and the SDK.

    An SDK's own proxy check may be a substring test on ``host:port`` (Tencent's is), and
    requests checks the bare host, so NO_PROXY names both.
    """
    server.reset()
    server.add_secret(key_id, secret)
    no_proxy = f"127.0.0.1,{server.endpoint},localhost"
    monkeypatch.setenv("NO_PROXY", no_proxy)
    monkeypatch.setenv("no_proxy", no_proxy)
    return server


class _Handler(BaseHTTPRequestHandler):
    server_ref: StandinServer
    protocol_version = "HTTP/1.0"  # one request per connection: nothing left open

    def _answer(self) -> None:
        if self.command not in self.server_ref.methods:  # as http.server answers a missing do_X
            self.send_error(HTTPStatus.NOT_IMPLEMENTED, f"Unsupported method ({self.command!r})")
            return
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        headers = {k.lower(): v for k, v in self.headers.items()}
        status, answer = self.server_ref.respond(self.command, self.path, headers, body)
        data = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", self.server_ref.content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_POST = _answer  # noqa: N815 - http.server's names
    do_GET = _answer  # noqa: N815

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
        return
