"""``sync.push`` in a long-lived child process at low priority, for the desktop app.

A push is Python work from start to end: walking the tree, matching
.gitignore rules, hashing, and paramiko's packet encryption on its own
thread. Inside the app's process that work holds the GIL against the event
loop, and the dashboard stalled 52-145 ms while a large project synced
(goal: 50 ms). In a child process, niced below the desktop, the sync only
gets the CPU the GUI does not use.

The child (one per app, started on first use) opens its own SSH connection
from the same machine reference and key file the caller used, and keeps it
for the next sync, so an incremental sync costs what it costs in-process;
host keys are checked against the pins only
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
from typing import cast

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.remote.sync import ProgressFn
from gpudesk.services.remote.sync import SyncError
from gpudesk.services.remote.sync import SyncProgress
from gpudesk.services.remote.sync import SyncResult

MSG_CHILD_DIED = QT_TRANSLATE_NOOP(
    "Sync", "The sync process for {target} ended unexpectedly (exit status {code}). "
    "Files already copied are complete (each is renamed into place only when whole); "
    "start the run again to retry.")

NICE = 10  # below the desktop: the GUI gets the CPU first on a busy laptop
CANCEL_GRACE_S = 10.0  # a cancelled child finishes its current file, then is ended
POLL_S = 0.2
MAX_CONNECTIONS = 4  # machines the sync child keeps a login to
IDLE_CLOSE_S = 600.0  # a login unused this long is closed
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


class _Connections:
    """The worker's open connections, by (ref, identity, home), so that an incremental
    sync reuses its login and the helper on the machine, as the in-process push does."""

    def __init__(self) -> None:
        self.open: dict[tuple[str, str | None, str], tuple[Any, float]] = {}

    @staticmethod
    def key(job: PushJob) -> tuple[str, str | None, str]:
        return job.ref, job.identity, job.home

    def get(self, job: PushJob) -> Any:
        from gpudesk.services.remote import targets
        from gpudesk.services.remote.host_keys import HostKeyPolicy

        key = self.key(job)
        if key in self.open:
            conn = self.open.pop(key)[0]
        else:
            identity = Path(job.identity).expanduser() if job.identity else None
            conn = targets.open_connection(job.ref, identity, HostKeyPolicy.refuse())
        self.open[key] = (conn, time.monotonic())
        while len(self.open) > MAX_CONNECTIONS:  # the oldest first (dicts keep order)
            self.drop(next(iter(self.open)))
        return conn

    def drop(self, key: tuple[str, str | None, str]) -> None:
        conn, _ = self.open.pop(key, (None, 0.0))
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()

    def drop_idle(self) -> None:
        now = time.monotonic()
        for key, (_conn, used) in list(self.open.items()):
            if now - used > IDLE_CLOSE_S:
                self.drop(key)


def _worker(pipe: Connection, cancel: Any) -> None:
    """The child: push each job it is sent, keeping connections between jobs; ends when
    the app closes its end of the pipe (or dies)."""
    lower_priority()
    from gpudesk.services.remote import sync

    conns = _Connections()
    while True:
        try:
            if not pipe.poll(IDLE_CLOSE_S / 4):
                conns.drop_idle()
                continue
            job = pipe.recv()
        except (EOFError, OSError):
            break
        if job.home:
            os.environ["GPUDESK_HOME"] = job.home
        try:
            conn = conns.get(job)
            results = [sync.push(conn, Path(local), remote, delete=job.delete,
                                 progress=_Throttle(pipe), cancel=cancel)
                       for local, remote in job.folders]
            pipe.send(("done", tuple(results)))
        except BaseException as exc:  # noqa: BLE001 - every failure goes back to the app
            if not isinstance(exc, sync.SyncError):  # a broken login is not kept
                conns.drop(conns.key(job))
            try:
                pipe.send(("error", exc))
            except Exception:  # an exception that does not pickle: its words still go back
                pipe.send(("error", SyncError("{detail}", detail=str(exc)[:500])))
    for key in list(conns.open):
        conns.drop(key)


class _Worker:
    """The app's one sync child (started on first use, started again if it died)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()  # one job at a time
        self.proc: Any = None
        self.pipe: Connection | None = None
        self.cancel: Any = None

    def ensure(self) -> tuple[Any, Connection]:
        if self.proc is None or not self.proc.is_alive() or self.pipe is None:
            self.close()
            ctx = multiprocessing.get_context("spawn")  # fork is unsafe in a threaded Qt app
            mine, theirs = ctx.Pipe(duplex=True)
            self.cancel = ctx.Event()
            self.proc = ctx.Process(target=_worker, args=(theirs, self.cancel), daemon=True,
                                    name="gpudesk-sync")
            self.proc.start()
            theirs.close()
            self.pipe = mine
        return self.proc, self.pipe

    def close(self) -> None:
        if self.pipe is not None:
            with contextlib.suppress(OSError):
                self.pipe.close()
            self.pipe = None
        if self.proc is not None:
            self.proc.join(2)
            if self.proc.is_alive():
                self.proc.kill()
                self.proc.join(5)
            self.proc = None


_WORKER = _Worker()


def push_in_child(job: PushJob, *, progress: ProgressFn | None = None,
                  cancel: threading.Event | None = None,
                  on_start: Callable[[int], None] | None = None) -> tuple[SyncResult, ...]:
    """``sync.push`` of each of ``job.folders`` in the niced sync child; blocks the calling
    (worker) thread. Returns one result per folder.

    Raises what the push raised (``SyncCancelled``, ``SshError``, ...), or
    ``SyncError`` when the child died without a word (the next call starts a new
    one). ``cancel`` is passed on: the child stops between files, as an
    in-process push would. ``on_start`` gets the child's pid once the job is sent.
    """
    if not job.home and os.environ.get("GPUDESK_HOME"):
        job = PushJob(**{**job.__dict__, "home": os.environ["GPUDESK_HOME"]})
    with _WORKER.lock:
        proc, pipe = _WORKER.ensure()
        _WORKER.cancel.clear()
        pipe.send(job)
        if on_start is not None and proc.pid is not None:
            on_start(proc.pid)
        return _answer(job, proc, pipe, progress, cancel)


def _answer(job: PushJob, proc: Any, pipe: Connection, progress: ProgressFn | None,
            cancel: threading.Event | None) -> tuple[SyncResult, ...]:
    cancelled_at: float | None = None
    while True:
        if cancel is not None and cancel.is_set() and cancelled_at is None:
            _WORKER.cancel.set()
            cancelled_at = time.monotonic()
        if cancelled_at is not None and time.monotonic() - cancelled_at > CANCEL_GRACE_S:
            proc.terminate()
        message: tuple[str, Any] | None
        try:
            message = pipe.recv() if pipe.poll(POLL_S) else None
        except (EOFError, OSError):
            message = ("gone", None)
        if message is None:
            if not proc.is_alive() and not pipe.poll(0):
                message = ("gone", None)
            else:
                continue
        kind, value = cast(tuple[str, Any], message)
        if kind == "progress":
            if progress is not None:
                progress(value)
            continue
        if kind == "done":
            return tuple(value)
        if kind == "error":
            raise value
        proc.join(5)
        code = proc.exitcode
        _WORKER.close()
        raise SyncError(MSG_CHILD_DIED, target=job.ref, code=code)
