"""The Plan page's disk: which dataset, how many checkpoints kept, and the disk they need
(issue 32, "Disk that fits").

The dataset is one this computer knows (pushed or used from here), none, or a size typed
in for data not pushed yet. A known dataset's size comes from the registry kept at push
time; where it is not kept, its manifest is read from the bucket on a worker thread. The
line under the choices is ``disk_plan``'s parts, the same the Launch dialog and
``gpudesk launch --data`` print; :meth:`DiskNeeded.need` is what the Launch dialog gets.
"""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import QComboBox
from PySide6.QtWidgets import QFormLayout
from PySide6.QtWidgets import QGroupBox
from PySide6.QtWidgets import QLabel
from PySide6.QtWidgets import QLineEdit
from PySide6.QtWidgets import QSpinBox
from PySide6.QtWidgets import QWidget

from gpudesk.services.plan import disk_plan
from gpudesk.services.plan.planner import Job
from gpudesk.services.storage import dataset_registry
from gpudesk.ui.plan.plan_form import set_invalid
from gpudesk.ui.widgets.retranslate import Retranslating
from gpudesk.ui.widgets.said_text import said_text
from gpudesk.ui.widgets.task_runner import TaskRunner
from gpudesk.ui.widgets.task_runner import error_text

NONE, TYPED = "", "\ttyped"  # the combo's data for "none" and "a size typed in"
DEFAULT_KEPT = 2


