"""Qt values for what is made before the event loop's first turn, without naming ``Qt``.

The first use of any member of Qt's namespace (``Qt.AlignmentFlag.AlignTop``,
``Qt.ItemDataRole.DisplayRole``…) makes PySide6 build Python enums for all of it: 93 of
them, about 13 ms of the window's start, as long as making the Plan page itself. So what
the Plan page sets while it is made goes through Qt's own properties by the enum's key
(as a style sheet's ``qproperty-`` does), and the item roles its models compare are Qt's
numbers, which Qt's ABI fixes (``tests/test_qt_early.py`` checks each against the enum).
"""

from __future__ import annotations

from PySide6.QtCore import QObject

DISPLAY_ROLE = 0  # Qt.ItemDataRole.DisplayRole
TOOLTIP_ROLE = 3  # Qt.ItemDataRole.ToolTipRole
TEXT_ALIGNMENT_ROLE = 7  # Qt.ItemDataRole.TextAlignmentRole
FOREGROUND_ROLE = 9  # Qt.ItemDataRole.ForegroundRole
USER_ROLE = 256  # Qt.ItemDataRole.UserRole
ALIGN_RIGHT_VCENTER = 0x0002 | 0x0080  # Qt.AlignmentFlag.AlignRight | AlignVCenter


def set_keys(obj: QObject, **keys: str) -> None:
    """Set each of ``obj``'s Qt properties to an enum key, or flag keys joined by ``|``:
    ``set_keys(label, textFormat="PlainText", alignment="AlignLeft|AlignTop")``."""
    for name, key in keys.items():
        if not obj.setProperty(name, key):
            raise ValueError(f"{type(obj).__name__} has no property {name} taking {key!r}")
