"""A time axis whose weekday and month names follow the window's language.

pyqtgraph's ``DateAxisItem`` writes tick labels with ``strftime``, whose names
("Sun 06", "Dec") come from the C locale, so a Chinese window showed English
days. Here the ticks that carry a name are written by ``QLocale`` in the
language the translation names (the ``LocalDateAxis`` context's "en_US" is
"zh_CN" in the Chinese catalogue); numbers-only ticks are left to pyqtgraph.
"""

from __future__ import annotations

from typing import Any

import pyqtgraph as pg
from pyqtgraph.graphicsItems import DateAxisItem as _date_axis
from PySide6.QtCore import QCoreApplication
from PySide6.QtCore import QDate
from PySide6.QtCore import QLocale

# strftime formats that name something, and the same as Qt date formats
_NAMED = {"%a %d": "ddd d", "%b": "MMM", "%a": "ddd"}


def axis_locale() -> QLocale:
    """The locale of the window's language (a translated locale name)."""
    return QLocale(QCoreApplication.translate("LocalDateAxis", "en_US"))


class LocalDateAxis(pg.DateAxisItem):  # type: ignore[misc]
    """``DateAxisItem`` with weekday and month names in the window's language."""

    def tickStrings(self, values: list[float], scale: float, spacing: float) -> list[str]:  # noqa: N802 - pyqtgraph API
        spec = next((s for s in self.zoomLevel.tickSpecs if s.spacing == spacing), None)
        qt_format = _NAMED.get(spec.format) if spec is not None else None
        if qt_format is None:
            return list(super().tickStrings(values, scale, spacing))
        locale = axis_locale()
        out = []
        for v in values:
            try:
                when = _date_axis.utcfromtimestamp(
                    _date_axis.adjustTimestampToPreferredUtcOffset(v, self.utcOffset))
            except (OverflowError, ValueError, OSError):
                out.append("")
                continue
            out.append(locale.toString(QDate(when.year, when.month, when.day), qt_format))
        return out

    def relabel(self) -> None:
        """Draw the labels again (after a language switch)."""
        self.picture = None
        self.update()


def relabel_all(axes: Any) -> None:
    for axis in axes:
        if isinstance(axis, LocalDateAxis):
            axis.relabel()
