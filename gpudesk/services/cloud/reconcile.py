"""Make the ledger agree with what the providers really have.

Run at start-up and periodically. Three repairs:
- a tagged instance the ledger does not know (a crash between the cloud call
  and the ledger write, or a launch from another computer) is adopted;
- a ledger row the provider no longer has is marked gone;
- an intent with no instance after a grace period is closed as failed.
Anything still billing is returned so the window and the tray can show it,
including a stopped machine its cloud still charges for (CVM KEEP_CHARGING, ECS
KeepCharging: ``Machine.billing``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.cloud import forget
from gpudesk.services.cloud import guard
from gpudesk.services.cloud import keep_alive_launch
from gpudesk.services.cloud.accounts import ProviderFactory
from gpudesk.services.cloud.accounts import provider_from_keyring
from gpudesk.services.cloud.accounts import title
from gpudesk.services.cloud.catalog import load_catalog
from gpudesk.services.cloud.cleanup import CleanupReport
from gpudesk.services.cloud.cleanup import run as cleanup_run
from gpudesk.services.cloud.credentials import CLOUD_PROVIDERS
from gpudesk.services.cloud.credentials import CredentialError
from gpudesk.services.cloud.credentials import load_credentials
from gpudesk.services.cloud.machines import TIMER_CLOUDS
from gpudesk.services.cloud.machines import timer_follows
from gpudesk.services.cloud.providers.base import STATE_PENDING
from gpudesk.services.cloud.providers.base import STATE_RUNNING
from gpudesk.services.cloud.providers.base import STATE_STOPPED
from gpudesk.services.cloud.providers.base import STATE_STOPPING
from gpudesk.services.cloud.providers.base import TAG_LEDGER
from gpudesk.services.cloud.providers.base import CloudInstance
from gpudesk.services.cloud.providers.base import Provider
from gpudesk.services.cloud.providers.base import ProviderError
from gpudesk.services.cloud.providers.base import ProviderName
from gpudesk.services.cloud.providers.base import login_user_of
from gpudesk.services.core.machine_states import bills_compute
from gpudesk.services.money.ledger import INTENT_GRACE_S
from gpudesk.services.money.ledger import STATE_FAILED
from gpudesk.services.money.ledger import STATE_GONE
from gpudesk.services.money.ledger import STATE_INTENT
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine
from gpudesk.services.money.ledger import new_ledger_id

log = logging.getLogger(__name__)

NO_PRICE_STEP = "no-price"  # the ledger event: the cloud gave an adopted machine no price
# said in red wherever such a machine's price would be (Instances, ``gpudesk show``)
MSG_NO_PRICE = QT_TRANSLATE_NOOP("Guard", "no price: no budget can be counted")
MSG_NO_PRICE_WHY = QT_TRANSLATE_NOOP(
    "Guard", "gpudesk found this machine in the cloud and has no price for it: the catalog "
    "has none and the cloud gave none when asked ({why}). Its spend counts as 0, so no "
    "budget of it can ever cross: terminate it, or watch its bill in the cloud's console.")
MSG_KEYRING_LOCKED = QT_TRANSLATE_NOOP(
    "ProviderError", "{account}: not checked, the keyring did not give its keys ({why}). "
    "Machines there may be billing unseen; unlock the keyring and check again.")
MSG_KEYS_MISSING = QT_TRANSLATE_NOOP(
    "ProviderError", "{account}: not checked, its keys are no longer in the keyring. Machines "
    "there may be billing unseen; add the keys again on the Accounts page.")
MSG_NO_ANSWER = QT_TRANSLATE_NOOP(
    "ProviderError", "{account}: not checked, the cloud did not answer ({why}). Machines there "
    "may be billing unseen; gpudesk checks again in a few minutes.")


@dataclass
class ReconcileReport:
    adopted: list[str] = field(default_factory=list)  # ledger ids
    updated: list[str] = field(default_factory=list)
    gone: list[str] = field(default_factory=list)
    closed_intents: list[str] = field(default_factory=list)
    billing: list[Machine] = field(default_factory=list)
    errors: dict[str, ProviderError] = field(default_factory=dict)  # provider → why unchecked
    cleanup: CleanupReport | None = None  # leftovers of ended machines removed (or waiting)
    accounts: dict[str, str] = field(default_factory=dict)  # provider → the account, in words
    # adopted ledger id → why its login user is not known (its ssh_user is left empty)
    login_unknown: dict[str, str] = field(default_factory=dict)
    # keep-alive rows (issue 23): a member reclaimed, a replacement started, or a group ended
    # because no spot capacity came back within Preferences' wait (ledger ids)
    reclaimed: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    gave_up: list[str] = field(default_factory=list)
    # rows whose cloud timer followed a stop or start made outside gpudesk (ledger ids)
    timers: list[str] = field(default_factory=list)
    # adopted ledger ids the cloud gave no price for (id -> why): no budget can be counted
    no_price: dict[str, str] = field(default_factory=dict)
    # adopted ledger ids that were removed from the list before (forget.forget): back with
    # the budget and guard they had, since they still exist in their cloud
    restored: list[str] = field(default_factory=list)

    def account(self, name: str) -> str:
        """The account a warning is about: "AWS account 1234… (key AKIA…1234)"."""
        return self.accounts.get(name) or title(name)


def account_label(ledger: Ledger, name: str) -> str:
    a = ledger.account(name)
    if a is None:
        return title(name)
    if a.account:
        return f"{title(name)} account {a.account} ({a.key_id_masked})"
    return f"{title(name)} ({a.key_id_masked})"


def providers_to_check(ledger: Ledger, report: ReconcileReport) -> list[ProviderName]:
    """The providers whose keys load; a locked keyring or keys gone from it, for an account
    the ledger knows (or a machine that may bill), is a warning naming that account."""
    out: list[ProviderName] = []
    for name in CLOUD_PROVIDERS:
        known = ledger.account(name) is not None or any(
            m.provider == name and m.billing for m in ledger.machines(include_ended=False))
        report.accounts[name] = account_label(ledger, name)
        try:
            if load_credentials(name) is not None:
                out.append(name)
            elif known:
                report.errors[name] = ProviderError("auth", MSG_KEYS_MISSING,
                                                    account=report.account(name))
        except CredentialError as exc:
            if known:
                report.errors[name] = ProviderError("auth", MSG_KEYRING_LOCKED,
                                                    account=report.account(name),
                                                    why=exc.message())
    return out


def regions_to_scan(ledger: Ledger, provider: ProviderName, extra: list[str]) -> list[str]:
    """Every region the ledger used for this provider plus the catalog's (where we launch)."""
    regions = {m.region for m in ledger.machines() if m.provider == provider and m.region}
    regions.update(load_catalog().regions(provider))
    regions.update(extra)
    return sorted(regions)


