"""Accounts: cloud keys (verified, then kept in the keyring) and the user's own SSH machines.

A failed verification keeps what was typed (nothing lost on bad input) and
stores nothing, so a typo never replaces working keys. The secret field is
cleared once the keys are safely in the keyring.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox
from PySide6.QtWidgets import QFormLayout
from PySide6.QtWidgets import QGroupBox
from PySide6.QtWidgets import QHBoxLayout
from PySide6.QtWidgets import QLabel
from PySide6.QtWidgets import QLineEdit
from PySide6.QtWidgets import QListWidget
from PySide6.QtWidgets import QListWidgetItem
from PySide6.QtWidgets import QMessageBox
from PySide6.QtWidgets import QProgressBar
from PySide6.QtWidgets import QPushButton
from PySide6.QtWidgets import QVBoxLayout
from PySide6.QtWidgets import QWidget

from gpudesk.services.cloud import accounts
from gpudesk.services.cloud import credentials
from gpudesk.services.cloud.providers.base import Credentials
from gpudesk.services.cloud.providers.base import Provider
from gpudesk.services.cloud.providers.base import ProviderName
from gpudesk.services.money.ledger import Account
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine
from gpudesk.services.remote.host_keys import PinStore
from gpudesk.services.remote.ssh_config import host_alias
from gpudesk.ui.machines.own_machine_dialog import OwnMachineDialog
from gpudesk.ui.widgets.confirm import confirm
from gpudesk.ui.widgets.host_key_question import ask_forget
from gpudesk.ui.widgets.retranslate import Retranslating
from gpudesk.ui.widgets.task_runner import TaskRunner
from gpudesk.ui.widgets.task_runner import error_text


class CloudAccountBox(Retranslating, QGroupBox):
    """Keys for one provider: fields, Verify and save, Remove, and the current status."""

    saved = Signal(str)  # provider

    def __init__(self, provider: ProviderName, ledger: Ledger,
                 build: Callable[[Credentials], Provider], parent: QWidget | None = None):
        super().__init__(parent)
        self.provider = provider
        self.ledger = ledger
        self.build = build
        self.setObjectName(f"account_{provider}")
        self.key_id = QLineEdit(self)
        self.key_id.setObjectName("keyId")
        self.secret = QLineEdit(self)
        self.secret.setObjectName("secret")
        self.secret.setEchoMode(QLineEdit.EchoMode.Password)
        self.token = QLineEdit(self)
        self.token.setObjectName("sessionToken")
        self.token.setEchoMode(QLineEdit.EchoMode.Password)
        self.profile = QComboBox(self)
        self.profile.setEditable(True)
        self.profile.setObjectName("profile")
        self.import_button = QPushButton(self)
        self.import_button.setObjectName("importProfile")
        self.save_button = QPushButton(self)
        self.save_button.setObjectName("verifySave")
        self.save_button.setDefault(True)
        self.remove_button = QPushButton(self)
        self.remove_button.setObjectName("remove")
        self.status = QLabel(self)
        self.status.setObjectName("status")
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.progress = QProgressBar(self)
        self.progress.setMaximumHeight(8)
        self.progress.setTextVisible(False)

        self.form = QFormLayout()
        self.labels = [QLabel(self) for _ in range(4)]
        self.form.addRow(self.labels[0], self.key_id)
        self.form.addRow(self.labels[1], self.secret)
        if provider == "aws":
            self.form.addRow(self.labels[2], self.token)
            row = QHBoxLayout()
            row.addWidget(self.profile, 1)
            row.addWidget(self.import_button)
            self.form.addRow(self.labels[3], row)
            self.profile.addItems(["default"])
        elif provider == "aliyun":  # ~/.aliyun/config.json profiles; no token field to type
            row = QHBoxLayout()
            row.addWidget(self.profile, 1)
            row.addWidget(self.import_button)
            self.form.addRow(self.labels[3], row)
            _, current, profiles = credentials.aliyun_profiles()
            names = [str(p.get("name")) for p in profiles if p.get("name")]
            self.profile.addItems(names or ["default"])
            if current in names:
                self.profile.setCurrentText(current)
            self.token.hide()
            self.labels[2].hide()
        else:
            for widget in (self.token, self.profile, self.import_button, *self.labels[2:]):
                widget.hide()
        buttons = QHBoxLayout()
        buttons.addWidget(self.save_button)
        buttons.addWidget(self.remove_button)
        buttons.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addLayout(self.form)
        layout.addLayout(buttons)
        layout.addWidget(self.progress)
        layout.addWidget(self.status)

        self.runner = TaskRunner(self, button=self.save_button, progress=self.progress)
        self.runner.failed.connect(self._failed)
        self.save_button.clicked.connect(self.verify_and_save)
        self.remove_button.clicked.connect(self.ask_remove)
        self.import_button.clicked.connect(self.import_profile)
        self.retranslate()
        self.refresh()

    def retranslate(self) -> None:
        aws = self.provider == "aws"
        self.setTitle(accounts.title(self.provider))
        self.labels[0].setText(self.tr("Access key ID") if aws else self.tr("SecretId"))
        self.labels[1].setText(self.tr("Secret access key") if aws else self.tr("SecretKey"))
        self.labels[2].setText(self.tr("Session token (optional)"))
        self.labels[3].setText(self.tr("Or import from ~/.aws profile"))
        if self.provider == "aliyun":
            self.labels[0].setText(self.tr("AccessKey ID"))
            self.labels[1].setText(self.tr("AccessKey secret"))
            self.labels[3].setText(self.tr("Or import from ~/.aliyun profile"))
        self.import_button.setText(self.tr("Import"))
        self.save_button.setText(self.tr("Verify and save"))
        self.remove_button.setText(self.tr("Remove keys"))
        self.secret.setPlaceholderText(self.tr("kept only in the system keyring"))
        self.refresh()


    def refresh(self) -> None:
        account = self.ledger.account(self.provider)
        self.remove_button.setEnabled(account is not None)
        self.status.setProperty("state", "ok" if account else "none")
        self.status.setText(self.describe(account))

    def describe(self, account: Account | None) -> str:
        if account is None:
            return self.tr("No keys yet. They are verified before they are saved.")
        if account.verified_at is None:
            return self.tr("Keys {key} saved, not verified.").format(key=account.key_id_masked)
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(account.verified_at))
        if account.account:
            text = self.tr("Keys {key} are valid: account {account}, verified {when}.").format(
                key=account.key_id_masked, account=account.account, when=when)
        else:  # Tencent Cloud and Alibaba Cloud's key checks do not name the account
            text = self.tr("Keys {key} are valid, verified {when}; {provider} did not return "
                           "the account id.").format(key=account.key_id_masked, when=when,
                                                     provider=accounts.title(self.provider))
        if not account.launch_checked:
            text += " " + self.tr("Whether they may launch machines could not be checked; "
                                  "verify again later.")
        elif not account.can_launch:
            text += " " + self.tr("They may not launch machines; ask for launch permission.")
        return text

    def credentials(self) -> Credentials:
        return Credentials(self.provider, self.key_id.text().strip(), self.secret.text().strip(),
                           self.token.text().strip())

    def verify_and_save(self) -> None:
        creds = self.credentials()
        if not creds.key_id or not creds.secret:
            self.status.setProperty("state", "error")
            self.status.setText(self.tr("Enter both the key ID and the secret."))
            return
        self.status.setText(self.tr("Checking the keys with {provider}…").format(
            provider=accounts.title(self.provider)))
        self.runner.run_blocking(functools.partial(accounts.add_account, self.ledger, creds,
                                                   check=True, build=self.build),
                                 on_success=self._saved,
                                 title=self.tr("The keys were not saved"))

    def _saved(self, account: Account) -> None:
        self.secret.clear()
        self.token.clear()
        self.refresh()
        self.saved.emit(self.provider)

    def _failed(self, message: str) -> None:
        self.status.setProperty("state", "error")
        self.status.setText(message)

    def import_profile(self) -> None:
        try:
            name = self.profile.currentText().strip()
            creds = credentials.aliyun_profile(name) if self.provider == "aliyun" else \
                credentials.aws_profile(name or "default")
        except credentials.CredentialError as exc:
            self._failed(error_text(exc)[0])
            return
        self.key_id.setText(creds.key_id)
        self.secret.setText(creds.secret)
        self.token.setText(creds.session_token)
        self.verify_and_save()

    def ask_remove(self) -> QMessageBox:
        box = QMessageBox(QMessageBox.Icon.Question, self.tr("Remove keys"),
                          self.tr("Remove the {provider} keys from the keyring? Machines keep "
                                  "running; gpudesk can no longer see or stop them.").format(
                              provider=accounts.title(self.provider)),
                          QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel,
                          self)
        box.setObjectName("confirmRemove")
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.accepted.connect(self.remove)
        box.setWindowModality(Qt.WindowModality.WindowModal)
        box.open()
        return box

    def remove(self) -> None:
        try:
            accounts.remove_account(self.ledger, self.provider)
        except credentials.CredentialError as exc:
            self._failed(error_text(exc)[0])
            return
        self.refresh()
        self.saved.emit(self.provider)


class OwnMachinesBox(Retranslating, QGroupBox):
    """SSH machines the user already has (lab servers): no billing, same later steps."""

    changed = Signal()

    def __init__(self, ledger: Ledger, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("ownMachines")
        self.ledger = ledger
        self.list = QListWidget(self)
        self.list.setObjectName("ownList")
        self.list.setMaximumHeight(160)
        self.dialog: OwnMachineDialog | None = None
        self.add_button = QPushButton(self)
        self.add_button.setObjectName("ownAdd")
        self.remove_button = QPushButton(self)
        self.remove_button.setObjectName("ownRemove")
        # a rebuilt machine offers a new host key, which is refused: forget the old pin here
        self.forget_button = QPushButton(self)
        self.forget_button.setObjectName("ownForgetPin")
        self.error = QLabel(self)
        self.error.setObjectName("ownError")
        self.error.setWordWrap(True)
        buttons = QHBoxLayout()
        buttons.addWidget(self.add_button)
        buttons.addWidget(self.remove_button)
        buttons.addWidget(self.forget_button)
        buttons.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addWidget(self.list)
        layout.addLayout(buttons)
        layout.addWidget(self.error)
        self.add_button.clicked.connect(self.open_add_dialog)
        self.remove_button.clicked.connect(self.remove_selected)
        self.forget_button.clicked.connect(self.ask_forget_pin)
        self.list.itemSelectionChanged.connect(self._selection_changed)
        self.retranslate()
        self.refresh()

    def retranslate(self) -> None:
        self.setTitle(self.tr("Your own machines (SSH)"))
        self.add_button.setText(self.tr("Add my own SSH machine…"))
        self.remove_button.setText(self.tr("Remove"))
        self.forget_button.setText(self.tr("Forget its host key…"))
        self.forget_button.setToolTip(self.tr(
            "For a machine that was rebuilt or reinstalled: its new host key is refused until "
            "the old pinned one is forgotten."))


    def refresh(self) -> None:
        self.list.clear()
        for m in self.ledger.machines(include_ended=False):
            if m.provider == "own":
                key = m.key_file or self.tr("ssh-agent")
                item = QListWidgetItem(f"{m.name} — {m.ssh_user}@{m.public_ip}:{m.ssh_port} "
                                       f"({key}; {m.remote_python or 'python3'})", self.list)
                item.setData(Qt.ItemDataRole.UserRole, m.id)
        self.remove_button.setEnabled(self.list.count() > 0)
        self._selection_changed()

    def _selection_changed(self) -> None:
        machine = self.selected_machine()
        self.forget_button.setEnabled(
            machine is not None and bool(PinStore().fingerprints(host_alias(machine))))

    def selected_machine(self) -> Machine | None:
        items = self.list.selectedItems()
        return self.ledger.get(str(items[0].data(Qt.ItemDataRole.UserRole))) if items else None

    def ask_forget_pin(self) -> QMessageBox | None:
        """Forget the selected machine's pinned host key, once the user confirms."""
        machine = self.selected_machine()
        if machine is None:
            return None
        pin = host_alias(machine)  # the name its host key is pinned under

        def done(was: bool) -> None:
            self.error.setText(self.tr(
                "The pinned host key of {name} is forgotten: the next connection shows the "
                "key it offers now, to compare and pin.").format(name=machine.name)
                if was else self.tr("{name} had no pinned host key.").format(
                name=machine.name))
            self._selection_changed()

        return ask_forget(self, pin, done)

    def open_add_dialog(self) -> OwnMachineDialog:
        """The dialog with the whole profile; it tests the login before adding."""
        dialog = OwnMachineDialog(self.ledger, self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.added.connect(self._added)
        dialog.destroyed.connect(lambda _o=None: setattr(self, "dialog", None))
        self.dialog = dialog
        dialog.open()
        return dialog

    def _added(self, ledger_id: str) -> None:
        machine = self.ledger.get(ledger_id)
        self.error.setText(self.tr("Added {name}: its host key is pinned and Run and Watch "
                                   "use its profile.").format(
            name=machine.name if machine else ledger_id))
        self.refresh()
        self.changed.emit()

    def remove_selected(self) -> QMessageBox | None:
        """Ask, then remove the selected profile (its runs' records stay)."""
        machine = self.selected_machine()
        if machine is None:
            return None
        return confirm(
            self, QMessageBox.Icon.Question, self.tr("Remove {name}").format(name=machine.name),
            self.tr("Remove {name} ({target}) from your machines? Nothing on the machine is "
                    "touched; Run and Watch no longer offer it, and you can add it "
                    "again.").format(name=machine.name,
                                     target=f"{machine.ssh_user}@{machine.public_ip}"
                                     if machine.ssh_user else machine.public_ip),
            "confirmOwnRemove",
            (self.tr("Remove"), QMessageBox.ButtonRole.DestructiveRole, "confirmOwnRemoveButton"),
            lambda: self.remove(machine.id))

    def remove(self, ledger_id: str) -> None:
        gone = self.ledger.get(ledger_id)
        name = gone.name if gone is not None and gone.name else ledger_id
        self.ledger.remove(ledger_id)
        self.error.setText(self.tr("Removed {name} from your machines.").format(name=name))
        self.refresh()
        self.changed.emit()


class AccountsPage(Retranslating, QWidget):
    changed = Signal()  # keys or machines were added or removed

    def __init__(self, ledger: Ledger,
                 build: Callable[[Credentials], Provider] = accounts.build_provider,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("accountsPage")
        self.aws = CloudAccountBox("aws", ledger, build, self)
        self.tencent = CloudAccountBox("tencent", ledger, build, self)
        self.aliyun = CloudAccountBox("aliyun", ledger, build, self)
        self.own = OwnMachinesBox(ledger, self)
        self.note = QLabel(self)
        self.note.setWordWrap(True)
        self.note.setObjectName("accountsNote")
        left = QVBoxLayout()
        left.addWidget(self.aws)
        left.addWidget(self.tencent)
        left.addWidget(self.aliyun)
        left.addStretch(1)
        right = QVBoxLayout()
        right.addWidget(self.own)
        right.addWidget(self.note)
        right.addStretch(1)
        layout = QHBoxLayout(self)
        layout.addLayout(left, 1)
        layout.addLayout(right, 1)
        for box in (self.aws, self.tencent, self.aliyun):
            box.saved.connect(lambda _p: self.changed.emit())
        self.own.changed.connect(self.changed.emit)
        self.retranslate()
        self._check_keyring()

    def retranslate(self) -> None:
        self.note.setText(self.tr(
            "Keys are stored only in the system keyring, never in a file, a log or the "
            "command line. Give gpudesk keys of a user that may launch, stop and terminate "
            "instances and manage key pairs and security groups — nothing more."))


    def _check_keyring(self) -> None:
        try:
            credentials.ensure_backend()
        except credentials.KeyringUnavailable as exc:
            for box in (self.aws, self.tencent, self.aliyun):
                box.save_button.setEnabled(False)
                box._failed(error_text(exc)[0])
