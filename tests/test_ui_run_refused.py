"""Run page (issue 31 item 21): a form Run refuses (a missing script) is said under the
Script field with the field marked, and the log pane no longer shows the previous run's
lines as if they were this one's; the "Run … is in the queue" line follows the run's true
state once the queue is read (cancelled), against a real loopback sshd."""

from __future__ import annotations

import base64
import contextlib
import os
import signal
import sys
from pathlib import Path
from typing import Any

import paramiko
import pytest

pytest.importorskip("pytestqt")

from fixtures_sshd import SshdServer  # noqa: E402, F401
from fixtures_sshd import sshd  # noqa: E402, F401
from PySide6.QtCore import Qt  # noqa: E402

from gpudesk.agent.runs import process_tree  # noqa: E402
from gpudesk.services.money.ledger import Ledger  # noqa: E402
from gpudesk.services.remote.host_keys import PinStore  # noqa: E402
from gpudesk.services.runs import run_queue  # noqa: E402
from gpudesk.ui.run.run_page import RunPage  # noqa: E402
from gpudesk.ui.run.run_queue_view import RunQueueView  # noqa: E402

WAIT_MS = 120_000


@pytest.fixture(autouse=True)
def _agent_played_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """No agent starts the queued run: it stays queued until cancelled."""
    from gpudesk.services.runs import run_queue

    monkeypatch.setattr(run_queue, "start_agent", lambda *_a, **_k: None)


@pytest.fixture
def ledger(tmp_path: Path) -> Any:
    with Ledger(tmp_path / "ledger.sqlite") as led:
        yield led


@pytest.fixture
def page(qtbot, loop, ledger: Ledger, tmp_path: Path) -> Any:  # type: ignore[no-untyped-def]
    widget = RunPage(ledger)
    qtbot.addWidget(widget)
    widget.show()
    yield widget
    widget.shutdown()
    for pid_file in (tmp_path / "machine" / "runs").glob("*/pid"):
        with contextlib.suppress(OSError, ValueError):
            for pid in process_tree(int(pid_file.read_text())):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


def test_a_missing_script_is_said_at_the_script_field_and_the_old_log_goes(
        qtbot, page: RunPage, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "other.py").write_text("print('hi')\n")
    page.machine.setCurrentText("ssh://me@127.0.0.1:22")
    qtbot.keyClicks(page.project, str(proj))
    page.script.clear()
    qtbot.keyClicks(page.script, "train.py")
    page.log_view.say("step 41 loss 0.31")  # the previous run's lines in the pane
    assert "step 41" in page.log_view.text()
    qtbot.mouseClick(page.run_button, Qt.MouseButton.LeftButton)
    why = f"The script train.py is not in the project folder {proj}."
    error = page.form_box.form_error
    assert error.isVisibleTo(page) and error.text() == why
    assert "#d32f2f" in page.script.styleSheet()  # the Script field marked
    assert page.form_box.focusWidget() is page.script
    assert page.status.text() == why
    log = page.log_view.text()
    assert "step 41" not in log and f"the run did not start: {why}" in log
    assert not page.launch_runner.busy  # nothing connected
    # typing in the field takes the complaint away
    qtbot.keyClicks(page.script, "x")
    assert not error.isVisibleTo(page) and page.script.styleSheet() == ""


def test_an_empty_project_marks_the_project_field(qtbot, page: RunPage) -> None:  # type: ignore[no-untyped-def]
    page.machine.setCurrentText("ssh://me@127.0.0.1:22")
    page.project.clear()
    qtbot.mouseClick(page.run_button, Qt.MouseButton.LeftButton)
    assert page.form_box.form_error.isVisibleTo(page)
    assert "#d32f2f" in page.project.styleSheet() and page.script.styleSheet() == ""


def states(view: RunQueueView) -> list[tuple[str, str]]:
    return [(e.run, e.state) for e in view.view.entries] if view.view is not None else []


def test_the_in_the_queue_line_follows_a_cancel(
        qtbot, page: RunPage, sshd: SshdServer, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    key = paramiko.Ed25519Key(data=base64.b64decode(sshd.host_key_line.split()[1]))
    PinStore().pin(f"[127.0.0.1]:{sshd.port}", key)
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "train.py").write_text("print('step 0')\n")
    page.machine.setCurrentText(sshd.url)
    page.identity.setText(str(sshd.client_key))
    page.project.setText(str(proj))
    page.script.setText("train.py")
    page.python.setText(sys.executable)
    page.nproc.setValue(0)
    page.remote_root = str(tmp_path / "machine")
    view = page.queue_view
    qtbot.mouseClick(page.queue_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: len(states(view)) == 1 and not view.runner.busy, timeout=WAIT_MS)
    run = states(view)[0][0]
    assert page.status.text().startswith(f"Run {run} is in the queue of ")
    view.entries.setCurrentRow(0)
    qtbot.mouseClick(view.cancel_button, Qt.MouseButton.LeftButton)  # queued: no question
    qtbot.waitUntil(lambda: states(view) == [(run, "cancelled")] and not view.runner.busy,
                    timeout=WAIT_MS)
    machine = run_queue.machine_name(sshd.url)
    assert page.status.text() == (f"Run {run} was cancelled: it was taken out of the queue "
                                  f"of {machine} and never started.")
    assert "is in the queue" not in page.status.text()
