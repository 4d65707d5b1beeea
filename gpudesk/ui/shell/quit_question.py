"""Money still running when gpudesk quits: the billing line in the status bar, the
start-up alert for machines left billing, and the question asked on quitting (stop,
terminate, or keep them running).

Mixed into ``MainWindow`` (before ``QMainWindow``); its strings keep the
"MainWindow" translation context.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QCoreApplication

if TYPE_CHECKING:
    from PySide6.QtWidgets import QDialog, QLabel, QMainWindow

    from gpudesk.services.cloud.accounts import ProviderFactory
    from gpudesk.services.money.ledger import Ledger, Machine
    from gpudesk.ui.machines.instances_page import InstancesPage
    from gpudesk.ui.widgets.money import Money
    from gpudesk.ui.widgets.task_runner import TaskRunner
    from gpudesk.ui.widgets.tray import BillingTray

    _Base = QMainWindow
else:
    _Base = object


class QuitQuestion(_Base):
    """What bills, shown and asked about; mix in before ``QMainWindow``."""

    started: bool
    ledger: Ledger
    providers: ProviderFactory
    money: Money
    tray: BillingTray
    billing_label: QLabel
    quit_box: QDialog | None
    quit_runner: TaskRunner
    _may_quit: bool
    _warned_at_start: bool
    _told_no_tray: bool

    if TYPE_CHECKING:  # the window's own, and its other parts'
        @property
        def instances(self) -> InstancesPage: ...

    def billing_machines(self) -> list[Machine]:
        """The cloud machines that may be billing now (the ledger's word)."""
        if not self.started:
            return []
        return [m for m in self.ledger.machines(include_ended=False)
                if m.billing and m.provider != "own"]

    def ask_quit(self, billing: list[Machine]) -> QDialog:
        """Quitting with machines billing: say what bills, its rate and its guard, and offer
        to stop them, terminate them, or keep them running."""
        from PySide6.QtCore import Qt
        from PySide6.QtWidgets import QAbstractButton, QMessageBox

        from gpudesk.services.cloud import accounts, guard
        from gpudesk.ui.widgets.task_runner import format_template
        from gpudesk.ui.widgets.tray import state_word

        if self.quit_box is not None:
            self.quit_box.raise_()
            return self.quit_box
        lines = []
        for m in billing:
            rule = " ".join(format_template(guard.CONTEXT, t, v) for t, v in guard.sentences(m))
            lines.append(QCoreApplication.translate(
                "MainWindow", "• {name}: {provider} {type}, {state}, {rate}/h. {guard}").format(
                name=m.name or m.id, provider=accounts.title(m.provider), type=m.instance_type,
                state=state_word(m.state), rate=self.money(m.price_per_hour, 3) if m.price_per_hour
                else QCoreApplication.translate("MainWindow", "price not known"), guard=rule))
        box = QMessageBox(QMessageBox.Icon.Warning,
                          QCoreApplication.translate("MainWindow", "Machines are still billing"),
                          QCoreApplication.translate(
                              "MainWindow", "Quitting gpudesk does not stop them; they bill "
                              "until they are stopped or terminated:")
                          + "\n\n" + "\n".join(lines),
                          QMessageBox.StandardButton.Cancel, self)
        box.setObjectName("quitQuestion")
        stop = box.addButton(QCoreApplication.translate("MainWindow", "Stop and quit"),
                             QMessageBox.ButtonRole.AcceptRole)
        stop.setObjectName("quitStop")
        end = box.addButton(QCoreApplication.translate("MainWindow", "Terminate and quit"),
                            QMessageBox.ButtonRole.DestructiveRole)
        end.setObjectName("quitTerminate")
        keep = box.addButton(QCoreApplication.translate("MainWindow", "Keep them running and quit"),
                             QMessageBox.ButtonRole.AcceptRole)
        keep.setObjectName("quitKeep")
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)  # stay: nothing changes
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)

        def answered(button: QAbstractButton) -> None:
            self.quit_box = None
            if button is keep:
                self._may_quit = True
                self.close()
            elif button in (stop, end):
                self._act_then_quit("stop" if button is stop else "terminate",
                                    [m.id for m in billing])

        box.buttonClicked.connect(answered)
        box.setWindowModality(Qt.WindowModality.WindowModal)
        self.quit_box = box
        box.open()
        return box

    def _act_then_quit(self, action: str, ids: list[str]) -> None:
        """Stop or terminate each machine, then quit; a refusal keeps the window open."""
        from gpudesk.services.cloud.machines import act
        from gpudesk.ui.widgets.task_runner import TaskRunner

        async def each() -> None:
            for ledger_id in ids:
                m = self.ledger.get(ledger_id)
                if m is None or not m.billing or not m.cloud_id or (
                        action == "stop" and m.state != "running"):
                    continue  # ended meanwhile, not made yet, or nothing running to stop
                await act(self.ledger, ledger_id, action, self.providers)

        def done(_none: None) -> None:
            self._may_quit = True
            self.close()

        self.statusBar().showMessage((
            QCoreApplication.translate("MainWindow", "Stopping {n} machine(s) before quitting…")
            if action == "stop" else
            QCoreApplication.translate("MainWindow", "Terminating {n} machine(s) before quitting…")
        ).format(n=len(ids)))
        self.quit_runner = TaskRunner(self)
        self.quit_runner.finished.connect(lambda _ok: self.instances.reload())
        self.quit_runner.run(each(), on_success=done, title=(
            QCoreApplication.translate(
                "MainWindow", "Not every machine was stopped; gpudesk stays open")
            if action == "stop" else QCoreApplication.translate(
                "MainWindow", "Not every machine was terminated; gpudesk stays open")))

    def _tell(self, heading: str, text: str) -> None:
        """A tray alert (a reclaim, a replacement); the status bar where there is no tray."""
        if not self.tray.notify(heading, text):
            self.statusBar().showMessage(f"{heading} — {text}", 30000)

    def _show_billing(self, count: int, per_hour: float) -> None:
        """The billing line and the tray; once, say that machines from before still bill."""
        billing = [m for m in self.instances.model.machines if m.billing]
        self.tray.update(billing, self.instances.model.spent)
        report = self.instances.last_report
        if report is not None and not self._warned_at_start:
            self._warned_at_start = True
            if billing:  # the first check of this session found machines still billing
                self.tray.notify(
                    QCoreApplication.translate("MainWindow", "Machines are billing"),
                    QCoreApplication.translate(
                        "MainWindow", "{n} machine(s) from before are still billing. "
                        "See Instances.").format(n=len(billing)))
                if not self.tray.available() and not self._told_no_tray:
                    self._told_no_tray = True
                    self.statusBar().showMessage(QCoreApplication.translate(
                        "MainWindow", "This desktop has no system tray: billing alerts show "
                        "here and on the Instances page."), 15000)
        if count:
            self.billing_label.setText(QCoreApplication.translate(
                "MainWindow", "● {n} billing ({rate}/h)").format(
                n=count, rate=self.money(per_hour)))
            self.billing_label.setStyleSheet("color: #c0392b; font-weight: bold;")
        else:
            self.billing_label.setText("")
            self.billing_label.setStyleSheet("")
