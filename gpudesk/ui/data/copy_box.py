"""The Data page's "Copy to another region…": the target bucket and region asked in a
small dialog; on a worker thread the same steps as ``gpudesk data copy`` before it asks
(``dataset_copy.prepare``: the route, the bucket checked with the account's keys, the
inter-region price); then the copy question (``copy_question.ask_copy``) with the bytes
and their price; Copy runs the copy server-side with a progress bar and Cancel.

Same checks and words as the CLI; nothing moves before Copy is clicked. Texts: "DataPage"
(the services' sentences keep their "Storage" context).
"""

from __future__ import annotations

import threading
from typing import Any

from PySide6.QtCore import QCoreApplication
from PySide6.QtCore import QObject
from PySide6.QtCore import Qt
from PySide6.QtCore import Signal
from PySide6.QtWidgets import QDialog
from PySide6.QtWidgets import QDialogButtonBox
from PySide6.QtWidgets import QFormLayout
from PySide6.QtWidgets import QHBoxLayout
from PySide6.QtWidgets import QLabel
from PySide6.QtWidgets import QLineEdit
from PySide6.QtWidgets import QMessageBox
from PySide6.QtWidgets import QProgressBar
from PySide6.QtWidgets import QPushButton
from PySide6.QtWidgets import QVBoxLayout
from PySide6.QtWidgets import QWidget

from gpudesk.services.core.said import Said
from gpudesk.services.core.sizes import size_text
from gpudesk.services.storage import dataset_copy
from gpudesk.services.storage import datasets
from gpudesk.services.storage.dataset_copy import CopyPlan
from gpudesk.services.storage.errors import StorageError
from gpudesk.ui.data.data_work import ClientFor
from gpudesk.ui.widgets.copy_question import ask_copy
from gpudesk.ui.widgets.retranslate import Retranslating
from gpudesk.ui.widgets.said_text import said_text
from gpudesk.ui.widgets.task_runner import TaskRunner
from gpudesk.ui.widgets.task_runner import error_text

translate = QCoreApplication.translate  # the name lupdate looks for
BAR_STEPS = 1000  # per mille: a dataset's bytes overflow a QProgressBar's int
ERROR_STYLE = "color: #d32f2f;"


class CopyTargetDialog(QDialog):
    """The bucket/prefix in the other region and its region (COS, OSS; AWS's answer says
    it). Its URI is checked here; the bucket itself on the worker thread."""

    def __init__(self, dataset: datasets.Dataset, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("dataCopyTargetDialog")
        self.setWindowTitle(translate("DataPage", "Copy {name} to another region").format(
            name=dataset.name))
        self.setWindowModality(Qt.WindowModality.WindowModal)
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.dataset = dataset
        self.chosen: tuple[str, str] | None = None
        about = QLabel(translate(
            "DataPage", "Dataset {name} is in {store} ({region}). A bucket of yours in the "
            "machine's region receives a copy, made by the cloud (nothing passes through "
            "this computer); its cost is said before anything moves.").format(
            name=dataset.name, store=dataset.store, region=dataset.region), self)
        about.setWordWrap(True)
        self.target = QLineEdit(self)
        self.target.setObjectName("dataCopyTarget")
        self.target.setPlaceholderText(translate("DataPage", "s3://bucket/prefix"))
        self.target.setMinimumWidth(340)
        self.region = QLineEdit(self)
        self.region.setObjectName("dataCopyRegion")
        self.region.setPlaceholderText(translate(
            "DataPage", "its region (COS, OSS; AWS's answer says it)"))
        self.error = QLabel(self)
        self.error.setObjectName("dataCopyTargetError")
        self.error.setWordWrap(True)
        self.error.setStyleSheet(ERROR_STYLE)
        self.error.setVisible(False)
        form = QFormLayout()
        form.addRow(translate("DataPage", "Bucket:"), self.target)
        form.addRow(translate("DataPage", "Region:"), self.region)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel, self)
        self.next_button = buttons.addButton(translate("DataPage", "Say the cost…"),
                                             QDialogButtonBox.ButtonRole.AcceptRole)
        self.next_button.setObjectName("dataCopyNext")
        self.next_button.setDefault(True)
        buttons.accepted.connect(self._check)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(about)
        layout.addLayout(form)
        layout.addWidget(self.error)
        layout.addWidget(buttons)

    def _check(self) -> None:
        from gpudesk.services.storage.uri import parse_uri

        uri = self.target.text().strip()
        try:
            uri = str(parse_uri(uri)) if uri else ""
            why = "" if uri else translate("DataPage", "Type the bucket to copy to: "
                                           "s3://bucket/prefix.")
        except StorageError as exc:
            why = error_text(exc)[0]
        if why:
            self.error.setText(why)
            self.error.setVisible(True)
            return
        self.chosen = (uri, self.region.text().strip())
        self.accept()


class _Bridge(QObject):
    progress = Signal(int, object, object)  # (the copy's number, bytes done, in all)


