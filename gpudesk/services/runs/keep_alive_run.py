"""A run that recovers by itself (issue 23): the desktop's side, above the cloud room.

* At launch (:class:`Hooks`, given to the ``Launcher``): the group members' role,
  ``gpudesk-run-<ledger id>`` (``storage.run_role``), made before the group because its
  launch template names it, then narrowed to the group's id. It may end that group and,
  once a run starts, read and write that run's folder only. A refusal launches the group
  without a role and says what that costs: with gpudesk away a replacement cannot reach the
  bucket or end its group (the group's own scheduled end still caps the bill).
* When a run starts on such a machine (:func:`run_started`): the role's bucket part is set
  to the run, what a fresh machine needs is written to the bucket (``run_package``), and
  the group's launch template/configuration gets the keep-alive user data for this run
  (``first_boot.user_data(..., keep_alive=...)``, ``set_user_data``): from then on the
  group's next machine resumes the run from the bucket with gpudesk closed. The first
  machine goes on over SSH as before. Each step's failure is said in the run's log and
  leaves the run on the laptop-copy/bucket path; nothing here stops a run.
* Host keys: that user data carries a host key of its own (not the first member's, which
  was replaced at its first login). Its public half and fingerprint go to the ledger
  before the cloud call, its private half to the keyring; when reconcile follows the row to
  a new member (``keep_alive_launch.REPLACED_HOOKS``), that key becomes the row's only pin
  and its expected fingerprint, and the next connect replaces it on the machine as a
  launch key is (``host_key_rotation.STEP_MEMBER_KEY``).
* After the group ended (a hook the cloud room calls): the role and the template's key are
  deleted.

Blocking (boto3, the cloud SDKs): call from worker threads.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.cloud import keep_alive_launch
from gpudesk.services.core.errors import TemplatedError
from gpudesk.services.core.said import Said
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine
from gpudesk.services.storage.uri import StoreUri

if TYPE_CHECKING:
    from gpudesk.services.core.settings import Settings
    from gpudesk.services.runs.detached import RunRecord

log = logging.getLogger(__name__)

STEP_ROLE = "group-role"  # ledger: the members' role (detail: its name)
STEP_ROLE_REFUSED = "group-role-refused"  # detail: the cloud's words
STEP_ROLE_DELETED = "group-role-deleted"
# The group armed for a run: written BEFORE the cloud call (detail: run, fingerprint and
# public line of the user data's host key), then its result.
STEP_ARMING = "group-user-data"
STEP_ARMED = "group-armed"  # detail: run, fingerprint, the cloud's name of the data
STEP_ARM_FAILED = "group-arm-failed"  # detail: run, the step and the cloud's words
CONTEXT = "KeepAlive"
MSG_ARMED = QT_TRANSLATE_NOOP(
    "KeepAlive", "The group's next machine resumes run {run} from the bucket.")
MSG_ARM_NO_BUCKET = QT_TRANSLATE_NOOP(
    "KeepAlive", "Run {run} has no bucket, so the group's next machine cannot resume it: "
    "after a reclaim the run waits for you. It goes on here.")
MSG_ARM_NO_ROLE = QT_TRANSLATE_NOOP(
    "KeepAlive", "The group's machines have no role, so the group's next machine cannot fetch "
    "run {run} from the bucket. It goes on here, with its copies in the bucket.")
MSG_ARM_NO_CLOUD = QT_TRANSLATE_NOOP(
    "KeepAlive", "The group's cloud could not be asked ({why}): its next machine will not "
    "resume run {run}. The run goes on here.")
MSG_ARM_ROLE_FAILED = QT_TRANSLATE_NOOP(
    "KeepAlive", "The role of the group's machines was not given run {run}'s folder ({why}): "
    "the group's next machine will not resume it. The run goes on here.")
MSG_ARM_PACKAGE_FAILED = QT_TRANSLATE_NOOP(
    "KeepAlive", "What a new machine needs to resume run {run} was not written to the bucket "
    "({why}): the group's next machine will not resume it. The run goes on here.")
MSG_ARM_USER_DATA_FAILED = QT_TRANSLATE_NOOP(
    "KeepAlive", "The group's launch template was not given run {run} ({why}): its next "
    "machine will start without resuming it. The run goes on here.")
MSG_GROUP_ENDED = QT_TRANSLATE_NOOP(
    "KeepAlive", "run {run} ended, so its group {group} was ended too: nothing of it bills now")
MSG_GROUP_END_FAILED = QT_TRANSLATE_NOOP(
    "KeepAlive", "run {run} ended, but its group {group} could not be ended ({why}): it keeps "
    "a machine until its own end at {end}; end it on the Instances page (Terminate)")
MSG_NO_ROLE = QT_TRANSLATE_NOOP(
    "KeepAlive", "The group's machines have no role ({why}): with gpudesk closed, a "
    "replacement can neither fetch the run from the bucket nor end its group; the group's "
    "own end at the budget still stops the bill.")


def _words(exc: BaseException) -> str:
    if isinstance(exc, TemplatedError):
        return exc.message()
    return str(getattr(exc, "why", "")) or type(exc).__name__


def store_of(machine: Machine) -> StoreUri | None:
    """The bucket the machine's runs use (found or made with the account's keys); None when
    the machine has none ("none")."""
    from gpudesk.services.runs import machine_access

    return machine_access.bucket_of(machine)


class Hooks:
    """``keep_alive_launch.KeepAliveHooks`` for the Launcher (CLI and window)."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self._stores: dict[str, StoreUri] = {}

    def role_for(self, machine: Machine, provider: object) -> str:
        from gpudesk.services.storage import run_role

        try:
            store = store_of(machine)
            if store is None:
                raise _NoBucket()
            self._stores[machine.id] = store
            name = run_role.ensure_group_role(provider, machine.id, machine.region, store)
        except Exception as exc:  # noqa: BLE001 - launched without a role, and said
            why = "no bucket" if isinstance(exc, _NoBucket) else _words(exc)
            self.ledger.log(machine.id, STEP_ROLE_REFUSED, why[:300])
            return ""
        self.ledger.log(machine.id, STEP_ROLE, name)
        return name

    def made(self, machine: Machine, provider: object) -> None:
        """The role narrowed to the group now that its id is known (Tencent, Aliyun)."""
        from gpudesk.services.storage import run_role

        store = self._stores.get(machine.id)
        if store is None or not machine.group_id:
            return
        try:
            run_role.ensure_group_role(provider, machine.id, machine.region, store,
                                       group_id=machine.group_id)
        except Exception as exc:  # noqa: BLE001 - the tag-limited policy stays; logged
            self.ledger.log(machine.id, STEP_ROLE_REFUSED, f"narrowing: {_words(exc)}"[:300])

    def launch_key(self, machine: Machine) -> None:
        """The launch's user data is the group's until a run arms it: its host key (the
        private half copied to the group's entry before the first login replaces it) is
        what a member the group starts before any run offers."""
        from cryptography.hazmat.primitives import serialization

        from gpudesk.services.cloud import credentials
        from gpudesk.services.remote.first_boot import HostKey
        from gpudesk.services.remote.host_key_rotation import host_key_entry

        try:
            pem = credentials.load_private_key(host_key_entry(machine.id))
            if not pem:
                return
            private = serialization.load_ssh_private_key(pem.encode(), password=None)
            public = private.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                                       serialization.PublicFormat.OpenSSH)
            key = HostKey(pem, public.decode())
            credentials.save_private_key(template_key_entry(machine.id), key.private_pem)
        except Exception as exc:  # noqa: BLE001 - only an unarmed replacement's pin waits
            self.ledger.log(machine.id, STEP_ARM_FAILED,
                            f"{LAUNCH} launch-key: {type(exc).__name__}"[:300])
            return
        self.ledger.log(machine.id, STEP_ARMING, f"{LAUNCH} {key.fingerprint} {key.public_line}")
        self.ledger.log(machine.id, STEP_ARMED, f"{LAUNCH} {key.fingerprint} launch")


