"""Re-label a widget when the language changes, written once for every page and dialog.

Qt sends ``LanguageChange`` to every widget when a translator is installed;
a widget that mixes this in only says how to label itself (``retranslate``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent

if TYPE_CHECKING:
    from PySide6.QtWidgets import QWidget

    _Base = QWidget
else:
    _Base = object


class Retranslating(_Base):
    """Mix in before the Qt class: ``class Page(Retranslating, QWidget)``."""

    def retranslate(self) -> None:
        raise NotImplementedError

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt API
        if event.type() == QEvent.Type.LanguageChange:
            self.retranslate()
        super().changeEvent(event)
