"""After SSH to a gpudesk cloud machine fails: offer "Allow my new address" when that is why.

A laptop that moved to another network has another public address, and the
machine's security group still opens port 22 to the old /32 only: SSH times
out with nothing saying why. This asks the cloud which address the rule names,
compares it with this computer's, and only on a mismatch asks the user whether
to move the rule (once per machine per session; a "No" is remembered).
"""

from __future__ import annotations

from PySide6.QtCore import QObject
from PySide6.QtCore import Signal
from PySide6.QtWidgets import QMessageBox
from PySide6.QtWidgets import QWidget

from gpudesk.services.cloud.accounts import ProviderFactory
from gpudesk.services.cloud.accounts import provider_from_keyring
from gpudesk.services.cloud.allow_me import AllowResult
from gpudesk.services.cloud.allow_me import address_mismatch
from gpudesk.services.cloud.allow_me import allow_me
from gpudesk.services.money.ledger import Ledger
from gpudesk.ui.widgets.task_runner import TaskRunner


class AllowMeOffer(QObject):
    said = Signal(str)  # what happened, for the page's status line

    def __init__(self, ledger: Ledger, owner: QWidget,
                 providers: ProviderFactory = provider_from_keyring) -> None:
        super().__init__(owner)
        self.ledger = ledger
        self.owner = owner
        self.providers = providers
        self.asked: set[str] = set()
        self.question: QMessageBox | None = None
        # the check is a guess at a cause: its own failure is not worth a dialog
        self.check_runner = TaskRunner(owner, show_dialog=False, busy_cursor=False)
        self.change_runner = TaskRunner(owner, busy_cursor=False)

    def ssh_failed(self, ref: str) -> None:
        machine = self.ledger.find(ref)
        if machine is None or machine.provider == "own" or not machine.security_group:
            return
        if machine.id in self.asked or self.check_runner.busy:
            return
        self.asked.add(machine.id)
        name = machine.name or machine.id

        def checked(found: tuple[str, list[str]] | None) -> None:
            if found is not None:
                self._ask(machine.id, name, *found)

        self.check_runner.run_blocking(address_mismatch, self.ledger, machine.id, "",
                                       self.providers, on_success=checked)

    def _ask(self, machine_id: str, name: str, here: str, rule: list[str]) -> None:
        box = QMessageBox(QMessageBox.Icon.Question, self.tr("Allow my new address?"), self.tr(
            "SSH to {name} failed, and this computer's public address ({here}) is not the "
            "one its security group lets in ({rule}): this network is probably why.\n\n"
            "Open SSH to {here} instead (the old address loses access)?").format(
                name=name, here=here, rule=", ".join(rule) or "-"),
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No, self.owner)
        box.setObjectName("allowMeQuestion")
        box.setDefaultButton(QMessageBox.StandardButton.Yes)
        self.question = box
        box.finished.connect(lambda _r: self._answered(box, machine_id, name, here))
        box.open()

    def _answered(self, box: QMessageBox, machine_id: str, name: str, here: str) -> None:
        self.question = None
        if box.clickedButton() is not box.button(QMessageBox.StandardButton.Yes):
            self.said.emit(self.tr("The SSH rule of {name} was left as it was.").format(
                name=name))
            return

        def done(result: AllowResult) -> None:
            self.said.emit(self.tr("SSH to {name} is now open to {address} only.").format(
                name=name, address=result.address))

        self.change_runner.run_blocking(allow_me, self.ledger, machine_id, here, self.providers,
                                        on_success=done,
                                        title=self.tr("The SSH rule was not changed"))
