"""The one way a widget runs slow work: busy state, cancel, and a readable error.

Like Anki's ``QueryOp``, but on asyncio tasks under qasync: the work is a
coroutine (``run``) or a blocking function sent to a thread with
``asyncio.to_thread`` (``run_blocking``). The blocking function must not touch
widgets; ``on_success`` runs back on the GUI thread with its result.

Errors become a ``QMessageBox`` opened window-modal (never ``exec()``, which
would nest an event loop inside the asyncio loop). Errors that carry their own
translatable message (``SizingError``, provider errors with ``template`` and
``values``, ``OSError``) are shown plainly; anything else is summarised in one
line with the traceback under "Show Details…".
"""

from __future__ import annotations

import inspect
import logging
import traceback
from collections.abc import Awaitable
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING
from typing import Any
from typing import TypeVar

import shiboken6
from PySide6.QtCore import QCoreApplication
from PySide6.QtCore import QObject
from PySide6.QtCore import Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QAbstractButton
from PySide6.QtWidgets import QMessageBox
from PySide6.QtWidgets import QProgressBar
from PySide6.QtWidgets import QWidget

if TYPE_CHECKING:
    import asyncio

T = TypeVar("T")
log = logging.getLogger(__name__)


translate = QCoreApplication.translate  # the name lupdate looks for


def format_template(context: str, template: str, values: dict[str, Any]) -> str:
    """Translate ``template`` and fill it in; string values that are themselves
    templates (a quota's "how to ask for more") are translated and filled too."""

    def fill(text: str) -> str:
        try:
            return text.format(**values)
        except (KeyError, IndexError, ValueError):
            return text

    from gpudesk.services.core.said import Said
    from gpudesk.ui.widgets.said_text import said_text

    # a value that is a service's message in its own context (an SSH error inside a
    # budget's result) is translated there, never left in English (issue 31)
    filled = {k: said_text(v) if isinstance(v, Said) else
              fill(QCoreApplication.translate(context, v)) if isinstance(v, str) and v
              else v for k, v in values.items()}
    try:
        return QCoreApplication.translate(context, template).format(**filled)
    except (KeyError, IndexError, ValueError):
        return template


def error_text(exc: BaseException) -> tuple[str, bool]:
    """The message a researcher reads, and whether the error is one we expected.

    Expected errors carry a translatable ``template`` (context = the class's
    ``translation_context`` or "SizingError") with ``values``; their text is
    complete on its own. ``OSError`` text names the file and the reason.
    """
    template = getattr(exc, "template", None)
    if isinstance(template, str):
        context = getattr(exc, "translation_context", "SizingError")
        message = format_template(context, template, getattr(exc, "values", {}) or {})
        field = getattr(exc, "field", "")
        return (f"{field}: {message}" if field else message), True
    if isinstance(exc, OSError):
        name = exc.filename if exc.filename else ""
        reason = exc.strerror or str(exc)
        return (f"{name}: {reason}" if name else reason), True
    summary = translate("TaskRunner", "Something went wrong: {error}").format(
        error=f"{type(exc).__name__}: {exc}".rstrip(": "))
    return summary, False


def show_error(parent: QWidget | None, title: str, exc: BaseException) -> QMessageBox:
    """Open (not exec) an error box for ``exc``; the box deletes itself when closed."""
    from PySide6.QtCore import Qt  # the Plan page's runner is made first: see qt_early

    message, expected = error_text(exc)
    box = QMessageBox(QMessageBox.Icon.Warning, title, message, QMessageBox.StandardButton.Ok,
                      parent)
    box.setObjectName("taskErrorBox")
    box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    if not expected:
        # The traceback behind "Something went wrong" belongs in gpudesk.log too (the
        # log's formatter redacts secrets), so a report can be made after the box is gone.
        log.error("%s: %s", title, message, exc_info=(type(exc), exc, exc.__traceback__))
        box.setDetailedText("".join(traceback.format_exception(exc)))
    box.setWindowModality(Qt.WindowModality.WindowModal)
    box.open()
    return box


def _alive(obj: QObject | None) -> bool:
    """Whether ``obj`` is given and its Qt object not yet deleted (a closed dialog's)."""
    return obj is not None and shiboken6.isValid(obj)


_BAR_USERS = "gpudesk_busy_runners"  # a property on a shared QProgressBar


@dataclass(frozen=True)
class BusyWidgets:
    """What shows that a task runs: ``button`` is disabled, ``cancel`` enabled, and
    ``progress`` (shared by the owner's runners) turns indeterminate."""

    button: QAbstractButton | None = None
    cancel: QAbstractButton | None = None
    progress: QProgressBar | None = None


