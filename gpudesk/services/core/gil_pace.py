"""A worker thread's burst of Python work, paced so the GUI thread keeps the GIL.

A reconnect's backfill is thousands of JSON lines decoded back to back on the
telemetry thread. CPython hands the GIL over only every ``sys.getswitchinterval()``
(5 ms), and the GUI thread gives it up and takes it back many times per event (each
Qt call it makes releases it): each time back it waits out the worker's interval,
and the window stalls: 53-76 ms (median 68) over 7 runs of an hour's backfill
(3 600 lines) on a 2-core machine. Sleeping a millisecond every 16 lines lets the GUI
thread run at once: 23-45 ms (median 35); every 32 lines left a tail of 70 ms. An
hour's backfill takes ~0.25 s longer; a live sample, alone, never waits.
"""

from __future__ import annotations

import time

EVERY = 16  # items between pauses: ~0.5 ms of decoding each
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
