"""Start the window: QApplication, translations, logging, and the qasync event loop.

Environment variables (used by tests, benchmarks and the frozen-app check):

``GPUDESK_QUIT_AFTER_MS=N``
    quit N milliseconds after the main window is shown; the exit status is 0.
``GPUDESK_REPORT_SHOWN=1``
    print ``shown-at <time.time()>`` to stderr once the window has painted, and
    ``ready-at <time.time()>`` once the first screen (the Plan page, and the welcome on a
    first start) is made and the event loop runs, and ``started-at <time.time()>`` once
    what works behind it (Instances, the tray, budget alerts, prices) has started
    (``benchmarks/bench_startup.py`` reads all three).
"""

from __future__ import annotations

import gc
import logging
import os
import sys
import time
import weakref
from types import TracebackType
from typing import TYPE_CHECKING
from typing import Any

from gpudesk import __version__
from gpudesk.logs import hold_early_records
from gpudesk.logs import setup_logging

if TYPE_CHECKING:
    import asyncio

    from PySide6.QtWidgets import QWidget

log = logging.getLogger("gpudesk")

QUIT_AFTER_ENV = "GPUDESK_QUIT_AFTER_MS"
REPORT_SHOWN_ENV = "GPUDESK_REPORT_SHOWN"


def _excepthook(
    exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None
) -> None:
    if issubclass(exc_type, KeyboardInterrupt):
        sys.__excepthook__(exc_type, exc, tb)
        return
    setup_logging()  # a crash before the first paint still reaches the log file
    log.critical("Unhandled exception", exc_info=(exc_type, exc, tb))
    _show_crash(exc_type, exc, tb)


def _show_crash(exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None,
                context: str = "") -> None:
    """Open the crash dialog when a GUI is running; the app keeps going."""
    if "PySide6.QtWidgets" not in sys.modules:  # no GUI (yet): the log has it
        return
    try:
        from gpudesk.ui.shell.crash_dialog import show_crash

        show_crash(exc_type, exc, tb, context)
    except Exception:  # noqa: BLE001 - never raise from an exception hook
        log.exception("cannot show the crash dialog")


def _loop_exception_handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    exc = context.get("exception")
    message = context.get("message", "Unhandled exception in the event loop")
    if isinstance(exc, BaseException):
        log.critical("%s", message, exc_info=(type(exc), exc, exc.__traceback__))
        _show_crash(type(exc), exc, exc.__traceback__, str(message))
    else:
        log.critical("%s: %r", message, context)


def _quit_after_ms() -> int | None:
    value = os.environ.get(QUIT_AFTER_ENV, "").strip()
    if not value:
        return None
    try:
        ms = int(value)
    except ValueError:
        log.warning("ignoring %s=%r: not a whole number of milliseconds", QUIT_AFTER_ENV, value)
        return None
    return max(ms, 0)


def pause_collection_for_start() -> None:
    """No cyclic garbage collection while the window starts; ``freeze_startup_objects``
    turns it back on.

    Start-up makes modules, classes, enums and widgets that live as long as the app and
    hardly any garbage, yet the collector ran some 70 times before the Plan page was up
    (15 ms, half of it before the first paint), each time walking everything made so far.
    """
    gc.disable()


def freeze_startup_objects() -> None:
    """Leave what start-up built out of every later garbage collection, and collect again.

    The window's Qt wrappers, modules and tables live as long as the app, yet a
    full collection walks them all each time: with a dashboard streaming, one
    took 56 ms, a visible stall (``benchmarks/bench_dashboard.py``). Frozen,
    a collection walks only what was made since.
    """
    gc.collect()
    gc.freeze()
    gc.enable()


def wait_for_first_paint(window: QWidget, limit_ms: int = 2000) -> bool:
    """Run Qt's events (not the user's) until ``window`` has painted once, so that the
    pages made next are made while the window is already on screen."""
    from PySide6.QtCore import QEvent
    from PySide6.QtCore import QEventLoop
    from PySide6.QtCore import QObject
    from PySide6.QtCore import QTimer

    waiting = QEventLoop()
    painted = False

    class FirstPaint(QObject):
        def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt API
            nonlocal painted
            if event.type() == QEvent.Type.Paint and not painted:
                painted = True
                QTimer.singleShot(0, waiting.quit)  # after this paint is done
            return False

    spy = FirstPaint()
    window.installEventFilter(spy)
    QTimer.singleShot(limit_ms, waiting.quit)
    waiting.exec(QEventLoop.ProcessEventsFlag.ExcludeUserInputEvents)
    window.removeEventFilter(spy)
    return painted


