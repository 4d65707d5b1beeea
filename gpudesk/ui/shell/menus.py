"""The main window's menus and shortcuts, and the language and theme they switch.

Mixed into ``MainWindow`` (before ``QMainWindow``). Shortcuts wait for
``finish_start``: the first ``setShortcut`` builds Qt's namespace enums (~20 ms),
and no key reaches the frame before the window is painted.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QCoreApplication
from PySide6.QtGui import QAction
from PySide6.QtGui import QActionGroup
from PySide6.QtWidgets import QApplication

from gpudesk.ui.shell.i18n import install_translator
from gpudesk.ui.shell.window_parts import WindowParts

if TYPE_CHECKING:
    from PySide6.QtGui import QKeySequence
    from PySide6.QtWidgets import QDialog
    from PySide6.QtWidgets import QMessageBox

    from gpudesk.ui.plan.plan_page import PlanPage


LANGUAGE_NAMES = {"en": "English", "zh_CN": "简体中文"}  # each in its own language


def key_sequence(keys: str) -> QKeySequence:
    """``keys`` as Qt's key sequence: the name of one of its standard keys ("Open": the
    platform's own), or keys as written ("Ctrl+E"). Made only when set: naming QKeySequence
    builds its enums, which the first paint does without."""
    from PySide6.QtGui import QKeySequence

    standard = getattr(QKeySequence.StandardKey, keys, None)
    return QKeySequence(standard) if standard is not None else QKeySequence(keys)


class WindowMenus(WindowParts):
    """File, View, Tools and Help; mix in before ``QMainWindow``."""

    page_actions: list[QAction]
    _shortcuts: list[tuple[QAction, str]]

    if TYPE_CHECKING:  # the window's own, and its other parts'
        @property
        def plan(self) -> PlanPage: ...
        def show_preferences(self) -> QDialog: ...
        def show_trace_dialog(self) -> QDialog: ...
        def show_about(self) -> QDialog: ...
        def open_log_folder(self) -> QMessageBox: ...
        def refresh_prices(self) -> None: ...

    def _action(self, slot: Callable[[], object], shortcut: str = "") -> QAction:
        action = QAction(self)
        action.triggered.connect(lambda _checked=False: slot())
        if shortcut:
            self._set_shortcut(action, shortcut)
        return action

    def _set_shortcut(self, action: QAction, keys: str) -> None:
        """Now once the first screen is up; before, kept for ``start_background``: the
        first ``setShortcut`` builds Qt's namespace enums (13 ms, see qt_early), and no key
        reaches the window before then."""
        if self.background_started:
            action.setShortcut(key_sequence(keys))
        else:
            self._shortcuts.append((action, keys))

    def _build_menus(self) -> None:
        bar = self.menuBar()
        self.file_menu = bar.addMenu("")
        self.open_action = self._action(lambda: self.plan.open_plan_dialog(), "Open")
        self.save_action = self._action(lambda: self.plan.save_plan_dialog(), "Save")
        self.export_action = self._action(lambda: self.plan.export_csv_dialog(), "Ctrl+E")
        self.preferences_action = self._action(self.show_preferences, "Ctrl+,")
        self.preferences_action.setMenuRole(QAction.MenuRole.PreferencesRole)
        self.quit_action = self._action(self.close, "Ctrl+Q")
        self.quit_action.setMenuRole(QAction.MenuRole.QuitRole)
        for action in (self.open_action, self.save_action, self.export_action):
            self.file_menu.addAction(action)
        self.file_menu.addSeparator()
        self.file_menu.addAction(self.preferences_action)
        self.file_menu.addSeparator()
        self.file_menu.addAction(self.quit_action)

        self.view_menu = bar.addMenu("")
        self.language_menu = self.view_menu.addMenu("")
        self.language_group = QActionGroup(self)
        self.language_actions: dict[str, QAction] = {}
        for code in ("system", "en", "zh_CN"):
            action = self._action(lambda c=code: self.set_language(c))  # type: ignore[misc]
            action.setCheckable(True)
            action.setChecked(code == self.settings.language)
            self.language_group.addAction(action)
            self.language_menu.addAction(action)
            self.language_actions[code] = action
        self.theme_menu = self.view_menu.addMenu("")
        self.theme_group = QActionGroup(self)
        self.theme_actions: dict[str, QAction] = {}
        for code in ("system", "light", "dark"):
            action = self._action(lambda c=code: self.set_theme(c))  # type: ignore[misc]
            action.setCheckable(True)
            action.setChecked(code == self.settings.theme)
            self.theme_group.addAction(action)
            self.theme_menu.addAction(action)
            self.theme_actions[code] = action
        self.pages_menu = self.view_menu.addMenu("")
        for page_action in self.page_actions:
            self.pages_menu.addAction(page_action)

        self.tools_menu = bar.addMenu("")
        self.trace_action = self._action(self.show_trace_dialog, "Ctrl+T")
        self.tools_menu.addAction(self.trace_action)
        self.prices_action = self._action(self.refresh_prices)
        self.tools_menu.addAction(self.prices_action)

        self.help_menu = bar.addMenu("")
        self.about_action = self._action(self.show_about, "F1")
        self.about_action.setMenuRole(QAction.MenuRole.AboutRole)
        self.logs_action = self._action(self.open_log_folder)
        self.help_menu.addAction(self.logs_action)
        self.help_menu.addSeparator()
        self.help_menu.addAction(self.about_action)

    def set_language(self, language: str) -> str:
        """Switch the UI language now; widgets retranslate on LanguageChange."""
        app = QCoreApplication.instance()
        assert app is not None
        effective = install_translator(app, language)
        self.settings.language = language
        if language in self.language_actions:
            self.language_actions[language].setChecked(True)
        return effective

    def set_theme(self, theme: str) -> str:
        """Switch between the OS colours, light and dark now; return the scheme in effect."""
        from gpudesk.ui.shell.theme import apply_theme

        app = QApplication.instance()
        assert isinstance(app, QApplication)
        effective = apply_theme(app, theme)
        self.settings.theme = theme
        if theme in self.theme_actions:
            self.theme_actions[theme].setChecked(True)
        return effective
