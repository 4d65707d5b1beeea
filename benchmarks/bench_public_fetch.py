"""A public dataset's fetch on the machine (issue 32, ``agent/public_data.py``) against one
plain stream.

One file of ``SIZE_MB`` random bytes is served over http on 127.0.0.1 by a Range-capable
``http.server`` in its own process (so that it does not share this interpreter's lock).
``public_data.fetch`` (16 parallel ranged GETs of 8 MiB; an https file has no published
hash, so none is computed) is timed against one ``urllib`` GET of the whole file written
to disk, each into an empty folder, alternating which goes first. Twice: with no limit
(loopback has no latency: what the ranges cost on the CPU and disk alone), and with each
connection capped at ``CAP_MBPS`` MB/s, as many CDNs and object stores limit one stream.
Printed, never asserted.

    python -m benchmarks.bench_public_fetch [repetitions]
"""

from __future__ import annotations

import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SIZE_MB = int(os.environ.get("BENCH_PUBLIC_MB", "256"))
CAP_MBPS = float(os.environ.get("BENCH_PUBLIC_CAP_MBPS", "40"))

SERVER = r'''
import re, sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
body = open(sys.argv[1], "rb").read()
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        m = re.match(r"bytes=(\d+)-(\d+)$", self.headers.get("Range", ""))
        a, b = (int(m.group(1)), int(m.group(2))) if m else (0, len(body) - 1)
        b = min(b, len(body) - 1)
        self.send_response(206 if m else 200)
        if m:
            self.send_header("Content-Range", f"bytes {a}-{b}/{len(body)}")
        self.send_header("Content-Length", str(b - a + 1))
        self.end_headers()
        if self.command != "GET":
            return
        view, cap, began = memoryview(body)[a:b + 1], float(sys.argv[3]), time.monotonic()
        for at in range(0, len(view), 1 << 20):
            self.wfile.write(view[at:at + (1 << 20)])
            if cap:  # this connection's limit, bytes per second
                time.sleep(max(0.0, began + (at + (1 << 20)) / cap - time.monotonic()))
    do_HEAD = do_GET
    def log_message(self, *a): pass
s = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[2])), H)
print("ready", flush=True)
s.serve_forever()
'''


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def single_stream(url: str, dest: Path) -> float:
    began = time.perf_counter()
    with urllib.request.urlopen(url, timeout=120) as reply, open(dest, "wb") as fh:  # noqa: S310
        shutil.copyfileobj(reply, fh, 1024 * 1024)
    return time.perf_counter() - began


def parallel(url: str, cache: Path) -> float:
    from gpudesk.agent import public_data

    began = time.perf_counter()
    found = public_data.listing("url", url)
    public_data.fetch(found, cache)
    return time.perf_counter() - began


def measure(cap_mbps: float, size_mb: int, reps: int, work: Path) -> None:
    source = work / "shards.bin"
    source.write_bytes(os.urandom(size_mb * 1024 * 1024))
    port = _free_port()
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(source), str(port),
                               str(cap_mbps * 1e6)], stdout=subprocess.PIPE)
    try:
        assert server.stdout is not None and server.stdout.readline().strip() == b"ready"
        url = f"http://127.0.0.1:{port}/shards.bin"
        times: dict[str, list[float]] = {"single": [], "parallel": []}
        for i in range(reps):
            order = ("single", "parallel") if i % 2 == 0 else ("parallel", "single")
            for what in order:
                dest = work / f"{what}-{i}"
                dest.mkdir()
                times[what].append(single_stream(url, dest / "f") if what == "single"
                                   else parallel(url, dest))
                shutil.rmtree(dest)
        med = {k: statistics.median(v) for k, v in times.items()}
        limit = f"{cap_mbps:g} MB/s per connection" if cap_mbps else "no limit"
        print(f"public fetch of {size_mb} MiB over http on 127.0.0.1 ({limit}), median of "
              f"{reps}: one stream {med['single']:.2f} s, parallel ranges "
              f"{med['parallel']:.2f} s: {med['single'] / med['parallel']:.2f}x")
    finally:
        server.terminate()
        server.wait(timeout=10)
        source.unlink()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    reps = int(args[0]) if args else 3
    work = Path(tempfile.mkdtemp(prefix="bench-public-"))
    try:
        measure(0.0, SIZE_MB, reps, work)
        if CAP_MBPS:
            measure(CAP_MBPS, max(1, SIZE_MB // 4), reps, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
