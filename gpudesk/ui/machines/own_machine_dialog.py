"""Add my own SSH machine: its profile (user, port, key file or ssh-agent, Python, folder,
the bucket its runs keep their data in), a first login that pins its host key, then the
machine in the ledger — in one dialog.

Nothing is added, and no host key stays pinned, until the login worked: a wrong key or
user is said in words and the fields stay as typed. A host key that changed since it was
pinned is refused, with a button to forget the old pin (after a confirmation). Only the
key file's *path* is kept, never a key. A bucket that is missing, unreachable or refuses
the account's keys is checked before the login and said next to its field (issue 30).
"""

from __future__ import annotations

import functools
import getpass
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtCore import Signal
from PySide6.QtWidgets import QDialog
from PySide6.QtWidgets import QFileDialog
from PySide6.QtWidgets import QFormLayout
from PySide6.QtWidgets import QHBoxLayout
from PySide6.QtWidgets import QLabel
from PySide6.QtWidgets import QLineEdit
from PySide6.QtWidgets import QMessageBox
from PySide6.QtWidgets import QProgressBar
from PySide6.QtWidgets import QPushButton
from PySide6.QtWidgets import QSpinBox
from PySide6.QtWidgets import QVBoxLayout
from PySide6.QtWidgets import QWidget

from gpudesk.services.cloud.machines import add_own_machine
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine
from gpudesk.services.remote import targets
from gpudesk.services.remote.host_keys import HostKeyPolicy
from gpudesk.services.remote.host_keys import PinStore
from gpudesk.services.remote.ssh import SshTarget
from gpudesk.services.storage.errors import StorageError
from gpudesk.ui.widgets.host_key_question import HostKeyQuestion
from gpudesk.ui.widgets.host_key_question import ask_forget
from gpudesk.ui.widgets.host_key_question import changed_pin
from gpudesk.ui.widgets.task_runner import TaskRunner


def login_then_pin(target: SshTarget, policy: HostKeyPolicy,
                   python: str) -> targets.LoginCheck:
    """The login test; a host key it accepted stays pinned only if the whole test worked."""
    with PinStore().kept_if_ok(target.known_as):
        return targets.check_login(target, policy, python)


def store_then_login(target: SshTarget, policy: HostKeyPolicy, python: str, store: str,
                     region: str) -> tuple[targets.LoginCheck, str, str]:
    """The bucket checked first (as ``gpudesk add-machine --store``), then the login test:
    (what the login found, the store URI as kept, its region)."""
    from gpudesk.services.storage.store_check import checked_store

    uri, where = checked_store(store, region)
    return login_then_pin(target, policy, python), uri, where


