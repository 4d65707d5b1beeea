"""The Run page's chosen run: the list of runs (each with what it trains on and its state),
its state in words, Stop / Resume / Recover and the tools (TensorBoard, Jupyter, terminal).

A refused start is not a run: the list then shows none chosen, and says why in
its place, so the list and the log pane never disagree. Texts are in the
"RunPage" translation context, like the rest of the page.
"""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication
from PySide6.QtWidgets import QComboBox
from PySide6.QtWidgets import QHBoxLayout
from PySide6.QtWidgets import QLabel
from PySide6.QtWidgets import QPushButton
from PySide6.QtWidgets import QWidget

from gpudesk.services.runs import detached as runs
from gpudesk.services.runs import run_control
from gpudesk.services.runs.detached import RunRecord
from gpudesk.services.runs.detached import RunStatus
from gpudesk.ui.widgets.eliding_button import ElidingButton
from gpudesk.ui.widgets.retranslate import Retranslating
from gpudesk.ui.widgets.said_text import said_text

translate = QCoreApplication.translate  # the name lupdate looks for

COLOURS = {"running": "#1e8449", "finished": "#1e8449", "failed": "#c0392b",
           "lost": "#c0392b", "doubtful": "#b26a00", "refused": "#c0392b"}


def state_label(word: str) -> str:
    """A run list's state word in the window's language."""
    return {"running": translate("RunPage", "running"),
            "finished": translate("RunPage", "finished"),
            "failed": translate("RunPage", "failed"),
            "stopped": translate("RunPage", "stopped"),
            "lost": translate("RunPage", "lost"),
            "missing": translate("RunPage", "not found"),
            "queued": translate("RunPage", "queued"),
            "cancelled": translate("RunPage", "cancelled"),
            "doubtful": translate("RunPage", "did it train?")}.get(word, word)


def item_text(record: RunRecord) -> str:
    """``id — script (host) · CPU · finished``: what it is, on what, and how it went."""
    parts = [f"{record.id} — {record.script} ({record.main.host or record.main.target})",
             said_text(runs.device_text(record.nproc))]
    if record.last_state:
        parts.append(state_label(record.last_state))
    return " · ".join(parts)


