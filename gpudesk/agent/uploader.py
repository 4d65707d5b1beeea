"""Moves a run's data to the user's bucket: checkpoints, the log, and outputs at the end.

The desktop writes ``store-config.json`` into the run folder (``<runs_dir>/<run-id>/``):
the :class:`~.store.StoreConfig` fields (no secret: a role name or the path of a
mode-600 STS file) plus ``keep`` (checkpoints kept in the bucket, default 3),
``interval_s`` (checkpoint scan, default 60), ``log_every_s`` (default 60) and the
folders ``checkpoints``/``outputs`` and the ``log`` file, relative to the run folder
(and, for tests, ``multipart_threshold``/``part_size`` in bytes).

Bucket layout under the prefix ``runs/<run-id>/``: ``checkpoints/<name>``,
``logs/log.NNNNNN``, ``outputs/<relative path>`` and ``manifest.json`` ``{"run",
"latest", "checkpoints": [{"name", "bytes", "sha256", "complete"}], "updated"}``.

Rules that keep a half upload from ever being "latest":

* only finished checkpoints count: ``ckpt-<step>.pt`` whose ``.json`` sidecar
  (written by ``gpudesk.training`` after the rename) gives the size on disk and the
  SHA-256 the bytes read back must match;
* the object is verified in the bucket (size, ETag, SHA-256 in its metadata) before
  ``manifest.json`` names it, and the manifest is written last;
* objects under ``checkpoints/`` are deleted only once the manifest no longer names them.

The log goes up in numbered parts, each holding the bytes added since the last
one: S3 objects cannot be appended to, and sending the whole log again every
minute would cost ever more time and traffic on a long run (a part is written
once; a reader joins them in order). A part cut off by a kill is sent again
under the same number from the same offset.

On a spot notice (``spot-notice.json`` in the run folder, from ``spot.py``) it
uses the warning time (AWS 2 min, Tencent about 2, Aliyun 5): the newest
checkpoint first, then the manifest, then the log, on every tick.

Its state for the desktop's Watch page goes to ``store.json`` in the run folder:
the last upload, what the bucket holds, the last error ("cannot reach the
bucket: …") and ``requests`` ``{"tier1", "tier2", "since"}``: the run's store
requests by S3 billing class since ``since``, summed over agent restarts (what the
file had plus what this process counted), for the desktop's spend.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import signal
import sys
import threading
import time
from dataclasses import dataclass
from dataclasses import field
from datetime import datetime
from datetime import timezone
from pathlib import Path
from typing import Any
from typing import Callable
from typing import Dict
from typing import List
from typing import Optional
from typing import Sequence
from typing import Set
from typing import Tuple

from .clock import SYSTEM_CLOCK
from .clock import Clock
from .run_folder import PID_FILE
from .run_folder import finished_before_exit
from .run_folder import pid_alive
from .runs import read_pid
from .spot import SPOT_NOTICE_FILE
from .store import MULTIPART_THRESHOLD
from .store import PART_SIZE
from .store import Store
from .store import StoreConfig
from .store import StoreError
from .store import hook

log = logging.getLogger("gpudesk.agent")

CONFIG_FILE = "store-config.json"
STATE_FILE = "store.json"
MANIFEST = "manifest.json"
EXIT_FILE = "exit_status"  # the run launcher's (services/runs/run_launcher_script.py)
CANCEL_FILE = "cancelled"  # the launcher's: the exit was asked for
# runs/<id>/state.json, written when the run ends: a keep-alive group's next machine does
# not start a run whose state is final again (replacement.py). An exit by a signal (a
# shutdown's SIGTERM) or during a spot notice is no end: the run goes on elsewhere.
END_FILE = "state.json"
FINAL_STATES = ("succeeded", "failed", "cancelled")
WARNING_S = {"aws": 120.0, "tencent": 120.0, "aliyun": 300.0}
LOG_PART_MAX = 32 * 1024 * 1024
_CKPT = re.compile(r"^ckpt-(\d{9,})\.pt$")


def utc_iso(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _write_json(path: Path, data: Dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _read_json(path: Path) -> Dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


@dataclass(frozen=True)
class Settings:
    run_id: str
    keep: int = 3
    interval_s: float = 60.0
    log_every_s: float = 60.0
    checkpoints: str = "checkpoints"
    outputs: str = "outputs"
    log: str = "log"

    @classmethod
    def from_dict(cls, data: Dict[str, Any], run_id: str) -> Settings:
        try:
            keep = int(data.get("keep", 3))
            interval = float(data.get("interval_s", 60.0))
            log_every = float(data.get("log_every_s", 60.0))
        except (TypeError, ValueError):
            raise StoreError("keep, interval_s and log_every_s must be numbers") from None
        if keep < 1 or interval <= 0 or log_every <= 0:
            raise StoreError("keep must be at least 1 and the intervals positive")
        return cls(str(data.get("run_id") or run_id), keep, interval, log_every,
                   str(data.get("checkpoints") or "checkpoints"),
                   str(data.get("outputs") or "outputs"), str(data.get("log") or "log"))


def load_config(folder: Path, path: Optional[Path] = None) -> tuple[StoreConfig, Settings]:
    data = _read_json(path or folder / CONFIG_FILE)
    if not data:
        raise StoreError(f"no readable {CONFIG_FILE} in {folder}")
    settings = Settings.from_dict(data, folder.name)
    data.setdefault("prefix", f"runs/{settings.run_id}/")
    return StoreConfig.from_dict(data), settings


@dataclass(frozen=True)
class LocalCheckpoint:
    name: str
    path: Path
    step: int
    bytes: int
    sha256: str


def finished_checkpoints(folder: Path) -> List[LocalCheckpoint]:
    """Renamed checkpoints whose sidecar is written and agrees with the size on disk."""
    out: List[LocalCheckpoint] = []
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    for name in names:
        m = _CKPT.match(name)
        if m is None:
            continue
        path = folder / name
        meta = _read_json(path.with_suffix(".json"))
        try:
            size = path.stat().st_size
        except OSError:
            continue
        sha = meta.get("sha256")
        if meta.get("bytes") == size and isinstance(sha, str) and len(sha) == 64:
            out.append(LocalCheckpoint(name, path, int(m.group(1)), size, sha))
    return sorted(out, key=lambda c: c.step)


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _mtime(path: Path) -> Optional[float]:
    try:
        return path.stat().st_mtime
    except OSError:
        return None


def _step(name: Optional[str]) -> int:
    m = _CKPT.match(name or "")
    return int(m.group(1)) if m else -1


@dataclass
class Uploader:
    """One run's uploads; the agent (or ``upload``) calls :meth:`tick` every second or so."""

    folder: Path
    config: StoreConfig
    settings: Settings
    store: Store
    state: Dict[str, Any] = field(default_factory=dict)
    manifest: Optional[Dict[str, Any]] = None
    next_ckpt: float = 0.0
    next_log: float = 0.0
    retry_at: float = 0.0  # after a failure, wait before trying again
    _bad: Set[str] = field(default_factory=set)  # local checkpoints whose bytes fail their hash
    # store.json's tier1 and tier2 when this uploader began, and the store's count then
    _counted: Tuple[int, int, Tuple[int, int, int]] = (0, 0, (0, 0, 0))

    def __post_init__(self) -> None:
        had = self.state.get("requests")
        had = had if isinstance(had, dict) else {}
        self.state["requests"] = had
        self._counted = (_count(had.get("tier1")), _count(had.get("tier2")),
                         self.store.requests.counts())

    @classmethod
    def for_run(cls, folder: Path, store: Optional[Store] = None,
                now: Callable[[], float] = time.time) -> Uploader:
        config, settings = load_config(folder)
        if store is None:
            sizes = _read_json(folder / CONFIG_FILE)  # part sizes: tests go below 64 MiB
            store = Store(config, now=now,
                          multipart_threshold=int(sizes.get("multipart_threshold")
                                                  or MULTIPART_THRESHOLD),
                          part_size=int(sizes.get("part_size") or PART_SIZE))
        state = _read_json(folder / STATE_FILE)
        config_mtime = _mtime(folder / CONFIG_FILE)
        if state.get("finished") and state.get("config_mtime") != config_mtime:
            # the run was started again here (a resume writes its store config anew):
            # its checkpoints, log and outputs are uploaded again until it ends again
            state.pop("finished", None)
        state["config_mtime"] = config_mtime
        return cls(folder, config, settings, store, state)

    def restarted(self) -> bool:
        """Whether the run's store config was written again since this uploader began."""
        return _mtime(self.folder / CONFIG_FILE) != self.state.get("config_mtime")

    # -------------------------------------------------------------- the schedule

    @property
    def done(self) -> bool:
        return bool(self.state.get("finished"))

    def ended(self) -> bool:
        """The run's process is gone. Files older than the store config belong to the
        run's previous start (a resume rewrites the config before it starts again)."""
        since = self.state.get("config_mtime")
        exit_at = _mtime(self.folder / EXIT_FILE)
        if exit_at is not None and (since is None or exit_at >= since):
            return True
        pid_at = _mtime(self.folder / PID_FILE)
        if pid_at is None or (since is not None and pid_at < since):
            return False
        pid = read_pid(self.folder / PID_FILE)
        return pid is not None and not pid_alive(pid)

    def tick(self, now: float) -> None:
        """Whatever is due now; a failure is recorded in ``store.json`` and retried later."""
        if now < self.retry_at:
            return
        try:
            self._tick(now)
        except StoreError as exc:
            if self.state.get("error") != str(exc):
                log.warning("run %s: %s", self.settings.run_id, exc)
            self.state.update(error=str(exc), error_at=utc_iso(now))
            # in a spot notice's warning time every second counts
            self.retry_at = now + (2.0 if self._spot_running(now) else
                                   min(max(self.settings.interval_s, 5.0), 30.0))
        else:
            self.state.update(error=None, error_at=None)
        self._save(now)

    def _tick(self, now: float) -> None:
        if self.manifest is None:
            self.manifest = self._load_manifest()
            self._continue_log_parts()
            try:
                self.store.abort_stale_uploads(self.config.prefix + "checkpoints/")
            except StoreError as exc:
                log.info("cannot list stale multipart uploads: %s", exc)
        if self._spot(now):
            self.upload_checkpoints(now, newest_only=True)
            self.upload_log(now)
            return
        ended = self.ended()
        if now >= self.next_ckpt or ended:
            self.next_ckpt = now + self.settings.interval_s
            self.upload_checkpoints(now)
        if now >= self.next_log or ended:
            self.next_log = now + self.settings.log_every_s
            self.upload_log(now)
        if ended and not self.done:
            self.upload_outputs(now)
            self.upload_end(now)
            self.state["finished"] = utc_iso(now)

    def _spot(self, now: float) -> bool:
        """True while a spot notice's warning time runs."""
        notice = _read_json(self.folder / SPOT_NOTICE_FILE)
        key = str(notice.get("time") or "")
        if key and (self.state.get("spot") or {}).get("time") != key:
            deadline = notice.get("deadline")
            if not isinstance(deadline, (int, float)):
                noticed = notice.get("noticed_at")
                start = noticed if isinstance(noticed, (int, float)) else now
                deadline = start + WARNING_S.get(self.config.cloud, 120.0)
            self.state["spot"] = {"time": key, "deadline": float(deadline)}
            log.warning("run %s: spot notice, uploading what fits in %.0f s",
                        self.settings.run_id, float(deadline) - now)
        return self._spot_running(now)

    def _spot_running(self, now: float) -> bool:
        spot = self.state.get("spot")
        return isinstance(spot, dict) and now < float(spot.get("deadline") or 0)

    # -------------------------------------------------------------- checkpoints

    def _key(self, *parts: str) -> str:
        return self.config.prefix + "/".join(parts)

    def _load_manifest(self) -> Dict[str, Any]:
        raw = self.store.get_bytes(self._key(MANIFEST))
        empty: Dict[str, Any] = {"run": self.settings.run_id, "latest": None,
                                 "checkpoints": [], "updated": None}
        if raw is None:
            return empty
        try:
            data = json.loads(raw)
        except ValueError:
            log.warning("run %s: the bucket's manifest is not JSON; starting a new one",
                        self.settings.run_id)
            return empty
        if not isinstance(data, dict) or not isinstance(data.get("checkpoints"), list):
            return empty
        return data

    def upload_checkpoints(self, now: float, newest_only: bool = False) -> int:
        """Upload finished checkpoints newer than the manifest's latest; returns how many."""
        assert self.manifest is not None
        latest = _step(self.manifest.get("latest"))
        todo = [c for c in finished_checkpoints(self.folder / self.settings.checkpoints)
                if c.step > latest and c.name not in self._bad]
        todo = todo[-1:] if newest_only else todo[-self.settings.keep:]
        for ckpt in todo:
            key = self._key("checkpoints", ckpt.name)
            try:
                self.store.put_file(key, ckpt.path, sha256=ckpt.sha256)
            except FileNotFoundError:
                continue  # pruned by the training meanwhile: a newer one exists
            except StoreError as exc:
                if "differs from its SHA-256" in str(exc):
                    self._bad.add(ckpt.name)
                raise
            hook("before-manifest")
            entries = [e for e in self.manifest.get("checkpoints", [])
                       if isinstance(e, dict) and e.get("name") != ckpt.name]
            entries.append({"name": ckpt.name, "bytes": ckpt.bytes, "sha256": ckpt.sha256,
                            "complete": True})
            entries.sort(key=lambda e: _step(str(e.get("name"))))
            manifest = {"run": self.settings.run_id, "latest": ckpt.name,
                        "checkpoints": entries[-self.settings.keep:], "updated": utc_iso(now)}
            self.store.put_bytes(self._key(MANIFEST),
                                 json.dumps(manifest, indent=1).encode("utf-8"))
            self.manifest = manifest
            self.state["last_upload"] = {"what": "checkpoint", "name": ckpt.name,
                                         "bytes": ckpt.bytes, "at": utc_iso(now)}
            self._save(now)
            log.info("run %s: %s is in the bucket", self.settings.run_id, ckpt.name)
        if todo and not newest_only:
            self.prune()
        return len(todo)

    def prune(self) -> List[str]:
        """Delete checkpoint objects the manifest no longer names (older ones, orphans)."""
        assert self.manifest is not None
        named = {e.get("name") for e in self.manifest.get("checkpoints", [])
                 if isinstance(e, dict)}
        gone = []
        for obj in self.store.list(self._key("checkpoints", "")):
            if obj.key.rsplit("/", 1)[-1] not in named:
                self.store.delete(obj.key)
                gone.append(obj.key)
        return gone

    # -------------------------------------------------------------- log and outputs

    def _continue_log_parts(self) -> None:
        """A run resumed on a new machine has no local count of its log parts: number on
        from the bucket's highest, so machine B never overwrites machine A's parts."""
        info = self.state.setdefault("log", {"parts": 0, "offset": 0})
        prefix = self._key("logs", self.settings.log + ".")
        held = [obj.key[len(prefix):] for obj in self.store.list(prefix)]
        highest = max((int(n) for n in held if n.isdigit()), default=0)
        if highest > int(info.get("parts", 0)):
            info["parts"] = highest

    def upload_log(self, now: float) -> bool:
        """Send the bytes the log gained since the last part as the next numbered part."""
        path = self.folder / self.settings.log
        info = self.state.setdefault("log", {"parts": 0, "offset": 0})
        try:
            size = path.stat().st_size
        except OSError:
            return False
        if size < int(info.get("offset", 0)):  # rotated or truncated: start over
            info["offset"] = 0
        offset = int(info.get("offset", 0))
        if size == offset:
            return False
        with open(path, "rb") as fh:
            fh.seek(offset)
            data = fh.read(min(size - offset, LOG_PART_MAX))
        number = int(info.get("parts", 0)) + 1
        self.store.put_bytes(self._key("logs", f"{self.settings.log}.{number:06d}"), data,
                             content_type="text/plain; charset=utf-8")
        info.update(parts=number, offset=offset + len(data))
        self.state["last_upload"] = {"what": "log", "name": f"{self.settings.log}.{number:06d}",
                                     "bytes": len(data), "at": utc_iso(now)}
        return True

    def upload_outputs(self, now: float) -> int:
        root = self.folder / self.settings.outputs
        total = count = 0
        for dirpath, _dirs, files in os.walk(root):
            for name in sorted(files):
                path = Path(dirpath) / name
                if path.is_symlink() or not path.is_file():
                    continue
                rel = path.relative_to(root).as_posix()
                info = self.store.put_file(self._key("outputs", rel), path)
                total += info.size
                count += 1
        self.state["outputs"] = {"files": count, "bytes": total, "at": utc_iso(now)}
        if count:
            self.state["last_upload"] = {"what": "outputs", "name": f"{count} files",
                                         "bytes": total, "at": utc_iso(now)}
        return count

    def upload_end(self, now: float) -> str:
        """How the run ended, to ``state.json`` in the bucket; returns the state."""
        try:
            code: Optional[int] = int((self.folder / EXIT_FILE).read_text().strip())
        except (OSError, ValueError):
            code = None
        if (self.folder / CANCEL_FILE).exists():
            state = "cancelled"
        elif code == 0 or finished_before_exit(self.folder, code):  # teardown: finished
            state = "succeeded"
        elif code is None or code >= 128 or self.state.get("spot"):
            state = "killed"  # by a signal or a reclaim: not an end of the run
        else:
            state = "failed"
        self.store.put_bytes(self._key(END_FILE), json.dumps(
            {"run": self.settings.run_id, "state": state, "code": code,
             "at": utc_iso(now)}, indent=1).encode("utf-8"))
        return state

    # -------------------------------------------------------------- state

    def _save(self, now: float) -> None:
        m = self.manifest or {}
        t1, t2, start = self._counted
        got = self.store.requests.counts()
        self.state["requests"] = {"tier1": t1 + got[0] - start[0],
                                  "tier2": t2 + got[1] - start[1],
                                  "since": str(self.state["requests"].get("since")
                                               or utc_iso(now))}
        self.state.update(
            run=self.settings.run_id, uri=self.config.uri, updated=utc_iso(now),
            latest=m.get("latest"),
            checkpoints=[e.get("name") for e in m.get("checkpoints", []) if isinstance(e, dict)],
            credentials="sts" if self.config.credentials_file else "role")
        if self.manifest is not None:  # what the folder holds, for the desktop's spend
            self.state["bucket_bytes"] = (
                sum(int(e.get("bytes") or 0) for e in m.get("checkpoints", [])
                    if isinstance(e, dict))
                + int((self.state.get("log") or {}).get("offset", 0))
                + int((self.state.get("outputs") or {}).get("bytes", 0)))
        try:
            _write_json(self.folder / STATE_FILE, self.state)
        except OSError as exc:
            log.warning("cannot write %s: %s", STATE_FILE, exc)


