"""Push a project folder to a machine and pull chosen outputs back, incrementally.

Pure Python on the desktop (no rsync; Windows works). What is sent follows the
project's ``.gitignore`` files, nested ones included (``pathspec``'s
GitIgnoreSpec), plus ``.git/info/exclude``; ``.git`` itself never goes (the walk
is ``sync_scan``).

A push is one request and one reply to the sync helper on the machine
(``sync_manifest``): the desktop sends ``{path: [size, mtime_ns]}``, the
helper answers with what it has (hashing only files whose size matches but
whose time differs, and caching those hashes). Files whose size and mtime
match are unchanged, as in rsync's and git's quick check; for the rest the
content hash decides between "send" and "just fix the time". Everything that
changed then goes as one stream on the same channel. Deleting only ever
touches files gpudesk itself wrote into that folder and that the project's
rules would still sync, so the machine's checkpoints and data survive.

All functions block: the window runs them with ``asyncio.to_thread`` and
passes ``progress`` (called on the worker thread) and a ``cancel`` event.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import threading
import time
import weakref
import zlib
from collections.abc import Callable
from collections.abc import Iterable
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace
from pathlib import Path
from typing import Any

import paramiko
from pathspec import GitIgnoreSpec

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.core import paths
from gpudesk.services.core.files import atomic_write_text
from gpudesk.services.remote import sync_manifest as wire
from gpudesk.services.remote.ssh import MSG_DROPPED
from gpudesk.services.remote.ssh import SshConnection
from gpudesk.services.remote.ssh import SshDisconnected
from gpudesk.services.remote.sync_scan import MEASURE_LIMIT as MEASURE_LIMIT
from gpudesk.services.remote.sync_scan import MSG_NOT_FOLDER as MSG_NOT_FOLDER
from gpudesk.services.remote.sync_scan import IgnoreRules as IgnoreRules
from gpudesk.services.remote.sync_scan import LocalFile as LocalFile
from gpudesk.services.remote.sync_scan import Skipped as Skipped
from gpudesk.services.remote.sync_scan import SyncError as SyncError
from gpudesk.services.remote.sync_scan import SyncPlan as SyncPlan
from gpudesk.services.remote.sync_scan import plan_push as plan_push
from gpudesk.services.remote.sync_scan import scan as scan

MSG_NO_PYTHON = QT_TRANSLATE_NOOP(
    "Sync", "The machine has no working python3 ({detail}). gpudesk needs Python 3.7 or newer "
    "on the machine to sync files.")
MSG_HELPER = QT_TRANSLATE_NOOP(
    "Sync", "The sync helper on the machine failed: {detail}")
MSG_CANCELLED = QT_TRANSLATE_NOOP(
    "Sync", "Sync cancelled after {done} of {total} files. Files already copied are complete; "
    "none was left half-written.")
MSG_INCOMPLETE = QT_TRANSLATE_NOOP(
    "Sync", "{count} files could not be written ({first}). The others were synced.")



class SyncCancelled(SyncError):
    def __init__(self, result: SyncResult, total: int) -> None:
        self.result = result
        super().__init__(MSG_CANCELLED, done=result.files_sent, total=total)


class SyncIncomplete(SyncError):
    def __init__(self, result: SyncResult) -> None:
        self.result = result
        super().__init__(MSG_INCOMPLETE, count=len(result.errors),
                         first=result.errors[0][:200] if result.errors else "")


# --------------------------------------------------------------------------- results

@dataclass(frozen=True)
class SyncProgress:
    phase: str  # "scan", "compare", "send", "receive", "done"
    files_done: int = 0
    files_total: int = 0
    bytes_done: int = 0
    bytes_total: int = 0
    path: str = ""


@dataclass(frozen=True)
class SyncResult:
    """One push or pull. For a pull, "sent" means copied from the machine to the desktop."""

    files_sent: int
    bytes_sent: int  # file content bytes
    deleted: int
    skipped: int  # ignored entries (a skipped folder counts once)
    seconds: float
    unchanged: int = 0
    touched: int = 0  # same content, only the time or mode was fixed
    round_trips: int = 0  # requests to the machine
    stream_bytes: int = 0  # bytes on the wire for file records
    dry_run: bool = False
    sent: tuple[str, ...] = ()
    deleted_paths: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()


ProgressFn = Callable[[SyncProgress], None]


# --------------------------------------------------------------------------- local hash cache

class HashCache:
    """Content hashes of local files, keyed by path + size + mtime_ns, under the cache folder."""

    def __init__(self, root: Path) -> None:
        key = hashlib.sha256(str(root.resolve()).encode("utf-8", "surrogateescape")).hexdigest()
        self.path = paths.cache_dir() / "sync" / f"{key[:24]}.json"
        self.root = root
        self.entries: dict[str, list[Any]] = {}
        self.dirty = False
        with contextlib.suppress(OSError, ValueError, AttributeError):
            loaded = json.loads(self.path.read_text(encoding="utf-8"))
            if loaded.get("v") == 1:
                self.entries = dict(loaded["files"])

    def hash(self, item: LocalFile) -> str:
        known = self.entries.get(item.path)
        if known is not None and known[0] == item.size and known[1] == item.mtime_ns:
            return str(known[2])
        digest = wire.file_hash(os.path.join(self.root, *item.path.split("/")))
        self.entries[item.path] = [item.size, item.mtime_ns, digest]
        self.dirty = True
        return digest

    def save(self, keep: Iterable[str]) -> None:
        if not self.dirty:
            return
        wanted = set(keep)
        self.entries = {k: v for k, v in self.entries.items() if k in wanted}
        atomic_write_text(self.path, json.dumps({"v": 1, "files": self.entries}))
        self.dirty = False


# --------------------------------------------------------------------------- the remote helper

def helper_command() -> str:
    """``python3 -c`` with the helper's source, compressed into one shell-safe word."""
    import importlib.resources  # here: the CLI calls this on its connecting thread

    source = importlib.resources.files("gpudesk.services.remote").joinpath("sync_manifest.py")
    blob = base64.b64encode(zlib.compress(source.read_bytes(), 9)).decode("ascii")
    code = ("import base64,zlib;exec(compile(zlib.decompress(base64.b64decode('" + blob
            + "')),'gpudesk_sync','exec'),{'__name__':'__main__'})")
    return f'exec python3 -I -S -c "{code}"'


