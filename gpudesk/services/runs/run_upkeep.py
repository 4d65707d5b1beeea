"""What a run's bucket needs while gpudesk follows the run, and once it has ended.

* **Fresh keys.** Short-lived STS keys end (a Tencent main account's after 2 hours,
  docs/storage.md); the agent re-reads its credentials file when it changes. While the
  desktop follows a run (Run page, ``gpudesk run``/``logs --follow``) it writes new keys
  when less than a quarter of the old ones' life is left. Nothing refreshes them with
  gpudesk closed: the run log and Watch's store line then say the bucket cannot be reached,
  and the laptop-copy path goes on.
* **Keep N days.** When the desktop sees the run end, the run's folder gets its own
  lifecycle rule: deleted ``store_keep_days`` (Preferences) after the end, 0 keeps it.

Blocking (SSH, boto3): call from worker threads.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import time
from collections.abc import Callable
from datetime import UTC
from datetime import datetime
from typing import Any

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.core.errors import TemplatedError
from gpudesk.services.core.said import Said
from gpudesk.services.core.worker import StoppableWorker
from gpudesk.services.runs.detached import RunRecord
from gpudesk.services.runs.detached import RunStatus
from gpudesk.services.storage.clients import account_client

log = logging.getLogger(__name__)

REFRESH_FRACTION = 0.25  # new keys once less than this part of the old ones' life is left
MIN_LEFT_S = 10 * 60.0  # ... and never later than this before they end
CHECK_EVERY_S = 60.0

MSG_KEYS_NEW = QT_TRANSLATE_NOOP(
    "Runs", "new short-lived keys for run {run}'s bucket; they end at {expires}")
MSG_KEYS_FAILED = QT_TRANSLATE_NOOP(
    "Runs", "could not renew run {run}'s bucket keys ({why}); the old ones end at {expires}, "
    "then checkpoints are copied to this computer only")
MSG_KEPT_UNTIL = QT_TRANSLATE_NOOP(
    "Runs", "the bucket deletes run {run}'s folder on {date} ({days} days after the run "
    "ended, Preferences)")
MSG_KEPT = QT_TRANSLATE_NOOP(
    "Runs", "the bucket keeps run {run}'s folder until you delete it (Preferences: keep)")
MSG_KEEP_NOT_LIFTED = QT_TRANSLATE_NOOP(
    "Runs", "run {run} starts again, but the deletion date of its bucket folder set when it "
    "ended could not be lifted ({why}): change it in the bucket before that date")
MSG_KEEP_FAILED = QT_TRANSLATE_NOOP(
    "Runs", "could not set when the bucket deletes run {run}'s folder ({why}); it is kept")

Report = Callable[[str], None]


def _ts(text: str) -> float | None:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() if text else None
    except ValueError:
        return None


def _iso(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def refresh_at(record: RunRecord) -> float | None:
    """When the run's keys should be renewed (unix s); None: no short-lived keys."""
    if record.store_credentials != "sts":
        return None
    ends, issued = _ts(record.store_expires), _ts(record.store_issued)
    if ends is None:
        return None
    life = ends - issued if issued is not None and issued < ends else 3600.0
    return ends - max(life * REFRESH_FRACTION, min(MIN_LEFT_S, life / 2))


def refresh_due(record: RunRecord, now: float) -> bool:
    at = refresh_at(record)
    return at is not None and now >= at


def renew_keys(conn: Any, record: RunRecord, *, now: float | None = None,
               access_for: Callable[..., Any] | None = None) -> Said:
    """New keys for ``record`` written on the machine (only the mode-600 credentials file:
    the agent picks them up without restarting). The record keeps their end."""
    from gpudesk.services.runs import machine_access
    from gpudesk.services.runs import run_store

    ask = access_for or functools.partial(  # the run's bucket, where it is (issue 30)
        machine_access.access_for_target, region=record.store_region)
    try:
        access = ask(record.main.target, record.id, uri=record.store_uri)
        if access is None or access.sts is None:
            why = getattr(access, "why_none", "") or "-"
            return Said("Runs", MSG_KEYS_FAILED, run=record.id, why=why,
                        expires=record.store_expires or "?")
        run_store.write_credentials(conn, record.main.run_dir, record.id, access.sts,
                                    python=record.python)
    except Exception as exc:  # noqa: BLE001 - said in the log; the old keys go on until they end
        log.info("renewing keys of %s failed: %s", record.id, type(exc).__name__)
        return Said("Runs", MSG_KEYS_FAILED, run=record.id, why=type(exc).__name__,
                    expires=record.store_expires or "?")
    record.store_issued = _iso(datetime.fromtimestamp(now if now is not None else time.time(),
                                                      UTC))
    record.store_expires = run_store.expiry_text(access.sts.expires)
    record.save()
    return Said("Runs", MSG_KEYS_NEW, run=record.id, expires=record.store_expires)


