"""Help → About: gpudesk's version, and the versions and licences of what it is built on."""

from __future__ import annotations

import platform
import sys
from importlib import metadata

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog
from PySide6.QtWidgets import QDialogButtonBox
from PySide6.QtWidgets import QHeaderView
from PySide6.QtWidgets import QLabel
from PySide6.QtWidgets import QTableWidget
from PySide6.QtWidgets import QTableWidgetItem
from PySide6.QtWidgets import QVBoxLayout
from PySide6.QtWidgets import QWidget

import gpudesk
from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.ui.widgets.retranslate import Retranslating

# (shown name, distribution to read, licence when the metadata has none)
COMPONENTS: tuple[tuple[str, str, str], ...] = (
    ("gpudesk", "gpudesk", QT_TRANSLATE_NOOP("AboutDialog", "see LICENSE")),
    ("PySide6", "PySide6_Essentials", "LGPL-3.0-only OR GPL-2.0-only OR GPL-3.0-only"),
    ("shiboken6", "shiboken6", "LGPL-3.0-only OR GPL-2.0-only OR GPL-3.0-only"),
    ("qasync", "qasync", "BSD-2-Clause"),
    ("pyqtgraph", "pyqtgraph", "MIT"),
    ("keyring", "keyring", "MIT"),
    ("numpy", "numpy", "BSD-3-Clause"),
    ("platformdirs", "platformdirs", "MIT"),
)


def _licence(meta: metadata.PackageMetadata, fallback: str) -> str:
    for key in ("License-Expression", "License"):
        value = (meta[key] or "").strip() if key in meta else ""
        if value and "\n" not in value and len(value) < 80:
            return value
    classifiers = [c.rsplit("::", 1)[-1].strip() for c in meta.get_all("Classifier") or []
                   if c.startswith("License ::")]
    return ", ".join(classifiers) or fallback


def components() -> list[tuple[str, str, str]]:
    """(name, version, licence) for Python, Qt and each library."""
    from PySide6.QtCore import qVersion

    rows = [("Python", platform.python_version(), "PSF-2.0"),
            ("Qt", qVersion(), "LGPL-3.0-only OR GPL-2.0-only OR GPL-3.0-only")]
    for name, dist, fallback in COMPONENTS:
        try:
            meta = metadata.metadata(dist)
        except metadata.PackageNotFoundError:
            version = gpudesk.__version__ if name == "gpudesk" else "—"
            rows.append((name, version, fallback))
            continue
        rows.append((name, meta["Version"] or "—", _licence(meta, fallback)))
    return rows


class AboutDialog(Retranslating, QDialog):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("aboutDialog")
        self.intro = QLabel(self)
        self.intro.setWordWrap(True)
        self.intro.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.table = QTableWidget(0, 3, self)
        self.table.setObjectName("aboutComponents")
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        for row, values in enumerate(components()):
            self.table.insertRow(row)
            for col, value in enumerate(values):
                self.table.setItem(row, col, QTableWidgetItem(
                    self.tr(value) if col == 2 else value))  # a licence: "see LICENSE"
        self.note = QLabel(self)
        self.note.setWordWrap(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.rejected.connect(self.close)
        layout = QVBoxLayout(self)
        layout.addWidget(self.intro)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.note)
        layout.addWidget(buttons)
        self.resize(640, 440)
        self.retranslate()

    def rows(self) -> list[tuple[str, ...]]:
        return [tuple((item.text() if (item := self.table.item(r, c)) is not None else "")
                      for c in range(3)) for r in range(self.table.rowCount())]

    def retranslate(self) -> None:
        self.setWindowTitle(self.tr("About gpudesk"))
        self.intro.setText(self.tr("gpudesk {version}\nPlan, rent, sync, train and watch cloud "
                                   "GPUs from one window.\n{system}").format(
            version=gpudesk.__version__, system=f"{platform.platform()}, Python "
                                                f"{sys.version.split()[0]}"))
        self.table.setHorizontalHeaderLabels([self.tr("Component"), self.tr("Version"),
                                              self.tr("Licence")])
        self.note.setText(self.tr("Qt and PySide6 are used under the GNU LGPL version 3; "
                                  "their source is available from qt.io."))

