"""The chosen run's folder in its bucket: what is there, what it costs, download, delete.

Every bucket call runs on a worker thread through a TaskRunner, with the account's
keys read from the keyring there (as every cloud call does), so the window never
waits. The download's cost is shown before it starts (data out is billed; same-region
traffic is not) and its bytes move a progress bar that Cancel stops between chunks;
the storage room writes each file under a temporary name, so neither a cancel nor a
cut leaves a half file under its final name. A run without a bucket says where its
checkpoints are instead. Texts are in the "RunOutputs" translation context.
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject
from PySide6.QtCore import Qt
from PySide6.QtCore import QTimer
from PySide6.QtCore import QUrl
from PySide6.QtCore import Signal
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QFileDialog
from PySide6.QtWidgets import QGroupBox
from PySide6.QtWidgets import QHBoxLayout
from PySide6.QtWidgets import QLabel
from PySide6.QtWidgets import QMessageBox
from PySide6.QtWidgets import QProgressBar
from PySide6.QtWidgets import QPushButton
from PySide6.QtWidgets import QTreeWidget
from PySide6.QtWidgets import QTreeWidgetItem
from PySide6.QtWidgets import QVBoxLayout
from PySide6.QtWidgets import QWidget

from gpudesk.services.cloud.accounts import title as cloud_title
from gpudesk.services.core.sizes import size_text
from gpudesk.services.runs.detached import RunRecord
from gpudesk.services.storage import outputs
from gpudesk.services.storage import pricing
from gpudesk.services.storage.outputs import RunListing
from gpudesk.services.storage.uri import StoreUri
from gpudesk.services.storage.uri import parse_uri
from gpudesk.ui.widgets.confirm import confirm
from gpudesk.ui.widgets.retranslate import Retranslating
from gpudesk.ui.widgets.said_text import said_text
from gpudesk.ui.widgets.task_runner import TaskRunner
from gpudesk.ui.widgets.task_runner import error_text

BAR_STEPS = 1000  # the bar counts per mille: a QProgressBar holds 32-bit ints, files not


@dataclass(frozen=True)
class Where:
    """A run's folder: its bucket (with prefix), the bucket's region and the run id."""

    store: StoreUri
    region: str
    run: str


def bucket_client(where: Where) -> Any:
    """A client with the account's keys from the keyring (blocking: a worker thread)."""
    from gpudesk.services.storage.clients import account_client

    return account_client(where.store.cloud, where.region)


class _Bridge(QObject):
    progress = Signal(object, object)  # (bytes done, total) from the worker thread


