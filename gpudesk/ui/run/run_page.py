"""Run: pick a machine, a project and a script, press Run, and watch the log — or close the app.

The run is detached on the machine (``services/runs``): closing the window
only stops following it, and choosing it again later shows what gpudesk said
while starting it (preflight, sync) and the log from the start. Stop asks
first (it ends training; Resume carries on from the newest checkpoint).

The page is put together from its form (``run_form``), the chosen run's row
(``run_list``), the log (``run_log_view``) and what is done to a run
(``run_actions``: stop, resume, recover, tunnels, a terminal), and its
folder in the bucket (``run_outputs``). Here: starting a run and following its log.
"""

from __future__ import annotations

import contextlib
import functools
import sys  # noqa: F401 - tests set run_page.sys.platform for terminal_command
import threading
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QCoreApplication
from PySide6.QtCore import QObject
from PySide6.QtCore import QProcess
from PySide6.QtCore import Qt
from PySide6.QtCore import Signal
from PySide6.QtWidgets import QGroupBox
from PySide6.QtWidgets import QHBoxLayout
from PySide6.QtWidgets import QLabel
from PySide6.QtWidgets import QProgressBar
from PySide6.QtWidgets import QSplitter
from PySide6.QtWidgets import QVBoxLayout
from PySide6.QtWidgets import QWidget

from gpudesk.services.cloud.launcher import Launcher
from gpudesk.services.core.window_state import load_state
from gpudesk.services.core.window_state import update_state
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine
from gpudesk.services.remote import bootstrap
from gpudesk.services.remote.sync import SyncCancelled
from gpudesk.services.runs import detached as runs
from gpudesk.services.runs import run_control
from gpudesk.services.runs import spot_recovery
from gpudesk.services.runs.detached import RunRecord
from gpudesk.services.runs.detached import RunStatus
from gpudesk.services.runs.run_control import FollowResult
from gpudesk.services.runs.run_control import LogFollower
from gpudesk.services.runs.run_control import RunForm
from gpudesk.services.storage.errors import StorageError
from gpudesk.ui.run.run_actions import TERMINALS
from gpudesk.ui.run.run_actions import RunActions
from gpudesk.ui.run.run_actions import terminal_command
from gpudesk.ui.run.run_form import RunFormBox
from gpudesk.ui.run.run_list import RunList
from gpudesk.ui.run.run_log_view import LOG_MAX_LINES
from gpudesk.ui.run.run_log_view import RunLogView
from gpudesk.ui.run.run_machines import RunMachines
from gpudesk.ui.run.run_outputs import RunOutputs
from gpudesk.ui.widgets.host_key_question import HostKeyQuestion
from gpudesk.ui.widgets.retranslate import Retranslating
from gpudesk.ui.widgets.said_text import said_text
from gpudesk.ui.widgets.task_runner import TaskRunner
from gpudesk.ui.widgets.task_runner import error_text

# A refused form's message -> the field it is about (marked, and focused)
FIELD_OF: dict[str, str] = {
    run_control.MSG_NO_TARGET: "machine", run_control.MSG_NO_PROJECT: "project",
    run_control.MSG_NO_SCRIPT: "script", runs.MSG_NO_SCRIPT: "script",
    run_control.MSG_BAD_ARGS: "args"}

QUEUE_ONLY = ("queued", "cancelled")  # a queue's run that never had a run folder

__all__ = ["LOG_MAX_LINES", "TERMINALS", "RunPage", "terminal_command"]
translate = QCoreApplication.translate  # the name lupdate looks for


class _Bridge(QObject):
    """Worker-thread callbacks, re-emitted as queued signals on the GUI thread."""

    data = Signal(object, bytes)  # (follower, chunk)
    ended = Signal(object, object)  # (follower, FollowResult)
    status = Signal(object, object)  # (follower, RunStatus): known once connected
    report = Signal(object)  # a line (runs.Said, translated when shown)
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


