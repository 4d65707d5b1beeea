"""The Data page's Hugging Face token: typed into a hidden field, Save puts it in the
keyring (``credentials.save_hf_token``), Forget removes it; the field is cleared once
saved and the token is never shown again, only whether one is saved.

The window's face of ``gpudesk data hf-token [--forget]``, with its words. Here, not on
the Accounts page: the token serves datasets only (a run reading ``hf:ORG/NAME``), as
its CLI verb sits under ``data``. The keyring is read once the box is first shown, not
when the window opens. Texts: "DataPage".
"""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication
from PySide6.QtCore import Qt
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import QGroupBox
from PySide6.QtWidgets import QHBoxLayout
from PySide6.QtWidgets import QLabel
from PySide6.QtWidgets import QLineEdit
from PySide6.QtWidgets import QPushButton
from PySide6.QtWidgets import QVBoxLayout
from PySide6.QtWidgets import QWidget

from gpudesk.ui.widgets.retranslate import Retranslating
from gpudesk.ui.widgets.task_runner import error_text

translate = QCoreApplication.translate  # the name lupdate looks for
ERROR_STYLE = "color: #d32f2f;"


class HfTokenBox(Retranslating, QGroupBox):
    """A password-mode field, Save and Forget, and whether a token is saved."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("dataHfToken")
        self.saved: bool | None = None  # None: the keyring not read yet
        self.about = QLabel(self)
        self.about.setWordWrap(True)
        self.field = QLineEdit(self)
        self.field.setObjectName("dataHfTokenField")
        self.field.setEchoMode(QLineEdit.EchoMode.Password)
        self.field.setClearButtonEnabled(True)
        self.save_button = QPushButton(self)
        self.save_button.setObjectName("dataHfSave")
        self.forget_button = QPushButton(self)
        self.forget_button.setObjectName("dataHfForget")
        self.state = QLabel(self)  # "a token is saved" / "no token saved"
        self.state.setObjectName("dataHfState")
        self.message = QLabel(self)  # what Save or Forget did, or why not
        self.message.setObjectName("dataHfMessage")
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.message.setVisible(False)

        row = QHBoxLayout()
        row.addWidget(self.field, 1)
        row.addWidget(self.save_button)
        row.addWidget(self.forget_button)
        row.addWidget(self.state)
        layout = QVBoxLayout(self)
        layout.addWidget(self.about)
        layout.addLayout(row)
        layout.addWidget(self.message)

        self.save_button.clicked.connect(self.save)
        self.forget_button.clicked.connect(self.forget)
        self.field.returnPressed.connect(self.save)
        self.field.textChanged.connect(lambda _t: self._update())
        self.retranslate()

    def retranslate(self) -> None:
        self.setTitle(translate("DataPage", "Hugging Face token"))
        self.about.setText(translate(
            "DataPage", "For gated Hub datasets (Run page: Data hf:ORG/NAME). It is kept in "
            "the keyring only and reaches a machine as a short-lived file, never on a "
            "command line (gpudesk data hf-token)."))
        self.field.setPlaceholderText(translate("DataPage", "paste a token to save it"))
        self.save_button.setText(translate("DataPage", "Save"))
        self.forget_button.setText(translate("DataPage", "Forget"))
        self._update()

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 - Qt API
        super().showEvent(event)
        if self.saved is None:
            self.read()

    def read(self) -> None:
        """Whether a token is saved (the keyring is asked; the token is not kept)."""
        from gpudesk.services.cloud import credentials

        try:
            self.saved = bool(credentials.load_hf_token())
        except credentials.CredentialError as exc:  # not known: asked again when next shown
            self.saved = None
            self._say(error_text(exc)[0], error=True)
        self._update()

    def _update(self) -> None:
        if self.saved is None:
            self.state.setText("")
        else:
            self.state.setText(translate("DataPage", "a token is saved") if self.saved
                               else translate("DataPage", "no token saved"))
        self.save_button.setEnabled(bool(self.field.text().strip()))
        self.forget_button.setEnabled(bool(self.saved))

    def _say(self, text: str, *, error: bool = False) -> None:
        self.message.setStyleSheet(ERROR_STYLE if error else "")
        self.message.setText(text)
        self.message.setVisible(bool(text))

    def save(self) -> None:
        from gpudesk.services.cloud import credentials

        token = self.field.text()
        try:
            credentials.save_hf_token(token)
        except credentials.CredentialError as exc:
            self._say(error_text(exc)[0], error=True)
            return
        finally:
            del token
        self.field.clear()  # never shown again, not even as dots
        self.saved = True
        self._say(translate("DataPage", "the Hugging Face token is in the keyring; runs "
                            "reading a Hub dataset pass it to the machine as a short-lived "
                            "file"))
        self._update()

    def forget(self) -> None:
        from gpudesk.services.cloud import credentials

        try:
            credentials.delete_hf_token()
        except credentials.CredentialError as exc:
            self._say(error_text(exc)[0], error=True)
            return
        self.saved = False
        self._say(translate("DataPage", "the Hugging Face token was removed from the "
                            "keyring"))
        self._update()