def reconcile_provider(ledger: Ledger, name: ProviderName, provider: Provider,
                       regions: list[str], report: ReconcileReport,
                       now: float | None = None) -> None:
    """Blocking: compare one provider's tagged instances with the ledger."""
    now = now if now is not None else time.time()
    seen: set[str] = set()
    for region in regions:
        for inst in provider.list_managed(region):
            seen.add(inst.cloud_id)
            _merge(ledger, name, inst, report, provider)
    _follow_groups(ledger, name, provider, regions, report, now)
    for m in ledger.machines(include_ended=False):
        if m.provider != name or m.group_id:  # a group's row follows its group (above)
            continue
        if m.cloud_id and m.cloud_id not in seen and m.region in regions:
            found = provider.describe(m.region, [m.cloud_id])
            if found:
                _merge(ledger, name, found[0], report, provider)
            elif m.state in ("pending", STATE_INTENT) and \
                    now - (m.launched_at or m.created_at) < INTENT_GRACE_S:
                continue  # a just-launched machine may be unknown to describe for a while
            else:
                ledger.update(m.id, state=STATE_GONE, step="reconcile",
                              detail="the provider no longer has it")
                report.gone.append(m.id)
        elif not m.cloud_id and m.state == STATE_INTENT and now - m.created_at > INTENT_GRACE_S:
            ledger.update(m.id, state=STATE_FAILED, error="no machine was created",
                          step="reconcile", detail="intent without an instance")
            report.closed_intents.append(m.id)


