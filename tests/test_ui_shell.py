"""The shell around the pages: theme, Preferences, welcome, crash dialog, About."""

from __future__ import annotations

import sys

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtCore import QTimer  # noqa: E402
from PySide6.QtGui import QPalette  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402
from PySide6.QtWidgets import QDialogButtonBox  # noqa: E402
from PySide6.QtWidgets import QStyleFactory  # noqa: E402

from gpudesk import app as app_module  # noqa: E402
from gpudesk.services.cloud.catalog import load_catalog  # noqa: E402
from gpudesk.services.core.settings import Settings  # noqa: E402
from gpudesk.services.core.settings import load_settings  # noqa: E402
from gpudesk.services.core.settings import save_settings  # noqa: E402
from gpudesk.ui.shell import crash_dialog  # noqa: E402
from gpudesk.ui.shell.i18n import install_translator  # noqa: E402
from gpudesk.ui.shell.main_window import MainWindow  # noqa: E402
from gpudesk.ui.shell.settings_dialog import SettingsDialog  # noqa: E402
from gpudesk.ui.shell.theme import apply_theme  # noqa: E402
from gpudesk.ui.shell.theme import light_palette  # noqa: E402


@pytest.fixture
def window(qtbot, qapp):  # type: ignore[no-untyped-def]
    w = MainWindow(Settings(language="en", welcomed=True), load_catalog())
    qtbot.addWidget(w)
    yield w
    apply_theme(qapp, "light")
    install_translator(qapp, "en")


def window_colour(app: QApplication) -> int:
    return app.palette().color(QPalette.ColorRole.Window).lightness()


def test_the_light_palette_is_fusions_own(qapp) -> None:  # type: ignore[no-untyped-def]
    """theme.light_palette gives Fusion's standard palette by value (asking the style for it
    before the first paint cost 5 ms): every role, in every colour group."""
    fusion = QStyleFactory.create("Fusion").standardPalette()
    ours = light_palette()
    groups = (QPalette.ColorGroup.Active, QPalette.ColorGroup.Inactive,
              QPalette.ColorGroup.Disabled)
    roles = [r for r in QPalette.ColorRole if r.name not in ("NoRole", "NColorRoles")]
    assert len(roles) >= 21
    for group in groups:
        for role in roles:
            assert ours.color(group, role).rgba() == fusion.color(group, role).rgba(), (
                group, role)


def test_theme_switching_changes_window_colour(window, qapp) -> None:  # type: ignore[no-untyped-def]
    assert window.set_theme("light") == "light"
    light = window_colour(qapp)
    assert window.set_theme("dark") == "dark"
    assert window_colour(qapp) < 100 < light
    assert window.settings.theme == "dark" and window.theme_actions["dark"].isChecked()
    assert qapp.style().name().lower() == "fusion"
    window.set_theme("light")
    assert window_colour(qapp) == light
    assert window.set_theme("system") in ("light", "dark")


def test_preferences_save_valid_values(window, qtbot, qapp) -> None:  # type: ignore[no-untyped-def]
    dialog = window.show_preferences()
    assert isinstance(dialog, SettingsDialog)
    dialog.theme.setCurrentIndex(dialog.theme.findData("dark"))
    dialog.currency.setCurrentIndex(dialog.currency.findData("CNY"))
    dialog.edits["cny_per_usd"].setText("7.1")
    dialog.edits["mfu"].setText("40")
    dialog.edits["monthly_budget_usd"].setText("1,200")
    dialog.edits["machine_budget_usd"].setText("50")
    dialog.edits["idle_gpu_percent"].setText("3")
    dialog.edits["idle_minutes"].setText("20")
    dialog.edits["default_region"].setText(" ap-shanghai ")
    dialog.idle_action.setCurrentIndex(dialog.idle_action.findData("stop"))
    with qtbot.waitSignal(dialog.saved):
        dialog.buttons.button(QDialogButtonBox.StandardButton.Ok).click()
    saved = load_settings()
    assert (saved.theme, saved.currency, saved.cny_per_usd, saved.mfu) == ("dark", "CNY", 7.1,
                                                                          0.4)
    assert (saved.monthly_budget_usd, saved.machine_budget_usd) == (1200.0, 50.0)
    assert (saved.idle_gpu_percent, saved.idle_minutes, saved.idle_action) == (3.0, 20, "stop")
    assert saved.default_region == "ap-shanghai"
    assert window.settings.theme == "dark" and window_colour(qapp) < 100


