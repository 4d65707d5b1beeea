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
from dataclasses import dataclass, field

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.cloud import keep_alive_launch
from gpudesk.services.cloud.accounts import ProviderFactory, provider_from_keyring, title
from gpudesk.services.cloud.catalog import load_catalog
from gpudesk.services.cloud.cleanup import CleanupReport
from gpudesk.services.cloud.cleanup import run as cleanup_run
from gpudesk.services.cloud.credentials import CLOUD_PROVIDERS, CredentialError, load_credentials
from gpudesk.services.cloud.providers.base import (
    TAG_LEDGER,
    CloudInstance,
    Provider,
    ProviderError,
    ProviderName,
    login_user_of,
)
from gpudesk.services.core.machine_states import bills_compute
from gpudesk.services.money.ledger import (
    INTENT_GRACE_S,
    STATE_FAILED,
    STATE_GONE,
    STATE_INTENT,
    Ledger,
    Machine,
    new_ledger_id,
)

log = logging.getLogger(__name__)

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

    def account(self, name: str) -> str:
        """The account a warning is about: "AWS account 1234… (key AKIA…1234)"."""
        return self.accounts.get(name) or title(name)


def configured_providers() -> list[ProviderName]:
    out: list[ProviderName] = []
    for name in CLOUD_PROVIDERS:
        try:
            if load_credentials(name) is not None:
                out.append(name)
        except CredentialError:
            pass
    return out


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
        gpu, gpus = gpus_for(name, inst.instance_type)
        user, unknown = adopted_login_user(provider, inst)
        ledger.add(Machine(
            id=ledger_id, provider=name, region=inst.region, zone=inst.zone,
            instance_type=inst.instance_type, gpu=gpu, gpus=gpus, market=inst.market,
            cloud_id=inst.cloud_id,
            state=inst.state, public_ip=inst.public_ip, name=ledger_id, origin="adopted",
            price_per_hour=_catalog_price(name, inst), launched_at=inst.launched_at,
            # running, or stopped but still charged: billed since the launch (as far as
            # gpudesk can know)
            running_since=inst.launched_at if bills_compute(name, inst.state,
                                                            inst.stopped_mode) else None,
            stopped_mode=inst.stopped_mode, ssh_user=user,
        ), step="adopted", detail=f"found {inst.cloud_id} tagged {TAG_LEDGER}={inst.ledger_id}")
        ledger.log(ledger_id, "login-user", user or f"unknown: {unknown}")
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
        # a state change is dated by the cloud (EC2's StateTransitionReason / LaunchTime):
        # a machine reclaimed while gpudesk was closed stopped billing then, not now
        when = inst.state_since if "state" in changes else None
        ledger.update(known.id, step="reconcile", changed_at=when,
                      detail=", ".join(f"{k}={v}" for k, v in changes.items()), **changes)
        report.updated.append(known.id)


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
