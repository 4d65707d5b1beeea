"""Launch the chosen offer: the choices that cost money, then each step as it happens.

Pressing Launch is the confirmation (the button names the hourly price).
Cancel is always safe: the launcher terminates a machine that was already
requested, and the ledger has it either way. Closing the dialog while it launches
asks first: keep launching in the background, or cancel the launch. A machine that
was made but is not ready in time (still starting, SSH silent) is said to run and
bill, with a choice: wait longer, open it on the Instances page, or terminate it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable
from collections.abc import Callable

from PySide6.QtCore import QCoreApplication
from PySide6.QtCore import Qt
from PySide6.QtCore import Signal
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import QAbstractButton
from PySide6.QtWidgets import QCheckBox
from PySide6.QtWidgets import QComboBox
from PySide6.QtWidgets import QDialog
from PySide6.QtWidgets import QDoubleSpinBox
from PySide6.QtWidgets import QFormLayout
from PySide6.QtWidgets import QGridLayout
from PySide6.QtWidgets import QGroupBox
from PySide6.QtWidgets import QHBoxLayout
from PySide6.QtWidgets import QLabel
from PySide6.QtWidgets import QLineEdit
from PySide6.QtWidgets import QListWidget
from PySide6.QtWidgets import QListWidgetItem
from PySide6.QtWidgets import QMessageBox
from PySide6.QtWidgets import QPushButton
from PySide6.QtWidgets import QSpinBox
from PySide6.QtWidgets import QVBoxLayout
from PySide6.QtWidgets import QWidget

from gpudesk.services.cloud import accounts
from gpudesk.services.cloud import guard as guards
from gpudesk.services.cloud import image_choice
from gpudesk.services.cloud import instance_role
from gpudesk.services.cloud import keep_alive_launch
from gpudesk.services.cloud.catalog import Catalog
from gpudesk.services.cloud.catalog import Offer
from gpudesk.services.cloud.catalog import provider_title
from gpudesk.services.cloud.launcher import MSG_NO_SSH
from gpudesk.services.cloud.launcher import MSG_NOT_RUNNING
from gpudesk.services.cloud.launcher import MSG_QUOTE_DIFFERS
from gpudesk.services.cloud.launcher import MSG_QUOTE_NEW
from gpudesk.services.cloud.launcher import STEP_TITLES
from gpudesk.services.cloud.launcher import STEPS
from gpudesk.services.cloud.launcher import LaunchPlan
from gpudesk.services.cloud.launcher import LaunchResult
from gpudesk.services.cloud.launcher import Progress
from gpudesk.services.cloud.launcher import quote_differs
from gpudesk.services.cloud.providers.base import MSG_BAD_CIDR
from gpudesk.services.cloud.providers.base import ProviderError
from gpudesk.services.cloud.providers.base import single_address
from gpudesk.services.cloud.public_ip import detect_public_address
from gpudesk.services.money import default_budget
from gpudesk.services.money.ledger import Machine
from gpudesk.services.plan import budget_chance
from gpudesk.services.plan import disk_plan
from gpudesk.services.runs.machine_access import MSG_OTHER_CLOUD
from gpudesk.services.storage.errors import StorageError
from gpudesk.services.storage.store_check import StoreRefused
from gpudesk.services.storage.uri import CLOUD_SCHEMES
from gpudesk.services.storage.uri import parse_uri
from gpudesk.ui.widgets.confirm import open_question
from gpudesk.ui.widgets.fitting_body import FittingBody
from gpudesk.ui.widgets.guard_words import guard_said
from gpudesk.ui.widgets.money import DISPLAY
from gpudesk.ui.widgets.money import Money
from gpudesk.ui.widgets.retranslate import Retranslating
from gpudesk.ui.widgets.said_text import said_text
from gpudesk.ui.widgets.task_runner import TaskRunner
from gpudesk.ui.widgets.task_runner import error_text
from gpudesk.ui.widgets.task_runner import format_template
from gpudesk.ui.widgets.task_runner import show_error

LaunchFn = Callable[[LaunchPlan, Callable[[Progress], None]], Awaitable[LaunchResult]]
# wait longer for a launched machine that is not ready yet (ledger id): Launcher.wait_ready
WaitFn = Callable[[str, Callable[[Progress], None]], Awaitable[LaunchResult]]
TerminateFn = Callable[[str], Awaitable[object]]  # terminate a ledger machine
NOT_READY = (MSG_NO_SSH, MSG_NOT_RUNNING)  # made, running or starting, billing: not "not launched"
MARKS = {"": "○", "started": "…", "done": "✓", "failed": "✗", "retry": "↻"}
STORE_CHOICES = ("auto", "none", "uri")  # the "Run data" choices (LaunchPlan.store)
STORE_STYLE = """
QLineEdit#storeUri[invalid="true"], QLineEdit#imageId[invalid="true"] {
    border: 2px solid #d32f2f; }
