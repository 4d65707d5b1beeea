"""One builder for the "are you sure?" boxes of the pages.

Every such box is window-modal, defaults to Cancel (Enter never confirms a
destructive act by accident), deletes itself when closed, and runs its action
only when its own confirming button was clicked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QAbstractButton
from PySide6.QtWidgets import QMessageBox
from PySide6.QtWidgets import QWidget


def confirm(parent: QWidget, icon: QMessageBox.Icon, title: str, text: str, name: str,
            yes: tuple[str, QMessageBox.ButtonRole, str],
            on_yes: Callable[[], Any], on_no: Callable[[], Any] | None = None) -> QMessageBox:
    """Open (not exec) a box named ``name`` whose button ``yes`` = (text, role,
    object name) runs ``on_yes``; Cancel (a click, or Escape) runs ``on_no``."""
    box = QMessageBox(icon, title, text, QMessageBox.StandardButton.Cancel, parent)
    box.setObjectName(name)
    yes_text, yes_role, yes_name = yes
    button = box.addButton(yes_text, yes_role)
    if yes_name:
        button.setObjectName(yes_name)

    def clicked(b: QAbstractButton) -> None:
        if b is button:
            on_yes()
        elif on_no is not None:
            on_no()

    return open_question(box, clicked)


def open_question(box: QMessageBox, answered: Callable[[QAbstractButton], Any]) -> QMessageBox:
    """Open (not exec) ``box``, made with its Cancel button and its other buttons, as every
    question here is shown: window-modal, Cancel the default (stay: nothing changes),
    deleted when closed; ``answered`` gets the button clicked (Cancel for Escape)."""
    box.setDefaultButton(QMessageBox.StandardButton.Cancel)
    box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    box.setWindowModality(Qt.WindowModality.WindowModal)
    box.buttonClicked.connect(answered)
    box.open()
    return box
