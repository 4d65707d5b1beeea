"""The Run page says no more than it knows (issue 25), on a real loopback sshd whose machine
has no NVIDIA driver, as a user's own CPU box: a GPU run there is refused with the fix, a CPU
run is an explicit choice (GPUs per machine 0) labelled CPU everywhere, a refused start
leaves the list and the log pane agreeing, the Python hint points at the window's own field,
and a new window brings back what gpudesk said while starting the run."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pytestqt")

from fixtures_sshd import SshdServer  # noqa: E402, F401
from fixtures_sshd import sshd  # noqa: E402, F401
from PySide6.QtCore import Qt  # noqa: E402
from test_ui_run import WAIT_MS  # noqa: E402, F401
from test_ui_run import _host_key  # noqa: E402, F401
from test_ui_run import ledger  # noqa: E402, F401
from test_ui_run import page  # noqa: E402, F401

from gpudesk.services.remote.host_keys import PinStore  # noqa: E402
from gpudesk.services.runs import detached as runs  # noqa: E402
from gpudesk.services.runs import run_control  # noqa: E402
from gpudesk.ui.run.run_page import RunPage  # noqa: E402


def type_into(qtbot, field: Any, text: str) -> None:  # type: ignore[no-untyped-def]
    field.selectAll()
    qtbot.keyClick(field, Qt.Key.Key_Delete)
    qtbot.keyClicks(field, text)


def fill_by_typing(qtbot, view: RunPage, server: SshdServer, proj: Path,  # type: ignore[no-untyped-def]
                   python: str = sys.executable) -> None:
    PinStore().pin(f"[127.0.0.1]:{server.port}", _host_key(server))
    line = view.machine.lineEdit()
    assert line is not None
    type_into(qtbot, line, server.url)
    type_into(qtbot, view.identity, str(server.client_key))
    type_into(qtbot, view.project, str(proj))
    type_into(qtbot, view.script, "train.py")
    type_into(qtbot, view.python, python)
    view.remote_root = str(proj.parent / "machine")


def set_gpus(qtbot, view: RunPage, n: int) -> None:  # type: ignore[no-untyped-def]
    editor = view.nproc.lineEdit()
    assert editor is not None
    editor.selectAll()
    qtbot.keyClicks(view.nproc, str(n))
    qtbot.keyClick(view.nproc, Qt.Key.Key_Tab)
    assert view.nproc.value() == n


def click_run(qtbot, view: RunPage) -> None:  # type: ignore[no-untyped-def]
    qtbot.mouseClick(view.run_button, Qt.MouseButton.LeftButton)


def ended(view: RunPage) -> bool:
    return view.follower is None and view.last_status is not None \
        and not view.last_status.running


def earlier_run(tmp_path: Path) -> runs.RunRecord:
    """A run this computer started before (its record), chosen in the list."""
    record = runs.RunRecord(id="earlier-run-1", project=str(tmp_path), remote_project="/p",
                            script="old.py", args=[], nproc=1, created=1.0,
                            nodes=[runs.NodeRun("ssh://x@127.0.0.1:1", None, "/r/earlier")])
    record.save()
    return record


def test_a_gpu_run_on_a_machine_without_a_driver_is_refused_and_a_cpu_run_is_labelled(
        qtbot, page: RunPage, sshd: SshdServer, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    before = earlier_run(tmp_path)
    page.reload_runs(select=before.id)
    page.log_view.say("the earlier run's log")
    proj = tmp_path / "p"
    proj.mkdir()
    (proj / "train.py").write_text("print('step 1 loss 0.5')\n")
    fill_by_typing(qtbot, page, sshd, proj)
    assert page.nproc.value() == 1  # the default: a GPU run
    click_run(qtbot, page)
    qtbot.waitUntil(lambda: not page.launch_runner.busy, timeout=WAIT_MS)

    # refused, with the fix; nothing recorded, nothing copied
    status = page.status.text()
    assert "No NVIDIA driver" in status and "GPUs per machine to 0" in status, status
    assert [r.id for r in run_control.recorded_runs()] == [before.id]
    assert not list((tmp_path / "machine").glob("projects/*"))
    # the list and the pane agree: no run chosen, and the pane says why
    assert page.runs.currentIndex() == -1 and page.selected_run() is None
    assert page.state.text() == "not started"
    log = page.log.toPlainText()
    assert "the earlier run's log" not in log
    assert "gpudesk: the run did not start: " in log and "No NVIDIA driver" in log, log
    assert not page.stop_button.isEnabled() and not page.resume_button.isEnabled()

    # a CPU run is chosen in the form: it starts, and says CPU in the log and the list
    set_gpus(qtbot, page, 0)
    assert page.nproc.value() == page.nproc.minimum() == 0  # shown as "0 (CPU run)"
    assert page.nproc.specialValueText() == "0 (CPU run)"
    click_run(qtbot, page)
    qtbot.waitUntil(lambda: ended(page), timeout=WAIT_MS)
    log = page.log.toPlainText()
    assert log.startswith(f"gpudesk: starting train.py on {sshd.url}, CPU\n"), log[:300]
    assert "preflight (error)" not in log
    assert "gpudesk: preflight: a CPU run" in log
    started = [line for line in log.splitlines() if line.startswith("gpudesk: started run")]
    assert started and started[0].endswith("; CPU)"), log
    assert page.state.text() == "finished (exit status 0)"
    record = page.selected_run()
    assert record is not None and record.nproc == 0 and record.cpu
    assert page.runs.currentText().endswith(" · CPU · finished"), page.runs.currentText()
    old = page.runs.findData(before.id)
    assert page.runs.itemText(old).endswith(" · 1 GPU(s) per machine")  # state never seen

    # a new window: the run, labelled, with what gpudesk said while starting it
    page.shutdown()
    again = RunPage(page.ledger)
    qtbot.addWidget(again)
    try:
        assert again.selected_run() is not None and again.selected_run().id == record.id  # type: ignore[union-attr]
        assert again.runs.currentText().endswith(" · CPU · finished")
        qtbot.waitUntil(lambda: "step 1 loss 0.5" in again.log.toPlainText(), timeout=WAIT_MS)
        restored = again.log.toPlainText()
        assert restored.startswith(f"gpudesk: run {record.id}: train.py on 127.0.0.1, CPU\n")
        for said in ("gpudesk: preflight: a CPU run", "gpudesk: preflight on",
                     "gpudesk: synced 1 changed files", "gpudesk: started run"):
            assert said in restored, (said, restored)
        assert restored.index("gpudesk: synced") < restored.index("step 1 loss 0.5")
        qtbot.waitUntil(lambda: ended(again), timeout=WAIT_MS)
    finally:
        again.shutdown()


def test_a_missing_python_is_refused_pointing_at_the_python_field(
        qtbot, page: RunPage, sshd: SshdServer, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    before = earlier_run(tmp_path)
    page.reload_runs(select=before.id)
    proj = tmp_path / "p"
    proj.mkdir()
    (proj / "train.py").write_text("print('hi')\n")
    fill_by_typing(qtbot, page, sshd, proj, python="/no/such/python3")
    set_gpus(qtbot, page, 0)
    click_run(qtbot, page)
    qtbot.waitUntil(lambda: not page.launch_runner.busy, timeout=WAIT_MS)
    status = page.status.text()
    assert "/no/such/python3" in status and "Python field" in status, status
    assert "--python" not in status
    box = page.launch_runner.last_box  # the box says the log's words too (issue 31)
    assert box is not None and "Python field" in box.text() and "--python" not in box.text()
    box.close()
    assert page.runs.currentIndex() == -1 and page.state.text() == "not started"
    assert "Python field" in page.log.toPlainText()
    # choosing the earlier run again shows it, and the refusal is gone from the state
    page.runs.setCurrentIndex(page.runs.findData(before.id))
    page.runs.activated.emit(page.runs.currentIndex())
    assert page.state.text() in ("following…", "not followed")
    assert "Python field" not in page.log.toPlainText()


def test_a_cpu_run_whose_script_wants_a_gpu_is_not_a_plain_success() -> None:
    done = runs.RunStatus("exited", 0, seconds=3.0)
    doubt = run_control.doubtful_success(done, 0, "RuntimeError? no: Found no NVIDIA driver\n")
    assert doubt is not None and "CPU run" in doubt.message
    assert run_control.doubtful_success(done, 0, "epoch 1 loss 2.0\n") is None
    # a GPU run started on a machine whose driver failed (preflight said so) is doubted
    said = runs.Said("RunControl", run_control.MSG_PREFLIGHT_ERROR, message=runs.Said(
        "Bootstrap", "No NVIDIA driver: nvidia-smi was not found on {target}.", target="m"))
    record = runs.RunRecord(id="r-1", project="/p", remote_project="/p", script="t.py",
                            args=[], nproc=1)
    record.keep_notes([said])
    long = runs.RunStatus("exited", 0, seconds=600.0)
    doubt = run_control.doubtful_success(long, 1, "epoch 1 loss 2.0\n", record.said())
    assert doubt is not None and doubt.template == run_control.MSG_DRIVER_BROKEN
    assert run_control.doubtful_success(long, 0, "epoch 1 loss 2.0\n", record.said()) is None
