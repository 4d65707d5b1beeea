"""The Run page follows the truth (issue 14): a preflight refuses a machine that cannot run
the script, a run that dies at once is shown failed with its last lines, an exit status 0
that trained nothing is not a success, Resume without a checkpoint asks, and the form and
the chosen run come back in a new window. Real loopback sshd, real runs."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pytestqt")

from fixtures_sshd import SshdServer  # noqa: E402, F401
from fixtures_sshd import sshd  # noqa: E402, F401
from PySide6.QtWidgets import QMessageBox  # noqa: E402
from PySide6.QtWidgets import QPushButton  # noqa: E402
from test_ui_run import WAIT_MS  # noqa: E402, F401
from test_ui_run import _host_key  # noqa: E402, F401
from test_ui_run import fill  # noqa: E402, F401
from test_ui_run import ledger  # noqa: E402, F401
from test_ui_run import page  # noqa: E402, F401
from test_ui_run import project  # noqa: E402, F401

from gpudesk.services.remote.host_keys import PinStore  # noqa: E402
from gpudesk.services.runs import run_control  # noqa: E402
from gpudesk.services.runs.detached import RunStatus  # noqa: E402
from gpudesk.ui.run.run_page import RunPage  # noqa: E402


def script_project(root: Path, text: str) -> Path:
    root.mkdir(parents=True)
    (root / "train.py").write_text(text)
    return root


def start(qtbot, view: RunPage, server: SshdServer, proj: Path,  # type: ignore[no-untyped-def]
          python: str = sys.executable) -> None:
    PinStore().pin(f"[127.0.0.1]:{server.port}", _host_key(server))
    fill(view, server, proj, "")
    view.python.setText(python)
    view.run_button.click()


def ended(view: RunPage) -> bool:
    return view.follower is None and view.last_status is not None \
        and not view.last_status.running


def test_a_machine_without_torch_is_refused_before_the_sync_with_the_fix(
        qtbot, page: RunPage, sshd: SshdServer, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    no_torch = shutil.which("python3", path="/usr/bin")
    if no_torch is None:
        pytest.skip("no system python3")
    start(qtbot, page, sshd, script_project(tmp_path / "p", "import torch\n"), no_torch)
    qtbot.waitUntil(lambda: not page.launch_runner.busy, timeout=WAIT_MS)
    text = page.status.text()
    assert "torch" in text and "pip install" in text, text
    assert run_control.recorded_runs() == []  # nothing started
    assert not list((tmp_path / "machine").glob("projects/*"))  # nothing copied


def test_a_run_that_dies_at_once_is_failed_with_its_last_lines(
        qtbot, page: RunPage, sshd: SshdServer, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    start(qtbot, page, sshd, script_project(tmp_path / "p", (
        "print('loading the data')\nimport no_such_module_xyz\n")))
    qtbot.waitUntil(lambda: ended(page), timeout=WAIT_MS)
    assert page.state.text().startswith("failed (exit status ")
    assert "started" not in page.status.text()
    assert "Its last lines" in page.status.text()
    assert "no_such_module_xyz" in page.status.text()
    assert not page.stop_button.isEnabled()


@pytest.mark.parametrize(("body", "words"), [
    ("print('Unable to locate sufficient 2 gpus to run this example. Exiting.')\n",
     "found no GPU"),
    ("print('hello')\n", "no training step"),
])
def test_exit_status_0_that_trained_nothing_is_not_a_success(
        qtbot, page: RunPage, sshd: SshdServer, tmp_path: Path,  # noqa: F811
        body: str, words: str) -> None:  # type: ignore[no-untyped-def]
    start(qtbot, page, sshd, script_project(tmp_path / "p", body))
    qtbot.waitUntil(lambda: ended(page), timeout=WAIT_MS)
    assert page.last_status is not None and page.last_status.code == 0
    assert page.state.text() == "exit status 0, but did it train? (see below)"
    assert words in page.status.text(), page.status.text()


def test_doubts_need_evidence() -> None:
    done = RunStatus("exited", 0, seconds=3.0)
    assert run_control.doubtful_success(done, 1, "| epoch 1 | 200/2983 batches | loss 7.6")\
        is None
    assert run_control.doubtful_success(RunStatus("exited", 0, seconds=600.0), 1, "") is None
    assert run_control.doubtful_success(RunStatus("exited", 1, seconds=1.0), 1, "") is None
    doubt = run_control.doubtful_success(done, 2, (
        "[default0]:Unable to locate sufficient 2 gpus\n"
        "[default1]:Unable to locate sufficient 2 gpus\nstep 1\n"))
    assert doubt is not None and doubt.values["n"] == 2 and doubt.values["total"] == 2


def test_requirement_names() -> None:
    assert run_control.requirement_names(
        "torch>=2.1  # the framework\n-r more.txt\n\nnumpy==1.26; python_version>'3'\n"
        "git+https://example.org/x.git\nsentencepiece\n") == ["torch", "numpy",
                                                               "sentencepiece"]


def test_resume_without_a_checkpoint_asks_before_starting_over(
        qtbot, page: RunPage, sshd: SshdServer, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    proj = script_project(tmp_path / "p", "print('step 1 loss 0.5')\n")
    (proj / "requirements.txt").write_text("torch\nno-such-dist-xyz==1.0  # missing\n")
    start(qtbot, page, sshd, proj)
    qtbot.waitUntil(lambda: ended(page), timeout=WAIT_MS)
    warned = [line for line in page.log.toPlainText().splitlines() if "requirements" in line]
    assert warned and "no-such-dist-xyz" in warned[0] and "torch," not in warned[0], warned
    assert page.resume_button.isEnabled()
    page.resume_button.click()
    box = asked(qtbot, page)
    assert "no checkpoint" in box.text() and "step 0" in box.text()
    box.button(QMessageBox.StandardButton.Cancel).click()
    assert page.status.text() == "Not resumed." and not page.launch_runner.busy
    qtbot.waitUntil(lambda: not box.isVisible(), timeout=WAIT_MS)
    page.resume_button.click()
    asked(qtbot, page).findChild(QPushButton, "resumeStartOver").click()
    qtbot.waitUntil(lambda: "resumed (attempt 2)" in page.status.text(), timeout=WAIT_MS)


def asked(qtbot, view: RunPage) -> QMessageBox:  # type: ignore[no-untyped-def]
    """The resume question on screen now (a closed one may linger until deleted)."""
    def shown() -> list[QMessageBox]:
        return [b for b in view.findChildren(QMessageBox, "resumeQuestion") if b.isVisible()]
    qtbot.waitUntil(lambda: bool(shown()), timeout=WAIT_MS)
    return shown()[0]


def test_a_new_window_brings_back_the_form_and_the_run_with_its_log(
        qtbot, loop, ledger: Any, sshd: SshdServer, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    first = RunPage(ledger)
    qtbot.addWidget(first)
    proj = script_project(tmp_path / "p", "print('step 1 loss 0.25 ' + 'x' * 400)\n")
    start(qtbot, first, sshd, proj)
    first.args.setText("--seed 3")  # typed after the start: the form comes back as left
    qtbot.waitUntil(lambda: ended(first), timeout=WAIT_MS)
    run_id = first.selected_run().id  # type: ignore[union-attr]
    first.shutdown()
    second = RunPage(ledger)
    qtbot.addWidget(second)
    try:
        assert second.project.text() == str(proj)
        assert second.python.text() == sys.executable
        assert second.machine.currentText() == sshd.url
        assert second.identity.text() == str(sshd.client_key)
        assert second.args.text() == "--seed 3"
        assert second.selected_run() is not None and second.selected_run().id == run_id  # type: ignore[union-attr]
        qtbot.waitUntil(lambda: "step 1 loss 0.25" in second.log.toPlainText(),
                        timeout=WAIT_MS)
        qtbot.waitUntil(lambda: ended(second), timeout=WAIT_MS)
    finally:
        second.shutdown()
