"""Shared test setup: no display, never the user's real gpudesk files, and under
``CI=true`` a suite that fails only for real: Hypothesis derandomized, and a skip
(a missing sshd, Secret Service, Xvfb, torch...) counted as a failure."""

from __future__ import annotations

import os

# Before anything imports Qt. setdefault: CI may choose xcb under Xvfb for screenshots.
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import tempfile  # noqa: E402
from collections.abc import Iterator  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

# The sshd "machine" of the tests is this machine: a deploy that installs the agent's unit
# must never reach its real systemd. Unless a test names its own stand-in, the service
# manager is one that refuses (as on a machine without systemd) and units go nowhere real.
_NO_SYSTEMD = Path(tempfile.mkdtemp(prefix="gpudesk-no-systemd-"))
(_NO_SYSTEMD / "systemctl").write_text(
    "#!/bin/sh\necho 'no systemd for the test suite' >&2\nexit 1\n")
(_NO_SYSTEMD / "systemctl").chmod(0o755)
os.environ["GPUDESK_SYSTEMCTL"] = str(_NO_SYSTEMD / "systemctl")
(_NO_SYSTEMD / "units").mkdir()
os.environ["GPUDESK_UNIT_DIR"] = str(_NO_SYSTEMD / "units")

IN_CI = os.environ.get("CI", "").lower() == "true"

try:
    from hypothesis import settings as _hypothesis_settings
except ImportError:  # pragma: no cover - hypothesis is a test dependency
    pass
else:
    # CI: the same examples every run (a red build is a real defect, not a new random
    # draw); locally random exploration goes on finding new ones.
    _hypothesis_settings.register_profile("ci", derandomize=True, deadline=None,
                                          print_blob=True)
    _hypothesis_settings.register_profile("dev", deadline=None)
    _hypothesis_settings.load_profile("ci" if IN_CI else "dev")

_CI_SKIP = ("skipped under CI=true, where every prerequisite is installed by scripts/test.sh: "
            "a missing one is a failure, not a skip. Reason given: {reason}")


def _skip_reason(longrepr: object) -> str:
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2])
    return str(longrepr)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    outcome = yield
    report = outcome.get_result()
    if IN_CI and report.skipped and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        report.longrepr = _CI_SKIP.format(reason=_skip_reason(report.longrepr))


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector):  # type: ignore[no-untyped-def]
    outcome = yield
    report = outcome.get_result()
    if IN_CI and report.skipped:  # a module-level importorskip
        report.outcome = "failed"
        report.longrepr = _CI_SKIP.format(reason=_skip_reason(report.longrepr))


@pytest.fixture(autouse=True)
def gpudesk_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Point every gpudesk config/data/log/cache folder at a fresh temporary folder; after
    the test, end the processes it left running there."""
    home = tmp_path / "gpudesk-home"
    monkeypatch.setenv("GPUDESK_HOME", str(home))
    # No test reads AWS's real price list (`gpudesk spend`/`outputs` read S3's when not
    # cached): a closed port on 127.0.0.1 unless the test serves one there itself.
    monkeypatch.setenv("GPUDESK_AWS_PRICE_LIST_URL", "http://127.0.0.1:9")
    # Nor the Spot Instance Advisor's data file (`offers --refresh --spot`).
    monkeypatch.setenv("GPUDESK_SPOT_ADVISOR_URL", "http://127.0.0.1:9/spot-advisor-data.json")
    yield home
    _end_left_processes(tmp_path)


def _end_left_processes(folder: Path) -> None:
    """SIGKILL what a test left running in its own folder: the sshd "machine" is this
    computer, and an agent, uploader or run started there is detached from the test (on a
    real machine it lives as long as the machine). Left alive, they poll a bucket that
    is gone and load the later tests (CI once saw one PUT every 30 s for minutes)."""
    import contextlib
    import signal

    mark = str(folder)
    me = os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            words = (entry / "cmdline").read_bytes().decode("utf-8", "replace").split("\0")
            words.append(os.readlink(entry / "cwd"))
        except OSError:
            continue
        if any(w == mark or f"{mark}/" in w for w in words):
            with contextlib.suppress(OSError):
                os.kill(int(entry.name), signal.SIGKILL)


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
        _delete_left_windows()
        gc.collect()
        if was_enabled:
            gc.enable()


def _delete_left_windows() -> None:
    """Delete the top-level widgets a test left behind (a window whose close was
    answered by a question, a page never parented): alive, their timers and language
    changes would reach a later test through a ledger that test already closed."""
    from PySide6.QtCore import QCoreApplication
    from PySide6.QtCore import QEvent
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance()
    if not isinstance(app, QApplication):
        return
    for widget in app.topLevelWidgets():
        widget.deleteLater()
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)


# A loopback port that answers like an SSH server's banner and nothing more: launch
# tests wait until "SSH answers" on the new machine, and the stand-ins' machines
# have no sshd, so their address is pointed here.
@pytest.fixture
def banner_port():  # type: ignore[no-untyped-def]
    import socket
    import threading

    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            with conn:
                conn.sendall(b"SSH-2.0-standin\r\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    server.close()


# This computer's public address as checkip.amazonaws.com would say it, from a server
# on 127.0.0.1 (GPUDESK_IP_ECHO_URL); a test changes ``echo[0]`` to move the laptop.
@pytest.fixture
def echo(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    from local_get import serve_get

    from gpudesk.services.cloud.public_ip import ECHO_ENV

    answer = ["203.0.113.7\n"]
    with serve_get(lambda _path: (200, answer[0].encode())) as url:
        monkeypatch.setenv(ECHO_ENV, f"{url}/")
        yield answer
