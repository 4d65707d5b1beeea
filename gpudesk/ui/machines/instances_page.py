"""Instances: every machine gpudesk knows, what it costs, and stop/start/terminate.

Reconciles with the clouds when shown for the first time and every few
minutes, so a machine launched before a crash (or from the CLI) appears here.
A banner says, in red, how many machines may be billing.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtCore import QTimer
from PySide6.QtCore import Signal
from PySide6.QtGui import QAction
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QAbstractItemView
from PySide6.QtWidgets import QCheckBox
from PySide6.QtWidgets import QHBoxLayout
from PySide6.QtWidgets import QHeaderView
from PySide6.QtWidgets import QLabel
from PySide6.QtWidgets import QMessageBox
from PySide6.QtWidgets import QProgressBar
from PySide6.QtWidgets import QPushButton
from PySide6.QtWidgets import QTableView
from PySide6.QtWidgets import QVBoxLayout
from PySide6.QtWidgets import QWidget

from gpudesk.services.cloud import accounts
from gpudesk.services.cloud import instance_role
from gpudesk.services.cloud.accounts import ProviderFactory
from gpudesk.services.cloud.allow_me import AllowResult
from gpudesk.services.cloud.allow_me import allow_me_if_moved
from gpudesk.services.cloud.forget import forget
from gpudesk.services.cloud.machines import act
from gpudesk.services.cloud.machines import settle
from gpudesk.services.cloud.machines import stop_warning
from gpudesk.services.cloud.providers.base import ProviderError
from gpudesk.services.cloud.reconcile import MSG_KEYRING_LOCKED
from gpudesk.services.cloud.reconcile import MSG_KEYS_MISSING
from gpudesk.services.cloud.reconcile import MSG_NO_ANSWER
from gpudesk.services.cloud.reconcile import ReconcileReport
from gpudesk.services.cloud.reconcile import no_price_why
from gpudesk.services.cloud.reconcile import reconcile
from gpudesk.services.core.machine_states import STOPPED_STILL_BILLING
from gpudesk.services.core.settings import Settings
from gpudesk.services.core.sizes import size_text
from gpudesk.services.money import budgets
from gpudesk.services.money import spend
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine
from gpudesk.services.storage import data_costs
from gpudesk.services.storage import usage
from gpudesk.ui.machines.instances_model import InstancesModel
from gpudesk.ui.machines.instances_model import state_text
from gpudesk.ui.widgets.confirm import confirm
from gpudesk.ui.widgets.money import Money
from gpudesk.ui.widgets.retranslate import Retranslating
from gpudesk.ui.widgets.said_text import said_text
from gpudesk.ui.widgets.task_runner import TaskRunner
from gpudesk.ui.widgets.task_runner import error_text

if TYPE_CHECKING:
    from gpudesk.services.remote.ssh import SshConnection
    from gpudesk.ui.machines.budget_dialog import BudgetDialog


def _connect_agent(machine: Machine) -> SshConnection:
    """SSH to a machine's agent; paramiko is imported on the first use, not at start-up."""
    from gpudesk.services.remote import guard_push

    return guard_push._connect(machine)

RECONCILE_EVERY_MS = 5 * 60 * 1000
NAMES_ITS_ACCOUNT = (MSG_KEYRING_LOCKED, MSG_KEYS_MISSING, MSG_NO_ANSWER)


