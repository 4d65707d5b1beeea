"""Money still running when gpudesk quits: the billing line in the status bar, the
start-up alert for machines left billing, and the question asked on quitting (stop,
terminate, or keep them running).

Mixed into ``MainWindow`` (before ``QMainWindow``); its strings keep the
"MainWindow" translation context.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from PySide6.QtCore import QCoreApplication

from gpudesk.ui.shell.window_parts import WindowParts

if TYPE_CHECKING:
    from PySide6.QtWidgets import QDialog
    from PySide6.QtWidgets import QLabel

    from gpudesk.services.money.ledger import Machine
    from gpudesk.ui.machines.instances_page import InstancesPage
    from gpudesk.ui.widgets.task_runner import TaskRunner
    from gpudesk.ui.widgets.tray import BillingTray


log = logging.getLogger(__name__)


class QuitQuestion(WindowParts):
    """What bills, shown and asked about; mix in before ``QMainWindow``."""

    tray: BillingTray
    billing_label: QLabel
    quit_box: QDialog | None
    quit_runner: TaskRunner
    quit_failed_box: QDialog | None  # the last "not every machine was stopped" box
    _may_quit: bool
    _warned_at_start: bool
    _told_no_tray: bool

    if TYPE_CHECKING:  # the window's own, and its other parts'
        @property
        def instances(self) -> InstancesPage: ...

        def show_page(self, key: str) -> None: ...

    def billing_machines(self) -> list[Machine]:
        """The cloud machines that may be billing now (the ledger's word), and the stopped
        ones whose disks still bill until they are terminated (issue 31)."""
        if not self.started:
            return []
        return [m for m in self.ledger.machines(include_ended=False)
                if m.provider != "own" and (m.billing or (m.state == "stopped"
                                                          and bool(m.cloud_id)))]

    def ask_quit(self, billing: list[Machine]) -> QDialog:
        """Quitting with machines billing: say what bills, its rate and its guard, and offer
        to stop them, terminate them, or keep them running."""
        from PySide6.QtWidgets import QAbstractButton
        from PySide6.QtWidgets import QMessageBox

        from gpudesk.services.cloud import accounts
        from gpudesk.services.cloud import guard
        from gpudesk.ui.widgets.confirm import open_question
        from gpudesk.ui.widgets.guard_words import guard_said
        from gpudesk.ui.widgets.tray import state_word

        if self.quit_box is not None:
            self.quit_box.raise_()
            return self.quit_box
        lines = []
        # a machine kept alive by its group cannot be stopped (the group would start
        # another): "stop" is offered only for the others, and the box says so (issue 31)
        stoppable = [m for m in billing if not m.group_live and m.state != "stopped"]
        for m in billing:
            if not m.billing:  # stopped, its compute no longer bills: its disk does
                lines.append(QCoreApplication.translate(
                    "MainWindow", "• {name}: {provider} {type}, stopped; its disk bills until "
                    "it is terminated.").format(name=m.name or m.id,
                                                provider=accounts.title(m.provider),
                                                type=m.instance_type))
                continue
            rule = guard_said(guard.sentences(m), self.money)
            if m.group_live:
                rule += " " + QCoreApplication.translate(
                    "MainWindow", "It cannot be stopped (its group would start another): "
                    "only Terminate ends it, with its group.")
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
        stop: QAbstractButton | None = None
        if stoppable:
            stop = box.addButton(
                QCoreApplication.translate("MainWindow", "Stop and quit")
                if len(stoppable) == len(billing) else
                QCoreApplication.translate("MainWindow", "Stop {n} of them and quit").format(
                    n=len(stoppable)), QMessageBox.ButtonRole.AcceptRole)
            stop.setObjectName("quitStop")
        end = box.addButton(QCoreApplication.translate("MainWindow", "Terminate and quit"),
                            QMessageBox.ButtonRole.DestructiveRole)
        end.setObjectName("quitTerminate")
        keep = box.addButton(QCoreApplication.translate("MainWindow", "Keep them running and quit"),
                             QMessageBox.ButtonRole.AcceptRole)
        keep.setObjectName("quitKeep")

        def answered(button: QAbstractButton) -> None:
            self.quit_box = None
            if button is keep:
                self._may_quit = True
                self.close()
            elif stop is not None and button is stop:
                self._act_then_quit("stop", [m.id for m in stoppable])
            elif button is end:
                self._act_then_quit("terminate", [m.id for m in billing])

        self.quit_box = open_question(box, answered)
        return box

    def _act_then_quit(self, action: str, ids: list[str]) -> None:
        """Stop or terminate every machine, then quit. One that refuses never keeps the
        others running: each is asked, and those that failed are named with the cloud's
        reason while the window stays open (issue 31)."""
        from gpudesk.services.cloud.machines import act
        from gpudesk.ui.widgets.task_runner import TaskRunner
        from gpudesk.ui.widgets.task_runner import error_text

        async def each() -> list[tuple[Machine, str]]:
            failed: list[tuple[Machine, str]] = []
            for ledger_id in ids:
                m = self.ledger.get(ledger_id)
                if m is None or m.ended or not m.cloud_id or (
                        action == "stop" and m.state != "running"):
                    continue  # ended meanwhile, not made yet, or nothing running to stop
                try:
                    await act(self.ledger, ledger_id, action, self.providers)
                except Exception as error:  # noqa: BLE001 - said below; the others go on
                    log.warning("%s of %s before quitting failed", action, ledger_id,
                                exc_info=True)
                    failed.append((m, error_text(error)[0]))
            return failed

        def done(failed: list[tuple[Machine, str]]) -> None:
            if not failed:
                self.statusBar().clearMessage()
                self._may_quit = True
                self.close()
                return
            self._tell_failed(action, failed, len(ids))

        self.statusBar().showMessage((
            QCoreApplication.translate("MainWindow", "Stopping {n} machine(s) before quitting…")
            if action == "stop" else
            QCoreApplication.translate("MainWindow", "Terminating {n} machine(s) before quitting…")
        ).format(n=len(ids)))
        self.quit_runner = TaskRunner(self)
        self.quit_runner.finished.connect(lambda _ok: self.instances.reload())
        self.quit_runner.finished.connect(self._quit_ended)
        self.quit_runner.run(each(), on_success=done, title=(
            QCoreApplication.translate(
                "MainWindow", "Not every machine was stopped; gpudesk stays open")
            if action == "stop" else QCoreApplication.translate(
                "MainWindow", "Not every machine was terminated; gpudesk stays open")))

    def _quit_ended(self, ok: bool) -> None:
        """A stop or terminate that failed or was cancelled: no "Stopping n…" left behind."""
        if not ok:
            self.statusBar().clearMessage()

    def _tell_failed(self, action: str, failed: list[tuple[Machine, str]], asked: int) -> None:
        """Each machine the stop or terminate did not reach, with why; the window stays."""
        from PySide6.QtCore import Qt
        from PySide6.QtWidgets import QMessageBox

        title = (QCoreApplication.translate(
            "MainWindow", "Not every machine was stopped; gpudesk stays open")
            if action == "stop" else QCoreApplication.translate(
                "MainWindow", "Not every machine was terminated; gpudesk stays open"))
        summary = (QCoreApplication.translate(
            "MainWindow", "{ok} of {n} machine(s) stopped. These still bill:")
            if action == "stop" else QCoreApplication.translate(
                "MainWindow", "{ok} of {n} machine(s) terminated. These still bill:")).format(
            ok=asked - len(failed), n=asked)
        lines = [QCoreApplication.translate("MainWindow", "• {name}: {why}").format(
            name=m.name or m.id, why=why) for m, why in failed]
        self.statusBar().showMessage(title, 30000)  # not "Stopping n machine(s)…" any more
        box = QMessageBox(QMessageBox.Icon.Warning, title, summary + "\n\n" + "\n".join(lines),
                          QMessageBox.StandardButton.Ok, self)
        box.setObjectName("quitFailed")
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.setWindowModality(Qt.WindowModality.WindowModal)
        self.quit_failed_box = box
        box.open()

    def _tell_billing_from_before(self, heading: str, n: int) -> QDialog:
        """Where no tray shows the start-up alert, a box in the window says it, with the way
        to the machines; it asks nothing and blocks nothing."""
        from PySide6.QtCore import Qt
        from PySide6.QtWidgets import QAbstractButton
        from PySide6.QtWidgets import QMessageBox

        box = QMessageBox(QMessageBox.Icon.Warning, heading, QCoreApplication.translate(
            "MainWindow", "{n} machine(s) from before are still billing: they ran on while "
            "gpudesk was closed. Stop or terminate on the Instances page what you no longer "
            "need.").format(n=n), QMessageBox.StandardButton.Close, self)
        box.setObjectName("billingFromBefore")
        show = box.addButton(QCoreApplication.translate("MainWindow", "Show Instances"),
                             QMessageBox.ButtonRole.AcceptRole)
        show.setObjectName("showInstances")
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)

        def answered(button: QAbstractButton) -> None:
            if button is show:
                self.show_page("instances")

        box.buttonClicked.connect(answered)
        box.setWindowModality(Qt.WindowModality.NonModal)
        box.show()
        return box

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
                heading = QCoreApplication.translate("MainWindow", "Machines are billing")
                said = QCoreApplication.translate(
                    "MainWindow", "{n} machine(s) from before are still billing. "
                    "See Instances.").format(n=len(billing))
                if not self.tray.notify(heading, said):  # no tray: said in the window (31)
                    self._tell_billing_from_before(heading, len(billing))
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
