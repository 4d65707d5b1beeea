"""The first-start welcome: what gpudesk can do now, and the language to use.

Shown once (``Settings.welcomed``); any way of closing it counts as dismissed.
"Add a cloud account" closes it and opens the Accounts page; "Add my own SSH
machine" closes it and opens the own-machine dialog there (``choice`` says which
was pressed: "cloud" or "ssh").
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox
from PySide6.QtWidgets import QDialog
from PySide6.QtWidgets import QHBoxLayout
from PySide6.QtWidgets import QLabel
from PySide6.QtWidgets import QPushButton
from PySide6.QtWidgets import QVBoxLayout
from PySide6.QtWidgets import QWidget

from gpudesk.ui.widgets.retranslate import Retranslating


class WelcomeDialog(Retranslating, QDialog):
    def __init__(self, language: str, set_language: Callable[[str], object],
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("welcomeDialog")
        self._set_language = set_language
        self.heading = QLabel(self)
        self.heading.setObjectName("welcomeHeading")
        font = self.heading.font()
        font.setPointSizeF(font.pointSizeF() * 1.5)
        font.setBold(True)
        self.heading.setFont(font)
        self.intro = QLabel(self)
        self.intro.setWordWrap(True)
        self.explore_button = QPushButton(self)
        self.explore_button.setObjectName("welcomeExplore")
        self.explore_button.setDefault(True)
        self.cloud_button = QPushButton(self)
        self.cloud_button.setObjectName("welcomeCloud")
        self.ssh_button = QPushButton(self)
        self.ssh_button.setObjectName("welcomeSsh")
        self.choice = ""  # "cloud" or "ssh" when the user chose to add one
        self.language_label = QLabel(self)
        self.language = QComboBox(self)
        for code, name in (("system", ""), ("en", "English"), ("zh_CN", "简体中文")):
            self.language.addItem(name, code)
        self.language.setCurrentIndex(max(self.language.findData(language), 0))
        self.language_label.setBuddy(self.language)
        self.language.currentIndexChanged.connect(
            lambda _i: self._set_language(self.language.currentData()))
        self.explore_button.clicked.connect(self.accept)
        self.cloud_button.clicked.connect(lambda: self._choose("cloud"))
        self.ssh_button.clicked.connect(lambda: self._choose("ssh"))

        layout = QVBoxLayout(self)
        layout.setSpacing(10)
        layout.addWidget(self.heading)
        layout.addWidget(self.intro)
        for button in (self.explore_button, self.cloud_button, self.ssh_button):
            button.setMinimumHeight(36)
            layout.addWidget(button)
        row = QHBoxLayout()
        row.addWidget(self.language_label)
        row.addWidget(self.language, 1)
        layout.addLayout(row)
        self.setMinimumWidth(520)
        self.setWindowModality(Qt.WindowModality.WindowModal)
        self.retranslate()

    def _choose(self, which: str) -> None:
        self.choice = which
        self.accept()

    def retranslate(self) -> None:
        self.setWindowTitle(self.tr("Welcome to gpudesk"))
        self.heading.setText(self.tr("Welcome to gpudesk"))
        self.intro.setText(self.tr(
            "gpudesk tells you how much GPU memory a training or inference job needs, which "
            "cloud GPUs fit it, and what finishing it would cost. You can start right away: "
            "planning needs no account and sends nothing anywhere. When you are ready to rent, "
            "add your cloud keys (kept only in the system keyring) or a machine you already "
            "have."))
        self.explore_button.setText(self.tr("Explore Plan without an account"))
        self.cloud_button.setText(self.tr("Add a cloud account"))
        self.ssh_button.setText(self.tr("Add my own SSH machine"))
        self.language_label.setText(self.tr("&Language:"))
        self.language.setItemText(0, self.tr("System"))

