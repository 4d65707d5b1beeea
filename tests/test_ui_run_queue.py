"""The Run page's "Add to queue" and its queue view against a real loopback sshd.

The buttons are clicked as a user would; the machine's agent is played by ticking the
queue (``agent/queue.py``) on the same folder from the test, as the agent's loop does.
"""

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
from PySide6.QtWidgets import QMessageBox  # noqa: E402
from PySide6.QtWidgets import QPushButton  # noqa: E402

from gpudesk.agent import queue as q  # noqa: E402
from gpudesk.agent.runs import process_tree  # noqa: E402
from gpudesk.services.money.ledger import Ledger  # noqa: E402
from gpudesk.services.remote.host_keys import PinStore  # noqa: E402
from gpudesk.ui.run.run_page import RunPage  # noqa: E402
from gpudesk.ui.run.run_queue_view import RunQueueView  # noqa: E402

PYTHON = sys.executable
WAIT_MS = 120_000


@pytest.fixture(autouse=True)
def _agent_played_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """The agent is played by the test's ticks: Add to queue starts none (issue 31's real
    agent is in test_ui_queue_truth)."""
    from gpudesk.services.runs import run_queue

    monkeypatch.setattr(run_queue, "start_agent", lambda *_a, **_k: None)
SLEEPER = "import time\nprint('step 0', flush=True)\ntime.sleep(300)\n"


@pytest.fixture
def ledger(tmp_path: Path) -> Any:
    with Ledger(tmp_path / "ledger.sqlite") as led:
        yield led


@pytest.fixture
def page(qtbot, loop, ledger: Ledger, tmp_path: Path) -> Any:  # type: ignore[no-untyped-def]
    widget = RunPage(ledger)
    qtbot.addWidget(widget)
    yield widget
    widget.shutdown()
    for pid_file in (tmp_path / "machine" / "runs").glob("*/pid"):
        with contextlib.suppress(OSError, ValueError):
            for pid in process_tree(int(pid_file.read_text())):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


def fill(page: RunPage, server: SshdServer, tmp_path: Path) -> Path:
    """The form for a CPU run of a script that sleeps, on an already pinned machine."""
    key = paramiko.Ed25519Key(data=base64.b64decode(server.host_key_line.split()[1]))
    PinStore().pin(f"[127.0.0.1]:{server.port}", key)
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "train.py").write_text(SLEEPER)
    page.machine.setCurrentText(server.url)
    page.identity.setText(str(server.client_key))
    page.project.setText(str(proj))
    page.script.setText("train.py")
    page.python.setText(PYTHON)
    page.nproc.setValue(0)  # the test machine has no NVIDIA driver: a CPU run
    page.remote_root = str(tmp_path / "machine")
    return tmp_path / "machine"


def states(view: RunQueueView) -> list[tuple[str, str]]:
    return [(e.run, e.state) for e in view.view.entries] if view.view is not None else []


def click_entry(qtbot, view: RunQueueView, run: str) -> None:  # type: ignore[no-untyped-def]
    for row in range(view.entries.count()):
        item = view.entries.item(row)
        if item.data(Qt.ItemDataRole.UserRole) == run:
            rect = view.entries.visualItemRect(item)
            qtbot.mouseClick(view.entries.viewport(), Qt.MouseButton.LeftButton,
                             pos=rect.center())
            assert view.selected_run() == run
            return
    raise AssertionError(f"{run} is not listed")


