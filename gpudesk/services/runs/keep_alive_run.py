"""A run that recovers by itself (issue 23): the desktop's side, above the cloud room.

* At launch (:class:`Hooks`, given to the ``Launcher``): the group members' role,
  ``gpudesk-run-<ledger id>`` (``storage.run_role``), made before the group because its
  launch template names it, then narrowed to the group's id. It may end that group and,
  once a run starts, read and write that run's folder only. A refusal launches the group
  without a role and says what that costs: with gpudesk away a replacement cannot reach the
  bucket or end its group (the group's own scheduled end still caps the bill).
* When a run starts on such a machine (:func:`run_started`): the role's bucket part is set
  to the run, and what a fresh machine needs is written to the bucket (``run_package``).
* After the group ended (a hook the cloud room calls): the role is deleted.

Blocking (boto3, the cloud SDKs): call from worker threads.
"""

from __future__ import annotations

import logging

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.cloud import keep_alive_launch
from gpudesk.services.core.errors import TemplatedError
from gpudesk.services.money.ledger import Ledger, Machine
from gpudesk.services.storage.uri import StoreUri

log = logging.getLogger(__name__)

STEP_ROLE = "group-role"  # ledger: the members' role (detail: its name)
STEP_ROLE_REFUSED = "group-role-refused"  # detail: the cloud's words
STEP_ROLE_DELETED = "group-role-deleted"
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


def install() -> None:
    """Delete a group's role when its group ends (once per process)."""
    if _delete_role not in keep_alive_launch.ENDED_HOOKS:
        keep_alive_launch.ENDED_HOOKS.append(_delete_role)


install()  # importing this module is what gives the launch its role
