"""Which training runs are alive on this machine, and how to reach their processes.

Contract with the run launcher: every run has a folder ``<runs_dir>/<run-id>/``
holding a ``pid`` file (the launched process's pid as text). A run is active
while that pid is a live, non-zombie process. Linux ``/proc`` gives the
process tree, each process's ``GPUDESK_RUN_DIR`` and whether it handles a
signal; without ``/proc`` only the pid itself is known.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Dict
from typing import List
from typing import Optional

from .run_folder import PID_FILE
from .run_folder import pid_alive

RUN_DIR_ENV = "GPUDESK_RUN_DIR"  # what gpudesk.training reads (gpudesk/training/env.py)
_PROC = Path("/proc")


@dataclass(frozen=True)
class ActiveRun:
    folder: Path
    pid: int


def read_pid(path: Path) -> int | None:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")[:64]
    except OSError:
        return None
    m = re.match(r"\s*(\d{1,10})\b", text)
    return int(m.group(1)) if m and int(m.group(1)) > 0 else None


def _stat_fields(pid: int) -> List[str] | None:
    """/proc/PID/stat after the ``(comm)`` field: state, ppid, pgrp, session, ..."""
    try:
        text = (_PROC / str(pid) / "stat").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    return text[text.rfind(")") + 2:].split()


def active_runs(runs_dir: Path) -> List[ActiveRun]:
    """Runs whose pid file points at a live process, sorted by folder name."""
    out = []
    try:
        names = sorted(os.listdir(runs_dir))
    except OSError:
        return []
    for name in names:
        pid = read_pid(Path(runs_dir) / name / PID_FILE)
        if pid is not None and pid_alive(pid):
            out.append(ActiveRun(Path(runs_dir) / name, pid))
    return out


def process_tree(root: int) -> List[int]:
    """``root`` and all its descendants (just ``[root]`` without /proc)."""
    children: Dict[int, List[int]] = {}
    try:
        entries = os.listdir(_PROC)
    except OSError:
        return [root]
    for entry in entries:
        if entry.isdigit():
            fields = _stat_fields(int(entry))
            if fields and len(fields) > 1 and fields[1].isdigit():
                children.setdefault(int(fields[1]), []).append(int(entry))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        if pid not in out:
            out.append(pid)
            todo.extend(children.get(pid, []))
    return out


def catches_signal(pid: int, signum: int) -> bool:
    """True when the process installed a handler for ``signum`` (SigCgt in /proc status).

    The agent signals only such processes: SIGUSR1's default action kills, and
    a launcher like torchrun does not handle it.
    """
    try:
        text = (_PROC / str(pid) / "status").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    m = re.search(r"^SigCgt:\s*([0-9a-fA-F]+)", text, re.MULTILINE)
    if m is None:
        return False
    return bool((int(m.group(1), 16) >> (signum - 1)) & 1)


def run_dir_of(pid: int) -> Optional[Path]:
    """The process's ``GPUDESK_RUN_DIR`` (relative ones resolved against its cwd)."""
    try:
        env = (_PROC / str(pid) / "environ").read_bytes()
    except OSError:
        return None
    prefix = (RUN_DIR_ENV + "=").encode()
    for item in env.split(b"\0"):
        if item.startswith(prefix) and len(item) > len(prefix):
            path = Path(os.fsdecode(item[len(prefix):]))
            if not path.is_absolute():
                try:
                    path = Path(os.readlink(_PROC / str(pid) / "cwd")) / path
                except OSError:
                    return None
            return path
    return None
