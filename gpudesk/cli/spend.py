"""CLI verb ``spend``: what each machine has cost this month (or another), and the budgets.

``gpudesk spend [--json] [--csv FILE] [--month YYYY-MM]`` prints one line per
machine with compute, storage, transfer and total in the machine's currency,
the month's total per currency, a "Storage" line for the user's buckets (GB-months, data
out and the requests counted per run, with each price's source and date, or why there is
no price), and
where each budget stands. ``--csv FILE``
(``-`` for standard output) writes one row per machine per month: every month
on record, or only ``--month``. Months are calendar months in local time.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from datetime import datetime
from typing import TYPE_CHECKING
from typing import Any

from gpudesk.services.core.sizes import size_text

if TYPE_CHECKING:
    from gpudesk.services.money.budgets import Status
    from gpudesk.services.money.spend import Cost
    from gpudesk.services.money.spend import MonthRow

VERBS = frozenset({"spend"})


def _month(text: str) -> str:
    m = re.fullmatch(r"(\d{4})-(\d{2})", text)
    if m is None or not 1 <= int(m.group(2)) <= 12:
        raise argparse.ArgumentTypeError(f"'{text}' is not a month like 2026-03")
    return text


def _cost_json(c: Cost) -> dict[str, Any]:
    return {"compute": round(c.compute, 6), "storage": round(c.storage, 6),
            "transfer": round(c.transfer, 6), "total": round(c.total, 6),
            "currency": c.currency}


def _when(t: float | None) -> str | None:
    return None if t is None else datetime.fromtimestamp(t).strftime("%Y-%m-%d %H:%M")


def report(month: str | None, now: float) -> dict[str, Any]:
    """The spend of ``month`` (default: this one) as JSON-ready data, budgets included."""
    from gpudesk.services.core.settings import load_settings
    from gpudesk.services.money import budgets
    from gpudesk.services.money import spend
    from gpudesk.services.money.ledger import Ledger
    from gpudesk.services.storage import data_costs
    from gpudesk.services.storage import s3_price_list
    from gpudesk.services.storage import usage

    settings = load_settings()
    with Ledger() as ledger:
        machines = ledger.machines()
        hs = [spend.history(ledger, m) for m in machines]
        # the machine's one spend figure, all time (what `ls` and `show` print)
        whole = {m.id: round(spend.machine_spend(ledger, m, now).total, 4) for m in machines}
    billing = [m.id for m in machines if m.billing]
    key = month or spend.month_key(now)
    rows = spend.month_rows(hs, now, month=key)
    by_id = {h.machine_id: h for h in hs}
    current = key == spend.month_key(now)
    # each machine held to its own budget (the ledger's), as the window and the agent do
    status: list[Status] = budgets.statuses(
        hs, billing, budgets.BudgetConfig.from_settings(settings), now,
        machines={m.id: m for m in machines}) if current else []
    # the AWS buckets' S3 prices from AWS's public price list, read when not cached today
    moved = data_costs.load()  # datasets' uploads, copies, downloads (issue 32)
    s3_price_list.ensure_fresh([u.region for u in usage.load().values() if u.cloud == "aws"]
                               + [t.region for t in moved if t.cloud == "aws"])
    stored = usage.month_storage(key, now)
    data_lines = data_costs.month_lines(key, now)
    machine_totals = spend.totals(rows)
    # the month's spend with the buckets' known costs, per currency (never mixed)
    with_storage = {cur: c.total for cur, c in machine_totals.items()}
    for cur, amount in [*stored.totals().items(), *data_costs.totals(data_lines).items()]:
        with_storage[cur] = with_storage.get(cur, 0.0) + amount
    return {
        "month": key, "at": now,
        "machines": [{
            "machine": r.machine_id, "name": r.name, "provider": r.provider,
            "instance_type": r.instance_type, "market": r.market,
            "billing": r.machine_id in billing, "approximate": r.approximate,
            "spend": whole[r.machine_id],
            "storage_and_transfer_counted": spend.rates_for(by_id[r.machine_id]).known,
            "per_hour": round(spend.rate_per_hour(by_id[r.machine_id], now), 6)
            if current and r.machine_id in billing else 0.0,
            **_cost_json(r.cost)} for r in rows],
        "totals": {cur: _cost_json(c) for cur, c in sorted(machine_totals.items())},
        "storage": usage.month_json(stored),
        "data": data_costs.month_json(data_lines),
        "totals_with_storage": {cur: round(v, 6) for cur, v in sorted(with_storage.items())},
        "budgets": [{
            "scope": s.budget.scope, "key": s.budget.key, "cap": s.budget.cap,
            "currency": s.budget.currency, "spent": round(s.spent, 6),
            "percent": round(s.percent, 2), "per_hour": round(s.per_hour, 6),
            "cap_reached_at": s.cap_at, "action": s.budget.action} for s in status],
    }


def _print_text(data: dict[str, Any]) -> None:
    print(f"Spend in {data['month']} (as of {_when(data['at'])})")
    if not data["machines"]:
        print("  nothing was billed in this month")
    for m in data["machines"]:
        mark = "~" if m["approximate"] else "*" if not m["storage_and_transfer_counted"] else " "
        live = f"  {m['per_hour']:.4f}/h now" if m["billing"] and m["per_hour"] else ""
        print(f" {mark}{m['machine']:<14} {m['name'][:16]:<16} {m['provider']:<8} "
              f"compute {m['compute']:>10.2f}  storage {m['storage']:>8.2f}  "
              f"transfer {m['transfer']:>8.2f}  total {m['total']:>10.2f} {m['currency']}{live}")
    _print_storage(data["storage"])
    if data["data"]["lines"]:  # datasets' uploads, copies and downloads, each priced
        print("Datasets moved:")
        for line in data["data"]["lines"]:
            print(f"  {line['text']}")
    totals = "; ".join(f"{t:.2f} {cur}" for cur, t in data["totals_with_storage"].items())
    unknown = ("" if data["storage"]["complete"] and data["data"]["complete"]
               else " (without the bucket costs gpudesk has no price for)")
    print(f"Total: {totals or '0.00'}{unknown}")
    if any(m["approximate"] for m in data["machines"]):
        print("~ rebuilt from totals recorded before gpudesk kept billing history")
    if any(not m["storage_and_transfer_counted"] for m in data["machines"]):
        print("* compute only: gpudesk has no disk or traffic prices for this provider "
              "(Tencent Cloud's depend on region and disk type)")
    for b in data["budgets"]:
        what = "this month" if b["scope"] == "month" else f"machine {b['key']}"
        line = (f"Budget for {what}: {b['spent']:.2f} of {b['cap']:.2f} {b['currency']} "
                f"({b['percent']:.0f}%)")
        if b["cap_reached_at"] is not None:
            line += f", reached at this rate by {_when(b['cap_reached_at'])}"
        print(line + f"; at 100%: {b['action']}")


def _print_storage(storage: dict[str, Any]) -> None:
    """The buckets' line: GB-months and data out per run, each priced or said unknown."""
    if not storage["runs"]:
        print("Storage: no bucket held a run's data in this month")
        return
    known = "; ".join(f"{v:.2f} {cur}" for cur, v in storage["totals"].items())
    asked = storage["requests"]["tier1"] + storage["requests"]["tier2"]
    print(f"Storage: {storage['gib_months']:.3f} GB-month"
          + (f" and {asked:,} requests" if asked else "") + " in the buckets"
          + (f", {known}" if known else "")
          + ("" if storage["complete"] else ", part of it unknown (see below)"))
    for r in storage["runs"]:
        p = r["storage_price"]
        if p is not None:
            cost = (f"{r['storage_cost']:.4f} {r['currency']} at {p['amount']} "
                    f"{p['currency']}/GB-month ({p['source']}, {p['as_of']})")
        else:
            cost = f"cost unknown: {r['storage_unknown_because']}"
        name = f"datasets in {r['uri']}" if r["run"].startswith("data:") else r["run"]
        print(f"  {name:<24} {r['gib_months']:>10.3f} GB-month  {cost}")
        if r["data_out_bytes"]:
            o = r["data_out_price"]
            out = (f"{r['data_out_cost']:.4f} {r['currency']} at {o['amount']} "
                   f"{o['currency']}/GB ({o['source']}, {o['as_of']})" if o is not None
                   else f"cost unknown: {r['data_out_unknown_because']}")
            print(f"  {'':<24} data out to this computer {size_text(r['data_out_bytes'])}  "
                  f"{out}")
        q = r["requests"]
        if q["tier1"] or q["tier2"]:
            if q["cost"] is None:
                cost = f"cost unknown: {q['unknown_because']}"
            else:
                at = " and ".join(f"{q[k + '_price'] * 1000:g} {q['currency']} per 1,000 {what}"
                                  for k, what in (("tier1", "PUT/COPY/POST/LIST"),
                                                  ("tier2", "GET and other")) if q[k])
                cost = f"{q['cost']:.4f} {q['currency']} at {at} ({q['source']}, {q['as_of']})"
            print(f"  {'':<24} requests {q['tier1'] + q['tier2']:,} ({q['tier1']:,} "
                  f"PUT/COPY/POST/LIST, {q['tier2']:,} GET and other)  {cost}")


