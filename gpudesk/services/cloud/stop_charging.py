"""Stop the bill of a machine that is stopped but still charged in full.

A Tencent Cloud CVM or an Alibaba Cloud ECS machine shut down from inside (by its user,
its OS, or an old agent) shows STOPPED with ``StopChargingMode=KEEP_CHARGING`` /
``StoppedMode=KeepCharging``: the compute bills on at its full price, and a stop that
asks to stop charging is refused, because the machine is already stopped. The only way
to end that bill without deleting the machine is to start it and stop it again through
the cloud's API with stop-charging, which is what :func:`stop_charging` does (saying so
in the ledger at each step). :func:`act_for_budget` is the budget's stop: that, or the
plain action of ``machines.act``.

Blocking calls go through ``asyncio.to_thread``; the machine is started for the
seconds a start takes, which bills those seconds: much less than a stopped machine
charged in full until someone notices.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from collections.abc import Callable

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.cloud import machines
from gpudesk.services.cloud.accounts import ProviderFactory
from gpudesk.services.cloud.accounts import provider_from_keyring
from gpudesk.services.cloud.providers.base import ProviderError
from gpudesk.services.cloud.providers.base import ProviderName
from gpudesk.services.core.machine_states import KEEP_CHARGING_WORDS
from gpudesk.services.core.machine_states import STATE_RUNNING
from gpudesk.services.core.machine_states import STATE_STOPPED
from gpudesk.services.core.machine_states import STATE_TERMINATED
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine

STEP = "stop-charging"  # the ledger's word for each step of the restart-and-stop
MSG_NOT_STARTED = QT_TRANSLATE_NOOP(
    "ProviderError", "{name} was started to stop it again without charge, but it did not "
    "run within {minutes} minutes (it is {state}). It may still bill: stop it in the "
    "cloud's console.")
CLOUDS = ("tencent", "aliyun")  # where a stop from inside keeps charging


def keeps_charging(m: Machine) -> bool:
    """``m`` is stopped but the cloud still charges its compute in full."""
    return m.provider in CLOUDS and m.state == STATE_STOPPED and \
        m.stopped_mode in KEEP_CHARGING_WORDS


async def stop_charging(ledger: Ledger, ref: str,
                        providers: ProviderFactory = provider_from_keyring, *,
                        wait_s: float = 600.0, poll_s: float = 5.0,
                        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep
                        ) -> Machine:
    """Start ``ref`` (stopped, still charging) and stop it again with stop-charging."""
    m = machines.resolve(ledger, ref)
    ledger.log(m.id, STEP, f"stopped but charged in full ({m.stopped_mode}): starting it to "
               "stop it again without charge")
    m = await machines.act(ledger, m.id, "start", providers)
    name: ProviderName = "aliyun" if m.provider == "aliyun" else "tencent"
    provider = await asyncio.to_thread(providers, name)
    waited = 0.0
    state = m.state
    while True:
        seen = await asyncio.to_thread(provider.describe, m.region, [m.cloud_id])
        state = seen[0].state if seen else STATE_TERMINATED
        if state in (STATE_RUNNING, STATE_TERMINATED) or waited >= wait_s:
            break
        await sleep(poll_s)
        waited += poll_s
    if state == STATE_TERMINATED:
        return ledger.update(m.id, state=STATE_TERMINATED, step=STEP, detail="gone")
    if state != STATE_RUNNING:
        ledger.log(m.id, STEP, f"did not run within {wait_s:g} s ({state})")
        raise ProviderError("other", MSG_NOT_STARTED, name=m.name or m.id,
                            minutes=f"{wait_s / 60:g}", state=state)
    done = await machines.act(ledger, m.id, "stop", providers)
    ledger.log(m.id, STEP, f"stopped again: {done.stopped_mode or '?'}")
    return done


async def act_for_budget(ledger: Ledger, ref: str, action: str,
                         providers: ProviderFactory = provider_from_keyring) -> Machine:
    """The budget's action on ``ref``: a stop of a machine stopped but still charging is a
    start and a stop-charging stop; anything else is ``machines.act``."""
    m = machines.resolve(ledger, ref)
    if action == "stop" and keeps_charging(m):
        return await stop_charging(ledger, m.id, providers)
    return await machines.act(ledger, m.id, action, providers)
