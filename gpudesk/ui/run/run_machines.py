"""The Run page's "Machines of this run" (issue 23): a run that recovers by itself lives on
several machines of its group; each row says when it ran, how it ended (reclaimed, the
group ended), from which step it resumed and what it cost. Shown for a run on a
kept-alive machine, and for a run recovered or resumed on another machine (issue 30); read
on a worker thread from the bucket, the ledger and the run record
(``services.runs.run_story``), when the run is chosen and on Refresh."""

from __future__ import annotations

import time

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QGroupBox
from PySide6.QtWidgets import QHBoxLayout
from PySide6.QtWidgets import QLabel
from PySide6.QtWidgets import QPushButton
from PySide6.QtWidgets import QTreeWidget
from PySide6.QtWidgets import QTreeWidgetItem
from PySide6.QtWidgets import QVBoxLayout
from PySide6.QtWidgets import QWidget

from gpudesk.services.money.ledger import Ledger
from gpudesk.services.runs import run_story
from gpudesk.services.runs.detached import RunRecord
from gpudesk.ui.widgets.retranslate import Retranslating
from gpudesk.ui.widgets.task_runner import TaskRunner


class RunMachines(Retranslating, QGroupBox):
    def __init__(self, ledger: Ledger, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("runMachines")
        self.ledger = ledger
        self.record: RunRecord | None = None
        self.told: run_story.RunStory | None = None
        self.tree = QTreeWidget(self)
        self.tree.setObjectName("runMachinesTree")
        self.tree.setRootIsDecorated(False)
        self.tree.setColumnCount(6)
        self.tree.setMaximumHeight(140)
        self.note = QLabel(self)
        self.note.setObjectName("runMachinesNote")
        self.note.setWordWrap(True)
        self.refresh_button = QPushButton(self)
        self.refresh_button.setObjectName("runMachinesRefresh")
        self.runner = TaskRunner(self, button=self.refresh_button, show_dialog=False,
                                 busy_cursor=False)
        self.runner.failed.connect(self.note.setText)
        top = QHBoxLayout()
        top.addWidget(self.note, 1)
        top.addWidget(self.refresh_button)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.tree)
        self.refresh_button.clicked.connect(self.refresh)
        self.setVisible(False)
        self.retranslate()

    def retranslate(self) -> None:
        self.setTitle(self.tr("Machines of this run"))
        self.refresh_button.setText(self.tr("Refresh"))
        self.tree.setHeaderLabels([self.tr("Machine"), self.tr("From"), self.tr("To"),
                                   self.tr("How it ended"), self.tr("Resumed from"),
                                   self.tr("Cost")])
        self._show()

    def _group_of(self, record: RunRecord) -> str:
        target = record.main.target
        m = self.ledger.get(target) if not target.startswith("ssh://") else None
        return m.group_id if m is not None else ""

    def show_run(self, record: RunRecord | None) -> None:
        """The run chosen on the page: shown when it runs on a kept-alive machine."""
        self.runner.cancel()
        self.record, self.told = record, None
        group = self._group_of(record) if record is not None else ""
        moved = record is not None and len(record.hops) > 1  # recovered on another machine
        self.setVisible(bool(group) or moved)
        self._show()
        if group or moved:
            QTimer.singleShot(0, self, self.refresh)

    def refresh(self) -> None:
        record = self.record
        if record is None:
            return
        self.note.setText(self.tr("Reading the run's machines…"))
        self.runner.run_blocking(run_story.story, record,
                                 on_success=lambda told: self._told(record, told))

    def _told(self, record: RunRecord, told: run_story.RunStory) -> None:
        if record is not self.record:
            return
        self.told = told
        self._show()

    def _when(self, t: float | None) -> str:
        return time.strftime("%Y-%m-%d %H:%M", time.localtime(t)) if t else "—"

    def _why(self, why: str) -> str:
        return {"reclaimed": self.tr("reclaimed"), "ended": self.tr("group ended"),
                "budget": self.tr("budget reached"), "lost": self.tr("lost"),
                "moved": self.tr("moved to the next machine"),
                "": self.tr("running")}.get(why, why)

    def _show(self) -> None:
        self.tree.clear()
        told = self.told
        if told is None:
            return
        for s in told.machines:
            cost = (f"{s.spent:.2f} {s.currency}" if s.spent is not None
                    else self.tr("not counted"))
            step = (self.tr("step {step}").format(step=s.resumed_from_step)
                    if s.resumed_from_step is not None else "—")
            QTreeWidgetItem(self.tree, [s.cloud_id or s.target, self._when(s.start),
                                        self._when(s.end) if s.end else "—",
                                        self._why(s.why if s.end or s.why else ""), step, cost])
        for i in range(self.tree.columnCount()):
            self.tree.resizeColumnToContents(i)
        if told.bucket_error:
            self.note.setText(self.tr("The bucket could not be read ({why}): only what this "
                                      "computer saw is shown, without costs.").format(
                why=told.bucket_error))
        elif told.total is not None:
            self.note.setText(self.tr("{n} machine(s) so far; {spent} {currency} in all.").format(
                n=len(told.machines), spent=f"{told.total:.2f}", currency=told.currency))
        else:
            self.note.setText(self.tr("{n} machine(s) so far; no agent has counted the cost "
                                      "in the bucket yet.").format(n=len(told.machines)))
