"""Stop, start, terminate and add-your-own: the actions on a ledger machine.

Each action writes the ledger before the call (what was asked) and after it
(what the provider said), like a launch.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.cloud import guard
from gpudesk.services.cloud import keep_alive_launch
from gpudesk.services.cloud.accounts import ProviderFactory
from gpudesk.services.cloud.accounts import provider_from_keyring
from gpudesk.services.cloud.providers.base import STATE_PENDING
from gpudesk.services.cloud.providers.base import STATE_STOPPED
from gpudesk.services.cloud.providers.base import STATE_STOPPING
from gpudesk.services.cloud.providers.base import STATE_TERMINATED
from gpudesk.services.cloud.providers.base import CloudInstance
from gpudesk.services.cloud.providers.base import ProviderError
from gpudesk.services.cloud.providers.base import ProviderName
from gpudesk.services.money.ledger import STATE_READY
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine
from gpudesk.services.money.ledger import new_ledger_id

MSG_UNKNOWN_MACHINE = QT_TRANSLATE_NOOP(
    "ProviderError", "No machine '{ref}' in the ledger; `gpudesk ls` lists them.")
MSG_OWN_MACHINE = QT_TRANSLATE_NOOP(
    "ProviderError", "{name} is your own machine: gpudesk cannot {action} it. Remove it from the "
    "list instead.")
MSG_NOT_LAUNCHED = QT_TRANSLATE_NOOP(
    "ProviderError", "{name} has no cloud machine (state {state}); there is nothing to {action}.")
MSG_BAD_HOST = QT_TRANSLATE_NOOP(
    "ProviderError", "'{host}' is not a host name or address, or port {port} is not 1-65535.")
# Run, Watch and ssh pick a machine by its name: two profiles of one name would be one choice
MSG_NAME_TAKEN = QT_TRANSLATE_NOOP(
    "ProviderError", "A machine named {name} is already in your list: choose another name, "
    "or remove that one first.")

ACTIONS = ("stop", "start", "terminate")
TIMER_CLOUDS = ("tencent", "aliyun")  # where the cloud holds a timer (ActionTimer, AutoRelease)
_AFTER = {"stop": STATE_STOPPING, "start": STATE_PENDING, "terminate": STATE_TERMINATED}


def resolve(ledger: Ledger, ref: str) -> Machine:
    machine = ledger.find(ref)
    if machine is None:
        raise ProviderError("not-found", MSG_UNKNOWN_MACHINE, ref=ref)
    return machine


async def act(ledger: Ledger, ref: str, action: str,
              providers: ProviderFactory = provider_from_keyring) -> Machine:
    """Run ``action`` (stop/start/terminate) on a machine; returns the updated row."""
    machine = resolve(ledger, ref)
    if machine.provider == "own":
        raise ProviderError("invalid", MSG_OWN_MACHINE, name=machine.name or machine.id,
                            action=action)
    if machine.group_live:  # its group would replace it: the group is what ends
        if action != "terminate":
            raise ProviderError("invalid", keep_alive_launch.MSG_NO_STOP,
                                name=machine.name or machine.id, group=machine.group_id)
        group_cloud = await asyncio.to_thread(providers, machine.provider)  # type: ignore[arg-type]
        groups = keep_alive_launch.groups_of(group_cloud, machine.provider)
        return await asyncio.to_thread(keep_alive_launch.end, ledger, machine, groups)
    if not machine.cloud_id:
        raise ProviderError("invalid", MSG_NOT_LAUNCHED, name=machine.name or machine.id,
                            state=machine.state, action=action)
    name: ProviderName = machine.provider if machine.provider in (  # type: ignore[assignment]
        "aws", "aliyun") else "tencent"
    provider = await asyncio.to_thread(providers, name)
    ledger.log(machine.id, f"{action}-requested", machine.cloud_id)
    call = {"stop": provider.stop, "start": provider.start, "terminate": provider.terminate}
    try:
        await asyncio.to_thread(call[action], machine.region, machine.cloud_id)
    except ProviderError as error:
        # Refused, e.g. "already stopped" while the cloud still charges it: record what the
        # cloud says it is (a stopped machine billing at full price) before saying why.
        ledger.log(machine.id, f"{action}-refused", error.message())
        try:
            seen = await asyncio.to_thread(provider.describe, machine.region,
                                           [machine.cloud_id])
        except ProviderError:
            seen = []
        if seen:
            _follow(ledger, machine, seen[0])
        raise
    found: list[CloudInstance] = []
    try:
        found = await asyncio.to_thread(provider.describe, machine.region, [machine.cloud_id])
    finally:
        # The stop's charging mode goes in with the stop, so a stop that keeps charging
        # never closes the billed interval (not even for a moment).
        word: dict[str, Any] = ({"stopped_mode": found[0].stopped_mode}
                                if found and action == "stop" else {})
        updated = ledger.update(machine.id, state=_AFTER[action], step=action,
                                detail=machine.cloud_id, **word)
    if found:
        updated = _follow(ledger, updated, found[0])
    note = getattr(provider, "stop_note", None)  # what still bills, in the cloud's terms
    if action == "stop" and callable(note):
        try:
            ledger.log(machine.id, "stop-billing",
                       await asyncio.to_thread(note, machine.region, machine.cloud_id))
        except ProviderError as error:
            ledger.log(machine.id, "stop-billing", error.message())
    if action == "terminate":
        await asyncio.to_thread(_cleanup_quietly, provider, machine.region, ledger, machine.id)
    if machine.provider in TIMER_CLOUDS:
        updated = await asyncio.to_thread(timer_follows, ledger, updated, action, provider)
    return updated


def timer_follows(ledger: Ledger, m: Machine, action: str, provider: object) -> Machine:
    """Blocking: the cloud's timer follows the machine. A stop that ends the compute bill
    (STOP_CHARGING / StopCharging) removes it: the machine is not spending its budget, and
    a timer left would terminate it (with its disk and data) for money it never spent. A
    start sets it again from the budget left (guard.apply: left ÷ (quote + disk)). Each
    change is read back, and the ledger records only what the cloud then holds."""
    if action == "stop" and m.state in (STATE_STOPPING, STATE_STOPPED) \
            and not m.compute_billing and (m.cloud_timer_at is not None
                                          or "cloud-timer" in m.enforced_by.split(",")):
        if not isinstance(provider, guard.GuardedProvider):
            return m
        ledger.log(m.id, "timer-requested", "none: stopped without charge")
        try:
            provider.set_guard(m.region, m.cloud_id, m.on_budget or "stop", m.market, None)
        except ProviderError as error:
            ledger.log(m.id, "timer-failed", error.message())
        answered, held = guard.read_timer(provider, m.region, m.cloud_id)
        if not answered:
            return m
        return ledger.update(m.id, cloud_timer_at=held,
                             enforced_by=guard.with_timer(m.enforced_by, held), step="timer",
                             detail=guard.iso_utc(held) or "none (stopped without charge)")
    if action == "start" and m.budget and guard.plan(
            m.provider, m.budget, m.on_budget or "stop", m.price_per_hour, 0.0, time.time(),
            market=m.market).action == "terminate":  # only a terminate has a cloud timer
        try:
            guard.apply(ledger, m, provider, m.budget, m.on_budget or "stop", time.time())
        except Exception as error:  # noqa: BLE001 - the start itself happened; say why
            ledger.log(m.id, "timer-failed", str(error))
        return ledger.get(m.id) or m
    return m


def _follow(ledger: Ledger, machine: Machine, inst: CloudInstance) -> Machine:
    """Record the state the cloud reports, and the address: a stopped machine whose
    cloud reports none has released it (EC2 does), so none is shown any more."""
    changes: dict[str, Any] = {}
    if inst.state != machine.state:
        changes["state"] = inst.state
    if inst.stopped_mode != machine.stopped_mode:
        changes["stopped_mode"] = inst.stopped_mode  # a stop that keeps charging bills on
    if inst.public_ip and inst.public_ip != machine.public_ip:
        changes["public_ip"] = inst.public_ip
    elif inst.state == STATE_STOPPED and not inst.public_ip and machine.public_ip:
        changes["public_ip"] = ""
    if not changes:
        return machine
    detail = inst.state if not inst.stopped_mode else f"{inst.state} ({inst.stopped_mode})"
    return ledger.update(machine.id, step="state", detail=detail, **changes)


async def stop_warning(ledger: Ledger, ref: str,
                       providers: ProviderFactory = provider_from_keyring) -> str:
    """Before a stop: why it cannot end the compute bill, in words; "" when it can.

    The cloud's own rule (a Tencent spot, prepaid or local-disk machine, or one set to
    stop with KEEP_CHARGING; Aliyun where economical mode cannot apply), asked of the
    provider when it knows how (``stop_warning``); EC2's stop always ends it.
    """
    machine = resolve(ledger, ref)
    if machine.provider in ("own", "aws") or not machine.cloud_id:
        return ""
    name: ProviderName = "aliyun" if machine.provider == "aliyun" else "tencent"
    provider = await asyncio.to_thread(providers, name)
    warn = getattr(provider, "stop_warning", None)
    if not callable(warn):
        return ""
    words = await asyncio.to_thread(warn, machine.region, machine.cloud_id)
    return str(words or "")


async def settle(ledger: Ledger, ref: str, providers: ProviderFactory = provider_from_keyring,
                 *, poll_s: float = 3.0, timeout_s: float = 600.0,
                 on_state: Callable[[Machine], None] = lambda m: None) -> Machine:
    """After a stop or start: ask the cloud until the machine is no longer stopping or
    starting (or ``timeout_s`` passed), recording each answer; ``on_state`` hears each."""
    machine = resolve(ledger, ref)
    if machine.state not in (STATE_STOPPING, STATE_PENDING) or not machine.cloud_id:
        return machine
    name: ProviderName = machine.provider if machine.provider in (  # type: ignore[assignment]
        "aws", "aliyun") else "tencent"
    provider = await asyncio.to_thread(providers, name)
    deadline = time.monotonic() + timeout_s
    while machine.state in (STATE_STOPPING, STATE_PENDING) and time.monotonic() < deadline:
        await asyncio.sleep(poll_s)
        found = await asyncio.to_thread(provider.describe, machine.region, [machine.cloud_id])
        if found:
            machine = _follow(ledger, machine, found[0])
        on_state(machine)
    return machine


def _cleanup_quietly(provider: object, region: str, ledger: Ledger, ledger_id: str) -> None:
    """Delete key pairs / groups no machine uses any more; a failure here is not the user's."""
    try:
        removed = provider.cleanup(region)  # type: ignore[attr-defined]
    except ProviderError as error:
        ledger.log(ledger_id, "cleanup-failed", error.message())
        return
    if removed:
        ledger.log(ledger_id, "cleanup", ", ".join(removed))