class _NoBucket(Exception):
    pass


def role_name(ledger: Ledger, m: Machine) -> str:
    """The members' role as the launch recorded it ("" when it was refused or not asked)."""
    name = ""
    for e in ledger.events(m.id):
        if e.step == STEP_ROLE:
            name = e.detail
        elif e.step in (STEP_ROLE_REFUSED, STEP_ROLE_DELETED) and not e.detail.startswith(
                "narrowing"):
            name = ""
    return name


def why_no_role(ledger: Ledger, m: Machine) -> str | None:
    """The words for a group launched without its role; None when it has one."""
    if not m.group_id or role_name(ledger, m):
        return None
    why = next((e.detail for e in reversed(ledger.events(m.id))
                if e.step == STEP_ROLE_REFUSED), "-")
    return MSG_NO_ROLE.format(why=why)


def _delete_role(ledger: Ledger, m: Machine, provider: object) -> None:
    from gpudesk.services.storage import run_role

    if not role_name(ledger, m):
        return
    run_role.delete_group_role(provider, m.id, m.region, m.provider)
    ledger.log(m.id, STEP_ROLE_DELETED, run_role.role_name(m.id))


LAUNCH = "-"  # the run field of the arming events for the launch's own user data


def template_key_entry(ledger_id: str) -> str:
    """The keyring entry of the private half of the host key in the group's user data."""
    from gpudesk.services.remote.host_key_rotation import host_key_entry

    return host_key_entry(ledger_id) + "-group"


