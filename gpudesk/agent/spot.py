"""Watches the cloud's spot interruption notice and tells the running training to checkpoint.

Sources (base URLs configurable, for tests):

* AWS IMDSv2: ``PUT {base}/latest/api/token`` (header
  ``X-aws-ec2-metadata-token-ttl-seconds``), then
  ``GET {base}/latest/meta-data/spot/instance-action`` with
  ``X-aws-ec2-metadata-token`` → ``{"action": "terminate", "time":
  "2017-09-18T08:22:00Z"}`` about two minutes ahead; 404 = no notice.
* Tencent: ``GET {base}/latest/meta-data/spot/termination-time`` →
  ``2018-08-18 12:05:33`` in UTC+8; 404 = no notice.
* Alibaba Cloud ECS: ``GET {base}/latest/meta-data/instance/spot/termination-time``
  → ``2015-01-05T18:02:00Z`` (UTC) about five minutes ahead; 404 = no notice.

Contract with ``gpudesk.training`` (its ``spot.py`` reads exactly this). On a
new notice the agent, for every active run (``runs.active_runs``):

1. writes ``spot-notice.json`` atomically (a new file each time, so its inode
   changes) into the run folder ``<runs_dir>/<run-id>/`` and into the
   ``GPUDESK_RUN_DIR`` of each process of the run, if different. Content:
   ``{"provider": "aws", "action": "terminate", "time": "2017-09-18T08:22:00Z",
   "deadline": 1505722920.0, "noticed_at": 1505722801.5}`` (``deadline``: unix
   time the machine goes, null when the cloud's text could not be read);
2. sends ``SIGUSR1`` to every process in the run's process tree that has a
   SIGUSR1 handler installed (``/proc/PID/status`` SigCgt) — never to one
   without, since SIGUSR1's default action kills (torchrun has none).

It also writes the same file into the agent folder and records one
``spot-notice`` event per distinct notice (key ``spot:<provider>:<time>``).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import urllib.error
import urllib.request
from dataclasses import asdict
from dataclasses import dataclass
from datetime import datetime
from datetime import timedelta
from datetime import timezone
from pathlib import Path
from typing import Any
from typing import Dict
from typing import List
from typing import Optional
from typing import Set

from .clock import SYSTEM_CLOCK
from .clock import Clock
from .events import Event
from .events import EventLog
from .rules import SpotConfig
from .runs import active_runs
from .runs import catches_signal
from .runs import process_tree
from .runs import run_dir_of

log = logging.getLogger("gpudesk.agent")

SPOT_NOTICE_FILE = "spot-notice.json"
SPOT_SIGNAL = signal.SIGUSR1
AWS_TOKEN_PATH = "/latest/api/token"
AWS_ACTION_PATH = "/latest/meta-data/spot/instance-action"
TENCENT_PATH = "/latest/meta-data/spot/termination-time"
ALIYUN_PATH = "/latest/meta-data/instance/spot/termination-time"
TOKEN_TTL_S = 21600
UTC8 = timezone(timedelta(hours=8))


class SpotUnavailable(Exception):
    """The metadata service did not answer (not a "no notice")."""


@dataclass(frozen=True)
class Notice:
    provider: str
    action: str
    time: str  # as the cloud wrote it
    deadline: Optional[float]  # unix seconds, None when the text did not parse

    @property
    def key(self) -> str:
        return f"spot:{self.provider}:{self.time}"


def parse_aws_time(text: str) -> float | None:
    try:
        return datetime.strptime(text.strip(), "%Y-%m-%dT%H:%M:%SZ").replace(
            tzinfo=timezone.utc).timestamp()
    except ValueError:
        return None


def parse_tencent_time(text: str) -> float | None:
    try:
        return datetime.strptime(text.strip(), "%Y-%m-%d %H:%M:%S").replace(
            tzinfo=UTC8).timestamp()
    except ValueError:
        return None


# Metadata services are link-local: never through a proxy from the environment.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _request(url: str, *, method: str = "GET", headers: Optional[Dict[str, str]] = None,
             timeout: float = 2.0) -> tuple[int, bytes]:
    req = urllib.request.Request(url, method=method, headers=headers or {})
    try:
        with _OPENER.open(req, timeout=timeout) as resp:
            return int(resp.status), resp.read(65536)
    except urllib.error.HTTPError as exc:
        body = exc.read(65536)
        exc.close()
        return int(exc.code), body
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise SpotUnavailable(str(getattr(exc, "reason", exc))) from None


class AwsSpot:
    provider = "aws"

    def __init__(self, base_url: str, clock: Clock = SYSTEM_CLOCK, timeout: float = 2.0) -> None:
        self.base = base_url.rstrip("/")
        self.clock = clock
        self.timeout = timeout
        self._token: Optional[str] = None
        self._token_until = 0.0

    def _get_token(self) -> str:
        if self._token is None or self.clock.monotonic() >= self._token_until:
            status, body = _request(self.base + AWS_TOKEN_PATH, method="PUT", timeout=self.timeout,
                                    headers={"X-aws-ec2-metadata-token-ttl-seconds":
                                             str(TOKEN_TTL_S)})
            if status != 200 or not body:
                raise SpotUnavailable(f"IMDSv2 token: HTTP {status}")
            self._token = body.decode("ascii", "replace").strip()
            self._token_until = self.clock.monotonic() + TOKEN_TTL_S - 60
        return self._token

    def check(self) -> Notice | None:
        for _attempt in range(2):
            status, body = _request(self.base + AWS_ACTION_PATH, timeout=self.timeout,
                                    headers={"X-aws-ec2-metadata-token": self._get_token()})
            if status == 401:  # token expired or revoked: fetch a new one once
                self._token = None
                continue
            if status == 404:
                return None
            if status != 200:
                raise SpotUnavailable(f"instance-action: HTTP {status}")
            try:
                data = json.loads(body)
            except ValueError:
                data = {}
            if not isinstance(data, dict):
                data = {}
            when = str(data.get("time", ""))[:64]
            return Notice("aws", str(data.get("action", "terminate"))[:32], when,
                          parse_aws_time(when))
        raise SpotUnavailable("instance-action: token refused twice")


class _TerminationTime:
    """A cloud whose metadata gives only the termination time, as plain text, at ``path``
    (404 until a notice); the action is always a termination."""

    provider = ""
    path = ""

    def __init__(self, base_url: str, timeout: float = 2.0) -> None:
        self.base = base_url.rstrip("/")
        self.timeout = timeout

    def parse(self, when: str) -> float | None:
        raise NotImplementedError

    def check(self) -> Notice | None:
        status, body = _request(self.base + self.path, timeout=self.timeout)
        if status == 404:
            return None
        if status != 200:
            raise SpotUnavailable(f"termination-time: HTTP {status}")
        when = body.decode("utf-8", "replace").strip()[:64]
        return Notice(self.provider, "terminate", when, self.parse(when))


class TencentSpot(_TerminationTime):
    provider = "tencent"
    path = TENCENT_PATH

    def parse(self, when: str) -> float | None:
        return parse_tencent_time(when)


class AliyunSpot(_TerminationTime):
    provider = "aliyun"
    path = ALIYUN_PATH

    def parse(self, when: str) -> float | None:
        return parse_aws_time(when)  # ISO 8601 in UTC, as AWS writes it


def make_source(config: SpotConfig, clock: Clock = SYSTEM_CLOCK) -> Any | None:
    if config.provider == "aws":
        return AwsSpot(config.base_url, clock)
    if config.provider == "tencent":
        return TencentSpot(config.base_url)
    if config.provider == "aliyun":
        return AliyunSpot(config.base_url)
    return None


def write_notice(folder: Path, payload: Dict[str, Any]) -> Path:
    """Atomically (re)write the notice file: readers see all of it or none, and a new inode."""
    target = Path(folder) / SPOT_NOTICE_FILE
    tmp = target.with_name(f".{SPOT_NOTICE_FILE}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(payload, sort_keys=True), encoding="utf-8")
    os.replace(tmp, target)
    return target


def deliver(notice: Notice, runs_dir: Path, noticed_at: float) -> Dict[str, Any]:
    """Tell every active run: notice files, then SIGUSR1 to processes that handle it."""
    payload = dict(asdict(notice), noticed_at=round(noticed_at, 3))
    files: List[str] = []
    signalled: List[int] = []
    runs: List[str] = []
    for run in active_runs(runs_dir):
        runs.append(run.folder.name)
        tree = process_tree(run.pid)
        folders: Set[Path] = {run.folder}
        for pid in tree:
            d = run_dir_of(pid)
            if d is not None:
                folders.add(d)
        for folder in sorted(folders):
            try:
                if folder.is_dir():
                    files.append(str(write_notice(folder, payload)))
            except OSError as exc:
                log.warning("cannot write the spot notice into %s: %s", folder, exc)
        for pid in tree:
            if catches_signal(pid, SPOT_SIGNAL):
                try:
                    os.kill(pid, SPOT_SIGNAL)
                    signalled.append(pid)
                except OSError:
                    pass
    return {"runs": runs, "files": files, "signalled": signalled}


class SpotWatcher:
    """Polls a source; each new notice is delivered to the runs and recorded once."""

    def __init__(self, source: Any, events: EventLog, *, runs_dir: Path, agent_dir: Path,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        self.source = source
        self.events = events
        self.runs_dir = Path(runs_dir)
        self.agent_dir = Path(agent_dir)
        self.clock = clock
        self.failures = 0

    def poll(self) -> Event | None:
        """One check; the ``spot-notice`` event when a new notice was handled."""
        try:
            notice = self.source.check()
        except SpotUnavailable as exc:
            self.failures += 1
            if self.failures in (1, 10) or self.failures % 720 == 0:
                log.warning("spot metadata unavailable (%d times): %s", self.failures, exc)
            return None
        self.failures = 0
        if notice is None or self.events.has(notice.key):
            return None
        now = self.clock.time()
        log.warning("spot notice: %s at %s", notice.action, notice.time)
        try:
            write_notice(self.agent_dir, dict(asdict(notice), noticed_at=round(now, 3)))
        except OSError as exc:
            log.warning("cannot write the spot notice: %s", exc)
        done = deliver(notice, self.runs_dir, now)
        return self.events.record("spot-notice", key=notice.key, provider=notice.provider,
                                  action=notice.action, time=notice.time,
                                  deadline=notice.deadline, **done)
