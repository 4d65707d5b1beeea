"""What the window was showing, so a restart comes back to it: the page it showed, the Run
page's form and chosen run, and the machines the Watch page watched.

Its own small JSON file (not ``settings.json``): it changes with every run, and the
Preferences dialog must not write back a stale copy of it. No secrets: a key *path* at
most. A broken file is read as empty; the window must always start.
"""

from __future__ import annotations

import contextlib
import json
import logging
from dataclasses import asdict
from dataclasses import dataclass
from dataclasses import field
from dataclasses import fields
from pathlib import Path
from typing import Any

from gpudesk.services.core import paths
from gpudesk.services.core.files import atomic_write_text

log = logging.getLogger(__name__)


@dataclass
class WindowState:
    run_form: dict[str, Any] = field(default_factory=dict)  # field name -> text / number
    run_selected: str = ""  # a run id
    watched: list[str] = field(default_factory=list)  # machine refs (ledger ids or ssh://)
    page: str = ""  # the page shown last ("plan", "accounts", …); "" for the first page


def state_file() -> Path:
    return paths.config_dir() / "window-state.json"


def load_state(path: Path | None = None) -> WindowState:
    path = path or state_file()
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return WindowState()
    except (OSError, ValueError) as exc:
        log.warning("%s: unreadable window state (%s); starting afresh", path, exc)
        return WindowState()
    state = WindowState()
    if not isinstance(raw, dict):
        return state
    form = raw.get("run_form")
    if isinstance(form, dict):
        state.run_form = {str(k): v for k, v in form.items()
                          if isinstance(v, str | int | float) and not isinstance(v, bool)}
    if isinstance(raw.get("run_selected"), str):
        state.run_selected = raw["run_selected"]
    watched = raw.get("watched")
    if isinstance(watched, list):
        state.watched = [w for w in watched if isinstance(w, str) and w]
    if isinstance(raw.get("page"), str):
        state.page = raw["page"]
    return state


def update_state(path: Path | None = None, **changes: Any) -> WindowState:
    """Read, change the named fields, write back (atomically); a failed write is logged."""
    path = path or state_file()
    state = load_state(path)
    known = {f.name for f in fields(WindowState)}
    for key, value in changes.items():
        if key in known:
            setattr(state, key, value)
    with contextlib.suppress(OSError):
        atomic_write_text(path, json.dumps(asdict(state), indent=1) + "\n")
        return state
    log.warning("%s: cannot save the window state", path)
    return state
