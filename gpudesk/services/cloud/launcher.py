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
from dataclasses import dataclass, field
from typing import Literal

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.cloud import credentials
from gpudesk.services.cloud.accounts import ProviderFactory, provider_from_keyring
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
MSG_GONE = QT_TRANSLATE_NOOP(
    "ProviderError", "The machine {cloud_id} ended while starting (state {state}); spot "
    "capacity may have been reclaimed.")

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
    price_per_hour: float = 0.0  # USD/hour, the catalog's (or the live) price
    ssh_user: str = "ubuntu"
    wait_ssh: bool = True


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
                 ssh_timeout_s: float = 600.0) -> None:
        self.ledger = ledger
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

        ledger_id = new_ledger_id()
        machine = self.ledger.add(Machine(
            id=ledger_id, provider=plan.provider, region=plan.region, zone=plan.zone,
            instance_type=plan.instance_type, gpu=plan.gpu, gpus=plan.gpus, market=plan.market,
            max_price=plan.max_price, price_per_hour=plan.price_per_hour, currency="USD",
            client_token=f"{ledger_id}-1", ssh_user=plan.ssh_user, name=ledger_id,
            disk_gb=plan.disk_gb, state=STATE_INTENT))
        _fault("intent")
        run = _Run(self, plan, provider, machine, allow_from, on_progress)
        try:
            return await run.go()
        except asyncio.CancelledError:
            await asyncio.shield(run.undo())
            raise


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
        candidates = [(self.plan.region, self.plan.zone)]
        candidates += [(r, "") for r in self.plan.fallback_regions if r != self.plan.region]
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
                group = await asyncio.to_thread(self.provider.ensure_security_group, region,
                                                self.allow_from)
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
                request = LaunchRequest(
                    self.machine.id, region, self.plan.instance_type, self.plan.market, zone,
                    self.plan.max_price, image, self.plan.disk_gb, self.allow_from, key_name,
                    group, token)
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
                    error = ProviderError("capacity", MSG_GONE, cloud_id=m.cloud_id,
                                          state=current.state)
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