def run_gui() -> int:
    """Run the desktop app until its last window closes; return the exit status.

    The window's frame is shown and painted first; the pages, the ledger and the
    event loop's machinery (qasync, asyncio) are made after, so a person sees the
    window at once (``benchmarks/bench_startup.py`` measures both moments)."""
    pause_collection_for_start()  # on again once started (freeze_startup_objects)
    hold_early_records()  # the file is opened after the first paint
    sys.excepthook = _excepthook
    log.info("gpudesk %s starting (Python %s)", __version__, sys.version.split()[0])

    # Settings before Qt: PySide6 reads the source of every module imported after it
    # (its __feature__ check), so what does not need Qt is imported first.
    from gpudesk.services.core.settings import load_settings

    settings = load_settings()

    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from gpudesk.ui.shell.pyside_source_check import speed_up_pyside_source_check

    speed_up_pyside_source_check()  # before the window's modules are imported

    from gpudesk.ui.shell.i18n import install_translator
    from gpudesk.ui.shell.main_window import MainWindow
    from gpudesk.ui.shell.theme import apply_theme

    existing = QApplication.instance()
    # Fusion from the start: set afterwards, the style object comes back to Python, which
    # builds QStyle's 11 enums (5 ms) before the first paint
    made = not isinstance(existing, QApplication)
    app = existing if isinstance(existing, QApplication) else QApplication(
        [*sys.argv, "-style", "Fusion"])
    app.setApplicationName("gpudesk")
    app.setOrganizationName("gpudesk")
    app.setApplicationVersion(__version__)
    language = install_translator(app, settings.language)
    theme = apply_theme(app, settings.theme, settings.system_scheme_seen, fusion_given=made)

    window = MainWindow(settings, deferred=True)
    window.show()
    painted = wait_for_first_paint(window)
    report_shown = os.environ.get(REPORT_SHOWN_ENV, "") not in ("", "0")
    if report_shown and sys.stderr is not None:
        print(f"shown-at {time.time():.6f}", file=sys.stderr, flush=True)

    def settle_in() -> None:
        # After the first screen: the log file (records until now were held; a crash
        # opens it itself) and the OS colour scheme, which the first paint took from
        # the last start (asking names Qt's enums: 15 ms).
        setup_logging()
        effective = theme
        if settings.theme == "system":
            from gpudesk.ui.shell.theme import system_scheme

            settings.system_scheme_seen = system_scheme()
            if settings.system_scheme_seen != theme:  # the OS changed it since
                effective = apply_theme(app, "system")
        log.info("user interface language: %s (setting: %s)", language, settings.language)
        log.info("theme: %s (setting: %s)", effective, settings.theme)
        if not painted:
            log.warning("the window did not paint within 2 s; going on")

    import asyncio

    import qasync

    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    loop.set_exception_handler(_loop_exception_handler)
    quitting: asyncio.Future[None] = loop.create_future()

    def on_about_to_quit() -> None:
        if not quitting.done():
            quitting.set_result(None)

    app.aboutToQuit.connect(on_about_to_quit)

    window.finish_start(background_later=True)
    window.maybe_show_welcome()
    quit_after = _quit_after_ms()

    def on_ready() -> None:
        # Runs on the first turn of the event loop after the first screen was made: the
        # Plan page can be used. What works behind it starts on the next turn.
        if report_shown and sys.stderr is not None:
            print(f"ready-at {time.time():.6f}", file=sys.stderr, flush=True)
        QTimer.singleShot(0, on_started)

    the_window = weakref.ref(window)  # the window is let go when the loop ends (below)

    def on_started() -> None:
        settle_in()
        started = the_window()
        if started is not None:
            started.start_background()
        if report_shown and sys.stderr is not None:
            print(f"started-at {time.time():.6f}", file=sys.stderr, flush=True)
        freeze_startup_objects()
        if quit_after is not None:
            log.info("quitting %d ms after the window was shown (%s)", quit_after, QUIT_AFTER_ENV)
            QTimer.singleShot(quit_after, app.quit)

    QTimer.singleShot(0, on_ready)

    try:
        with loop:
            loop.run_until_complete(quitting)
    finally:
        gc.enable()  # also when the app quits before it started
    del window
    log.info("gpudesk stopped")
    return 0
