"""The queue from the window says each run's true state everywhere and names machines by
their names (issue 31), against a real loopback sshd; the machine's agent is played by
ticking ``agent/queue.py`` on the same folder, as in test_ui_run_queue."""
# ruff: noqa: F811 - fixtures imported from other test modules arrive as parameters

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pytestqt")

from fixtures_sshd import SshdServer  # noqa: E402, F401
from fixtures_sshd import sshd  # noqa: E402, F401
from fixtures_telemetry import Roots  # noqa: E402, F401
from fixtures_telemetry import agent_pid  # noqa: E402, F401
from fixtures_telemetry import roots  # noqa: E402, F401
from PySide6.QtCore import Qt  # noqa: E402
from test_ui_run_queue import click_entry  # noqa: E402, F401
from test_ui_run_queue import fill  # noqa: E402, F401
from test_ui_run_queue import ledger  # noqa: E402, F401
from test_ui_run_queue import page  # noqa: E402, F401
from test_ui_run_queue import states  # noqa: E402, F401

from gpudesk.agent import queue as q  # noqa: E402
from gpudesk.services.cloud.machines import add_own_machine  # noqa: E402
from gpudesk.services.money.ledger import Ledger  # noqa: E402
from gpudesk.services.money.ledger import Machine  # noqa: E402
from gpudesk.services.remote.host_keys import PinStore  # noqa: E402
from gpudesk.services.runs import run_queue  # noqa: E402
from gpudesk.services.runs.detached import RunRecord  # noqa: E402
from gpudesk.ui.run.run_page import RunPage  # noqa: E402

WAIT_MS = 120_000


@pytest.fixture
def played_agent(monkeypatch: pytest.MonkeyPatch) -> None:
    """The agent is played by the test's ticks: Add to queue starts none."""
    monkeypatch.setattr(run_queue, "start_agent", lambda *_a, **_k: None)


def _choose_run(qtbot: Any, page: RunPage, run: str) -> None:
    """Pick ``run`` in the run list as a person does (the list's own activation)."""
    index = page.runs.findData(run)
    assert index >= 0
    page.runs.setCurrentIndex(index)
    page.runs.activated.emit(index)


def test_a_cancelled_queued_run_says_cancelled_everywhere_and_offers_no_recovery(
        qtbot: Any, page: RunPage, sshd: SshdServer, tmp_path: Path, played_agent: None) -> None:
    root = fill(page, sshd, tmp_path)
    view = page.queue_view
    qtbot.mouseClick(page.queue_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: len(states(view)) == 1 and not view.runner.busy, timeout=WAIT_MS)
    run, state = states(view)[0]
    assert state == "queued" and RunRecord.load(run).last_state == "queued"
    assert "queued" in page.runs.itemText(page.runs.findData(run))
    # picked while it waits: "queued", not "not found on the machine", no Recover
    _choose_run(qtbot, page, run)
    qtbot.waitUntil(lambda: "queued:" in page.run_list.state.text(), timeout=WAIT_MS)
    assert not page.run_list.recover_button.isVisible()
    # cancelled before it started: the record, the list and the state all say so
    click_entry(qtbot, view, run)
    qtbot.mouseClick(view.cancel_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: states(view) == [(run, "cancelled")] and not view.runner.busy,
                    timeout=WAIT_MS)
    assert RunRecord.load(run).last_state == "cancelled"  # what a restart reads
    assert "cancelled" in page.runs.itemText(page.runs.findData(run))
    _choose_run(qtbot, page, run)
    qtbot.waitUntil(lambda: "cancelled in the queue" in page.run_list.state.text(),
                    timeout=WAIT_MS)
    assert not page.run_list.recover_button.isVisible()
    assert not (root / "runs" / run).exists()