class Uploads:
    """The agent's uploads: one :class:`Uploader` per run folder holding a store config,
    ticked on a thread of its own so a long upload never holds up the guard."""

    def __init__(self, runs_dir: Path, clock: Clock = SYSTEM_CLOCK) -> None:
        self.runs_dir = Path(runs_dir)
        self.clock = clock
        self.uploaders: Dict[str, Uploader] = {}
        self._thread: Optional[threading.Thread] = None

    def scan(self) -> None:
        try:
            names = sorted(os.listdir(self.runs_dir))
        except OSError:
            return
        for name in names:
            if not (self.runs_dir / name / CONFIG_FILE).is_file():
                continue
            known = self.uploaders.get(name)
            if known is not None and not (known.done and isinstance(known, Uploader)
                                          and known.restarted()):
                continue
            try:
                self.uploaders[name] = Uploader.for_run(self.runs_dir / name,
                                                        now=self.clock.time)
            except StoreError as exc:
                log.error("run %s: store config refused: %s", name, exc)
                self.uploaders[name] = _Refused()  # type: ignore[assignment]

    def tick(self) -> None:
        self.scan()
        for up in self.uploaders.values():
            if not up.done:
                up.tick(self.clock.time())

    def start(self, stop: threading.Event) -> None:
        def loop() -> None:
            while not stop.is_set():
                try:
                    self.tick()
                except Exception:
                    log.exception("uploads failed")
                self.clock.wait(stop, 1.0)

        self._thread = threading.Thread(target=loop, name="gpudesk-uploads", daemon=True)
        self._thread.start()

    def join(self, timeout: float) -> None:
        if self._thread is not None:
            self._thread.join(timeout)


class _Refused:
    """A run whose store config is unusable: said once, never ticked."""

    done = True


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python3 -m gpudesk.agent upload --run FOLDER``: upload until the run has ended
    and its outputs are in the bucket (or SIGTERM). Exit 1: the config is unusable."""
    p = argparse.ArgumentParser(prog="gpudesk-agent upload")
    p.add_argument("--run", type=Path, required=True, help="the run folder")
    p.add_argument("--every", type=float, default=1.0, help="seconds between ticks")
    p.add_argument("--log-level", default="INFO")
    args = p.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(message)s")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    try:
        up = Uploader.for_run(args.run)
    except StoreError as exc:
        print(f"gpudesk-agent upload: {exc}", file=sys.stderr)
        return 1
    while not stop.is_set() and not up.done:
        up.tick(time.time())
        stop.wait(args.every)
    return 0
