"""How a run's machine reaches its bucket, decided at run start (issues 22 and 30).

For a machine gpudesk launched (``ledger.Machine.store``: "" or "auto" = the account's
gpudesk bucket in the machine's region, "none", or a store URI) the desktop finds or makes
the bucket with the account's keys and asks the cloud's STS for short-lived keys limited to
the run's folder (``storage.sts``). An own machine whose profile names a bucket, and any
machine a run is given a bucket for (``gpudesk run --store``, a recovery), gets the same
keys from the account that owns that bucket (``access_for_store``). The account's own keys
never leave this computer. Any failure gives a ``StoreAccess`` of kind "none" whose
``why_none`` says why (a translatable ``Said``): the run still starts, on the laptop-copy
path, and its log says so. A bucket named for a run is checked before the run starts
(``storage.store_check``, issue 30), so that case is a refusal before anything runs.

Blocking (boto3 and the cloud SDKs): call it from a worker thread.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING
from typing import Any

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.core.errors import TemplatedError
from gpudesk.services.core.said import Said
from gpudesk.services.storage.access import StoreAccess
from gpudesk.services.storage.uri import CLOUD_SCHEMES
from gpudesk.services.storage.uri import StoreUri
from gpudesk.services.storage.uri import check_bucket
from gpudesk.services.storage.uri import check_run_id
from gpudesk.services.storage.uri import parse_uri

if TYPE_CHECKING:
    from gpudesk.services.cloud.providers.base import Credentials
    from gpudesk.services.money.ledger import Machine
    from gpudesk.services.storage.buckets import BucketMemory

log = logging.getLogger(__name__)

CLOUDS = ("aws", "tencent", "aliyun")
NONE_WORDS = ("none", "off", "no")

MSG_NO_KEYS = QT_TRANSLATE_NOOP(
    "Storage", "no {cloud} account keys are in the keyring to make the run's bucket keys")
MSG_OTHER_CLOUD = QT_TRANSLATE_NOOP(
    "Storage", "the store {uri} is on another cloud than the machine ({cloud})")
MSG_FAILED = QT_TRANSLATE_NOOP(
    "Storage", "the bucket could not be prepared ({detail})")


def _said(err: BaseException) -> str:
    """A failure in words that stay translatable (a Said for a TemplatedError)."""
    if isinstance(err, TemplatedError):
        context = err.translation_context or "Storage"
        return Said(context, err.template, **err.values)
    detail = type(err).__name__
    code = str((getattr(err, "response", None) or {}).get("Error", {}).get("Code", ""))
    return Said("Storage", MSG_FAILED, detail=f"{detail}: {code}" if code else detail)


def wants_store(machine: Machine, uri: str = "") -> bool:
    """Whether runs on ``machine`` get a bucket: gpudesk's cloud machines, unless "none",
    and an own machine whose profile names a bucket (a run that already has its bucket,
    ``uri``, keeps it)."""
    word = machine.store.strip().lower()
    if machine.provider not in CLOUDS:  # an own machine: only a URI it was given
        return bool(uri) or word not in ("", "auto", *NONE_WORDS)
    return bool(uri) or word not in NONE_WORDS


def _store_of(machine: Machine, uri: str = "") -> StoreUri | None:
    """The URI the machine names (None: the account's gpudesk bucket, found at run start)."""
    text = uri.strip() or machine.store.strip()
    if text.lower() in ("", "auto"):
        return None
    return parse_uri(text)


def access_for(machine: Machine, run_id: str, *, credentials: Credentials | None = None,
               hours: float | None = None, memory: BucketMemory | None = None,
               uri: str = "") -> StoreAccess | None:
    """How the run ``run_id`` on ``machine`` reaches its bucket; None for an own machine or
    a machine whose store is "none". ``uri``: the bucket the run already has (a resume, a
    recovery on a new machine). ``hours``: how long the keys last (default: the longest
    the cloud allows these keys). Never raises for a cloud's refusal: that gives kind
    "none" with ``why_none``."""
    if not wants_store(machine, uri):
        return None
    if machine.provider not in CLOUDS:  # an own machine: keys from the bucket's account
        return access_for_store(parse_uri(uri.strip() or machine.store), machine.store_region,
                                run_id, credentials=credentials, hours=hours)
    from gpudesk.services.storage import sts

    cloud, region = machine.provider, machine.region
    store = StoreUri(cloud, "")
    try:
        given = _store_of(machine, uri)
        if given is not None:
            store = given
            if given.cloud != cloud:
                raise _Refused(Said("Storage", MSG_OTHER_CLOUD, uri=str(given),
                                    cloud=CLOUD_SCHEMES[cloud]))
            check_bucket(cloud, given.bucket, region=region if cloud == "tencent" else "")
        check_run_id(run_id)
        creds = credentials if credentials is not None else _keyring(cloud)
        if creds is None:
            raise _Refused(Said("Storage", MSG_NO_KEYS, cloud=CLOUD_SCHEMES[cloud].upper()))
        caller = sts.whoami(cloud, region, creds)
        if given is None:
            store = _ensure(cloud, region, creds, caller, memory)
        seconds = hours * 3600 if hours else sts.max_seconds(cloud, caller)
        keys = sts.run_credentials(cloud, region, creds, store, run_id,
                                   hours=seconds / 3600, caller=caller)
    except _Refused as refused:
        return StoreAccess(store, region, run_id, why_none=refused.why)
    except Exception as exc:  # noqa: BLE001 - any failure: the run goes on without a bucket
        log.info("no bucket keys for run %s on %s: %s", run_id, machine.id, type(exc).__name__)
        return StoreAccess(store, region, run_id, why_none=_said(exc))
    return StoreAccess(store, region, run_id, sts=keys)


def access_for_store(store: StoreUri, region: str, run_id: str, *,
                     credentials: Credentials | None = None, hours: float | None = None
                     ) -> StoreAccess:
    """Short-lived keys limited to ``run_id``'s folder in ``store``, from the account that
    owns the bucket (the keyring's keys for its cloud): any machine, own or a cloud's, can
    then write the run there. ``region`` "": AWS's answer names it (store_check). Never
    raises for a refusal: kind "none" with ``why_none``."""
    from gpudesk.services.storage import sts
    from gpudesk.services.storage.store_check import check_store

    cloud = store.cloud
    try:
        check_run_id(run_id)
        creds = credentials if credentials is not None else _keyring(cloud)
        if creds is None:
            raise _Refused(Said("Storage", MSG_NO_KEYS, cloud=CLOUD_SCHEMES[cloud].upper()))
        if not region:
            region = check_store(store, region, creds)
        caller = sts.whoami(cloud, region, creds)
        seconds = hours * 3600 if hours else sts.max_seconds(cloud, caller)
        keys = sts.run_credentials(cloud, region, creds, store, run_id,
                                   hours=seconds / 3600, caller=caller)
    except _Refused as refused:
        return StoreAccess(store, region, run_id, why_none=refused.why)
    except Exception as exc:  # noqa: BLE001 - said as the reason the run has no bucket
        log.info("no bucket keys for run %s in %s: %s", run_id, store, type(exc).__name__)
        return StoreAccess(store, region, run_id, why_none=_said(exc))
    return StoreAccess(store, region, run_id, sts=keys)


def checked_run_store(machine: Machine | None, uri: str = "", region: str = ""
                      ) -> tuple[str, str]:
    """The bucket a new run will use when it is named (``uri`` for this run, else the
    machine's own URI), checked before anything runs (``storage.store_check``): (the URI,
    its region); ("", "") where the run gets the account's gpudesk bucket, or none. Raises
    StoreRefused with the bucket's name and the fix."""
    from gpudesk.services.storage.store_check import check_store

    if uri.strip():
        named = parse_uri(uri)
        return str(named), check_store(named, region.strip())
    if machine is None or not wants_store(machine):
        return "", ""
    own = _store_of(machine)
    if own is None:
        return "", ""
    where = machine.store_region if machine.provider not in CLOUDS else machine.region
    return str(own), check_store(own, where if own.cloud == machine.provider
                                 or machine.provider not in CLOUDS else "")


def run_access(machine: Machine | None, run_id: str, uri: str = "", region: str = ""
               ) -> StoreAccess | None:
    """How a new run reaches its bucket: ``uri`` (checked by :func:`checked_run_store`,
    in ``region``) on any machine, else the machine's own store; None for no bucket."""
    if uri:
        return access_for_store(parse_uri(uri), region, run_id)
    if machine is not None and wants_store(machine):
        return access_for(machine, run_id)
    return None


def bucket_of(machine: Machine) -> StoreUri | None:
    """The bucket runs on ``machine`` use, found or made with the account's keys (None: the
    machine has no bucket). Raises what the cloud answered."""
    if not wants_store(machine):
        return None
    given = _store_of(machine)
    if given is not None:
        return given
    from gpudesk.services.storage import sts

    creds = _keyring(machine.provider)
    if creds is None:
        raise _Refused(Said("Storage", MSG_NO_KEYS,
                            cloud=CLOUD_SCHEMES[machine.provider].upper()))
    caller = sts.whoami(machine.provider, machine.region, creds)
    return _ensure(machine.provider, machine.region, creds, caller, None)


def ledger_machine(ref: str) -> Machine | None:
    """The ledger's machine a run target names (None: an ``ssh://`` address or unknown)."""
    if not ref or ref.startswith("ssh://"):
        return None
    from gpudesk.services.cloud.machines import resolve
    from gpudesk.services.money.ledger import Ledger

    try:
        with Ledger() as ledger:
            return resolve(ledger, ref)
    except Exception:  # noqa: BLE001 - not a machine gpudesk knows: no bucket
        return None


def access_for_target(ref: str, run_id: str, *, uri: str = "", role: str = "",
                      region: str = "") -> StoreAccess | None:
    """:func:`access_for` for the machine a run target names; None where it has no bucket,
    and None where the run reaches its bucket through ``role`` (the run's record reuses
    it: no new secret is needed). A run that has its bucket (``uri`` in ``region``) gets
    keys to it on any machine, an own one or an ``ssh://`` address too (issue 30)."""
    if role:
        return None
    machine = ledger_machine(ref)
    if uri and (region or machine is None or machine.provider not in CLOUDS
                or parse_uri(uri).cloud != machine.provider):
        return access_for_store(parse_uri(uri), region, run_id)
    return access_for(machine, run_id, uri=uri) if machine is not None else None


class _Refused(Exception):
    def __init__(self, why: str) -> None:
        super().__init__(str(why))
        self.why = why


def _keyring(cloud: str) -> Credentials | None:
    from gpudesk.services.cloud.credentials import load_credentials

    return load_credentials(cloud)  # type: ignore[arg-type]


def _ensure(cloud: str, region: str, creds: Credentials, caller: Any,
            memory: BucketMemory | None) -> StoreUri:
    from gpudesk.services.storage.buckets import BucketMemory
    from gpudesk.services.storage.buckets import BucketTarget
    from gpudesk.services.storage.buckets import ensure_bucket
    from gpudesk.services.storage.clients import make_client

    target = BucketTarget(cloud, region, caller.account_id, caller.appid)
    info = ensure_bucket(make_client(cloud, region, creds), target, memory or BucketMemory())
    return info.store


def store_summary(machine: Machine) -> dict[str, str]:
    """``show --json``'s ``store``: where runs on ``machine`` keep their data and how the
    machine gets in ("sts": short-lived keys limited to each run; "none": no bucket). The
    machine's own role is the guard's (stop only), never the bucket's: ``role`` is ""."""
    if not wants_store(machine):
        return {"uri": "", "role": "", "credentials": "none"}
    if machine.provider not in CLOUDS:  # an own machine's bucket: keys from its account
        try:
            return {"uri": str(parse_uri(machine.store)), "role": "", "credentials": "sts",
                    "region": machine.store_region}
        except TemplatedError:
            return {"uri": machine.store.strip(), "role": "", "credentials": "none"}
    try:
        given = _store_of(machine)
    except TemplatedError:
        return {"uri": machine.store.strip(), "role": "", "credentials": "none"}
    return {"uri": str(given) if given is not None else "auto", "role": "",
            "credentials": "sts"}