def test_preferences_run_data_in_the_bucket(window, qtbot) -> None:  # type: ignore[no-untyped-def]
    """Issues 22/23: how long a run's folder stays, checkpoints kept, the capacity wait."""
    dialog = window.show_preferences()
    assert dialog.store_box.title() == "Run data in the bucket"
    assert dialog.edits["store_keep_days"].text() == "30"
    for key, typed in (("store_keep_days", "0"), ("store_keep_checkpoints", "0"),
                       ("keep_alive_wait_min", "2")):
        dialog.edits[key].selectAll()
        qtbot.keyClicks(dialog.edits[key], typed)
    dialog.buttons.button(QDialogButtonBox.StandardButton.Ok).click()
    assert dialog.isVisible()  # 0 checkpoints and a 2-minute wait are refused; 0 days = keep
    assert dialog.edits["store_keep_days"].property("invalid") is not True
    assert dialog.edits["store_keep_checkpoints"].property("invalid") is True
    assert "from 5 to 10080" in dialog.field_errors["keep_alive_wait_min"].text()
    for key, typed in (("store_keep_checkpoints", "5"), ("keep_alive_wait_min", "90")):
        dialog.edits[key].selectAll()
        qtbot.keyClicks(dialog.edits[key], typed)
    with qtbot.waitSignal(dialog.saved):
        dialog.buttons.button(QDialogButtonBox.StandardButton.Ok).click()
    saved = load_settings()
    assert (saved.store_keep_days, saved.store_keep_checkpoints, saved.keep_alive_wait_min) \
        == (0, 5, 90)


def test_preferences_refuse_invalid_values(window, qtbot) -> None:  # type: ignore[no-untyped-def]
    save_settings(window.settings)
    before = load_settings()
    dialog = window.show_preferences()
    dialog.edits["mfu"].setText("0")
    dialog.edits["idle_minutes"].setText("2.5")
    dialog.edits["idle_gpu_percent"].setText("150")
    dialog.edits["monthly_budget_usd"].setText("lots")
    dialog.buttons.button(QDialogButtonBox.StandardButton.Ok).click()
    assert dialog.isVisible()
    for key in ("mfu", "idle_minutes", "idle_gpu_percent", "monthly_budget_usd"):
        assert dialog.edits[key].property("invalid") is True, key
    assert dialog.edits["machine_budget_usd"].property("invalid") is not True
    assert dialog.errors.isVisible() and "MFU" in dialog.errors.text()
    assert load_settings() == before and window.settings.mfu == before.mfu
    dialog.edits["mfu"].setText("35")  # typing clears the mark
    assert dialog.edits["mfu"].property("invalid") is False


def test_preferences_cancel_changes_nothing(window, qtbot, qapp) -> None:  # type: ignore[no-untyped-def]
    window.set_theme("light")
    dialog = window.show_preferences()
    dialog.theme.setCurrentIndex(dialog.theme.findData("dark"))
    dialog.language.setCurrentIndex(dialog.language.findData("zh_CN"))
    dialog.edits["idle_minutes"].setText("99")
    dialog.buttons.button(QDialogButtonBox.StandardButton.Cancel).click()
    qtbot.waitUntil(lambda: not dialog.isVisible())
    from gpudesk.services.core import paths

    assert not paths.settings_file().exists()
    assert window.settings.theme == "light" and window.settings.idle_minutes == 30
    assert window.settings.language == "en" and window.nav.item(0).text() == "Plan"
    assert window_colour(qapp) > 100


def test_preferences_language_applies_live(window, qtbot) -> None:  # type: ignore[no-untyped-def]
    dialog = window.show_preferences()
    dialog.language.setCurrentIndex(dialog.language.findData("zh_CN"))
    dialog.buttons.button(QDialogButtonBox.StandardButton.Ok).click()
    qtbot.waitUntil(lambda: window.nav.item(0).text() == "规划")
    assert load_settings().language == "zh_CN"