# --------------------------------------------------------------------------- a run starts

def _budget(machine: Machine, settings: Settings) -> object | None:
    """run.json's budget: the row's own budget in its currency and the price per hour as
    the guard and the group's end count it (compute and system disk, same currency)."""
    from gpudesk.agent.bucket_spend import RunBudget
    from gpudesk.services.cloud import guard

    if machine.budget is None or machine.budget <= 0 or machine.price_per_hour <= 0:
        return None
    currency = machine.currency or "USD"
    price = machine.price_per_hour + guard.disk_per_hour(
        machine.provider, machine.region, machine.disk_gb, currency, settings.cny_per_usd)
    return RunBudget(float(machine.budget), currency, round(price, 6))


def _request_of(record: RunRecord) -> object:
    from gpudesk.services.runs.detached import RunRequest

    return RunRequest(project=Path(record.project), script=record.script,
                      args=list(record.args), nproc=record.nproc, amp=record.amp,
                      checkpoint_every_min=record.checkpoint_every_min, python=record.python,
                      root=record.root, run_id=record.id, data=dict(record.data))


def run_started(record: RunRecord, machine: Machine | None, report: Callable[[str], None], *,
                ledger: Ledger | None = None, provider: object = None,
                settings: Settings | None = None) -> bool:
    """Blocking: arm a live keep-alive group for ``record`` (see the module's docstring).

    True when the group's next machine will resume the run; False when ``machine`` is no
    live group row or a step failed (each said through ``report`` in the KeepAlive
    context and logged in the ledger). Never raises: the run already runs here."""
    if machine is None or not machine.group_live:
        return False
    if ledger is None:
        with Ledger() as own:
            return run_started(record, machine, report, ledger=own, provider=provider,
                               settings=settings)
    try:
        return _arm(record, machine, report, ledger, provider, settings)
    except Exception as exc:  # noqa: BLE001 - never a crash: the run goes on here
        log.warning("keep-alive group %s not armed: %s", machine.group_id, type(exc).__name__)
        _failed(ledger, machine, record.id, "unexpected", _words(exc), report,
                MSG_ARM_USER_DATA_FAILED)
        return False


