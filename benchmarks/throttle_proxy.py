"""A TCP proxy on loopback that caps every connection's throughput (benchmarks only).

A real object store limits what one connection carries (AWS documents roughly 85–90 MB/s
per request to S3, and advises parallel requests and byte-range fetches to go beyond it);
a server on loopback has no such limit, so one stream there is as fast as the CPUs allow.
This proxy puts that limit back: each accepted connection gets its own token bucket per
direction at ``--rate`` bytes per second, starting empty and holding at most one read
(64 KiB), so a new connection gets no free burst and N connections together may carry up
to N times the rate. It runs as its own process, so that it shares no interpreter lock
with the client it measures.

    python -m benchmarks.throttle_proxy --target 127.0.0.1:PORT --rate BYTES_PER_S

prints ``listening on PORT`` once it accepts connections.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import time

READ = 64 * 1024  # bytes per read, and the bucket's depth


class TokenBucket:
    """``rate`` bytes per second, starting empty, at most ``depth`` bytes of credit."""

    def __init__(self, rate: float, depth: int = READ) -> None:
        self.rate, self.depth = rate, depth
        self.tokens, self.last = 0.0, time.monotonic()

    def _refill(self) -> None:
        now = time.monotonic()
        self.tokens = min(self.depth, self.tokens + (now - self.last) * self.rate)
        self.last = now

    async def take(self, n: int) -> None:
        self._refill()
        if self.tokens < n:
            await asyncio.sleep((n - self.tokens) / self.rate)
            self._refill()
        self.tokens -= n  # may go below zero by rounding; the next take waits for it


async def _pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter, rate: float) -> None:
    bucket = TokenBucket(rate) if rate > 0 else None
    try:
        while True:
            data = await src.read(READ)
            if not data:
                break
            if bucket is not None:
                await bucket.take(len(data))
            dst.write(data)
            await dst.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(ConnectionError, OSError):
            dst.close()


async def _serve(target_host: str, target_port: int, rate: float, port: int) -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(target_host, target_port)
        except OSError:
            writer.close()
            return
        await asyncio.gather(_pipe(reader, up_writer, rate), _pipe(up_reader, writer, rate))

    server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=256)
    bound = server.sockets[0].getsockname()[1]
    print(f"listening on {bound}", flush=True)
    async with server:
        await server.serve_forever()


def main() -> None:
    p = argparse.ArgumentParser(prog="throttle_proxy")
    p.add_argument("--target", required=True, help="HOST:PORT to forward to")
    p.add_argument("--rate", type=float, required=True,
                   help="bytes per second per connection and direction (0: no cap)")
    p.add_argument("--port", type=int, default=0, help="where to listen (0: any free port)")
    args = p.parse_args()
    host, _, port = args.target.rpartition(":")
    asyncio.run(_serve(host, int(port), args.rate, args.port))


if __name__ == "__main__":
    main()
