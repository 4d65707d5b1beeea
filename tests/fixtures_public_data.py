"""Public dataset sources on 127.0.0.1, for ``agent/public_data.py`` (issue 32).

``FileSite``: a plain HTTP file server (``http.server`` in a thread) that answers HEAD,
GET and ``Range: bytes=a-b`` with 206 (or, ``ranges=False``, ignores Range as some
servers do) and notes every request. ``HubSite``: a stand-in for the Hugging Face Hub's
two documented calls, ``/api/datasets/ORG/NAME/revision/REV?blobs=true`` and
``/datasets/ORG/NAME/resolve/COMMIT/PATH``, checking ``Authorization: Bearer`` for a
gated repository and redirecting each file, as the Hub does, to its CDN on another host
name (``localhost``), which must not get the token. While it serves a file it looks at
every process's command line (``/proc/*/cmdline``, what ``ps`` shows) for the token.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from dataclasses import field
from http.server import BaseHTTPRequestHandler
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

COMMIT = "0123456789abcdef0123456789abcdef01234567"
TOKEN = "hf_StandInTokenForTheGatedSet_0123456789"
_RANGE = re.compile(r"bytes=(\d+)-(\d+)?$")


@dataclass
class Seen:
    method: str
    path: str
    range: str
    auth: str
    status: int


@dataclass
class FileSite:
    """Files by URL path; ``url(path)`` is their address."""

    files: dict[str, bytes] = field(default_factory=dict)
    ranges: bool = True
    seen: list[Seen] = field(default_factory=list)
    port: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    def gets(self, path: str) -> list[Seen]:
        return [s for s in self.seen if s.method == "GET" and s.path == path]


def _send_file(h: BaseHTTPRequestHandler, body: bytes, ranges: bool, seen: Seen) -> int:
    wanted = _RANGE.match(h.headers.get("Range", "")) if ranges else None
    if wanted:
        first = int(wanted.group(1))
        last = min(int(wanted.group(2)) if wanted.group(2) else len(body) - 1, len(body) - 1)
        part = body[first:last + 1]
        seen.status = 206  # noted before the answer: the client may look right after
        h.send_response(206)
        h.send_header("Content-Range", f"bytes {first}-{last}/{len(body)}")
        h.send_header("Accept-Ranges", "bytes")
        h.send_header("Content-Length", str(len(part)))
        h.end_headers()
        if h.command == "GET":
            h.wfile.write(part)
        return 206
    seen.status = 200
    h.send_response(200)
    if ranges:
        h.send_header("Accept-Ranges", "bytes")
    h.send_header("Content-Length", str(len(body)))
    h.send_header("ETag", '"' + hashlib.md5(body).hexdigest() + '"')  # noqa: S324 - an ETag
    h.end_headers()
    if h.command == "GET":
        h.wfile.write(body)
    return 200


def _plain(h: BaseHTTPRequestHandler, seen: Seen, code: int, text: str = "") -> int:
    data = text.encode()
    seen.status = code
    h.send_response(code)
    h.send_header("Content-Length", str(len(data)))
    h.end_headers()
    if h.command == "GET":
        h.wfile.write(data)
    return code


def _serve(handle: Any) -> Iterator[int]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            handle(self)

        do_HEAD = do_GET  # noqa: N815

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def file_site() -> Iterator[FileSite]:
    site = FileSite()

    def handle(h: BaseHTTPRequestHandler) -> None:
        seen = Seen(h.command, h.path, h.headers.get("Range", ""),
                    h.headers.get("Authorization", ""), 0)
        with site.lock:  # noted before the answer: the client may look right after it
            site.seen.append(seen)
        body = site.files.get(h.path)
        if body is None:
            _plain(h, seen, 404, "no such file")
        else:
            _send_file(h, body, site.ranges, seen)

    for port in _serve(handle):
        site.port = port
        yield site


@dataclass
class HubSite:
    """Repositories ``{"lab/open": {path: bytes}, "lab/gated": {...}}``; gated ones need
    TOKEN. ``cdn_auth``: Authorization headers the CDN got; ``token_in_ps``: command
    lines that held the token while a file was served."""

    repos: dict[str, dict[str, bytes]] = field(default_factory=dict)
    gated: set[str] = field(default_factory=set)
    seen: list[Seen] = field(default_factory=list)
    cdn_auth: list[str] = field(default_factory=list)
    token_in_ps: list[str] = field(default_factory=list)
    corrupt: bool = False  # the CDN flips a byte of every file (same size)
    port: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def _command_lines_with(token: str) -> list[str]:
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            words = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue
        if any(token.encode() in w for w in words):
            found.append(b" ".join(words).decode("utf-8", "replace"))
    return found


@pytest.fixture
def hub_site() -> Iterator[HubSite]:
    site = HubSite()

    def handle(h: BaseHTTPRequestHandler) -> None:
        path, _, _query = h.path.partition("?")
        auth = h.headers.get("Authorization", "")
        seen = Seen(h.command, h.path, h.headers.get("Range", ""), auth, 0)
        with site.lock:  # noted before the answer: the client may look right after it
            site.seen.append(seen)
        api = re.match(r"^/api/datasets/([^/]+/[^/]+)/revision/([^/]+)$", path)
        resolve = re.match(r"^/datasets/([^/]+/[^/]+)/resolve/([0-9a-f]{40})/(.+)$", path)
        cdn = re.match(r"^/cdn/([0-9a-f]{64})$", path)
        repo = (api or resolve).group(1) if (api or resolve) else ""
        if (api or resolve) and repo in site.gated and auth != f"Bearer {TOKEN}":
            _plain(h, seen, 401, "Access to this dataset is restricted")
        elif api and repo in site.repos and api.group(2) in ("main", COMMIT):
            siblings = [{"rfilename": rel, "size": len(body), "blobId": f"b{len(body)}",
                         "lfs": {"sha256": hashlib.sha256(body).hexdigest(),
                                 "size": len(body)}}
                        for rel, body in sorted(site.repos[repo].items())]
            _plain(h, seen, 200, json.dumps({"id": repo, "sha": COMMIT,
                                             "siblings": siblings}))
        elif resolve and repo in site.repos and resolve.group(2) == COMMIT:
            body = site.repos[repo].get(resolve.group(3))
            if body is not None:  # to the CDN, on another host name, as the Hub does
                with site.lock:
                    site.token_in_ps += _command_lines_with(TOKEN)
                seen.status = 302
                h.send_response(302)
                h.send_header("Location", f"http://localhost:{site.port}/cdn/"
                              f"{hashlib.sha256(body).hexdigest()}")
                h.send_header("Content-Length", "0")
                h.end_headers()
            else:
                _plain(h, seen, 404, "Entry not found")
        elif cdn:
            bodies = {hashlib.sha256(b).hexdigest(): b for files in site.repos.values()
                      for b in files.values()}
            with site.lock:
                site.cdn_auth.append(auth)
            body = bodies.get(cdn.group(1))
            if body is not None and site.corrupt:
                body = bytes([body[0] ^ 0xFF]) + body[1:]
            if body is None:
                _plain(h, seen, 404)
            else:
                _send_file(h, body, True, seen)
        else:
            _plain(h, seen, 404, "Repository not found")

    for port in _serve(handle):
        site.port = port
        yield site
