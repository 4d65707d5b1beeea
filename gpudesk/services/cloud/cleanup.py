"""Nothing left behind: the key pairs and security groups of ended machines, retried.

A machine's security group (one per machine, tagged with its ledger id) and its
key pair can only be deleted once the cloud reports the machine gone: Tencent
keeps a machine ``TERMINATING`` for a while and answers ``ResourceInUse`` until
then. So cleanup is not a single call after terminate but a duty the ledger
remembers: every ended cloud machine whose cleanup is not recorded done, and
every region a launch attempt left a group in (``cleanup-pending`` events).
:func:`run` (called by reconcile) asks each such region's provider to delete
what no live machine uses, then checks what is left, and writes
``cleanup-done`` only when the machine's own group *and* key pair are really
gone (or a live machine still uses them), and on Tencent/Aliyun its own self-stop
role too (``instance_role.delete_machine_role``). A resource the cloud refused to
delete (``ResourceInUse``, ``DependencyViolation``) is written down with the
cloud's words (``cleanup-refused``) and asked again by every reconcile (app
start, the Instances page, ``gpudesk ls``, ``gpudesk reconcile``) until the
cloud no longer lists it (``cleanup-gone``); :func:`status` reads that back
per resource for the window and ``gpudesk show --json``.

Blocking; call through ``asyncio.to_thread``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field

from gpudesk.services.cloud import instance_role
from gpudesk.services.cloud.providers.base import Provider
from gpudesk.services.cloud.providers.base import ProviderError
from gpudesk.services.cloud.providers.base import ProviderName
from gpudesk.services.money.ledger import STATE_INTENT
from gpudesk.services.money.ledger import Event
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine

log = logging.getLogger(__name__)

STEP_PENDING = "cleanup-pending"  # detail: the region a launch attempt left resources in
STEP_DONE = "cleanup-done"  # detail: the region cleaned
STEP_REFUSED = "cleanup-refused"  # detail: "<region> <resource> <the cloud's words>"
STEP_GONE = "cleanup-gone"  # detail: "<region> <resource>": the cloud no longer lists it
CLOUDS: tuple[ProviderName, ...] = ("aws", "tencent", "aliyun")


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
        refusals: dict[str, str] = dict(getattr(provider, "refusals", {}) or {})
        in_use = {r for m in live if m.provider == name and m.region == region
                  for r in (m.security_group, m.key_name) if r}
        for m in machines:
            # an ended machine's own self-stop role (Tencent/Aliyun) goes with it
            role_left = region == m.region and not instance_role.delete_machine_role(
                ledger, m, provider)
            if _settle(ledger, m, region, left, in_use, refusals) or role_left:
                report.waiting.append(f"{m.id} {region}")
                continue
            ledger.log(m.id, STEP_DONE, region)
            report.done.append(f"{m.id} {region}")
    return report


def _own(m: Machine, region: str) -> list[str]:
    """The machine's own group and key pair in ``region`` (none known elsewhere)."""
    if region != m.region:
        return []
    return [r for r in (m.security_group, m.key_name) if r]


def _answers(events: list[Event], region: str) -> tuple[set[str], dict[str, str]]:
    """What the ledger says the cloud answered: the ``"region resource"`` pairs deleted,
    and the last refusal in words per resource of ``region``."""
    gone = {e.detail for e in events if e.step == STEP_GONE}
    refused: dict[str, str] = {}
    for e in events:
        if e.step == STEP_REFUSED:
            where, _, rest = e.detail.partition(" ")
            resource, _, words = rest.partition(" ")
            if where == region:
                refused[resource] = words
    return gone, refused


def _settle(ledger: Ledger, m: Machine, region: str, left: set[str], in_use: set[str],
            refusals: dict[str, str]) -> bool:
    """Record what became of each of ``m``'s own resources; True while one still waits."""
    events = ledger.events(m.id)
    gone, last = _answers(events, region)
    waiting = False
    for resource in _own(m, region):
        if resource in in_use:
            continue  # a live machine still uses it: its own cleanup takes it later
        if resource in left:
            waiting = True
            words = refusals.get(resource) or "still listed by the cloud; asked again later"
            if last.get(resource) != words:  # one event per new answer, not per retry
                ledger.log(m.id, STEP_REFUSED, f"{region} {resource} {words}")
        elif f"{region} {resource}" not in gone:
            ledger.log(m.id, STEP_GONE, f"{region} {resource}")
    return waiting


@dataclass(frozen=True)
class ResourceCleanup:
    """One of a machine's cloud resources and what became of it."""

    resource: str  # the cloud's id (a group) or name/id (a key pair)
    kind: str  # "security group" or "key pair"
    state: str  # "in use", "pending", "waiting" (refused, retried), "deleted", "done"
    last_error: str = ""  # the cloud's last refusal, while it waits

    def as_json(self) -> dict[str, str]:
        return {"resource": self.resource, "kind": self.kind, "state": self.state,
                "last_error": self.last_error}


def status(ledger: Ledger, m: Machine) -> list[ResourceCleanup]:
    """What the ledger knows of the cleanup of ``m``'s group and key pair."""
    if m.provider not in CLOUDS or not m.region:
        return []
    events = ledger.events(m.id)
    done = any(e.step == STEP_DONE and e.detail == m.region for e in events)
    gone, refused = _answers(events, m.region)
    out: list[ResourceCleanup] = []
    for kind, resource in (("security group", m.security_group), ("key pair", m.key_name)):
        if not resource:
            continue
        if f"{m.region} {resource}" in gone:
            state, error = "deleted", ""
        elif not m.ended:
            state, error = "in use", ""
        elif resource in refused and not done:
            state, error = "waiting", refused[resource]
        elif done:
            state, error = "done", ""  # gone, or left to a live machine that shares it
        else:
            state, error = "pending", ""
        out.append(ResourceCleanup(resource, kind, state, error))
    return out


def _leftovers(provider: Provider, region: str) -> list[str]:
    """What gpudesk-tagged resources remain (providers without the call: assume none)."""
    ask = getattr(provider, "leftovers", None)
    return list(ask(region)) if ask is not None else []