class RemoteHelper:
    """The helper process on one connection; requests are serialised by ``lock``."""

    def __init__(self, conn: SshConnection) -> None:
        self.conn = conn
        self.lock = threading.Lock()
        self.requests = 0
        self._chan: paramiko.Channel | None = None
        self._reader: Any = None
        self._transport: paramiko.Transport | None = None
        self._greeted = False

    def ensure(self) -> None:
        self.begin()
        self.ready()

    def begin(self) -> None:
        """Connect if needed (checking the host key) and start the helper without waiting."""
        chan = self._chan
        transport = self.conn.transport()  # reconnects (and re-checks the host key) if needed
        if (chan is not None and not chan.closed and not chan.exit_status_ready()
                and transport is self._transport):
            return
        self.close()
        chan = self.conn.start(helper_command(), what="starting the sync helper")
        self._chan, self._transport = chan, transport
        self._reader = chan.makefile("rb", 1 << 16)
        self._greeted = False

    def ready(self) -> None:
        """Wait for the helper's greeting (once per start)."""
        if self._greeted:
            return
        chan = self._chan
        assert chan is not None
        hello = self._reader.readline()
        self._greeted = bool(hello)
        if not hello:
            status = chan.recv_exit_status()
            err = chan.recv_stderr(4096).decode("utf-8", "replace").strip()
            self.close()
            detail = err[-300:] or f"exit status {status}"
            raise SyncError(MSG_NO_PYTHON if status in (126, 127) or "python" in err.lower()
                            else MSG_HELPER, detail=detail)

    def send(self, data: bytes) -> None:
        chan = self._chan
        assert chan is not None
        piece = max(4096, chan.out_max_packet_size - 64)  # whole packets, no runts
        offset = 0
        try:
            while offset < len(data):
                sent = chan.send(data[offset:offset + piece])
                if sent <= 0:
                    raise OSError("channel closed")
                offset += sent
        except (OSError, EOFError, paramiko.SSHException) as exc:
            self.close()
            raise SshDisconnected(MSG_DROPPED, target=str(self.conn.target),
                                  what="syncing") from exc

    def send_request(self, message: dict[str, Any]) -> None:
        self.requests += 1
        self.send(json.dumps(message, separators=(",", ":")).encode("utf-8") + b"\n")

    def read(self, size: int) -> bytes:
        data: bytes = self._reader.read(size)
        return data

    def reply(self) -> dict[str, Any]:
        try:
            line = self._reader.readline()
        except (OSError, EOFError, paramiko.SSHException):
            line = b""
        if not line:
            alive = self.conn.connected
            err = b""
            if self._chan is not None and self._chan.recv_stderr_ready():
                err = self._chan.recv_stderr(4096)
            self.close()
            if not alive:
                raise SshDisconnected(MSG_DROPPED, target=str(self.conn.target), what="syncing")
            raise SyncError(MSG_HELPER, detail=err.decode("utf-8", "replace").strip()[-300:]
                            or "it stopped")
        answer: dict[str, Any] = json.loads(line)
        if "error" in answer:
            raise SyncError(MSG_HELPER, detail=str(answer["error"])[:300])
        return answer

    def request(self, message: dict[str, Any]) -> dict[str, Any]:
        self.send_request(message)
        return self.reply()

    def finish_stream(self) -> dict[str, Any]:
        """After a cancel: end our side; the helper discards the partial file and replies."""
        chan = self._chan
        answer: dict[str, Any] = {}
        if chan is not None:
            with contextlib.suppress(OSError, EOFError, paramiko.SSHException):
                chan.shutdown_write()
                line = self._reader.readline()
                if line:
                    answer = json.loads(line)
                chan.recv_exit_status()
        self.close()
        return answer

    def close(self) -> None:
        chan, self._chan = self._chan, None
        if chan is not None:
            chan.close()
        self._reader = None


