"""``sync.push`` in a child process at low priority, for the desktop app.

A push is Python work from start to end: walking the tree, matching
.gitignore rules, hashing, and paramiko's packet encryption on its own
thread. Inside the app's process that work holds the GIL against the event
loop, and the dashboard stalled 52-145 ms while a large project synced
(goal: 50 ms). In a child process, niced below the desktop, the sync only
gets the CPU the GUI does not use.

The child opens its own SSH connection from the same machine reference and
key file the caller used, with host keys checked against the pins only
(``HostKeyPolicy.refuse``): the parent has already connected, and asked
about a new key, before it pushes. No secret crosses the process boundary;
a launched machine's key is read from the keyring by the child itself.
Progress, the result and errors (as the same exception types) come back
over a pipe.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.sync import ProgressFn, SyncError, SyncProgress, SyncResult

MSG_CHILD_DIED = QT_TRANSLATE_NOOP(
    "Sync", "The sync process for {target} ended unexpectedly (exit status {code}). "
    "Files already copied are complete (each is renamed into place only when whole); "
    "start the run again to retry.")

NICE = 10  # below the desktop: the GUI gets the CPU first on a busy laptop
CANCEL_GRACE_S = 10.0  # a cancelled child finishes its current file, then is ended
POLL_S = 0.2
PROGRESS_S = 0.1


@dataclass(frozen=True)
class PushJob:
    """Everything the child needs, all plain values (it is pickled to a fresh interpreter)."""

    ref: str  # ledger id, cloud id or name, or ssh://user@host:port
    identity: str | None  # key file, or None for the keyring / agent
    folders: tuple[tuple[str, str], ...]  # (local, remote_dir) pairs, pushed in order
    delete: bool = False
    home: str = ""  # GPUDESK_HOME of the parent (pins, ledger), if it set one


def lower_priority() -> None:
    """Nice the calling process (POSIX) or give it below-normal priority (Windows)."""
    if hasattr(os, "nice"):
        with contextlib.suppress(OSError):
            os.nice(NICE)
        return
    with contextlib.suppress(Exception):  # pragma: no cover - Windows only
        import ctypes

        kernel32 = ctypes.windll.kernel32  # type: ignore[attr-defined]
        kernel32.SetPriorityClass(kernel32.GetCurrentProcess(), 0x4000)  # BELOW_NORMAL


class _Throttle:
    """Progress to the parent at most every ``PROGRESS_S`` (and at each new phase): one
    message per file would be thousands of unpickles competing with the event loop."""

    def __init__(self, pipe: Connection) -> None:
        self.pipe = pipe
        self.sent_at = 0.0
        self.phase = ""

    def __call__(self, progress: SyncProgress) -> None:
        now = time.monotonic()
        if progress.phase != self.phase or progress.phase == "done" \
                or now - self.sent_at >= PROGRESS_S:
            self.pipe.send(("progress", progress))
            self.sent_at, self.phase = now, progress.phase


def _child(job: PushJob, pipe: Connection, cancel: Any) -> None:
    """Runs in the child: connect (pins only), push, and send back what happened."""
    lower_priority()
    if job.home:
        os.environ["GPUDESK_HOME"] = job.home
    from gpudesk.services import sync, targets
    from gpudesk.services.host_keys import HostKeyPolicy

    try:
        identity = Path(job.identity).expanduser() if job.identity else None
        conn = targets.open_connection(job.ref, identity, HostKeyPolicy.refuse())
        results = []
        try:
            for local, remote in job.folders:  # one interpreter and one login for them all
                results.append(sync.push(conn, Path(local), remote, delete=job.delete,
                                         progress=_Throttle(pipe), cancel=cancel))
        finally:
            conn.close()
        pipe.send(("done", tuple(results)))
    except BaseException as exc:  # noqa: BLE001 - every failure goes back to the parent
        try:
            pipe.send(("error", exc))
        except Exception:  # an exception that does not pickle: its words still go back
            pipe.send(("error", SyncError("{detail}", detail=str(exc)[:500])))
    finally:
        pipe.close()


def push_in_child(job: PushJob, *, progress: ProgressFn | None = None,
                  cancel: threading.Event | None = None,
                  on_start: Callable[[int], None] | None = None) -> tuple[SyncResult, ...]:
    """``sync.push`` of each of ``job.folders`` in a spawned, niced child; blocks the calling
    (worker) thread. Returns one result per folder.

    Raises what the push raised (``SyncCancelled``, ``SshError``, ...), or
    ``SyncError`` when the child died without a word. ``cancel`` is passed on:
    the child stops between files, as an in-process push would.
    """
    ctx = multiprocessing.get_context("spawn")  # fork is unsafe in a threaded Qt process
    mine, theirs = ctx.Pipe(duplex=False)
    child_cancel = ctx.Event()
    if not job.home and os.environ.get("GPUDESK_HOME"):
        job = PushJob(**{**job.__dict__, "home": os.environ["GPUDESK_HOME"]})
    proc = ctx.Process(target=_child, args=(job, theirs, child_cancel), daemon=True,
                       name="gpudesk-sync")
    proc.start()
    theirs.close()
    if on_start is not None and proc.pid is not None:
        on_start(proc.pid)
    cancelled_at: float | None = None
    try:
        while True:
            if cancel is not None and cancel.is_set() and cancelled_at is None:
                child_cancel.set()
                cancelled_at = time.monotonic()
            if cancelled_at is not None and time.monotonic() - cancelled_at > CANCEL_GRACE_S:
                proc.terminate()
            try:
                ready = mine.poll(POLL_S)
                message = mine.recv() if ready else None
            except (EOFError, OSError):
                message = ("gone", None)
            if message is None:
                continue
            kind, value = message
            if kind == "progress":
                if progress is not None:
                    progress(value)
                continue
            if kind == "done":
                return tuple(value)
            if kind == "error":
                raise value
            proc.join(5)
            raise SyncError(MSG_CHILD_DIED, target=job.ref, code=proc.exitcode)
    finally:
        mine.close()
        proc.join(CANCEL_GRACE_S)
        if proc.is_alive():
            proc.kill()
            proc.join(5)

