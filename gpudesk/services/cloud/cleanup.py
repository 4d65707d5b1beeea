"""Nothing left behind: the key pairs and security groups of ended machines, retried.

A machine's security group (one per machine, tagged with its ledger id) and its
key pair can only be deleted once the cloud reports the machine gone: Tencent
keeps a machine ``TERMINATING`` for a while and answers ``ResourceInUse`` until
then. So cleanup is not a single call after terminate but a duty the ledger
remembers: every ended cloud machine whose cleanup is not recorded done, and
every region a launch attempt left a group in (``cleanup-pending`` events).
:func:`run` (called by reconcile) asks each such region's provider to delete
what no live machine uses, then checks what is left, and writes
``cleanup-done`` only when the machine's own group is really gone.

Blocking; call through ``asyncio.to_thread``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from gpudesk.services.cloud.providers.base import Provider, ProviderError, ProviderName
from gpudesk.services.money.ledger import STATE_INTENT, Ledger, Machine

log = logging.getLogger(__name__)

STEP_PENDING = "cleanup-pending"  # detail: the region a launch attempt left resources in
STEP_DONE = "cleanup-done"  # detail: the region cleaned
CLOUDS: tuple[ProviderName, ...] = ("aws", "tencent")


@dataclass
class CleanupReport:
    removed: list[str] = field(default_factory=list)  # ids/names the providers deleted
    done: list[str] = field(default_factory=list)  # "ledger id region" cleaned for good
    waiting: list[str] = field(default_factory=list)  # "ledger id region" to retry later
    errors: dict[str, ProviderError] = field(default_factory=dict)  # "provider region" → why


def mark_pending(ledger: Ledger, ledger_id: str, region: str) -> None:
    """A launch attempt in ``region`` may have left a group there: clean it later."""
    ledger.log(ledger_id, STEP_PENDING, region)


def pending(ledger: Ledger) -> dict[tuple[str, str], list[Machine]]:
    """(provider, region) → machines whose resources there still wait to be removed.

    An ended machine waits in its own region; any machine waits in a region an
    earlier launch attempt of it left (its own region only once it has ended).
    """
    out: dict[tuple[str, str], list[Machine]] = {}
    for m in ledger.machines():
        if m.provider not in CLOUDS:
            continue
        events = ledger.events(m.id)
        done = {e.detail for e in events if e.step == STEP_DONE}
        regions = {e.detail for e in events if e.step == STEP_PENDING and e.detail}
        if m.ended and m.region and (m.security_group or m.key_name or m.cloud_id):
            regions.add(m.region)
        for region in sorted(regions - done):
            if region == m.region and not m.ended:
                continue  # still in use by the machine itself
            out.setdefault((m.provider, region), []).append(m)
    return out


def run(ledger: Ledger, providers: Callable[[ProviderName], Provider],
        names: list[ProviderName] | None = None) -> CleanupReport:
    """Delete what ended machines left behind; record each machine's cleanup once done."""
    report = CleanupReport()
    work = pending(ledger)
    live = [m for m in ledger.machines(include_ended=False)]
    cache: dict[str, Provider] = {}
    for (name, region), machines in sorted(work.items()):
        if names is not None and name not in names:
            continue
        key = f"{name} {region}"
        if any(m.provider == name and m.region == region and m.state == STATE_INTENT
               for m in live):
            report.waiting += [f"{m.id} {region}" for m in machines]  # a launch in flight
            continue
        try:
            provider = cache.get(name) or providers(name)  # type: ignore[arg-type]
            cache[name] = provider
            report.removed += provider.cleanup(region)
            left = set(_leftovers(provider, region))
        except ProviderError as error:
            log.warning("cleanup %s: %s (%s)", key, error, error.detail)
            report.errors[key] = error
            report.waiting += [f"{m.id} {region}" for m in machines]
            continue
        except Exception as exc:  # noqa: BLE001 - a locked keyring, no answer: next time
            log.warning("cleanup %s: %s", key, type(exc).__name__)
            report.waiting += [f"{m.id} {region}" for m in machines]
            continue
        in_use = {m.security_group for m in live if m.provider == name and m.region == region}
        for m in machines:
            own = m.security_group if region == m.region else ""
            if own and own in left and own not in in_use:
                report.waiting.append(f"{m.id} {region}")
                continue
            ledger.log(m.id, STEP_DONE, region)
            report.done.append(f"{m.id} {region}")
    return report


def _leftovers(provider: Provider, region: str) -> list[str]:
    """What gpudesk-tagged resources remain (providers without the call: assume none)."""
    ask = getattr(provider, "leftovers", None)
    return list(ask(region)) if ask is not None else []