def expire_after_end(record: RunRecord, status: RunStatus | None, *,
                     keep_days: int | None = None, client: Any = None,
                     now: datetime | None = None) -> Said | None:
    """Once ``status`` says the run ended, set its folder's lifecycle rule (once per end).
    None when there is nothing to say: no bucket, not ended, or already done."""
    if not record.store_uri or status is None or status.state != "exited":
        return None
    from gpudesk.services.core.settings import load_settings
    from gpudesk.services.storage import buckets
    from gpudesk.services.storage.uri import parse_uri

    days = load_settings().store_keep_days if keep_days is None else keep_days
    mark = f"{record.attempt}:{days}"
    if record.store_kept == mark:
        return None
    ended = now or datetime.now(UTC)
    try:
        store = parse_uri(record.store_uri)
        bucket = client if client is not None else account_client(store.cloud,
                                                                   record.store_region)
        when = buckets.expire_run(bucket, store, record.id, ended, days, cloud=store.cloud)
    except Exception as exc:  # noqa: BLE001 - the folder is kept; said in the log
        return Said("Runs", MSG_KEEP_FAILED, run=record.id, why=_why(exc))
    record.store_kept = mark
    record.save()
    if when is None:
        return Said("Runs", MSG_KEPT, run=record.id)
    return Said("Runs", MSG_KEPT_UNTIL, run=record.id, date=when.strftime("%Y-%m-%d"),
                days=days)


def _why(exc: BaseException) -> str:
    """An error in words that stay translatable where gpudesk wrote them."""
    if isinstance(exc, TemplatedError):
        return Said(exc.translation_context or "Storage", exc.template, **exc.values)
    return type(exc).__name__


def lift_expiry(record: RunRecord, *, client: Any = None) -> None:
    """A run started again keeps its folder while it runs: the rule set at its last end is
    removed (a folder deleted under a running run would lose its checkpoints)."""
    if not record.store_uri or not record.store_kept:
        return
    from gpudesk.services.storage import buckets
    from gpudesk.services.storage.uri import parse_uri

    store = parse_uri(record.store_uri)
    bucket = client if client is not None else account_client(store.cloud, record.store_region)
    buckets.expire_run(bucket, store, record.id, datetime.now(UTC), 0, cloud=store.cloud)
    record.store_kept = ""
    record.save()


def keep_folder(record: RunRecord, report: Report) -> None:
    """:func:`lift_expiry` before a run starts again; a failure is said, never raised."""
    try:
        lift_expiry(record)
    except Exception as exc:  # noqa: BLE001 - the run starts anyway; the date is said
        report(Said("Runs", MSG_KEEP_NOT_LIFTED, run=record.id, why=_why(exc)))


class KeyRenewer(StoppableWorker):
    """Renews a followed run's short-lived keys when due, over its own connection."""

    def __init__(self, record: RunRecord, connect: Callable[[], Any], report: Report, *,
                 clock: Callable[[], float] = time.time,
                 access_for: Callable[..., Any] | None = None) -> None:
        self.record = record
        self._connect = connect
        self._report = report
        self._clock = clock
        self._access_for = access_for
        self._failed_for = ""  # the keys' end already said to be near, once per end
        super().__init__(f"gpudesk-keys-{record.id}")

    def _main(self) -> None:
        while not self._stop.is_set():
            at = refresh_at(self.record)
            if at is None:
                return
            now = self._clock()
            if now >= at:
                self._renew(now)
            wait = CHECK_EVERY_S if now >= at else min(CHECK_EVERY_S, max(1.0, at - now))
            self._stop.wait(wait)

    def renew_now(self) -> None:
        """One renewal if due (tests and the thread's loop)."""
        now = self._clock()
        if refresh_due(self.record, now):
            self._renew(now)

    def _renew(self, now: float) -> None:
        conn = None
        try:
            conn = self._connect()
            said = renew_keys(conn, self.record, now=now, access_for=self._access_for)
        except Exception as exc:  # noqa: BLE001 - no connection now: try again next minute
            said = Said("Runs", MSG_KEYS_FAILED, run=self.record.id, why=type(exc).__name__,
                        expires=self.record.store_expires or "?")
        finally:
            if conn is not None:
                with contextlib.suppress(Exception):
                    conn.close()
        if said.template == MSG_KEYS_FAILED:
            if self._failed_for == self.record.store_expires:
                return  # said once for these keys; tried again every minute quietly
            self._failed_for = self.record.store_expires
        if not self._stop.is_set():
            self._report(said)
