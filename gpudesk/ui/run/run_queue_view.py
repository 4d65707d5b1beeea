"""The chosen machine's run queue on the Run page: its entries, Cancel and Cancel all.

Read on demand (Refresh, and after each add or cancel), never on a timer: each read is
an SSH round trip. The queue is kept by the machine's agent (``agent/queue.py``); when
none runs there, the view says that queued runs wait, instead of showing them as
about to start.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtCore import Signal
from PySide6.QtWidgets import QGroupBox
from PySide6.QtWidgets import QHBoxLayout
from PySide6.QtWidgets import QLabel
from PySide6.QtWidgets import QListWidget
from PySide6.QtWidgets import QListWidgetItem
from PySide6.QtWidgets import QMessageBox
from PySide6.QtWidgets import QPushButton
from PySide6.QtWidgets import QSizePolicy
from PySide6.QtWidgets import QVBoxLayout
from PySide6.QtWidgets import QWidget

from gpudesk.services.remote.host_keys import HostKeyPolicy
from gpudesk.services.runs import run_queue
from gpudesk.services.runs.run_control import RunForm
from gpudesk.services.runs.run_queue import QueueEntry
from gpudesk.services.runs.run_queue import QueueView
from gpudesk.ui.widgets.confirm import confirm
from gpudesk.ui.widgets.retranslate import Retranslating
from gpudesk.ui.widgets.said_text import said_text
from gpudesk.ui.widgets.task_runner import TaskRunner


class RunQueueView(Retranslating, QGroupBox):
    """``bind(form, policy)`` tells it where the machine is (the Run page's form)."""

    states_read = Signal()  # a read of the queue updated the runs' recorded states

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("runQueue")
        self.entries = QListWidget(self)
        self.entries.setObjectName("runQueueList")
        self.entries.setMaximumHeight(140)
        self.note = QLabel(self)
        self.note.setObjectName("runQueueNote")
        self.note.setWordWrap(True)
        self.refresh_button = QPushButton(self)
        self.refresh_button.setObjectName("runQueueRefresh")
        self.cancel_button = QPushButton(self)
        self.cancel_button.setObjectName("runQueueCancel")
        self.cancel_all_button = QPushButton(self)
        self.cancel_all_button.setObjectName("runQueueCancelAll")
        buttons = QHBoxLayout()
        for b in (self.refresh_button, self.cancel_button, self.cancel_all_button):
            buttons.addWidget(b)
        buttons.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addWidget(self.entries)
        layout.addWidget(self.note)
        layout.addLayout(buttons)
        # a taller form: the room goes below the box, not into it
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Maximum)
        self.runner = TaskRunner(self, button=self.refresh_button)
        self.runner.failed.connect(self.note.setText)
        self.view: QueueView | None = None
        self._form: Callable[[], RunForm] | None = None
        self._policy: Callable[[], HostKeyPolicy] = HostKeyPolicy.refuse
        self.refresh_button.clicked.connect(self.refresh)
        self.cancel_button.clicked.connect(self.cancel_selected)
        self.cancel_all_button.clicked.connect(self.cancel_all)
        self.question: QMessageBox | None = None  # the open "cancel?" box, if any
        self.entries.currentRowChanged.connect(lambda _r: self._update_buttons())
        self.retranslate()

    def bind(self, form: Callable[[], RunForm], policy: Callable[[], HostKeyPolicy]) -> None:
        self._form, self._policy = form, policy

    def retranslate(self) -> None:
        self.setTitle(self.tr("Queue on this machine"))
        self.refresh_button.setText(self.tr("Refresh"))
        self.cancel_button.setText(self.tr("Cancel"))
        self.cancel_button.setToolTip(self.tr("Cancel the chosen run: a queued run never "
                                              "starts, a running one is stopped."))
        self.cancel_all_button.setText(self.tr("Cancel all"))
        self.cancel_all_button.setToolTip(self.tr("Cancel every queued and running run of "
                                                  "this queue."))
        self.show_view(self.view)

    # ------------------------------------------------------------------ showing

    def state_text(self, state: str) -> str:
        return {"queued": self.tr("queued"), "running": self.tr("running"),
                "succeeded": self.tr("succeeded"), "failed": self.tr("failed"),
                "cancelled": self.tr("cancelled")}.get(state, state)

    def entry_text(self, e: QueueEntry) -> str:
        gpus = self.tr("CPU") if e.gpus == 0 else self.tr("{n} GPU(s)").format(n=e.gpus)
        parts = [e.run, self.state_text(e.state), gpus]
        if e.devices:
            parts.append(self.tr("GPUs {devices}").format(devices=e.devices))
        if e.exit_code is not None:
            parts.append(self.tr("exit status {code}").format(code=e.exit_code))
        when = e.ended_at or e.started_at or e.queued_at
        if when:
            parts.append(time.strftime("%H:%M", time.localtime(when)))
        return " · ".join(parts)

    def show_view(self, view: QueueView | None) -> None:
        self.view = view
        chosen = self.selected_run()
        self.entries.clear()
        for e in view.entries if view is not None else []:
            item = QListWidgetItem(self.entry_text(e))
            item.setData(Qt.ItemDataRole.UserRole, e.run)
            if e.reason:
                item.setToolTip(e.reason)
            self.entries.addItem(item)
            if e.run == chosen:
                self.entries.setCurrentItem(item)
        if view is None:
            self.note.setText(self.tr("Press Refresh to read the chosen machine's queue."))
        else:
            note = view.note()
            if note is not None:
                text = said_text(note)
            elif view.gpus is None:  # no agent counted them: never "? GPU(s)" (issue 31)
                text = self.tr("{open} queued or running; no agent has counted the machine's "
                               "GPUs yet.").format(open=len(view.open))
            elif view.gpus == 0:
                text = self.tr("{open} queued or running; the machine has no GPU: its runs "
                               "run on the CPU.").format(open=len(view.open))
            else:
                text = self.tr("{open} queued or running; the machine has {gpus} GPU(s).").format(
                    open=len(view.open), gpus=view.gpus)
            self.note.setText(text)
        self._update_buttons()
        if view is not None:
            self.states_read.emit()

    def selected_run(self) -> str:
        item = self.entries.currentItem()
        return str(item.data(Qt.ItemDataRole.UserRole)) if item is not None else ""

    def _update_buttons(self) -> None:
        open_runs = {e.run for e in self.view.open} if self.view is not None else set()
        self.cancel_button.setEnabled(self.selected_run() in open_runs)
        self.cancel_all_button.setEnabled(bool(open_runs))

    def machine_changed(self) -> None:
        """Another machine was chosen: the queue shown was the other one's."""
        self.runner.cancel()
        self.show_view(None)

    # ------------------------------------------------------------------ asking the machine

    def _where(self) -> RunForm | None:
        form = self._form() if self._form is not None else None
        if form is None or not form.target.strip():
            self.note.setText(self.tr("Choose a machine to see its queue."))
            return None
        return form

    def refresh(self) -> None:
        form = self._where()
        if form is None:
            return
        self.note.setText(self.tr("Reading the queue of {machine}…").format(
            machine=run_queue.machine_name(form.target.strip())))
        read = functools.partial(run_queue.read_queue, root=form.root, python=form.python)
        self.runner.run_blocking(read, form.target.strip(),
                                 form.identity.strip() or None, self._policy(),
                                 on_success=self.show_view,
                                 title=self.tr("The queue could not be read"))

    def cancel_selected(self) -> None:
        """A queued run is cancelled at once (nothing of it ran); a running one asks first:
        its work since the last checkpoint is lost."""
        run = self.selected_run()
        if not run:
            return
        running = self.view is not None and any(
            e.run == run and e.state == "running" for e in self.view.entries)
        if not running:
            self._cancel(run)
            return
        self.question = confirm(
            self, QMessageBox.Icon.Warning, self.tr("Cancel a running run?"),
            self.tr("Run {run} is training now. Cancelling stops it; what it did since its "
                    "last checkpoint is lost.").format(run=run),
            "confirmCancelQueued",
            (self.tr("Cancel the run"), QMessageBox.ButtonRole.DestructiveRole,
             "confirmCancelQueuedYes"), lambda: self._cancel(run))

    def cancel_all(self) -> None:
        """Every queued and running run of the machine, after asking."""
        running = [e.run for e in self.view.open if e.state == "running"] \
            if self.view is not None else []
        text = self.tr("Every queued run is dropped.")
        if running:
            text += " " + self.tr("{n} running run(s) are stopped; what they did since their "
                                  "last checkpoint is lost.").format(n=len(running))
        self.question = confirm(
            self, QMessageBox.Icon.Warning, self.tr("Cancel the whole queue?"), text,
            "confirmCancelAll",
            (self.tr("Cancel all"), QMessageBox.ButtonRole.DestructiveRole,
             "confirmCancelAllYes"), lambda: self._cancel("all"))

    def _cancel(self, which: str) -> None:
        form = self._where()
        if form is None:
            return
        self.note.setText(self.tr("Cancelling…"))
        cancel = functools.partial(run_queue.cancel_queued, root=form.root, python=form.python)
        self.runner.run_blocking(cancel, form.target.strip(),
                                 form.identity.strip() or None, self._policy(), which,
                                 on_success=self.show_view,
                                 title=self.tr("Nothing was cancelled"))
