"""Light, dark, or whatever the OS uses: the Fusion style with a matching palette.

``apply_theme(app, "system" | "light" | "dark")`` can be called at any time;
Qt repaints every widget with the new palette. With ``"system"`` the OS colour
scheme (Qt 6.5+ ``QStyleHints.colorScheme``) is followed, also when it changes
while the app runs.
"""

from __future__ import annotations

import shiboken6
from PySide6.QtGui import QColor
from PySide6.QtGui import QGuiApplication
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QApplication
from PySide6.QtWidgets import QWidget

THEMES: tuple[str, ...] = ("system", "light", "dark")

_state: dict[str, str] = {"theme": "light", "effective": "light"}
_connected: list[bool] = []
_fusion: list[bool] = []  # the app's style is Fusion (set here, or given at its start)

# Fusion's own light palette (QFusionStyle::standardPalette), by value: role -> (colour in
# the active and inactive groups, colour when disabled). Asking the style for it names
# QStyle, whose 11 Python enums took 5 ms before the first paint; tests/test_ui_shell.py
# checks these against the style's.
_LIGHT = {
    "WindowText": ("#000000", "#bebebe"), "Button": ("#efefef", "#efefef"),
    "Light": ("#ffffff", "#ffffff"), "Midlight": ("#cacaca", "#cacaca"),
    "Dark": ("#9f9f9f", "#bebebe"), "Mid": ("#b8b8b8", "#b8b8b8"),
    "Text": ("#000000", "#bebebe"), "BrightText": ("#ffffff", "#ffffff"),
    "ButtonText": ("#000000", "#bebebe"), "Base": ("#ffffff", "#efefef"),
    "Window": ("#efefef", "#efefef"), "Shadow": ("#767676", "#b1b1b1"),
    "Highlight": ("#308cc6", "#919191"), "HighlightedText": ("#ffffff", "#ffffff"),
    "Link": ("#0000ff", "#0000ff"), "LinkVisited": ("#ff00ff", "#ff00ff"),
    "AlternateBase": ("#f7f7f7", "#f7f7f7"), "ToolTipBase": ("#ffffdc", "#ffffdc"),
    "ToolTipText": ("#000000", "#000000"), "PlaceholderText": ("#80000000", "#80000000"),
    "Accent": ("#308cc6", "#919191"),
}


def system_scheme() -> str:
    """``"dark"`` when the OS says so, else ``"light"`` (also when it does not know)."""
    from PySide6.QtCore import Qt  # only here: naming Qt builds all its enums (~15 ms)

    hints = QGuiApplication.styleHints()
    return "dark" if hints.colorScheme() == Qt.ColorScheme.Dark else "light"


def resolve_theme(theme: str, seen: str = "") -> str:
    """The scheme ``theme`` means; for ``"system"``, ``seen`` (the OS scheme found at the
    last start) when given, else the OS is asked."""
    if theme == "system":
        return seen if seen in ("light", "dark") else system_scheme()
    return theme if theme in ("light", "dark") else "light"


def dark_palette() -> QPalette:
    p = QPalette()
    window, base, text = QColor(45, 45, 48), QColor(30, 30, 32), QColor(230, 230, 230)
    disabled = QColor(127, 127, 127)
    roles = {
        QPalette.ColorRole.Window: window,
        QPalette.ColorRole.WindowText: text,
        QPalette.ColorRole.Base: base,
        QPalette.ColorRole.AlternateBase: QColor(40, 40, 43),
        QPalette.ColorRole.ToolTipBase: QColor(60, 60, 64),
        QPalette.ColorRole.ToolTipText: text,
        QPalette.ColorRole.PlaceholderText: QColor(150, 150, 150),
        QPalette.ColorRole.Text: text,
        QPalette.ColorRole.Button: QColor(55, 55, 59),
        QPalette.ColorRole.ButtonText: text,
        QPalette.ColorRole.BrightText: QColor(255, 90, 90),
        QPalette.ColorRole.Light: QColor(75, 75, 80),
        QPalette.ColorRole.Midlight: QColor(62, 62, 66),
        QPalette.ColorRole.Mid: QColor(40, 40, 43),
        QPalette.ColorRole.Dark: QColor(25, 25, 27),
        QPalette.ColorRole.Shadow: QColor(0, 0, 0),
        QPalette.ColorRole.Highlight: QColor(42, 130, 218),
        QPalette.ColorRole.HighlightedText: QColor(255, 255, 255),
        QPalette.ColorRole.Link: QColor(90, 170, 255),
        QPalette.ColorRole.LinkVisited: QColor(180, 140, 255),
    }
    for role, colour in roles.items():
        p.setColor(role, colour)
    for role in (QPalette.ColorRole.WindowText, QPalette.ColorRole.Text,
                 QPalette.ColorRole.ButtonText):
        p.setColor(QPalette.ColorGroup.Disabled, role, disabled)
    p.setColor(QPalette.ColorGroup.Disabled, QPalette.ColorRole.Highlight, QColor(80, 80, 80))
    return p


def light_palette() -> QPalette:
    p = QPalette()
    for name, (normal, disabled) in _LIGHT.items():
        role = getattr(QPalette.ColorRole, name)
        for group in (QPalette.ColorGroup.Active, QPalette.ColorGroup.Inactive):
            p.setColor(group, role, QColor(normal))
        p.setColor(QPalette.ColorGroup.Disabled, role, QColor(disabled))
    return p


def apply_theme(app: QApplication, theme: str, seen: str = "", *,
                fusion_given: bool = False) -> str:
    """Use ``theme`` from now on; return the scheme in effect (``"light"``/``"dark"``).

    ``seen``: see ``resolve_theme``; the caller checks the OS with ``system_scheme``
    once the window is up. ``fusion_given``: the app was made with ``-style Fusion``."""
    if not (fusion_given or _fusion) and (app.style() is None
                                          or app.style().name().lower() != "fusion"):
        app.setStyle("Fusion")
    _fusion[:] = [True]
    _state["theme"] = theme if theme in THEMES else "system"
    effective = resolve_theme(_state["theme"], seen)
    _state["effective"] = effective
    app.setPalette(dark_palette() if effective == "dark" else light_palette())
    # Widgets under a style sheet keep the palette they were polished with; set the
    # sheet again so that they pick up the new one.
    for top in app.topLevelWidgets():
        if not shiboken6.isValid(top):
            continue
        for widget in (top, *top.findChildren(QWidget)):
            sheet = widget.styleSheet()
            if sheet:
                widget.setStyleSheet(sheet)
    if not _connected:
        _connected.append(True)
        QGuiApplication.styleHints().colorSchemeChanged.connect(
            lambda _scheme: _follow_system(app))
    return effective


def _follow_system(app: QApplication) -> None:
    if _state["theme"] == "system":
        apply_theme(app, "system")


def current_theme() -> str:
    """The scheme in effect: ``"light"`` or ``"dark"``."""
    return _state["effective"]


def is_dark() -> bool:
    return _state["effective"] == "dark"