def adopted_login_user(provider: object, inst: CloudInstance) -> tuple[str, str]:
    """(user, "") for a machine found in the cloud, read from the image the cloud says it
    was made from, as the launcher reads it (``login_user_of``); ("", why) when that
    cannot be known. Never a guess: "ubuntu" is wrong on Alibaba Cloud and most Tencent
    images, and a wrong user is a login that fails and a guard installed for nobody."""
    if not inst.image_id:
        return "", f"{title(inst.provider)} did not say which image {inst.cloud_id} runs"
    try:
        user = login_user_of(provider, inst.region, inst.image_id)
    except ProviderError as error:
        return "", f"the image {inst.image_id} could not be read: {error.message()}"
    if not user:
        return "", f"{title(inst.provider)} does not say who logs in on {inst.image_id}"
    return user, ""


def _follow_groups(ledger: Ledger, name: ProviderName, provider: Provider,
                   regions: list[str], report: ReconcileReport, now: float) -> None:
    """Keep-alive rows: what their group holds now (a reclaimed member, its replacement,
    the group gone), from the group and its members as the cloud describes them."""
    for m in ledger.machines(include_ended=True):
        if m.provider != name or not m.group_live or m.region not in regions:
            continue
        groups = keep_alive_launch.groups_of(provider, name)
        state = groups.describe_group(m.region, m.group_id)
        ids = sorted({m.cloud_id, *(x.cloud_id for x in (state.members if state else []))}
                     - {""})
        found = provider.describe(m.region, ids) if ids else []
        before = (m.cloud_id, m.state, m.group_state, m.cloud_timer_at)
        seen = len(ledger.events(m.id))
        after = keep_alive_launch.follow(ledger, m, state, found, groups=groups, now=now,
                                         wait_s=_wait_s())
        if (after.cloud_id, after.state, after.group_state, after.cloud_timer_at) != before:
            report.updated.append(m.id)
        steps = {e.step for e in ledger.events(m.id)[seen:]}
        for step, into in ((keep_alive_launch.STEP_RECLAIMED, report.reclaimed),
                           (keep_alive_launch.STEP_REPLACED, report.replaced),
                           (keep_alive_launch.STEP_NO_CAPACITY, report.gave_up)):
            if step in steps:
                into.append(m.id)


def _wait_s() -> float:
    from gpudesk.services.core.settings import load_settings

    return float(load_settings().keep_alive_wait_min) * 60.0