def run_ended(record: RunRecord, status: object, report: Callable[[str], None], *,
              providers: Callable[[str], object] | None = None) -> bool:
    """Blocking: the desktop saw ``record`` end for good (its process exited on the machine:
    finished, failed or stopped on request; a lost machine is no end) on a live keep-alive
    row: the group is ended as the agent would, so the cloud starts nothing again. True when
    the group was ended here. Never raises; a failure is said with when the group's own
    end comes."""
    from gpudesk.services.cloud.guard import iso_utc

    if getattr(status, "state", "") != "exited" or record.main.target.startswith("ssh://"):
        return False
    with Ledger() as ledger:
        m = ledger.get(record.main.target)
        if m is None or not m.group_live:
            return False
        try:
            provider: object
            if providers is None:
                from gpudesk.services.cloud.accounts import provider_from_keyring

                provider = provider_from_keyring(m.provider)  # type: ignore[arg-type]
            else:
                provider = providers(m.provider)
            groups = keep_alive_launch.groups_of(provider, m.provider)
            ledger.log(m.id, "run-ended", record.id)
            after = keep_alive_launch.end(ledger, m, groups)
        except Exception as exc:  # noqa: BLE001 - said, with the group's own end
            report(Said(CONTEXT, MSG_GROUP_END_FAILED, run=record.id, group=m.group_id,
                        why=_words(exc), end=iso_utc(m.cloud_timer_at) or "-"))
            return False
    if after.group_live:
        report(Said(CONTEXT, MSG_GROUP_END_FAILED, run=record.id, group=m.group_id,
                    why="the cloud still lists it", end=iso_utc(m.cloud_timer_at) or "-"))
        return False
    report(Said(CONTEXT, MSG_GROUP_ENDED, run=record.id, group=m.group_id))
    return True


def _failed(ledger: Ledger, m: Machine, run: str, step: str, why: str,
            report: Callable[[str], None], template: str, **values: str) -> None:
    ledger.log(m.id, STEP_ARM_FAILED, f"{run} {step}: {why}"[:300])
    report(Said(CONTEXT, template, run=run, why=why, **values))


def _arm(record: RunRecord, m: Machine, report: Callable[[str], None], ledger: Ledger,
         provider: object, settings: Settings | None) -> bool:
    from gpudesk.agent.group_end import GroupRef
    from gpudesk.services.cloud import credentials
    from gpudesk.services.cloud.accounts import provider_from_keyring
    from gpudesk.services.core.settings import load_settings
    from gpudesk.services.remote import first_boot
    from gpudesk.services.remote.machine_rules import agent_rules
    from gpudesk.services.runs import run_package
    from gpudesk.services.storage import run_role
    from gpudesk.services.storage.access import StoreAccess
    from gpudesk.services.storage.uri import parse_uri

    run = record.id
    if not record.store_uri:
        _failed(ledger, m, run, "bucket", "none", report, MSG_ARM_NO_BUCKET)
        return False
    role = role_name(ledger, m)
    if not role:
        _failed(ledger, m, run, "role", "none", report, MSG_ARM_NO_ROLE)
        return False
    settings = settings or load_settings()
    try:
        provider = provider if provider is not None else provider_from_keyring(
            m.provider)  # type: ignore[arg-type]
        groups = keep_alive_launch.groups_of(provider, m.provider)
        keys = credentials.load_credentials(m.provider)  # type: ignore[arg-type]
        if keys is None:
            raise ValueError(f"no {m.provider} keys in the keyring")
    except Exception as exc:  # noqa: BLE001 - said, the run goes on
        _failed(ledger, m, run, "cloud", _words(exc), report, MSG_ARM_NO_CLOUD)
        return False
    store = parse_uri(record.store_uri)
    try:  # 1. the role may read and write this run's folder only
        run_role.set_run(provider, m.id, m.region, store, run, group_id=m.group_id)
    except Exception as exc:  # noqa: BLE001
        _failed(ledger, m, run, "role", _words(exc), report, MSG_ARM_ROLE_FAILED)
        return False
    try:  # 2. what a fresh machine needs: code, agent bundle, run.json (last)
        access = StoreAccess(store, record.store_region or m.region, run, role=role)
        package = run_package.write_package(
            access, _request_of(record), credentials=keys,  # type: ignore[arg-type]
            group=GroupRef(m.provider, m.region, m.group_id),
            budget=_budget(m, settings),  # type: ignore[arg-type]
            keep=settings.store_keep_checkpoints)
    except Exception as exc:  # noqa: BLE001
        _failed(ledger, m, run, "package", _words(exc), report, MSG_ARM_PACKAGE_FAILED)
        return False
    try:  # 3. the group's next members boot from this run's user data
        key = first_boot.new_host_key()
        text = first_boot.user_data(agent_rules(m, settings, ledger), key,
                                    user=m.ssh_user or "ubuntu",
                                    keep_alive=package.keep_alive(role))
        ledger.log(m.id, STEP_ARMING, f"{run} {key.fingerprint} {key.public_line}")
        version = groups.set_user_data(m.region, m.group_id, text)
    except Exception as exc:  # noqa: BLE001
        _failed(ledger, m, run, "user-data", _words(exc), report, MSG_ARM_USER_DATA_FAILED)
        return False
    ledger.log(m.id, STEP_ARMED, f"{run} {key.fingerprint} {version}")
    try:  # the private half, for replacing it on the new member (never a file)
        credentials.save_private_key(template_key_entry(m.id), key.private_pem)
    except Exception as exc:  # noqa: BLE001 - the pin still works; only its replacement waits
        log.warning("group host key of %s not kept: %s", m.id, type(exc).__name__)
    report(Said(CONTEXT, MSG_ARMED, run=run))
    return True


