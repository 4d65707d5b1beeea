"""``gpudesk budget ID AMOUNT [--on-budget stop|terminate] [--currency USD|CNY] [--json]``.

Changes one machine's budget and moves all three that hold it
(``services.remote.machine_budget.change_budget``): the ledger first (a ``budget``
event, before any cloud call; the desktop's crossings follow it), the cloud's own
cap from the budget left, and the agent's rules when the machine can be reached
(else at its next connect). Prints what each now says.

AMOUNT is in the provider's currency, like ``gpudesk launch --budget`` (AWS USD,
Tencent Cloud and Alibaba Cloud CNY) unless ``--currency`` says otherwise.
Exit status: 0 done, 1 refused or the cloud's cap did not change, 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import TYPE_CHECKING
from typing import Any

if TYPE_CHECKING:
    from gpudesk.services.remote.machine_budget import BudgetChange

VERBS = frozenset({"budget"})
CURRENCIES = {"aws": "USD", "tencent": "CNY", "aliyun": "CNY"}


def _fail(message: str, code: int) -> int:
    print(f"gpudesk: error: {message}", file=sys.stderr)
    return code


def _amount(text: str) -> float | None:
    try:
        value = float(text.strip().replace("_", ""))
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _print_text(change: BudgetChange) -> None:
    from gpudesk.services.cloud import guard

    data = change.as_json()
    m = change.machine
    was = "none" if change.previous_budget is None else \
        f"{change.previous_budget:.2f} {m.currency}"
    print(f"{m.id} ({m.provider} {m.cloud_id or '-'}, {m.state}): budget {change.budget:.2f} "
          f"{m.currency}, {change.action} at it (was {was})")
    print(f"  ledger:  {change.budget:.2f} {m.currency}, {change.action} "
          "(written before any cloud call)")
    d = change.desktop
    if d is None:
        print("  desktop: the machine is not billing: no crossing to watch")
    else:
        does = "only warns" if d.budget.action == "warn" else f"{d.budget.action}s it"
        print(f"  desktop: {d.spent:.2f} of {d.budget.cap:.2f} USD spent ({d.percent:.0f} %); "
              f"at 100 % gpudesk {does} while it runs")
    print(f"  agent:   {data['agent']['says']}")
    if change.guard is not None:
        print(f"  cloud:   enforced by {', '.join(change.guard.enforced_by) or 'nobody'}")
        for line in guard.english(m, change.guard):
            print(f"           {line}")
    for line in data["cloud"]["says"]:
        print(f"  cloud:   {line}")


def _cmd_budget(a: argparse.Namespace) -> int:
    from gpudesk.services.money.ledger import Ledger
    from gpudesk.services.remote.machine_budget import change_budget

    amount = _amount(a.amount)
    if amount is None:
        return _fail(f"AMOUNT: '{a.amount}' is not a number", 2)
    if amount <= 0:
        return _fail(f"AMOUNT: a budget must be more than 0 (got {a.amount})", 2)
    with Ledger() as ledger:
        from gpudesk.services.cloud.machines import resolve

        m = resolve(ledger, a.id)
        currency = a.currency or CURRENCIES.get(m.provider, m.currency)
        change = change_budget(ledger, m.id, amount, a.on_budget, currency=currency)
    if a.json:
        print(json.dumps(change.as_json(), indent=2, ensure_ascii=False))
    else:
        _print_text(change)
    if not change.ok:
        return _fail(f"the cloud's cap of {change.machine.id} did not change: "
                     f"{change.cloud_error}", 1)
    return 0


def add_parsers(sub: Any) -> None:
    p = sub.add_parser("budget", help="change a machine's budget: ledger, cloud cap and agent")
    p.add_argument("id", help="ledger id, cloud id or name")
    p.add_argument("amount", metavar="AMOUNT",
                   help="the new budget, in the provider's currency (AWS USD, Tencent Cloud "
                        "and Alibaba Cloud CNY) unless --currency says otherwise")
    p.add_argument("--on-budget", choices=("stop", "terminate"),
                   help="what happens at the budget (default: the machine's action)")
    p.add_argument("--currency", choices=("USD", "CNY"),
                   help="the currency of AMOUNT (converted at Preferences' CNY per USD)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_budget)


def handle_error(err: BaseException) -> int | None:
    """Errors here are ProviderErrors, which cli_cloud already prints; none of its own."""
    del err
    return None
