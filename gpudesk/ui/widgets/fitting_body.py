"""A dialog body that is as tall as its wrapped sentences need, and scrolls beyond the screen.

Qt sizes a top-level window from its layout's minimum size, which ignores the
height a word-wrapped label needs at the width it gets: a guard sentence that
grows (a budget typed in, the group's words, a longer translation) was cut off at
top and bottom (issue 31). The body here sits in a scroll area that does honour
that height, and the dialog grows to it — never wider, never past the screen's
free height; what does not fit then scrolls instead of being clipped.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent
from PySide6.QtCore import QObject
from PySide6.QtCore import QSize
from PySide6.QtCore import Qt
from PySide6.QtCore import QTimer
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import QFrame
from PySide6.QtWidgets import QLayout
from PySide6.QtWidgets import QScrollArea
from PySide6.QtWidgets import QWidget

SCREEN_MARGIN = 48  # px left free under the dialog: the window's title bar and a panel


class FittingBody(QScrollArea):
    """Holds ``layout``; call :meth:`fit` (done on every change of the layout) to grow the
    dialog to the text's height."""

    def __init__(self, layout: QLayout, parent: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName("fittingBody")
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        body = QWidget(self)
        body.setObjectName("fittingBodyContent")
        body.setLayout(layout)
        layout.setContentsMargins(0, 0, 0, 0)
        self.setWidget(body)
        self.body = body
        self._pending = False
        self._fitted = -1  # the dialog's height as fit() set it last
        body.installEventFilter(self)

    @property
    def settling(self) -> bool:
        """A change of the body waits to be fitted (tests wait for the dialog's last size)."""
        return self._pending

    def needed(self, width: int) -> QSize:
        """The size the body needs at ``width`` (its own minimum width at least)."""
        body = self.body
        layout = body.layout()
        width = max(width, body.minimumSizeHint().width())
        if layout is not None and layout.hasHeightForWidth():
            height = layout.totalHeightForWidth(width)
        else:
            height = body.sizeHint().height()
        return QSize(width, height)

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt API
        body = self.body
        need = self.needed(self.viewport().width() if self.isVisible() else
                           body.sizeHint().width())
        return QSize(need.width() + self.verticalScrollBar().sizeHint().width(), need.height())

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt API
        # as wide as the body's widest row (never cut off sideways: no horizontal scrolling)
        hint = super().minimumSizeHint()
        width = self.body.minimumSizeHint().width() + \
            self.verticalScrollBar().sizeHint().width() + 2 * self.frameWidth()
        return QSize(max(hint.width(), width), hint.height())

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt API
        if event.type() == QEvent.Type.LayoutRequest and not self._pending:
            self.updateGeometry()  # a wider row widens the dialog's minimum
            self._pending = True  # once per burst of changes, after they are all made
            QTimer.singleShot(0, self, self.fit)
        return super().eventFilter(watched, event)

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 - Qt API
        super().showEvent(event)
        self._fitted = self.window().height()  # the first size is Qt's guess: ours to fix
        self._pending = True
        self.updateGeometry()
        QTimer.singleShot(0, self, self.fit)

    def fit(self) -> None:
        """Size the dialog (never wider) so that the body shows all of its text, up to the
        free height of the dialog's screen. While the dialog has the height this set last,
        it follows the text both ways; once the user resized it, it only grows."""
        self._pending = False
        dialog = self.window()
        if not self.isVisible() or dialog is None:
            return
        missing = self.needed(self.viewport().width()).height() - self.viewport().height()
        ours = dialog.height() == self._fitted
        if missing == 0 or (missing < 0 and not ours):
            return
        screen = dialog.screen().availableGeometry()
        frame = dialog.frameGeometry().height() - dialog.height()  # the title bar
        room = screen.height() - frame - SCREEN_MARGIN // 2
        height = max(dialog.minimumSizeHint().height(), min(dialog.height() + missing, room))
        if height == dialog.height() or (height < dialog.height() and not ours):
            return  # as tall as the screen allows: the body scrolls
        dialog.resize(dialog.width(), height)
        self._fitted = dialog.height()
        top = dialog.frameGeometry().top()
        if dialog.frameGeometry().bottom() > screen.bottom():  # keep it on the screen
            dialog.move(dialog.x(), max(screen.top(), top - (dialog.frameGeometry().bottom()
                                                           - screen.bottom())))