def add_own_machine(ledger: Ledger, name: str, host: str, port: int = 22,
                    user: str = "", gpus: int = 0, gpu: str = "", *, key_file: str = "",
                    python: str = "", root: str = "", store: str = "",
                    store_region: str = "") -> Machine:
    """Register an SSH host the user already has: no billing, same later steps. Its
    profile (key file path, remote python, folder, and the bucket its runs keep their data
    in, checked by the caller) is what Run, Watch and ssh use."""
    host = host.strip()
    if not host or any(c.isspace() for c in host) or not 1 <= port <= 65535:
        raise ProviderError("invalid", MSG_BAD_HOST, host=host, port=port)
    if name_taken(ledger, name.strip() or host):
        raise ProviderError("invalid", MSG_NAME_TAKEN, name=name.strip() or host)
    ledger_id = new_ledger_id()
    return ledger.add(Machine(
        id=ledger_id, provider="own", name=name.strip() or host, public_ip=host, ssh_port=port,
        ssh_user=user.strip(), gpus=gpus, gpu=gpu, state=STATE_READY, origin="added",
        launched_at=time.time(), key_file=key_file.strip(), remote_python=python.strip(),
        remote_root=root.strip(), store=store.strip(), store_region=store_region.strip()),
        step="added", detail=f"{user}@{host}:{port}")


def name_taken(ledger: Ledger, name: str) -> bool:
    """Whether a machine still in the list (not ended) already has ``name``."""
    wanted = name.strip().casefold()
    return bool(wanted) and any(m.name.strip().casefold() == wanted
                                for m in ledger.machines(include_ended=False))


def ssh_command(machine: Machine) -> str:
    """What a user types to reach ``machine`` with its profile: ``ssh -i KEY -p PORT
    user@host`` (the key file and port only where they are not ssh's defaults)."""
    import shlex

    parts = ["ssh"]
    if machine.key_file:
        parts += ["-i", shlex.quote(machine.key_file)]
    if machine.ssh_port and machine.ssh_port != 22:
        parts += ["-p", str(machine.ssh_port)]
    user = f"{machine.ssh_user}@" if machine.ssh_user else ""
    return " ".join([*parts, f"{user}{machine.public_ip}"])
