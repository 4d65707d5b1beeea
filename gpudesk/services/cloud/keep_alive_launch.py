"""Launching, following and ending a machine that its cloud keeps alive (issue 23).

The launcher's ledger row stands for the group: ``Machine.group_id`` names the cloud's
group and ``cloud_id`` its current member. Before anything is created the launch needs
spot, a budget and a price, because the group's own scheduled action (size 0 at
budget ÷ price) is what caps the bill with the desktop and every agent gone; that end is
read back from the cloud and recorded as the row's cloud timer. A group whose end the
cloud did not keep is ended at once: a group without its end could bill forever.

A member of the group is never stopped or terminated on its own (the group would start
another): ``end`` sets the group to 0 and deletes it, then the member is gone.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from typing import TYPE_CHECKING
from typing import Protocol

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.cloud import guard as guards
from gpudesk.services.cloud.catalog import provider_title
from gpudesk.services.cloud.keep_alive import SCHEDULE_MIN_AHEAD_S
from gpudesk.services.cloud.keep_alive import GroupState
from gpudesk.services.cloud.keep_alive import KeepAliveGroups
from gpudesk.services.cloud.keep_alive import end_time
from gpudesk.services.cloud.keep_alive import group_name
from gpudesk.services.cloud.providers.base import STATE_TERMINATED
from gpudesk.services.cloud.providers.base import CloudInstance
from gpudesk.services.cloud.providers.base import LaunchRequest
from gpudesk.services.cloud.providers.base import ProviderError
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine
from gpudesk.services.money.spend import machine_spend

if TYPE_CHECKING:
    from collections.abc import Callable

# Called after a group ended (ledger, the row, the provider): the room that made the
# group's role (services.runs.keep_alive_run) removes it. The cloud room cannot import it.
ENDED_HOOKS: list[Callable[[Ledger, Machine, object], None]] = []
# Called after the row followed its group to a new member (ledger, the row now): the room
# that set the group's user data (services.runs.keep_alive_run) makes the host key that
# data carries the one the new member is expected to offer.
REPLACED_HOOKS: list[Callable[[Ledger, Machine], Machine | None]] = []

log = logging.getLogger(__name__)

CONTEXT = "KeepAlive"
MSG_NEEDS_SPOT = QT_TRANSLATE_NOOP(
    "KeepAlive", "Recover by itself is for spot machines: an on-demand machine is not "
    "reclaimed.")
MSG_NEEDS_BUDGET = QT_TRANSLATE_NOOP(
    "KeepAlive", "Recover by itself needs a budget: the group's own end (size 0 when the "
    "budget runs out) is what stops a group that replaces its machines from billing forever.")
MSG_NO_GROUPS = QT_TRANSLATE_NOOP(
    "KeepAlive", "{cloud} machines cannot recover by themselves in gpudesk yet.")
MSG_SPENT = QT_TRANSLATE_NOOP(
    "KeepAlive", "The budget of {budget} lasts less than a minute at {price}/h: nothing was "
    "launched.")
MSG_END_NOT_KEPT = QT_TRANSLATE_NOOP(
    "KeepAlive", "{cloud} did not keep the group's end time, so the group {group} was deleted "
    "again before it could bill without a cap.")
MSG_NO_MEMBER = QT_TRANSLATE_NOOP(
    "KeepAlive", "The group {group} started no machine within {minutes} minutes (the cloud's "
    "last word: {reason}); it was deleted, so it bills nothing.")
MSG_NO_STOP = QT_TRANSLATE_NOOP(
    "KeepAlive", "{name} is kept alive by its group {group}: stopping it would only make the "
    "cloud start another. Terminate it to end the group.")

MSG_GROUP_GUARD = guards.MSG_GROUP_GUARD  # one wording on every screen ("Guard" context)

STEP_GROUP = "group"  # ledger: the group the cloud holds (detail: id and its end)
STEP_REPLACED = "replaced"  # ledger: the group started another member (detail: old -> new)
STEP_RECLAIMED = "reclaimed"  # ledger: the current member ended while the group lives
STEP_GROUP_ENDED = "group-ended"
STEP_AT_ZERO = "group-at-zero"  # ledger: found at size 0 with no machine: deleted
STEP_NO_CAPACITY = "no-capacity"  # ledger: no member for the wait after a reclaim: ended
STEP_BUDGET_SPENT = "group-budget-spent"  # ledger: a new budget already spent: ended now
WAIT_S_DEFAULT = 3600.0  # Preferences keep_alive_wait_min


class KeepAliveHooks(Protocol):
    """What the rooms above give a keep-alive launch: the group members' role (made before
    the group, whose template names it) and its narrowing once the group's id is known."""

    def role_for(self, machine: Machine, provider: object) -> str: ...

    def made(self, machine: Machine, provider: object) -> None: ...

    def launch_key(self, machine: Machine) -> None: ...


