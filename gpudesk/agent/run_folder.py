"""What a run folder says about its run: whether its process and its launcher still live,
and whether a non-zero exit came after the run had finished (stdlib only, Python 3.7+).

One source for the run launcher (``services/runs/run_launcher_script.py``), the queue
(``queue.py``) and the rest of the agent (``runs.py``, ``uploader.py``; the first-boot
guard carries it too): the launcher and the queue are also sent to a machine as a single
source for ``python3 -c``, so wherever they are read for sending
(``services/runs/shipped_source.py``) their ``run_folder`` import lines are replaced by this
file. Hence no imports but the standard library's, and no names that clash with theirs.

The folder (the launcher's contract): ``pid`` (the launcher's supervising process),
``log``, ``exit_status`` and ``checkpoints/`` (``GPUDESK_RUN_DIR``), where
``gpudesk.training`` writes ``progress.json``.
"""

from __future__ import annotations

import json
import os
from typing import Optional
from typing import Union

PID_FILE = "pid"
LOG_FILE = "log"
EXIT_FILE = "exit_status"
CHECKPOINTS = "checkpoints"
# gpudesk.training's progress file (in CHECKPOINTS) and its mark that every rank got past
# Session.finish()'s final barrier (gpudesk.training.session)
PROGRESS_FILE = "progress.json"
ALL_RANKS_FINISHED = "all_ranks_finished"
# What a process's teardown prints when it aborts (std::terminate, e.g. in gloo's threads)
TEARDOWN_SIGNS = ("terminate called",)
LOG_TAIL_BYTES = 64 * 1024


def pid_alive(pid: int) -> bool:
    """The process exists and (where /proc tells) is no zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, belongs to someone else
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return True  # no /proc to ask


def launcher_alive(pid: int, run_dir: Union[str, os.PathLike[str]]) -> bool:
    """:func:`pid_alive`, and (where /proc tells) it is this run's launcher: its working
    folder is the run folder (a reused pid is some other process)."""
    if not pid_alive(pid):
        return False
    if not os.path.isdir("/proc/self"):
        return True
    try:
        return os.path.realpath(os.readlink(f"/proc/{pid}/cwd")) == os.path.realpath(run_dir)
    except OSError:
        return False  # gone meanwhile, or hidden from this user


def log_tail(log_path: Union[str, os.PathLike[str]]) -> Optional[str]:
    """The log's last 64 KiB as text (where torchrun and a teardown say how it ended)."""
    try:
        with open(log_path, "rb") as fh:
            fh.seek(max(0, os.path.getsize(log_path) - LOG_TAIL_BYTES))
            return fh.read().decode("utf-8", "replace")
    except OSError:
        return None


def finished_before_exit(run_dir: Union[str, os.PathLike[str]], code: Optional[int]) -> bool:
    """True when a non-zero exit status came after the run had finished: this attempt's
    progress.json says every rank got past the final barrier of ``Session.finish()`` (the
    final checkpoint written), and the exit is a teardown's, a signal (status over 128, as
    SIGABRT's 134) or a ``terminate called …`` line in the log's tail. A Python error after
    ``finish()`` (status 1 with a traceback) is still a failure."""
    if not code:
        return False
    progress = os.path.join(run_dir, CHECKPOINTS, PROGRESS_FILE)
    try:
        if os.path.getmtime(progress) < os.path.getmtime(os.path.join(run_dir, PID_FILE)):
            return False  # an earlier attempt's
        with open(progress, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return False
    if not (isinstance(data, dict) and data.get("status") == "finished"
            and data.get(ALL_RANKS_FINISHED) is True):
        return False
    if code > 128:
        return True
    tail = log_tail(os.path.join(run_dir, LOG_FILE))
    return tail is not None and any(sign in tail for sign in TEARDOWN_SIGNS)