class RunList(Retranslating, QWidget):
    """The row above the log: the list, the state, and the run's buttons."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.runs = QComboBox(self)
        self.runs.setObjectName("runList")
        self.runs.setMinimumContentsLength(36)
        self.state = QLabel(self)
        self.state.setObjectName("runState")
        # a long state ("lost: …") wraps instead of widening the window (issue 31)
        self.state.setWordWrap(True)
        self.state.setMinimumWidth(120)
        self.stop_button = QPushButton(self)
        self.stop_button.setObjectName("runStop")
        self.resume_button = QPushButton(self)
        self.resume_button.setObjectName("runResume")
        self.recover_button = ElidingButton(self)  # never widens the window (issue 31)
        self.recover_button.setObjectName("runRecover")
        self.tensorboard_button = QPushButton(self)
        self.tensorboard_button.setObjectName("runTensorBoard")
        self.jupyter_button = QPushButton(self)
        self.jupyter_button.setObjectName("runJupyter")
        self.terminal_button = QPushButton(self)
        self.terminal_button.setObjectName("runTerminal")
        self.refused = ""  # why the last start was refused, while no run is chosen
        top = QHBoxLayout(self)
        top.setContentsMargins(0, 0, 0, 0)
        top.addWidget(self.runs, 1)
        for w in (self.state, self.stop_button, self.resume_button, self.recover_button):
            top.addWidget(w)
        self.retranslate()

    def retranslate(self) -> None:
        self.runs.setPlaceholderText(translate("RunPage", "no run chosen"))
        self.stop_button.setText(translate("RunPage", "Stop…"))
        self.resume_button.setText(translate("RunPage", "Resume"))
        self.recover_button.setText(translate("RunPage", "Recover on a new machine…"))
        self.recover_button.setToolTip(translate(
            "RunPage", "The machine is gone (a spot interruption): launch one like it and "
            "resume from the checkpoints copied to this computer"))
        self.tensorboard_button.setText(translate("RunPage", "TensorBoard"))
        self.jupyter_button.setText(translate("RunPage", "Jupyter"))
        self.terminal_button.setText(translate("RunPage", "Open terminal"))
        self.reload(self.selected_id())

    # ------------------------------------------------------------------ the list

    def selected_id(self) -> str:
        return str(self.runs.currentData() or "")

    def selected(self) -> RunRecord | None:
        run_id = self.selected_id()
        if not run_id:
            return None
        try:
            return RunRecord.load(run_id)
        except runs.RunError:
            return None

    def reload(self, select: str = "") -> None:
        self.runs.clear()
        for record in run_control.recorded_runs():
            self.runs.addItem(item_text(record), record.id)
        index = self.runs.findData(select) if select else -1
        self.runs.setCurrentIndex(index)

    def choose_none(self) -> None:
        """No run chosen (a new one is starting, or was refused)."""
        self.runs.setCurrentIndex(-1)

    def remember(self, record: RunRecord, word: str) -> None:
        """Keep the state seen for ``record`` and show it in its list item."""
        try:
            fresh = RunRecord.load(record.id)
        except runs.RunError:
            return
        if fresh.last_state != word:
            fresh.last_state = word
            fresh.save()
        index = self.runs.findData(record.id)
        if index >= 0:
            self.runs.setItemText(index, item_text(fresh))

    # ------------------------------------------------------------------ the state

    def show_state(self, status: RunStatus | None, *, following: bool,
                   doubt: run_control.Doubt | None, starting: bool = False) -> str:
        """The state label; returns its one word (for the list), or "" when not known."""
        chosen = self.selected_id() != ""
        word = ""
        if starting:
            text = translate("RunPage", "starting…")
        elif not chosen:
            word = "refused" if self.refused else ""
            text = translate("RunPage", "not started") if self.refused \
                else translate("RunPage", "no run chosen")
        elif status is None:
            text = translate("RunPage", "following…") if following \
                else translate("RunPage", "not followed")
        else:
            word = runs.state_word(status, doubtful=doubt is not None)
            text = {
                "running": translate("RunPage", "running"),
                "stopped": translate("RunPage", "stopped on request"),
                "doubtful": translate("RunPage", "exit status 0, but did it train? (see "
                                      "below)"),
                "finished": translate("RunPage", "finished (exit status {code})"),
                "failed": translate("RunPage", "failed (exit status {code})"),
                "lost": translate("RunPage", "lost: its processes are gone; Resume carries on "
                                  "from the newest checkpoint"),
            }.get(word, translate("RunPage", "not found on the machine")).format(
                code=status.code)
        self.state.setText(text)
        self.state.setProperty("state", status.state if status else "none")
        colour = COLOURS.get(word, "")
        self.state.setStyleSheet(f"font-weight: bold; color: {colour};" if colour
                                 else "font-weight: bold;")
        return "" if word == "refused" else word

    def show_queued(self, word: str) -> None:
        """A run of a machine's queue that has no run folder yet: it waits, or was cancelled
        before it started; never "not found" (issue 31)."""
        self.state.setText(translate("RunPage", "queued: it starts when the machine's queue "
                                     "comes to it") if word == "queued" else
                           translate("RunPage", "cancelled in the queue before it started"))
        self.state.setProperty("state", word)
        self.state.setStyleSheet("font-weight: bold;")

    def update_buttons(self, status: RunStatus | None, *, gone: bool) -> None:
        has = self.selected_id() != ""
        running = status is not None and status.running
        self.stop_button.setEnabled(has and running)
        self.stop_button.setToolTip(
            translate("RunPage", "Stop the run (asks first)") if running
            else translate("RunPage", "Enabled while the chosen run is running"))
        self.resume_button.setEnabled(has and status is not None and not running)
        self.recover_button.setVisible(has and gone)
        for button in (self.tensorboard_button, self.jupyter_button, self.terminal_button):
            button.setEnabled(has)
