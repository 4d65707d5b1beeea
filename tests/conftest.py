"""Shared test setup: no display, and never the user's real gpudesk files."""

from __future__ import annotations

import os

# Before anything imports Qt. setdefault: CI may choose xcb under Xvfb for screenshots.
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def gpudesk_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point every gpudesk config/data/log/cache folder at a fresh temporary folder."""
    home = tmp_path / "gpudesk-home"
    monkeypatch.setenv("GPUDESK_HOME", str(home))
    return home


@pytest.fixture(scope="session")
def _session_loop(qapp):  # type: ignore[no-untyped-def]
    """One qasync loop marked running, so Qt's event processing drives asyncio tasks.

    One per session: a second QEventLoop on the same QApplication never runs.
    """
    import asyncio

    import qasync

    ev = qasync.QEventLoop(qapp, already_running=True)
    yield ev
    ev.stop()
    ev.close()  # joins the worker threads of asyncio.to_thread
    asyncio.events._set_running_loop(None)


@pytest.fixture
def loop(qtbot, _session_loop):  # type: ignore[no-untyped-def]
    """The session loop; tasks a test leaves behind are cancelled and awaited."""
    import asyncio

    yield _session_loop
    tasks = asyncio.all_tasks(_session_loop)
    for task in tasks:
        task.cancel()
    qtbot.waitUntil(lambda: all(t.done() for t in tasks), timeout=5000)


@pytest.fixture(autouse=True)
def _plain_asyncio(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    """Tests without the ``loop`` fixture may call ``asyncio.run``: hide the qasync loop
    that an earlier GUI test marked as running, and put it back afterwards."""
    if "loop" in request.fixturenames:
        yield
        return
    import asyncio

    running = asyncio.events._get_running_loop()
    asyncio.events._set_running_loop(None)
    try:
        yield
    finally:
        asyncio.events._set_running_loop(running)


@pytest.fixture(autouse=True)
def _collect_qt_garbage_between_tests(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    """No automatic garbage collection during a Qt test; one full collection after it.

    An automatic collection can start at any allocation: inside a Qt event
    dispatch, or on a worker thread, and then finalise the Python side of Qt
    objects an earlier test left in reference cycles. PySide6 crashes on that
    now and then (CI saw a segfault "Garbage-collecting" inside
    ``qtbot.waitUntil``). Collecting here, on the main thread with no event loop
    running and after every other fixture has torn down, is safe.
    """
    if "qtbot" not in request.fixturenames and "qapp" not in request.fixturenames:
        yield
        return
    import gc

    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.collect()
        if was_enabled:
            gc.enable()