def _ended(ledger: Ledger, m: Machine, groups: object) -> None:
    for hook in ENDED_HOOKS:
        try:
            hook(ledger, m, groups)
        except Exception as exc:  # noqa: BLE001 - the group is gone; a leftover is logged
            log.warning("after the end of group %s: %s", m.group_id, type(exc).__name__)
            ledger.log(m.id, "group-leftover", f"{type(exc).__name__}: {exc}"[:300])


def groups_of(provider: object, cloud: str) -> KeepAliveGroups:
    if not isinstance(provider, KeepAliveGroups):
        raise ProviderError("invalid", MSG_NO_GROUPS, cloud=provider_title(cloud))
    return provider


def check(cloud: str, market: str, budget: float | None, provider: object) -> KeepAliveGroups:
    """Refuse a keep-alive launch the group could not cap, before anything is written."""
    if market != "spot":
        raise ProviderError("invalid", MSG_NEEDS_SPOT)
    if not budget or budget <= 0:
        raise ProviderError("invalid", MSG_NEEDS_BUDGET)
    return groups_of(provider, cloud)


def with_end(request: LaunchRequest, now: float, disk_per_hour: float = 0.0) -> LaunchRequest:
    """The request with the group's end: budget ÷ price from now, in the cloud's currency.
    A member's system disk bills while it runs (``disk_per_hour``, the same currency), so
    it counts toward the rate as it does for one machine's cloud timer (guard.plan)."""
    price = request.price_per_hour
    at = end_time(request.budget or 0.0, 0.0, price + disk_per_hour if price > 0 else 0.0, now)
    if at is None:
        raise ProviderError("invalid", MSG_NEEDS_BUDGET)
    if at < now + SCHEDULE_MIN_AHEAD_S:
        raise ProviderError("invalid", MSG_SPENT, budget=f"{request.budget:.2f}",
                            price=f"{request.price_per_hour:.4f}")
    return replace(request, cloud_timer_at=at)


def start(ledger: Ledger, m: Machine, groups: KeepAliveGroups, request: LaunchRequest, *,
          role_name: str = "") -> tuple[Machine, GroupState]:
    """Blocking: create the group (the ledger says so first) and record what the cloud
    holds: its id and its end as read back. No end kept: the group is ended again."""
    ledger.log(m.id, "group-request", f"{group_name(m.id)} end "
               f"{guards.iso_utc(request.cloud_timer_at) or 'none'}")
    state = groups.create_group(request, role_name=role_name)  # type: ignore[call-arg]
    m = ledger.update(m.id, group_id=state.group_id, group_state="live",
                      cloud_timer_at=state.end_at,
                      enforced_by=guards.with_timer(m.enforced_by, state.end_at),
                      step=STEP_GROUP,
                      detail=f"{state.group_id} end {guards.iso_utc(state.end_at) or 'none'}")
    if state.end_at is None:
        groups.end_group(request.region, state.group_id)
        m = ledger.update(m.id, state=STATE_TERMINATED, group_state="ended",
                          step=STEP_GROUP_ENDED, detail="no end time kept")
        _ended(ledger, m, groups)
        raise ProviderError("other", MSG_END_NOT_KEPT, cloud=provider_title(m.provider),
                            group=state.group_id)
    return m, state


def current_member(state: GroupState) -> str:
    """The member that is (or is becoming) the machine: the newest one not on its way out."""
    live = [x for x in state.members if not _leaving(x.state)]
    live.sort(key=lambda x: x.launched_at or 0.0)
    return live[-1].cloud_id if live else ""


