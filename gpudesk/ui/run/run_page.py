"""Run: pick a machine, a project and a script, press Run, and watch the log — or close the app.

The run is detached on the machine (``services/runs``): closing the window
only stops following it, and choosing it again later continues the log from
the start. Stop asks first (it ends training; Resume carries on from the
newest checkpoint). TensorBoard and Jupyter start on the machine bound to
127.0.0.1 and open here through an SSH tunnel; "Open terminal" starts the
system terminal with ssh and the same pinned host key.
"""

from __future__ import annotations

import codecs
import contextlib
import functools
import re
import shlex
import shutil
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QCoreApplication, QObject, QProcess, Qt, QUrl, Signal
from PySide6.QtGui import (
    QDesktopServices,
    QGuiApplication,
    QTextCursor,
    QTextDocument,
    QTextOption,
)
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QTextEdit,
    QVBoxLayout,
    QWidget,
)

from gpudesk.services.cloud.launcher import Launcher
from gpudesk.services.core.window_state import load_state, update_state
from gpudesk.services.money.ledger import Ledger, Machine
from gpudesk.services.remote import targets
from gpudesk.services.remote.sync import SyncCancelled
from gpudesk.services.runs import detached as runs
from gpudesk.services.runs import run_control, spot_recovery
from gpudesk.services.runs.detached import RunRecord, RunStatus
from gpudesk.services.runs.run_control import FollowResult, LogFollower, RunForm, Tunnel, TunnelSpec
from gpudesk.ui.widgets.host_key_question import HostKeyQuestion
from gpudesk.ui.widgets.machine_combo import MachineCombo
from gpudesk.ui.widgets.retranslate import Retranslating
from gpudesk.ui.widgets.task_runner import TaskRunner, error_text, show_error

LOG_MAX_LINES = 50_000  # the whole log stays on the machine; the view keeps the newest lines
MAX_HIGHLIGHTS = 500
RANK_PREFIX = re.compile(r"^\[(?:default|rank)\d+\]:")  # torchrun --tee's per-rank lines
TERMINALS = ("x-terminal-emulator", "gnome-terminal", "konsole", "xfce4-terminal", "xterm")


class _Bridge(QObject):
    """Worker-thread callbacks, re-emitted as queued signals on the GUI thread."""

    data = Signal(object, bytes)  # (follower, chunk)
    ended = Signal(object, object)  # (follower, FollowResult)
    status = Signal(object, object)  # (follower, RunStatus): known once connected
    report = Signal(str)
    mirror = Signal(object)  # spot_recovery.MirrorState: the copy's size and data-out cost


def _emit(signal: Any, *args: object) -> None:
    """Emit from a worker thread; a page closed meanwhile has nobody left to tell."""
    with contextlib.suppress(RuntimeError):  # "Signal source has been deleted"
        signal.emit(*args)


def _unless_cancelled(fn: Callable[..., RunRecord]) -> Callable[..., RunRecord | None]:
    """``fn``, with a cancelled sync answered as None (the user asked: not an error box)."""
    def call(*args: Any) -> RunRecord | None:
        try:
            return fn(*args)
        except SyncCancelled:
            return None
    return call


def terminal_command(ssh_argv: list[str]) -> tuple[str, list[str]] | None:
    """The program and arguments that open a terminal running ``ssh_argv``, or None."""
    if sys.platform == "darwin":
        # Terminal runs the script through a shell: quote each word for the shell (a
        # known_hosts path under "Application Support" has a space; a key path may hold
        # metacharacters), then escape the line for an AppleScript string literal.
        line = shlex.join(ssh_argv).replace("\\", "\\\\").replace('"', '\\"')
        return "osascript", ["-e", f'tell application "Terminal" to do script "{line}"']
    if sys.platform == "win32":
        return "cmd.exe", ["/c", "start", "", *ssh_argv]
    for name in TERMINALS:
        found = shutil.which(name)
        if found:
            return found, ["--", *ssh_argv] if name == "gnome-terminal" else ["-e", *ssh_argv]
    return None


