"""What the Run page does to a chosen run: Stop (asks first), Resume (asks when there is no
checkpoint), Recover on a new machine (asks: it bills), TensorBoard/Jupyter through an SSH
tunnel, and a terminal with the same pinned host key; and "Add to queue", which queues the
form's run on its machine instead of starting it (``services/runs/run_queue``).

A mixin of ``RunPage``: it uses the page's widgets, runners and ``selected_run``.
Texts are in the "RunPage" translation context, like the rest of the page.
"""

from __future__ import annotations

import functools
import shlex
import shutil
import sys
from typing import TYPE_CHECKING
from typing import Any

from PySide6.QtCore import QCoreApplication
from PySide6.QtCore import QUrl
from PySide6.QtGui import QDesktopServices
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QMessageBox

from gpudesk.services.cloud.launcher import Launcher
from gpudesk.services.core.said import Said
from gpudesk.services.remote import targets
from gpudesk.services.runs import run_control
from gpudesk.services.runs import run_queue
from gpudesk.services.runs import spot_recovery
from gpudesk.services.runs.detached import RunRecord
from gpudesk.services.runs.detached import RunStatus
from gpudesk.services.runs.run_control import Tunnel
from gpudesk.services.runs.run_control import TunnelSpec
from gpudesk.ui.widgets.confirm import confirm
from gpudesk.ui.widgets.task_runner import show_error

if TYPE_CHECKING:
    from PySide6.QtWidgets import QLabel
    from PySide6.QtWidgets import QWidget

    from gpudesk.services.money.ledger import Ledger
    from gpudesk.ui.run.run_queue_view import RunQueueView
    from gpudesk.ui.widgets.host_key_question import HostKeyQuestion
    from gpudesk.ui.widgets.task_runner import TaskRunner

    _Base = QWidget
else:
    _Base = object

translate = QCoreApplication.translate  # the name lupdate looks for
TERMINALS = ("x-terminal-emulator", "gnome-terminal", "konsole", "xfce4-terminal", "xterm")


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