_HELPERS: weakref.WeakKeyDictionary[SshConnection, RemoteHelper] = weakref.WeakKeyDictionary()
_HELPERS_LOCK = threading.Lock()


def helper_for(conn: SshConnection) -> RemoteHelper:
    with _HELPERS_LOCK:
        helper = _HELPERS.get(conn)
        if helper is None:
            helper = _HELPERS[conn] = RemoteHelper(conn)
        return helper


# --------------------------------------------------------------------------- push

@dataclass
class _Diff:
    send: list[LocalFile] = field(default_factory=list)
    touch: list[list[Any]] = field(default_factory=list)
    delete: list[str] = field(default_factory=list)
    prune: list[str] = field(default_factory=list)
    unchanged: int = 0


def _compare(plan: SyncPlan, answer: dict[str, Any], cache: HashCache,
             delete: bool) -> _Diff:
    """The helper lists only files that differ from ours, and ours it does not have."""
    diff = _Diff()
    remote: dict[str, list[Any]] = answer["files"]
    missing = set(answer["missing"])
    for item in plan.files:
        theirs = remote.get(item.path)
        if theirs is None:
            if item.path in missing:
                diff.send.append(item)
            else:
                diff.unchanged += 1
        elif theirs[0] != item.size:
            diff.send.append(item)
        elif theirs[1] == item.mtime_ns:
            if theirs[2] == item.mode:
                diff.unchanged += 1
            else:
                diff.touch.append([item.path, item.mtime_ns, item.mode])
        elif theirs[3] and theirs[3] == cache.hash(item):
            diff.touch.append([item.path, item.mtime_ns, item.mode])
        else:
            diff.send.append(item)
    if delete:
        local = {item.path for item in plan.files}
        diff.delete = sorted(rel for rel, theirs in remote.items()
                             if theirs[4] and rel not in local and not plan.rules.ignored(rel))
        keep = {rel.rsplit("/", 1)[0] for rel in local if "/" in rel}
        keep = {"/".join(d.split("/")[:i]) for d in keep for i in range(1, d.count("/") + 2)}
        folders = {"/".join(rel.split("/")[:i]) for rel in diff.delete
                   for i in range(1, rel.count("/") + 1)}
        diff.prune = sorted(folders - keep)
    return diff


