"""Budget alerts in the window: a timer checks the budgets, each crossing is said once.

A crossing goes to the system tray (when the platform has one) and, always, to
the ``alert`` signal that the window shows in a :class:`BudgetBanner` and the
status bar. Without a tray ``no_tray`` says so once. At 100 % ``action_needed``
asks the window to stop or terminate the machines (the agent does the same on
the machine when the app is not connected).
"""

from __future__ import annotations

import html
import time
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QToolButton, QWidget

from gpudesk.services.core.settings import Settings
from gpudesk.services.money.budgets import SCOPE_MONTH, BudgetChecker, BudgetConfig, Crossing
from gpudesk.services.money.ledger import Ledger
from gpudesk.ui.widgets.money import DISPLAY
from gpudesk.ui.widgets.tray import BillingTray

CHECK_EVERY_MS = 30_000


class BudgetAlerts(QObject):
    alert = Signal(object, str, str)  # the Crossing, a heading, a sentence
    action_needed = Signal(str, list)  # "stop"/"terminate"/"warn", ledger ids
    no_tray = Signal(str)  # once: alerts show only inside the window

    def __init__(self, checker: BudgetChecker, tray: BillingTray | None = None, *,
                 names: Callable[[str], str] = str, interval_ms: int = CHECK_EVERY_MS,
                 clock: Callable[[], float] = time.time,
                 tray_available: Callable[[], bool] = BillingTray.available,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.checker = checker
        self.tray = tray
        self.names = names
        self.clock = clock
        self.tray_available = tray_available
        self.told_no_tray = False
        self.timer = QTimer(self)
        self.timer.setInterval(interval_ms)
        self.timer.timeout.connect(self.check_now)

    @classmethod
    def for_ledger(cls, ledger: Ledger, settings: Callable[[], Settings],
                   tray: BillingTray | None = None, **kw: Any) -> BudgetAlerts:
        """Budgets from the live settings (Preferences may change them between checks)."""
        checker = BudgetChecker.for_ledger(ledger, lambda: BudgetConfig.from_settings(settings()))

        def name(ledger_id: str) -> str:
            m = ledger.get(ledger_id)
            return (m.name or m.id) if m is not None else ledger_id

        return cls(checker, tray, names=name, **kw)

    def start(self) -> None:
        self.timer.start()
        self.check_now()

    def stop(self) -> None:
        self.timer.stop()

    def check_now(self) -> list[Crossing]:
        crossings = self.checker.check(self.clock())
        # one tray balloon per budget per check: the highest threshold it reached
        highest: dict[str, Crossing] = {}
        for c in crossings:
            heading, text = self.message(c)
            self.alert.emit(c, heading, text)
            highest[c.budget.id] = c
            if c.action is not None and c.machines:
                self.action_needed.emit(c.action, list(c.machines))
        for c in highest.values():
            self._to_tray(*self.message(c))
        return crossings

    def _to_tray(self, heading: str, text: str) -> None:
        if self.tray is not None and self.tray_available():
            self.tray.notify(heading, text)
        elif not self.told_no_tray:
            self.told_no_tray = True
            self.no_tray.emit(self.tr("This desktop has no system tray: budget alerts show "
                                      "in the gpudesk window only."))

    def message(self, c: Crossing) -> tuple[str, str]:
        b = c.budget
        heading = self.tr("Budget {threshold}% reached").format(threshold=f"{c.threshold:g}")
        if b.scope == SCOPE_MONTH:
            text = self.tr("This month's spend is {spent} of the {cap} budget.").format(
                spent=DISPLAY(c.spent), cap=DISPLAY(b.cap))
        else:
            text = self.tr("{machine} has cost {spent} of its {cap} budget.").format(
                machine=self.names(b.key), spent=DISPLAY(c.spent), cap=DISPLAY(b.cap))
        if c.action is not None:
            n = len(c.machines)
            if c.action == "stop":
                text += " " + self.tr("Stopping {n} machine(s).").format(n=n)
            elif c.action == "terminate":
                text += " " + self.tr("Terminating {n} machine(s).").format(n=n)
            else:
                text += " " + self.tr("Nothing is stopped: this budget only warns.")
        return heading, text


class BudgetBanner(QFrame):
    """The in-app banner: the latest budget alert until the user closes it."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("budgetBanner")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.label = QLabel(self)
        self.label.setObjectName("budgetBannerText")
        self.label.setWordWrap(True)
        self.label.setTextFormat(Qt.TextFormat.RichText)
        self.close_button = QToolButton(self)
        self.close_button.setObjectName("budgetBannerClose")
        self.close_button.setText("✕")
        self.close_button.setToolTip(self.tr("Dismiss"))
        self.close_button.clicked.connect(self.hide)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 4, 4, 4)
        layout.addWidget(self.label, 1)
        layout.addWidget(self.close_button)
        self.crossing: Crossing | None = None
        self.hide()

    def show_crossing(self, crossing: Crossing, heading: str, text: str) -> None:
        self.crossing = crossing
        self.setProperty("level", "critical" if crossing.threshold >= 100 else "warning")
        self.setStyleSheet(
            "#budgetBanner[level=\"critical\"] { background: #f8d7da; color: #58151c; }"
            "#budgetBanner[level=\"warning\"] { background: #fff3cd; color: #664d03; }")
        self.label.setText(f"<b>{html.escape(heading)}</b> — {html.escape(text)}")
        self.show()