class CopyBox(Retranslating, QWidget):
    """A line on the Data page: what the copy under way did, its bar and Cancel; hidden
    parts until a copy is asked for."""

    copied = Signal(object)  # the copy's Dataset, once its manifest is written
    busy_changed = Signal()  # a check or a copy started (the runners' finished: ended)

    def __init__(self, client_for: ClientFor, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("dataCopy")
        self.client_for = client_for
        self.cancel_event = threading.Event()
        self.dialog: CopyTargetDialog | None = None
        self.question: QMessageBox | None = None
        self._copies = 0  # the latest copy's number: older ones' reports are dropped
        self._bridge = _Bridge(self)
        self._bridge.progress.connect(self._progress, Qt.ConnectionType.QueuedConnection)

        self.message = QLabel(self)  # checking, copied, cancelled, or why not
        self.message.setObjectName("dataCopyMessage")
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.message.setVisible(False)
        self.bar = QProgressBar(self)
        self.bar.setObjectName("dataCopyProgress")
        self.bar.setRange(0, BAR_STEPS)
        self.bar.setMaximumWidth(240)
        self.bar.setVisible(False)
        self.cancel_button = QPushButton(self)
        self.cancel_button.setObjectName("dataCopyCancel")
        self.cancel_button.setVisible(False)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.message, 1)
        row.addWidget(self.bar)
        row.addWidget(self.cancel_button)

        # said on the page (a refused bucket or a cancel is no error to pop up)
        self.check_runner = TaskRunner(self, show_dialog=False, busy_cursor=False)
        # not the runner's cancel_button: Cancel stops the copy between blobs (the worker
        # says so), it does not drop the task while its thread still copies
        self.copy_runner = TaskRunner(self, show_dialog=False, busy_cursor=False)
        self.cancel_button.clicked.connect(self.cancel)
        self.check_runner.failed.connect(lambda text: self._say(translate(
            "DataPage", "Nothing was copied: {why}").format(why=text), error=True))
        self.copy_runner.failed.connect(self._copy_failed)
        self.copy_runner.finished.connect(lambda _ok: self.cancel_button.setVisible(False))
        self.retranslate()

    def retranslate(self) -> None:
        self.cancel_button.setText(translate("DataPage", "Cancel the copy"))

    @property
    def busy(self) -> bool:
        return self.check_runner.busy or self.copy_runner.busy

    def _say(self, text: str, *, error: bool = False) -> None:
        self.message.setStyleSheet(ERROR_STYLE if error else "")
        self.message.setText(text)
        self.message.setVisible(bool(text))

    # ------------------------------------------------------------------ asked

    def ask_target(self, dataset: datasets.Dataset) -> CopyTargetDialog:
        """The dialog for the target bucket and region; its "Say the cost…" starts
        :meth:`prepare`."""
        dialog = CopyTargetDialog(dataset, self.window())
        dialog.accepted.connect(lambda: self.prepare(dataset, *(dialog.chosen or ("", ""))))
        self.dialog = dialog
        dialog.destroyed.connect(lambda: self._forget("dialog", dialog))
        dialog.open()
        return dialog

    def prepare(self, dataset: datasets.Dataset, uri: str, region: str) -> None:
        """On a worker: what ``gpudesk data copy`` does before it asks; then the question."""
        client_for = self.client_for
        self.question = None
        self.bar.setVisible(False)
        self._say(translate("DataPage", "Checking the bucket {uri} and the price of the "
                            "copy…").format(uri=uri))

        def work() -> tuple[CopyPlan, Any]:
            return dataset_copy.prepare(dataset, uri, region, client_for)

        self.check_runner.run_blocking(work, on_success=lambda got: self._ask(*got))
        self.busy_changed.emit()

    def _ask(self, plan: CopyPlan, target_client: Any) -> None:
        self._say(said_text(plan.words()))
        box = ask_copy(self.window(), plan, lambda: self.copy(plan, target_client),
                       lambda: self._say(said_text(Said(
                           "Storage", dataset_copy.MSG_NOT_CONFIRMED, name=plan.dataset.name))))
        self.question = box
        box.destroyed.connect(lambda: self._forget("question", box))

    def _forget(self, name: str, gone: QWidget) -> None:
        """A closed box deletes itself: no reference to it is kept."""
        if getattr(self, name) is gone:
            setattr(self, name, None)

    # ------------------------------------------------------------------ the copy

    def copy(self, plan: CopyPlan, target_client: Any) -> None:
        """Copy was clicked: the blobs, then the manifest, off the GUI thread."""
        self.cancel_event = cancel = threading.Event()
        self._copies += 1
        number, bridge, client_for = self._copies, self._bridge, self.client_for
        dataset = plan.dataset
        self.bar.setValue(0)
        self.bar.setVisible(True)
        self.cancel_button.setEnabled(True)
        self.cancel_button.setVisible(True)
        self._say(translate("DataPage", "Copying {name}…").format(name=dataset.name))

        def progress(done: int, total: int) -> None:
            bridge.progress.emit(number, done, total)

        def work() -> datasets.Dataset:
            source = client_for(dataset.store.cloud, dataset.region)
            return dataset_copy.copy(source, target_client, plan, confirmed=True,
                                     progress=progress, cancel=cancel)

        self.copy_runner.run_blocking(work, on_success=lambda d: self._done(plan, d))
        self.busy_changed.emit()

    def cancel(self) -> None:
        """Stops between blobs; the manifest is never written, nothing is listed."""
        self.cancel_event.set()
        self.cancel_button.setEnabled(False)
        self._say(translate("DataPage", "Cancelling…"))

    def _progress(self, number: int, done: int, total: int) -> None:
        if number != self._copies:
            return
        self.bar.setValue(BAR_STEPS if not total else min(BAR_STEPS, done * BAR_STEPS // total))
        if total and not self.cancel_event.is_set():
            self._say(translate("DataPage", "{done} of {total} copied").format(
                done=size_text(done), total=size_text(total)))

    def _done(self, plan: CopyPlan, copied: datasets.Dataset) -> None:
        self.bar.setValue(BAR_STEPS)
        self._say(said_text(dataset_copy.copied_words(copied, plan.target,
                                                      plan.target_region)))
        self.copied.emit(copied)

    def _copy_failed(self, text: str) -> None:
        self.bar.setVisible(False)
        exc = self.copy_runner.last_error
        cancelled = getattr(exc, "template", "") == dataset_copy.MSG_CANCELLED
        self._say(text if cancelled else translate(
            "DataPage", "The copy stopped: {why}").format(why=text), error=not cancelled)