class InstancesPage(Retranslating, QWidget):
    billing_changed = Signal(int, float)  # machines that may bill, USD/hour of running ones
    news = Signal(str, str)  # (heading, text) worth a tray alert: a reclaim, a replacement

    def __init__(self, ledger: Ledger, providers: ProviderFactory = accounts.provider_from_keyring,
                 money: Money | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("instancesPage")
        self.ledger = ledger
        self.providers = providers
        self.last_report: ReconcileReport | None = None
        # the monthly budget in USD (Preferences; 0: none): the window sets where it comes from
        self.monthly_budget: Callable[[], float] = lambda: 0.0
        self.settle_poll_s = 3.0  # how often a stopping or starting machine is asked about
        # Preferences for a budget change (rate, default action); None: the saved settings
        self.settings: Callable[[], Settings | None] = lambda: None
        # how a budget change reaches the machine's agent (pinned host key only)
        self.connect_agent: Callable[[Machine], SshConnection] = _connect_agent
        self.budget_dialog: BudgetDialog | None = None
        self._up_to_date = ""  # the "Up to date." shown, retranslated while it stays
        self.banner = QLabel(self)
        self.banner.setObjectName("billingBanner")
        self.banner.setWordWrap(True)
        self.storage = QLabel(self)  # the month's "Storage" line: the user's buckets
        self.storage.setObjectName("monthStorage")
        self.storage.setWordWrap(True)
        self.storage.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.model = InstancesModel(self, money)
        self.table = QTableView(self)
        self.table.setObjectName("instancesTable")
        self.table.setModel(self.model)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setSectionResizeMode(
            QHeaderView.ResizeMode.ResizeToContents)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.show_ended = QCheckBox(self)
        self.refresh_button = QPushButton(self)
        self.refresh_button.setObjectName("refresh")
        self.stop_button = QPushButton(self)
        self.stop_button.setObjectName("stop")
        self.start_button = QPushButton(self)
        self.start_button.setObjectName("start")
        self.terminate_button = QPushButton(self)
        self.terminate_button.setObjectName("terminate")
        self.ssh_button = QPushButton(self)
        self.ssh_button.setObjectName("copySsh")
        self.allow_me_button = QPushButton(self)  # SSH fails: this computer's address moved?
        self.allow_me_button.setObjectName("allowMe")
        self.remove_button = QPushButton(self)
        self.remove_button.setObjectName("forget")
        self.budget_button = QPushButton(self)  # the selected machine's own budget
        self.budget_button.setObjectName("changeBudget")
        self.budget_action = QAction(self)  # the same, from the table's context menu
        self.budget_action.setObjectName("changeBudgetAction")
        self.table.setContextMenuPolicy(Qt.ContextMenuPolicy.ActionsContextMenu)
        self.table.addAction(self.budget_action)
        self.progress = QProgressBar(self)
        self.progress.setMaximumWidth(120)
        self.status = QLabel(self)
        self.status.setObjectName("instancesStatus")
        self.status.setWordWrap(True)
        bar = QHBoxLayout()
        for w in (self.refresh_button, self.stop_button, self.start_button,
                  self.terminate_button, self.budget_button, self.ssh_button,
                  self.allow_me_button, self.remove_button):
            bar.addWidget(w)
        bar.addStretch(1)
        bar.addWidget(self.show_ended)
        bar.addWidget(self.progress)
        layout = QVBoxLayout(self)
        layout.addWidget(self.banner)
        layout.addWidget(self.storage)
        layout.addLayout(bar)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.status)

        self.sync_runner = TaskRunner(self, button=self.refresh_button, progress=self.progress,
                                      show_dialog=False)
        self.action_runner = TaskRunner(self, progress=self.progress)
        # before a stop: what the cloud says it cannot end (its own words, then a question)
        self.warn_runner = TaskRunner(self, progress=self.progress, show_dialog=False)
        self.action_runner.finished.connect(lambda _ok: self.reload())
        # a stop or start goes on until the cloud says stopped or running, in the back
        self.settle_runner = TaskRunner(self, progress=self.progress, show_dialog=False)
        self.settle_runner.finished.connect(lambda _ok: self.reload())
        self.settle_runner.failed.connect(self.status.setText)
        self._settle_next: Callable[[], object] | None = None
        self.action_runner.finished.connect(lambda _ok: self._settle())
        self.sync_runner.failed.connect(self.status.setText)
        self.refresh_button.clicked.connect(self.refresh)
        self.stop_button.clicked.connect(self.ask_stop)
        self.start_button.clicked.connect(lambda: self.run_action("start"))
        self.terminate_button.clicked.connect(self.ask_terminate)
        self.ssh_button.clicked.connect(self.copy_ssh_command)
        self.allow_me_button.clicked.connect(self.allow_my_address)
        self.remove_button.clicked.connect(self.forget_selected)
        self.budget_button.clicked.connect(self.change_budget)
        self.budget_action.triggered.connect(self.change_budget)
        self.show_ended.toggled.connect(self.reload)
        self.table.selectionModel().selectionChanged.connect(self._update_buttons)
        self.ticker = QTimer(self)
        self.ticker.setInterval(1000)
        self.ticker.timeout.connect(self.model.tick)
        self.ticker.start()
        self.reconciler = QTimer(self)
        self.reconciler.setInterval(RECONCILE_EVERY_MS)
        self.reconciler.timeout.connect(self.refresh)
        self.reconciler.start()
        self.retranslate()
        self.reload()

    # ------------------------------------------------------------------ text

    def retranslate(self) -> None:
        self.show_ended.setText(self.tr("Show ended"))
        self.refresh_button.setText(self.tr("Check clouds"))
        self.stop_button.setText(self.tr("Stop"))
        self.start_button.setText(self.tr("Start"))
        self.terminate_button.setText(self.tr("Terminate…"))
        self.ssh_button.setText(self.tr("Copy SSH command"))
        self.allow_me_button.setText(self.tr("Allow my new address"))
        self.allow_me_button.setToolTip(self.tr(
            "SSH does not answer? If this computer's public address changed, open SSH to the "
            "new one (and close it to the old); rules you added yourself are kept."))
        self.remove_button.setText(self.tr("Remove from list"))
        self.budget_button.setText(self.tr("Change budget…"))
        self.budget_action.setText(self.tr("Change budget…"))
        self.budget_button.setToolTip(self.tr(
            "The selected machine's own budget and what happens at it: the ledger, the "
            "cloud's own cap and the machine's agent all move to it."))
        if self._up_to_date and self.status.text() == self._up_to_date:
            self.status.setText(self.tr("Up to date."))  # in the new language (issue 31)
            self._up_to_date = self.status.text()
        self.model.refresh_all()
        self._show_banner()


    # ------------------------------------------------------------------ data

    def reload(self) -> None:
        selected = self.selected()
        machines = self.ledger.machines(include_ended=True)
        if not self.show_ended.isChecked():  # a kept-alive group between machines still bills
            machines = [m for m in machines if not m.ended or m.group_live]
        self.model.set_machines(machines, {m.id: spend.history(self.ledger, m) for m in machines},
                                {m.id: instance_role.why_not(self.ledger, m) for m in machines},
                                {m.id: why for m in machines
                                 if (why := no_price_why(self.ledger, m))})
        if selected is not None:
            for row, m in enumerate(self.model.machines):
                if m.id == selected.id:
                    self.table.selectRow(row)
        self._show_banner()
        self._update_buttons()

    def _show_banner(self) -> None:
        count, per_hour = self.model.billing_summary()
        disks = self.model.disk_only()
        if count:
            self.banner.setStyleSheet("background: #fdecea; color: #922b21; padding: 6px;"
                                      " border-radius: 4px;")
            states = self.model.billing_states()
            running_rate, stopped_rate = self.model.rates()
            parts = []
            if states.get("running"):
                parts.append(self.tr("{n} running ({rate} per hour)").format(
                    n=states["running"], rate=self.model.money(running_rate)))
            if states.get("stopping"):
                parts.append(self.tr("{n} stopping (billed until the cloud says stopped)")
                             .format(n=states["stopping"]))
            if states.get(STOPPED_STILL_BILLING):
                # its own rate, in red, apart from the running ones' (issue 31)
                parts.append(self.tr("{n} stopped (still billing: {rate} per hour, as its "
                                     "cloud charges a machine stopped from inside in "
                                     "full)").format(n=states[STOPPED_STILL_BILLING],
                                                       rate=self.model.money(stopped_rate)))
            starting = sum(n for state, n in states.items() if state not in (
                "running", "stopping", STOPPED_STILL_BILLING))
            if starting:
                parts.append(self.tr("{n} starting").format(n=starting))
            if disks:
                parts.append(self.disk_text(len(disks)))
            text = self.tr("{n} machine(s) may be billing now: {parts}.").format(
                n=count, parts=", ".join(parts))
            if states.get("running"):
                text += " " + self.tr("Terminate what you no longer need.")
        elif disks:  # nothing runs, but stopped machines' disks bill until terminated
            self.banner.setStyleSheet("background: #fef5e7; color: #7e5109; padding: 6px;"
                                      " border-radius: 4px;")
            text = self.tr("No machine is running; {disks}.").format(
                disks=self.disk_text(len(disks)))
        else:
            self.banner.setStyleSheet("padding: 6px;")
            text = self.tr("Nothing is billing.")
        self.banner.setText(text + " " + self.month_text())
        self.storage.setText(self.storage_text())
        self.billing_changed.emit(count, per_hour)

    def disk_text(self, n: int) -> str:
        return self.tr("{n} stopped machine(s) still bill their disks until terminated").format(
            n=n)

    def storage_text(self) -> str:
        """The month's "Storage" line: GB-months of each run's bucket folder, data out to
        this computer and the requests counted, at sourced prices; a cost without a price
        says why, never 0."""
        month = usage.month_storage()
        moved = [said_text(line.said()) for line in data_costs.month_lines()]
        if moved:  # datasets' uploads, copies and downloads (issue 32), each priced
            moved.insert(0, self.tr("Datasets moved this month:"))
        if not month.runs:
            return "\n".join([self.tr("Storage this month: no bucket held a run's data."),
                              *moved])
        totals = "; ".join(f"{amount:,.4f} {cur}" for cur, amount in month.totals().items())
        if not totals:
            head = self.tr("Storage this month: {gbm} GB-month in your buckets; its cost "
                           "is unknown.").format(gbm=f"{month.gib_months:,.3f}")
        elif month.unknown:
            head = self.tr("Storage this month: {gbm} GB-month in your buckets, {cost} "
                           "known; the rest has no price.").format(
                gbm=f"{month.gib_months:,.3f}", cost=totals)
        else:
            head = self.tr("Storage this month: {gbm} GB-month in your buckets, {cost}.").format(
                gbm=f"{month.gib_months:,.3f}", cost=totals)
        return "\n".join([head] + [self._storage_run(r) for r in month.runs] + moved)

    def _storage_run(self, r: usage.RunMonth) -> str:
        p = r.storage_price
        if r.run.startswith("data:"):  # datasets._note_usage: the store's datasets
            line = self._storage_datasets(r)
        elif p is None or r.storage_cost is None:
            line = self.tr("Run {run} ({region}): {gbm} GB-month, cost unknown: {why}").format(
                run=r.run, region=r.region, gbm=f"{r.gib_months:,.3f}",
                why=said_text(r.storage_reason))
        else:
            line = self.tr("Run {run} ({region}): {gbm} GB-month × {price} {currency} = "
                           "{cost} {currency} ({source}, {date}).").format(
                run=r.run, region=r.region, gbm=f"{r.gib_months:,.3f}", price=p.amount,
                currency=p.currency, cost=f"{r.storage_cost:,.4f}", source=p.source,
                date=p.as_of.isoformat())
        if r.data_out_bytes:
            o = r.data_out_price
            if o is None or r.data_out_cost is None:
                line += " " + self.tr("Data out to this computer: {size}, cost unknown: "
                                      "{why}").format(size=size_text(r.data_out_bytes),
                                                      why=said_text(r.data_out_reason))
            else:
                line += " " + self.tr("Data out to this computer: {size}, {cost} {currency} "
                                      "({source}, {date}).").format(
                    size=size_text(r.data_out_bytes), cost=f"{r.data_out_cost:,.4f}",
                    currency=o.currency, source=o.source, date=o.as_of.isoformat())
        if r.requests.total:
            line += " " + self._storage_requests(r)
        return line

    def _storage_datasets(self, r: usage.RunMonth) -> str:
        """The GB-months of the datasets kept in one store, priced like a run's folder."""
        p = r.storage_price
        if p is None or r.storage_cost is None:
            return self.tr("Datasets in {uri} ({region}): {gbm} GB-month, cost unknown: "
                           "{why}").format(uri=r.uri, region=r.region,
                                           gbm=f"{r.gib_months:,.3f}",
                                           why=said_text(r.storage_reason))
        return self.tr("Datasets in {uri} ({region}): {gbm} GB-month × {price} {currency} = "
                       "{cost} {currency} ({source}, {date}).").format(
            uri=r.uri, region=r.region, gbm=f"{r.gib_months:,.3f}", price=p.amount,
            currency=p.currency, cost=f"{r.storage_cost:,.4f}", source=p.source,
            date=p.as_of.isoformat())

    def _storage_requests(self, r: usage.RunMonth) -> str:
        """The run's counted bucket requests this month, priced per S3 billing class."""
        n, t1, t2 = (f"{v:,}" for v in (r.requests.total, r.requests.tier1, r.requests.tier2))
        p = r.requests_price
        if r.requests_cost is None or p is None:
            return self.tr("Requests: {n} ({tier1} PUT/COPY/POST/LIST, {tier2} GET and "
                           "other), cost unknown: {why}").format(
                n=n, tier1=t1, tier2=t2, why=said_text(r.requests_reason))
        return self.tr("Requests: {n} ({tier1} PUT/COPY/POST/LIST, {tier2} GET and other) "
                       "≈ {cost} {currency} ({source}, {date}).").format(
            n=n, tier1=t1, tier2=t2, cost=f"{r.requests_cost:,.4f}", currency=p.currency,
            source=p.source, date=p.as_of.isoformat())

    def month_text(self) -> str:
        """This month's spend against the monthly budget (Preferences), or that none is set."""
        cap = self.monthly_budget()
        if cap <= 0:
            return self.tr("No monthly budget (Preferences sets one).")
        config = budgets.BudgetConfig(monthly_usd=cap, cny_per_usd=self.model.money.rate)
        month = [s for s in budgets.statuses(spend.histories(self.ledger), (), config,
                                             time.time())
                 if s.budget.scope == budgets.SCOPE_MONTH]
        spent = month[0].spent if month else 0.0
        return self.tr("This month: {spent} of the {cap} budget ({percent:.0f}%).").format(
            spent=self.model.money(spent), cap=self.model.money(cap),
            percent=100.0 * spent / cap)

    def refresh(self) -> None:
        """Ask the clouds (reconcile), then show the ledger."""
        self.status.setText(self.tr("Checking the clouds…"))
        self.sync_runner.run(reconcile(self.ledger, self.providers), on_success=self._reconciled)

    def _reconciled(self, report: ReconcileReport) -> None:
        self.last_report = report
        parts = []
        strangers = [i for i in report.adopted if i not in report.restored]
        if strangers:
            parts.append(self.tr("Found {n} machine(s) the ledger did not know.").format(
                n=len(strangers)))
        if report.restored:
            parts.append(self.tr("{n} machine(s) removed from the list still exist in their "
                                 "cloud: they are back, with the budget they had.").format(
                n=len(report.restored)))
        if report.gone:
            parts.append(self.tr("{n} machine(s) no longer exist.").format(n=len(report.gone)))
        if report.no_price:
            parts.append(self.tr("{n} machine(s) found have no price: no budget can be counted "
                                 "for them (see Price/h).").format(n=len(report.no_price)))
        if report.timers:
            parts.append(self.tr("{n} machine(s) were stopped or started outside gpudesk: "
                                 "their cloud timer followed.").format(n=len(report.timers)))
        parts += self._group_news(report)
        for name, error in report.errors.items():
            why = error_text(error)[0]
            parts.append(why if error.template in NAMES_ITS_ACCOUNT else self.tr(
                "{provider} not checked: {why}").format(provider=report.account(name), why=why))
        # a cloud left unchecked is a warning that stays visible, never "Up to date"
        warn = bool(report.errors or report.no_price)
        self.status.setStyleSheet("color: #922b21; font-weight: bold;" if warn else "")
        self.status.setProperty("warning", warn)
        if not parts and not self.ledger.accounts():
            parts.append(self.tr("No cloud account to check: add your keys on the Accounts "
                                 "page."))
        self.status.setText(" ".join(parts) or self.tr("Up to date."))
        self._up_to_date = self.status.text() if not parts else ""
        self.reload()

    def _group_news(self, report: ReconcileReport) -> list[str]:
        """Keep-alive groups (issue 23): what the cloud did to a run's machines, said on the
        status line and as a tray alert."""
        said: list[str] = []

        def say(heading: str, template: str, ledger_id: str) -> None:
            m = self.ledger.get(ledger_id)
            text = template.format(machine=(m.name or m.id) if m is not None else ledger_id)
            self.news.emit(heading, text)
            said.append(text)

        for ledger_id in report.reclaimed:
            if ledger_id not in report.replaced:
                say(self.tr("Reclaimed"),
                    self.tr("The spot machine of {machine} was reclaimed; its group is "
                            "starting another, which resumes the run from the bucket."),
                    ledger_id)
        for ledger_id in report.replaced:
            say(self.tr("Resumed on a new machine"),
                self.tr("{machine} was reclaimed and replaced: the new machine resumes the "
                        "run from the bucket's latest checkpoint."), ledger_id)
        for ledger_id in report.gave_up:
            say(self.tr("Run paused: no spot capacity"),
                self.tr("No spot capacity came back for {machine} within the wait set in "
                        "Preferences, so its group was ended and bills nothing. The run's "
                        "checkpoints stay in its bucket: Resume on the Run page starts it "
                        "on another machine."), ledger_id)
        return said

    # ------------------------------------------------------------------ actions

    def selected(self) -> Machine | None:
        rows = self.table.selectionModel().selectedRows() if self.table.selectionModel() else []
        return self.model.machine(rows[0].row()) if rows else None

    def select_machine(self, ledger_id: str) -> None:
        for row, m in enumerate(self.model.machines):
            if m.id == ledger_id:
                self.table.selectRow(row)

    def _update_buttons(self) -> None:
        m = self.selected()
        cloud = m is not None and m.provider != "own" and bool(m.cloud_id) and not m.ended
        group = m is not None and m.group_live  # its group stops and starts nothing by hand
        self.stop_button.setEnabled(cloud and not group and m is not None
                                    and m.state == "running")
        self.start_button.setEnabled(cloud and not group and m is not None
                                     and m.state == "stopped")
        self.terminate_button.setEnabled(cloud or group)
        # an ended machine has no SSH to copy (its address may be someone else's now)
        self.ssh_button.setEnabled(m is not None and bool(m.public_ip) and not m.ended)
        self.allow_me_button.setEnabled(cloud and m is not None and bool(m.security_group))
        self.remove_button.setEnabled(m is not None and not m.billing)
        budget = m is not None and m.provider != "own" and (not m.ended or m.group_live)
        self.budget_button.setEnabled(budget)
        self.budget_action.setEnabled(budget)

    def run_action(self, action: str) -> None:
        m = self.selected()
        if m is None:
            return
        doing = {"stop": self.tr("Stopping {name}…"), "start": self.tr("Starting {name}…"),
                 "terminate": self.tr("Terminating {name}…")}[action]
        self.status.setText(doing.format(name=m.name))
        self.action_runner.run(act(self.ledger, m.id, action, self.providers),
                               on_success=self._acted if action in ("stop", "start")
                               else self._terminated,
                               title=self.tr("The machine was not changed"))

    def _terminated(self, m: Machine) -> None:
        """The status line says how the terminate ended, not "Terminating…" (issue 31)."""
        self.status.setText((
            self.tr("{name} is terminated: it no longer bills.") if m.ended else
            self.tr("{name}: the cloud says {state}; Check clouds asks again.")).format(
            name=m.name or m.id, state=state_text(m.state)))

    def _acted(self, m: Machine) -> None:
        """A stop or start the cloud has not finished: ask it again until it has."""
        started = time.monotonic()

        def heard(now: Machine) -> None:
            self.reload()
            self.status.setText(self.tr("{name}: the cloud says {state} ({s} s)…").format(
                name=now.name or now.id, state=state_text(now.state),
                s=int(time.monotonic() - started)))

        def settled(now: Machine) -> None:
            # one plain sentence in the cloud's own word on this stop (StopChargingMode /
            # StoppedMode), never a guess from the provider's name (issue 31)
            if now.state == "stopped":
                from gpudesk.ui.machines.stop_sentence import stop_sentence

                self.status.setText(stop_sentence(now, self._stop_note(now)))
                return
            text = (self.tr("{name} is running.") if now.state == "running" else
                    self.tr("{name} is still {state}; Check clouds asks again."))
            self.status.setText(text.format(name=now.name or now.id,
                                            state=state_text(now.state)))

        if m.state not in ("stopping", "pending"):
            settled(m)
            return
        heard(m)
        # once the stop's own runner has ended (it hides the progress bar they share)
        self._settle_next = lambda: self.settle_runner.run(
            settle(self.ledger, m.id, self.providers, poll_s=self.settle_poll_s,
                   on_state=heard), on_success=settled)

    def _stop_note(self, m: Machine) -> str:
        """The ledger's last word from the cloud on what still bills after the stop."""
        for event in reversed(self.ledger.events(m.id)):
            if event.step == "stop-billing":
                return event.detail
            if event.step == "stop-requested":
                break
        return ""

    def ask_stop(self) -> None:
        """Stop the selected machine; where the stop cannot end its compute bill (the
        cloud's own rule, ``machines.stop_warning``), say so and ask first."""
        m = self.selected()
        if m is None:
            return
        self.status.setText(self.tr("Asking {cloud} what a stop of {name} bills…").format(
            cloud=accounts.title(m.provider), name=m.name or m.id))
        self.warn_runner.run(self._stop_words(m.id),
                             on_success=lambda words: self._confirm_stop(m, words))

    async def _stop_words(self, ledger_id: str) -> str:
        """The cloud's words on why the stop cannot end the bill; a question the cloud
        does not answer never blocks the stop itself (which then says what went wrong)."""
        try:
            return await stop_warning(self.ledger, ledger_id, self.providers)
        except ProviderError:
            return ""

    def _confirm_stop(self, m: Machine, words: str) -> None:
        if not words:
            self.run_action("stop")
            return
        confirm(self, QMessageBox.Icon.Warning, self.tr("Stop machine"),
                self.tr("{words}\n\nStop {name} anyway?").format(words=words, name=m.name or m.id),
                "confirmStop",
                (self.tr("Stop"), QMessageBox.ButtonRole.AcceptRole, "confirmStopYes"),
                lambda: self.run_action("stop"))

    def _settle(self) -> None:
        start, self._settle_next = self._settle_next, None
        if start is not None:
            start()

    def ask_terminate(self) -> QMessageBox | None:
        m = self.selected()
        if m is None:
            return None
        text = self.tr("Terminate {name} ({type}, {cloud_id})? The machine and its disk are "
                       "deleted; anything not copied off it is lost. Billing stops.").format(
            name=m.name, type=m.instance_type, cloud_id=m.cloud_id)
        if m.group_live:  # the group is what ends: its machines go with it
            text = self.tr("End {name}'s group {group}? Its machine and disk are deleted and "
                           "the cloud starts no other; anything not in the run's bucket is "
                           "lost. Billing stops.").format(name=m.name, group=m.group_id)
        return confirm(
            self, QMessageBox.Icon.Warning, self.tr("Terminate machine"), text,
            "confirmTerminate",
            (self.tr("Terminate"), QMessageBox.ButtonRole.DestructiveRole, "confirmTerminateYes"),
            lambda: self.run_action("terminate"))

    def ssh_command(self, m: Machine) -> str:
        """``ssh gpudesk-<name>`` once ~/.ssh/config includes gpudesk's (it carries the key,
        port and pinned host key); else ``ssh -i KEY -p PORT user@host`` from the profile."""
        from gpudesk.services.cloud.machines import ssh_command
        from gpudesk.services.remote import ssh_config

        try:
            if ssh_config.has_include() and ssh_config.managed_file().is_file() and \
                    f"Host {ssh_config.host_alias(m)}\n" in \
                    ssh_config.managed_file().read_text(encoding="utf-8"):
                return f"ssh {ssh_config.host_alias(m)}"
        except OSError:
            pass
        return ssh_command(m)

    def copy_ssh_command(self) -> None:
        m = self.selected()
        if m is not None and m.public_ip:
            QGuiApplication.clipboard().setText(self.ssh_command(m))
            self.status.setText(self.tr("Copied: {command}").format(command=self.ssh_command(m)))

    def allow_my_address(self) -> None:
        """Replace the machine's SSH rule when this computer's public address moved."""
        m = self.selected()
        if m is None or not m.security_group:
            return
        self.status.setText(self.tr("Checking this computer's address for {name}…").format(
            name=m.name))

        def done(answer: tuple[str, AllowResult | None]) -> None:
            here, result = answer
            if result is None:
                self.status.setText(self.tr(
                    "SSH to {name} is already open to this computer ({address}); the address "
                    "is not why SSH fails.").format(name=m.name, address=here))
            else:
                self.status.setText(self.tr(
                    "SSH to {name} is now open to {address} only (was {old}).").format(
                    name=m.name, address=here, old=", ".join(result.replaced) or "-"))

        self.action_runner.run(asyncio.to_thread(allow_me_if_moved, self.ledger, m.id,
                                                 self.providers),
                               on_success=done, title=self.tr("The SSH rule was not changed"))

    def change_budget(self) -> BudgetDialog | None:
        """Open the budget dialog for the selected machine (one at a time)."""
        m = self.selected()
        if m is None or m.provider == "own" or (m.ended and not m.group_live):
            return None
        if self.budget_dialog is not None:
            self.budget_dialog.close()
        from gpudesk.ui.machines.budget_dialog import BudgetDialog  # paramiko: on first use

        dialog = BudgetDialog(self.ledger, m, self.providers, self.model.money,
                              settings=self.settings, connect=self.connect_agent, parent=self)
        dialog.changed.connect(self._budget_changed)
        dialog.destroyed.connect(lambda _o=None: setattr(self, "budget_dialog", None))
        self.budget_dialog = dialog
        dialog.setWindowModality(Qt.WindowModality.WindowModal)
        dialog.open()
        return dialog

    def _budget_changed(self, ledger_id: str) -> None:
        self.reload()
        m = self.ledger.get(ledger_id)
        if m is not None:
            self.status.setText(self.tr("{name}: budget now {budget}.").format(
                name=m.name or m.id, budget=self.model.budget_text(m)))

    def forget_selected(self) -> QMessageBox | None:
        """Ask, then remove the selected row. A cloud machine that has not ended still
        exists there and bills its disk; Check clouds finds it again with its budget
        (``services.cloud.forget`` keeps its guard)."""
        m = self.selected()
        if m is None or m.billing:
            return None
        name = m.name or m.id
        if m.provider == "own":
            text = self.tr("Remove {name} from the list? gpudesk forgets how to reach it; the "
                           "machine itself is not touched.").format(name=name)
        elif m.ended or not m.cloud_id:
            text = self.tr("Remove {name} from the list? It has ended ({state}); its row and "
                           "its spend leave this list.").format(name=name,
                                                                state=state_text(m.state))
        else:
            text = self.tr("Remove {name} from the list? This does not delete it: {cloud_id} "
                           "still exists in {cloud} ({state}) and its disk bills until you "
                           "terminate it. The next Check clouds finds it again, with its "
                           "budget ({budget}). To end its bill, use Terminate instead.").format(
                name=name, cloud_id=m.cloud_id, cloud=accounts.title(m.provider),
                state=state_text(m.state), budget=self.model.budget_text(m))

        def remove() -> None:
            forget(self.ledger, m.id)
            self.reload()
            self.status.setText(self.tr("{name} was removed from the list.").format(name=name))

        return confirm(self, QMessageBox.Icon.Question, self.tr("Remove from list"), text,
                       "confirmForget",
                       (self.tr("Remove"), QMessageBox.ButtonRole.AcceptRole,
                        "confirmForgetYes"), remove)
