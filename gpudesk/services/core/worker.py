"""A background job on its own daemon thread that can be asked to stop.

Followers and mirrors block on SSH for seconds at a time: each gets a thread,
and a stop event its loop checks between steps (and waits on, so a stop ends a
pause at once).
"""

from __future__ import annotations

import threading
from typing import Self


class StoppableWorker:
    """Subclasses write ``_main``; it should return soon after ``_stop`` is set."""

    def __init__(self, name: str) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._main, daemon=True, name=name)

    def _main(self) -> None:
        raise NotImplementedError

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self, wait_s: float = 0.0) -> None:
        self._stop.set()
        if wait_s:
            self._thread.join(wait_s)

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()
