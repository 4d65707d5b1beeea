"""A worker thread's burst of Python work, paced so the GUI thread keeps the GIL.

A reconnect's backfill is thousands of JSON lines decoded back to back on the
telemetry thread. CPython hands the GIL over only every ``sys.getswitchinterval()``
(5 ms), and the GUI thread gives it up and takes it back many times per event (each
Qt call it makes releases it): each time back it waits out the worker's interval,
and the window stalls for 60-150 ms (benchmarks/bench_dashboard.py, "1 h view +
1 h backfill"). Sleeping a millisecond every ``every`` items lets the GUI thread run
at once; an hour's backfill (3 600 lines) takes ~0.1 s longer, a live sample nothing.
"""

from __future__ import annotations

import time

EVERY = 32  # items between pauses: ~1 ms of decoding each
PAUSE_S = 0.001


class GilPace:
    """``step()`` after each item of a burst; ``idle()`` when the burst ended."""

    def __init__(self, every: int = EVERY, pause_s: float = PAUSE_S) -> None:
        self.every = every
        self.pause_s = pause_s
        self.run = 0  # items since the last pause or idle
        self.pauses = 0

    def step(self) -> None:
        self.run += 1
        if self.run >= self.every:
            self.run = 0
            self.pauses += 1
            time.sleep(self.pause_s)

    def idle(self) -> None:
        self.run = 0