def _merge(ledger: Ledger, name: ProviderName, inst: CloudInstance,
           report: ReconcileReport, provider: object = None) -> None:
    row = ledger.get(inst.ledger_id) if inst.ledger_id else None
    if row is not None and row.provider == name and row.group_id:
        return  # a member of a keep-alive group: its row follows the group
    known = ledger.by_cloud_id(name, inst.cloud_id)
    if known is None and inst.ledger_id:
        row = ledger.get(inst.ledger_id)
        # The intent whose answer was lost: fill it in (unless it already names another one).
        if row is not None and row.provider == name and not row.cloud_id:
            known = row
    if known is None:
        ledger_id = inst.ledger_id if inst.ledger_id and ledger.get(inst.ledger_id) is None \
            else new_ledger_id()
        # a row removed from the list (forget.forget) comes back with its guard
        kept = forget.kept_row(ledger, ledger_id) if ledger_id == inst.ledger_id else None
        if kept is not None and kept.provider != name:
            kept = None
        gpu, gpus = gpus_for(name, inst.instance_type)
        user, unknown = (kept.ssh_user, "") if kept is not None and kept.ssh_user \
            else adopted_login_user(provider, inst)
        machine = Machine(
            id=ledger_id, provider=name, region=inst.region, zone=inst.zone,
            instance_type=inst.instance_type, gpu=gpu, gpus=gpus, market=inst.market,
            cloud_id=inst.cloud_id,
            state=inst.state, public_ip=inst.public_ip, name=ledger_id, origin="adopted",
            price_per_hour=_catalog_price(name, inst), launched_at=inst.launched_at,
            # running, or stopped but still charged: billed since the launch (as far as
            # gpudesk can know)
            running_since=(inst.state_since or inst.launched_at)
            if bills_compute(name, inst.state, inst.stopped_mode) else None,
            stopped_mode=inst.stopped_mode, ssh_user=user)
        detail = f"found {inst.cloud_id} tagged {TAG_LEDGER}={inst.ledger_id}"
        if kept is not None:
            machine = forget.restored(kept, inst, machine)
            detail += "; removed from the list before: its budget and guard are kept"
        quote, no_price = None, ""
        if machine.price_per_hour <= 0:  # none bundled: the cloud's own quote, as a launch
            quote, no_price = _cloud_price(provider, name, inst)
            if quote is not None:
                machine = replace(machine, price_per_hour=quote.usd, currency="USD")
        ledger.add(machine, step="adopted", detail=detail)
        if quote is not None:
            guard.record_quote(ledger, ledger_id, quote)
        elif no_price:
            ledger.log(ledger_id, NO_PRICE_STEP, no_price)
            report.no_price[ledger_id] = no_price
        ledger.log(ledger_id, "login-user", user or f"unknown: {unknown}")
        if kept is not None:
            _timer_read_back(ledger, ledger_id, provider)
            report.restored.append(ledger_id)
        if unknown:
            report.login_unknown[ledger_id] = unknown
        report.adopted.append(ledger_id)
        return
    changes: dict[str, object] = {}
    if known.cloud_id != inst.cloud_id:
        changes["cloud_id"] = inst.cloud_id
    if known.state != inst.state:
        changes["state"] = inst.state
    if known.stopped_mode != inst.stopped_mode:
        # the cloud's word on a stopped machine's bill (KEEP_CHARGING bills on, in full)
        changes["stopped_mode"] = inst.stopped_mode
    if inst.public_ip and inst.public_ip != known.public_ip:
        changes["public_ip"] = inst.public_ip
    if inst.zone and inst.zone != known.zone:
        changes["zone"] = inst.zone
    if changes:
        # a state change is dated by the cloud (EC2's StateTransitionReason / LaunchTime,
        # ECS's StartTime, CVM's CreatedTime for a machine running since its creation): a
        # machine reclaimed while gpudesk was closed stopped billing then, not now
        when = _after_last_stretch(ledger, known.id,
                                   inst.state_since if "state" in changes else None)
        updated = ledger.update(known.id, step="reconcile", changed_at=when,
                                detail=", ".join(f"{k}={v}" for k, v in changes.items()),
                                **changes)
        report.updated.append(known.id)
        if "state" in changes and name in TIMER_CLOUDS:
            _console_timer(ledger, known, updated, provider, report)


_STOPPED = (STATE_STOPPING, STATE_STOPPED)
_RUNNING = (STATE_PENDING, STATE_RUNNING)


def _console_timer(ledger: Ledger, before: Machine, after: Machine, provider: object,
                   report: ReconcileReport) -> None:
    """A stop or start made outside gpudesk (the cloud's console, its CLI): the cloud timer
    follows it as it follows gpudesk's own (``machines.timer_follows``): a stop that ends the
    compute bill removes the CVM ActionTimer / ECS AutoReleaseTime (the machine spends no
    budget while stopped, and the timer would delete it and its disk for money it never
    spent); a start sets it again from the budget left. Read back either way."""
    if before.state in _RUNNING and after.state in _STOPPED:
        action = "stop"
    elif before.state in _STOPPED and after.state in _RUNNING:
        action = "start"
    else:
        return
    ledger.log(after.id, f"console-{action}", f"{before.state} -> {after.state}, seen by "
               "reconcile")
    held = (after.cloud_timer_at, after.enforced_by)
    followed = timer_follows(ledger, after, action, provider)
    if (followed.cloud_timer_at, followed.enforced_by) != held:
        report.timers.append(after.id)


def _after_last_stretch(ledger: Ledger, ledger_id: str, when: float | None) -> float | None:
    """The cloud's moment, never inside a stretch already counted (ECS's StartTime is to the
    minute: a start seconds after a stop gpudesk saw would otherwise bill twice)."""
    if when is None:
        return None
    ends = [i.end for i in ledger.intervals(ledger_id) if i.end is not None]
    return max(when, max(ends)) if ends else when


