"""One tiny HTTP server on 127.0.0.1 for the tests' stand-ins of simple GET services
(the address echo, the AWS price list, the Hugging Face Hub)."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Callable
from collections.abc import Iterator
from contextlib import contextmanager

Answer = Callable[[str], tuple[int, bytes]]  # request path -> (status, body)


@contextmanager
def serve_get(answer: Answer) -> Iterator[str]:
    """Serve ``answer`` for every GET; yields the base URL (no trailing slash)."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            status, body = answer(self.path)
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