class DiskNeeded(Retranslating, QGroupBox):
    """Dataset + checkpoints kept -> the ``Disk needed: …`` line."""

    changed = Signal()  # the need changed (or became unknown)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("diskNeeded")
        self.job: Job | None = None
        self._sizes: dict[str, int] = {}  # dataset name -> bytes, as far as known
        self._reading = ""  # the dataset whose manifest is being read
        self._problem = ""  # why the line cannot be said (a bad size, an unreadable bucket)
        self.dataset = QComboBox(self)
        self.dataset.setObjectName("diskDataset")
        self.data_gb = QLineEdit(self)
        self.data_gb.setObjectName("diskDataGb")
        self.data_gb.setEnabled(False)
        self.kept = QSpinBox(self)
        self.kept.setObjectName("checkpointsKept")
        self.kept.setRange(0, disk_plan.MAX_KEPT)
        self.kept.setValue(DEFAULT_KEPT)
        self.line = QLabel(self)
        self.line.setObjectName("diskNeededLine")
        self.line.setWordWrap(True)
        self.labels = [QLabel(self) for _ in range(3)]
        form = QFormLayout(self)
        form.addRow(self.labels[0], self.dataset)
        form.addRow(self.labels[1], self.data_gb)
        form.addRow(self.labels[2], self.kept)
        form.addRow(self.line)
        self.runner = TaskRunner(self, show_dialog=False, busy_cursor=False)
        self.runner.failed.connect(self._read_failed)
        self.fill_datasets()
        self.dataset.currentIndexChanged.connect(self._dataset_changed)
        self.data_gb.textChanged.connect(self._update)
        self.kept.valueChanged.connect(self._update)
        self.retranslate()

    def retranslate(self) -> None:
        self.setTitle(self.tr("Disk"))
        self.labels[0].setText(self.tr("Dataset"))
        self.labels[1].setText(self.tr("Data size (GB)"))
        self.labels[2].setText(self.tr("Checkpoints kept"))
        self.dataset.setItemText(0, self.tr("none"))
        self.dataset.setItemText(self.dataset.count() - 1, self.tr("not pushed yet: its size"))
        self.data_gb.setPlaceholderText(self.tr("e.g. 42"))
        self.kept.setToolTip(self.tr("How many checkpoints the script keeps on the machine's "
                                     "disk; one more is there while the next is written."))
        self._update()

    # ------------------------------------------------------------------ datasets

    def fill_datasets(self) -> None:
        """The datasets this computer knows, between "none" and "a size typed in"; the
        choice stays where it still exists."""
        chosen = self.dataset.currentData()
        self._sizes.update(dataset_registry.known_bytes())
        names = sorted(dataset_registry.known())
        self.dataset.blockSignals(True)
        self.dataset.clear()
        self.dataset.addItem("", NONE)
        for name in names:
            self.dataset.addItem(name, name)
        self.dataset.addItem("", TYPED)
        index = self.dataset.findData(chosen) if chosen is not None else 0
        self.dataset.setCurrentIndex(max(index, 0))
        self.dataset.blockSignals(False)
        if self.title():  # after the first retranslate
            self.retranslate()
            if self.dataset.currentData() != chosen:  # the chosen one was removed
                self._dataset_changed()

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 - Qt API
        self.fill_datasets()  # one pushed since (the Data page, the CLI)
        super().showEvent(event)

    def _dataset_changed(self) -> None:
        name = str(self.dataset.currentData() or "")
        self.data_gb.setEnabled(name == TYPED)
        self._problem = ""
        if name not in (NONE, TYPED) and name not in self._sizes:
            self._reading = name

            def read(size: int, name: str = name) -> None:
                self._size_read(name, size)

            from gpudesk.services.storage.datasets import size_of  # its bucket reads

            self.runner.run_blocking(size_of, name, on_success=read)
        self._update()

    def _size_read(self, name: str, size: int) -> None:
        self._sizes[name] = int(size)
        if self._reading == name:
            self._reading = ""
        self._update()

    def _read_failed(self, message: str) -> None:
        self._reading = ""
        self._problem = message
        self._update()

    # ------------------------------------------------------------------ the need

    def set_job(self, job: Job | None) -> None:
        """The Plan page's job: one checkpoint's size comes from its model and setup."""
        self.job = job
        self._update()

    def data_bytes(self) -> int | None:
        """The chosen data's bytes; None while unknown; raises DiskPlanError for a bad
        typed size."""
        name = str(self.dataset.currentData() or "")
        if name == NONE:
            return 0
        if name == TYPED:
            text = self.data_gb.text().strip().replace(",", "")
            try:
                gb = float(text) if text else 0.0
            except ValueError:
                raise disk_plan.DiskPlanError(disk_plan.MSG_BAD_SIZE, value=text) from None
            return disk_plan.gb_bytes(gb)
        return self._sizes.get(name)

    def need(self) -> disk_plan.DiskNeed | None:
        """What the job's disk must hold; None while a size is unknown or bad."""
        try:
            data = self.data_bytes()
        except disk_plan.DiskPlanError:
            return None
        if data is None:
            return None
        size = 0
        if self.job is not None:
            try:
                size = disk_plan.checkpoint_bytes(self.job.model, self.job.setup)
            except ValueError:  # SizingError: the page says it under the form
                size = 0
        name = str(self.dataset.currentData() or "")
        return disk_plan.disk_need(data_bytes=data, checkpoints_kept=self.kept.value(),
                                   checkpoint_size=size,
                                   data_name=name if name not in (NONE, TYPED) else "")

    def for_launch(self) -> disk_plan.DiskNeed | None:
        """The need the Launch dialog gets: only with a dataset chosen (named or typed);
        without one the dialog keeps its own default disk."""
        if str(self.dataset.currentData() or "") == NONE:
            return None
        return self.need()

    def _update(self) -> None:
        text = ""
        try:
            self.data_bytes()
        except disk_plan.DiskPlanError as exc:
            text = error_text(exc)[0]
        set_invalid(self.data_gb, bool(text))
        need = None if text else self.need()
        if need is not None:
            text = said_text(need.said())
        elif not text and self._reading:
            text = self.tr("Reading the size of {name} from its bucket…").format(
                name=self._reading)
        elif not text:
            text = self._problem
        self.line.setText(text)
        self.changed.emit()