def _cloud_price(provider: object, name: ProviderName, inst: CloudInstance
                 ) -> tuple[guard.Quote | None, str]:
    """The price of an adopted machine the catalog has none for, asked of its cloud as a
    launch asks it (``launcher.cloud_quote``: CVM's InquiryPriceRunInstances, ECS's
    DescribePrice or spot history, EC2's spot history, the AWS price list as already here:
    a reconcile in the background fetches no region's whole file); (None, why) when it
    gives none."""
    from gpudesk.services.cloud.launcher import LaunchPlan  # noqa: PLC0415
    from gpudesk.services.cloud.launcher import cloud_quote  # noqa: PLC0415
    from gpudesk.services.core.settings import load_settings  # noqa: PLC0415

    if provider is None or not inst.instance_type:
        return None, "no cloud to ask"
    rate = load_settings().cny_per_usd
    plan = LaunchPlan(provider=name, instance_type=inst.instance_type, region=inst.region,
                      zone=inst.zone, market="spot" if inst.market == "spot" else "on-demand",
                      image_id=inst.image_id, cny_per_usd=rate if rate > 0 else 7.2)
    try:
        return cloud_quote(provider, plan, inst.region, inst.zone,  # type: ignore[arg-type]
                           download=False), ""
    except ProviderError as error:
        why = error.detail or error.message()
    except Exception as error:  # noqa: BLE001 - a quote is a refinement; said, never fatal
        why = type(error).__name__
    return None, f"{title(name)}, {inst.instance_type} in {inst.zone or inst.region}: {why}"


def no_price_why(ledger: Ledger, m: Machine) -> str | None:
    """Why a cloud machine has no price (the cloud's words when gpudesk asked), "" when
    nobody said; None when it has a price or bills nothing any more."""
    if m.provider == "own" or m.price_per_hour > 0 or m.ended:
        return None
    for event in reversed(ledger.events(m.id)):
        if event.step == NO_PRICE_STEP:
            return event.detail
    return ""


def _timer_read_back(ledger: Ledger, ledger_id: str, provider: object) -> None:
    """The ledger's cloud timer of a row found again: only what the cloud holds now."""
    m = ledger.get(ledger_id)
    if m is None or m.provider not in TIMER_CLOUDS:
        return
    answered, held = guard.read_timer(provider, m.region, m.cloud_id)
    if answered:
        ledger.update(m.id, cloud_timer_at=held, enforced_by=guard.with_timer(m.enforced_by,
                                                                             held),
                      step="timer", detail=guard.iso_utc(held) or "none")


def _catalog_price(name: str, inst: CloudInstance) -> float:
    for offer in load_catalog().filter(provider=name, region=inst.region):
        if offer.instance_type == inst.instance_type:
            price = offer.price(inst.market == "spot")
            price = price if price is not None else offer.ondemand_price
            return price if price is not None else 0.0  # 0.0: no price known (none bundled)
    return 0.0


def gpus_for(name: str, instance_type: str) -> tuple[str, int]:
    for offer in load_catalog().filter(provider=name):
        if offer.instance_type == instance_type:
            return offer.gpu.name, offer.gpu_count
    return "", 0


async def reconcile(ledger: Ledger, providers: ProviderFactory = provider_from_keyring,
                    names: list[ProviderName] | None = None,
                    extra_regions: list[str] | None = None) -> ReconcileReport:
    """Reconcile every provider with stored keys; one provider's failure doesn't stop others."""
    report = ReconcileReport()
    if names is None:
        names = await asyncio.to_thread(providers_to_check, ledger, report)
    for name in names:
        report.accounts.setdefault(name, account_label(ledger, name))
        try:
            provider = await asyncio.to_thread(providers, name)
            regions = regions_to_scan(ledger, name, extra_regions or [])
            await asyncio.to_thread(reconcile_provider, ledger, name, provider, regions, report)
        except ProviderError as error:
            log.warning("reconcile %s: %s (%s)", name, error, error.detail)
            report.errors[name] = error
        except CredentialError as exc:  # the keyring locked between the check and the call
            report.errors[name] = ProviderError("auth", MSG_KEYRING_LOCKED,
                                                account=report.account(name), why=exc.message())
        except Exception as exc:  # noqa: BLE001 - a cloud that does not answer is a warning
            log.warning("reconcile %s: %s", name, type(exc).__name__)
            report.errors[name] = ProviderError("network", MSG_NO_ANSWER,
                                                account=report.account(name),
                                                why=type(exc).__name__)
    # Groups and key pairs of machines the cloud now reports gone; retried until done.
    report.cleanup = await asyncio.to_thread(cleanup_run, ledger, providers,
                                             [n for n in names if n not in report.errors])
    report.billing = [m for m in ledger.machines(include_ended=False) if m.billing]
    return report
