"""What the table models of every page share."""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any

from PySide6.QtCore import QAbstractTableModel
from PySide6.QtCore import QModelIndex
from PySide6.QtCore import QPersistentModelIndex

from gpudesk.ui.widgets.qt_early import DISPLAY_ROLE

if TYPE_CHECKING:
    from PySide6.QtCore import Qt

# The index type Qt passes to a model's methods.
Index = QModelIndex | QPersistentModelIndex


class NamedColumnsModel(QAbstractTableModel):
    """A flat table whose columns are the names in ``columns``.

    A subclass sets ``columns``, says how many rows it holds (``row_total``)
    and how a column is titled (``header_text``); the row and column counts,
    the horizontal header and "repaint every cell" are the same for all.
    """

    columns: tuple[str, ...] = ()
    _header_read = False  # by a view: only then has a new language to be told

    def row_total(self) -> int:
        raise NotImplementedError

    def header_text(self, column: str) -> str:
        raise NotImplementedError

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: N802, B008
        return 0 if parent.isValid() else self.row_total()

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: N802, B008
        return 0 if parent.isValid() else len(self.columns)

    def headerData(self, section: int, orientation: Qt.Orientation,  # noqa: N802
                   role: int = DISPLAY_ROLE) -> Any:
        from PySide6.QtCore import Qt  # see qt_early

        self._header_read = True
        if orientation == Qt.Orientation.Horizontal and role == DISPLAY_ROLE:
            return self.header_text(self.columns[section])
        return None

    def refresh_header(self) -> None:
        """Tell views to read the column titles again, once one has read them (a model
        made with its page is not asked to name Qt's enums, see qt_early)."""
        if self._header_read:
            from PySide6.QtCore import Qt

            self.headerDataChanged.emit(Qt.Orientation.Horizontal, 0, len(self.columns) - 1)

    def refresh_all(self) -> None:
        """Tell views to re-read every cell (the rows are the same, their texts are not)."""
        rows = self.row_total()
        if rows:
            self.dataChanged.emit(self.index(0, 0), self.index(rows - 1, len(self.columns) - 1))
