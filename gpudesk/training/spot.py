"""Notices that the cloud is about to take the machine back.

gpudesk's agent either sends SIGUSR1 to the training processes or writes
``spot-notice.json`` into the run folder. Both only raise a flag here; the
session agrees on it across ranks and checkpoints at the next step boundary.
Checking the file is one ``os.stat`` per step.
"""

from __future__ import annotations

import json
import signal
import threading
from pathlib import Path
from types import FrameType
from typing import Any

SPOT_NOTICE_FILE = "spot-notice.json"
SPOT_SIGNAL: signal.Signals | None = getattr(signal, "SIGUSR1", None)  # None on Windows

_FileId = tuple[int, int, int]


class SpotWatcher:
    """Raises a flag on SIGUSR1 or on a new or changed notice file."""

    def __init__(self, run_dir: Path, *, watch_file: bool, install_signal: bool = True) -> None:
        self.path = run_dir / SPOT_NOTICE_FILE
        self._watch_file = watch_file
        self._signalled = False
        # A notice left over from a previous machine (copied with the run folder) is old news.
        self._seen = self._file_id()
        self._previous: Any = None
        self._installed = False
        if (install_signal and SPOT_SIGNAL is not None
                and threading.current_thread() is threading.main_thread()):
            self._previous = signal.signal(SPOT_SIGNAL, self._on_signal)
            self._installed = True

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self._signalled = True
        if callable(self._previous):
            self._previous(signum, frame)

    def _file_id(self) -> _FileId | None:
        try:
            st = self.path.stat()
        except OSError:
            return None
        return (st.st_ino, st.st_mtime_ns, st.st_size)

    def poll(self) -> str | None:
        """Why a checkpoint is wanted now ("signal" or "file"), once per notice."""
        if self._signalled:
            self._signalled = False
            return "signal"
        if self._watch_file:
            now = self._file_id()
            if now is not None and now != self._seen:
                self._seen = now
                return "file"
        return None

    def acknowledge(self) -> None:
        """Treat the notice file as it is now as handled (another rank already acted on it)."""
        if self._watch_file:
            self._seen = self._file_id()

    def read_notice(self) -> dict[str, Any]:
        """The notice's JSON, for the log; {} when absent or not JSON."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8")[:4096])
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def close(self) -> None:
        if (self._installed and SPOT_SIGNAL is not None
                and threading.current_thread() is threading.main_thread()):
            signal.signal(SPOT_SIGNAL, self._previous if self._previous is not None
                          else signal.SIG_DFL)
            self._installed = False
