"""The Run page's log: the run's output as it arrives, gpudesk's own lines, search, folding.

gpudesk's lines (``gpudesk: …``) come from the services as ``runs.Said``
(template + values) and are shown translated. A stop on request makes torchrun
print a long ``SignalException`` traceback; it is folded (hidden, one click
shows it) — the user asked for the stop, it is not a failure to read through.
Texts are in the "RunPage" translation context, like the rest of the page.
"""

from __future__ import annotations

import codecs
import re

from PySide6.QtCore import QCoreApplication
from PySide6.QtGui import QGuiApplication
from PySide6.QtGui import QTextBlock
from PySide6.QtGui import QTextCursor
from PySide6.QtGui import QTextDocument
from PySide6.QtGui import QTextOption
from PySide6.QtWidgets import QHBoxLayout
from PySide6.QtWidgets import QLabel
from PySide6.QtWidgets import QLineEdit
from PySide6.QtWidgets import QPlainTextEdit
from PySide6.QtWidgets import QPushButton
from PySide6.QtWidgets import QTextEdit
from PySide6.QtWidgets import QVBoxLayout
from PySide6.QtWidgets import QWidget

from gpudesk.services.runs.launcher_lines import PREFIX
from gpudesk.services.runs.launcher_lines import said_in_log
from gpudesk.ui.widgets.eliding_button import ElidingButton
from gpudesk.ui.widgets.retranslate import Retranslating
from gpudesk.ui.widgets.said_text import said_text

translate = QCoreApplication.translate  # the name lupdate looks for

LOG_MAX_LINES = 50_000  # the whole log stays on the machine; the view keeps the newest lines
MAX_HIGHLIGHTS = 500
RANK_PREFIX = re.compile(r"^\[(?:default|rank)\d+\]:")  # torchrun --tee's per-rank lines
TRACEBACK_START = "Traceback (most recent call last):"
SIGNAL_END = re.compile(r"^\S.*(?:SignalException\b|got signal: \d+)")  # the last line


def _ends_stop(block: QTextBlock) -> bool:
    return bool(SIGNAL_END.match(RANK_PREFIX.sub("", block.text())))


def _launcher_lines_translated(text: str) -> str:
    """``text`` (whole lines) with the run launcher's own lines in the window's language."""
    if PREFIX not in text:
        return text
    out = []
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        said = said_in_log(body)
        out.append(line if said is None else PREFIX + said_text(said) + line[len(body):])
    return "".join(out)


# What gpudesk.training's Session.finish() logs once the run is done (after it, a process's
# teardown noise only)
FINISHED_MARK = "finished at step"


