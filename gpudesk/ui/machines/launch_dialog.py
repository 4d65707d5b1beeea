"""Launch the chosen offer: the choices that cost money, then each step as it happens.

Pressing Launch is the confirmation (the button names the hourly price).
Cancel is always safe: the launcher terminates a machine that was already
requested, and the ledger has it either way.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

from PySide6.QtCore import QCoreApplication, Qt, Signal
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDoubleSpinBox,
    QFormLayout,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from gpudesk.services.cloud import accounts
from gpudesk.services.cloud import guard as guards
from gpudesk.services.cloud.catalog import Catalog, Offer
from gpudesk.services.cloud.launcher import STEP_TITLES, STEPS, LaunchPlan, LaunchResult, Progress
from gpudesk.services.cloud.providers.base import MSG_BAD_CIDR, ProviderError, single_address
from gpudesk.services.cloud.public_ip import detect_public_address
from gpudesk.services.money.ledger import Machine
from gpudesk.ui.widgets.money import DISPLAY, Money
from gpudesk.ui.widgets.retranslate import Retranslating
from gpudesk.ui.widgets.task_runner import TaskRunner, error_text, format_template

LaunchFn = Callable[[LaunchPlan, Callable[[Progress], None]], Awaitable[LaunchResult]]
MARKS = {"": "○", "started": "…", "done": "✓", "failed": "✗", "retry": "↻"}


class LaunchDialog(Retranslating, QDialog):
    launched = Signal(str)  # ledger id of the running machine
    ended = Signal()  # the launch finished, failed or was cancelled

    def __init__(self, offer: Offer, catalog: Catalog, launch: LaunchFn, *,
                 spot: bool = False, money: Money | None = None, detect: bool = True,
                 budget: float = 0.0, on_budget: str = "stop",
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("launchDialog")
        self.offer = offer
        self.launch_fn = launch
        self.money = money or DISPLAY
        self.outcome: LaunchResult | None = None
        self.ledger_id = ""
        self._refusals: list[str] = []

        self.heading = QLabel(self)
        self.heading.setObjectName("launchHeading")
        self.heading.setWordWrap(True)
        self.spot = QCheckBox(self)
        self.spot.setObjectName("spot")
        self.spot.setChecked(spot)  # no spot quote yet: the cloud still sells spot
        self.max_price = QDoubleSpinBox(self)
        self.max_price.setObjectName("maxPrice")
        self.max_price.setDecimals(3)
        self.max_price.setRange(0.0, 1000.0)
        self.max_price.setSingleStep(0.05)
        self.max_price.setSpecialValueText("—")  # 0: no cap beyond the on-demand price
        self.disk = QSpinBox(self)
        self.disk.setObjectName("diskGb")
        self.disk.setRange(30, 4000)
        self.disk.setValue(100)
        self.disk.setSuffix(" GB")
        self.allow_from = QLineEdit(self)
        self.allow_from.setObjectName("allowFrom")
        self.detect_button = QPushButton(self)
        self.detect_button.setObjectName("detect")
        self.fallbacks = QListWidget(self)
        self.fallbacks.setObjectName("fallbacks")
        self.fallbacks.setMaximumHeight(80)
        for other in catalog.filter(provider=offer.provider):
            if other.instance_type == offer.instance_type and other.region != offer.region:
                item = QListWidgetItem(other.region, self.fallbacks)
                item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
                item.setCheckState(Qt.CheckState.Checked)
        self.cost = QLabel(self)
        self.cost.setObjectName("launchCost")
        self.cost.setWordWrap(True)
        # the machine's budget (USD, like every ledger amount; 0 = none) and who enforces it
        self.budget = QDoubleSpinBox(self)
        self.budget.setObjectName("budget")
        self.budget.setDecimals(2)
        self.budget.setRange(0.0, 1_000_000.0)
        self.budget.setSingleStep(10.0)
        self.budget.setPrefix("$ ")
        self.budget.setValue(max(0.0, budget))
        self.on_budget = QComboBox(self)
        self.on_budget.setObjectName("onBudget")
        for action in guards.ACTIONS:
            self.on_budget.addItem("", action)
        self.on_budget.setCurrentIndex(max(0, self.on_budget.findData(on_budget)))
        self.guard_text = QLabel(self)
        self.guard_text.setObjectName("guardText")
        self.guard_text.setWordWrap(True)
        self.budget_labels = [QLabel(self), QLabel(self)]
        self.labels = [QLabel(self) for _ in range(5)]
        form = QFormLayout()
        form.addRow(self.labels[0], self.spot)
        form.addRow(self.labels[1], self.max_price)
        form.addRow(self.labels[2], self.disk)
        row = QHBoxLayout()
        row.addWidget(self.allow_from, 1)
        row.addWidget(self.detect_button)
        form.addRow(self.labels[3], row)
        form.addRow(self.labels[4], self.fallbacks)
        form.addRow(self.budget_labels[0], self.budget)
        form.addRow(self.budget_labels[1], self.on_budget)
        form.addRow(self.guard_text)

        self.steps_box = QGroupBox(self)
        grid = QGridLayout(self.steps_box)
        self.step_marks: dict[str, QLabel] = {}
        self.step_labels: dict[str, QLabel] = {}
        for i, step in enumerate(STEPS):
            mark, label = QLabel(MARKS[""], self.steps_box), QLabel(self.steps_box)
            mark.setObjectName(f"mark_{step}")
            mark.setMinimumWidth(18)
            self.step_marks[step], self.step_labels[step] = mark, label
            grid.addWidget(mark, i, 0)
            grid.addWidget(label, i, 1)
        grid.setColumnStretch(1, 1)
        self.log = QLabel(self)
        self.log.setObjectName("launchLog")
        self.log.setWordWrap(True)
        self.log.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        self.launch_button = QPushButton(self)
        self.launch_button.setObjectName("launch")
        self.launch_button.setDefault(True)
        self.cancel_button = QPushButton(self)
        self.cancel_button.setObjectName("cancelLaunch")
        self.close_button = QPushButton(self)
        self.close_button.setObjectName("close")
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.cancel_button)
        buttons.addWidget(self.close_button)
        buttons.addWidget(self.launch_button)
        layout = QVBoxLayout(self)
        layout.addWidget(self.heading)
        layout.addLayout(form)
        layout.addWidget(self.cost)
        layout.addWidget(self.steps_box)
        layout.addWidget(self.log)
        layout.addLayout(buttons)

        self.runner = TaskRunner(self, button=self.launch_button, cancel_button=self.cancel_button)
        self.runner.failed.connect(self._failed)
        self.runner.finished.connect(self._finished)
        self.detect_runner = TaskRunner(self, button=self.detect_button, show_dialog=False)
        self.detect_runner.failed.connect(self._detect_failed)
        self.launch_button.clicked.connect(self.start)
        self.close_button.clicked.connect(self.close)
        self.detect_button.clicked.connect(self.detect)
        self.spot.toggled.connect(self._update_cost)
        self.max_price.valueChanged.connect(self._update_cost)
        self.budget.valueChanged.connect(self._update_guard)
        self.on_budget.currentIndexChanged.connect(self._update_guard)
        self.spot.toggled.connect(self._update_guard)
        self.retranslate()
        self._update_cost()
        if detect:
            self.detect()

    def retranslate(self) -> None:
        o = self.offer
        self.setWindowTitle(self.tr("Launch {type}").format(type=o.instance_type))
        self.heading.setText(self.tr("{type}: {count} × {gpu}, {provider} {region}").format(
            type=o.instance_type, count=o.gpu_count, gpu=o.gpu.name,
            provider=accounts.title(o.provider), region=o.region))
        self.labels[0].setText(self.tr("Spot (cheaper, can be reclaimed)"))
        self.labels[1].setText(self.tr("Maximum spot price per hour"))
        self.labels[2].setText(self.tr("Disk"))
        self.labels[3].setText(self.tr("SSH allowed only from"))
        self.labels[4].setText(self.tr("If refused, also try"))
        self.budget_labels[0].setText(self.tr("Budget for this machine (0: none)"))
        self.budget_labels[1].setText(self.tr("At the budget"))
        self.on_budget.setItemText(0, self.tr("stop"))
        self.on_budget.setItemText(1, self.tr("terminate"))
        self._update_guard()
        self.detect_button.setText(self.tr("Detect"))
        self.allow_from.setPlaceholderText(self.tr("your public address, e.g. 203.0.113.7/32"))
        self.steps_box.setTitle(self.tr("Progress"))
        for step in STEPS:
            self.step_labels[step].setText(QCoreApplication.translate("Launcher",
                                                                      STEP_TITLES[step]))
        self.cancel_button.setText(self.tr("Cancel launch"))
        self.close_button.setText(self.tr("Close"))
        self._update_cost()


    def price(self) -> float:
        """USD/hour for the plan; 0.0 when none is known (the launcher then asks the cloud)."""
        spot = self.spot.isChecked() and self.offer.spot_price is not None
        price = self.offer.spot_price if spot else self.offer.ondemand_price
        return float(price or 0.0)

    def _update_cost(self) -> None:
        spot = self.spot.isChecked()
        self.max_price.setEnabled(spot)
        if self.price() > 0:
            rate = self.money(self.price(), 3)
            self.launch_button.setText(self.tr("Launch (about {rate}/h)").format(rate=rate))
            text = self.tr("Billing starts when the machine runs: about {rate} per hour until "
                           "you stop or terminate it.").format(rate=rate)
        else:  # no bundled price: never shown as free
            self.launch_button.setText(self.tr("Launch (price not known yet)"))
            text = self.tr("gpudesk has no price for this machine: the cloud publishes none "
                           "to bundle. Before launching it asks the cloud for the pay-as-you-go "
                           "price and counts the spend and the budget from that answer (no "
                           "answer, no machine); Tools → Refresh prices from my clouds shows it "
                           "here first.")
        if spot:
            text += " " + self.tr("Spot prices change and the cloud may reclaim the machine "
                                  "with two minutes' notice.")
            if self.offer.spot_price is None and self.price() > 0:  # never a guessed fraction
                text += " " + self.tr("No spot price is known yet: the estimate is the "
                                      "on-demand price, the most it bills without a maximum.")
        if self.offer.provider == "tencent" and spot:
            text += " " + self.tr("Tencent's maximum price is in CNY per hour.")
        if self.offer.provider == "aliyun" and spot:
            text += " " + self.tr("Alibaba Cloud's maximum price is in CNY per hour; without "
                                  "one the machine pays the market price (SpotAsPriceGo), never "
                                  "more than pay-as-you-go.")
        self.cost.setText(text)

    def _update_guard(self) -> None:
        """Who enforces the budget on this machine, in the cloud's own terms."""
        o = self.offer
        budget = self.budget.value() or None
        action = str(self.on_budget.currentData() or "stop")
        g = guards.plan(o.provider, budget, action, self.price(), 0.0, time.time())
        m = Machine(id="", provider=o.provider, disk_gb=float(self.disk.value()),
                    market="spot" if self.spot.isChecked() else "on-demand")
        self.guard_text.setText(" ".join(
            format_template(guards.CONTEXT, t, v) for t, v in guards.sentences(m, g)))

    # ------------------------------------------------------------------ address

    def detect(self) -> None:
        self.detect_runner.run_blocking(detect_public_address, on_success=self.allow_from.setText)

    def _detect_failed(self, message: str) -> None:
        if not self.allow_from.text():
            self.log.setText(message)

    # ------------------------------------------------------------------ launch

    def plan(self) -> LaunchPlan:
        o = self.offer
        spot = self.spot.isChecked()
        fallbacks = tuple(self.fallbacks.item(i).text() for i in range(self.fallbacks.count())
                          if self.fallbacks.item(i).checkState() == Qt.CheckState.Checked)
        return LaunchPlan(
            provider=o.provider if o.provider in ("aws", "aliyun") else "tencent",  # type: ignore[arg-type]
            instance_type=o.instance_type,
            region=o.region, market="spot" if spot else "on-demand",
            max_price=(self.max_price.value() or None) if spot else None,
            disk_gb=self.disk.value(), allow_from=self.allow_from.text().strip(),
            fallback_regions=fallbacks, gpu=o.gpu.name, gpus=o.gpu_count,
            price_per_hour=self.price(), budget=self.budget.value() or None,
            on_budget=str(self.on_budget.currentData() or "stop"))

    def start(self) -> None:
        try:
            if not self.allow_from.text().strip():
                raise ProviderError("invalid", MSG_BAD_CIDR, cidr="")
            self.allow_from.setText(single_address(self.allow_from.text()))
        except ProviderError as exc:
            self.log.setText(error_text(exc)[0])
            self.allow_from.setFocus()
            return
        for step in STEPS:
            self.step_marks[step].setText(MARKS[""])
        self.log.clear()
        self._refusals = []
        for w in (self.spot, self.max_price, self.disk, self.allow_from, self.fallbacks,
                  self.detect_button):
            w.setEnabled(False)
        self.runner.run(self.launch_fn(self.plan(), self.on_progress), on_success=self._done,
                        title=self.tr("The machine was not launched"))

    def on_progress(self, p: Progress) -> None:
        self.ledger_id = p.ledger_id
        self.step_marks[p.step].setText(MARKS[p.status])
        if p.error is not None:
            line = error_text(p.error)[0]
            if p.status == "retry":
                self._refusals.append(line)
                line = self.tr("Refused, trying the next place: {why}").format(why=line)
            self.log.setText(line)

    def _done(self, result: LaunchResult) -> None:
        self.outcome = result
        m = result.machine
        self.log.setText(self.tr("{cloud_id} is running at {address}. It is on the Instances "
                                 "page; connect with ssh {user}@{address}.").format(
            cloud_id=m.cloud_id, address=m.public_ip, user=m.ssh_user))
        self.launched.emit(m.id)

    def _failed(self, message: str) -> None:
        self.log.setText(message)

    def _finished(self, ok: bool) -> None:
        if not ok and not self.runner.last_error and self.ledger_id:
            self.log.setText(self.tr("Cancelled. Anything already requested was terminated; "
                                     "the Instances page shows its state."))
        self.launch_button.setEnabled(self.outcome is None)
        for w in (self.spot, self.disk, self.allow_from, self.fallbacks, self.detect_button):
            w.setEnabled(self.outcome is None)
        self._update_cost()
        self.ended.emit()

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt API
        if self.runner.busy:
            self.runner.cancel()  # terminates what was requested; the ledger keeps the record
        super().closeEvent(event)