class RunActions(_Base):
    """Mixed into RunPage, which has these."""

    ledger: Ledger
    status: QLabel
    question: HostKeyQuestion
    launcher: Launcher | None
    follower: Any
    last_status: RunStatus | None
    tunnels: dict[tuple[str, str], Tunnel]
    action_runner: TaskRunner
    launch_runner: TaskRunner
    tunnel_runner: TaskRunner
    _bridge: Any
    _start_detached: Any
    queue_view: RunQueueView
    _queued_line: tuple[str, str, str] = ("", "", "")  # (run, machine, the line said)

    def selected_run(self) -> RunRecord | None:
        raise NotImplementedError

    def attach(self, record: RunRecord | None, *, offset: int = 0,
               clear: bool = True) -> None:
        raise NotImplementedError

    def _refresh(self) -> None:
        raise NotImplementedError

    def form_values(self) -> run_control.RunForm:
        raise NotImplementedError

    def form_refused(self, exc: BaseException) -> None:
        raise NotImplementedError

    def save_form(self) -> None:
        raise NotImplementedError

    def reload_runs(self, select: str = "") -> None:
        raise NotImplementedError

    def queue_run(self) -> None:
        """Add to queue: the form checked as for Run, the machine's preflight, the project
        pushed, then the run is added to the machine's queue instead of started."""
        form = self.form_values()
        try:
            form.check()  # before anything connects, as Run does
        except Exception as exc:  # noqa: BLE001 - shown in words
            self.form_refused(exc)
            return
        self.save_form()
        self._queued_line = ("", "", "")
        self.status.setText(translate("RunPage", "Checking the machine, syncing the project "
                                      "and adding the run to its queue…"))
        add = functools.partial(run_queue.queue_run, pusher=run_control.push_in_child)
        self.launch_runner.run_blocking(add, form, self.question.policy(),
                                        self._bridge.report.emit, on_success=self._queued,
                                        title=translate("RunPage", "The run was not queued"))

    def _queued(self, record: RunRecord) -> None:
        machine = run_queue.machine_name(record.main.target)
        text = translate("RunPage", "Run {run} is in the queue of {machine}.").format(
            run=record.id, machine=machine)
        self.status.setText(text)
        self._queued_line = (record.id, machine, text)  # followed by each queue read
        self.reload_runs()
        self.queue_view.refresh()

    def follow_queued_line(self) -> None:
        """The "Run … is in the queue" line follows the run's true state as the queue is
        read (cancelled, running, ended), and goes when the queue no longer lists it: never
        a stale "in the queue" after a Cancel (issue 31)."""
        run, machine, said = self._queued_line
        view = self.queue_view.view
        if not run or self.status.text() != said or view is None:
            return
        entry = next((e for e in view.entries if e.run == run), None)
        if entry is None:
            text = ""
        elif entry.state == "queued":
            return
        else:
            never_ran = entry.state == "cancelled" and not entry.started_at
            text = {
                "cancelled": translate("RunPage", "Run {run} was cancelled on {machine}: "
                                       "it was stopped."),
                "running": translate("RunPage", "Run {run} left the queue of {machine} and "
                                     "is running."),
                "succeeded": translate("RunPage", "Run {run} from the queue of {machine} "
                                       "succeeded."),
                "failed": translate("RunPage", "Run {run} from the queue of {machine} "
                                    "failed."),
            }.get(entry.state, translate("RunPage", "Run {run} on {machine}: {state}."))
            if never_ran:
                text = translate("RunPage", "Run {run} was cancelled: it was taken out of the "
                                 "queue of {machine} and never started.")
            text = text.format(run=run, machine=machine,
                               state=self.queue_view.state_text(entry.state))
        self.status.setText(text)
        self._queued_line = (run, machine, text) if text else ("", "", "")

    def ask_stop(self) -> None:
        record = self.selected_run()
        if record is None:
            return
        confirm(self, QMessageBox.Icon.Warning, translate("RunPage", "Stop the run?"),
                translate("RunPage", "Stop run {run}? Training ends now; what was not "
                          "checkpointed is lost. Resume carries on from the newest "
                          "checkpoint.").format(run=record.id), "stopRunQuestion",
                (translate("RunPage", "Stop run"), QMessageBox.ButtonRole.DestructiveRole,
                 "stopRunConfirm"),
                lambda: self.stop_run(record))

    def stop_run(self, record: RunRecord) -> None:
        self.status.setText(translate("RunPage", "Stopping run {run}…").format(run=record.id))
        self.action_runner.run_blocking(run_control.stop_run, record, self.question.policy(),
                                        on_success=lambda s: self._stopped(record, s),
                                        title=translate("RunPage", "The run was not stopped"))

    def _stopped(self, record: RunRecord, status: RunStatus) -> None:
        self.status.setText(translate("RunPage", "Run {run} was asked to stop.").format(
            run=record.id))
        if self.follower is None:
            self.last_status = status
            self._refresh()

    def resume_run(self) -> None:
        """Ask the machine what Resume would carry on from first: with no checkpoint it
        starts over, and the user is asked (it is not silently step 0)."""
        record = self.selected_run()
        if record is None:
            return
        self.status.setText(translate("RunPage", "Looking for run {run}'s checkpoints…").format(
            run=record.id))
        self.action_runner.run_blocking(run_control.run_status, record, self.question.policy(),
                                        on_success=lambda st: self._resume_checked(record, st),
                                        title=translate("RunPage", "The run did not resume"))

    def _resume_checked(self, record: RunRecord, status: RunStatus) -> None:
        if status.running:
            self.last_status = status
            self._refresh()
            self.status.setText(translate("RunPage", "Run {run} is still running.").format(
                run=record.id))
            return
        if status.checkpoints:
            self.status.setText(translate("RunPage", "Resuming run {run} from {checkpoint}…")
                                .format(run=record.id, checkpoint=status.latest_checkpoint))
            self._resume(record)
            return
        confirm(self, QMessageBox.Icon.Question, translate("RunPage", "No checkpoint"),
                translate("RunPage", "Run {run} has no checkpoint on the machine, so "
                          "Resume starts it over from step 0 (the script did not save "
                          "one through gpudesk.training, or it stopped before the "
                          "first). Start it over?").format(run=record.id), "resumeQuestion",
                (translate("RunPage", "Start over"), QMessageBox.ButtonRole.AcceptRole,
                 "resumeStartOver"),
                lambda: self._resume(record),
                lambda: self.status.setText(translate("RunPage", "Not resumed.")))

    def _resume(self, record: RunRecord) -> None:
        self.status.setText(translate("RunPage", "Resuming run {run}…").format(run=record.id))
        resume = functools.partial(run_control.resume_run, pusher=run_control.push_in_child)
        self.launch_runner.run_blocking(resume, record, self.question.policy(),
                                        self._bridge.report.emit, on_success=self._resumed,
                                        title=translate("RunPage", "The run did not resume"))

    def _resumed(self, record: RunRecord) -> None:
        self.status.setText(translate("RunPage", "Run {run} resumed (attempt {n}).").format(
            run=record.id, n=record.attempt))
        self.attach(record, offset=record.log_offset, clear=False)

    def ask_recover(self) -> None:
        record = self.selected_run()
        if record is None:
            return
        saved = spot_recovery.mirrored_checkpoints(record)
        where = translate("RunPage", "from {checkpoint}").format(checkpoint=saved[-1].name) \
            if saved else translate("RunPage", "from the beginning (no checkpoint was copied)")
        confirm(self, QMessageBox.Icon.Question, translate("RunPage", "Recover the run?"),
                translate("RunPage", "Launch a new machine like {machine} (it bills "
                          "from now on) and resume run {run} there {where}?").format(
                    machine=record.main.target, run=record.id, where=where),
                "recoverQuestion",
                (translate("RunPage", "Launch and resume"), QMessageBox.ButtonRole.AcceptRole, ""),
                lambda: self.recover(record))

    def recover(self, record: RunRecord) -> None:
        from gpudesk.services.storage.store_check import check_launch_store

        launcher = self.launcher if self.launcher is not None else Launcher(
            self.ledger, store_check=check_launch_store)
        report = self._bridge.report.emit

        async def work() -> RunRecord:
            import asyncio

            report(Said("SpotRecovery", spot_recovery.MSG_LAUNCHING, machine=record.main.target))
            new_id = await spot_recovery.relaunch_like(launcher, record.main.target)
            policy = await asyncio.to_thread(spot_recovery.replacement_policy, new_id)
            return await asyncio.to_thread(spot_recovery.recover, record, new_id, None,
                                           policy, report=report,
                                           pusher=run_control.push_in_child)

        self.status.setText(translate("RunPage", "Launching a new machine for run {run}…")
                            .format(run=record.id))
        self.launch_runner.run(work(), on_success=self._resumed,
                               title=translate("RunPage", "The run was not recovered"))

    def open_tunnel(self, spec: TunnelSpec) -> None:
        record = self.selected_run()
        if record is None:
            return
        key = (record.id, spec.name)
        if key in self.tunnels:
            QDesktopServices.openUrl(QUrl(self.tunnels[key].url))
            return
        self.status.setText(translate("RunPage", "Starting {service} on the machine…").format(
            service=spec.name))
        self.tunnel_runner.run_blocking(run_control.open_tunnel, record, spec,
                                        self.question.policy(),
                                        on_success=lambda t: self._tunnel_open(key, t),
                                        title=translate("RunPage", "{service} did not open")
                                        .format(service=spec.name))

    def _tunnel_open(self, key: tuple[str, str], tunnel: Tunnel) -> None:
        self.tunnels[key] = tunnel
        self.status.setText(translate("RunPage", "{service} is open at 127.0.0.1:{port} "
                                      "(through SSH; nothing else is exposed).").format(
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
            show_error(self, translate("RunPage", "No terminal"), exc)
            return
        found = terminal_command(ssh_argv)
        if found is None or not self._start_detached(*found)[0]:
            QGuiApplication.clipboard().setText(" ".join(ssh_argv))
            self.status.setText(translate("RunPage", "No terminal program was found; the ssh "
                                          "command is on the clipboard."))
            return
        self.status.setText(translate("RunPage", "Opened a terminal on {host}.").format(
            host=target.host))

    def _show_mirror(self, state: spot_recovery.MirrorState) -> None:
        """Before the first checkpoint copy: how much it moves and what that data out costs."""
        if state.pulls != 0:
            return
        size = f"{state.next_bytes / (1 << 30):.2f} GB"
        if not state.currency:
            cost = translate("RunPage", "free (your own machine)")
        elif state.cost is None:
            cost = translate("RunPage", "billed by the cloud as data out (gpudesk has no "
                             "price for it)")
        else:
            cost = translate("RunPage", "about {cost} of data out").format(
                cost=f"{state.cost:.2f} {state.currency}")
        text = translate("RunPage", "Keeping copies of the last {n} checkpoint(s) here; this "
                         "copy moves {size}: {cost}.").format(n=len(state.kept), size=size,
                                                               cost=cost)
        if state.over_cap:
            text += " " + translate("RunPage", "{n} checkpoint(s) do not fit the size cap and "
                                    "stay only on the machine.").format(n=len(state.over_cap))
        self.status.setText(text)