QLabel#imageNote[error="true"] { color: #d32f2f; }
QLabel#storeError { color: #d32f2f; }
QLabel#guardText[risk="true"] { color: #d32f2f; }
"""


class LaunchDialog(Retranslating, QDialog):
    launched = Signal(str)  # ledger id of the running machine
    ended = Signal()  # the launch finished, failed or was cancelled
    # the launcher wrote the machine's row (made, running, failed...): the Instances page
    # shows it at once, also while the launch waits for SSH in the background (issue 31)
    ledger_changed = Signal(str)

    def __init__(self, offer: Offer, catalog: Catalog, launch: LaunchFn, *,
                 spot: bool = False, money: Money | None = None, detect: bool = True,
                 budget: float = 0.0, budget_hours: float = default_budget.DEFAULT_HOURS,
                 on_budget: str = "stop",
                 wait_ready: WaitFn | None = None, terminate: TerminateFn | None = None,
                 open_instances: Callable[[str], None] | None = None,
                 job: budget_chance.SpotJobInputs | None = None,
                 disk_need: disk_plan.DiskNeed | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("launchDialog")
        self.offer = offer
        self.job = job  # the Plan page's job on this offer: the budget's chance (issue 33)
        # the Plan page's dataset + checkpoints + environment: the disk's default, and a
        # smaller disk refused before anything is asked (issue 32)
        self.disk_need = disk_need
        self.launch_fn = launch
        self.wait_fn = wait_ready
        self.terminate_fn = terminate
        self.open_instances = open_instances
        self.money = money or DISPLAY
        self.outcome: LaunchResult | None = None
        self.ledger_id = ""
        self._refusals: list[str] = []
        self.made = False  # a machine was made and may bill although the launch did not finish
        self.in_background = False  # closed with "keep launching in the background"
        self._close_when_done = False  # closed with "cancel the launch"
        self._doing = "launch"  # what the runner does now: launch, wait or terminate
        self._instance_made = False  # this launch's machine exists (and bills)
        self._refusal_shown = ""  # the failed launch's words in the log, while still shown
        self.question: QMessageBox | None = None  # the open "close while launching?" box
        self.not_ready_box: QMessageBox | None = None
        self.failure_box: QMessageBox | None = None
        self.quote: guards.Quote | None = None  # the cloud's price, once it quoted (issue 31)
        self.quote_said = ""  # what the dialog said of a quote that is not the estimate
        self._address_said = ""  # "could not find this computer's address", while shown

        self.heading = QLabel(self)
        self.heading.setObjectName("launchHeading")
        self.heading.setWordWrap(True)
        self.spot = QCheckBox(self)
        self.spot.setObjectName("spot")
        self.spot.setChecked(spot)  # no spot quote yet: the cloud still sells spot
        # issue 23: the cloud's own group replaces a reclaimed spot machine (docs/recovery.md)
        self.keep_alive = QCheckBox(self)
        self.keep_alive.setObjectName("keepAlive")
        self.max_price = QDoubleSpinBox(self)
        self.max_price.setObjectName("maxPrice")
        self.max_price.setDecimals(3)
        self.max_price.setRange(0.0, 1000.0)
        self.max_price.setSingleStep(0.05)
        self.max_price.setSpecialValueText("—")  # 0: no cap beyond the on-demand price
        self.disk = QSpinBox(self)
        self.disk.setObjectName("diskGb")
        self.disk.setRange(30, 4000)
        self.disk.setValue(100 if disk_need is None else min(disk_need.disk_gb, 4000))
        self.disk.setSuffix(" GB")
        self.disk_said = QLabel(self)
        self.disk_said.setObjectName("diskNeed")
        self.disk_said.setWordWrap(True)
        self.disk_said.setVisible(disk_need is not None)
        self.allow_from = QLineEdit(self)
        self.allow_from.setObjectName("allowFrom")
        self.image = QLineEdit(self)  # empty: the provider's GPU deep-learning image
        self.image.setObjectName("imageId")
        self.image.setClearButtonEnabled(True)
        # what a typed image means before the launch; a failed automatic image, here too
        self.image_note = QLabel(self)
        self.image_note.setObjectName("imageNote")
        self.image_note.setWordWrap(True)
        self.image_note.setVisible(False)
        self._image_failed = ""  # the automatic image's refusal, shown under the field
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
        # a spot job's expected cost and the chance its budget runs out first (issue 33)
        self.spot_chance = QLabel(self)
        self.spot_chance.setObjectName("spotChance")
        self.spot_chance.setWordWrap(True)
        self.spot_chance.setVisible(False)
        # the budget from the expected cost: its 90th percentile (issue 33)
        self.budget_from_expected = QPushButton(self)
        self.budget_from_expected.setObjectName("budgetFromExpected")
        self.budget_from_expected.setVisible(False)
        self._expected_high = 0.0  # the job's 90th-percentile cost in the field's currency
        # the machine's budget (USD, like every ledger amount) and who enforces it: never
        # none unless "No budget" is ticked (issue 29). It starts from Preferences' default
        # (``budget`` USD, else ``budget_hours`` of the price); 0 in the field is the hours
        # of the price the cloud quotes at launch.
        self.default = default_budget.DefaultBudget(max(0.0, budget), budget_hours
                                                    if budget_hours > 0 else
                                                    default_budget.DEFAULT_HOURS)
        self.budget = QDoubleSpinBox(self)
        self.budget.setObjectName("budget")
        self.budget.setDecimals(2)
        self.budget.setRange(0.0, 1_000_000.0)
        self.budget.setSingleStep(10.0)
        self.budget.setPrefix(f"{self.money.symbol} ")  # the window's currency (issue 31)
        self._default_shown = 0.0  # the default the field shows, until the user changes it
        self._own_amount = False  # the user changed the amount: the default no longer moves it
        self.no_budget = QCheckBox(self)
        self.no_budget.setObjectName("noBudget")
        # Tencent/Alibaba Cloud "stop" with no role: refused unless accepted on purpose (29)
        self.app_stop_only = QCheckBox(self)
        self.app_stop_only.setObjectName("appStopOnly")
        self.budget_note = QLabel(self)
        self.budget_note.setObjectName("budgetNote")
        self.budget_note.setWordWrap(True)
        self.on_budget = QComboBox(self)
        self.on_budget.setObjectName("onBudget")
        for action in guards.ACTIONS:
            self.on_budget.addItem("", action)
        self.on_budget.setCurrentIndex(max(0, self.on_budget.findData(on_budget)))
        self.guard_text = QLabel(self)
        self.guard_text.setObjectName("guardText")
        self.guard_text.setWordWrap(True)
        # where the machine's runs keep checkpoints, logs and outputs (issue 22)
        self.store_choice = QComboBox(self)
        self.store_choice.setObjectName("storeChoice")
        for choice in STORE_CHOICES:
            self.store_choice.addItem("", choice)
        self.store_uri = QLineEdit(self)
        self.store_uri.setObjectName("storeUri")
        self.store_uri.setClearButtonEnabled(True)
        self.store_uri.setVisible(False)
        self.store_error = QLabel(self)
        self.store_error.setObjectName("storeError")
        self.store_error.setWordWrap(True)
        self.store_error.setVisible(False)
        self.store_label = QLabel(self)
        self.setStyleSheet(STORE_STYLE)
        # after a launch: what stays unprotected when the machine got no role to stop itself
        self.role_text = QLabel(self)
        self.role_text.setObjectName("roleText")
        self.role_text.setWordWrap(True)
        self.role_text.setVisible(False)
        self._role_said: list[tuple[str, dict[str, object]]] = []
        self.budget_labels = [QLabel(self), QLabel(self)]
        self.labels = [QLabel(self) for _ in range(6)]
        form = QFormLayout()
        form.addRow(self.labels[0], self.spot)
        form.addRow("", self.keep_alive)
        form.addRow(self.labels[1], self.max_price)
        form.addRow(self.labels[2], self.disk)
        form.addRow("", self.disk_said)
        row = QHBoxLayout()
        row.addWidget(self.allow_from, 1)
        row.addWidget(self.detect_button)
        form.addRow(self.labels[3], row)
        form.addRow(self.labels[4], self.fallbacks)
        form.addRow(self.labels[5], self.image)
        form.addRow("", self.image_note)
        form.addRow(self.budget_labels[0], self.budget)
        form.addRow("", self.budget_note)
        form.addRow("", self.no_budget)
        form.addRow(self.budget_labels[1], self.on_budget)
        form.addRow("", self.app_stop_only)
        form.addRow(self.guard_text)
        store_box = QVBoxLayout()
        store_box.addWidget(self.store_choice)
        store_box.addWidget(self.store_uri)
        store_box.addWidget(self.store_error)
        form.addRow(self.store_label, store_box)

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
        # a guard text that grows (a budget typed in, the group's words, Chinese) makes the
        # dialog taller up to the screen, and scrolls beyond: never cut off (issue 31)
        content = QVBoxLayout()
        content.addWidget(self.heading)
        content.addLayout(form)
        content.addWidget(self.cost)
        content.addWidget(self.spot_chance)
        content.addWidget(self.budget_from_expected, 0, Qt.AlignmentFlag.AlignLeft)
        content.addWidget(self.steps_box)
        content.addWidget(self.log)
        content.addWidget(self.role_text)
        self.body = FittingBody(content, self)
        layout = QVBoxLayout(self)
        layout.addWidget(self.body, 1)
        layout.addLayout(buttons)

        # failures are explained here (a machine that runs is not "not launched")
        self.runner = TaskRunner(self, button=self.launch_button, cancel_button=self.cancel_button,
                                 show_dialog=False)
        self.runner.failed.connect(self._failed)
        self.runner.finished.connect(self._finished)
        self.detect_runner = TaskRunner(self, button=self.detect_button, show_dialog=False)
        self.detect_runner.failed.connect(self._detect_failed)
        self.launch_button.clicked.connect(self.start)
        self.close_button.clicked.connect(self.close)
        self.detect_button.clicked.connect(self.detect)
        self.budget_from_expected.clicked.connect(self._budget_expected)
        self.allow_from.textChanged.connect(self._address_typed)
        self._follow_default()
        self.spot.toggled.connect(self._update_cost)
        self.spot.toggled.connect(self._follow_default)
        self.max_price.valueChanged.connect(self._update_cost)
        self.budget.valueChanged.connect(self._amount_changed)
        self.no_budget.toggled.connect(self._update_guard)
        self.on_budget.currentIndexChanged.connect(self._show_app_stop_only)
        self.on_budget.currentIndexChanged.connect(self._update_guard)
        self.spot.toggled.connect(self._update_guard)
        self.keep_alive.toggled.connect(self._update_guard)
        self.disk.valueChanged.connect(self._update_guard)
        for changed in (self.spot.toggled, self.keep_alive.toggled, self.no_budget.toggled,
                        self.budget.valueChanged, self.on_budget.currentIndexChanged,
                        self.disk.valueChanged):
            changed.connect(self._forget_refusal)
        self.store_choice.currentIndexChanged.connect(self._check_store)
        self.store_uri.textChanged.connect(self._check_store)
        self.image.textChanged.connect(self._image_typed)
        self.keep_alive.toggled.connect(self._show_image_note)
        self.retranslate()
        self._show_app_stop_only()
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
        self.keep_alive.setText(self.tr("Recover by itself"))
        self.keep_alive.setToolTip(self.tr(
            "The cloud's own group of one machine starts another when this one is reclaimed; "
            "it resumes the run from the bucket even with gpudesk closed, and the group ends "
            "itself when the budget runs out. Needs spot and a budget."))
        self.labels[2].setText(self.tr("Disk"))
        if self.disk_need is not None:
            self.disk_said.setText(said_text(self.disk_need.said()))
        self.labels[3].setText(self.tr("SSH allowed only from"))
        self.labels[4].setText(self.tr("If refused, also try"))
        self.labels[5].setText(self.tr("Image"))
        # the id form of the chosen provider's images (Alibaba Cloud: ubuntu_…_alibase_….vhd
        # or m-…; AWS ami-…; Tencent img-…), issue 31 item 5
        provider = o.provider if o.provider in image_choice.TOOLTIPS else "tencent"
        self.image.setPlaceholderText(QCoreApplication.translate(
            "Launcher", image_choice.PLACEHOLDERS[provider]))
        self.image.setToolTip(QCoreApplication.translate(
            "Launcher", image_choice.TOOLTIPS[provider]).format(region=o.region))
        self._show_image_note()
        self.budget_labels[0].setText(self.tr("Budget for this machine"))
        self.budget.setSpecialValueText(self.tr("{hours} h × its price").format(
            hours=f"{self.default.hours:g}"))
        self.no_budget.setText(self.tr("No budget (nothing stops the bill but you)"))
        self.no_budget.setToolTip(self.tr(
            "Launch without a budget: no agent, cloud timer or gpudesk stops this machine "
            "for its spend. Only for a machine you watch yourself."))
        self.budget_labels[1].setText(self.tr("At the budget"))
        self.app_stop_only.setText(self.tr(
            "If {cloud} refuses gpudesk a role, launch anyway: only the open app stops it")
            .format(cloud=provider_title(self.offer.provider)))
        self.app_stop_only.setToolTip(self.tr(
            "Without its role, a stop from inside the machine keeps charging: with gpudesk "
            "closed nothing stops the bill. Unticked, such a launch is refused before "
            "anything bills."))
        self.on_budget.setItemText(0, self.tr("stop"))
        self.on_budget.setItemText(1, self.tr("terminate"))
        self.store_label.setText(self.tr("Run data (checkpoints, logs, outputs)"))
        self.store_choice.setItemText(0, self.tr("The account's gpudesk bucket (auto)"))
        self.store_choice.setItemText(1, self.tr("No bucket (copies on this computer only)"))
        self.store_choice.setItemText(2, self.tr("Another bucket…"))
        self.store_choice.setToolTip(self.tr(
            "Where the machine's agent uploads each finished checkpoint, the log and the "
            "outputs, so they outlive the machine. auto: a bucket of this account in the "
            "machine's region, made on first use."))
        scheme = CLOUD_SCHEMES.get(o.provider, "s3")
        example = "bucket-1250000000" if scheme == "cos" else "bucket"
        self.store_uri.setPlaceholderText(self.tr("{scheme}://{bucket}/prefix").format(
            scheme=scheme, bucket=example))
        self._check_store()
        self._show_role()
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
        self.keep_alive.setEnabled(spot and self.spot.isEnabled())
        if not spot:
            self.keep_alive.setChecked(False)
        if self.quote is not None:  # the cloud's own price, asked at this launch
            rate = self.money(self.quote.usd, 3)
            self.launch_button.setText(self.tr("Launch ({rate}/h, the cloud's quote)").format(
                rate=rate))
            text = self.tr("Billing starts when the machine runs: {rate} per hour, as {cloud} "
                           "quoted, until you stop or terminate it.").format(
                rate=rate, cloud=accounts.title(self.offer.provider))
        elif self.price() > 0:
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

    # ------------------------------------------------------------------ budget

    def budget_usd(self) -> float | None:
        """``LaunchPlan.budget``: the amount in the field; None with "No budget" ticked, or
        with 0 in the field (then :meth:`budget_hours` of the cloud's quote)."""
        if self.no_budget.isChecked():
            return None
        return self._usd(self.budget.value()) or None

    def _usd(self, shown: float) -> float:
        """The field's amount (in the window's currency) in USD, the ledger's."""
        if self.money.currency == "CNY" and self.money.rate > 0:
            return round(shown / self.money.rate, 6)
        return shown

    def _shown(self, usd: float) -> float:
        """A USD amount as the field shows it (in the window's currency)."""
        return usd * self.money.rate if self.money.currency == "CNY" else usd

    def budget_hours(self) -> float:
        """``LaunchPlan.budget_hours``: the default's hours where the field says them (0),
        else none; never both none and no hours unless "No budget" is ticked."""
        if self.no_budget.isChecked() or self.budget.value() > 0:
            return 0.0
        return self.default.hours

    def _follow_default(self) -> None:
        """The field shows Preferences' default for the price now (spot or on-demand) until
        the user changes the amount."""
        if self._own_amount:
            return
        self._default_shown = round(self._shown(self.default.amount(self.price()) or 0.0), 2)
        self.budget.blockSignals(True)
        self.budget.setValue(self._default_shown)
        self.budget.blockSignals(False)
        self._update_guard()

    def _amount_changed(self) -> None:
        self._own_amount = True
        self._update_guard()

    def _budget_said(self) -> str:
        """The note under the field: where the default comes from, in the user's currency;
        empty once the user typed another amount."""
        value = self.budget.value()
        if self.no_budget.isChecked() or (self._own_amount and value > 0):
            return ""
        price = self.price()
        if self.default.fixed and value > 0:
            return format_template("Budget", default_budget.MSG_DEFAULT_FIXED,
                                   {"budget": self.money(self._usd(value), 2)})
        if value > 0 and price > 0:
            return format_template("Budget", default_budget.MSG_DEFAULT_HOURS,
                                   {"budget": self.money(self._usd(value), 2),
                                    "hours": f"{self.default.hours:g}",
                                    "price": self.money(price, 3)})
        return format_template("Budget", default_budget.MSG_DEFAULT_QUOTED,
                               {"hours": f"{self.default.hours:g}"})

    def _update_guard(self) -> None:
        """Who enforces the budget on this machine, in the cloud's own terms; with "No
        budget" ticked, the risk in red."""
        o = self.offer
        none = self.no_budget.isChecked()
        budget = self.budget_usd()
        # 0 in the field: the default's hours of the price (known here, or quoted at launch)
        hours_only = budget is None and not none
        # the price the cloud's cap counts from: its quote once asked (issue 31), before it
        # the estimate; with neither, the cloud's timer is said to come with its quote
        q = self.quote
        timer_price = q.usd if q is not None else self.price()
        if hours_only and timer_price > 0:
            budget = self.default.hours * timer_price
        action = str(self.on_budget.currentData() or "stop")
        market = "spot" if self.spot.isChecked() else "on-demand"
        disk_gb = float(self.disk.value())
        # the same plan the launch makes: the disk bills with the compute, and a Tencent
        # spot "stop" is a terminate with the cloud's timer
        g = guards.plan(o.provider, budget, action, timer_price, 0.0, time.time(),
                        market=market, disk_gb=disk_gb, region=o.region, quote=q,
                        cny_per_usd=self.money.rate, role=True)  # named at creation
        m = Machine(id="", provider=o.provider, disk_gb=disk_gb, market=market,
                    region=o.region, price_per_hour=timer_price)
        kept = self.keep_alive.isChecked() and market == "spot"
        self.budget.setEnabled(not none and self.spot.isEnabled())
        self.on_budget.setEnabled(not kept and not none and self.spot.isEnabled())
        self.budget_note.setText(self._budget_said())
        self.budget_note.setVisible(bool(self.budget_note.text()))
        quoted = self.tr("{hours} h × its price").format(hours=f"{self.default.hours:g}")
        if kept and (budget or hours_only):
            self.guard_text.setText(format_template(
                guards.CONTEXT, guards.MSG_GROUP_GUARD,
                {"budget": self.money(budget, 2) if budget else quoted}))
        elif kept:
            self.guard_text.setText(format_template("KeepAlive",
                                                    keep_alive_launch.MSG_NEEDS_BUDGET, {}))
        elif hours_only and budget is None:  # no price before the cloud's quote
            self.guard_text.setText(self.tr(
                "The budget is {hours} hours of the price the cloud quotes before the "
                "launch; the Instances page says who enforces it once the machine runs.")
                .format(hours=f"{self.default.hours:g}"))
        else:
            self.guard_text.setText(guard_said(guards.sentences(m, g), self.money))
        self._mark_risk(none)
        self._show_chance(budget if not none else None, timer_price, kept)

    def _show_chance(self, budget: float | None, price: float, group: bool) -> None:
        """On spot with the Plan page's job: its expected cost and range, and the chance
        that the budget (a kept-alive group: its own end) runs out before it finishes."""
        o = self.offer
        if self.job is None or not self.spot.isChecked() or not budget or price <= 0:
            self.spot_chance.setVisible(False)
            self.spot_chance.clear()
            self.budget_from_expected.setVisible(False)
            return
        disk = guards.disk_per_hour(o.provider, o.region, float(self.disk.value()), "USD",
                                    self.money.rate)
        chance = budget_chance.budget_chance(self.job, price + disk, budget)
        self.spot_chance.setText(" ".join(
            format_template("SpotRates", template, values) for template, values in
            budget_chance.sentences(chance, lambda usd: self.money(usd, 2), group=group)))
        self.spot_chance.setVisible(True)
        outlook = chance.risk.outlook
        finite = outlook is not None and outlook.finite
        high = outlook.high_cost if outlook is not None and finite else 0.0
        # in the field's currency, rounded up to the cent: never just short of it
        self._expected_high = math.ceil(self._shown(high) * 100) / 100
        self.budget_from_expected.setText(self.tr(
            "Budget {high}: enough for the job in at least 9 cases out of 10").format(
            high=self.money(self._usd(self._expected_high), 2)))
        self.budget_from_expected.setVisible(finite)
        self.budget_from_expected.setEnabled(self.budget.isEnabled())

    def _budget_expected(self) -> None:
        """The budget field to the job's 90th-percentile cost (its expected range's top)."""
        if self._expected_high > 0:
            self.budget.setValue(self._expected_high)

    def _forget_refusal(self) -> None:
        """A failed launch's reason ("Recover by itself needs a budget") goes once the
        choices it was about change: never a stale refusal next to a fixed form (issue 31)."""
        if self._refusal_shown and self.log.text() == self._refusal_shown \
                and not self.runner.busy:
            self.log.clear()
        self._refusal_shown = ""

    def _mark_risk(self, risk: bool) -> None:
        """The guard's words in red while nothing but the user stops the bill."""
        if (self.guard_text.property("risk") == "true") == risk:
            return
        self.guard_text.setProperty("risk", "true" if risk else "false")
        self.guard_text.style().unpolish(self.guard_text)
        self.guard_text.style().polish(self.guard_text)

    # ------------------------------------------------------------------ run data

    def store_value(self) -> str:
        """``LaunchPlan.store``: "auto", "none" or the URI as ``parse_uri`` reads it; raises
        StorageError for a bad one, or a bucket on another cloud than the machine."""
        choice = str(self.store_choice.currentData() or "auto")
        if choice != "uri":
            return choice
        uri = parse_uri(self.store_uri.text())
        if uri.cloud != self.offer.provider:
            raise StorageError(MSG_OTHER_CLOUD, uri=str(uri),
                               cloud=accounts.title(self.offer.provider))
        return str(uri)

    def store_problem(self) -> str:
        """The store field's problem in words; "" when it is fine."""
        try:
            self.store_value()
        except StorageError as exc:
            return error_text(exc)[0]
        return ""

    def _check_store(self) -> None:
        """Checked as it is typed: a red field with the reason, and no Launch while bad."""
        other = self.store_choice.currentData() == "uri"
        self.store_uri.setVisible(other)
        problem = self.store_problem() if other else ""
        bad = bool(problem)
        if (self.store_uri.property("invalid") == "true") != bad:
            self.store_uri.setProperty("invalid", "true" if bad else "false")
            self.store_uri.style().unpolish(self.store_uri)
            self.store_uri.style().polish(self.store_uri)
        self.store_uri.setToolTip(problem)
        self.store_error.setText(problem)
        self.store_error.setVisible(bad)
        if not self.runner.busy and self.outcome is None and not self.made:
            self.launch_button.setEnabled(not bad)

    def _show_role(self) -> None:
        """The guard's words about the missing role of the machine just launched."""
        self.role_text.setText(guard_said(self._role_said, self.money))
        self.role_text.setVisible(bool(self._role_said))

    # ------------------------------------------------------------------ address

    def detect(self) -> None:
        self.detect_runner.run_blocking(detect_public_address, on_success=self.allow_from.setText)

    def _detect_failed(self, message: str) -> None:
        """The window's words, not the CLI's ("Pass --allow-from"): type the address in the
        field; the echo services' answers in the tooltip. Gone once an address is typed."""
        if self.allow_from.text():
            return
        error = self.detect_runner.last_error
        detail = str(getattr(error, "values", {}).get("detail", "")) if error else ""
        self._address_said = self.tr(
            "Could not find this computer's public address, so SSH cannot be limited to it: "
            "type your public address in \"SSH allowed only from\" (for example "
            "203.0.113.7).")
        self.log.setText(self._address_said)
        self.log.setToolTip(detail or message)
        self.allow_from.setFocus()

    def _address_typed(self) -> None:
        """An address typed after the detection failed: its complaint goes (issue 31)."""
        if self._address_said and self.log.text() == self._address_said \
                and self.allow_from.text().strip():
            self.log.clear()
            self.log.setToolTip("")
            self._address_said = ""

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
            image_id=self.image.text().strip(),
            price_per_hour=self.price(), budget=self.budget_usd(),
            budget_hours=self.budget_hours(),
            on_budget=str(self.on_budget.currentData() or "stop"), store=self.store_value(),
            keep_alive=spot and self.keep_alive.isChecked(),
            app_stop_only=self.app_stop_only.isVisibleTo(self)
            and self.app_stop_only.isChecked())

    def _show_app_stop_only(self) -> None:
        """Only where a stop needs the machine's role (Tencent/Alibaba Cloud "stop")."""
        self.app_stop_only.setVisible(instance_role.stop_needs_role(
            self.offer.provider, str(self.on_budget.currentData() or "stop"), 1.0))

    def start(self) -> None:
        if self.disk_need is not None:  # the CLI's words, before any call (issue 32)
            try:
                self.disk_need.check(self.disk.value())
            except disk_plan.DiskTooSmall as exc:
                self.log.setText(error_text(exc)[0])
                self._refusal_shown = self.log.text()
                self.disk.setFocus()
                return
        try:
            if not self.allow_from.text().strip():
                raise ProviderError("invalid", MSG_BAD_CIDR, cidr="")
            self.allow_from.setText(single_address(self.allow_from.text()))
        except ProviderError as exc:
            self.log.setText(error_text(exc)[0])
            self.allow_from.setFocus()
            return
        problem = self.store_problem()
        if problem:  # never launched with a bucket that cannot be right
            self.log.setText(problem)
            self.store_uri.setFocus()
            return
        self._role_said = []
        self._instance_made = False
        self._show_role()
        for step in STEPS:
            self.step_marks[step].setText(MARKS[""])
        self.log.clear()
        self.log.setToolTip("")
        self._refusals = []
        self._set_inputs(False)
        self.max_price.setEnabled(False)
        self._run("launch", self.launch_fn(self.plan(), self.on_progress), self._done)

    def _run(self, doing: str, work: Awaitable[object], on_success: Callable[..., None]) -> None:
        self._doing = doing
        self.runner.last_error = None
        self.runner.run(work, on_success=on_success)

    def _set_inputs(self, enabled: bool) -> None:
        for w in (self.spot, self.disk, self.allow_from, self.fallbacks, self.detect_button,
                  self.image, self.store_choice, self.store_uri, self.keep_alive,
                  self.no_budget, self.app_stop_only):
            w.setEnabled(enabled)
        if enabled:
            self.keep_alive.setEnabled(self.spot.isChecked())
        self._update_guard()  # the budget and its action follow the inputs

    def on_progress(self, p: Progress) -> None:
        self.ledger_id = p.ledger_id
        if p.quote is not None:  # the cloud's price, before anything is requested
            self._quoted(p)
            if p.ledger_id:
                self.ledger_changed.emit(p.ledger_id)
            return
        if p.step == "instance":  # the cloud made the machine: it bills from now on
            self._instance_made = p.status == "done"
        self.step_marks[p.step].setText(MARKS[p.status])
        if p.ledger_id:  # each step is reported after the ledger has it
            self.ledger_changed.emit(p.ledger_id)
        if p.error is not None:
            line = error_text(p.error)[0]
            if p.status == "retry":
                self._refusals.append(line)
                line = self.tr("Refused, trying the next place: {why}").format(why=line)
            self.log.setText(line)
        elif self._refusals and (p.step in ("running", "ssh") or
                                 (p.step == "instance" and p.status == "done")):
            # a place took it: the refusals before are history (in the tooltip), not news
            self.log.setText(self.tr("Going on where the cloud accepted it ({n} place(s) "
                                     "refused first).").format(n=len(self._refusals)))
            self.log.setToolTip("\n".join(self._refusals))

    def _quoted(self, p: Progress) -> None:
        """The cloud quoted its price: the cost line, the button and the guard's words now
        count from it, and a quote that is not the estimate is said before the machine is
        requested (issue 31)."""
        q = p.quote
        assert q is not None
        self.quote = q
        values = {"cloud": accounts.title(self.offer.provider), "quote": self.money(q.usd, 3),
                  "price": f"{q.price:g}", "currency": q.currency, "source": q.source,
                  "estimate": self.money(p.estimate, 3)}
        self._update_cost()
        self._update_guard()
        if quote_differs(q, p.estimate):
            said = QCoreApplication.translate(
                "Launcher", MSG_QUOTE_NEW if p.estimate <= 0 else MSG_QUOTE_DIFFERS).format(
                **values)
            self.quote_said = said
            self.log.setText(said)

    def _done(self, result: LaunchResult) -> None:
        self.outcome = result
        self.made = False
        m = result.machine
        text = self.tr("{cloud_id} is running at {address}. It is on the Instances page; "
                       "connect with ssh {user}@{address}.").format(
            cloud_id=m.cloud_id, address=m.public_ip, user=m.ssh_user)
        if self._refusals:
            text += " " + self.tr("{n} place(s) refused before it (hover for why).").format(
                n=len(self._refusals))
        self.log.setText(text)
        # no role to stop itself (refused, or not chosen): say what stays unprotected
        self._role_said = [(t, v) for t, v in guards.sentences(m, role_why=result.role_why)
                           if t == instance_role.MSG_NO_ROLE]
        self._show_role()
        self.launched.emit(m.id)

    def _image_typed(self) -> None:
        """An id typed after the automatic image failed: the field is no longer wrong."""
        if self._image_failed and self.image.text().strip():
            self._image_failed = ""
            self.image.setProperty("invalid", False)
            self.image.style().unpolish(self.image)
            self.image.style().polish(self.image)
        self._show_image_note()

    def _show_image_note(self) -> None:
        """Before the launch, what a typed image means: started as it is, with no driver
        check, or (Alibaba Cloud's plain public Ubuntu) the driver at first boot."""
        if self._image_failed:
            text, error = self._image_failed, True
        else:
            note = image_choice.image_note(self.offer.provider, self.image.text(),
                                           self.spot.isChecked() and self.keep_alive.isChecked())
            text = format_template("Launcher", note[0], note[1]) if note else ""
            error = False
        self.image_note.setText(text)
        self.image_note.setProperty("error", error)
        self.image_note.style().unpolish(self.image_note)
        self.image_note.style().polish(self.image_note)
        self.image_note.setVisible(bool(text))

    def _automatic_image_failed(self, error: BaseException) -> bool:
        """The provider found no GPU image of its own (the field was empty)."""
        if self.image.text().strip() or not isinstance(error, ProviderError) \
                or error.kind != "not-found":
            return False  # (Alibaba Cloud's "no public Ubuntu image…", the others' "no GPU
        # deep-learning image named …": the provider is not imported here, it is heavy)
        return "image" in f"{error.template} {error.values.get('what', '')}".lower()

    def _failed(self, message: str) -> None:
        self.log.setText(message)
        self._refusal_shown = message  # cleared once the inputs it was about change
        failed = self.runner.last_error
        if self._doing == "launch" and failed is not None \
                and self._automatic_image_failed(failed):
            # said where it is put right: under the Image field, which is marked and focused
            self._image_failed = QCoreApplication.translate(
                "Launcher", image_choice.MSG_AUTOMATIC_IMAGE_FAILED).format(why=message)
            self.log.setText(self._image_failed)
            self.image.setProperty("invalid", True)
            self.image.style().unpolish(self.image)
            self.image.style().polish(self.image)
            self._show_image_note()
            self.body.ensureWidgetVisible(self.image)  # focused once enabled (_finished)
        if self.in_background:
            self.show()  # a launch left in the background says here how it ended
        error = self.runner.last_error
        if error is None:
            return
        if isinstance(error, StoreRefused):  # the bucket was checked: said next to its field
            self.store_error.setText(message)
            self.store_error.setVisible(True)
        if self._doing != "terminate" and getattr(error, "template", None) in NOT_READY \
                and self.ledger_id:
            self.made = True  # it runs (or starts) and bills: never "not launched"
            self.ask_not_ready(error)
            return
        title = {"launch": self.tr("The machine was not launched"),
                 "wait": self.tr("The machine is still not ready"),
                 "terminate": self.tr("The machine was not terminated")}[self._doing]
        self.failure_box = show_error(self, title, error)

    def ask_not_ready(self, error: BaseException) -> QMessageBox:
        """The machine exists and bills, but did not get ready in time: say so, and offer
        to wait longer, open it on the Instances page, or terminate it."""
        ssh = getattr(error, "template", None) == MSG_NO_SSH
        rate = self.money(self.price(), 3) if self.price() > 0 else self.tr("its hourly price")
        box = QMessageBox(QMessageBox.Icon.Warning,
                          self.tr("The machine runs, but SSH does not answer yet") if ssh else
                          self.tr("The machine was made, but does not run yet"),
                          error_text(error)[0] + "\n\n" + self.tr(
                              "It bills about {rate} per hour until you terminate it. Wait "
                              "longer, see it on the Instances page, or terminate it.").format(
                              rate=rate),
                          QMessageBox.StandardButton.NoButton, self)
        box.setObjectName("launchNotReady")
        buttons: dict[QAbstractButton, Callable[[], None]] = {}
        if self.wait_fn is not None:
            wait = box.addButton(self.tr("Wait longer"), QMessageBox.ButtonRole.AcceptRole)
            wait.setObjectName("launchWaitLonger")
            buttons[wait] = self.wait_longer
            box.setDefaultButton(wait)
        if self.open_instances is not None:
            see = box.addButton(self.tr("Open Instances"), QMessageBox.ButtonRole.ActionRole)
            see.setObjectName("launchOpenInstances")
            buttons[see] = self.show_on_instances
        if self.terminate_fn is not None:
            end = box.addButton(self.tr("Terminate"), QMessageBox.ButtonRole.DestructiveRole)
            end.setObjectName("launchTerminate")
            buttons[end] = self.terminate_made
        box.addButton(QMessageBox.StandardButton.Close)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.buttonClicked.connect(lambda b: buttons.get(b, lambda: None)())
        box.setWindowModality(Qt.WindowModality.WindowModal)
        self.not_ready_box = box
        box.open()
        return box

    def wait_longer(self) -> None:
        if self.wait_fn is None or not self.ledger_id:
            return
        self.log.setText(self.tr("Waiting longer for the machine…"))
        self._run("wait", self.wait_fn(self.ledger_id, self.on_progress), self._done)

    def terminate_made(self) -> None:
        if self.terminate_fn is None or not self.ledger_id:
            return
        self.log.setText(self.tr("Terminating the machine…"))
        self._run("terminate", self.terminate_fn(self.ledger_id), self._terminated)

    def _terminated(self, _machine: object) -> None:
        self.made = False
        self.log.setText(self.tr("Terminated: billing stopped. You can launch again."))

    def show_on_instances(self) -> None:
        if self.open_instances is not None and self.ledger_id:
            ledger_id = self.ledger_id
            self.close()  # window-modal: the page behind can only be used without it
            self.open_instances(ledger_id)

    def _finished(self, ok: bool) -> None:
        if not ok and not self.runner.last_error and self.ledger_id:
            if self._doing == "launch":
                self.log.setText(self.tr("Cancelled. Anything already requested was "
                                         "terminated; the Instances page shows its state."))
            elif self.made:
                self.log.setText(self.tr("Stopped waiting. The machine still runs and bills; "
                                         "it is on the Instances page."))
        idle = self.outcome is None and not self.made
        # never a second billing machine by accident, nor one with a bad bucket
        self.launch_button.setEnabled(idle and not self.store_problem())
        self._set_inputs(idle)
        if idle and self._image_failed:
            self.image.setFocus()  # where the failed automatic image is put right
        self._update_cost()
        self.ended.emit()
        if self._close_when_done:
            self._close_when_done = False
            self.close()
        elif self.in_background:
            self.in_background = False
            if self.outcome is not None:
                self.close()  # it runs: the Instances page has it
            else:
                self.show()  # what went wrong, or what still bills, is said here

    # ------------------------------------------------------------------ closing

    def ask_close(self) -> QMessageBox:
        """Closing while it launches: keep launching in the background, or cancel it."""
        if self.question is not None:
            self.question.raise_()
            return self.question
        text = (self.tr("The machine already runs and bills; it is on the Instances page. "
                        "Keep launching in the background (the rest of its set-up goes on), "
                        "or stop the launch: the machine is terminated.")
                if self._instance_made else
                self.tr("Keep launching in the background? The machine appears on the "
                        "Instances page when it is made, and bills from then on. Or stop the "
                        "launch: anything already requested is terminated."))
        box = QMessageBox(QMessageBox.Icon.Question, self.tr("The launch is not finished"), text,
                          QMessageBox.StandardButton.Cancel, self)
        box.setObjectName("launchCloseQuestion")
        # not "Cancel" next to "Cancel the launch" (issue 31): each button says what it does
        box.button(QMessageBox.StandardButton.Cancel).setText(self.tr("Back to the launch"))
        keep = box.addButton(self.tr("Keep launching in the background"),
                             QMessageBox.ButtonRole.AcceptRole)
        keep.setObjectName("launchKeepBackground")
        stop = box.addButton(self.tr("Stop the launch and terminate"),
                             QMessageBox.ButtonRole.DestructiveRole)
        stop.setObjectName("launchCancelAndClose")

        def answered(button: QAbstractButton) -> None:
            self.question = None
            if not self.runner.busy:  # it ended while the question was open
                if button in (keep, stop):
                    self.close()
                return
            if button is keep:
                self.in_background = True
                self.hide()  # not closed: it says how the launch ended, and is then closed
            elif button is stop:
                self._close_when_done = True
                self.log.setText(self.tr("Cancelling: terminating anything already "
                                         "requested…"))
                self.runner.cancel()

        self.question = open_question(box, answered)
        return box

    def reject(self) -> None:  # Escape, or the window's close button (through closeEvent)
        if self.runner.busy:
            self.ask_close()
            return
        super().reject()

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt API
        if self.runner.busy:
            event.ignore()  # never an unasked cancel (or a crash): ask first
            self.ask_close()
            return
        self.detect_runner.cancel()
        super().closeEvent(event)
