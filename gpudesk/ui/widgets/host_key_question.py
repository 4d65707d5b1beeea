"""Ask the user, on the GUI thread, whether to pin a machine's new host key.

SSH connects on worker threads; ``HostKeyPolicy.ask_user`` calls its question
there. This object carries the question to the GUI thread as a queued signal,
opens a window-modal box (never ``exec()``, which would nest an event loop
under qasync) and hands the answer back. A changed key is never asked about:
host_keys refuses it before any question; :func:`ask_forget` is the way out of that
refusal: a confirmed "forget the pinned key" for a machine that was rebuilt.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field

from PySide6.QtCore import QCoreApplication
from PySide6.QtCore import QObject
from PySide6.QtCore import Qt
from PySide6.QtCore import Signal
from PySide6.QtWidgets import QMessageBox
from PySide6.QtWidgets import QWidget

from gpudesk.services.remote.host_keys import HostKeyChanged
from gpudesk.services.remote.host_keys import HostKeyPolicy
from gpudesk.services.remote.host_keys import PinStore
from gpudesk.ui.widgets.confirm import confirm


def changed_pin(error: BaseException | None) -> str:
    """The pin name whose host key changed, when ``error`` is that refusal; else ""."""
    return error.host if isinstance(error, HostKeyChanged) else ""


def ask_forget(parent: QWidget, name: str, done: Callable[[bool], object],
               store: PinStore | None = None) -> QMessageBox:
    """Ask, window-modal, whether to forget the pinned host key of ``name``; on yes forget
    it and call ``done(True)`` (``done(False)`` when nothing was pinned any more)."""
    title = QCoreApplication.translate("HostKeyQuestion", "Forget the pinned host key?")
    text = QCoreApplication.translate(
        "HostKeyQuestion", "Forget the host key pinned for {name}?\n\nDo this only if you "
        "know the machine was rebuilt or reinstalled: a changed key is also what an attacker "
        "in the middle looks like. The next connection shows the key the machine offers now, "
        "for you to compare with its console before it is pinned.").format(name=name)
    return confirm(parent, QMessageBox.Icon.Warning, title, text, "forgetHostKeyQuestion",
                   (QCoreApplication.translate("HostKeyQuestion", "Forget the key"),
                    QMessageBox.ButtonRole.AcceptRole, "forgetHostKeyConfirm"),
                   lambda: done((store or PinStore()).forget(name)))


@dataclass
class _Pending:
    name: str
    fingerprint: str
    key_type: str
    answer: bool = False
    done: threading.Event = field(default_factory=threading.Event)


class HostKeyQuestion(QObject):
    asked = Signal(object)  # a _Pending, from a worker thread

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self._parent = parent
        self._gone = threading.Event()
        self.last_box: QMessageBox | None = None
        self.asked.connect(self._open, Qt.ConnectionType.QueuedConnection)
        self.destroyed.connect(lambda *_: self._gone.set())

    def policy(self) -> HostKeyPolicy:
        return HostKeyPolicy.ask_user(self)

    def __call__(self, name: str, fingerprint: str, key_type: str) -> bool:
        """On a worker thread: block until the user answers (No if the window goes away)."""
        pending = _Pending(name, fingerprint, key_type)
        self.asked.emit(pending)
        while not pending.done.wait(0.2):
            if self._gone.is_set():
                return False
        return pending.answer

    def _open(self, pending: _Pending) -> None:
        box = QMessageBox(QMessageBox.Icon.Question, self.tr("New machine"), self.tr(
            "The machine {name} offers a {type} host key that is not pinned yet:\n\n{fp}\n\n"
            "Compare it with the fingerprint your cloud console or the machine's owner "
            "shows. Pin it and connect?").format(name=pending.name, type=pending.key_type,
                                                 fp=pending.fingerprint),
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No, self._parent)
        box.setObjectName("hostKeyQuestion")
        box.setDefaultButton(QMessageBox.StandardButton.No)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.setWindowModality(Qt.WindowModality.WindowModal)

        def answered(result: int) -> None:
            pending.answer = result == QMessageBox.StandardButton.Yes
            pending.done.set()

        box.finished.connect(answered)
        box.destroyed.connect(lambda *_: pending.done.set())  # closed with the window: No
        self.last_box = box
        box.open()
