"""A push button that gives up width instead of taking it: its text is elided when the row is
narrow, with the whole text in the tooltip.

A QPushButton is never narrower than its text, so one long label ("Show the stop's
traceback (29 lines)", "Recover on a new machine…", or their translation) made the
whole window wider than the screen (issue 31). This one asks for its text's width but
accepts less.
"""

from __future__ import annotations

from PySide6.QtCore import QSize
from PySide6.QtCore import Qt
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QPushButton
from PySide6.QtWidgets import QSizePolicy
from PySide6.QtWidgets import QStyle
from PySide6.QtWidgets import QStyleOptionButton
from PySide6.QtWidgets import QWidget

MIN_CHARS = "Xxxxx…"  # at least this much of the text stays readable


class ElidingButton(QPushButton):
    """``text()`` is the whole text; what is painted is cut with "…" to the width given."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._full = ""
        self._own_tip = ""  # a tooltip set by the owner wins over the whole text
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)

    def setText(self, text: str) -> None:  # noqa: N802 - Qt API
        self._full = text
        super().setText(text)
        self.updateGeometry()
        self._elide()

    def text(self) -> str:
        return self._full

    def setToolTip(self, tip: str) -> None:  # noqa: N802 - Qt API
        self._own_tip = tip
        super().setToolTip(tip)

    def _size_for(self, text: str) -> QSize:
        option = QStyleOptionButton()
        self.initStyleOption(option)
        option.text = text
        size = self.fontMetrics().size(Qt.TextFlag.TextShowMnemonic, text)
        return self.style().sizeFromContents(QStyle.ContentsType.CT_PushButton, option, size,
                                             self)

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt API
        return self._size_for(self._full)

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt API
        whole = self.sizeHint()
        least = self._size_for(MIN_CHARS)
        return QSize(min(whole.width(), least.width()), whole.height())

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt API
        super().resizeEvent(event)
        self._elide()

    def _elide(self) -> None:
        metrics = self.fontMetrics()
        padding = self.sizeHint().width() - metrics.horizontalAdvance(self._full)
        shown = metrics.elidedText(self._full, Qt.TextElideMode.ElideRight,
                                   max(0, self.width() - padding))
        if shown != super().text():
            super().setText(shown)
        super().setToolTip(self._own_tip or (self._full if shown != self._full else ""))
