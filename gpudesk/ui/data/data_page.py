"""The Data page (issue 32): the datasets in the buckets known here, with size, files,
region, source, version and what keeping them costs a month; Push a folder…; Remove…;
Copy to another region… (``copy_box``); the Hugging Face token (``hf_token_box``).

The window's face of ``gpudesk data ls/push/rm``, with the same checks and words. Every
bucket call runs on a worker thread (``data_work``, boto3 imported there), the first when
the page is first shown, so opening the window imports none of it. A storage price is
shown only where one was read with its source (``storage.data_costs``, the cached price
list; never a guess), else "price not known" with the reason. Texts: "DataPage".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QCoreApplication
from PySide6.QtCore import Qt
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import QAbstractItemView
from PySide6.QtWidgets import QHBoxLayout
from PySide6.QtWidgets import QHeaderView
from PySide6.QtWidgets import QLabel
from PySide6.QtWidgets import QMessageBox
from PySide6.QtWidgets import QProgressBar
from PySide6.QtWidgets import QPushButton
from PySide6.QtWidgets import QTreeWidget
from PySide6.QtWidgets import QTreeWidgetItem
from PySide6.QtWidgets import QVBoxLayout
from PySide6.QtWidgets import QWidget

from gpudesk.services.core.sizes import size_text
from gpudesk.services.storage import data_costs
from gpudesk.services.storage import datasets
from gpudesk.services.storage import pricing
from gpudesk.ui.data import data_work
from gpudesk.ui.data.copy_box import CopyBox
from gpudesk.ui.data.data_work import ClientFor
from gpudesk.ui.data.hf_token_box import HfTokenBox
from gpudesk.ui.data.push_box import PushBox
from gpudesk.ui.widgets.confirm import confirm
from gpudesk.ui.widgets.retranslate import Retranslating
from gpudesk.ui.widgets.said_text import said_text
from gpudesk.ui.widgets.task_runner import TaskRunner
from gpudesk.ui.widgets.task_runner import error_text

if TYPE_CHECKING:
    from gpudesk.services.money.ledger import Ledger

translate = QCoreApplication.translate  # the name lupdate looks for
COLUMNS = 7  # name, size, files, region, source, version, storage a month
SOURCE_COLUMN = 4
COST_COLUMN = 6


def cost_cell(dataset: datasets.Dataset) -> tuple[str, str, str]:
    """(the cell's text, its tooltip, why no price is known): a month's storage at the
    sourced price, the sum with its source and date in the tooltip; or "price not known"
    with the reason."""
    month = data_costs.storage_per_month(dataset)
    if month.amount is None:
        why = pricing.storage_price(dataset.store.cloud, dataset.region).reason
        return translate("DataPage", "price not known"), said_text(month.words), said_text(why)
    return month.cell(), said_text(month.words), ""


class DataPage(Retranslating, QWidget):
    """The datasets listed above, the push below."""

    def __init__(self, ledger: Ledger | None = None, parent: QWidget | None = None, *,
                 client_for: ClientFor = data_work.account_client) -> None:
        super().__init__(parent)
        self.setObjectName("dataPage")
        self.ledger = ledger
        self.client_for = client_for
        self.datasets: list[datasets.Dataset] = []
        self.listed_once = False
        self.last_box: QMessageBox | None = None

        self.heading = QLabel(self)
        self.heading.setObjectName("dataHeading")
        self.heading.setWordWrap(True)
        self.tree = QTreeWidget(self)
        self.tree.setObjectName("dataList")
        self.tree.setColumnCount(COLUMNS)
        self.tree.setRootIsDecorated(False)
        self.tree.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.tree.setAlternatingRowColors(True)
        header = self.tree.header()
        header.setStretchLastSection(False)  # the source (a long path) takes the room
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(SOURCE_COLUMN, QHeaderView.ResizeMode.Stretch)
        self.state = QLabel(self)  # "Listing…", what is listed, or why nothing is
        self.state.setObjectName("dataState")
        self.state.setWordWrap(True)
        self.state.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.prices_note = QLabel(self)  # why a price is not known, where one is not
        self.prices_note.setObjectName("dataPricesNote")
        self.prices_note.setWordWrap(True)
        self.prices_note.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.prices_note.setVisible(False)
        self.message = QLabel(self)  # what a removal did, or that nothing was removed
        self.message.setObjectName("dataMessage")
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.refresh_button = QPushButton(self)
        self.refresh_button.setObjectName("dataRefresh")
        self.remove_button = QPushButton(self)
        self.remove_button.setObjectName("dataRemove")
        self.copy_button = QPushButton(self)  # Copy to another region… (copy_box)
        self.copy_button.setObjectName("dataCopyStart")
        self.copy_box = CopyBox(client_for, self)
        self.hf_token = HfTokenBox(self)
        self.busy_bar = QProgressBar(self)
        self.busy_bar.setMaximumWidth(80)
        self.push_box = PushBox(client_for, self)

        row = QHBoxLayout()
        row.addWidget(self.state, 1)
        row.addWidget(self.busy_bar)
        row.addWidget(self.refresh_button)
        row.addWidget(self.copy_button)
        row.addWidget(self.remove_button)
        layout = QVBoxLayout(self)
        layout.addWidget(self.heading)
        layout.addWidget(self.tree, 1)
        layout.addWidget(self.prices_note)
        layout.addLayout(row)
        layout.addWidget(self.message)
        layout.addWidget(self.copy_box)
        layout.addWidget(self.push_box)
        layout.addWidget(self.hf_token)

        # said on the page, not in a box: a listing runs each time the page is opened
        self.list_runner = TaskRunner(self, button=self.refresh_button, progress=self.busy_bar,
                                      show_dialog=False, busy_cursor=False)
        self.remove_runner = TaskRunner(self, progress=self.busy_bar, show_dialog=False)
        self.list_runner.failed.connect(self._list_failed)
        self.remove_runner.failed.connect(lambda text: self.message.setText(
            translate("DataPage", "Nothing was removed: {why}").format(why=text)))
        for runner in (self.list_runner, self.remove_runner, self.push_box.runner,
                       self.copy_box.check_runner, self.copy_box.copy_runner):
            runner.finished.connect(lambda _ok: self._update_buttons())
        self.copy_box.busy_changed.connect(self._update_buttons)
        self.refresh_button.clicked.connect(self.refresh)
        self.remove_button.clicked.connect(self.ask_remove)
        self.copy_button.clicked.connect(self.ask_copy)
        self.copy_box.copied.connect(lambda d: self.refresh(select=d.name))
        self.tree.itemSelectionChanged.connect(self._update_buttons)
        self.push_box.pushed.connect(lambda d: self.refresh(select=d.name))
        self.push_box.runner.finished.connect(lambda ok: None if ok else self.refresh())
        self.push_box.set_stores(data_work.known_stores(ledger))
        self.retranslate()
        self._update_buttons()

    def retranslate(self) -> None:
        self.heading.setText(translate(
            "DataPage", "Datasets are pushed once from this computer to a bucket; every "
            "machine fetches them from there (Run page: Data; gpudesk run --data NAME)."))
        self.tree.setHeaderLabels([
            translate("DataPage", "Name"), translate("DataPage", "Size"),
            translate("DataPage", "Files"), translate("DataPage", "Region"),
            translate("DataPage", "Source"), translate("DataPage", "Version"),
            translate("DataPage", "Storage a month")])
        self.refresh_button.setText(translate("DataPage", "Refresh"))
        self.remove_button.setText(translate("DataPage", "Remove…"))
        self.copy_button.setText(translate("DataPage", "Copy to another region…"))
        self.copy_button.setToolTip(translate(
            "DataPage", "Copy the chosen dataset bucket-to-bucket into a bucket of yours in "
            "another region, for machines there; its cost is said first (gpudesk data copy)."))
        if self.listed_once and not self.list_runner.busy:
            self._fill()

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 - Qt API
        super().showEvent(event)
        if not self.listed_once and not self.list_runner.busy:
            self.refresh()  # the first bucket call, on a worker thread

    # ------------------------------------------------------------------ the list

    def stores(self) -> list[tuple[str, str]]:
        """The buckets to list: those known here, and the one typed in the push's Bucket
        field (a bucket pushed to from another computer)."""
        from gpudesk.services.storage.errors import StorageError
        from gpudesk.services.storage.uri import parse_uri

        found = data_work.known_stores(self.ledger)
        typed = self.push_box.store.currentText().strip()
        if typed:
            try:
                uri = str(parse_uri(typed))
            except StorageError:
                return found
            if uri not in {u for u, _ in found}:
                found.append((uri, self.push_box.region.text().strip()))
        return found

    def refresh(self, select: str = "") -> None:
        self.listed_once = True
        stores = self.stores()
        self.push_box.set_stores(data_work.known_stores(self.ledger))
        if not stores:
            self.datasets = []
            self._fill()
            self.state.setText(translate(
                "DataPage", "No dataset is known here yet: push a folder below, or type the "
                "bucket that holds yours in the Bucket field and press Refresh."))
            return
        self.state.setText(translate("DataPage", "Listing…"))
        client_for = self.client_for

        def work() -> tuple[list[datasets.Dataset], list[tuple[str, Exception]]]:
            return data_work.list_stores(stores, client_for)

        self.list_runner.run_blocking(
            work, on_success=lambda got: self._listed(stores, *got, select=select))

    def _listed(self, stores: list[tuple[str, str]], found: list[datasets.Dataset],
                failed: list[tuple[str, Exception]] | None = None, *,
                select: str = "") -> None:
        self.datasets = found
        self._fill(select)
        bad = {uri for uri, _ in failed or []}
        where = ", ".join(uri for uri, _ in stores if uri not in bad)
        lines = [translate("DataPage", "The datasets in {store} could not be listed: {why}"
                           ).format(store=uri, why=error_text(exc)[0]) for uri, exc in failed or []]
        if found:
            lines.insert(0, translate("DataPage", "{n} dataset(s), {size} in {stores}.").format(
                n=len(found), stores=where, size=size_text(sum(d.bytes for d in found))))
        elif where:
            lines.insert(0, translate(
                "DataPage", "No dataset in {stores} yet: push a folder below.").format(
                stores=where))
        self.state.setText("\n".join(lines))

    def _list_failed(self, text: str) -> None:
        self.datasets = []
        self._fill()
        self.state.setText(translate(
            "DataPage", "The datasets could not be listed: {why}").format(why=text))

    def _fill(self, select: str = "") -> None:
        was = self.selected()
        chosen = select or (was.name if was is not None else "")
        self.tree.clear()
        unknown: list[str] = []
        for d in self.datasets:
            cost, tip, why = cost_cell(d)
            if why and why not in unknown:
                unknown.append(why)
            item = QTreeWidgetItem(self.tree, [
                d.name, size_text(d.bytes), f"{len(d.files):,}", d.region, d.source,
                d.manifest_sha256[:12], cost])
            item.setToolTip(0, f"{d.store}{datasets.SETS}{d.name}/")
            item.setToolTip(5, d.manifest_sha256)
            item.setToolTip(COST_COLUMN, tip)
            for col in (1, 2, COST_COLUMN):
                item.setTextAlignment(col, Qt.AlignmentFlag.AlignRight
                                      | Qt.AlignmentFlag.AlignVCenter)
            if d.name == chosen:
                self.tree.setCurrentItem(item)
        self.prices_note.setText("\n".join(unknown))
        self.prices_note.setVisible(bool(unknown))
        self._update_buttons()

    def selected(self) -> datasets.Dataset | None:
        item = self.tree.currentItem()
        if item is None or not item.isSelected():
            return None
        row = self.tree.indexOfTopLevelItem(item)
        return self.datasets[row] if 0 <= row < len(self.datasets) else None

    def _update_buttons(self) -> None:
        busy = self.list_runner.busy or self.remove_runner.busy
        self.remove_button.setEnabled(self.selected() is not None and not busy
                                      and not self.push_box.runner.busy
                                      and not self.copy_box.busy)
        self.copy_button.setEnabled(self.selected() is not None and not busy
                                    and not self.copy_box.busy)

    # ------------------------------------------------------------------ copy

    def ask_copy(self) -> None:
        """The target bucket and region asked; then, as ``gpudesk data copy``, the cost
        said and asked before anything moves (``copy_box``)."""
        dataset = self.selected()
        if dataset is not None:
            self.copy_box.ask_target(dataset)

    # ------------------------------------------------------------------ remove

    def ask_remove(self) -> None:
        """Asks first, with the files and the size, as ``gpudesk data rm`` does."""
        dataset = self.selected()
        if dataset is None:
            return
        text = translate("DataPage", "Remove dataset {name} ({files} files, {size}) from "
                         "{store}?").format(name=dataset.name, files=len(dataset.files),
                                            size=size_text(dataset.bytes), store=dataset.store)
        self.last_box = confirm(
            self, QMessageBox.Icon.Warning, translate("DataPage", "Remove the dataset?"), text,
            "dataRemoveQuestion",
            (translate("DataPage", "Remove"), QMessageBox.ButtonRole.DestructiveRole,
             "dataRemoveYes"),
            lambda: self.remove(dataset),
            lambda: self.message.setText(translate("DataPage", "nothing removed")))

    def remove(self, dataset: datasets.Dataset) -> None:
        client_for = self.client_for

        def work() -> int:
            return data_work.remove(client_for, dataset)

        self.message.setText(translate("DataPage", "Removing {name}…").format(
            name=dataset.name))
        self.remove_runner.run_blocking(work, on_success=lambda n: self._removed(dataset, n))
        self._update_buttons()

    def _removed(self, dataset: datasets.Dataset, gone: int) -> None:
        self.refresh()
        self.message.setText(translate(
            "DataPage", "removed {name} ({gone} stored files no dataset uses any more)"
        ).format(name=dataset.name, gone=gone))