class OwnMachineDialog(QDialog):
    """Fields, "Test and add", and what the test found; ``added`` carries the ledger id."""

    added = Signal(str)

    def __init__(self, ledger: Ledger, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("ownMachineDialog")
        self.ledger = ledger
        self.machine: Machine | None = None
        self.question = HostKeyQuestion(self)
        self.name = QLineEdit(self)
        self.name.setObjectName("ownName")
        self.host = QLineEdit(self)
        self.host.setObjectName("ownHost")
        self.user = QLineEdit(getpass.getuser(), self)
        self.user.setObjectName("ownUser")
        self.port = QSpinBox(self)
        self.port.setObjectName("ownPort")
        self.port.setRange(1, 65535)
        self.port.setValue(22)
        self.key_file = QLineEdit(self)
        self.key_file.setObjectName("ownKeyFile")
        self.key_browse = QPushButton(self)
        self.key_browse.setObjectName("ownKeyBrowse")
        self.python = QLineEdit("python3", self)
        self.python.setObjectName("ownPython")
        self.root = QLineEdit("~/gpudesk", self)
        self.root.setObjectName("ownRoot")
        self.store = QLineEdit(self)
        self.store.setObjectName("ownStore")
        self.store.setClearButtonEnabled(True)
        self.store_region = QLineEdit(self)
        self.store_region.setObjectName("ownStoreRegion")
        self.store_error = QLabel(self)
        self.store_error.setObjectName("ownStoreError")
        self.store_error.setWordWrap(True)
        self.store_error.setStyleSheet("color: #d32f2f;")
        self.store_error.setVisible(False)
        self.gpus = QSpinBox(self)
        self.gpus.setObjectName("ownGpus")
        self.gpus.setRange(0, 16)
        self.message = QLabel(self)
        self.message.setObjectName("ownMessage")
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.progress = QProgressBar(self)
        self.progress.setMaximumHeight(8)
        self.progress.setTextVisible(False)
        self.test_button = QPushButton(self)
        self.test_button.setObjectName("ownTestAdd")
        self.test_button.setDefault(True)
        self.close_button = QPushButton(self)
        self.close_button.setObjectName("ownClose")
        # shown only when the machine offered another host key than the one pinned for it
        self.forget_button = QPushButton(self)
        self.forget_button.setObjectName("ownForgetKey")
        self.forget_button.setVisible(False)
        self._changed_pin = ""
        self._host = ""  # the address the running test logs in to

        key_row = QHBoxLayout()
        key_row.addWidget(self.key_file, 1)
        key_row.addWidget(self.key_browse)
        self.labels = {k: QLabel(self) for k in ("name", "host", "user", "port", "key",
                                                   "python", "root", "store", "region",
                                                   "gpus")}
        form = QFormLayout()
        form.addRow(self.labels["name"], self.name)
        form.addRow(self.labels["host"], self.host)
        form.addRow(self.labels["user"], self.user)
        form.addRow(self.labels["port"], self.port)
        form.addRow(self.labels["key"], key_row)
        form.addRow(self.labels["python"], self.python)
        form.addRow(self.labels["root"], self.root)
        store_box = QVBoxLayout()
        store_box.addWidget(self.store)
        store_box.addWidget(self.store_error)
        form.addRow(self.labels["store"], store_box)
        form.addRow(self.labels["region"], self.store_region)
        form.addRow(self.labels["gpus"], self.gpus)
        buttons = QHBoxLayout()
        buttons.addWidget(self.forget_button)
        buttons.addStretch(1)
        buttons.addWidget(self.test_button)
        buttons.addWidget(self.close_button)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.progress)
        layout.addWidget(self.message)
        layout.addLayout(buttons)
        self.runner = TaskRunner(self, button=self.test_button, progress=self.progress,
                                 show_dialog=False)
        self.runner.failed.connect(self._login_failed)
        self.runner.finished.connect(lambda _ok: self.test_button.setEnabled(
            self.machine is None))  # added once: a second click would add it twice
        self.test_button.clicked.connect(self.test_and_add)
        self.close_button.clicked.connect(self.reject)
        self.key_browse.clicked.connect(self._browse_key)
        self.forget_button.clicked.connect(self.ask_forget)
        self.retranslate()
        self.setMinimumWidth(560)

    def retranslate(self) -> None:
        self.setWindowTitle(self.tr("Add my own SSH machine"))
        for key, text in (("name", self.tr("Name:")), ("host", self.tr("Host or address:")),
                          ("user", self.tr("User:")), ("port", self.tr("SSH port:")),
                          ("key", self.tr("Key file:")), ("python", self.tr("Python:")),
                          ("root", self.tr("Folder on the machine:")),
                          ("store", self.tr("Bucket for run data:")),
                          ("region", self.tr("Bucket region:")),
                          ("gpus", self.tr("GPUs:"))):
            self.labels[key].setText(text)
        # 0 is "count them at the login test", and it says so: no silent override
        self.gpus.setSpecialValueText(self.tr("count at login"))
        self.name.setPlaceholderText(self.tr("e.g. lab-server (the host when empty)"))
        self.host.setPlaceholderText(self.tr("e.g. gpu01.lab.example.org or 10.0.0.5"))
        self.key_file.setPlaceholderText(self.tr("empty: use the keys of your ssh-agent"))
        self.python.setToolTip(self.tr("The python runs use there, e.g. python3 or "
                                       "~/venv/bin/python"))
        self.root.setToolTip(self.tr("Where gpudesk keeps projects, runs and its agent"))
        self.store.setPlaceholderText(self.tr("optional: s3://bucket/prefix, "
                                              "cos://bucket-appid/prefix or oss://bucket/prefix"))
        self.store.setToolTip(self.tr(
            "Runs on this machine keep their checkpoints, logs and outputs there, with "
            "short-lived keys limited to each run's folder, so a run outlives the machine. "
            "Checked before the machine is added."))
        self.store_region.setPlaceholderText(self.tr("COS and OSS: e.g. ap-shanghai "
                                                     "(AWS finds it)"))
        self.key_browse.setText(self.tr("Browse…"))
        self.forget_button.setText(self.tr("Forget the pinned key…"))
        self.test_button.setText(self.tr("Test and add"))
        self.close_button.setText(self.tr("Close") if self.machine else self.tr("Cancel"))
        if not self.message.text():
            self.message.setText(self.tr(
                "gpudesk logs in once to check the key and to pin the machine's host key "
                "(you compare its fingerprint), then adds the machine."))

    def _browse_key(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, self.tr("SSH key file"),
                                              str(Path.home() / ".ssh"))
        if path:
            self.key_file.setText(path)

    def test_and_add(self) -> None:
        if self.machine is not None:
            return
        host = self.host.text().strip()
        if not host:
            self._failed(self.tr("enter the machine's address: its host name or IP address."))
            self.host.setFocus()
            return
        if any(c.isspace() for c in host):
            self._failed(self.tr("an address has no spaces: enter one host name or IP "
                                 "address."))
            self.host.setFocus()
            return
        from gpudesk.services.cloud.machines import name_taken

        name = self.name.text().strip() or host
        if name_taken(self.ledger, name):  # Run and Watch choose machines by their names
            self._failed(self.tr("a machine named {name} is already in your list: choose "
                                 "another name, or remove that one first.").format(name=name))
            self.name.setFocus()
            return
        try:
            target = targets.profile_target(self.name.text(), host, self.port.value(),
                                            self.user.text(), self.key_file.text())
        except Exception as exc:  # noqa: BLE001 - a missing key file, said in words
            from gpudesk.ui.widgets.task_runner import error_text

            self._failed(error_text(exc)[0])
            return
        self.message.setProperty("state", "busy")
        self.message.setText(self.tr("Logging in to {target}…").format(target=str(target)))
        self.forget_button.setVisible(False)
        self.store_error.setVisible(False)
        self._host = host  # what is added is what was tested, whatever is typed meanwhile
        self.runner.run_blocking(functools.partial(
            store_then_login, target, self.question.policy(),
            self.python.text().strip() or "python3", self.store.text(),
            self.store_region.text()), on_success=self._tested)

    def _tested(self, answer: tuple[targets.LoginCheck, str, str]) -> None:
        found, store, store_region = answer
        url = self._host
        if not found.python:  # a profile whose Python is not there could run nothing
            self._failed(self.tr(
                "{python} was not found on {target}: enter the machine's python in the Python "
                "field (for example /usr/bin/python3 or a venv's bin/python), then test "
                "again.").format(python=self.python.text().strip() or "python3",
                                 target=found.target))
            self.python.setFocus()
            return
        machine = add_own_machine(
            self.ledger, self.name.text(), url, self.port.value(), self.user.text(),
            gpus=self.gpus.value() or found.gpus, key_file=self.key_file.text(),
            python=self.python.text(), root=self.root.text(), store=store,
            store_region=store_region)
        self.machine = machine
        parts = [self.tr("Connected to {target}; its host key {fingerprint} is pinned.").format(
            target=found.target, fingerprint=found.fingerprint)]
        if not found.torch:
            parts.append(self.tr("Python {version} is there, without torch: install it there "
                                 "({python} -m pip install torch) or choose a venv's "
                                 "python.").format(version=found.python,
                                                   python=self.python.text().strip()))
        else:
            parts.append(self.tr("Python {python}, torch {torch}, {gpus} GPU(s).").format(
                python=found.python, torch=found.torch, gpus=found.gpus))
        if store:
            parts.append(self.tr("Its runs keep their data in {uri} ({region}).").format(
                uri=store, region=store_region))
        parts.append(self.tr("Added as {name}: Run and Watch use this profile.").format(
            name=machine.name))
        self.message.setProperty("state", "ok")
        self.message.setText(" ".join(parts))
        self.test_button.setEnabled(False)
        self.close_button.setText(self.tr("Close"))
        self.added.emit(machine.id)

    def _login_failed(self, text: str) -> None:
        self._failed(text)
        if isinstance(self.runner.last_error, StorageError):  # said next to the bucket too
            self.store_error.setText(text)
            self.store_error.setVisible(True)
            self.store.setFocus()
        self._changed_pin = changed_pin(self.runner.last_error)
        self.forget_button.setVisible(bool(self._changed_pin))

    def ask_forget(self) -> QMessageBox | None:
        """The changed key's way out, for a machine that was rebuilt: confirm, then forget."""
        if not self._changed_pin:
            return None
        name = self._changed_pin
        return ask_forget(self, name, lambda _was: self._forgotten(name))

    def _forgotten(self, name: str) -> None:
        self._changed_pin = ""
        self.forget_button.setVisible(False)
        self.message.setProperty("state", "")
        self.message.setText(self.tr(
            "The pinned host key of {name} is forgotten. Test and add again, and compare the "
            "key it offers now with the machine's console before you pin it.").format(
            name=name))

    def _failed(self, text: str) -> None:
        self.message.setProperty("state", "error")
        self.message.setText(self.tr("Not added: {why}").format(why=text))