class RunLogView(Retranslating, QWidget):
    """The log pane with its search bar; ``tools`` holds the page's buttons on the left."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.match_count = 0
        self.folded = 0  # lines of a stop's traceback, hidden
        self.stop_is_history = False  # the run runs again after that stop (issue 31)
        # lines after the run finished (a rank's teardown abort, issue 30), hidden
        self._teardown_blocks: list[int] = []
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._held = ""  # the start of a launcher line whose end has not arrived yet
        self.search = QLineEdit(self)
        self.search.setObjectName("runSearch")
        self.search.setClearButtonEnabled(True)
        self.search.setMinimumWidth(140)  # it stretches; less would let the row widen the window
        self.find_prev = QPushButton(self)
        self.find_next = QPushButton(self)
        self.matches = QLabel(self)
        self.matches.setObjectName("runMatches")
        self.unfold_button = ElidingButton(self)  # never widens the window (issue 31)
        self.unfold_button.setObjectName("runUnfold")
        self.unfold_button.setCheckable(True)
        self.unfold_button.setVisible(False)
        self.log = QPlainTextEdit(self)
        self.log.setObjectName("runLog")
        self.log.setReadOnly(True)
        self.log.setMaximumBlockCount(LOG_MAX_LINES)
        self.log.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)  # long lines wrap
        self.log.setWordWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
        self.log.document().setDefaultFont(QGuiApplication.font())
        self.log.setStyleSheet("font-family: monospace;")
        self.tools = QHBoxLayout()
        self.tools.addStretch(1)
        for w in (self.search, self.find_prev, self.find_next, self.matches,
                  self.unfold_button):
            self.tools.addWidget(w, 1 if w is self.search else 0)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(self.tools)
        layout.addWidget(self.log, 1)
        self.search.textChanged.connect(self._highlight)
        self.search.returnPressed.connect(lambda: self.find_in_log(backward=False))
        self.find_next.clicked.connect(lambda: self.find_in_log(backward=False))
        self.find_prev.clicked.connect(lambda: self.find_in_log(backward=True))
        self.unfold_button.toggled.connect(self._show_folded)
        self.retranslate()

    def retranslate(self) -> None:
        self.search.setPlaceholderText(translate("RunPage", "Search the log"))
        self.find_prev.setText(translate("RunPage", "Previous"))
        self.find_next.setText(translate("RunPage", "Next"))
        self._label_unfold()
        self._highlight()

    def _label_unfold(self) -> None:
        if self._teardown_blocks:
            self.unfold_button.setText(
                translate("RunPage", "Hide the teardown's lines")
                if self.unfold_button.isChecked()
                else translate("RunPage", "Show the teardown's lines ({n} lines)").format(
                    n=self.folded))
            return
        if self.stop_is_history:  # the run was started again: that stop is an earlier one
            self.unfold_button.setText(
                translate("RunPage", "Hide the earlier stop's traceback")
                if self.unfold_button.isChecked()
                else translate("RunPage", "Show the earlier stop's traceback ({n} lines)")
                .format(n=self.folded))
            return
        self.unfold_button.setText(
            translate("RunPage", "Hide the stop's traceback") if self.unfold_button.isChecked()
            else translate("RunPage", "Show the stop's traceback ({n} lines)").format(
                n=self.folded))

    # ------------------------------------------------------------------ text

    def text(self) -> str:
        return self.log.toPlainText()

    def clear(self) -> None:
        self.log.clear()
        self._decoder.reset()
        self._held = ""
        self.folded = 0
        self.stop_is_history = False
        self._teardown_blocks = []
        self.unfold_button.setChecked(False)
        self.unfold_button.setVisible(False)

    def reset_decoder(self) -> None:
        self._decoder.reset()
        self._held = ""

    def append_bytes(self, data: bytes) -> None:
        text = self._held + self._decoder.decode(data)
        tail = text[text.rfind("\n") + 1:]
        self._held = tail if tail.startswith(PREFIX) else ""  # translated once it is whole
        text = text[:len(text) - len(self._held)]
        if text:
            self.insert(_launcher_lines_translated(text))

    def insert(self, text: str) -> None:
        bar = self.log.verticalScrollBar()
        at_end = bar.value() >= bar.maximum() - 4
        cursor = QTextCursor(self.log.document())
        cursor.movePosition(QTextCursor.MoveOperation.End)
        cursor.insertText(text)
        if at_end:
            bar.setValue(bar.maximum())
        if self.search.text():
            self._highlight()

    def say(self, line: str) -> None:
        """A ``gpudesk:`` line of its own (a Said is translated)."""
        start_of_line = self.log.document().isEmpty() or self.text().endswith("\n")
        self.insert(("" if start_of_line else "\n") + f"gpudesk: {said_text(line)}\n")

    def visible_text(self) -> str:
        """The log as shown: folded lines left out."""
        lines = []
        block = self.log.document().begin()
        while block.isValid():
            if block.isVisible():
                lines.append(block.text())
            block = block.next()
        return "\n".join(lines)

    def last_lines(self, n: int = 6) -> str:
        """The script's own last lines (torchrun prefixes them with the rank), not torchrun's
        summary of the failure, nor gpudesk's lines or a folded traceback."""
        lines = []
        block = self.log.document().begin()
        while block.isValid():
            line = block.text()
            if block.isVisible() and line.strip() and not line.startswith("gpudesk:"):
                lines.append(line)
            block = block.next()
        ranked = [line for line in lines if RANK_PREFIX.match(line)]
        return "\n".join((ranked or lines)[-n:])

    # ------------------------------------------------------------------ folding

    def _stop_spans(self) -> list[list[QTextBlock]]:
        """Each ``Traceback …`` block that ends in torchrun's ``SignalException`` line."""
        spans: list[list[QTextBlock]] = []
        block = self.log.document().begin()
        while block.isValid():
            if RANK_PREFIX.sub("", block.text()).strip() == TRACEBACK_START:
                span = [block]
                end = block
                while end.next().isValid() and not _ends_stop(end):
                    end = end.next()
                    span.append(end)
                if _ends_stop(end):
                    spans.append(span)
                    block = end
            block = block.next()
        return spans

    def fold_stop_traceback(self) -> int:
        """Hide torchrun's traceback of the signal a stop sends; returns the lines hidden.
        Other tracebacks stay in view."""
        hidden = 0
        for span in self._stop_spans():
            for b in span:
                if b.isVisible():
                    b.setVisible(False)
                    hidden += 1
        if hidden:
            self.folded += hidden
            self._relayout()
            self._label_unfold()
            self.unfold_button.setVisible(True)
        return hidden

    def runs_again(self) -> None:
        """The run runs after a stop (it was restarted): a folded traceback is an earlier
        stop's, said so, never "the stop" of a run that runs (issue 31)."""
        if self.folded and not self._teardown_blocks and not self.stop_is_history:
            self.stop_is_history = True
            self._label_unfold()

    def fold_teardown(self) -> int:
        """Hide what follows the training helper's last "finished at step" line (a rank's
        abort on its way out, torchrun's report of it); returns the lines hidden."""
        doc = self.log.document()
        block, last = doc.begin(), -1
        while block.isValid():
            if FINISHED_MARK in block.text():
                last = block.blockNumber()
            block = block.next()
        if last < 0:
            return 0
        block = doc.findBlockByNumber(last + 1)
        while block.isValid():
            if block.isVisible() and block.text().strip() and not block.text().startswith(
                    PREFIX):
                block.setVisible(False)
                self._teardown_blocks.append(block.blockNumber())
            block = block.next()
        hidden = len(self._teardown_blocks)
        if hidden:
            self.folded = hidden
            self._relayout()
            self._label_unfold()
            self.unfold_button.setVisible(True)
        return hidden

    def _show_folded(self, show: bool) -> None:
        for span in self._stop_spans():
            for b in span:
                b.setVisible(show)
        for number in self._teardown_blocks:
            self.log.document().findBlockByNumber(number).setVisible(show)
        self._relayout()
        self._label_unfold()

    def _relayout(self) -> None:
        doc = self.log.document()
        doc.markContentsDirty(0, doc.characterCount())
        self.log.viewport().update()

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
        self.matches.setText(translate("RunPage", "{n} found").format(n=count) if text else "")
