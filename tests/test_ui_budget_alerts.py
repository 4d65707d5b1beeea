"""Budget crossings reach the banner and the tray (or, offscreen, the no-tray fallback) once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QIcon

from gpudesk.services.core.settings import Settings
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine
from gpudesk.ui.watch.budget_alerts import BudgetAlerts
from gpudesk.ui.watch.budget_alerts import BudgetBanner
from gpudesk.ui.widgets.tray import BillingTray


@pytest.fixture
def ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setattr("gpudesk.services.money.ledger.time.time", lambda: 0.0)
    with Ledger(tmp_path / "l.sqlite3") as led:
        led.add(Machine(id="m-1", provider="aws", price_per_hour=3.6, name="trainer"))
        led.update("m-1", state="running")  # $0.001 a second from t = 0
        yield led


@pytest.fixture
def tray(qtbot: Any) -> BillingTray:
    return BillingTray(QIcon(), lambda: None, lambda: None)


def test_offscreen_has_no_tray_so_the_banner_alone_shows_each_crossing_once(
        qtbot: Any, ledger: Ledger, tray: BillingTray) -> None:
    assert not BillingTray.available()  # offscreen: the fallback path is the real one here
    clock = [4000.0]
    settings = Settings(machine_budget_usd=10.0)
    alerts = BudgetAlerts.for_ledger(ledger, lambda: settings, tray, interval_ms=10,
                                     clock=lambda: clock[0])
    banner = BudgetBanner()
    qtbot.addWidget(banner)
    alerts.alert.connect(banner.show_crossing)
    told: list[str] = []
    alerts.no_tray.connect(told.append)
    seen: list[float] = []
    alerts.alert.connect(lambda c, *_: seen.append(c.threshold))
    alerts.start()  # first check at $4: nothing
    assert seen == [] and banner.isHidden()

    clock[0] = 5000.0  # $5 of $10
    with qtbot.waitSignal(alerts.alert, timeout=2000) as blocker:
        pass
    crossing, heading, text = blocker.args
    assert (crossing.threshold, heading) == (50.0, "Budget 50% reached")
    assert text == "trainer has cost $5.00 of its $10.00 budget."
    assert banner.isVisible() and "Budget 50% reached" in banner.label.text()
    assert told == ["This desktop has no system tray: budget alerts show in the gpudesk "
                    "window only."]
    assert tray.messages == []

    clock[0] = 10_000.0  # 80 % and 100 % in one check; the timer finds them
    with qtbot.waitSignal(alerts.action_needed, timeout=2000) as blocker:
        pass
    assert blocker.args == ["stop", ["m-1"]]
    assert seen == [50.0, 80.0, 100.0]
    assert banner.property("level") == "critical"
    assert "Stopping 1 machine(s)." in banner.label.text()
    qtbot.mouseClick(banner.close_button, Qt.MouseButton.LeftButton)
    assert banner.isHidden()

    # later checks (the timer's or a direct one) repeat nothing, and "no tray" was said once
    ticks = len(seen)
    clock[0] = 50_000.0
    assert alerts.check_now() == []
    assert len(seen) == ticks and len(told) == 1 and banner.isHidden()
    alerts.stop()


def test_with_a_tray_the_highest_crossing_goes_to_the_tray(qtbot: Any, ledger: Ledger,
                                                          tray: BillingTray) -> None:
    clock = [9000.0]  # the laptop woke up at $9 of $10
    settings = Settings(machine_budget_usd=10.0)
    alerts = BudgetAlerts.for_ledger(ledger, lambda: settings, tray, interval_ms=60_000,
                                     clock=lambda: clock[0], tray_available=lambda: True)
    told: list[str] = []
    alerts.no_tray.connect(told.append)
    fired = alerts.check_now()
    assert [c.threshold for c in fired] == [50.0, 80.0]
    assert tray.messages == [("Budget 80% reached",
                              "trainer has cost $9.00 of its $10.00 budget.")]
    settings.machine_budget_usd = 9.5  # lowered in Preferences: a new budget, already spent
    clock[0] = 9500.0
    assert [c.threshold for c in alerts.check_now()] == [50.0, 80.0, 100.0]
    assert tray.messages[-1] == ("Budget 100% reached", "trainer has cost $9.50 of its $9.50 "
                                 "budget. Stopping 1 machine(s).")
    assert told == []
