"""The events file: what the agent decided and did, one JSON object per line.

``events.jsonl`` in the agent folder; the desktop tails it and phrases each
``kind`` for the user (the agent writes no user-facing text). Every event that
must happen at most once carries a ``key``; keys already on disk are loaded at
start, so a restarted agent never repeats a threshold, a stop or a notice.

Kinds: ``budget-threshold`` (pct, spend, cap), ``rule-fired`` (rule, action,
and the numbers behind it), ``action-run`` (rc, attempt; the rule's key when
rc is 0) / ``action-failed`` (error, attempt), ``action-no-effect`` (a power
action that succeeded while the machine stayed up), ``spot-notice`` (provider,
action, time, runs, signalled), ``rules-error``, ``agent-start`` /
``agent-stop``, ``boot-guard-start``.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any
from typing import Dict
from typing import List
from typing import Set

from .clock import SYSTEM_CLOCK
from .clock import Clock

EVENTS_FILE = "events.jsonl"

Event = Dict[str, Any]


def read_events(folder: Path) -> List[Event]:
    out = []
    try:
        with open(Path(folder) / EVENTS_FILE, "rb") as f:
            for line in f:
                try:
                    ev = json.loads(line)
                except ValueError:
                    continue
                if isinstance(ev, dict):
                    out.append(ev)
    except FileNotFoundError:
        pass
    return out


class EventLog:
    """Appends events (flushed and fsynced: they are the agent's memory of what it did)."""

    def __init__(self, folder: Path, clock: Clock = SYSTEM_CLOCK) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.path = self.folder / EVENTS_FILE
        self.clock = clock
        self._lock = threading.Lock()
        self._keys: Set[str] = {str(ev["key"]) for ev in read_events(self.folder) if "key" in ev}

    def has(self, key: str) -> bool:
        with self._lock:
            return key in self._keys

    def record(self, kind: str, **fields: Any) -> Event:
        ev: Event = {"t": round(self.clock.time(), 3), "kind": kind}
        ev.update(fields)
        line = json.dumps(ev, separators=(",", ":"), default=str) + "\n"
        with self._lock:
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(line)
                f.flush()
                os.fsync(f.fileno())
            if "key" in ev:
                self._keys.add(str(ev["key"]))
        return ev
