"""Time as the agent sees it, injectable so tests drive idle and budget rules by hand.

``time()`` is wall time (record stamps, budget spend since a unix start);
``monotonic()`` measures durations (idle minutes, polling periods) immune to
clock steps. ``wait()`` is the only way the agent pauses, so a simulated clock
can make an hour pass without sleeping.
"""

from __future__ import annotations

import threading
import time as _time
from typing import Protocol


class Clock(Protocol):
    def time(self) -> float: ...

    def monotonic(self) -> float: ...

    def wait(self, event: threading.Event, seconds: float) -> bool:
        """Wait up to ``seconds`` for ``event``; True when it is set."""
        ...


class SystemClock:
    """The real clock."""

    def time(self) -> float:
        return _time.time()

    def monotonic(self) -> float:
        return _time.monotonic()

    def wait(self, event: threading.Event, seconds: float) -> bool:
        return event.wait(max(0.0, seconds))


class SimClock:
    """A clock that moves only when told to (``advance``) or when someone waits on it."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self._wall = float(start)
        self._mono = 1000.0
        self._lock = threading.Lock()

    def time(self) -> float:
        with self._lock:
            return self._wall

    def monotonic(self) -> float:
        with self._lock:
            return self._mono

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._wall += seconds
            self._mono += seconds

    def wait(self, event: threading.Event, seconds: float) -> bool:
        if event.is_set():
            return True
        self.advance(max(0.0, seconds))
        return event.is_set()


SYSTEM_CLOCK = SystemClock()