# --------------------------------------------------------------------------- replacements

def armed_key(ledger: Ledger, m: Machine) -> tuple[str, str] | None:
    """(fingerprint, public line) of the host key in the user data the group holds now:
    the latest run it was armed for; None when it never was."""
    armed = [e.detail.split() for e in ledger.events(m.id) if e.step == STEP_ARMED]
    if not armed or len(armed[-1]) < 2:
        return None
    fp = armed[-1][1]
    for e in reversed(ledger.events(m.id)):
        parts = e.detail.split()
        if e.step == STEP_ARMING and len(parts) >= 4 and parts[1] == fp:
            return fp, " ".join(parts[2:4])
    return None


def expect_member_key(ledger: Ledger, m: Machine) -> Machine | None:
    """After the row followed its group to a new member: that member booted from the
    armed user data, so its key is the only pin of the row's SSH name and the row's
    expected fingerprint; the key's private half becomes the one the next connect
    replaces (``host_key_rotation.rotate_if_due``)."""
    import paramiko

    from gpudesk.services.cloud import credentials
    from gpudesk.services.remote.host_key_rotation import STEP_MEMBER_KEY
    from gpudesk.services.remote.host_key_rotation import host_key_entry
    from gpudesk.services.remote.host_keys import PinStore
    from gpudesk.services.remote.ssh_config import host_alias

    found = armed_key(ledger, m)
    if found is None:
        return None
    fp, line = found
    kind, blob = line.split()[:2]
    key = paramiko.PKey.from_type_string(kind, base64.b64decode(blob))
    store, alias = PinStore(), host_alias(m)
    store.forget(alias)  # the reclaimed member's key no longer proves anything
    store.pin(alias, key)
    try:
        pem = credentials.load_private_key(template_key_entry(m.id))
        if pem:
            credentials.save_private_key(host_key_entry(m.id), pem)
    except Exception as exc:  # noqa: BLE001 - the pin stands; its replacement waits
        log.warning("group host key of %s not read: %s", m.id, type(exc).__name__)
    return ledger.update(m.id, host_key_fingerprint=fp, step=STEP_MEMBER_KEY,
                         detail=f"{m.cloud_id} {fp}")


def _forget_template_key(ledger: Ledger, m: Machine, _provider: object) -> None:
    from gpudesk.services.cloud import credentials

    if armed_key(ledger, m) is not None:
        credentials.delete_private_key(template_key_entry(m.id))


def install() -> None:
    """Delete a group's role (and its user data's key) when its group ends, and expect the
    armed key from a replacement (once per process)."""
    for hook in (_delete_role, _forget_template_key):
        if hook not in keep_alive_launch.ENDED_HOOKS:
            keep_alive_launch.ENDED_HOOKS.append(hook)
    if expect_member_key not in keep_alive_launch.REPLACED_HOOKS:
        keep_alive_launch.REPLACED_HOOKS.append(expect_member_key)


install()  # importing this module is what gives the launch its role