class RunPage(RunActions, Retranslating, QWidget):
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
        self.tunnels: dict[tuple[str, str], run_control.Tunnel] = {}
        self.last_status: RunStatus | None = None
        self.last_exit_code: int | None = None
        self.last_doubt: run_control.Doubt | None = None
        self.starting = False  # a start is under way (preflight, sync)
        self._bridge = _Bridge(self)
        self._bridge.data.connect(self._append, Qt.ConnectionType.QueuedConnection)
        self._bridge.ended.connect(self._follow_ended, Qt.ConnectionType.QueuedConnection)
        self._bridge.status.connect(self._status_known, Qt.ConnectionType.QueuedConnection)
        self._bridge.report.connect(self._say, Qt.ConnectionType.QueuedConnection)
        self._bridge.mirror.connect(self._show_mirror, Qt.ConnectionType.QueuedConnection)
        self._start_detached = QProcess.startDetached  # replaced by tests
        self.remote_root = runs.DEFAULT_ROOT  # where projects and runs live on the machine

        self.form_box = RunFormBox(ledger, self)
        self.run_box = QGroupBox(self)
        self.run_list = RunList(self)
        self.log_view = RunLogView(self)
        self.outputs = RunOutputs(self)  # the chosen run's folder in its bucket
        self.machines_view = RunMachines(ledger, self)  # a kept-alive run's machines
        self.dataset_line = QLabel(self)  # which dataset at which version it used (32)
        self.dataset_line.setObjectName("runDataset")
        self.dataset_line.setWordWrap(True)
        self.dataset_line.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.dataset_line.setVisible(False)
        self._dataset_said: str = ""
        for i, w in enumerate((self.run_list.tensorboard_button, self.run_list.jupyter_button,
                               self.run_list.terminal_button)):
            self.log_view.tools.insertWidget(i, w)
        self.progress = QProgressBar(self)
        self.progress.setMaximumWidth(120)
        self.status = QLabel(self)
        self.status.setObjectName("runStatus")
        self.status.setWordWrap(True)
        # The widgets by their old names (the window, the tests and the actions use them).
        f, r, v = self.form_box, self.run_list, self.log_view
        self.machine, self.identity, self.project, self.script = (f.machine, f.identity,
                                                                  f.project, f.script)
        self.args, self.nproc, self.nodes, self.amp = f.args, f.nproc, f.nodes, f.amp
        self.checkpoint, self.python, self.run_button = f.checkpoint, f.python, f.run_button
        self.cancel_start_button = f.cancel_start_button
        self.queue_button, self.queue_view = f.queue_button, f.queue_view
        self.runs, self.state, self.stop_button = r.runs, r.state, r.stop_button
        self.resume_button, self.recover_button = r.resume_button, r.recover_button
        self.tensorboard_button, self.jupyter_button = r.tensorboard_button, r.jupyter_button
        self.terminal_button = r.terminal_button
        self.search, self.matches, self.log = v.search, v.matches, v.log

        right = QVBoxLayout(self.run_box)
        right.addWidget(self.run_list)
        right.addWidget(self.dataset_line)
        split = QSplitter(Qt.Orientation.Vertical, self.run_box)
        split.addWidget(self.log_view)
        split.addWidget(self.machines_view)
        split.addWidget(self.outputs)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 0)
        split.setStretchFactor(2, 2)
        split.setChildrenCollapsible(False)
        right.addWidget(split, 1)
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
        self.launch_runner.describe = self.refusal_text  # the box says the log's words (31)
        self.action_runner = TaskRunner(self, progress=self.progress)
        self.tunnel_runner = TaskRunner(self, progress=self.progress)
        for runner in (self.launch_runner, self.action_runner, self.tunnel_runner):
            runner.failed.connect(self.status.setText)
        self.launch_runner.failed.connect(self._start_failed)
        self.run_button.clicked.connect(self.start_run)
        self.queue_button.clicked.connect(self.queue_run)
        self.queue_view.bind(self.form_values, self.question.policy)
        # each read of the queue brings the runs' states up to date: the list follows
        self.queue_view.states_read.connect(lambda: self.reload_runs())
        self.queue_view.states_read.connect(self.follow_queued_line)
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
        self.destroyed.connect(self._bridge.deleteLater)
        self.retranslate()
        self.reload_machines()
        self.reload_runs()
        self._restore()

    def retranslate(self) -> None:
        self.run_box.setTitle(self.tr("Run"))
        if self._dataset_said:
            self.dataset_line.setText(said_text(self._dataset_said))
        self.setToolTip("")
        self._refresh()
        if not self.status.text():
            self.status.setText(self.tr("The run goes on when you close gpudesk or the "
                                        "connection drops; choose it here to see its log."))

    # ------------------------------------------------------------------ data

    @property
    def match_count(self) -> int:
        return self.log_view.match_count

    def find_in_log(self, *, backward: bool) -> bool:
        return self.log_view.find_in_log(backward=backward)

    def reload_machines(self) -> None:
        self.machine.reload()

    def machine_ref(self) -> str:
        return self.form_box.machine_ref()

    def profile(self) -> Machine | None:
        return self.form_box.profile()

    def form_values(self) -> RunForm:
        return self.form_box.values(self.remote_root)

    def save_form(self) -> None:
        self.form_box.save()

    def reload_runs(self, select: str = "") -> None:
        self.run_list.reload(select or self.run_list.selected_id())
        self._refresh()

    def selected_run(self) -> RunRecord | None:
        return self.run_list.selected()

    def _restore(self) -> None:
        """The form and the chosen run as they were when gpudesk closed; the run's log is
        read again from the machine, after what gpudesk said while starting it."""
        self.form_box.restore()
        chosen = load_state().run_selected
        if chosen and self.runs.findData(chosen) >= 0:
            self.runs.setCurrentIndex(self.runs.findData(chosen))
            record = self.selected_run()
            if record is not None:
                self.attach(record)

    def _chosen(self, record: RunRecord | None) -> None:
        update_state(run_selected=record.id if record is not None else "")
        self.run_list.refused = ""
        self.attach(record)

    def _refresh(self) -> None:
        """The state label, the list item's state and the buttons, from what is known."""
        record = self.selected_run()
        if record is not None and record.last_state in QUEUE_ONLY and not self.starting and (
                self.last_status is None or self.last_status.state == "missing"):
            # waiting in (or cancelled from) the machine's queue: no run folder yet is not
            # a lost run, and nothing to recover (issue 31)
            self.run_list.show_queued(record.last_state)
            self.run_list.update_buttons(None, gone=False)
            return
        word = self.run_list.show_state(self.last_status, following=self.follower is not None,
                                        doubt=self.last_doubt, starting=self.starting)
        record = self.selected_run()
        if word and record is not None and self.last_status is not None:
            self.run_list.remember(record, word)
        gone = self.follow_error is not None or (
            self.last_status is not None and self.last_status.state in ("lost", "missing"))
        self.run_list.update_buttons(self.last_status, gone=gone)

    def _update_buttons(self) -> None:
        self._refresh()

    # ------------------------------------------------------------------ starting

    def form_refused(self, exc: BaseException) -> None:
        """The form cannot start a run (no script there, no project…): said where the user
        looks, under the Script field with the field marked, and in the log pane, which no
        longer shows the previous run's lines as if they were this one's (issue 31)."""
        why = error_text(exc)[0]
        self.status.setText(why)
        self.form_box.say_field(FIELD_OF.get(getattr(exc, "template", ""), ""), why)
        self._clear_pane()
        self.run_list.refused = why
        self.log_view.say(self.tr("the run did not start: {why}").format(why=why))
        self._refresh()

    def _clear_pane(self) -> None:
        """No run chosen: the log, outputs and machines panes show none (they agree)."""
        self._detach()
        self.outputs.show_run(None)
        self.machines_view.show_run(None)
        self.log_view.clear()
        self.run_list.refused = ""
        self.run_list.choose_none()
        self.last_status, self.last_doubt, self.follow_error = None, None, None

    def start_run(self) -> None:
        form = self.form_values()
        try:
            form.check()  # before anything connects: a readable refusal, nothing changed
        except Exception as exc:  # noqa: BLE001 - shown in words
            self.form_refused(exc)
            return
        self.save_form()
        self.form_box.say_store("")
        self.form_box.say_field("", "")
        # From here on the pane shows this start, and the list no run: they agree.
        self._clear_pane()
        self.starting = True
        self._refresh()
        chosen = self.ledger.get(form.target)  # its name, never the internal id (issue 31)
        self.log_view.say(self.tr("starting {script} on {machine}, {device}").format(
            script=form.script, machine=(chosen.name or form.target) if chosen is not None
            else form.target, device=said_text(runs.device_text(form.nproc))))
        self.status.setText(self.tr("Connecting, checking the machine (driver, CUDA, Python, "
                                    "torch, disk), syncing the project and starting the run…"))
        self._start_cancel = threading.Event()
        start = functools.partial(run_control.start_run, pusher=functools.partial(
            run_control.push_in_child, cancel=self._start_cancel))
        self.launch_runner.run_blocking(_unless_cancelled(start), form, self.question.policy(),
                                        self._bridge.report.emit, on_success=self._started,
                                        title=self.tr("The run did not start"))

    def refusal_text(self, exc: BaseException | None) -> str:
        """Why a start was refused, pointing at this window's own controls."""
        if exc is not None and getattr(exc, "template", None) == bootstrap.MSG_NO_PYTHON:
            values = getattr(exc, "values", {})
            return self.tr("No Python on {target} ('{python}' was not found). Install it (on "
                           "Ubuntu: sudo apt install python3 python3-venv), or enter the right "
                           "one in the Python field of this form.").format(
                target=values.get("target", ""), python=values.get("python", ""))
        return error_text(exc)[0] if exc is not None else ""

    def _start_failed(self, message: str) -> None:
        if not self.starting:
            return  # a resume or a recovery: the status line says it
        self.starting = False
        why = self.refusal_text(self.launch_runner.last_error) or message
        if isinstance(self.launch_runner.last_error, StorageError):  # next to the bucket
            self.form_box.say_store(why)
        self.run_list.refused = why
        self.log_view.say(self.tr("the run did not start: {why}").format(why=why))
        self.status.setText(why)
        self._refresh()

    def cancel_start(self) -> None:
        """Stop a start that is still syncing: the sync ends between files, nothing starts.
        Once the sync is over the run starts anyway (and is shown), as Stop can end it."""
        self._start_cancel.set()
        self.cancel_start_button.setEnabled(False)
        self.status.setText(self.tr("Cancelling: the sync stops after the file it is "
                                    "copying…"))

    def _started(self, record: RunRecord | None) -> None:
        self.starting = False
        if record is None:
            text = self.tr("Cancelled before the run started; nothing was started on the "
                           "machine. Files already copied are complete.")
            self.run_list.refused = text
            self.log_view.say(text)
            self.status.setText(text)
            self._refresh()
            return
        self.status.setText(self.tr("Run {run} started.").format(run=record.id))
        update_state(run_selected=record.id)
        self.form_box.keep_profile(record)
        self.reload_runs(select=record.id)
        self.run_started.emit(record.id)
        self.attach(record, offset=record.log_offset, clear=False)

    # ------------------------------------------------------------------ following

    def attach(self, record: RunRecord | None, *, offset: int = 0, clear: bool = True) -> None:
        """Follow ``record``'s log (from ``offset``) until it ends or another run is chosen;
        a cleared pane first shows what the run is and what gpudesk said starting it."""
        self._detach()
        self.outputs.show_run(record)
        self.machines_view.show_run(record)
        self._show_dataset(record)
        self.last_status = None
        self.last_doubt = None
        self.follow_error = None
        if clear:
            self.log_view.clear()
        if record is None:
            self._refresh()
            return
        if clear:
            self.log_view.say(self.tr("run {run}: {script} on {machine}, {device}").format(
                run=record.id, script=record.script, machine=record.main.host
                or record.main.target, device=said_text(runs.device_text(record.nproc))))
            for line in record.said():
                self.log_view.say(line)
        self.log_view.reset_decoder()
        bridge = self._bridge
        follower = LogFollower(record, self.question.policy(), offset=offset,
                               on_data=lambda d: _emit(bridge.data, follower, d),
                               on_end=lambda r: _emit(bridge.ended, follower, r),
                               on_status=lambda st: _emit(bridge.status, follower, st),
                               on_note=lambda line: _emit(bridge.report, line))
        self.follower = follower.start()
        # A spot machine can vanish with its disk: keep copies of the checkpoints here.
        self.mirror = spot_recovery.CheckpointMirror(
            record, self.question.policy(), on_pull=lambda st: _emit(bridge.mirror, st)).start()
        self._refresh()

    def _show_dataset(self, record: RunRecord | None) -> None:
        """The line naming the run's dataset and its version (``gpudesk outputs`` says it
        too); hidden for a run without one."""
        from gpudesk.services.runs.run_data import dataset_line

        said = dataset_line(record.data) if record is not None else None
        self._dataset_said = said or ""
        self.dataset_line.setText(said_text(said) if said is not None else "")
        self.dataset_line.setVisible(said is not None)

    def _detach(self) -> None:
        if self.follower is not None:
            self.follower.stop()
            self.follower = None
        spot_recovery.stop_quietly(self.mirror)
        self.mirror = None

    def _append(self, follower: LogFollower, data: bytes) -> None:
        if follower is self.follower:  # else a run no longer shown
            self.log_view.append_bytes(data)

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
        self._refresh()

    def _status_known(self, follower: LogFollower, status: RunStatus) -> None:
        """The run's state as soon as the follower is connected: Stop is enabled while it
        runs (not only once following ends)."""
        if follower is not self.follower:
            return
        self.last_status = status
        if status.state == "running":
            self.log_view.runs_again()  # a folded stop above is an earlier one (issue 31)
        self._refresh()

    def _judge(self, status: RunStatus | None) -> None:
        """A failure says why in its last log lines; an exit status 0 that trained nothing
        is not shown as a success; a stop on request folds torchrun's traceback of it."""
        record = self.selected_run()
        if status is None or status.state != "exited" or record is None:
            return
        if status.cancelled:
            folded = self.log_view.fold_stop_traceback()
            self.status.setText(self.tr("Run {run} stopped on request.").format(run=record.id)
                                + (" " + self.tr("torchrun's traceback of the stop signal is "
                                                 "folded ({n} lines).").format(n=folded)
                                   if folded else ""))
            return
        if status.teardown:  # every rank finished, then a process aborted on its way out
            folded = self.log_view.fold_teardown()
            self.status.setText(self.tr(
                "Run {run} finished: every process wrote its final checkpoint and said so; "
                "the exit status {code} came from a process's teardown after that, not from "
                "training.").format(run=record.id, code=status.code)
                + (" " + self.tr("Those lines are folded ({n} lines).").format(n=folded)
                   if folded else ""))
            return
        if status.code != 0:
            self.status.setText(self.tr("Run {run} failed (exit status {code}). Its last lines:"
                                        "\n{lines}").format(
                run=record.id, code=status.code, lines=self.log_view.last_lines() or "—"))
            return
        tail = self.log_view.text()[-256 * 1024:]
        self.last_doubt = run_control.doubtful_success(status, record.nproc, tail,
                                                       record.said())
        if self.last_doubt is not None:
            self.status.setText(QCoreApplication.translate(
                "RunControl", self.last_doubt.template).format(**self.last_doubt.values))

    def _say(self, line: str) -> None:
        self.log_view.say(line)

    # ------------------------------------------------------------------ closing

    def shutdown(self) -> None:
        """Stop following and close the tunnels; runs on the machines go on. The form is
        kept as it was left, for the next start."""
        self._detach()
        self.save_form()
        for tunnel in self.tunnels.values():
            tunnel.close()
        self.tunnels.clear()