def push(conn: SshConnection, local: Path, remote_dir: str, *, delete: bool = False,
         dry_run: bool = False, progress: ProgressFn | None = None,
         cancel: threading.Event | None = None, plan: SyncPlan | None = None) -> SyncResult:
    """Make ``remote_dir`` on the machine hold ``local``'s synced files (see module doc).

    ``plan``: a scan of ``local`` made just before (the CLI scans while it connects);
    without one the folder is scanned here, while the helper starts on the machine."""
    started = time.monotonic()
    report = progress or (lambda _p: None)
    helper = helper_for(conn)
    with helper.lock:
        helper.begin()  # the helper starts on the machine while the folder is scanned here
        report(SyncProgress("scan"))
        if plan is None or Path(plan.root) != Path(local):
            plan = scan(Path(local))
        if cancel is not None and cancel.is_set():
            raise SyncCancelled(_result(plan, started, 0), len(plan.files))
        cache = HashCache(plan.root)
        helper.ready()
        first = helper.requests
        report(SyncProgress("compare", files_total=len(plan.files)))
        answer = helper.request({"op": "manifest", "root": remote_dir, "files": {
            f.path: [f.size, f.mtime_ns, f.mode] for f in plan.files}})
        diff = _compare(plan, answer, cache, delete)
        base = _result(plan, started, helper.requests - first, unchanged=diff.unchanged,
                       dry_run=dry_run, sent=tuple(f.path for f in diff.send),
                       deleted_paths=tuple(diff.delete), touched=len(diff.touch),
                       files_sent=len(diff.send), bytes_sent=sum(f.size for f in diff.send),
                       deleted=len(diff.delete))
        if dry_run or not (diff.send or diff.delete or diff.touch):
            cache.save(f.path for f in plan.files)
            report(SyncProgress("done"))
            return base
        result = _send(helper, plan, remote_dir, diff, base, first, report, cancel)
    cache.save(f.path for f in plan.files)
    result = replace(result, seconds=time.monotonic() - started)
    if result.errors:
        raise SyncIncomplete(result)
    report(SyncProgress("done", result.files_sent, result.files_sent, result.bytes_sent,
                        result.bytes_sent))
    return result


def _send(helper: RemoteHelper, plan: SyncPlan, remote_dir: str, diff: _Diff,
          base: SyncResult, first: int, report: ProgressFn,
          cancel: threading.Event | None) -> SyncResult:
    files_total = len(diff.send)
    bytes_total = sum(f.size for f in diff.send)
    done = {"files": 0, "bytes": 0}

    def moved(rel: str, size: int) -> None:
        done["bytes"] += size
        report(SyncProgress("send", done["files"], files_total, done["bytes"], bytes_total, rel))

    helper.send_request({"op": "apply", "root": remote_dir, "delete": diff.delete,
                         "prune": diff.prune, "touch": diff.touch})
    cancelled = cancel.is_set if cancel is not None else None
    sent, stream = wire.write_file_records(
        helper.send, str(plan.root), [f.path for f in diff.send], progress=moved,
        cancelled=cancelled)
    if cancel is not None and cancel.is_set():
        answer = helper.finish_stream()
        written = int(answer.get("written", 0))
        partial = replace(base, files_sent=written, bytes_sent=0, stream_bytes=stream,
                          sent=(), round_trips=helper.requests - first)
        raise SyncCancelled(partial, files_total)
    helper.send(wire.RECORD_END)
    answer = helper.reply()
    return replace(base, files_sent=int(answer["written"]), deleted=int(answer["deleted"]),
                   touched=int(answer["touched"]), stream_bytes=stream + 1,
                   round_trips=helper.requests - first, errors=tuple(answer["errors"]),
                   bytes_sent=_bytes_of(diff.send, sent))


def _bytes_of(files: list[LocalFile], sent: list[str]) -> int:
    done = set(sent)
    return sum(f.size for f in files if f.path in done)


def _result(plan: SyncPlan, started: float, round_trips: int, **values: Any) -> SyncResult:
    fields: dict[str, Any] = {"files_sent": 0, "bytes_sent": 0, "deleted": 0}
    fields.update(values)
    return SyncResult(skipped=len(plan.skipped), seconds=time.monotonic() - started,
                      round_trips=round_trips, **fields)


# --------------------------------------------------------------------------- pull