class RunPage(Retranslating, QWidget):
    run_started = Signal(str)  # run id

    def __init__(self, ledger: Ledger, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("runPage")
        self.ledger = ledger
        self.question = HostKeyQuestion(self)
        self.follower: LogFollower | None = None
        self.mirror: spot_recovery.CheckpointMirror | None = None
        self.follow_error: BaseException | None = None
        self.launcher: Launcher | None = None  # set by the window: recovery launches with it
        self.tunnels: dict[tuple[str, str], Tunnel] = {}
        self.last_status: RunStatus | None = None
        self.last_exit_code: int | None = None
        self.last_doubt: run_control.Doubt | None = None
        self.match_count = 0
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._bridge = _Bridge(self)
        self._bridge.data.connect(self._append, Qt.ConnectionType.QueuedConnection)
        self._bridge.ended.connect(self._follow_ended, Qt.ConnectionType.QueuedConnection)
        self._bridge.status.connect(self._status_known, Qt.ConnectionType.QueuedConnection)
        self._bridge.report.connect(self._say, Qt.ConnectionType.QueuedConnection)
        self._bridge.mirror.connect(self._show_mirror, Qt.ConnectionType.QueuedConnection)
        self._start_detached = QProcess.startDetached  # replaced by tests
        self.remote_root = runs.DEFAULT_ROOT  # where projects and runs live on the machine

        # -- the new-run form
        self.form_box = QGroupBox(self)
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
        self.nproc.setRange(1, 64)
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
        self.run_button = QPushButton(self)
        self.run_button.setObjectName("runStart")
        self.run_button.setDefault(True)
        self.form = QFormLayout(self.form_box)
        self._labels: dict[str, QLabel] = {}
        for key, widget in (("machine", self.machine), ("identity", self._row(
                self.identity, self.identity_browse)), ("project", self._row(
                self.project, self.project_browse)), ("script", self.script),
                ("args", self.args), ("nproc", self.nproc), ("nodes", self.nodes),
                ("amp", self.amp), ("checkpoint", self.checkpoint), ("python", self.python)):
            label = QLabel(self)
            self._labels[key] = label
            self.form.addRow(label, widget)
        self.cancel_start_button = QPushButton(self)
        self.cancel_start_button.setObjectName("runCancelStart")
        self.cancel_start_button.setEnabled(False)
        self.form.addRow(self._row(self.run_button, self.cancel_start_button))

        # -- the chosen run
        self.run_box = QGroupBox(self)
        self.runs = QComboBox(self)
        self.runs.setObjectName("runList")
        self.runs.setMinimumContentsLength(36)
        self.state = QLabel(self)
        self.state.setObjectName("runState")
        self.stop_button = QPushButton(self)
        self.stop_button.setObjectName("runStop")
        self.resume_button = QPushButton(self)
        self.resume_button.setObjectName("runResume")
        self.recover_button = QPushButton(self)
        self.recover_button.setObjectName("runRecover")
        self.tensorboard_button = QPushButton(self)
        self.tensorboard_button.setObjectName("runTensorBoard")
        self.jupyter_button = QPushButton(self)
        self.jupyter_button.setObjectName("runJupyter")
        self.terminal_button = QPushButton(self)
        self.terminal_button.setObjectName("runTerminal")
        self.search = QLineEdit(self)
        self.search.setObjectName("runSearch")
        self.search.setClearButtonEnabled(True)
        self.search.setMinimumWidth(200)
        self.find_prev = QPushButton(self)
        self.find_next = QPushButton(self)
        self.matches = QLabel(self)
        self.matches.setObjectName("runMatches")
        self.log = QPlainTextEdit(self)
        self.log.setObjectName("runLog")
        self.log.setReadOnly(True)
        self.log.setMaximumBlockCount(LOG_MAX_LINES)
        self.log.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)  # long lines wrap
        self.log.setWordWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
        self.log.document().setDefaultFont(QGuiApplication.font())
        self.log.setStyleSheet("font-family: monospace;")
        self.progress = QProgressBar(self)
        self.progress.setMaximumWidth(120)
        self.status = QLabel(self)
        self.status.setObjectName("runStatus")
        self.status.setWordWrap(True)

        top = QHBoxLayout()
        top.addWidget(self.runs, 1)
        top.addWidget(self.state)
        top.addWidget(self.stop_button)
        top.addWidget(self.resume_button)
        top.addWidget(self.recover_button)
        tools = QHBoxLayout()
        for w in (self.tensorboard_button, self.jupyter_button, self.terminal_button):
            tools.addWidget(w)
        tools.addStretch(1)
        tools.addWidget(self.search, 1)
        tools.addWidget(self.find_prev)
        tools.addWidget(self.find_next)
        tools.addWidget(self.matches)
        right = QVBoxLayout(self.run_box)
        right.addLayout(top)
        right.addLayout(tools)
        right.addWidget(self.log, 1)
        body = QHBoxLayout()
        body.addWidget(self.form_box)
        body.addWidget(self.run_box, 1)
        bottom = QHBoxLayout()
        bottom.addWidget(self.status, 1)
        bottom.addWidget(self.progress)
        layout = QVBoxLayout(self)
        layout.addLayout(body, 1)
        layout.addLayout(bottom)

        self.launch_runner = TaskRunner(self, button=self.run_button, progress=self.progress)
        self.action_runner = TaskRunner(self, progress=self.progress)
        self.tunnel_runner = TaskRunner(self, progress=self.progress)
        for runner in (self.launch_runner, self.action_runner, self.tunnel_runner):
            runner.failed.connect(self.status.setText)
        self.identity_browse.clicked.connect(self._browse_identity)
        self.project_browse.clicked.connect(self._browse_project)
        self.run_button.clicked.connect(self.start_run)
        self._start_cancel = threading.Event()
        self.cancel_start_button.clicked.connect(self.cancel_start)
        self.launch_runner.started.connect(lambda: self.cancel_start_button.setEnabled(True))
        self.launch_runner.finished.connect(
            lambda _ok: self.cancel_start_button.setEnabled(False))
        self.stop_button.clicked.connect(self.ask_stop)
        self.resume_button.clicked.connect(self.resume_run)
        self.recover_button.clicked.connect(self.ask_recover)
        self.tensorboard_button.clicked.connect(
            lambda: self.open_tunnel(run_control.TENSORBOARD))
        self.jupyter_button.clicked.connect(lambda: self.open_tunnel(run_control.JUPYTER))
        self.terminal_button.clicked.connect(self.open_terminal)
        self.runs.activated.connect(lambda _i: self._chosen(self.selected_run()))
        self.machine.currentIndexChanged.connect(lambda _i: self._show_profile())
        self.search.textChanged.connect(self._highlight)
        self.search.returnPressed.connect(lambda: self.find_in_log(backward=False))
        self.find_next.clicked.connect(lambda: self.find_in_log(backward=False))
        self.find_prev.clicked.connect(lambda: self.find_in_log(backward=True))
        self.destroyed.connect(self._bridge.deleteLater)
        self.retranslate()
        self.reload_machines()
        self.reload_runs()
        self._restore()

    @staticmethod
    def _row(*widgets: QWidget) -> QWidget:
        holder = QWidget()
        row = QHBoxLayout(holder)
        row.setContentsMargins(0, 0, 0, 0)
        for w in widgets:
            row.addWidget(w, 1 if isinstance(w, QLineEdit) else 0)
        return holder

    # ------------------------------------------------------------------ text

    def retranslate(self) -> None:
        self.form_box.setTitle(self.tr("New run"))
        self.run_box.setTitle(self.tr("Run"))
        texts = {"machine": self.tr("Machine:"), "identity": self.tr("Key file:"),
                 "project": self.tr("Project folder:"), "script": self.tr("Script:"),
                 "args": self.tr("Arguments:"), "nproc": self.tr("GPUs per machine:"),
                 "nodes": self.tr("More machines:"), "amp": self.tr("Mixed precision:"),
                 "checkpoint": self.tr("Checkpoint every:"), "python": self.tr("Python:")}
        for key, text in texts.items():
            self._labels[key].setText(text)
        line = self.machine.lineEdit()
        if line is not None:
            line.setPlaceholderText(self.tr("a machine, or ssh://user@host:port"))
        self._show_profile()
        self.nodes.setPlaceholderText(self.tr("for multi-node: other machines, comma-separated"))
        self.args.setPlaceholderText(self.tr("e.g. --epochs 10 --lr 3e-4"))
        self.identity_browse.setText(self.tr("Browse…"))
        self.project_browse.setText(self.tr("Browse…"))
        current = self.amp.currentIndex()
        self.amp.clear()
        for mode, text in zip(run_control.AMP_MODES, (
                self.tr("as the script chooses"), self.tr("fp16 (with GradScaler)"),
                self.tr("bf16"), self.tr("off (fp32)")), strict=True):
            self.amp.addItem(text, mode)
        self.amp.setCurrentIndex(max(0, current))
        self.checkpoint.setSuffix(self.tr(" min"))
        self.checkpoint.setSpecialValueText(self.tr("as the script chooses"))
        self.run_button.setText(self.tr("Run"))
        self.cancel_start_button.setText(self.tr("Cancel"))
        self.cancel_start_button.setToolTip(self.tr(
            "Stop the sync of a run that is starting; nothing is started on the machine."))
        self.stop_button.setText(self.tr("Stop…"))
        self.resume_button.setText(self.tr("Resume"))
        self.recover_button.setText(self.tr("Recover on a new machine…"))
        self.recover_button.setToolTip(self.tr(
            "The machine is gone (a spot interruption): launch one like it and resume from "
            "the checkpoints copied to this computer"))
        self.tensorboard_button.setText(self.tr("TensorBoard"))
        self.jupyter_button.setText(self.tr("Jupyter"))
        self.terminal_button.setText(self.tr("Open terminal"))
        self.search.setPlaceholderText(self.tr("Search the log"))
        self.find_prev.setText(self.tr("Previous"))
        self.find_next.setText(self.tr("Next"))
        self.setToolTip("")
        self._show_state()
        self._highlight()
        if not self.status.text():
            self.status.setText(self.tr("The run goes on when you close gpudesk or the "
                                        "connection drops; choose it here to see its log."))


    # ------------------------------------------------------------------ data

    def reload_machines(self) -> None:
        self.machine.reload()

    def machine_ref(self) -> str:
        return self.machine.ref()

    def reload_runs(self, select: str = "") -> None:
        chosen = self.selected_run()
        current = select or (chosen.id if chosen is not None else "")
        self.runs.clear()
        for record in run_control.recorded_runs():
            self.runs.addItem(f"{record.id} — {record.script} ({record.main.host})", record.id)
        if current:
            index = self.runs.findData(current)
            if index >= 0:
                self.runs.setCurrentIndex(index)
        self._update_buttons()

    def selected_run(self) -> RunRecord | None:
        run_id = self.runs.currentData()
        if not run_id:
            return None
        try:
            return RunRecord.load(str(run_id))
        except runs.RunError:
            return None

    def form_values(self) -> RunForm:
        profile = self.profile()
        root = profile.remote_root if profile is not None and profile.remote_root \
            else self.remote_root
        return RunForm(target=self.machine_ref(), project=self.project.text().strip(),
                       script=self.script.text().strip(), args=self.args.text(),
                       identity=self.identity.text().strip(), nproc=self.nproc.value(),
                       nodes=[n for n in self.nodes.text().split(",") if n.strip()],
                       amp=str(self.amp.currentData() or ""),
                       checkpoint_every_min=float(self.checkpoint.value()),
                       python=self.python.text().strip(), root=root)

    def profile(self) -> Machine | None:
        """The chosen ledger machine (its profile: key file, python, folder), if any."""
        ref = self.machine_ref()
        return None if not ref or ref.startswith("ssh://") else self.ledger.find(ref)

    def _show_profile(self) -> None:
        """A machine with a profile fills in its python, and says which key it uses."""
        m = self.profile()
        if m is None:
            self.identity.setPlaceholderText(self.tr("only for ssh:// and your own machines"))
            return
        if m.key_file:
            self.identity.setPlaceholderText(self.tr("from the machine: {key}").format(
                key=m.key_file))
        elif m.provider == "own":
            self.identity.setPlaceholderText(self.tr("from the machine: the ssh-agent"))
        else:
            self.identity.setPlaceholderText(self.tr("from the machine: the key in the "
                                                     "keyring"))
        if m.remote_python and self.python.text().strip() in ("", runs.DEFAULT_PYTHON):
            self.python.setText(m.remote_python)

    # ------------------------------------------------------------------ remembered

    def _form_fields(self) -> dict[str, QLineEdit]:
        line = self.machine.lineEdit()
        fields = {"identity": self.identity, "project": self.project, "script": self.script,
                  "args": self.args, "nodes": self.nodes, "python": self.python}
        if line is not None:
            fields["machine"] = line
        return fields

    def save_form(self) -> None:
        """Remember the form (no secrets: a key *path* at most) for the next start."""
        form: dict[str, object] = {k: w.text() for k, w in self._form_fields().items()}
        form["machine"] = self.machine_ref()
        form.update(nproc=self.nproc.value(), amp=str(self.amp.currentData() or ""),
                    checkpoint=float(self.checkpoint.value()))
        update_state(run_form=form)

    def _restore(self) -> None:
        """The form and the chosen run as they were when gpudesk closed; the run's log is
        read again from the machine."""
        state = load_state()
        form = state.run_form
        for key, widget in self._form_fields().items():
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
        self._show_profile()
        if state.run_selected and self.runs.findData(state.run_selected) >= 0:
            self.runs.setCurrentIndex(self.runs.findData(state.run_selected))
            record = self.selected_run()
            if record is not None:
                self.attach(record)

    def _keep_profile(self, record: RunRecord) -> None:
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

    def _chosen(self, record: RunRecord | None) -> None:
        update_state(run_selected=record.id if record is not None else "")
        self.attach(record)

    def _update_buttons(self) -> None:
        has = self.selected_run() is not None
        running = self.last_status is not None and self.last_status.running
        self.stop_button.setEnabled(has and running)
        self.stop_button.setToolTip(self.tr("Stop the run (asks first)") if running else self.tr(
            "Enabled while the chosen run is running"))
        self.resume_button.setEnabled(has and self.last_status is not None and not running)
        gone = self.follow_error is not None or (
            self.last_status is not None and self.last_status.state in ("lost", "missing"))
        self.recover_button.setVisible(has and gone)
        for button in (self.tensorboard_button, self.jupyter_button, self.terminal_button):
            button.setEnabled(has)

    def _show_state(self) -> None:
        s = self.last_status
        if self.selected_run() is None:
            text = self.tr("no run chosen")
        elif s is None:
            text = self.tr("following…") if self.follower else self.tr("not followed")
        elif s.running:
            text = self.tr("running")
        elif s.state == "exited" and s.cancelled and s.code != 0:
            text = self.tr("stopped on request (exit status {code})").format(code=s.code)
        elif s.state == "exited" and s.code == 0 and self.last_doubt is not None:
            text = self.tr("exit status 0, but did it train? (see below)")
        elif s.state == "exited":
            text = self.tr("finished (exit status {code})").format(code=s.code) if s.code == 0 \
                else self.tr("failed (exit status {code})").format(code=s.code)
        elif s.state == "lost":
            text = self.tr("lost: its processes are gone; Resume carries on from the newest "
                           "checkpoint")
        else:
            text = self.tr("not found on the machine")
        self.state.setText(text)
        self.state.setProperty("state", s.state if s else "none")
        colour = {"running": "#1e8449", "lost": "#c0392b"}.get(s.state if s else "", "")
        if s is not None and s.state == "exited":
            colour = "#1e8449" if s.code == 0 else "" if s.cancelled else "#c0392b"
            if s.code == 0 and self.last_doubt is not None:
                colour = "#b26a00"
        self.state.setStyleSheet(f"font-weight: bold; color: {colour};" if colour
                                 else "font-weight: bold;")

    # ------------------------------------------------------------------ actions

    def _browse_project(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, self.tr("Project folder"),
                                                  self.project.text() or str(Path.home()))
        if folder:
            self.project.setText(folder)

    def _browse_identity(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, self.tr("SSH key file"),
                                              str(Path.home() / ".ssh"))
        if path:
            self.identity.setText(path)

    def start_run(self) -> None:
        form = self.form_values()
        try:
            form.check()  # before anything connects: a readable refusal, nothing changed
        except Exception as exc:  # noqa: BLE001 - shown in words
            self.status.setText(error_text(exc)[0])
            return
        self.save_form()
        self._detach()
        self.log.clear()
        self.status.setText(self.tr("Connecting, checking the machine (driver, CUDA, Python, "
                                    "torch, disk), syncing the project and starting the run…"))
        self._start_cancel = threading.Event()
        start = functools.partial(run_control.start_run, pusher=functools.partial(
            run_control.push_in_child, cancel=self._start_cancel))
        self.launch_runner.run_blocking(_unless_cancelled(start), form, self.question.policy(),
                                        self._bridge.report.emit, on_success=self._started,
                                        title=self.tr("The run did not start"))

    def cancel_start(self) -> None:
        """Stop a start that is still syncing: the sync ends between files, nothing starts.
        Once the sync is over the run starts anyway (and is shown), as Stop can end it."""
        self._start_cancel.set()
        self.cancel_start_button.setEnabled(False)
        self.status.setText(self.tr("Cancelling: the sync stops after the file it is "
                                    "copying…"))

    def _started(self, record: RunRecord | None) -> None:
        if record is None:
            self.status.setText(self.tr("Cancelled before the run started; nothing was started "
                                        "on the machine. Files already copied are complete."))
            return
        self.status.setText(self.tr("Run {run} started.").format(run=record.id))
        update_state(run_selected=record.id)
        self._keep_profile(record)
        self.reload_runs(select=record.id)
        self.run_started.emit(record.id)
        self.attach(record, offset=record.log_offset, clear=False)

    def attach(self, record: RunRecord | None, *, offset: int = 0, clear: bool = True) -> None:
        """Follow ``record``'s log (from ``offset``) until it ends or another run is chosen."""
        self._detach()
        self.last_status = None
        self.last_doubt = None
        self.follow_error = None
        if clear:
            self.log.clear()
        if record is None:
            self._show_state()
            self._update_buttons()
            return
        self._decoder.reset()
        bridge = self._bridge
        follower = LogFollower(record, self.question.policy(), offset=offset,
                               on_data=lambda d: _emit(bridge.data, follower, d),
                               on_end=lambda r: _emit(bridge.ended, follower, r),
                               on_status=lambda st: _emit(bridge.status, follower, st))
        self.follower = follower.start()
        # A spot machine can vanish with its disk: keep copies of the checkpoints here.
        self.mirror = spot_recovery.CheckpointMirror(
            record, self.question.policy(), on_pull=lambda st: _emit(bridge.mirror, st)).start()
        self._show_state()
        self._update_buttons()

    def _show_mirror(self, state: spot_recovery.MirrorState) -> None:
        """Before the first checkpoint copy: how much it moves and what that data out costs."""
        if state.pulls != 0:
            return
        size = f"{state.next_bytes / (1 << 30):.2f} GB"
        if not state.currency:
            cost = self.tr("free (your own machine)")
        elif state.cost is None:
            cost = self.tr("billed by the cloud as data out (gpudesk has no price for it)")
        else:
            cost = self.tr("about {cost} of data out").format(
                cost=f"{state.cost:.2f} {state.currency}")
        text = self.tr("Keeping copies of the last {n} checkpoint(s) here; this copy moves "
                       "{size}: {cost}.").format(n=len(state.kept), size=size, cost=cost)
        if state.over_cap:
            text += " " + self.tr("{n} checkpoint(s) do not fit the size cap and stay only on "
                                  "the machine.").format(n=len(state.over_cap))
        self.status.setText(text)

    def _detach(self) -> None:
        if self.follower is not None:
            self.follower.stop()
            self.follower = None
        spot_recovery.stop_quietly(self.mirror)
        self.mirror = None

    def _append(self, follower: LogFollower, data: bytes) -> None:
        if follower is not self.follower:
            return  # a run no longer shown
        text = self._decoder.decode(data)
        if text:
            self._insert(text)

    def _insert(self, text: str) -> None:
        bar = self.log.verticalScrollBar()
        at_end = bar.value() >= bar.maximum() - 4
        cursor = QTextCursor(self.log.document())
        cursor.movePosition(QTextCursor.MoveOperation.End)
        cursor.insertText(text)
        if at_end:
            bar.setValue(bar.maximum())
        if self.search.text():
            self._highlight()

    def _follow_ended(self, follower: LogFollower, result: FollowResult) -> None:
        if follower is not self.follower:
            return
        self.follower = None
        self.follow_error = result.error
        if result.error is not None:
            self.status.setText(self.tr("Stopped following: {why}").format(
                why=error_text(result.error)[0]))
        else:
            self.last_status = result.status
            self.last_exit_code = result.exit_code
            self._judge(result.status)
        self._show_state()
        self._update_buttons()

    def _status_known(self, follower: LogFollower, status: RunStatus) -> None:
        """The run's state as soon as the follower is connected: Stop is enabled while it
        runs (not only once following ends)."""
        if follower is not self.follower:
            return
        self.last_status = status
        self._show_state()
        self._update_buttons()

    def _last_lines(self, n: int = 6) -> str:
        """The script's own last lines (torchrun prefixes them with the rank), not torchrun's
        summary of the failure."""
        lines = [line for line in self.log.toPlainText().splitlines()
                 if line.strip() and not line.startswith("gpudesk:")]
        ranked = [line for line in lines if RANK_PREFIX.match(line)]
        return "\n".join((ranked or lines)[-n:])

    def _judge(self, status: RunStatus | None) -> None:
        """A failure says why in its last log lines; an exit status 0 that trained nothing
        is not shown as a success."""
        record = self.selected_run()
        if status is None or status.state != "exited" or record is None:
            return
        if status.code != 0 and not status.cancelled:
            self.status.setText(self.tr("Run {run} failed (exit status {code}). Its last lines:"
                                        "\n{lines}").format(run=record.id, code=status.code,
                                                            lines=self._last_lines() or "—"))
            return
        tail = self.log.toPlainText()[-256 * 1024:]
        self.last_doubt = run_control.doubtful_success(status, record.nproc, tail)
        if self.last_doubt is not None:
            self.status.setText(QCoreApplication.translate(
                "RunControl", self.last_doubt.template).format(**self.last_doubt.values))

    def _say(self, line: str) -> None:
        start_of_line = self.log.document().isEmpty() or self.log.toPlainText().endswith("\n")
        self._insert(("" if start_of_line else "\n") + f"gpudesk: {line}\n")

    def ask_stop(self) -> None:
        record = self.selected_run()
        if record is None:
            return
        box = QMessageBox(QMessageBox.Icon.Warning, self.tr("Stop the run?"), self.tr(
            "Stop run {run}? Training ends now; what was not checkpointed is lost. Resume "
            "carries on from the newest checkpoint.").format(run=record.id),
            QMessageBox.StandardButton.Cancel, self)
        box.setObjectName("stopRunQuestion")
        stop = box.addButton(self.tr("Stop run"), QMessageBox.ButtonRole.DestructiveRole)
        stop.setObjectName("stopRunConfirm")
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.setWindowModality(Qt.WindowModality.WindowModal)
        box.buttonClicked.connect(lambda b: self.stop_run(record) if b is stop else None)
        box.open()

    def stop_run(self, record: RunRecord) -> None:
        self.status.setText(self.tr("Stopping run {run}…").format(run=record.id))
        self.action_runner.run_blocking(run_control.stop_run, record, self.question.policy(),
                                        on_success=lambda s: self._stopped(record, s),
                                        title=self.tr("The run was not stopped"))

    def _stopped(self, record: RunRecord, status: RunStatus) -> None:
        self.status.setText(self.tr("Run {run} was asked to stop.").format(run=record.id))
        if self.follower is None:
            self.last_status = status
            self._show_state()
            self._update_buttons()

    def resume_run(self) -> None:
        """Ask the machine what Resume would carry on from first: with no checkpoint it
        starts over, and the user is asked (it is not silently step 0)."""
        record = self.selected_run()
        if record is None:
            return
        self.status.setText(self.tr("Looking for run {run}'s checkpoints…").format(
            run=record.id))
        self.action_runner.run_blocking(run_control.run_status, record, self.question.policy(),
                                        on_success=lambda st: self._resume_checked(record, st),
                                        title=self.tr("The run did not resume"))

    def _resume_checked(self, record: RunRecord, status: RunStatus) -> None:
        if status.running:
            self.last_status = status
            self._show_state()
            self._update_buttons()
            self.status.setText(self.tr("Run {run} is still running.").format(run=record.id))
            return
        if status.checkpoints:
            self.status.setText(self.tr("Resuming run {run} from {checkpoint}…").format(
                run=record.id, checkpoint=status.latest_checkpoint))
            self._resume(record)
            return
        box = QMessageBox(QMessageBox.Icon.Question, self.tr("No checkpoint"), self.tr(
            "Run {run} has no checkpoint on the machine, so Resume starts it over from step 0 "
            "(the script did not save one through gpudesk.training, or it stopped before the "
            "first). Start it over?").format(run=record.id),
            QMessageBox.StandardButton.Cancel, self)
        box.setObjectName("resumeQuestion")
        over = box.addButton(self.tr("Start over"), QMessageBox.ButtonRole.AcceptRole)
        over.setObjectName("resumeStartOver")
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.setWindowModality(Qt.WindowModality.WindowModal)
        box.buttonClicked.connect(lambda b: self._resume(record) if b is over else
                                  self.status.setText(self.tr("Not resumed.")))
        box.open()

    def _resume(self, record: RunRecord) -> None:
        self.status.setText(self.tr("Resuming run {run}…").format(run=record.id))
        resume = functools.partial(run_control.resume_run, pusher=run_control.push_in_child)
        self.launch_runner.run_blocking(resume, record, self.question.policy(),
                                        self._bridge.report.emit, on_success=self._resumed,
                                        title=self.tr("The run did not resume"))

    def _resumed(self, record: RunRecord) -> None:
        self.status.setText(self.tr("Run {run} resumed (attempt {n}).").format(
            run=record.id, n=record.attempt))
        self.attach(record, offset=record.log_offset, clear=False)

    def ask_recover(self) -> None:
        record = self.selected_run()
        if record is None:
            return
        saved = spot_recovery.mirrored_checkpoints(record)
        where = self.tr("from {checkpoint}").format(checkpoint=saved[-1].name) if saved \
            else self.tr("from the beginning (no checkpoint was copied)")
        box = QMessageBox(QMessageBox.Icon.Question, self.tr("Recover the run?"), self.tr(
            "Launch a new machine like {machine} (it bills from now on) and resume run {run} "
            "there {where}?").format(machine=record.main.target, run=record.id, where=where),
            QMessageBox.StandardButton.Cancel, self)
        box.setObjectName("recoverQuestion")
        go = box.addButton(self.tr("Launch and resume"), QMessageBox.ButtonRole.AcceptRole)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.setWindowModality(Qt.WindowModality.WindowModal)
        box.buttonClicked.connect(lambda b: self.recover(record) if b is go else None)
        box.open()

    def recover(self, record: RunRecord) -> None:
        launcher = self.launcher if self.launcher is not None else Launcher(self.ledger)
        report = self._bridge.report.emit

        async def work() -> RunRecord:
            import asyncio

            report(f"launching a machine like {record.main.target}")
            new_id = await spot_recovery.relaunch_like(launcher, record.main.target)
            policy = await asyncio.to_thread(spot_recovery.replacement_policy, new_id)
            return await asyncio.to_thread(spot_recovery.recover, record, new_id, None,
                                           policy, report=report,
                                           pusher=run_control.push_in_child)

        self.status.setText(self.tr("Launching a new machine for run {run}…").format(
            run=record.id))
        self.launch_runner.run(work(), on_success=self._resumed,
                               title=self.tr("The run was not recovered"))

    def open_tunnel(self, spec: TunnelSpec) -> None:
        record = self.selected_run()
        if record is None:
            return
        key = (record.id, spec.name)
        if key in self.tunnels:
            QDesktopServices.openUrl(QUrl(self.tunnels[key].url))
            return
        self.status.setText(self.tr("Starting {service} on the machine…").format(
            service=spec.name))
        self.tunnel_runner.run_blocking(run_control.open_tunnel, record, spec,
                                        self.question.policy(),
                                        on_success=lambda t: self._tunnel_open(key, t),
                                        title=self.tr("{service} did not open").format(
                                            service=spec.name))

    def _tunnel_open(self, key: tuple[str, str], tunnel: Tunnel) -> None:
        self.tunnels[key] = tunnel
        self.status.setText(self.tr("{service} is open at 127.0.0.1:{port} (through SSH; "
                                    "nothing else is exposed).").format(
            service=tunnel.spec.name, port=tunnel.forward.local_port))
        QDesktopServices.openUrl(QUrl(tunnel.url))

    def open_terminal(self) -> None:
        record = self.selected_run()
        if record is None:
            return
        try:
            target = targets.resolve(record.main.target, run_control.identity_path(
                record.main.identity))
            ssh_argv = run_control.terminal_ssh_argv(target)
        except Exception as exc:  # noqa: BLE001 - shown in words
            show_error(self, self.tr("No terminal"), exc)
            return
        found = terminal_command(ssh_argv)
        if found is None or not self._start_detached(*found)[0]:
            QGuiApplication.clipboard().setText(" ".join(ssh_argv))
            self.status.setText(self.tr("No terminal program was found; the ssh command is "
                                        "on the clipboard."))
            return
        self.status.setText(self.tr("Opened a terminal on {host}.").format(host=target.host))

    # ------------------------------------------------------------------ search

    def find_in_log(self, *, backward: bool) -> bool:
        text = self.search.text()
        if not text:
            return False
        flags = QTextDocument.FindFlag.FindBackward if backward else QTextDocument.FindFlag(0)
        if self.log.find(text, flags):
            return True
        cursor = self.log.textCursor()  # wrap around
        cursor.movePosition(QTextCursor.MoveOperation.End if backward
                            else QTextCursor.MoveOperation.Start)
        self.log.setTextCursor(cursor)
        return self.log.find(text, flags)

    def _highlight(self) -> None:
        text = self.search.text()
        selections: list[QTextEdit.ExtraSelection] = []
        count = 0
        if text:
            doc = self.log.document()
            cursor = doc.find(text)
            colour = self.palette().highlight().color()
            colour.setAlpha(90)
            while not cursor.isNull():
                count += 1
                if len(selections) < MAX_HIGHLIGHTS:
                    sel = QTextEdit.ExtraSelection()
                    sel.cursor = cursor
                    sel.format.setBackground(colour)
                    selections.append(sel)
                cursor = doc.find(text, cursor)
        self.log.setExtraSelections(selections)
        self.match_count = count
        self.matches.setText(self.tr("{n} found").format(n=count) if text else "")

    # ------------------------------------------------------------------ closing

    def shutdown(self) -> None:
        """Stop following and close the tunnels; runs on the machines go on. The form is
        kept as it was left, for the next start."""
        self._detach()
        self.save_form()
        for tunnel in self.tunnels.values():
            tunnel.close()
        self.tunnels.clear()
