"""What a researcher sees when gpudesk hits a bug: a report to copy, and the app keeps going.

The report (version, OS, Python, Qt, traceback) goes through
:func:`gpudesk.services.core.redact.redact` before it is shown, so that pasting it
into an issue never leaks a key that happened to be in an error message.
Dialogs are opened with ``show()`` (never ``exec()``, which would nest an event
loop inside the asyncio loop); a second crash while one is open is appended to it.
"""

from __future__ import annotations

import logging
import platform
import sys
import traceback
from types import TracebackType

from PySide6.QtCore import QCoreApplication
from PySide6.QtCore import Qt
from PySide6.QtCore import QUrl
from PySide6.QtGui import QDesktopServices
from PySide6.QtGui import QFontDatabase
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QApplication
from PySide6.QtWidgets import QDialog
from PySide6.QtWidgets import QDialogButtonBox
from PySide6.QtWidgets import QLabel
from PySide6.QtWidgets import QMessageBox
from PySide6.QtWidgets import QPlainTextEdit
from PySide6.QtWidgets import QPushButton
from PySide6.QtWidgets import QVBoxLayout
from PySide6.QtWidgets import QWidget

from gpudesk import __version__
from gpudesk.services.core import paths
from gpudesk.services.core.redact import redact
from gpudesk.ui.widgets.retranslate import Retranslating

log = logging.getLogger(__name__)

_open: list[CrashDialog] = []  # Python keeps the dialogs alive; Qt does not own top-levels


def build_report(exc_type: type[BaseException], exc: BaseException,
                 tb: TracebackType | None, context: str = "") -> str:
    """The redacted plain-text report for one exception."""
    from PySide6 import __version__ as pyside_version
    from PySide6.QtCore import qVersion

    lines = [
        f"gpudesk {__version__}",
        f"OS: {platform.platform()}",
        f"Python: {sys.version.split()[0]} ({platform.python_implementation()})",
        f"Qt: {qVersion()}, PySide6 {pyside_version}",
    ]
    if context:
        lines.append(f"Context: {context}")
    lines.append("")
    lines.append("".join(traceback.format_exception(exc_type, exc, tb)).rstrip())
    return redact("\n".join(lines))


class CrashDialog(Retranslating, QDialog):
    """A read-only, selectable report with Copy, Open log folder and Close."""

    def __init__(self, report: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("crashDialog")
        self.intro = QLabel(self)
        self.intro.setWordWrap(True)
        self.report = QPlainTextEdit(self)
        self.report.setObjectName("crashReport")
        self.report.setReadOnly(True)
        self.report.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.report.setPlainText(report)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        self.copy_button = QPushButton(self)
        self.logs_button = QPushButton(self)
        self.buttons.addButton(self.copy_button, QDialogButtonBox.ButtonRole.ActionRole)
        self.buttons.addButton(self.logs_button, QDialogButtonBox.ButtonRole.ActionRole)
        self.copy_button.clicked.connect(self.copy_report)
        self.logs_button.clicked.connect(lambda: open_log_folder(self))
        self.buttons.rejected.connect(self.close)
        layout = QVBoxLayout(self)
        layout.addWidget(self.intro)
        layout.addWidget(self.report, 1)
        layout.addWidget(self.buttons)
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.destroyed.connect(lambda _o=None: _forget(self))
        self.resize(720, 480)
        self.retranslate()

    def text(self) -> str:
        return self.report.toPlainText()

    def append(self, report: str) -> None:
        self.report.appendPlainText("\n" + "-" * 60 + "\n" + report)

    def copy_report(self) -> None:
        clipboard = QGuiApplication.clipboard()
        if clipboard is not None:
            clipboard.setText(self.text())

    def retranslate(self) -> None:
        self.setWindowTitle(self.tr("gpudesk hit a problem"))
        self.intro.setText(self.tr(
            "Something went wrong inside gpudesk. It keeps running, but the last action may "
            "not have finished. Please copy this report into an issue; keys and passwords "
            "that looked like secrets have been removed from it."))
        self.copy_button.setText(self.tr("&Copy report"))
        self.logs_button.setText(self.tr("Open &log folder"))



def _forget(dialog: CrashDialog) -> None:
    if dialog in _open:
        _open.remove(dialog)


def open_log_folder(parent: QWidget | None = None) -> QMessageBox:
    """Open the log folder in the file manager, and always say where it is.

    Without a file manager (a bare Linux desktop, a remote session) ``openUrl``
    does nothing visible; the box names the folder and the file, selectable, with
    a button that copies the path."""
    folder = paths.log_dir()
    opened = QDesktopServices.openUrl(QUrl.fromLocalFile(str(folder)))
    translate = QCoreApplication.translate  # the name lupdate looks for
    text = (translate("CrashDialog", "The log folder is open in your file manager.") if opened else
            translate("CrashDialog", "No file manager opened the log folder. Open it yourself:"))
    box = QMessageBox(QMessageBox.Icon.Information, translate("CrashDialog", "gpudesk's log"),
                      text, QMessageBox.StandardButton.Close, parent)
    box.setObjectName("logFolderBox")
    box.setInformativeText(translate("CrashDialog", "Folder: {folder}\nLog file: {file}").format(
        folder=folder, file=paths.log_file()))
    box.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    copy = box.addButton(translate("CrashDialog", "Copy the path"),
                         QMessageBox.ButtonRole.ActionRole)
    copy.setObjectName("copyLogPath")
    copy.clicked.disconnect()  # an action button closes the box; copying should not

    def copy_path() -> None:
        clipboard = QGuiApplication.clipboard()
        if clipboard is not None:
            clipboard.setText(str(folder))
    copy.clicked.connect(copy_path)
    box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    box.open()
    return box


def open_dialogs() -> list[CrashDialog]:
    return list(_open)


def show_crash(exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None,
               context: str = "") -> CrashDialog | None:
    """Show (or extend) the crash dialog; never raises. None without a QApplication."""
    if not isinstance(QApplication.instance(), QApplication):
        return None
    try:
        report = build_report(exc_type, exc, tb, context)
        if _open:
            dialog = _open[-1]
            dialog.append(report)
        else:
            # The main window, not the active one: a crash in a dialog that then closes
            # must not take the report with it.
            main = [w for w in QApplication.topLevelWidgets()
                    if w.objectName() == "mainWindow" and w.isVisible()]
            dialog = CrashDialog(report, main[0] if main else None)
            dialog.setWindowFlag(Qt.WindowType.Window, True)
            _open.append(dialog)
        dialog.show()
        dialog.raise_()
        return dialog
    except Exception:  # noqa: BLE001 - a crash handler that crashes helps nobody
        log.exception("cannot show the crash dialog")
        return None
