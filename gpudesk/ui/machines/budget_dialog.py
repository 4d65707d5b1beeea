"""Change one machine's budget: an amount and what happens at it, then what holds it now.

The Instances page opens it for the selected machine. "Change budget" runs
``machine_budget.change_budget`` through the TaskRunner (the ledger first, then the
cloud's own cap, then the agent's rules) and then shows what the ledger, the
desktop, the agent and the cloud now say, each in its own words. An amount that
is not one is refused under the field before anything is asked.
"""

from __future__ import annotations

import asyncio
import functools
import math
from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox
from PySide6.QtWidgets import QDialog
from PySide6.QtWidgets import QFormLayout
from PySide6.QtWidgets import QHBoxLayout
from PySide6.QtWidgets import QLabel
from PySide6.QtWidgets import QLineEdit
from PySide6.QtWidgets import QProgressBar
from PySide6.QtWidgets import QPushButton
from PySide6.QtWidgets import QVBoxLayout
from PySide6.QtWidgets import QWidget

from gpudesk.services.cloud.accounts import ProviderFactory
from gpudesk.services.core.settings import Settings
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine
from gpudesk.services.remote import guard_push
from gpudesk.services.remote.machine_budget import MSG_BAD_BUDGET
from gpudesk.services.remote.machine_budget import BudgetChange
from gpudesk.services.remote.machine_budget import change_budget
from gpudesk.services.remote.ssh import SshConnection
from gpudesk.ui.widgets.fitting_body import FittingBody
from gpudesk.ui.widgets.money import Money
from gpudesk.ui.widgets.retranslate import Retranslating
from gpudesk.ui.widgets.task_runner import TaskRunner
from gpudesk.ui.widgets.task_runner import format_template

ACTIONS = ("stop", "terminate")
CURRENCIES = ("USD", "CNY")


