"""A horizontal stacked bar of one GPU's memory, drawn by hand.

A ``paintEvent`` is a few rectangles per edit; a plotting library would cost
more than the estimate itself. The bar is scaled to max(total, capacity) so
the capacity marker is always visible; over capacity, the marker and the
total turn red. The legend lists every part with its bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QCoreApplication
from PySide6.QtCore import QEvent
from PySide6.QtCore import QRectF
from PySide6.QtCore import QSize
from PySide6.QtGui import QColor
from PySide6.QtGui import QFontMetrics
from PySide6.QtGui import QPainter
from PySide6.QtGui import QPaintEvent
from PySide6.QtGui import QPen
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QSizePolicy
from PySide6.QtWidgets import QWidget

from gpudesk.calc.sizing import Estimate
from gpudesk.services.plan.planner import format_bytes

OVER = QColor("#d32f2f")

# key, English label (translated at paint time), colour
PARTS: tuple[tuple[str, str, str], ...] = (
    ("weights", "Weights", "#3b6fb6"),
    ("gradients", "Gradients", "#e08a2e"),
    ("optimizer", "Optimizer states", "#4f9a5a"),
    ("activations", "Activations", "#9b59b6"),
    ("autocast_cache", "Autocast weight cache", "#c0607a"),
    ("kv_cache", "KV cache", "#c2a33a"),
    ("comm_buffers", "Communication buffers", "#5d8aa8"),
    ("cuda_context", "CUDA context", "#7f8c8d"),
)


def _part_label(english: str) -> str:
    # Listed literally so that lupdate finds every label.
    labels = {
        "Weights": QCoreApplication.translate("MemoryBar", "Weights"),
        "Gradients": QCoreApplication.translate("MemoryBar", "Gradients"),
        "Optimizer states": QCoreApplication.translate("MemoryBar", "Optimizer states"),
        "Activations": QCoreApplication.translate("MemoryBar", "Activations"),
        "Autocast weight cache": QCoreApplication.translate("MemoryBar",
                                                            "Autocast weight cache"),
        "KV cache": QCoreApplication.translate("MemoryBar", "KV cache"),
        "Communication buffers": QCoreApplication.translate("MemoryBar",
                                                            "Communication buffers"),
        "CUDA context": QCoreApplication.translate("MemoryBar", "CUDA context"),
    }
    return labels.get(english, english)


@dataclass(frozen=True)
class Segment:
    key: str
    bytes: int


def segments_of(est: Estimate) -> tuple[Segment, ...]:
    """The bar's parts, in drawing order, straight from the estimate."""
    return (
        Segment("weights", est.weights_bytes),
        Segment("gradients", est.gradients_bytes),
        Segment("optimizer", est.optimizer_bytes),
        Segment("activations", est.activations_bytes),
        Segment("autocast_cache", est.autocast_cache_bytes),
        Segment("kv_cache", est.kv_cache_bytes),
        Segment("comm_buffers", est.comm_buffer_bytes),
        Segment("cuda_context", est.cuda_context_bytes),
    )