class RunOutputs(Retranslating, QGroupBox):
    """Below the log: the run's bucket folder, and Refresh / Download… / Delete."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("runOutputs")
        self.record: RunRecord | None = None
        self.where: Where | None = None
        self.listing: RunListing | None = None
        self.last_box: QMessageBox | None = None
        self.folder: Path | None = None  # where the last download went
        self._cancel = threading.Event()
        self._read_failed = False  # the message says the last listing failed
        self._bridge = _Bridge(self)
        self._bridge.progress.connect(self._progress, Qt.ConnectionType.QueuedConnection)

        self.summary = QLabel(self)
        self.summary.setObjectName("outputsSummary")
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.tree = QTreeWidget(self)
        self.tree.setObjectName("outputsTree")
        self.tree.setColumnCount(3)
        self.tree.setRootIsDecorated(True)
        self.tree.setMinimumHeight(130)
        self.refresh_button = QPushButton(self)
        self.refresh_button.setObjectName("outputsRefresh")
        self.download_button = QPushButton(self)
        self.download_button.setObjectName("outputsDownload")
        self.delete_button = QPushButton(self)
        self.delete_button.setObjectName("outputsDelete")
        self.cancel_button = QPushButton(self)
        self.cancel_button.setObjectName("outputsCancel")
        self.open_button = QPushButton(self)
        self.open_button.setObjectName("outputsOpenFolder")
        self.open_button.setVisible(False)
        self.busy_bar = QProgressBar(self)
        self.busy_bar.setMaximumWidth(80)
        self.bar = QProgressBar(self)
        self.bar.setObjectName("outputsProgress")
        self.bar.setRange(0, BAR_STEPS)
        self.bar.setVisible(False)
        self.message = QLabel(self)
        self.message.setObjectName("outputsMessage")
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.message.setVisible(False)  # shown while it says something

        row = QHBoxLayout()
        for w in (self.refresh_button, self.download_button, self.delete_button):
            row.addWidget(w)
        row.addWidget(self.bar, 1)
        row.addWidget(self.cancel_button)
        row.addWidget(self.open_button)
        row.addStretch(0)
        row.addWidget(self.busy_bar)
        layout = QVBoxLayout(self)
        layout.addWidget(self.summary)
        layout.addWidget(self.tree, 1)
        layout.addLayout(row)
        layout.addWidget(self.message)

        # Errors are said in the panel, not in a box: a listing runs on every choice of run.
        self.list_runner = TaskRunner(self, progress=self.busy_bar, show_dialog=False,
                                      busy_cursor=False)
        self.delete_runner = TaskRunner(self, progress=self.busy_bar, show_dialog=False)
        self.download_runner = TaskRunner(self, show_dialog=False, busy_cursor=False)
        self.list_runner.failed.connect(self._list_failed)
        self.delete_runner.failed.connect(lambda text: self._say(
            self.tr("Nothing was deleted: {why}").format(why=text)))
        self.download_runner.failed.connect(self._download_failed)
        for runner in (self.list_runner, self.delete_runner, self.download_runner):
            runner.finished.connect(lambda _ok: self._update_buttons())
        self.refresh_button.clicked.connect(self.refresh)
        self.download_button.clicked.connect(self.ask_download)
        self.delete_button.clicked.connect(self.ask_delete)
        self.cancel_button.clicked.connect(self.cancel_download)
        self.open_button.clicked.connect(self._open_folder)
        self.retranslate()
        self._update_buttons()

    def retranslate(self) -> None:
        self.setTitle(self.tr("Outputs in the bucket"))
        self.tree.setHeaderLabels([self.tr("Name"), self.tr("Size"), self.tr("State")])
        self.refresh_button.setText(self.tr("Refresh"))
        self.download_button.setText(self.tr("Download outputs…"))
        self.delete_button.setText(self.tr("Delete from bucket…"))
        self.cancel_button.setText(self.tr("Cancel"))
        self.open_button.setText(self.tr("Open folder"))
        self._show()

    # ------------------------------------------------------------------ showing

    def show_run(self, record: RunRecord | None) -> None:
        """The run chosen on the page: its bucket folder is listed (after this event)."""
        same = record is not None and self.record is not None and record.id == self.record.id
        self.record, self.where = record, None
        if not same:
            self.listing = None
            self._say("")
            self.open_button.setVisible(False)
        self.list_runner.cancel()
        if record is not None and record.store_uri:
            try:
                self.where = Where(parse_uri(record.store_uri), record.store_region, record.id)
            except Exception as exc:  # noqa: BLE001 - a damaged record: said in words
                self._say(error_text(exc)[0])
        self._show()
        self._update_buttons()
        if self.where is not None:
            QTimer.singleShot(0, self, self.refresh)

    def refresh(self) -> None:
        where = self.where
        if where is None:
            return

        def work() -> RunListing:
            return outputs.list_run(bucket_client(where), where.store, where.run)

        self.list_runner.run_blocking(work, on_success=lambda got: self._listed(where, got))

    def _listed(self, where: Where, listing: RunListing) -> None:
        if where != self.where:
            return  # another run was chosen meanwhile
        self.listing = listing
        if listing.warning or self._read_failed:
            self._say(said_text(listing.warning))
        self._read_failed = False
        self._show()
        self._update_buttons()

    def _list_failed(self, text: str) -> None:
        self.listing, self._read_failed = None, True
        self._show()
        self._say(self.tr("The bucket could not be read: {why}").format(why=text))

    def _say(self, text: str) -> None:
        self.message.setText(text)
        self.message.setVisible(bool(text))

    def _show(self) -> None:
        """The summary line and the tree, from what is known."""
        self.tree.clear()
        record, where, listing = self.record, self.where, self.listing
        if record is None:
            self.summary.setText(self.tr("Choose a run to see what its bucket holds."))
            return
        if not record.store_uri:
            self.summary.setText(self.tr(
                "Run {run} has no bucket: its checkpoints are on the machine and copied to "
                "this laptop only.").format(run=record.id))
            return
        uri = where.store.run(where.run).uri if where is not None else record.store_uri
        if listing is None:
            self.summary.setText(uri)
            return
        self.summary.setText(self.tr("{uri} ({region}): {size} in all. {cost}").format(
            uri=listing.uri, region=where.region if where else "",
            size=size_text(listing.total_bytes), cost=self._storage_cost(listing)))
        self._fill_tree(listing)

    def _storage_cost(self, listing: RunListing) -> str:
        assert self.where is not None
        found = pricing.storage_price(self.where.store.cloud, self.where.region)
        monthly = pricing.monthly_cost(listing.total_bytes, found.price)
        if found.price is None or monthly is None:
            return self.tr("Storage: no published price known for {cloud} in {region}, so no "
                           "cost is shown.").format(cloud=cloud_title(self.where.store.cloud),
                                                    region=self.where.region)
        return self.tr("Storage: about {cost} {currency} a month ({source}, {date}).").format(
            cost=f"{monthly:,.4f}", currency=found.price.currency, source=found.price.source,
            date=found.price.as_of.isoformat())

    def _fill_tree(self, listing: RunListing) -> None:
        ckpts = QTreeWidgetItem(self.tree, [self.tr("Checkpoints ({n})").format(
            n=len(listing.checkpoints)), size_text(sum(c.bytes for c in listing.checkpoints))])
        for c in listing.checkpoints:
            state = (self.tr("complete, latest") if c.latest else self.tr("complete")) \
                if c.complete else self.tr("incomplete (upload cut off; never resumed from)")
            QTreeWidgetItem(ckpts, [c.name, size_text(c.bytes), state])
        outs = QTreeWidgetItem(self.tree, [self.tr("Outputs ({n})").format(
            n=len(listing.outputs)), size_text(listing.outputs_bytes)])
        for o in listing.outputs:
            QTreeWidgetItem(outs, [o.path, size_text(o.bytes), ""])
        if listing.logs:
            QTreeWidgetItem(self.tree, [self.tr("Log parts ({n})").format(
                n=len(listing.logs)), size_text(sum(f.bytes for f in listing.logs))])
        self.tree.expandAll()
        for col in (0, 1):
            self.tree.resizeColumnToContents(col)

    def _update_buttons(self) -> None:
        downloading = self.download_runner.busy
        listing = self.listing
        self.refresh_button.setEnabled(self.where is not None and not self.list_runner.busy)
        self.download_button.setEnabled(listing is not None and bool(listing.outputs)
                                        and not downloading)
        self.delete_button.setEnabled(listing is not None and listing.total_bytes > 0
                                      and not downloading and not self.delete_runner.busy)
        self.cancel_button.setVisible(downloading)
        self.cancel_button.setEnabled(downloading and not self._cancel.is_set())
        self.bar.setVisible(downloading or self.bar.value() > 0)

    # ------------------------------------------------------------------ download

    def ask_download(self) -> None:
        """Choose a folder, then say the size and the data-out cost before anything moves."""
        where, listing = self.where, self.listing
        if where is None or listing is None or not listing.outputs:
            return
        folder = QFileDialog.getExistingDirectory(
            self, self.tr("Download the outputs into"), str(Path.home()))
        if not folder:
            return
        found = pricing.data_out_price(where.store.cloud, where.region)
        cost = pricing.data_out_cost(listing.outputs_bytes, found.price)
        if found.price is None or cost is None:
            money = self.tr("Data out to this computer is billed by the cloud; gpudesk knows "
                            "no published price for {cloud} in {region}, so none is shown."
                            ).format(cloud=cloud_title(where.store.cloud), region=where.region)
        else:
            money = self.tr("Data out to this computer: about {cost} {currency} ({source}, "
                            "{date}).").format(cost=f"{cost:,.4f}",
                                               currency=found.price.currency,
                                               source=found.price.source,
                                               date=found.price.as_of.isoformat())
        text = self.tr("Download {n} file(s), {size}, from {uri} into {folder}?").format(
            n=len(listing.outputs), size=size_text(listing.outputs_bytes),
            uri=listing.uri + "outputs/", folder=folder) + "\n\n" + money
        self.last_box = confirm(
            self, QMessageBox.Icon.Question, self.tr("Download the outputs?"), text,
            "outputsDownloadQuestion",
            (self.tr("Download"), QMessageBox.ButtonRole.AcceptRole, "outputsDownloadYes"),
            lambda: self.download(Path(folder)))

    def download(self, folder: Path) -> None:
        where, listing = self.where, self.listing
        if where is None or listing is None:
            return
        cancel = self._cancel = threading.Event()
        bridge = self._bridge

        def progress(done: int, total: int) -> bool:
            with contextlib.suppress(RuntimeError):  # the panel was closed meanwhile
                bridge.progress.emit(done, total)
            return not cancel.is_set()

        def work() -> list[Path]:
            return outputs.download_outputs(bucket_client(where), where.store, listing, folder,
                                            progress)

        self.folder = folder
        self.bar.setValue(0)
        self.bar.setFormat(self.tr("starting…"))
        self.open_button.setVisible(False)
        self._say(self.tr("Downloading {size} into {folder}…").format(
            size=size_text(listing.outputs_bytes), folder=folder))
        self.download_runner.run_blocking(work, on_success=lambda files: self._downloaded(
            where.run, folder, files, listing.outputs_bytes))
        self._update_buttons()

    def _progress(self, done: int, total: int) -> None:
        self.bar.setValue(BAR_STEPS if total <= 0 else min(done * BAR_STEPS // total,
                                                            BAR_STEPS))
        self.bar.setFormat(self.tr("{percent} % · {done} of {total}").format(
            percent=self.bar.value() * 100 // BAR_STEPS, done=size_text(done),
            total=size_text(total)))

    def cancel_download(self) -> None:
        self._cancel.set()
        self.cancel_button.setEnabled(False)
        self._say(self.tr("Cancelling after the current piece…"))

    def _downloaded(self, run: str, folder: Path, files: list[Path], size: int) -> None:
        self._say(self.tr("Run {run}: {n} file(s), {size}, are in {folder}.").format(
            run=run, n=len(files), size=size_text(size), folder=folder))
        self.open_button.setVisible(True)

    def _download_failed(self, text: str) -> None:
        if isinstance(self.download_runner.last_error, outputs.Cancelled):
            self._say(self.tr(
                "Download cancelled. Files that were complete stay in {folder}; the file "
                "being fetched was removed.").format(folder=self.folder))
        else:
            self._say(self.tr("The download stopped: {why}").format(why=text))
        self.bar.setFormat(self.tr("stopped"))

    def _open_folder(self) -> None:
        if self.folder is not None:
            QDesktopServices.openUrl(QUrl.fromLocalFile(str(self.folder)))

    # ------------------------------------------------------------------ delete

    def ask_delete(self) -> None:
        where, listing = self.where, self.listing
        if where is None or listing is None:
            return
        text = self.tr(
            "Delete everything of run {run} in {uri}: {checkpoints} checkpoint(s), {outputs} "
            "output file(s) and {logs} log part(s), {size} in all? This cannot be undone: "
            "the bucket keeps no copy, and a resume from the bucket is no longer possible."
        ).format(run=where.run, uri=listing.uri, checkpoints=len(listing.checkpoints),
                 outputs=len(listing.outputs), logs=len(listing.logs),
                 size=size_text(listing.total_bytes))
        self.last_box = confirm(
            self, QMessageBox.Icon.Warning, self.tr("Delete from the bucket?"), text,
            "outputsDeleteQuestion",
            (self.tr("Delete"), QMessageBox.ButtonRole.DestructiveRole, "outputsDeleteYes"),
            lambda: self.delete(where))

    def delete(self, where: Where) -> None:
        def work() -> int:
            return outputs.delete_run(bucket_client(where), where.store, where.run)

        self._say(self.tr("Deleting…"))
        self.delete_runner.run_blocking(work, on_success=lambda n: self._deleted(where, n))
        self._update_buttons()

    def _deleted(self, where: Where, count: int) -> None:
        self.listing = None
        self._show()
        self.refresh()
        self._say(self.tr("Deleted {n} object(s) of run {run} from {uri}.").format(
            n=count, run=where.run, uri=where.store.run(where.run).uri))
