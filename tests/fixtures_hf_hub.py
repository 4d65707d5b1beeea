"""A stand-in Hugging Face Hub on 127.0.0.1 (``GPUDESK_HF_ENDPOINT``): Qwen2-0.5B's real
config.json, a gated Llama (401) and 404 for the rest; the fixture yields the paths asked."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpudesk import hf_hub

DATA = Path(__file__).parent / "data" / "hf_configs"


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    asked: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            asked.append(self.path)
            if self.path == "/Qwen/Qwen2-0.5B/resolve/main/config.json":
                status, body = 200, (DATA / "qwen2-0.5b" / "config.json").read_bytes()
            elif self.path.startswith("/meta-llama/"):
                status, body = 401, b"gated"
            else:
                status, body = 404, b"not found"
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv(hf_hub.ENDPOINT_ENV, f"http://127.0.0.1:{server.server_address[1]}")
    yield asked
    server.shutdown()
    server.server_close()