def test_add_to_queue_lists_the_run_and_cancel_stops_it(
        qtbot, page: RunPage, sshd: SshdServer, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    root = fill(page, sshd, tmp_path)
    view = page.queue_view
    assert page.queue_button.text() == "Add to queue" and page.queue_button.isEnabled()
    qtbot.mouseClick(page.queue_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: len(states(view)) == 1, timeout=WAIT_MS)
    first, state = states(view)[0]
    assert state == "queued"
    assert "No gpudesk agent keeps the queue" in view.note.text()  # said, not pretended
    assert "queued" in view.entries.item(0).text() and "CPU" in view.entries.item(0).text()
    assert f"Run {first} is in the queue" in page.status.text()
    assert page.runs.findData(first) >= 0  # a run of the list, as a started one is
    assert not (root / "runs" / first).exists()  # queued: nothing started
    # the machine's agent starts it
    agent = q.RunQueue(root / "queue", lambda: None)
    agent.tick()
    qtbot.waitUntil(view.refresh_button.isEnabled, timeout=WAIT_MS)  # a read ended
    qtbot.mouseClick(view.refresh_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: states(view) == [(first, "running")], timeout=WAIT_MS)
    assert view.note.text().startswith("1 queued or running")
    # a second run waits in the queue
    qtbot.mouseClick(page.queue_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: len(states(view)) == 2, timeout=WAIT_MS)
    second = states(view)[1][0]
    assert states(view) == [(first, "running"), (second, "queued")]
    # Cancel the running one: stopped as Stop stops a run, cancelled once it ended
    click_entry(qtbot, view, first)
    assert view.cancel_button.isEnabled()
    qtbot.mouseClick(view.cancel_button, Qt.MouseButton.LeftButton)
    # a running run asks first (its work since the last checkpoint would be lost): No keeps it
    box = view.question
    assert box is not None and box.objectName() == "confirmCancelQueued"
    assert box.defaultButton() == box.button(QMessageBox.StandardButton.Cancel)
    box.button(QMessageBox.StandardButton.Cancel).click()
    assert not (root / "runs" / first / "cancelled").exists() and not view.runner.busy
    qtbot.mouseClick(view.cancel_button, Qt.MouseButton.LeftButton)
    yes = view.question.findChild(QPushButton, "confirmCancelQueuedYes")  # type: ignore[union-attr]
    assert yes is not None
    yes.click()
    qtbot.waitUntil(lambda: (root / "runs" / first / "cancelled").is_file(), timeout=WAIT_MS)

    def ended() -> bool:
        agent.tick()
        return q.load_entries(root / "queue")[0]["state"] == "cancelled"
    qtbot.waitUntil(ended, timeout=WAIT_MS)
    # the agent started the second meanwhile (a CPU run needs no free GPU): Cancel all
    qtbot.waitUntil(view.refresh_button.isEnabled, timeout=WAIT_MS)  # a read ended
    qtbot.mouseClick(view.refresh_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: dict(states(view)).get(first) == "cancelled", timeout=WAIT_MS)
    assert view.cancel_all_button.isEnabled()
    qtbot.mouseClick(view.cancel_all_button, Qt.MouseButton.LeftButton)
    yes = view.question.findChild(QPushButton, "confirmCancelAllYes")  # type: ignore[union-attr]
    assert yes is not None and view.question.objectName() == "confirmCancelAll"  # type: ignore[union-attr]
    yes.click()
    qtbot.waitUntil(lambda: dict(states(view)).get(second) in ("cancelled", "running")
                    and not view.runner.busy, timeout=WAIT_MS)

    def all_ended() -> bool:
        agent.tick()
        return not q.busy(root / "queue")
    qtbot.waitUntil(all_ended, timeout=WAIT_MS)
    qtbot.waitUntil(view.refresh_button.isEnabled, timeout=WAIT_MS)  # a read ended
    qtbot.mouseClick(view.refresh_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: states(view) == [(first, "cancelled"), (second, "cancelled")]
                    and not view.runner.busy, timeout=WAIT_MS)
    assert not view.cancel_all_button.isEnabled() and not view.cancel_button.isEnabled()


def test_add_to_queue_refuses_a_bad_form_before_connecting(
        page: RunPage, qtbot) -> None:  # type: ignore[no-untyped-def]
    qtbot.mouseClick(page.queue_button, Qt.MouseButton.LeftButton)
    assert "Choose a machine" in page.status.text() and not page.launch_runner.busy
    qtbot.mouseClick(page.queue_view.refresh_button, Qt.MouseButton.LeftButton)
    assert page.queue_view.note.text() == "Choose a machine to see its queue."