class BudgetDialog(Retranslating, QDialog):
    """The budget of ``machine``: amount (in USD or CNY) and stop | terminate at it."""

    changed = Signal(str)  # ledger id, once the ledger holds the new budget

    def __init__(self, ledger: Ledger, machine: Machine, providers: ProviderFactory,
                 money: Money, *, settings: Callable[[], Settings | None] = lambda: None,
                 connect: Callable[[Machine], SshConnection] = guard_push._connect,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("budgetDialog")
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.ledger = ledger
        self.machine = machine
        self.money = money
        self.settings = settings
        # change_budget with this window's way to the clouds and to the machine's agent
        self.change_budget = functools.partial(change_budget, providers=providers,
                                               connect=connect)
        self.result_change: BudgetChange | None = None
        self.heading = QLabel(self)
        self.heading.setObjectName("budgetHeading")
        self.heading.setWordWrap(True)
        self.amount = QLineEdit(self)
        self.amount.setObjectName("budgetAmount")
        self.currency = QComboBox(self)
        self.currency.setObjectName("budgetCurrency")
        for code in CURRENCIES:
            self.currency.addItem(code, code)
        self.action = QComboBox(self)
        self.action.setObjectName("budgetAction")
        self.action_label = QLabel(self)
        self.amount_label = QLabel(self)
        self.error = QLabel(self)
        self.error.setObjectName("budgetError")
        self.error.setStyleSheet("color: #922b21;")
        self.error.setWordWrap(True)
        self.error.setVisible(False)
        self.progress = QProgressBar(self)
        self.progress.setObjectName("budgetProgress")
        self.result_label = QLabel(self)
        self.result_label.setObjectName("budgetResult")
        self.result_label.setWordWrap(True)
        self.result_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.apply_button = QPushButton(self)
        self.apply_button.setObjectName("budgetApply")
        self.apply_button.setDefault(True)
        self.close_button = QPushButton(self)
        self.close_button.setObjectName("budgetClose")

        amount_row = QHBoxLayout()
        amount_row.addWidget(self.amount, 1)
        amount_row.addWidget(self.currency)
        form = QFormLayout()
        form.addRow(self.amount_label, amount_row)
        form.addRow("", self.error)
        form.addRow(self.action_label, self.action)
        buttons = QHBoxLayout()
        buttons.addWidget(self.progress)
        buttons.addStretch(1)
        buttons.addWidget(self.close_button)
        buttons.addWidget(self.apply_button)
        # grows to its sentences (a refusal, the result's lines), scrolls beyond the screen
        content = QVBoxLayout()
        content.addWidget(self.heading)
        content.addLayout(form)
        content.addWidget(self.result_label)
        content.addStretch(1)
        self.body = FittingBody(content, self)
        layout = QVBoxLayout(self)
        layout.addWidget(self.body, 1)
        layout.addLayout(buttons)

        self.runner = TaskRunner(self, button=self.apply_button, progress=self.progress,
                                 show_dialog=False)
        self.runner.failed.connect(self._failed)
        # what is being applied cannot be edited meanwhile (issue 31)
        self.runner.finished.connect(lambda _ok: self._set_fields(True))
        self.apply_button.clicked.connect(self.apply)
        self.close_button.clicked.connect(self.close)
        self.amount.textEdited.connect(lambda _t: self.error.setVisible(False))
        self.amount.returnPressed.connect(self.apply)
        self._fill(machine)
        self.retranslate()

    # ------------------------------------------------------------------ text

    def retranslate(self) -> None:
        self.setWindowTitle(self.tr("Change budget"))
        self.amount_label.setText(self.tr("Budget"))
        self.action_label.setText(self.tr("At the budget"))
        texts = {"stop": self.tr("stop the machine"), "terminate": self.tr("terminate it")}
        for i in range(self.action.count()):
            self.action.setItemText(i, texts[str(self.action.itemData(i))])
        self.apply_button.setText(self.tr("Change budget"))
        self.close_button.setText(self.tr("Close"))
        self._show_heading()
        if self.result_change is not None:
            self._show_result(self.result_change)

    def _fill(self, m: Machine) -> None:
        for code in ACTIONS:
            self.action.addItem(code, code)
        self.action.setCurrentIndex(max(0, self.action.findData(m.on_budget or "stop")))
        # in the window's currency where the ledger's is USD, else in the ledger's own
        ledger_currency = m.currency or "USD"
        convert = ledger_currency == "USD" and self.money.currency == "CNY"
        shown_in = self.money.currency if not m.budget or convert else ledger_currency
        self.currency.setCurrentIndex(max(0, self.currency.findData(shown_in)))
        if m.budget:
            self.amount.setText(f"{m.budget * self.money.rate if convert else m.budget:.2f}")

    def _show_heading(self) -> None:
        m = self.machine
        now = self.tr("none") if not m.budget else self.tr("{amount}, then {action}").format(
            amount=f"{m.budget:.2f} {m.currency or 'USD'}", action=self._action_word(m.on_budget))
        self.heading.setText(self.tr("{name} ({type}, {cloud_id}). Budget now: {now}.").format(
            name=m.name or m.id, type=m.instance_type or "-", cloud_id=m.cloud_id or "-",
            now=now))

    def _action_word(self, action: str) -> str:
        return {"stop": self.tr("stop"), "terminate": self.tr("terminate")}.get(
            action, self.tr("warn"))

    # ------------------------------------------------------------------ change

    def amount_value(self) -> float | None:
        """The amount typed, or None with the field's own message shown under it."""
        text = self.amount.text().strip().replace(",", "")
        try:
            value = float(text)
        except ValueError:
            self._refuse(self.tr("Budget: “{text}” is not an amount; type one like 50.")
                         .format(text=self.amount.text().strip()))
            return None
        if not math.isfinite(value) or value <= 0:
            self._refuse(self.tr("Budget: {why}").format(
                why=format_template("ProviderError", MSG_BAD_BUDGET, {"amount": text})))
            return None
        return value

    def _refuse(self, message: str) -> None:
        self.error.setText(message)
        self.error.setVisible(True)
        self.amount.setFocus()
        self.amount.selectAll()

    def apply(self) -> None:
        if self.runner.busy:
            return
        amount = self.amount_value()
        if amount is None:
            return
        self.error.setVisible(False)
        self.result_label.setStyleSheet("")
        self.result_label.setText(self.tr("Changing the budget: the ledger, then the cloud, "
                                          "then the machine's agent…"))
        action = str(self.action.currentData())
        currency = str(self.currency.currentData())
        work = asyncio.to_thread(self.change_budget, self.ledger, self.machine.id, amount, action,
                                 currency=currency, settings=self.settings())
        self._set_fields(False)
        self.runner.run(work, on_success=self._changed)

    def _set_fields(self, enabled: bool) -> None:
        for w in (self.amount, self.currency, self.action):
            w.setEnabled(enabled)

    def _changed(self, change: BudgetChange) -> None:
        self.result_change = change
        self.machine = change.machine
        self._show_heading()
        self._show_result(change)
        self.changed.emit(change.machine.id)

    def _failed(self, message: str) -> None:
        self.result_label.setStyleSheet("color: #922b21;")
        self.result_label.setText(self.tr("The budget was not changed: {why}").format(
            why=message))

    def _amount(self, amount: float, currency: str) -> str:
        """A ledger amount: in ¥ with CNY chosen in Preferences (issue 31), else the CLI's
        own words ("12.00 USD")."""
        if (currency or "USD") == "USD" and self.money.currency == "CNY":
            return self.money(amount)
        return f"{amount:.2f} {currency or 'USD'}"

    def _show_result(self, change: BudgetChange) -> None:
        """What the ledger, the desktop, the agent and the cloud now say, line by line."""
        m = change.machine
        was = self.tr("none") if not change.previous_budget else \
            self.tr("{amount}, then {action}").format(
                amount=self._amount(change.previous_budget, m.currency),
                action=self._action_word(change.previous_action))
        lines = [self.tr("Ledger: {amount}, then {action} (was {was}).").format(
            amount=self._amount(change.budget, m.currency),
            action=self._action_word(change.action), was=was)]
        d = change.desktop
        if d is not None:
            lines.append(self.tr("gpudesk: {spent} spent of {cap} ({percent:.0f}%); it "
                                 "{action}s the machine at the budget while it runs.").format(
                spent=self.money(d.spent), cap=self.money(d.budget.cap), percent=d.percent,
                action=self._action_word(d.budget.action)))
        template, values = change.agent_says
        lines.append(self.tr("Agent: {says}").format(
            says=format_template("Guard", template, values)))
        for template, values in change.cloud_says:
            lines.append(self.tr("Cloud: {says}").format(
                says=format_template("Guard", template, values)))
        self.result_label.setStyleSheet("" if change.ok else "color: #922b21;")
        self.result_label.setText("\n".join(lines))