def _leaving(word: str) -> bool:
    w = word.lower().replace("_", "").replace("-", "").replace(" ", "")
    return any(k in w for k in ("terminat", "detach", "removing", "leaving", "standby"))


def follow(ledger: Ledger, m: Machine, state: GroupState | None,
           found: list[CloudInstance], *, groups: KeepAliveGroups | None = None,
           now: float | None = None, wait_s: float = WAIT_S_DEFAULT) -> Machine:
    """Blocking bookkeeping of one group row from what the cloud says now: the group gone
    (ended), its member replaced (``reclaimed`` then ``replaced``), or waiting for one.
    ``found``: the cloud's view of the row's current member and of the new one. A group
    that started no machine for ``wait_s`` after a reclaim is ended (with ``groups``):
    capacity may not come back, and a group waiting for it is a promise nobody keeps."""
    if state is None:
        if m.group_live:
            m = ledger.update(m.id, state=STATE_TERMINATED, group_state="ended",
                              step=STEP_GROUP_ENDED,
                              detail=f"{m.group_id}: the cloud no longer has the group")
            _ended(ledger, m, groups)
        return m
    member = current_member(state)
    by_id = {i.cloud_id: i for i in found}
    if member and member != m.cloud_id:
        old = by_id.get(m.cloud_id)
        if m.cloud_id:
            when = old.state_since if old is not None else None
            m = ledger.update(m.id, state=STATE_TERMINATED, changed_at=when,
                              step=STEP_RECLAIMED, detail=m.cloud_id)
        new = by_id.get(member)
        m = ledger.update(m.id, cloud_id=member, state=new.state if new else "pending",
                          public_ip=new.public_ip if new else "",
                          zone=(new.zone if new else "") or m.zone,
                          changed_at=new.launched_at if new else None,
                          step=STEP_REPLACED, detail=f"{m.cloud_id or '-'} -> {member}")
        for hook in REPLACED_HOOKS:
            try:
                m = hook(ledger, m) or m
            except Exception as exc:  # noqa: BLE001 - the row follows; the pin stays as it was
                log.warning("after the replacement in group %s: %s", m.group_id,
                            type(exc).__name__)
                ledger.log(m.id, "replaced-hook-failed", f"{type(exc).__name__}: {exc}"[:300])
    elif member:
        cur = by_id.get(member)
        if cur is not None and (cur.state != m.state or cur.public_ip != m.public_ip):
            m = ledger.update(m.id, state=cur.state, public_ip=cur.public_ip or m.public_ip,
                              changed_at=cur.state_since, step="reconcile",
                              detail=f"{member} {cur.state}")
    elif m.cloud_id and m.state != STATE_TERMINATED:
        old = by_id.get(m.cloud_id)
        m = ledger.update(m.id, state=STATE_TERMINATED,
                          changed_at=old.state_since if old is not None else None,
                          step=STEP_RECLAIMED, detail=f"{m.cloud_id}; the group starts another")
    if not member and groups is not None and m.group_live and state.desired == 0:
        # its agent or its own scheduled end set it to 0 (Tencent AS keeps a group that still
        # had a member then): nothing more will start, so it is deleted now
        ledger.log(m.id, STEP_AT_ZERO, f"{m.group_id} desired 0, no machine")
        return end(ledger, m, groups)
    if not member and groups is not None and m.group_live:
        since = last_reclaim(ledger, m)
        t = now if now is not None else time.time()
        if since is not None and t - since >= wait_s:
            ledger.log(m.id, STEP_NO_CAPACITY, f"no machine for {round((t - since) / 60)} min "
                       "after the reclaim")
            return end(ledger, m, groups)
    if state.end_at != m.cloud_timer_at:
        m = ledger.update(m.id, cloud_timer_at=state.end_at, step="guard-read",
                          detail=guards.iso_utc(state.end_at) or "none")
    return m


def last_reclaim(ledger: Ledger, m: Machine) -> float | None:
    """When the row's latest member was last seen reclaimed with no replacement yet."""
    at: float | None = None
    for e in ledger.events(m.id):
        if e.step == STEP_RECLAIMED:
            at = e.at
        elif e.step == STEP_REPLACED:
            at = None
    return at