def walk_roots(patterns: Iterable[str]) -> list[str]:
    """The folders (or files) the helper must look in to find everything ``patterns`` select."""
    roots: set[str] = set()
    for raw in patterns:
        pattern = raw.strip()
        if not pattern or pattern.startswith(("#", "!")):
            continue
        body = pattern.rstrip("/")
        if "/" not in body:  # no slash: matches at any depth
            return [""]
        literal: list[str] = []
        for part in body.lstrip("/").split("/"):
            if any(ch in part for ch in "*?[\\") or part in ("", ".", ".."):
                break
            literal.append(part)
        if not literal:
            return [""]
        roots.add("/".join(literal))
    ordered = sorted(roots)
    return [r for r in ordered if not any(r.startswith(o + "/") for o in ordered if o != r)]


def pull(conn: SshConnection, remote_dir: str, patterns: Iterable[str], local_dir: Path, *,
         dry_run: bool = False, progress: ProgressFn | None = None,
         cancel: threading.Event | None = None) -> SyncResult:
    """Copy the files under ``remote_dir`` that match ``patterns`` (gitignore syntax, e.g.
    ``checkpoints/*.pt``, ``logs/``) into ``local_dir``, skipping those already there with
    the same size and mtime. Nothing local is deleted."""
    started = time.monotonic()
    report = progress or (lambda _p: None)
    chosen = [p for p in patterns if p.strip()]
    spec = GitIgnoreSpec.from_lines(chosen)
    target = Path(local_dir)
    helper = helper_for(conn)
    with helper.lock:
        helper.ensure()
        first = helper.requests
        answer = helper.request({"op": "list", "root": remote_dir, "under": walk_roots(chosen)})
        need: list[str] = []
        sizes: dict[str, int] = {}
        unchanged = 0
        for rel, (size, mtime_ns, _mode) in sorted(answer["files"].items()):
            if not spec.match_file(rel):
                continue
            try:
                wire.check_rel(rel)
                mine = os.stat(os.path.join(target, *rel.split("/")))
                if mine.st_size == size and mine.st_mtime_ns == mtime_ns:
                    unchanged += 1
                    continue
            except (OSError, ValueError):
                pass
            need.append(rel)
            sizes[rel] = size
        base = SyncResult(files_sent=len(need), bytes_sent=sum(sizes.values()), deleted=0,
                          skipped=0, seconds=0.0, unchanged=unchanged, dry_run=dry_run,
                          sent=tuple(need))
        if dry_run or not need:
            return replace(base, seconds=time.monotonic() - started,
                           round_trips=helper.requests - first)
        result = _receive(helper, target, remote_dir, need, sizes, base, report, cancel)
        result = replace(result, round_trips=helper.requests - first)
    result = replace(result, seconds=time.monotonic() - started)
    if result.errors:
        raise SyncIncomplete(result)
    return result


class _Stop(Exception):
    pass


def _receive(helper: RemoteHelper, target: Path, remote_dir: str, need: list[str],
             sizes: dict[str, int], base: SyncResult, report: ProgressFn,
             cancel: threading.Event | None) -> SyncResult:
    target.mkdir(parents=True, exist_ok=True)
    bytes_total = sum(sizes.values())
    done = {"bytes": 0}
    receiver = wire.Receiver(str(target))

    def moved(rel: str, size: int) -> None:
        if cancel is not None and cancel.is_set():
            raise _Stop
        done["bytes"] += size
        report(SyncProgress("receive", len(receiver.written), len(need), done["bytes"],
                            bytes_total, rel))

    helper.send_request({"op": "send", "root": remote_dir, "files": need})
    try:
        receiver.receive(helper.read, moved)
    except (_Stop, wire.Truncated) as exc:
        helper.close()  # the helper is mid-stream: drop it, a new one starts next time
        partial = replace(base, files_sent=len(receiver.written),
                          bytes_sent=sum(size for _r, size, _m in receiver.written),
                          sent=tuple(rel for rel, _s, _m in receiver.written))
        if isinstance(exc, _Stop):
            raise SyncCancelled(partial, len(need)) from None
        raise SshDisconnected(MSG_DROPPED, target=str(helper.conn.target),
                              what="copying files back") from None
    answer = helper.reply()
    written = tuple(rel for rel, _s, _m in receiver.written)
    missing = [f"{rel}: vanished on the machine" for rel in answer.get("missing", [])]
    return replace(base, files_sent=len(written), sent=written,
                   bytes_sent=sum(size for _r, size, _m in receiver.written),
                   errors=tuple(receiver.errors + missing))
