"""Budget alerts in the window: a timer checks the budgets, each crossing is said once.

A crossing goes to the system tray (when the platform has one) and, always, to
the ``alert`` signal that the window shows in a :class:`BudgetBanner` and the
status bar. Without a tray ``no_tray`` says so once. At 100 % ``action_needed``
says which machines to stop or terminate, and, given ``act``, the alerts do it
themselves: every owed action is kept in the fired state until it is done, run
one after the other (never cancelling each other), and one that failed is
retried at each check and shown by ``owed`` until done (the agent does the same
on the machine when the app is not connected).
"""

from __future__ import annotations

import asyncio
import html
import time
from collections.abc import Awaitable
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QObject
from PySide6.QtCore import Qt
from PySide6.QtCore import QTimer
from PySide6.QtCore import Signal
from PySide6.QtWidgets import QFrame
from PySide6.QtWidgets import QHBoxLayout
from PySide6.QtWidgets import QLabel
from PySide6.QtWidgets import QToolButton
from PySide6.QtWidgets import QWidget

from gpudesk.services.cloud import stop_charging
from gpudesk.services.cloud.accounts import ProviderFactory
from gpudesk.services.core.settings import Settings
from gpudesk.services.money.budgets import SCOPE_MONTH
from gpudesk.services.money.budgets import BudgetChecker
from gpudesk.services.money.budgets import BudgetConfig
from gpudesk.services.money.budgets import Crossing
from gpudesk.services.money.ledger import Ledger
from gpudesk.ui.widgets.money import DISPLAY
from gpudesk.ui.widgets.task_runner import error_text
from gpudesk.ui.widgets.tray import BillingTray

CHECK_EVERY_MS = 30_000


@dataclass(frozen=True)
class MachineHooks:
    """What the alerts ask about a machine: its name for a message, whether it still bills
    (an owed action on one that no longer does is dropped), and how to act on it (None:
    alerts only)."""

    names: Callable[[str], str]
    is_billing: Callable[[str], bool]
    act: Callable[[str, str], Awaitable[object]] | None


class BudgetAlerts(QObject):
    alert = Signal(object, str, str)  # the Crossing, a heading, a sentence
    action_needed = Signal(str, list)  # "stop"/"terminate"/"warn", ledger ids
    no_tray = Signal(str)  # once: alerts show only inside the window
    owed = Signal(str)  # budget actions still to do and why the last try failed; "" = none
    acted = Signal(str, str)  # an owed action done: action, ledger id

    def __init__(self, checker: BudgetChecker, tray: BillingTray | None = None, *,
                 names: Callable[[str], str] = str, interval_ms: int = CHECK_EVERY_MS,
                 clock: Callable[[], float] = time.time,
                 tray_available: Callable[[], bool] = BillingTray.available,
                 act: Callable[[str, str], Awaitable[object]] | None = None,
                 is_billing: Callable[[str], bool] = lambda _id: True,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._drain: asyncio.Future[None] | None = None
        self.checker = checker
        self.machines = MachineHooks(names, is_billing, act)
        self.clock = clock
        self.tray = tray
        self.tray_available = tray_available
        self.told_no_tray = False
        self.timer = QTimer(self)
        self.timer.setInterval(interval_ms)
        self.timer.timeout.connect(self.check_now)

    @classmethod
    def for_ledger(cls, ledger: Ledger, settings: Callable[[], Settings],
                   tray: BillingTray | None = None, *,
                   providers: ProviderFactory | None = None, **kw: Any) -> BudgetAlerts:
        """Budgets from the live settings (Preferences may change them between checks).

        Given ``providers`` (and no ``act`` of its own), the owed actions are the budget's
        (:func:`stop_charging.act_for_budget`): the stop of a Tencent Cloud or Alibaba Cloud
        machine found stopped but charged in full (shut down from inside) starts it and
        stops it again without charge, where a plain stop would be refused and the bill
        run on."""
        if providers is not None:
            factory = providers
            kw.setdefault("act", lambda action, ledger_id: stop_charging.act_for_budget(
                ledger, ledger_id, action, factory))
        checker = BudgetChecker.for_ledger(ledger, lambda: BudgetConfig.from_settings(settings()))

        def name(ledger_id: str) -> str:
            m = ledger.get(ledger_id)
            return (m.name or m.id) if m is not None else ledger_id

        def billing(ledger_id: str) -> bool:
            m = ledger.get(ledger_id)
            return m is not None and m.billing

        kw.setdefault("is_billing", billing)
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
        self.run_owed()
        return crossings

    # ------------------------------------------------------------------ owed actions

    def run_owed(self) -> asyncio.Future[None] | None:
        """Do the owed actions one after another; a run in progress is never cancelled."""
        if self.machines.act is None or (self._drain is not None and not self._drain.done()):
            return self._drain
        if not self.checker.state.owed_actions():
            return None
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return None  # no qasync loop (a bare QApplication): the next check tries
        self._drain = asyncio.ensure_future(self._run_owed())
        return self._drain

    async def _run_owed(self) -> None:
        assert self.machines.act is not None
        state = self.checker.state
        for owed in state.owed_actions():
            if not self.machines.is_billing(owed.machine):
                state.settle(owed.key)  # ended meanwhile (an earlier terminate, the agent)
            else:
                try:
                    await self.machines.act(owed.action, owed.machine)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # noqa: BLE001 - kept, shown and retried
                    state.failed(owed.key, error_text(exc)[0])
                else:
                    state.settle(owed.key)
                    self.acted.emit(owed.action, owed.machine)
            state.save()
        self.owed.emit(self.owed_text())

    def owed_text(self) -> str:
        """Every budget action not done yet, in words ("" when none)."""
        lines = []
        for o in self.checker.state.owed_actions():
            what = self.tr("stop") if o.action == "stop" else self.tr("terminate")
            line = self.tr("Budget reached: gpudesk could not {action} {machine} yet "
                           "({tries} tries): {why} It tries again at the next check.").format(
                action=what, machine=self.machines.names(o.machine), tries=o.tries,
                why=o.error or self.tr("not tried yet."))
            lines.append(line)
        return "\n".join(lines)

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
                machine=self.machines.names(b.key), spent=DISPLAY(c.spent), cap=DISPLAY(b.cap))
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

    def show_owed(self, text: str) -> None:
        """Budget actions that failed stay in view (critical) until they are done."""
        if not text:
            if self.property("owed"):
                self.setProperty("owed", False)
                self.hide()
            return
        self.setProperty("owed", True)
        self.setProperty("level", "critical")
        self.setStyleSheet("#budgetBanner { background: #f8d7da; color: #58151c; }")
        self.label.setText(html.escape(text).replace("\n", "<br>"))
        self.show()

    def show_crossing(self, crossing: Crossing, heading: str, text: str) -> None:
        self.crossing = crossing
        self.setProperty("level", "critical" if crossing.threshold >= 100 else "warning")
        self.setStyleSheet(
            "#budgetBanner[level=\"critical\"] { background: #f8d7da; color: #58151c; }"
            "#budgetBanner[level=\"warning\"] { background: #fff3cd; color: #664d03; }")
        self.label.setText(f"<b>{html.escape(heading)}</b> — {html.escape(text)}")
        self.show()