class MemoryBar(QWidget):
    """Per-GPU memory breakdown against one GPU's usable capacity."""

    BAR_HEIGHT = 28
    LEGEND_ROW = 20

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("memoryBar")
        self._segments: tuple[Segment, ...] = ()
        self._capacity = 0
        self._gpu = ""
        self._stale = False
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setMinimumWidth(260)

    # ----------------------------------------------------------------- data

    def set_estimate(self, est: Estimate, capacity: int = 0, gpu: str = "") -> None:
        self._segments = segments_of(est)
        self._capacity = capacity
        self._gpu = gpu
        self._stale = False
        self._set_tooltip()
        self._fit_height()
        self.updateGeometry()
        self.update()

    def _fit_height(self) -> None:
        height = self.sizeHint().height()
        if self.height() != height:
            self.setFixedHeight(height)

    def _set_tooltip(self) -> None:
        """Every legend line in full: a long figure a column cuts short is read here."""
        self.setToolTip("\n".join(self.legend_lines()) if self._segments else "")

    def set_stale(self, stale: bool) -> None:
        """Dim the last good result while the inputs are invalid."""
        if stale != self._stale:
            self._stale = stale
            self.update()

    @property
    def stale(self) -> bool:
        return self._stale

    @property
    def segments(self) -> tuple[Segment, ...]:
        return self._segments

    @property
    def total_bytes(self) -> int:
        return sum(s.bytes for s in self._segments)

    @property
    def capacity_bytes(self) -> int:
        return self._capacity

    @property
    def over_capacity(self) -> bool:
        return bool(self._capacity) and self.total_bytes > self._capacity

    def legend_lines(self) -> list[str]:
        """The legend's text, as painted (used by tests and for accessibility)."""
        lines = [f"{_part_label(label)}: {format_bytes(seg.bytes)}"
                 for seg, (_, label, _) in zip(self._segments, PARTS, strict=True)]
        total = QCoreApplication.translate("MemoryBar", "Total per GPU: {used}").format(
            used=format_bytes(self.total_bytes))
        if self._capacity:
            total += " / " + QCoreApplication.translate("MemoryBar", "{gpu} {capacity}").format(
                gpu=self._gpu, capacity=format_bytes(self._capacity))
        lines.append(total)
        return lines

    # ----------------------------------------------------------------- painting

    def _legend_columns(self) -> int:
        """As many columns as the longest part's line fits in whole (3, 2 or 1): a figure
        is never cut to "Communication buffers: 1000.0 …" while the bar has room."""
        if not self._segments:
            return 2 if self.width() < 520 else 3
        widest = max(self.fontMetrics().horizontalAdvance(line)
                     for line in self.legend_lines()[:-1]) + 24
        for cols in (3, 2):
            if widest <= self.width() // cols:
                return cols
        return 1

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt API
        rows = -(-len(PARTS) // self._legend_columns()) + 1
        return QSize(480, self.BAR_HEIGHT + 26 + rows * self.LEGEND_ROW)

    def elided_lines(self) -> list[str]:
        """The legend as painted at the current width: the lines a reader sees."""
        from PySide6.QtCore import Qt  # made with the Plan page: see qt_early

        cols = self._legend_columns()
        fm = self.fontMetrics()
        lines = self.legend_lines()
        parts = [fm.elidedText(t, Qt.TextElideMode.ElideRight, self.width() // cols - 20)
                 for t in lines[:-1]]
        bold = self.font()
        bold.setBold(True)
        total = QFontMetrics(bold).elidedText(lines[-1], Qt.TextElideMode.ElideRight,
                                              self.width() - 2)
        return [*parts, total]

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt API
        return QSize(260, self.sizeHint().height())

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt API
        # Legend columns depend on the width; the height follows them.
        self._fit_height()
        super().resizeEvent(event)

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt API
        if event.type() == QEvent.Type.LanguageChange:
            self._set_tooltip()
            self.update()
        super().changeEvent(event)

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 - Qt API
        from PySide6.QtCore import Qt  # made with the Plan page: see qt_early

        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        if self._stale:
            p.setOpacity(0.4)
        pal = self.palette()
        w = self.width() - 2
        bar = QRectF(1, 14, w, self.BAR_HEIGHT)
        p.setPen(QPen(pal.mid().color(), 1))
        p.setBrush(pal.base())
        p.drawRect(bar)
        scale_max = max(self.total_bytes, self._capacity, 1)
        x = bar.left()
        for seg, (_, _, colour) in zip(self._segments, PARTS, strict=True):
            width = bar.width() * seg.bytes / scale_max
            if width > 0:
                p.fillRect(QRectF(x, bar.top() + 1, width, bar.height() - 1), QColor(colour))
            x += width
        if self._capacity:
            cx = bar.left() + bar.width() * self._capacity / scale_max
            marker = OVER if self.over_capacity else pal.windowText().color()
            p.setPen(QPen(marker, 2, Qt.PenStyle.DashLine if not self.over_capacity
                          else Qt.PenStyle.SolidLine))
            p.drawLine(int(cx), 2, int(cx), int(bar.bottom()) + 4)
            p.setPen(marker)
            cap = format_bytes(self._capacity)
            fm = p.fontMetrics()
            tx = max(0, min(int(cx) - fm.horizontalAdvance(cap) // 2,
                            self.width() - fm.horizontalAdvance(cap)))
            p.drawText(tx, 11, cap)
        self._paint_legend(p, int(bar.bottom()) + 8)
        p.end()

    def _paint_legend(self, p: QPainter, top: int) -> None:
        lines = self.elided_lines()
        cols = self._legend_columns()
        col_w = self.width() // cols
        pal = self.palette()
        for i, (text, (_, _, colour)) in enumerate(zip(lines, PARTS, strict=False)):
            x = (i % cols) * col_w
            y = top + (i // cols) * self.LEGEND_ROW
            p.fillRect(x + 1, y + 4, 10, 10, QColor(colour))
            p.setPen(pal.windowText().color())
            p.drawText(x + 16, y + 14, text)
        y = top + (-(-len(PARTS) // cols)) * self.LEGEND_ROW
        f = p.font()
        f.setBold(True)
        p.setFont(f)
        p.setPen(OVER if self.over_capacity else pal.windowText().color())
        p.drawText(1, y + 14, lines[-1])  # elided to the width: the full line is the tooltip