class TaskRunner(QObject):
    """Runs one task at a time for ``owner``; a second ``run`` cancels the first.

    ``button`` is disabled while busy; ``progress`` (if given) shows an
    indeterminate bar; ``cancel_button`` is enabled only while busy and cancels.
    """

    started = Signal()
    finished = Signal(bool)  # True when the task succeeded
    failed = Signal(str)  # the message shown to the user

    def __init__(self, owner: QWidget, *, button: QAbstractButton | None = None,
                 progress: QProgressBar | None = None,
                 cancel_button: QAbstractButton | None = None,
                 show_dialog: bool = True, busy_cursor: bool = True) -> None:
        super().__init__(owner)
        self._owner = owner
        self._busy = BusyWidgets(button, cancel_button, progress)
        self._busy_cursor = busy_cursor
        self._show_dialog = show_dialog
        self._task: asyncio.Future[Any] | None = None
        self._active = 0  # a cancelled task may still be unwinding when the next starts
        self.last_error: BaseException | None = None
        self.last_box: QMessageBox | None = None
        # the owner's words for an error where it has its own ("" : error_text's), issue 31
        self.describe: Callable[[BaseException], str] | None = None
        if cancel_button is not None:
            cancel_button.setEnabled(False)
            cancel_button.clicked.connect(self.cancel)
        if progress is not None:
            progress.setVisible(False)

    @property
    def busy(self) -> bool:
        """True from ``run`` until ``finished`` has been emitted (not merely until the
        task is done: its done-callback comes a loop turn later)."""
        return self._task is not None

    def run(self, work: Awaitable[T], on_success: Callable[[T], None] | None = None,
            *, title: str = "") -> asyncio.Future[Any]:
        """Start ``work`` (a coroutine) on the running qasync loop; busy from now on."""
        import asyncio  # here: the first screen is made before the loop's machinery

        self.cancel()
        self._set_busy(True)
        task = asyncio.ensure_future(self._guard(work, on_success, title))
        # A done-callback, not ``finally``: a task cancelled before its first
        # step never runs its coroutine, but still completes.
        task.add_done_callback(self._done)
        if inspect.iscoroutine(work):
            # ...and then ``work`` was never awaited: close it, or the garbage
            # collector reports "never awaited" at some later, unrelated moment.
            coro = work
            task.add_done_callback(lambda _t: coro.close())
        self._task = task
        return task

    def run_blocking(self, fn: Callable[..., T], *args: Any,
                     on_success: Callable[[T], None] | None = None,
                     title: str = "") -> asyncio.Future[Any]:
        """Run ``fn(*args)`` in a worker thread; it must not touch widgets."""
        import asyncio

        return self.run(asyncio.to_thread(fn, *args), on_success, title=title)

    def cancel(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()

    async def _guard(self, work: Awaitable[T], on_success: Callable[[T], None] | None,
                     title: str) -> bool:
        import asyncio

        try:
            result = await work
            if on_success is not None and _alive(self):  # no widget to show it on: done
                on_success(result)
            return True
        except asyncio.CancelledError:
            raise  # the user asked for it; nothing to report
        except Exception as exc:  # noqa: BLE001 - every failure must reach the user
            if not _alive(self):  # the window that asked is gone; the log keeps it
                log.warning("a task of a closed window failed: %s", error_text(exc)[0])
                return False
            self.last_error = exc
            message, _ = error_text(exc)
            if self._show_dialog:
                title = title or translate("TaskRunner", "gpudesk")
                self.last_box = show_error(self._owner, title, exc)
                said = self.describe(exc) if self.describe is not None else ""
                if said:  # the page's own words (its fields, not the CLI's flags)
                    self.last_box.setText(said)
            self.failed.emit(message)
            return False

    def _done(self, task: asyncio.Future[Any]) -> None:
        if not _alive(self):  # its owner was deleted while the task ran (a dialog closed)
            self._active -= 1
            if self._active == 0 and self._busy_cursor:
                QGuiApplication.restoreOverrideCursor()
            return
        if self._task is task:
            # not busy only from here on: between the task's end and this callback a
            # caller asking ``busy`` must not act before ``finished`` has been handled
            self._task = None
        self._set_busy(False)
        self.finished.emit(not task.cancelled() and task.result() is True)

    def _set_busy(self, busy: bool) -> None:
        self._active += 1 if busy else -1
        if self._active > (1 if busy else 0):
            return
        if _alive(self._busy.button):
            self._busy.button.setEnabled(not busy)  # type: ignore[union-attr]
        if _alive(self._busy.cancel):
            self._busy.cancel.setEnabled(busy)  # type: ignore[union-attr]
        if _alive(self._busy.progress):
            assert self._busy.progress is not None
            # Pages share one bar among several runners: it stays while any of them works.
            users = max(int(self._busy.progress.property(_BAR_USERS) or 0) + (1 if busy else -1), 0)
            self._busy.progress.setProperty(_BAR_USERS, users)
            self._busy.progress.setRange(0, 0)
            self._busy.progress.setVisible(users > 0)
        if busy:
            if self._busy_cursor:
                from PySide6.QtCore import Qt

                QGuiApplication.setOverrideCursor(Qt.CursorShape.BusyCursor)
            self.started.emit()
        elif self._busy_cursor:
            QGuiApplication.restoreOverrideCursor()