def test_welcome_shows_on_first_start_only(qtbot, qapp) -> None:  # type: ignore[no-untyped-def]
    first = MainWindow(load_settings(), load_catalog())
    qtbot.addWidget(first)
    first.show()
    welcome = first.maybe_show_welcome()
    assert welcome is not None
    qtbot.waitUntil(welcome.isVisible)
    welcome.cloud_button.click()  # closes the welcome and opens the Accounts page
    qtbot.waitUntil(lambda: first.welcome is None)
    assert first.pages.currentWidget() is first.accounts
    assert load_settings().welcomed is True
    second = MainWindow(load_settings(), load_catalog())
    qtbot.addWidget(second)
    assert second.maybe_show_welcome() is None


@pytest.mark.qt_no_exception_capture
def test_exception_in_slot_shows_redacted_crash_dialog(window, qtbot, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(sys, "excepthook", app_module._excepthook)
    window.show()
    key = "AKIAIOSFODNN7EXAMPLE"

    def broken_slot() -> None:
        raise RuntimeError(f"upload failed for {key} with password=hunter2")

    QTimer.singleShot(0, broken_slot)
    qtbot.waitUntil(lambda: bool(crash_dialog.open_dialogs()))
    dialog = crash_dialog.open_dialogs()[-1]
    text = dialog.text()
    assert "RuntimeError: upload failed for [REDACTED]" in text
    assert key not in text and "hunter2" not in text
    assert "broken_slot" in text and "Python" in text and "Qt" in text
    assert window.isVisible()  # the app keeps running
    dialog.close()
    qtbot.waitUntil(lambda: not crash_dialog.open_dialogs())


def test_loop_exception_handler_shows_crash_dialog(window, qtbot) -> None:  # type: ignore[no-untyped-def]
    exc = ValueError("token=abc123secret")
    app_module._loop_exception_handler(None, {"message": "Task exception", "exception": exc})  # type: ignore[arg-type]
    qtbot.waitUntil(lambda: bool(crash_dialog.open_dialogs()))
    dialog = crash_dialog.open_dialogs()[-1]
    assert "abc123secret" not in dialog.text() and "Task exception" in dialog.text()
    dialog.close()
    qtbot.waitUntil(lambda: not crash_dialog.open_dialogs())


def test_about_lists_pyside6_and_its_licence(window) -> None:  # type: ignore[no-untyped-def]
    dialog = window.show_about()
    rows = {name: (version, licence) for name, version, licence in dialog.rows()}
    assert {"Python", "Qt", "PySide6", "qasync", "pyqtgraph", "keyring", "numpy"} <= set(rows)
    assert "LGPL-3.0" in rows["PySide6"][1] and rows["PySide6"][0].startswith("6.")
    assert rows["qasync"][1] and rows["numpy"][0][0].isdigit()
    dialog.close()


def test_shortcuts(window) -> None:  # type: ignore[no-untyped-def]
    shortcuts = {a.shortcut().toString() for a in (
        window.open_action, window.save_action, window.export_action,
        window.preferences_action, window.trace_action, window.quit_action)}
    assert {"Ctrl+O", "Ctrl+S", "Ctrl+E", "Ctrl+,", "Ctrl+T", "Ctrl+Q"} <= shortcuts
    assert window.page_actions[0].shortcut().toString() == "Ctrl+1"


def test_frame_paints_before_its_pages_and_is_whole_after(qtbot, qapp) -> None:  # type: ignore[no-untyped-def]
    """The app shows a frame first (fast start) and makes the pages after its first paint."""
    from PySide6.QtWidgets import QLabel
    from PySide6.QtWidgets import QListWidget
    from PySide6.QtWidgets import QWidget

    w = MainWindow(Settings(language="en", welcomed=True), load_catalog(), deferred=True)
    qtbot.addWidget(w)
    nav = w.findChild(QListWidget, "nav")
    assert [nav.item(r).text() for r in range(nav.count())] == [
        "Plan", "Accounts", "Instances", "Run", "Watch", "Data"]
    assert w.findChild(QLabel, "opening").text() == "Opening…"
    assert w.findChild(QWidget, "planPage") is None
    assert w.findChild(QWidget, "instancesPage") is None
    assert w.page_actions[0].shortcut().isEmpty()  # keys come with the pages

    w.show()
    assert app_module.wait_for_first_paint(w)
    w.finish_start()
    assert w.findChild(QWidget, "planPage") is w.pages.currentWidget()
    assert w.findChild(QWidget, "instancesPage") is not None
    assert w.findChild(QWidget, "accountsPage") is None  # still made on its first visit
    assert w.page_actions[0].shortcut().toString() == "Ctrl+1"
    assert w.open_action.shortcut().toString() == "Ctrl+O"
    assert w.findChild(QLabel, "catalogAge").text().startswith("Prices from ")
    w.page_actions[2].trigger()
    assert w.pages.currentWidget() is w.findChild(QWidget, "instancesPage")


def test_system_theme_first_paint_uses_the_scheme_seen_last(qapp) -> None:  # type: ignore[no-untyped-def]
    from gpudesk.ui.shell.theme import system_scheme

    try:
        assert apply_theme(qapp, "system", seen="dark") == "dark"
        assert window_colour(qapp) < 100
        assert apply_theme(qapp, "system", seen="light") == "light"
        assert window_colour(qapp) > 150
        assert apply_theme(qapp, "system") == system_scheme()  # nothing seen: Qt is asked
    finally:
        apply_theme(qapp, "light")


def test_an_unexpected_error_is_in_the_log_file_with_its_traceback_redacted(  # type: ignore[no-untyped-def]
        window, qtbot, tmp_path, monkeypatch) -> None:
    """The traceback behind "Something went wrong" reaches gpudesk.log, secrets removed."""
    import logging

    from gpudesk import logs
    from gpudesk.services.core import paths
    from gpudesk.ui.widgets.task_runner import show_error

    root = logging.getLogger()
    saved = root.handlers[:]
    for handler in saved:
        root.removeHandler(handler)
    try:
        logs.setup_logging()

        def deep_inside() -> None:
            raise KeyError("secret_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")

        try:
            deep_inside()
        except KeyError as exc:
            box = show_error(window, "Launch", exc)
        for handler in root.handlers:
            handler.flush()
        text = paths.log_file().read_text(encoding="utf-8")
    finally:
        for handler in root.handlers[:]:
            root.removeHandler(handler)
            handler.close()
        for handler in saved:
            root.addHandler(handler)
    assert "Something went wrong" in box.text()
    assert "Launch: Something went wrong" in text and "deep_inside" in text
    assert "Traceback (most recent call last)" in text
    assert "wJalrXUtnFEMI" not in text
    box.close()


def test_open_log_folder_names_the_folder_when_no_file_manager_opens_it(  # type: ignore[no-untyped-def]
        window, qtbot, monkeypatch) -> None:
    from PySide6.QtGui import QDesktopServices
    from PySide6.QtGui import QGuiApplication
    from PySide6.QtWidgets import QMessageBox
    from PySide6.QtWidgets import QPushButton

    from gpudesk.services.core import paths

    asked: list[str] = []

    def no_file_manager(url):  # type: ignore[no-untyped-def]
        asked.append(url.toLocalFile())
        return False  # what a desktop without a file manager answers

    monkeypatch.setattr(QDesktopServices, "openUrl", staticmethod(no_file_manager))
    window.show()
    window.logs_action.trigger()
    qtbot.waitUntil(lambda: window.findChild(QMessageBox, "logFolderBox") is not None)
    box = window.findChild(QMessageBox, "logFolderBox")
    assert asked == [str(paths.log_dir())]
    assert "No file manager opened the log folder" in box.text()
    assert str(paths.log_dir()) in box.informativeText()
    assert str(paths.log_file()) in box.informativeText()
    copy = box.findChild(QPushButton, "copyLogPath")
    qtbot.mouseClick(copy, Qt.MouseButton.LeftButton)
    assert QGuiApplication.clipboard().text() == str(paths.log_dir())
    assert box.isVisible()  # copying does not close the box
    box.close()