def end(ledger: Ledger, m: Machine, groups: KeepAliveGroups) -> Machine:
    """Blocking: size 0 and delete the group, then record the row ended (what the cloud
    still lists is followed by the next reconcile)."""
    ledger.log(m.id, "group-end-requested", m.group_id)
    groups.end_group(m.region, m.group_id)
    left = groups.describe_group(m.region, m.group_id)
    if left is not None and (left.desired > 0 or current_member(left)):
        return ledger.update(m.id, step="group-ending",
                             detail=f"{m.group_id}: desired {left.desired}, "
                                    f"{len(left.members)} member(s) left")
    m = ledger.update(m.id, state=STATE_TERMINATED, group_state="ended",
                      step=STEP_GROUP_ENDED, detail=f"{m.group_id} deleted")
    _ended(ledger, m, groups)
    return m


def move_end(ledger: Ledger, m: Machine, groups: KeepAliveGroups, budget: float,
             now: float) -> Machine:
    """Blocking: a group row's budget changed, so its scheduled end (size 0) moves to when
    the budget left runs out: (budget - spent) ÷ (price + disk) from ``now``, in the cloud's
    currency from the launch's quote, as the launch set it (``with_end``). Lowered or
    raised, the cloud's cap is the new budget's. The end is read back from the group and the
    ledger records only what the cloud holds; a budget already spent ends the group now
    (no cloud takes a past time, and an end left later would bill past the budget)."""
    spent = machine_spend(ledger, m, now).total
    currency = m.currency or "USD"
    quote = guards.launch_quote(ledger, m)
    if quote is not None and quote.price > 0:
        disk = guards.disk_per_hour(m.provider, m.region, m.disk_gb, quote.currency,
                                    quote.cny_per_usd)
        at = end_time(quote.convert(budget, currency), quote.convert(spent, currency),
                      quote.price + disk, now)
    else:
        disk = guards.disk_per_hour(m.provider, m.region, m.disk_gb, currency)
        at = end_time(budget, spent, m.price_per_hour + disk if m.price_per_hour > 0 else 0.0,
                      now)
    if at is None:
        raise ProviderError("invalid", MSG_NEEDS_BUDGET)
    if at < now + SCHEDULE_MIN_AHEAD_S:
        ledger.log(m.id, STEP_BUDGET_SPENT, f"{budget:.2f} {currency}, {spent:.2f} spent")
        return end(ledger, m, groups)
    ledger.log(m.id, "group-end-move", f"{m.group_id} end {guards.iso_utc(at)}")
    groups.schedule_end(m.region, m.group_id, at)
    state = groups.describe_group(m.region, m.group_id)
    if state is None:
        return follow(ledger, m, None, [], groups=groups, now=now)
    return ledger.update(m.id, cloud_timer_at=state.end_at,
                         enforced_by=guards.with_timer(m.enforced_by, state.end_at),
                         step=STEP_GROUP,
                         detail=f"{state.group_id} end {guards.iso_utc(state.end_at) or 'none'}")


def wait_deadline(timeout_s: float) -> float:
    return time.monotonic() + timeout_s


def members(ledger: Ledger, m: Machine) -> list[dict[str, object]]:
    """The machines a group row had, one after another, from its ledger events:
    ``[{cloud_id, from, to, why}]`` (unix s; ``to`` None while it runs). ``why`` says how
    each one ended: "reclaimed", "ended" (the group was deleted) or "" while running."""
    out: list[dict[str, object]] = []

    def close(at: float, why: str) -> None:
        if out and out[-1]["to"] is None:
            out[-1]["to"], out[-1]["why"] = at, why

    for e in ledger.events(m.id):
        if e.step == "instance" and e.detail:
            out.append({"cloud_id": e.detail.split()[0], "from": e.at, "to": None, "why": ""})
        elif e.step == STEP_RECLAIMED:
            close(e.at, "reclaimed")
        elif e.step == STEP_REPLACED and "-> " in e.detail:
            close(e.at, "reclaimed")
            out.append({"cloud_id": e.detail.split("-> ", 1)[1].strip(), "from": e.at,
                        "to": None, "why": ""})
        elif e.step == STEP_GROUP_ENDED:
            close(e.at, "ended")
    return out