def _write_csv(path: str, month: str | None, now: float) -> int:
    from gpudesk.services.money import spend
    from gpudesk.services.money.ledger import Ledger

    with Ledger() as ledger:
        rows: list[MonthRow] = spend.month_rows(spend.histories(ledger), now, month=month)
    if path == "-":
        spend.write_csv(rows, sys.stdout)
    else:
        with open(path, "w", encoding="utf-8", newline="") as f:
            spend.write_csv(rows, f)
    return len(rows)


def _cmd_spend(a: argparse.Namespace) -> int:
    now = time.time()
    if a.csv:
        n = _write_csv(a.csv, a.month, now)
        if a.csv != "-":
            print(f"wrote {n} row(s) to {a.csv}", file=sys.stderr)
        return 0
    data = report(a.month, now)
    if a.json:
        print(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        _print_text(data)
    return 0


def add_parsers(sub: Any) -> None:
    p = sub.add_parser("spend", help="what each machine has cost, per month, and the budgets")
    p.add_argument("--month", type=_month, metavar="YYYY-MM",
                   help="the calendar month to show (default: this one)")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.add_argument("--csv", metavar="FILE",
                   help="write one row per machine per month to FILE ('-': stdout)")
    p.set_defaults(func=_cmd_spend)


def handle_error(err: BaseException) -> int | None:
    """``spend`` only reads the ledger; its errors (a locked or unreadable file) are not ours."""
    return None
