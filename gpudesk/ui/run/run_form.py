"""The Run page's form: machine, key, project, script, GPUs per machine (0: a CPU run)…

It remembers itself between starts (no secrets: a key *path* at most), and a
machine's profile fills in its python, key and — for a machine the login test
found without a GPU — a CPU run, shown in the form before anything starts.
Texts are in the "RunPage" translation context, like the rest of the page.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QCoreApplication
from PySide6.QtWidgets import QComboBox
from PySide6.QtWidgets import QDoubleSpinBox
from PySide6.QtWidgets import QFileDialog
from PySide6.QtWidgets import QFormLayout
from PySide6.QtWidgets import QGroupBox
from PySide6.QtWidgets import QHBoxLayout
from PySide6.QtWidgets import QLabel
from PySide6.QtWidgets import QLineEdit
from PySide6.QtWidgets import QPushButton
from PySide6.QtWidgets import QSpinBox
from PySide6.QtWidgets import QVBoxLayout
from PySide6.QtWidgets import QWidget

from gpudesk.services.core.window_state import load_state
from gpudesk.services.core.window_state import update_state
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine
from gpudesk.services.runs import detached as runs
from gpudesk.services.runs import run_control
from gpudesk.services.runs.detached import RunRecord
from gpudesk.services.runs.run_control import RunForm
from gpudesk.ui.run.run_queue_view import RunQueueView
from gpudesk.ui.widgets.machine_combo import MachineCombo
from gpudesk.ui.widgets.retranslate import Retranslating

translate = QCoreApplication.translate  # the name lupdate looks for


def row(*widgets: QWidget) -> QWidget:
    holder = QWidget()
    line = QHBoxLayout(holder)
    line.setContentsMargins(0, 0, 0, 0)
    for w in widgets:
        line.addWidget(w, 1 if isinstance(w, QLineEdit) else 0)
    return holder


class RunFormBox(Retranslating, QGroupBox):
    """The new-run form; ``values(root)`` is what the user filled in."""

    def __init__(self, ledger: Ledger, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ledger = ledger
        self.machine = MachineCombo(ledger, self, min_chars=28)
        self.machine.setObjectName("runMachine")
        self.identity = QLineEdit(self)
        self.identity.setObjectName("runIdentity")
        self.identity_browse = QPushButton(self)
        self.project = QLineEdit(self)
        self.project.setObjectName("runProject")
        self.project_browse = QPushButton(self)
        self.script = QLineEdit("train.py", self)
        self.script.setObjectName("runScript")
        self.args = QLineEdit(self)
        self.args.setObjectName("runArgs")
        self.nproc = QSpinBox(self)
        self.nproc.setObjectName("runNproc")
        self.nproc.setRange(0, 64)  # 0: a CPU run, chosen (never a GPU run that found none)
        self.nproc.setValue(1)
        self.nodes = QLineEdit(self)
        self.nodes.setObjectName("runNodes")
        self.amp = QComboBox(self)
        self.amp.setObjectName("runAmp")
        self.checkpoint = QDoubleSpinBox(self)
        self.checkpoint.setObjectName("runCheckpoint")
        self.checkpoint.setRange(0, 24 * 60)
        self.checkpoint.setDecimals(0)
        self.checkpoint.setSingleStep(5)
        self.python = QLineEdit(runs.DEFAULT_PYTHON, self)
        self.python.setObjectName("runPython")
        self.store = QLineEdit(self)  # this run's bucket instead of the machine's (issue 30)
        self.store.setObjectName("runStore")
        self.store.setClearButtonEnabled(True)
        self.store_error = QLabel(self)
        self.store_error.setObjectName("runStoreError")
        self.store_error.setWordWrap(True)
        self.store_error.setStyleSheet("color: #d32f2f;")
        self.store_error.setVisible(False)
        store_box = QWidget(self)
        store_lines = QVBoxLayout(store_box)
        store_lines.setContentsMargins(0, 0, 0, 0)
        store_lines.addWidget(self.store)
        store_lines.addWidget(self.store_error)
        # a form the Run button refused: said under the Script field, the field marked
        # (issue 31 item 21: not only a status line under a log of the previous run)
        self.form_error = QLabel(self)
        self.form_error.setObjectName("runFormError")
        self.form_error.setWordWrap(True)
        self.form_error.setStyleSheet("color: #d32f2f;")
        self.form_error.setVisible(False)
        self._error_field: QWidget | None = None
        self.data = QLineEdit(self)  # a dataset the machine fetches first (issue 32)
        self.data.setObjectName("runData")
        self.data.setClearButtonEnabled(True)
        self.run_button = QPushButton(self)
        self.run_button.setObjectName("runStart")
        self.run_button.setDefault(True)
        self.cancel_start_button = QPushButton(self)
        self.cancel_start_button.setObjectName("runCancelStart")
        self.cancel_start_button.setEnabled(False)
        self.queue_button = QPushButton(self)  # queues instead of starting (agent/queue.py)
        self.queue_button.setObjectName("runQueueAdd")
        self.queue_view = RunQueueView(self)
        layout = QFormLayout(self)
        self._labels: dict[str, QLabel] = {}
        for key, widget in (("machine", self.machine),
                            ("identity", row(self.identity, self.identity_browse)),
                            ("project", row(self.project, self.project_browse)),
                            ("script", self.script), ("args", self.args),
                            ("nproc", self.nproc), ("nodes", self.nodes), ("amp", self.amp),
                            ("checkpoint", self.checkpoint), ("python", self.python),
                            ("store", store_box), ("data", self.data)):
            label = QLabel(self)
            self._labels[key] = label
            layout.addRow(label, widget)
            if key == "script":
                layout.addRow("", self.form_error)
        layout.addRow(row(self.run_button, self.queue_button, self.cancel_start_button))
        layout.addRow(self.queue_view)
        self.identity_browse.clicked.connect(self._browse_identity)
        for edit in (self.project, self.script, self.args):
            edit.textEdited.connect(self._field_edited)
        self.machine.currentTextChanged.connect(lambda _t: self._field_edited())
        self.project_browse.clicked.connect(self._browse_project)
        self.machine.currentIndexChanged.connect(lambda _i: self.show_profile(chosen=True))
        self.machine.currentTextChanged.connect(lambda _t: self.queue_view.machine_changed())
        self.retranslate()

    def retranslate(self) -> None:
        self.setTitle(translate("RunPage", "New run"))
        texts = {"machine": translate("RunPage", "Machine:"),
                 "identity": translate("RunPage", "Key file:"),
                 "project": translate("RunPage", "Project folder:"),
                 "script": translate("RunPage", "Script:"),
                 "args": translate("RunPage", "Arguments:"),
                 "nproc": translate("RunPage", "GPUs per machine:"),
                 "nodes": translate("RunPage", "More machines:"),
                 "amp": translate("RunPage", "Mixed precision:"),
                 "checkpoint": translate("RunPage", "Checkpoint every:"),
                 "python": translate("RunPage", "Python:"),
                 "store": translate("RunPage", "Bucket:"),
                 "data": translate("RunPage", "Data:")}
        for key, text in texts.items():
            self._labels[key].setText(text)
        line = self.machine.lineEdit()
        if line is not None:
            line.setPlaceholderText(translate("RunPage", "a machine, or ssh://user@host:port"))
        self.show_profile()
        self.nproc.setSpecialValueText(translate("RunPage", "0 (CPU run)"))
        self.nproc.setToolTip(translate("RunPage", "One process per GPU; 0 runs on the CPU "
                                        "(no GPU is used, and the run is labelled CPU)"))
        self.nodes.setPlaceholderText(translate(
            "RunPage", "for multi-node: other machines, comma-separated"))
        self.args.setPlaceholderText(translate("RunPage", "e.g. --epochs 10 --lr 3e-4"))
        self.store.setPlaceholderText(translate(
            "RunPage", "the machine's; or this run's: s3://bucket/prefix"))
        self.store.setToolTip(translate(
            "RunPage", "Where this run keeps its checkpoints, logs and outputs, with "
            "short-lived keys limited to its folder. Checked before the run starts."))
        self.data.setPlaceholderText(translate(
            "RunPage", "none; or a dataset: NAME or NAME:/path/on/machine"))
        self.data.setToolTip(translate(
            "RunPage", "A dataset pushed with 'gpudesk data push' (the Data page): the machine "
            "fetches it from its bucket before the script starts (GPUDESK_DATA_DIR), once per "
            "machine. Or a public source the machine downloads itself: https://host/file, "
            "s3://bucket/prefix (also cos://, oss://), or hf:ORG/NAME for a Hugging Face "
            "dataset (with the token saved on the Data page). Add :/path/on/machine for "
            "where it appears."))
        self.identity_browse.setText(translate("RunPage", "Browse…"))
        self.project_browse.setText(translate("RunPage", "Browse…"))
        current = self.amp.currentIndex()
        self.amp.clear()
        for mode, text in zip(run_control.AMP_MODES, (
                translate("RunPage", "as the script chooses"),
                translate("RunPage", "fp16 (with GradScaler)"), translate("RunPage", "bf16"),
                translate("RunPage", "off (fp32)")), strict=True):
            self.amp.addItem(text, mode)
        self.amp.setCurrentIndex(max(0, current))
        self.checkpoint.setSuffix(translate("RunPage", " min"))
        self.checkpoint.setSpecialValueText(translate("RunPage", "as the script chooses"))
        self.run_button.setText(translate("RunPage", "Run"))
        self.cancel_start_button.setText(translate("RunPage", "Cancel"))
        self.queue_button.setText(translate("RunPage", "Add to queue"))
        self.queue_button.setToolTip(translate(
            "RunPage", "Queue the run on the machine instead of starting it: the machine's "
            "agent starts it when the runs before it have started and the GPUs it asks for "
            "are free."))
        self.cancel_start_button.setToolTip(translate(
            "RunPage", "Stop the sync of a run that is starting; nothing is started on the "
            "machine."))

    # ------------------------------------------------------------------ values

    def machine_ref(self) -> str:
        return self.machine.ref()

    def values(self, default_root: str) -> RunForm:
        profile = self.profile()
        root = profile.remote_root if profile is not None and profile.remote_root \
            else default_root
        return RunForm(target=self.machine_ref(), project=self.project.text().strip(),
                       script=self.script.text().strip(), args=self.args.text(),
                       identity=self.identity.text().strip(), nproc=self.nproc.value(),
                       nodes=[n for n in self.nodes.text().split(",") if n.strip()],
                       amp=str(self.amp.currentData() or ""),
                       checkpoint_every_min=float(self.checkpoint.value()),
                       python=self.python.text().strip(), root=root,
                       store=self.store.text().strip(), data=self.data.text().strip())

    def say_field(self, field: str, text: str) -> None:
        """Why Run refused the form, under the Script field, with ``field`` ("machine",
        "project", "script", "args") marked red and focused; "" clears it. Editing the
        marked field clears it too."""
        if self._error_field is not None:
            self._error_field.setStyleSheet("")
            self._error_field = None
        self.form_error.setText(text)
        self.form_error.setVisible(bool(text))
        widget = {"machine": self.machine, "project": self.project, "script": self.script,
                  "args": self.args}.get(field)
        if text and widget is not None:
            widget.setStyleSheet("border: 2px solid #d32f2f;")
            widget.setFocus()
            self._error_field = widget

    def _field_edited(self) -> None:
        if self._error_field is not None:
            self.say_field("", "")

    def say_store(self, text: str) -> None:
        """Why the bucket was refused, next to its field ("" hides it)."""
        self.store_error.setText(text)
        self.store_error.setVisible(bool(text))

    def profile(self) -> Machine | None:
        """The chosen ledger machine (its profile: key file, python, folder), if any."""
        ref = self.machine_ref()
        return None if not ref or ref.startswith("ssh://") else self.ledger.find(ref)

    def show_profile(self, *, chosen: bool = False) -> None:
        """A machine with a profile fills in its python and says which key it uses; one the
        login test found without a GPU (an own machine) is chosen as a CPU run, in view."""
        m = self.profile()
        if m is None:
            self.identity.setPlaceholderText(translate(
                "RunPage", "only for ssh:// and your own machines"))
            return
        if m.key_file:
            self.identity.setPlaceholderText(translate(
                "RunPage", "from the machine: {key}").format(key=m.key_file))
        elif m.provider == "own":
            self.identity.setPlaceholderText(translate(
                "RunPage", "from the machine: the ssh-agent"))
        else:
            self.identity.setPlaceholderText(translate(
                "RunPage", "from the machine: the key in the keyring"))
        if m.remote_python and self.python.text().strip() in ("", runs.DEFAULT_PYTHON):
            self.python.setText(m.remote_python)
        if chosen and m.provider == "own":
            self.nproc.setValue(m.gpus)  # 0: the login test found no GPU there

    def _browse_project(self) -> None:
        folder = QFileDialog.getExistingDirectory(
            self, translate("RunPage", "Project folder"), self.project.text() or str(Path.home()))
        if folder:
            self.project.setText(folder)

    def _browse_identity(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, translate("RunPage", "SSH key file"),
                                              str(Path.home() / ".ssh"))
        if path:
            self.identity.setText(path)

    # ------------------------------------------------------------------ remembered

    def _fields(self) -> dict[str, QLineEdit]:
        line = self.machine.lineEdit()
        fields = {"identity": self.identity, "project": self.project, "script": self.script,
                  "args": self.args, "nodes": self.nodes, "python": self.python}
        if line is not None:
            fields["machine"] = line
        return fields

    def save(self) -> None:
        """Remember the form (no secrets: a key *path* at most) for the next start."""
        form: dict[str, object] = {k: w.text() for k, w in self._fields().items()}
        form["machine"] = self.machine_ref()
        form.update(nproc=self.nproc.value(), amp=str(self.amp.currentData() or ""),
                    checkpoint=float(self.checkpoint.value()))
        update_state(run_form=form)

    def restore(self) -> None:
        """The form as it was when gpudesk closed."""
        form = load_state().run_form
        for key, widget in self._fields().items():
            value = form.get(key)
            if isinstance(value, str) and key != "machine":
                widget.setText(value)
        machine = form.get("machine")
        if isinstance(machine, str) and machine:
            index = self.machine.findData(machine)
            if index >= 0:
                self.machine.setCurrentIndex(index)
            else:
                self.machine.setCurrentText(machine)
        if isinstance(form.get("nproc"), int):
            self.nproc.setValue(int(form["nproc"]))
        amp = self.amp.findData(form.get("amp", ""))
        if amp >= 0:
            self.amp.setCurrentIndex(amp)
        if isinstance(form.get("checkpoint"), int | float):
            self.checkpoint.setValue(float(form["checkpoint"]))
        self.show_profile()

    def keep_profile(self, record: RunRecord) -> None:
        """A ledger machine (own or launched) keeps the python and key file a run worked
        with, so the next run, Watch and a terminal need not be told again."""
        ref = record.main.target
        machine = None if ref.startswith("ssh://") else self.ledger.find(ref)
        if machine is None:
            return
        changes: dict[str, Any] = {}
        if record.python and record.python != (machine.remote_python or runs.DEFAULT_PYTHON):
            changes["remote_python"] = record.python
        if record.main.identity and record.main.identity != machine.key_file:
            changes["key_file"] = record.main.identity
        if changes:
            self.ledger.update(machine.id, step="profile", detail=", ".join(
                f"{k}={v}" for k, v in changes.items()), **changes)
