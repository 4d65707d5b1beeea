"""One machine, one spend figure: the issue's example everywhere it is shown.

Two hours of spot at $1 then $3 with a 100 GB disk: 1 + 3 = 4.00 of compute plus
100 GB × $0.08 × 2 h of a 720 h month = 0.0222 of disk, 4.02 in all. The old
``Machine.spend`` (today's price × all billed time) said 6.00 on the Instances
page, the tray and ``gpudesk ls``.
"""

from __future__ import annotations

import json
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from gpudesk.cli.entry import main
from gpudesk.services.core.settings import Settings
from gpudesk.services.core.settings import save_settings
from gpudesk.services.money import budgets
from gpudesk.services.money import spend
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine

T0 = datetime(2026, 11, 10, 9, 0).timestamp()  # November: 30 days
NOW = T0 + 7200.0
EXPECTED = 4.0 + 100 * 0.08 * 2 / (30 * 24)  # 4.0222


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    now = [T0]
    monkeypatch.setattr(time, "time", lambda: now[0])
    return now


@pytest.fixture
def machine(clock: list[float]) -> str:
    with Ledger() as ledger:
        ledger.add(Machine(id="m-spot", provider="aws", region="us-east-1", cloud_id="i-0abc",
                           instance_type="g5.xlarge", market="spot", price_per_hour=1.0,
                           disk_gb=100, name="spotty", created_at=T0))
        ledger.update("m-spot", state="running")
        ledger.record_price("m-spot", 3.0, since=T0 + 3600)
    clock[0] = NOW
    return "m-spot"


def _cli_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def test_the_issue_example_is_4_02_everywhere(machine: str, qapp: Any,
                                              capsys: pytest.CaptureFixture[str],
                                              gpudesk_home: Path) -> None:
    from PySide6.QtGui import QIcon

    from gpudesk.ui.machines.instances_model import InstancesModel
    from gpudesk.ui.watch.watch_page import spend_points
    from gpudesk.ui.widgets.tray import BillingTray

    with Ledger() as ledger:
        m = ledger.get(machine)
        assert m is not None
        one = spend.machine_spend(ledger, m).total
        h = spend.history(ledger, m)
        # Instances page: the model prices the history read with the rows
        model = InstancesModel()
        model.now = lambda: NOW
        model.set_machines([m], {m.id: h})
        instances_text = model.display(m, "spend")
        from PySide6.QtCore import Qt

        from gpudesk.ui.machines.instances_model import COL
        who = model.data(model.index(0, COL["spend"]), Qt.ItemDataRole.ToolTipRole)
        # tray menu
        tray = BillingTray(QIcon(), lambda: None, lambda: None)
        tray.update([m], model.spent)
        tray_text = tray.machine_actions[0].text()
    assert one == pytest.approx(EXPECTED, abs=1e-6)
    assert round(one, 2) == 4.02  # not 6.00
    assert model.spent(m) == pytest.approx(one)
    assert "$4.02" in instances_text
    assert "$4.02" in tray_text
    assert who == "No budget: nothing stops this machine's bill but you."  # who guards it
    # Watch: the spend curve ends at the same number
    assert spend_points(h, NOW)[-1][1] == pytest.approx(one)
    # budgets: a machine budget's spent is the same figure (USD)
    cfg = budgets.BudgetConfig(machine_usd=10.0)
    (status,) = budgets.statuses([h], [machine], cfg, NOW)
    assert status.spent == pytest.approx(one)
    # the command line: ls, spend and show print the same number for the machine
    save_settings(Settings())
    ls = _cli_json(capsys, "ls", "--json", "--no-reconcile")
    month = _cli_json(capsys, "spend", "--json")
    shown = _cli_json(capsys, "show", machine, "--json")
    assert [r["spend"] for r in ls if r["id"] == machine] == [round(one, 4)]
    assert [r["spend"] for r in month["machines"] if r["machine"] == machine] == [round(one, 4)]
    assert shown["spend"] == round(one, 4)
    assert month["machines"][0]["total"] == pytest.approx(one, abs=1e-5)  # the month is all of it


def test_show_json_has_the_documented_fields(machine: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    shown = _cli_json(capsys, "show", "i-0abc", "--json")
    for key in ("id", "provider", "cloud_id", "state", "spend", "host_key_fingerprint", "guard",
                "billing_state"):
        assert key in shown
    assert shown["billing_state"] == "running"  # the cloud's word once stopped
    assert (shown["id"], shown["provider"], shown["cloud_id"], shown["state"]) == \
        (machine, "aws", "i-0abc", "running")
    assert {k: shown["guard"][k] for k in ("budget", "action", "enforced_by",
                                           "cloud_timer_at")} == {
        "budget": None, "action": "stop", "enforced_by": [], "cloud_timer_at": None}
    assert shown["host_key_fingerprint"] is None  # never connected, nothing pinned yet


def test_a_stopped_machine_its_cloud_still_charges_keeps_one_growing_figure(
        clock: list[float], qapp: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """An hour running, then an hour stopped with KEEP_CHARGING: CVM bills both hours, so
    does every face (¥7.2 × 2), and each counts the machine as billing."""
    from gpudesk.ui.machines.instances_model import InstancesModel

    with Ledger() as ledger:
        ledger.add(Machine(id="m-cvm", provider="tencent", region="ap-guangzhou",
                           cloud_id="ins-abcdefgh", instance_type="GN7.2XLARGE32",
                           price_per_hour=7.2, currency="CNY", created_at=T0))
        ledger.update("m-cvm", state="running")
        clock[0] = T0 + 3600
        ledger.update("m-cvm", state="stopped", stopped_mode="KEEP_CHARGING")
        clock[0] = NOW
        m = ledger.get("m-cvm")
        assert m is not None
        one = spend.machine_spend(ledger, m).total
        model = InstancesModel()
        model.now = lambda: NOW
        model.set_machines([m], {m.id: spend.history(ledger, m)})
    assert one == pytest.approx(14.4)
    assert model.spent(m) == pytest.approx(one)
    assert model.billing_summary()[0] == 1  # the banner's count: not "Nothing is billing"
    save_settings(Settings())
    ls = _cli_json(capsys, "ls", "--json", "--no-reconcile")
    shown = _cli_json(capsys, "show", "m-cvm", "--json")
    assert [(r["spend"], r["billing"]) for r in ls] == [(round(one, 4), True)]
    assert (shown["spend"], shown["billing_state"]) == (round(one, 4), "KEEP_CHARGING")
