"""The Data page's "Push a folder" box: folder, name and bucket, checked before anything
is sent; a progress bar with bytes sent, speed, time left and the files already in the
bucket; Cancel, after which nothing is listed (``datasets.push`` writes the manifest last).

Same checks and words as ``gpudesk data push``. Texts are in the "DataPage" context.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QCoreApplication
from PySide6.QtCore import QObject
from PySide6.QtCore import Qt
from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox
from PySide6.QtWidgets import QFileDialog
from PySide6.QtWidgets import QFormLayout
from PySide6.QtWidgets import QGroupBox
from PySide6.QtWidgets import QHBoxLayout
from PySide6.QtWidgets import QLabel
from PySide6.QtWidgets import QLineEdit
from PySide6.QtWidgets import QProgressBar
from PySide6.QtWidgets import QPushButton
from PySide6.QtWidgets import QVBoxLayout
from PySide6.QtWidgets import QWidget

from gpudesk.services.core.sizes import size_text
from gpudesk.services.storage import dataset_registry
from gpudesk.services.storage import datasets
from gpudesk.services.storage.errors import StorageError
from gpudesk.ui.data import data_work
from gpudesk.ui.data.data_work import ClientFor
from gpudesk.ui.data.data_work import Shown
from gpudesk.ui.widgets.retranslate import Retranslating
from gpudesk.ui.widgets.task_runner import TaskRunner
from gpudesk.ui.widgets.task_runner import error_text

translate = QCoreApplication.translate  # the name lupdate looks for
BAR_STEPS = 1000  # per mille: a QProgressBar holds 32-bit ints, a dataset's bytes not
ERROR_STYLE = "color: #d32f2f;"


class _Bridge(QObject):
    progress = Signal(int, object)  # (the push's number, a Shown), from the push's thread


def _error_label(parent: QWidget, name: str) -> QLabel:
    label = QLabel(parent)
    label.setObjectName(name)
    label.setWordWrap(True)
    label.setStyleSheet(ERROR_STYLE)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    label.setVisible(False)
    return label


def _with_error(parent: QWidget, field: QWidget, error: QLabel,
                extra: QWidget | None = None) -> QWidget:
    box = QWidget(parent)
    lines = QVBoxLayout(box)
    lines.setContentsMargins(0, 0, 0, 0)
    if extra is None:
        lines.addWidget(field)
    else:
        top = QHBoxLayout()
        top.addWidget(field, 1)
        top.addWidget(extra)
        lines.addLayout(top)
    lines.addWidget(error)
    return box


class PushBox(Retranslating, QGroupBox):
    """Folder, name, bucket; Push and Cancel; the progress of the push under way."""

    pushed = Signal(object)  # the Dataset, once its manifest is written

    def __init__(self, client_for: ClientFor, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("dataPush")
        self.client_for = client_for
        self.choose_folder: Callable[[], str] = self._ask_folder  # tests give their own
        self.cancel_event = threading.Event()
        self.last: datasets.Dataset | None = None
        self._checking = False  # the bucket is being checked; nothing sent yet
        self._pushes = 0  # the number of the latest push: older ones' reports are dropped
        self._bridge = _Bridge(self)
        self._bridge.progress.connect(self._progress, Qt.ConnectionType.QueuedConnection)

        self.folder = QLineEdit(self)
        self.folder.setObjectName("dataFolder")
        self.folder.setClearButtonEnabled(True)
        self.browse = QPushButton(self)
        self.browse.setObjectName("dataBrowse")
        self.folder_error = _error_label(self, "dataFolderError")
        self.name = QLineEdit(self)
        self.name.setObjectName("dataName")
        self.name.setClearButtonEnabled(True)
        self.name_error = _error_label(self, "dataNameError")
        self.store = QComboBox(self)
        self.store.setObjectName("dataStore")
        self.store.setEditable(True)
        self.store.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        self.store.setMinimumContentsLength(28)
        self.region = QLineEdit(self)
        self.region.setObjectName("dataRegion")
        self.region.setMaximumWidth(150)
        self.store_error = _error_label(self, "dataStoreError")
        self.push_button = QPushButton(self)
        self.push_button.setObjectName("dataPushStart")
        self.cancel_button = QPushButton(self)
        self.cancel_button.setObjectName("dataPushCancel")
        self.cancel_button.setEnabled(False)
        self.bar = QProgressBar(self)
        self.bar.setObjectName("dataPushProgress")
        self.bar.setRange(0, BAR_STEPS)
        self.bar.setValue(0)
        self.bar.setVisible(False)
        self.sent = QLabel(self)  # bytes sent, speed, time left, files already there
        self.sent.setObjectName("dataPushSent")
        self.sent.setWordWrap(True)
        self.message = QLabel(self)
        self.message.setObjectName("dataPushMessage")
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        form = QFormLayout()
        self._labels = {key: QLabel(self) for key in ("folder", "name", "store")}
        form.addRow(self._labels["folder"],
                    _with_error(self, self.folder, self.folder_error, self.browse))
        form.addRow(self._labels["name"], _with_error(self, self.name, self.name_error))
        form.addRow(self._labels["store"],
                    _with_error(self, self.store, self.store_error, self.region))
        buttons = QHBoxLayout()
        buttons.addWidget(self.push_button)
        buttons.addWidget(self.cancel_button)
        buttons.addWidget(self.bar, 1)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addLayout(buttons)
        layout.addWidget(self.sent)
        layout.addWidget(self.message)

        # the outcome is said in the box (a cancel is no error to pop up)
        self.runner = TaskRunner(self, button=self.push_button, show_dialog=False,
                                 busy_cursor=False)
        self.runner.failed.connect(self._failed)
        self.runner.started.connect(lambda: self.cancel_button.setEnabled(True))
        self.runner.finished.connect(lambda _ok: self.cancel_button.setEnabled(False))
        self.browse.clicked.connect(self._browse)
        self.push_button.clicked.connect(self.start)
        self.cancel_button.clicked.connect(self.cancel)
        self.store.currentIndexChanged.connect(self._store_chosen)
        self.retranslate()

    def retranslate(self) -> None:
        self.setTitle(translate("DataPage", "Push a folder"))
        self._labels["folder"].setText(translate("DataPage", "Folder:"))
        self._labels["name"].setText(translate("DataPage", "Name:"))
        self._labels["store"].setText(translate("DataPage", "Bucket:"))
        self.browse.setText(translate("DataPage", "Choose…"))
        self.folder.setPlaceholderText(translate("DataPage", "the folder to push"))
        self.name.setPlaceholderText(translate(
            "DataPage", "the dataset's name, e.g. imagenet-val (gpudesk run --data NAME)"))
        line = self.store.lineEdit()
        if line is not None:
            line.setPlaceholderText(translate("DataPage", "s3://bucket/prefix, cos:// or "
                                              "oss:// with the region"))
        self.region.setPlaceholderText(translate("DataPage", "region (COS, OSS)"))
        self.store.setToolTip(translate(
            "DataPage", "The bucket the dataset goes to; every machine fetches it from there. "
            "It is checked with the account's keys before anything is sent."))
        self.push_button.setText(translate("DataPage", "Push"))
        self.cancel_button.setText(translate("DataPage", "Cancel"))

    # ------------------------------------------------------------------ the fields

    def set_stores(self, stores: list[tuple[str, str]]) -> None:
        """The buckets to offer (datasets' and machine profiles'); typed text is kept."""
        typed = self.store.currentText()
        self.store.blockSignals(True)
        self.store.clear()
        for uri, region in stores:
            self.store.addItem(uri, region)
        self.store.blockSignals(False)
        if typed:
            self.store.setEditText(typed)
        elif stores:
            self.store.setCurrentIndex(0)
            self._store_chosen(0)

    def _store_chosen(self, index: int) -> None:
        region = self.store.itemData(index)
        if isinstance(region, str):
            self.region.setText(region)

    def _ask_folder(self) -> str:
        return QFileDialog.getExistingDirectory(
            self, translate("DataPage", "The folder to push"), self.folder.text())

    def _browse(self) -> None:
        chosen = self.choose_folder()
        if chosen:
            self.folder.setText(chosen)
            if not self.name.text().strip():
                self.name.setText(Path(chosen).name)

    def _say(self, label: QLabel, text: str) -> None:
        label.setText(text)
        label.setVisible(bool(text))

    def clear_errors(self) -> None:
        for label in (self.folder_error, self.name_error, self.store_error):
            self._say(label, "")

    def check(self) -> tuple[Path, str, str, str] | None:
        """(folder, name, store URI, region) when the fields are good; else each error next
        to its field and None. Nothing is asked of any bucket here."""
        from gpudesk.services.storage.uri import parse_uri

        self.clear_errors()
        folder_text, name = self.folder.text().strip(), self.name.text().strip()
        uri, region = self.store.currentText().strip(), self.region.text().strip()
        good = True
        try:
            datasets.check_name(name)
        except StorageError as exc:
            self._say(self.name_error, error_text(exc)[0])
            good = False
        if not folder_text:
            self._say(self.folder_error, translate("DataPage", "Choose the folder to push."))
            good = False
        elif not Path(folder_text).is_dir():
            self._say(self.folder_error, error_text(StorageError(
                datasets.MSG_NO_FOLDER, path=folder_text))[0])
            good = False
        if not uri and name in dataset_registry.known():
            uri, region = dataset_registry.known()[name]
        if not uri:
            self._say(self.store_error, translate(
                "DataPage", "No bucket to push to: type one here (s3://bucket/prefix; "
                "cos:// or oss:// with the region)."))
            good = False
        else:
            try:
                uri = str(parse_uri(uri))
            except StorageError as exc:
                self._say(self.store_error, error_text(exc)[0])
                good = False
        return (Path(folder_text), name, uri, region) if good else None

    # ------------------------------------------------------------------ the push

    def start(self) -> None:
        checked = self.check()
        if checked is None:
            self.message.setText("")
            return
        folder, name, uri, region = checked
        self.cancel_event = cancel = threading.Event()
        self.bar.setValue(0)
        self.bar.setVisible(True)
        self.sent.setText("")
        self._checking = True
        self._pushes += 1
        number = self._pushes
        self.message.setText(translate("DataPage", "Checking the bucket {uri}…").format(
            uri=uri))
        bridge, client_for = self._bridge, self.client_for

        def progress(seen: Shown) -> None:
            bridge.progress.emit(number, seen)

        def work() -> tuple[datasets.Dataset, str]:
            return data_work.push(client_for, uri, region, folder, name, progress, cancel)

        self.runner.run_blocking(work, on_success=lambda got: self._done(*got))

    def cancel(self) -> None:
        """Stops the push between files and parts; its manifest is never written."""
        self.cancel_event.set()
        self._checking = False
        self.message.setText(translate("DataPage", "Cancelling…"))

    def _progress(self, number: int, seen: Shown) -> None:
        if number == self._pushes:  # a report of the latest push, even one arriving late
            self.show_progress(seen)

    def show_progress(self, seen: Shown) -> None:
        """The bar and the line under it: bytes sent, speed, time left, files there."""
        self.bar.setValue(BAR_STEPS if seen.total == 0 else
                          min(BAR_STEPS, seen.done * BAR_STEPS // seen.total))
        left = (translate("DataPage", ", {seconds} s left").format(
            seconds=f"{seen.left_s:.0f}") if seen.left_s is not None and seen.done < seen.total
            else "")
        self.sent.setText(translate(
            "DataPage", "{done} of {total} sent ({files} files, {speed}/s{left}); {skipped} "
            "files already in the bucket").format(
            done=size_text(seen.done), total=size_text(seen.total), files=seen.files_sent,
            speed=size_text(int(seen.speed)), left=left, skipped=seen.files_skipped))
        if self._checking and self.runner.busy:
            self._checking = False
            self.message.setText(translate("DataPage", "Pushing…"))

    def _done(self, dataset: datasets.Dataset, region: str) -> None:
        self.last = dataset
        self.bar.setValue(BAR_STEPS)
        self.message.setText(translate(
            "DataPage", "{name}: {files} files, {size} in {uri} ({region}), version "
            "{version}").format(name=dataset.name, files=len(dataset.files),
                                size=size_text(dataset.bytes),
                                uri=f"{dataset.store}{datasets.SETS}{dataset.name}/",
                                region=region, version=dataset.manifest_sha256[:12]))
        self.pushed.emit(dataset)

    def _failed(self, text: str) -> None:
        """A refused bucket next to the Bucket field, a taken name next to Name, a folder
        gone next to Folder; anything else (a cancel included) below the bar."""
        self.bar.setVisible(False)
        exc = self.runner.last_error
        template = getattr(exc, "template", "")
        from gpudesk.services.storage.store_check import StoreRefused

        if isinstance(exc, StoreRefused):
            self._say(self.store_error, text)
            self.message.setText(translate("DataPage", "Nothing was sent."))
        elif template == datasets.MSG_NAME_TAKEN:
            self._say(self.name_error, text)
            self.message.setText(translate("DataPage", "Nothing was sent."))
        elif template in (datasets.MSG_NO_FOLDER, datasets.MSG_EMPTY):
            self._say(self.folder_error, text)
            self.message.setText(translate("DataPage", "Nothing was sent."))
        else:
            self.message.setText(text)