def test_a_queued_run_that_succeeded_is_not_left_queued(
        qtbot: Any, page: RunPage, sshd: SshdServer, tmp_path: Path, played_agent: None) -> None:
    root = fill(page, sshd, tmp_path)
    (tmp_path / "proj" / "train.py").write_text("print('done', flush=True)\n")
    view = page.queue_view
    qtbot.mouseClick(page.queue_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: len(states(view)) == 1 and not view.runner.busy, timeout=WAIT_MS)
    run = states(view)[0][0]
    agent = q.RunQueue(root / "queue", lambda: None)

    def ended() -> bool:
        agent.tick()
        return q.load_entries(root / "queue")[0]["state"] == "succeeded"
    qtbot.waitUntil(ended, timeout=WAIT_MS)
    qtbot.waitUntil(view.refresh_button.isEnabled, timeout=WAIT_MS)  # a read ended
    qtbot.mouseClick(view.refresh_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: states(view) == [(run, "succeeded")] and not view.runner.busy,
                    timeout=WAIT_MS)
    assert RunRecord.load(run).last_state == "finished"
    assert "finished" in page.runs.itemText(page.runs.findData(run))


def test_the_queue_names_a_machine_by_its_name(ledger: Ledger) -> None:
    m = ledger.add(Machine(id="m-98d67ff385", provider="own", name="labgpu",
                           public_ip="10.8.0.12", ssh_user="alice", state="ready",
                           origin="added"))
    with Ledger() as default:  # the ledger the services read
        default.add(m)
    assert run_queue.machine_name("m-98d67ff385") == "labgpu"
    assert run_queue.machine_name("ssh://bob@10.9.9.9:22") == "ssh://bob@10.9.9.9:22"
    view = run_queue.QueueView(machine="m-98d67ff385", gpus=None, agent_running=False,
                               name=run_queue.machine_name("m-98d67ff385"))
    note = view.note()
    assert note is not None
    words = str(note)
    assert "labgpu" in words and "m-98d67ff385" not in words


def test_add_to_queue_starts_the_agent_that_keeps_the_queue_and_names_the_machine(
        qtbot: Any, loop: Any, sshd: SshdServer, roots: Roots, tmp_path: Path) -> None:
    """No agent on the machine: Add to queue starts the real one, which starts the run;
    every line names the machine "lab", never its ledger id."""
    from test_ui_run import _host_key

    root = roots.new()
    with Ledger() as default:  # the ledger the services read
        m = add_own_machine(default, "lab", sshd.host, sshd.port, sshd.user,
                            key_file=str(sshd.client_key), python=sys.executable,
                            root=str(root))
        PinStore().pin("gpudesk-lab", _host_key(sshd))
        page = RunPage(default)
        qtbot.addWidget(page)
        try:
            page.reload_machines()
            page.machine.setCurrentIndex(page.machine.findData(m.id))
            assert page.machine_ref() == m.id
            proj = tmp_path / "proj"
            proj.mkdir()
            (proj / "train.py").write_text("print('trained', flush=True)\n")
            page.project.setText(str(proj))
            page.script.setText("train.py")
            page.python.setText(sys.executable)
            page.nproc.setValue(0)
            page.remote_root = str(root)
            view = page.queue_view
            qtbot.mouseClick(page.queue_button, Qt.MouseButton.LeftButton)
            qtbot.waitUntil(lambda: len(states(view)) == 1 and not view.runner.busy,
                            timeout=WAIT_MS)
            assert agent_pid(root) is not None  # the queue's keeper runs there now
            roots.remember(agent_pid(root) or 0)
            run = states(view)[0][0]
            # the agent may have started it already: the line follows (issue 31 item 21)
            assert "the queue of lab" in page.status.text()
            assert m.id not in page.status.text() and m.id not in view.note.text()
            log = page.log_view.text()
            assert "started the gpudesk agent on lab" in log and m.id not in log

            def ran() -> bool:
                if not view.runner.busy:
                    qtbot.mouseClick(view.refresh_button, Qt.MouseButton.LeftButton)
                return dict(states(view)).get(run) == "succeeded"
            qtbot.waitUntil(ran, timeout=WAIT_MS)
            qtbot.waitUntil(lambda: not view.runner.busy, timeout=WAIT_MS)
            assert "No gpudesk agent" not in view.note.text()
            assert RunRecord.load(run).last_state == "finished"
        finally:
            page.shutdown()
