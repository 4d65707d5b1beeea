"""Records from a worker thread handed to the GUI thread in batches, not one by one.

A reconnect's backfill arrives as thousands of records within milliseconds.
One queued signal per record would make Qt deliver them all in one pass of
its posted-event queue: a stall of hundreds of milliseconds. Here the worker
appends to a list and posts one wake-up only when the list was empty; the GUI
thread takes the whole list at once (a live sample alone is still delivered at
once, so the latency stays that of one queued call).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject
from PySide6.QtCore import Qt
from PySide6.QtCore import Signal


class RecordBatcher(QObject):
    """``put`` from any thread; ``sink(records)`` runs on this object's thread."""

    _wake = Signal()

    def __init__(self, sink: Callable[[list[Any]], None], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.sink = sink
        self._lock = threading.Lock()
        self._pending: list[Any] = []
        self.batches = 0  # sink calls so far (tests, benchmarks)
        self._wake.connect(self._flush, Qt.ConnectionType.QueuedConnection)

    def put(self, record: Any) -> None:
        with self._lock:
            first = not self._pending
            self._pending.append(record)
        if first:
            self._wake.emit()

    def _flush(self) -> None:
        with self._lock:
            batch, self._pending = self._pending, []
        if batch:
            self.batches += 1
            self.sink(batch)
