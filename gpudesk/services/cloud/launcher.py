"""Launch one machine: key → security group → instance → running → SSH reachable.

The ledger is written before the cloud call (an intent with its client token)
and after it (the cloud id), so a crash anywhere leaves something the
reconciler can match. Capacity, quota and price refusals move on to the next
zone or region; every refusal is kept, in words, for the progress view.

Cancelling is safe: a cloud call already on its way is awaited (it cannot be
recalled), and a machine that exists by then is terminated and recorded, so a
cancelled launch never leaves a billing machine unseen.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import signal
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Literal

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.cloud import cleanup, credentials
from gpudesk.services.cloud import guard as guards
from gpudesk.services.cloud.accounts import ProviderFactory, provider_from_keyring, title
from gpudesk.services.cloud.catalog import load_catalog
from gpudesk.services.cloud.providers.base import (
    STATE_RUNNING,
    STATE_TERMINATED,
    CloudInstance,
    LaunchRequest,
    Market,
    Provider,
    ProviderError,
    ProviderName,
    ZoneChoice,
    validate_request,
)
from gpudesk.services.cloud.public_ip import detect_public_address
from gpudesk.services.money.ledger import STATE_FAILED, STATE_INTENT, Ledger, Machine, new_ledger_id

log = logging.getLogger(__name__)

Step = Literal["key", "security-group", "instance", "running", "ssh"]
STEPS: tuple[Step, ...] = ("key", "security-group", "instance", "running", "ssh")
STEP_TITLES: dict[Step, str] = {
    "key": QT_TRANSLATE_NOOP("Launcher", "SSH key"),
    "security-group": QT_TRANSLATE_NOOP("Launcher", "Firewall (SSH from your address only)"),
    "instance": QT_TRANSLATE_NOOP("Launcher", "Request the machine"),
    "running": QT_TRANSLATE_NOOP("Launcher", "Wait until it runs"),
    "ssh": QT_TRANSLATE_NOOP("Launcher", "Wait until SSH answers"),
}
MSG_NOT_RUNNING = QT_TRANSLATE_NOOP(
    "ProviderError", "The machine {cloud_id} was created but is still {state} after {minutes} "
    "minutes. It is listed on the Instances page; terminate it there if you no longer want it.")
MSG_NO_SSH = QT_TRANSLATE_NOOP(
    "ProviderError", "The machine {cloud_id} runs (and bills) but SSH on {address} did not "
    "answer within {minutes} minutes. It is listed on the Instances page.")
MSG_NOT_LAUNCHED = QT_TRANSLATE_NOOP(
    "ProviderError", "No launched machine '{ref}' in the ledger to wait for.")
MSG_GONE = QT_TRANSLATE_NOOP(
    "ProviderError", "The spot machine {cloud_id} ended while starting in {where}; spot "
    "capacity may have been reclaimed. The cloud said: {reason}")
MSG_LAUNCH_FAILED = QT_TRANSLATE_NOOP(
    "ProviderError", "The machine {cloud_id} could not be started in {where}. The cloud said: "
    "{reason}")
MSG_NO_REASON = QT_TRANSLATE_NOOP("ProviderError", "(no reason given)")
MSG_NO_QUOTE = QT_TRANSLATE_NOOP(
    "ProviderError", "The cloud gave no price for {instance_type} in {region} ({detail}), so "
    "nothing was started: gpudesk does not start a machine whose spend it cannot count. Try "
    "again in a moment, or choose an offer that shows a price.")
MSG_ZONE_REFUSED = QT_TRANSLATE_NOOP(
    "ProviderError", "{provider} does not sell {instance_type} in {zone} now: {reason}")

# Test hook: the fault test kills the process (SIGKILL) at the named point.
FAULT_ENV = "GPUDESK_FAULT_KILL_AT"
FAULT_POINTS = ("intent", "key", "security-group", "image", "instance-requested",
                "instance-recorded", "running", "ssh")


def _fault(point: str) -> None:
    if os.environ.get(FAULT_ENV) == point:
        os.kill(os.getpid(), signal.SIGKILL)


@dataclass(frozen=True)
class LaunchPlan:
    """What the user chose (from an offer in the Plan page, or the CLI flags)."""

    provider: ProviderName
    instance_type: str
    region: str
    zone: str = ""
    market: Market = "on-demand"
    max_price: float | None = None
    image_id: str = ""
    disk_gb: int = 100
    allow_from: str = ""  # empty: detect the user's public address
    fallback_regions: tuple[str, ...] = ()
    gpu: str = ""
    gpus: int = 0
    price_per_hour: float = 0.0  # USD/hour, the catalog's (or the live); 0: ask the cloud
    ssh_user: str = "ubuntu"
    wait_ssh: bool = True
    budget: float | None = None  # USD like price_per_hour (the ledger's currency); None: none
    on_budget: str = "stop"  # "stop" or "terminate"
    cny_per_usd: float = 7.2  # to hand CNY-billing clouds their own currency


@dataclass(frozen=True)
class Progress:
    step: Step
    status: Literal["started", "done", "failed", "retry"]
    message: str = ""  # English template already formatted; UI shows `error` translated
    error: ProviderError | None = None
    ledger_id: str = ""


@dataclass(frozen=True)
class Refusal:
    region: str
    zone: str
    error: ProviderError


@dataclass
class LaunchResult:
    machine: Machine
    refusals: list[Refusal] = field(default_factory=list)


class LaunchRefused(ProviderError):
    """Every candidate refused; ``refusals`` says where and why."""

    def __init__(self, refusals: list[Refusal]) -> None:
        last = refusals[-1].error
        values = {k: v for k, v in last.values.items() if k != "detail"}
        super().__init__(last.kind, last.template, last.detail, **values)
        self.refusals = refusals


def key_pair_name(public_key: str) -> str:
    """Stable per key, so each region holds one pair per gpudesk key."""
    return "gpudesk-" + hashlib.sha256(public_key.encode()).hexdigest()[:10]


async def probe_ssh(address: str, port: int = 22, timeout: float = 5.0) -> bool:
    """True when an SSH server answers with its banner (no login attempted)."""
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(address, port), timeout)
    except (TimeoutError, OSError):
        return False
    try:
        banner = await asyncio.wait_for(reader.readline(), timeout)
        return banner.startswith(b"SSH-")
    except (TimeoutError, OSError):
        return False
    finally:
        writer.close()


class Launcher:
    def __init__(self, ledger: Ledger, providers: ProviderFactory = provider_from_keyring, *,
                 ssh_probe: Callable[[str], Awaitable[bool]] | None = None,
                 poll_s: float = 3.0, running_timeout_s: float = 900.0,
                 ssh_timeout_s: float = 600.0,
                 first_boot: Callable[[Machine], tuple[str, str]] | None = None) -> None:
        self.ledger = ledger
        # (user data, host key fingerprint) for a machine about to launch: the guard and the
        # pinned host key from its first second (services.remote.first_boot.for_launch)
        self.first_boot = first_boot
        self.providers = providers
        self.ssh_probe = ssh_probe or probe_ssh
        self.poll_s = poll_s
        self.running_timeout_s = running_timeout_s
        self.ssh_timeout_s = ssh_timeout_s

    async def launch(self, plan: LaunchPlan,
                     on_progress: Callable[[Progress], None] = lambda p: None) -> LaunchResult:
        provider = await asyncio.to_thread(self.providers, plan.provider)
        known = {o.instance_type for o in load_catalog().filter(provider=plan.provider)}
        regions = await asyncio.to_thread(provider.regions)
        probe = LaunchRequest("check", plan.region, plan.instance_type, plan.market, plan.zone,
                              plan.max_price, plan.image_id, plan.disk_gb, plan.allow_from)
        validate_request(plan.provider, probe, regions, known)  # before anything costs a call
        for region in plan.fallback_regions:
            if region not in regions:
                validate_request(plan.provider, LaunchRequest("check", region, plan.instance_type),
                                 regions, known)
        allow_from = plan.allow_from or await asyncio.to_thread(detect_public_address)
        if not plan.price_per_hour:  # no bundled price (0.0, or None from a catalog row)
            plan = replace(plan, price_per_hour=await asyncio.to_thread(quote, provider, plan))

        ledger_id = new_ledger_id()
        machine = self.ledger.add(Machine(
            id=ledger_id, provider=plan.provider, region=plan.region, zone=plan.zone,
            instance_type=plan.instance_type, gpu=plan.gpu, gpus=plan.gpus, market=plan.market,
            max_price=plan.max_price, price_per_hour=plan.price_per_hour, currency="USD",
            client_token=f"{ledger_id}-1", ssh_user=plan.ssh_user, name=ledger_id,
            disk_gb=plan.disk_gb, state=STATE_INTENT, budget=plan.budget,
            on_budget=plan.on_budget if plan.budget else ""))
        _fault("intent")
        run = _Run(self, plan, provider, machine, allow_from, on_progress)
        try:
            return await run.go()
        except asyncio.CancelledError:
            await asyncio.shield(run.undo())
            raise

    async def wait_ready(self, ledger_id: str,
                         on_progress: Callable[[Progress], None] = lambda p: None
                         ) -> LaunchResult:
        """Wait longer for a machine that was launched but is not ready yet (still starting,
        or SSH not answering when ``launch`` gave up): until it runs, then until SSH
        answers, each for the launcher's time-out again. Nothing is terminated here: the
        machine stays on the books whatever happens."""
        m = self.ledger.get(ledger_id)
        if m is None or not m.cloud_id:
            raise ProviderError("not-found", MSG_NOT_LAUNCHED, ref=ledger_id)
        provider = await asyncio.to_thread(self.providers, m.provider)  # type: ignore[arg-type]
        plan = LaunchPlan(provider=m.provider, instance_type=m.instance_type,  # type: ignore[arg-type]
                          region=m.region, ssh_user=m.ssh_user)
        run = _Run(self, plan, provider, m, "", on_progress)
        await run._wait_running()
        await run._wait_ssh()
        return LaunchResult(run.machine)


def quote(provider: Provider, plan: LaunchPlan) -> float:
    """The pay-as-you-go USD/hour the cloud itself quotes, for an offer with no bundled price
    (Alibaba Cloud's DescribePrice), so that spend and budget count from a real number.

    0.0 for a provider that has no such call (the ledger's "no price"). A provider that
    has one but gives no price refuses the launch: a machine whose spend cannot be counted
    would bill past every budget unseen."""
    ask = getattr(provider, "on_demand_price", None)
    if ask is None:
        return 0.0
    why = ""
    try:
        quoted = ask(plan.region, plan.instance_type)
    except ProviderError as error:
        if error.kind in ("auth", "clock"):
            raise
        quoted, why = None, error.detail or error.kind
    if quoted is not None:
        price, currency = quoted
        rate = plan.cny_per_usd if currency == "CNY" else 1.0
        if price > 0 and rate > 0:
            return round(float(price) / rate, 6)
    log.warning("no price quote for %s in %s: %s", plan.instance_type, plan.region, why)
    raise ProviderError("price", MSG_NO_QUOTE, detail=why or "no price in the answer",
                        instance_type=plan.instance_type, region=plan.region)


class _Run:
    """The state of one launch, so cancellation knows what to undo."""

    def __init__(self, launcher: Launcher, plan: LaunchPlan, provider: Provider,
                 machine: Machine, allow_from: str, on_progress: Callable[[Progress], None]):
        self.l = launcher
        self.plan = plan
        self.provider = provider
        self.machine = machine
        self.allow_from = allow_from
        self.report = on_progress
        self.inflight: asyncio.Future[CloudInstance] | None = None
        self.refusals: list[Refusal] = []

    def _progress(self, step: Step, status: Literal["started", "done", "failed", "retry"],
                  error: ProviderError | None = None) -> None:
        log.info("launch %s %s: %s%s", self.machine.id, step, status,
                 f" ({error.kind}: {error.message()} {error.detail})" if error else "")
        self.report(Progress(step, status, error.message() if error else "", error,
                             self.machine.id))

    async def go(self) -> LaunchResult:
        ledger = self.l.ledger
        kind = credentials.key_kind_for(self.plan.provider)
        key = await asyncio.to_thread(credentials.ensure_ssh_key,
                                      credentials.KEY_KINDS[kind], kind)
        user_data = await self._first_boot()
        candidates = await self._candidates()
        if not candidates and not self.refusals:
            candidates = [(self.plan.region, "")]
        if not candidates:  # no zone of any region sells the type: say so, zone by zone
            error = LaunchRefused(self.refusals)
            self.machine = ledger.update(self.machine.id, state=STATE_FAILED,
                                         error=error.message(), step="failed",
                                         detail="; ".join(r.error.message()
                                                          for r in self.refusals))
            self._progress("instance", "failed", error)
            raise error
        instance: CloudInstance | None = None
        step: Step = "key"
        for attempt, (region, zone) in enumerate(candidates, start=1):
            try:
                step = "key"
                self._progress(step, "started")
                key_name = await asyncio.to_thread(self.provider.ensure_key_pair, region,
                                                   key_pair_name(key.public_openssh),
                                                   key.public_openssh)
                self._progress(step, "done")
                _fault("key")
                step = "security-group"
                self._progress(step, "started")
                group = await self._security_group(region)
                self._progress(step, "done")
                _fault("security-group")
                step = "instance"
                self._progress(step, "started")
                image = self.plan.image_id or await asyncio.to_thread(
                    self.provider.find_image, region, self.plan.instance_type)
                _fault("image")
                token = f"{self.machine.id}-{attempt}"
                self.machine = ledger.update(
                    self.machine.id, region=region, zone=zone, client_token=token,
                    key_name=key_name, security_group=group, state=STATE_INTENT, cloud_id="",
                    public_ip="",
                    step="request", detail=f"{region} {zone or '(any zone)'} token {token}")
                request = self._with_guard(LaunchRequest(
                    self.machine.id, region, self.plan.instance_type, self.plan.market, zone,
                    self.plan.max_price, image, self.plan.disk_gb, self.allow_from, key_name,
                    group, token, user_data=user_data))
                self.inflight = asyncio.ensure_future(
                    asyncio.to_thread(self.provider.run_instance, request))
                instance = await asyncio.shield(self.inflight)
                _fault("instance-requested")
                self._record(instance, "instance")
                self.inflight = None
                _fault("instance-recorded")
                self._progress(step, "done")
                step = "running"
                await self._wait_running()  # a launch can fail after it was accepted
                break
            except ProviderError as error:
                self.inflight = None
                # A machine that exists and has not ended stays on the books, whatever failed.
                exists = bool(self.machine.cloud_id) and self.machine.state != STATE_TERMINATED
                self.refusals.append(Refusal(region, zone, error))
                if error.failover and attempt < len(candidates) and not exists:
                    ledger.log(self.machine.id, "refused", f"{region} {zone}: {error.message()}")
                    self._progress(step, "retry", error)
                    continue
                if exists:
                    ledger.log(self.machine.id, "failed", error.message())
                else:
                    self.machine = ledger.update(self.machine.id, state=STATE_FAILED,
                                                 error=error.message(), step="failed",
                                                 detail=error.detail)
                self._progress(step, "failed", error)
                if len(self.refusals) > 1:
                    raise LaunchRefused(self.refusals) from None
                raise
        assert instance is not None
        _fault("running")
        if self.plan.wait_ssh:
            await self._wait_ssh()
            _fault("ssh")
        return LaunchResult(self.machine, self.refusals)

    async def _first_boot(self) -> str:
        """The machine's user data, its host key pinned and recorded before any cloud call."""
        if self.l.first_boot is None:
            return ""
        try:
            user_data, fingerprint = await asyncio.to_thread(self.l.first_boot, self.machine)
        except Exception as exc:
            self.machine = self.l.ledger.update(self.machine.id, state=STATE_FAILED,
                                                error=type(exc).__name__, step="failed",
                                                detail="first-boot script")
            raise
        self.machine = self.l.ledger.update(self.machine.id, host_key_fingerprint=fingerprint,
                                            step="host-key", detail=fingerprint)
        return user_data

    def _with_guard(self, request: LaunchRequest) -> LaunchRequest:
        """The budget in the cloud's own terms, written to the ledger before the call."""
        p = self.plan
        rate = p.cny_per_usd if p.provider in ("tencent", "aliyun") else 1.0
        g = guards.plan(p.provider, p.budget, p.on_budget, p.price_per_hour, 0.0, time.time(),
                        agent=bool(request.user_data))
        self.machine = self.l.ledger.update(
            self.machine.id, budget=g.budget, on_budget=g.action if g.budget else "",
            enforced_by=",".join(g.enforced_by), cloud_timer_at=g.cloud_timer_at,
            step="guard", detail=",".join(g.enforced_by) or "none")
        return replace(request, budget=None if g.budget is None else g.budget * rate,
                       on_budget=g.action, price_per_hour=p.price_per_hour * rate,
                       cloud_timer_at=g.cloud_timer_at)

    async def _security_group(self, region: str) -> str:
        """The machine's own group where the provider makes one (so nothing is shared and
        cleanup can remove it with the machine); else the provider's group per address."""
        per_machine = getattr(self.provider, "ensure_machine_group", None)
        if per_machine is None:
            return await asyncio.to_thread(self.provider.ensure_security_group, region,
                                           self.allow_from)
        cleanup.mark_pending(self.l.ledger, self.machine.id, region)  # until proven gone
        return str(await asyncio.to_thread(per_machine, region, self.machine.id,
                                           self.allow_from))

    async def _candidates(self) -> list[tuple[str, str]]:
        """(region, zone) to try in order: the cloud's own list of zones that sell the type.

        A zone that does not is a refusal in the cloud's words, reported now; a provider
        that cannot list zones (or a failed lookup) leaves the zone to the provider.
        """
        out: list[tuple[str, str]] = []
        regions = [self.plan.region]
        regions += [r for r in self.plan.fallback_regions if r != self.plan.region]
        choose = getattr(self.provider, "zone_choices", None)
        for region in regions:
            if region == self.plan.region and self.plan.zone:
                out.append((region, self.plan.zone))
                continue
            if choose is None:
                out.append((region, ""))
                continue
            try:
                choices: list[ZoneChoice] = await asyncio.to_thread(
                    choose, region, self.plan.instance_type, self.plan.market)
            except ProviderError as error:
                if error.kind in ("auth", "clock"):
                    raise
                log.info("zones of %s unknown (%s); the provider chooses", region, error)
                out.append((region, ""))
                continue
            for choice in choices:
                if choice.sells:
                    out.append((region, choice.zone))
                    continue
                refusal = ProviderError("capacity", MSG_ZONE_REFUSED, choice.reason,
                                        provider=title(self.plan.provider),
                                        instance_type=self.plan.instance_type,
                                        zone=choice.zone, reason=choice.reason)
                self.refusals.append(Refusal(region, choice.zone, refusal))
                self.l.ledger.log(self.machine.id, "refused",
                                  f"{region} {choice.zone}: {refusal.message()}")
                self._progress("instance", "retry", refusal)
        return out

    def _record(self, instance: CloudInstance, step: str) -> None:
        self.machine = self.l.ledger.update(
            self.machine.id, cloud_id=instance.cloud_id, state=instance.state,
            zone=instance.zone or self.machine.zone, public_ip=instance.public_ip,
            launched_at=instance.launched_at or time.time(), step=step,
            detail=f"{instance.cloud_id} {instance.state}")

    async def _wait_running(self) -> None:
        self._progress("running", "started")
        deadline = time.monotonic() + self.l.running_timeout_s
        m = self.machine
        while True:
            found = await asyncio.to_thread(self.provider.describe, m.region, [m.cloud_id])
            if found:
                current = found[0]
                if current.state != self.machine.state or (
                        current.public_ip and current.public_ip != self.machine.public_ip):
                    self._record(current, current.state)
                if current.state == STATE_RUNNING and current.public_ip:
                    self._progress("running", "done")
                    return
                if current.state == STATE_TERMINATED:
                    # The cloud's own words; only a spot machine may have been reclaimed.
                    error = ProviderError(
                        "capacity", MSG_GONE if current.market == "spot" else MSG_LAUNCH_FAILED,
                        current.reason, cloud_id=m.cloud_id, state=current.state,
                        where=current.zone or m.zone or m.region,
                        reason=current.reason or MSG_NO_REASON)
                    self._progress("running", "failed", error)
                    raise error
            if time.monotonic() > deadline:
                error = ProviderError("other", MSG_NOT_RUNNING, cloud_id=m.cloud_id,
                                      state=self.machine.state,
                                      minutes=round(self.l.running_timeout_s / 60))
                self._progress("running", "failed", error)
                raise error
            await asyncio.sleep(self.l.poll_s)

    async def _wait_ssh(self) -> None:
        self._progress("ssh", "started")
        deadline = time.monotonic() + self.l.ssh_timeout_s
        while not await self.l.ssh_probe(self.machine.public_ip):
            if time.monotonic() > deadline:
                error = ProviderError("network", MSG_NO_SSH, cloud_id=self.machine.cloud_id,
                                      address=self.machine.public_ip,
                                      minutes=round(self.l.ssh_timeout_s / 60))
                self._progress("ssh", "failed", error)
                raise error
            await asyncio.sleep(self.l.poll_s)
        self.l.ledger.log(self.machine.id, "ssh", self.machine.public_ip)
        self._progress("ssh", "done")

    async def undo(self) -> None:
        """After a cancel: wait for a call in flight, then terminate what it made."""
        ledger = self.l.ledger
        if self.inflight is not None:
            try:
                self._record(await self.inflight, "instance")
            except ProviderError as error:
                self.machine = ledger.update(self.machine.id, state=STATE_FAILED,
                                             error=error.message(), step="failed")
        if not self.machine.cloud_id:
            if self.machine.state == STATE_INTENT:
                ledger.update(self.machine.id, state=STATE_FAILED, error="cancelled",
                              step="cancelled")
            return
        ledger.log(self.machine.id, "cancelled", "terminating")
        try:
            await asyncio.to_thread(self.provider.terminate, self.machine.region,
                                    self.machine.cloud_id)
            ledger.update(self.machine.id, state=STATE_TERMINATED, step="terminate",
                          detail="after cancel")
        except ProviderError as error:  # still recorded as billing: the Instances page shows it
            ledger.log(self.machine.id, "terminate-failed", error.message())
