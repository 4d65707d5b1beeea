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


@pytest.fixture
def loop(qapp):  # type: ignore[no-untyped-def]
    """A qasync loop marked running, so Qt's event processing drives asyncio tasks."""
    import asyncio

    import qasync

    ev = qasync.QEventLoop(qapp, already_running=True)
    yield ev
    for task in asyncio.all_tasks(ev):
        task.cancel()
    # asyncio.to_thread's QThreadExecutor (a name-mangled private of qasync's loop):
    # join its threads so none outlives the test.
    for name, value in vars(ev).items():
        if name.endswith("__default_executor") and value is not None:
            value.shutdown(wait=True)
    asyncio.events._set_running_loop(None)
