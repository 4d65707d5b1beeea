"""Remove a machine from the list without dropping its guard.

A stopped cloud machine removed from the list still exists in its cloud (its disk
bills until it is terminated there) and still carries gpudesk's ledger tag, so the
next Check clouds finds it and adopts it again under the same ledger id. Adopted
as a stranger it would come back with no budget, and Start would then run it
unguarded.

So the row is kept rather than lost: before ``Ledger.remove`` deletes it, its last
state goes into its own history as one event (the ledger deletes a removed row,
never its events). Reconcile (:func:`restored`) brings back what gpudesk itself
knew: the budget and its action, who enforced it, the name, the login user and
pinned host key, the price it counted. What the cloud says now (state, address,
zone) comes from the cloud; the cloud timer from reading it back.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from dataclasses import fields
from dataclasses import replace
from typing import Any

from gpudesk.services.cloud.providers.base import CloudInstance
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine

KEPT_STEP = "removed-row"  # the event holding a removed row's last state (JSON)
# what only the cloud can say about a machine found again: never taken from the kept row
_FROM_CLOUD = ("cloud_id", "state", "public_ip", "zone", "stopped_mode", "instance_type",
               "market", "region", "running_since", "cloud_timer_at", "updated_at",
               "ended_at", "error")


def forget(ledger: Ledger, ledger_id: str) -> Machine | None:
    """Remove a row that cannot bill from the list, keeping its last state in its history
    (``ValueError`` for one that may bill, as ``Ledger.remove``). None: no such row."""
    m = ledger.get(ledger_id)
    if m is None:
        return None
    if m.billing:
        raise ValueError("refusing to forget a machine that may still be billing")
    ledger.log(m.id, KEPT_STEP, json.dumps(asdict(m), sort_keys=True))
    ledger.remove(m.id)
    return m


def kept_row(ledger: Ledger, ledger_id: str) -> Machine | None:
    """The last state of a row removed from the list, if it was removed by :func:`forget`."""
    for event in reversed(ledger.events(ledger_id)):
        if event.step != KEPT_STEP:
            continue
        try:
            data: dict[str, Any] = json.loads(event.detail)
        except ValueError:
            return None
        names = {f.name for f in fields(Machine)}
        try:
            return Machine(**{k: v for k, v in data.items() if k in names})
        except TypeError:
            return None
    return None


def restored(kept: Machine, inst: CloudInstance, adopted: Machine) -> Machine:
    """The row to add for ``inst`` found again: ``adopted`` (what a stranger would get,
    with the cloud's state and billing) with everything gpudesk itself knew of it from
    ``kept``; the cloud timer is left for the caller to read back."""
    mine = {f.name: getattr(kept, f.name) for f in fields(Machine)
            if f.name not in _FROM_CLOUD and f.name != "id"}
    mine["price_per_hour"] = kept.price_per_hour or adopted.price_per_hour
    return replace(adopted, **mine)
