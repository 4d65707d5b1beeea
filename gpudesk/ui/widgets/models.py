"""What the table models of every page share."""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QPersistentModelIndex

# The index type Qt passes to a model's methods.
Index = QModelIndex | QPersistentModelIndex
