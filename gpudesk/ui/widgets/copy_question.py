"""The window's "copy this dataset to the machine's region?" box (issue 32).

It says what ``gpudesk data copy`` prints before it asks, in the same words: the bytes,
the data-out price with its source and date, or that the price is not known and why
(:meth:`dataset_copy.CopyPlan.words`). Nothing moves unless Copy is clicked; an unknown
price makes it a warning, never a silent yes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QCoreApplication
from PySide6.QtWidgets import QMessageBox
from PySide6.QtWidgets import QWidget

from gpudesk.services.storage.dataset_copy import CopyPlan
from gpudesk.ui.widgets.confirm import confirm
from gpudesk.ui.widgets.said_text import said_text


def ask_copy(parent: QWidget, plan: CopyPlan, on_yes: Callable[[], Any],
             on_no: Callable[[], Any] | None = None) -> QMessageBox:
    """Open the box for ``plan``; Copy (object name ``datasetCopyYes``) runs ``on_yes``,
    which then calls ``dataset_copy.copy(..., confirmed=True)`` off the GUI thread."""
    icon = QMessageBox.Icon.Question if plan.price_known else QMessageBox.Icon.Warning
    text = said_text(plan.words()) + "\n\n" + said_text(plan.question())
    return confirm(parent, icon, QCoreApplication.translate("Storage", "Copy the dataset?"),
                   text, "datasetCopyQuestion",
                   (QCoreApplication.translate("Storage", "Copy"),
                    QMessageBox.ButtonRole.AcceptRole, "datasetCopyYes"), on_yes, on_no)
