"""``gpudesk spend``: text, --json and --csv over a ledger written out by hand."""

from __future__ import annotations

import argparse
import csv
import json
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from gpudesk.cli import spend as cli_spend
from gpudesk.services.core.settings import Settings
from gpudesk.services.core.settings import save_settings
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine

UTC = ZoneInfo("UTC")
NOV30 = datetime(2026, 11, 30, 22, 0, tzinfo=UTC).timestamp()
DEC1 = datetime(2026, 12, 1, tzinfo=UTC).timestamp()
NOW = datetime(2026, 12, 1, 2, 0, tzinfo=UTC).timestamp()


@pytest.fixture(autouse=True)
def _utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gpudesk")
    sub = parser.add_subparsers(dest="verb", required=True)
    cli_spend.add_parsers(sub)
    return parser


def _run(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    assert args.verb in cli_spend.VERBS
    code: int = args.func(args)
    return code


@pytest.fixture
def ledger(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [NOV30]
    monkeypatch.setattr(time, "time", lambda: clock[0])
    with Ledger() as led:
        # aws, $3.6/h, 100 GB: 22:00 on 30 Nov to 01:00 on 1 Dec, then stopped
        led.add(Machine(id="m-a", provider="aws", price_per_hour=3.6, name="big",
                        instance_type="p3.2xlarge", disk_gb=100))
        led.update("m-a", state="running")
        clock[0] = DEC1 + 3600
        led.update("m-a", state="stopped")
        # tencent ¥36/h from midnight, still running
        clock[0] = DEC1
        led.add(Machine(id="m-t", provider="tencent", price_per_hour=36.0, currency="CNY"))
        led.update("m-t", state="running")
    save_settings(Settings(monthly_budget_usd=100.0, cny_per_usd=7.2))
    clock[0] = NOW


def test_json_for_this_month(ledger: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(["spend", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["month"] == "2026-12"
    a, t = data["machines"]
    assert (a["machine"], a["billing"], a["per_hour"]) == ("m-a", False, 0.0)
    # 1 h of December at $3.6; the stopped disk keeps billing: 100 × 0.08 × 2 h / 31 days
    assert a["compute"] == pytest.approx(3.6)
    assert a["storage"] == pytest.approx(8 * 7200 / (31 * 86400), abs=1e-6)
    # 2 h at ¥36/h, running at ¥36/h now; Tencent disk and transfer are not bundled
    assert (t["machine"], t["compute"], t["per_hour"], t["currency"]) == (
        "m-t", pytest.approx(72.0), 36.0, "CNY")
    assert data["totals"]["CNY"]["total"] == pytest.approx(72.0)
    assert (a["storage_and_transfer_counted"], t["storage_and_transfer_counted"]) == (True, False)
    assert data["totals"]["USD"]["total"] == pytest.approx(3.6 + 8 * 7200 / (31 * 86400),
                                                          abs=1e-6)
    (budget,) = data["budgets"]
    # $3.6 + $0.0215 (disk) + ¥72 / 7.2 = $13.6215 of $100
    assert budget["scope"] == "month" and budget["key"] == "2026-12"
    assert budget["spent"] == pytest.approx(13.6215, abs=1e-4)
    # ¥36/h = $5/h, and m-a's stopped disk: 8 × 3600 / (31 days) = $0.0108/h
    assert budget["per_hour"] == pytest.approx(5.0 + 8 * 3600 / (31 * 86400), abs=1e-6)


def test_text_and_another_month(ledger: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(["spend"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Spend in 2026-12 (as of 2026-12-01 02:00)")
    assert "Total: 72.00 CNY; 3.62 USD" in out
    assert "Budget for this month: 13.62 of 100.00 USD (14%)" in out
    assert " *m-t " in out and "\n* compute only: gpudesk has no disk or traffic prices" in out
    assert "  m-a " in out  # AWS disk and traffic are counted: no mark
    assert _run(["spend", "--month", "2026-11", "--json"]) == 0
    nov = json.loads(capsys.readouterr().out)
    assert [m["machine"] for m in nov["machines"]] == ["m-a"]
    assert nov["machines"][0]["compute"] == pytest.approx(7.2)  # 2 h in November
    assert nov["budgets"] == []  # budgets are for the month in progress
    with pytest.raises(SystemExit):
        _parser().parse_args(["spend", "--month", "2026-13"])


def test_csv_has_a_row_per_machine_per_month(ledger: None, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "spend.csv"
    assert _run(["spend", "--csv", str(out)]) == 0
    assert "wrote 3 row(s)" in capsys.readouterr().err
    with out.open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert [(r["month"], r["machine"], r["compute"], r["currency"]) for r in rows] == [
        ("2026-11", "m-a", "7.2000", "USD"), ("2026-12", "m-a", "3.6000", "USD"),
        ("2026-12", "m-t", "72.0000", "CNY")]
    # November's 2 h of a 100 GB disk: 8 × 7200 / (30 days) = 0.0222
    assert rows[0]["storage"] == "0.0222" and rows[0]["total"] == "7.2222"
    assert _run(["spend", "--csv", "-", "--month", "2026-11"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and lines[1].startswith("2026-11,m-a,big,aws,p3.2xlarge,on-demand,")


def test_a_machines_budget_is_its_own_not_preferences_default(
        ledger: None, capsys: pytest.CaptureFixture[str]) -> None:
    """`gpudesk spend` holds each machine to the budget in its ledger row (what the window,
    the agent and `gpudesk budget` set), Preferences' machine budget only to those without."""
    save_settings(Settings(monthly_budget_usd=100.0, cny_per_usd=7.2, machine_budget_usd=40.0,
                           budget_action="warn"))
    with Ledger() as led:  # ¥144, then terminate: $20 at ¥7.2/$
        led.update("m-t", budget=144.0, on_budget="terminate", step="budget")
    assert _run(["spend", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    machine = {b["key"]: b for b in data["budgets"] if b["scope"] == "machine"}
    assert set(machine) == {"m-t"}  # m-a is stopped: it bills no more
    own = machine["m-t"]
    assert (own["cap"], own["currency"], own["action"]) == (20.0, "USD", "terminate")
    assert own["spent"] == pytest.approx(10.0, abs=1e-6)  # ¥72 of ¥144
    assert own["percent"] == pytest.approx(50.0, abs=0.01)
    assert _run(["spend"]) == 0
    out = capsys.readouterr().out
    assert "Budget for machine m-t: 10.00 of 20.00 USD (50%)" in out
    assert "at 100%: terminate" in out.split("Budget for machine m-t")[1].splitlines()[0]
