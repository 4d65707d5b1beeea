""""Trace my model": measure the researcher's own nn.Module under fake tensors.

The trace runs in a child process (``tracing.trace_in_subprocess``) waited on
from a worker thread through the TaskRunner: torch and the researcher's code
never enter the GUI process, and Cancel kills the child; without torch the dialog says how to get it
instead of offering a button that cannot work.
"""

from __future__ import annotations

import threading

from PySide6.QtWidgets import QDialog
from PySide6.QtWidgets import QDialogButtonBox
from PySide6.QtWidgets import QFormLayout
from PySide6.QtWidgets import QLabel
from PySide6.QtWidgets import QLineEdit
from PySide6.QtWidgets import QProgressBar
from PySide6.QtWidgets import QPushButton
from PySide6.QtWidgets import QTableWidget
from PySide6.QtWidgets import QTableWidgetItem
from PySide6.QtWidgets import QVBoxLayout
from PySide6.QtWidgets import QWidget

from gpudesk.calc import sizing
from gpudesk.calc import tracing
from gpudesk.services.plan.planner import format_bytes
from gpudesk.ui.widgets.retranslate import Retranslating
from gpudesk.ui.widgets.task_runner import TaskRunner

LINES = ("weights", "gradients", "optimizer", "activations", "temp", "peak")


class TraceDialog(Retranslating, QDialog):
    """Runs ``tracing.trace_model`` for a target and shows each line in bytes."""

    def __init__(self, setup: sizing.Setup, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("traceDialog")
        self._setup = setup
        self.trace_result: tracing.TraceResult | None = None
        self.target = QLineEdit(self)
        self.target.setObjectName("traceTarget")
        self.input_spec = QLineEdit(self)
        self.input_spec.setObjectName("traceInput")
        self.status = QLabel(self)
        self.status.setWordWrap(True)
        self.status.setObjectName("traceStatus")
        self.table = QTableWidget(len(LINES), 1, self)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.progress = QProgressBar(self)
        self.run_button = QPushButton(self)
        self.run_button.setObjectName("traceRun")
        self.cancel_button = QPushButton(self)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.addButton(self.run_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.addButton(self.cancel_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.rejected.connect(self.reject)
        self.target_label, self.input_label = QLabel(self), QLabel(self)
        self.form = QFormLayout()
        self.form.addRow(self.target_label, self.target)
        self.form.addRow(self.input_label, self.input_spec)
        layout = QVBoxLayout(self)
        layout.addLayout(self.form)
        layout.addWidget(self.status)
        layout.addWidget(self.table)
        layout.addWidget(self.progress)
        layout.addWidget(buttons)
        self.runner = TaskRunner(self, button=self.run_button, progress=self.progress,
                                 cancel_button=self.cancel_button, show_dialog=False)
        self.runner.failed.connect(self._failed)
        self._cancel = threading.Event()
        self.cancel_button.clicked.connect(self._cancelled)
        self.run_button.clicked.connect(self.start)
        self._available = tracing.torch_available()
        self.run_button.setEnabled(self._available)
        self.retranslate()
        self.resize(560, 420)

    def retranslate(self) -> None:
        self.setWindowTitle(self.tr("Trace my model"))
        self.target_label.setText(self.tr("Model builder:"))
        self.input_label.setText(self.tr("Example input:"))
        self.target.setPlaceholderText(self.tr("mypackage.models:build or path/to/file.py:build"))
        self.input_spec.setPlaceholderText(self.tr("float32[8,3,224,224] or int64[4,512]<50257"))
        self.run_button.setText(self.tr("Trace"))
        self.cancel_button.setText(self.tr("Cancel"))
        self.table.setHorizontalHeaderLabels([self.tr("Bytes per GPU")])
        labels = {"weights": self.tr("Weights"), "gradients": self.tr("Gradients"),
                  "optimizer": self.tr("Optimizer state"), "activations": self.tr("Activations"),
                  "temp": self.tr("Temporary"), "peak": self.tr("Peak (allocator)")}
        self.table.setVerticalHeaderLabels([labels[k] for k in LINES])
        if not self._available:
            self.status.setText(self.tr(
                "Tracing needs PyTorch, which is not installed. Install it with "
                "pip install \"gpudesk[trace]\"; the analytical estimate needs nothing."))
        elif self.trace_result is None:
            self.status.setText(self.tr(
                "Builds your model under fake tensors: no memory is used and no weights "
                "are loaded. Batch, precision and optimizer come from the Plan page."))


    def _cancelled(self) -> None:
        self._cancel.set()  # the worker thread kills the child process
        self.status.setText(self.tr("Trace cancelled."))

    def reject(self) -> None:
        self._cancel.set()  # closing the dialog must not leave a trace running
        super().reject()

    def start(self) -> None:
        target, spec = self.target.text().strip(), self.input_spec.text().strip()
        if not target or not spec:
            self.status.setText(self.tr("Give both the model builder and an example input."))
            return
        self.status.setText(self.tr("Tracing…"))
        self._cancel.clear()
        self.runner.run_blocking(tracing.trace_in_subprocess, target, spec, self._setup,
                                 self._cancel, on_success=self._show)

    def _show(self, result: tracing.TraceResult) -> None:
        self.trace_result = result
        for row, key in enumerate(LINES):
            value = getattr(result, f"{key}_bytes")
            self.table.setItem(row, 0, QTableWidgetItem(format_bytes(value)))
        self.status.setText(self.tr("{params} parameters, traced on {device}.").format(
            params=f"{result.params:,}", device=result.device))

    def _failed(self, message: str) -> None:
        err = self.runner.last_error
        # TraceError's text is already one paragraph written for the researcher.
        self.status.setText(str(err) if isinstance(err, tracing.TraceError) else message)
