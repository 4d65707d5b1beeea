"""Issue 30: a run whose every rank finished is shown finished, even when a process then
aborts in its teardown (gloo: "terminate called without an active exception", SIGABRT).

``Session.finish()`` writes ``all_ranks_finished`` to progress.json past its final barrier;
``agent/run_folder.finished_before_exit`` (one source for the agent, its queue and the run
launcher, which are sent with it inlined) reads a non-zero exit after it, by a signal or
with a ``terminate called`` line, as a teardown: the run finished. The launcher's
``status`` is asked here as the desktop asks it, ``python3 -I -S -c <source>``. A Python
error after ``finish()`` stays a failure, and so does a mark left by an earlier attempt.
On the Run page (real sshd, real launcher, a real Session that then aborts) the run says
finished, why, and folds the teardown's lines.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pytestqt")

from fixtures_sshd import SshdServer  # noqa: E402, F401
from fixtures_sshd import sshd  # noqa: E402, F401
from test_ui_run import WAIT_MS  # noqa: E402, F401
from test_ui_run import ledger  # noqa: E402, F401
from test_ui_run import page  # noqa: E402, F401
from test_ui_run_truth import ended  # noqa: E402
from test_ui_run_truth import script_project  # noqa: E402
from test_ui_run_truth import start  # noqa: E402

from gpudesk.agent.run_folder import finished_before_exit  # noqa: E402
from gpudesk.services.runs.detached import RunStatus  # noqa: E402
from gpudesk.services.runs.detached import launcher_command  # noqa: E402
from gpudesk.services.runs.detached import state_word  # noqa: E402
from gpudesk.ui.run.run_page import RunPage  # noqa: E402

FINISHED = {"status": "finished", "step": 3, "all_ranks_finished": True}


def _run_folder(root: Path, code: int, progress: dict[str, object] | None, log: str = "",
                progress_first: bool = False) -> Path:
    (root / "checkpoints").mkdir(parents=True)
    pid, mark = root / "pid", root / "checkpoints" / "progress.json"
    pid.write_text("4242\n")
    if progress is not None:
        mark.write_text(json.dumps(progress))
        if progress_first:  # written by an earlier attempt, before this one's pid
            os.utime(mark, (1_000_000, 1_000_000))
            os.utime(pid, (2_000_000, 2_000_000))
        else:
            os.utime(pid, (1_000_000, 1_000_000))
            os.utime(mark, (2_000_000, 2_000_000))
    (root / "log").write_text(log)
    (root / "exit_status").write_text(f"{code}\n")
    return root


def _shipped_status(run_dir: Path) -> dict[str, object]:
    """``status`` from the launcher as sent to a machine (its shared part inlined), run as
    the desktop runs it over SSH: a shell, ``python -I -S -c``, no gpudesk importable."""
    done = subprocess.run(["/bin/sh", "-c", launcher_command(sys.executable, "status",
                                                             str(run_dir))],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    answer: dict[str, object] = json.loads(done.stdout)
    return answer


@pytest.mark.parametrize(("code", "progress", "log", "earlier", "teardown"), [
    (134, FINISHED, "[rank1]: terminate called without an active exception\n", False, True),
    (134, FINISHED, "", False, True),  # SIGABRT (128 + 6) alone says teardown
    (1, FINISHED, "terminate called without an active exception\n", False, True),
    (1, FINISHED, "Traceback (most recent call last):\nValueError: eval broke\n", False,
     False),  # the script's own error after finish(): a failure
    (134, {**FINISHED, "all_ranks_finished": False}, "", False, False),
    (134, {"status": "finished", "step": 3}, "", False, False),  # a rank never got there
    (134, None, "terminate called without an active exception\n", False, False),
    (134, FINISHED, "", True, False),  # an earlier attempt's mark
    (0, FINISHED, "", False, False),  # nothing to fold
])
def test_a_nonzero_exit_after_every_rank_finished_is_a_finished_run(
        tmp_path: Path, code: int, progress: dict[str, object] | None, log: str,
        earlier: bool, teardown: bool) -> None:
    run_dir = _run_folder(tmp_path / "run", code, progress, log, progress_first=earlier)
    answer = _shipped_status(run_dir)
    assert answer["state"] == "exited" and answer["code"] == code
    assert bool(answer.get("teardown")) is teardown
    assert finished_before_exit(run_dir, code) is teardown  # the agent's uploader's
    shown = RunStatus("exited", code, teardown=bool(answer.get("teardown")))
    assert state_word(shown) == ("finished" if code == 0 or teardown else "failed")
    assert shown.finished is (code == 0 or teardown)


def test_a_stopped_run_is_never_a_teardown(tmp_path: Path) -> None:
    run_dir = _run_folder(tmp_path / "run", 134, FINISHED)
    (run_dir / "cancelled").write_text("1\n")
    answer = _shipped_status(run_dir)
    assert answer["cancelled"] and not answer.get("teardown")


def test_the_agent_queue_counts_a_teardown_as_succeeded(tmp_path: Path) -> None:
    from gpudesk.agent import queue

    run_dir = _run_folder(tmp_path / "run", 134, FINISHED)
    entry = {"run": "r1", "spec": {"run_dir": str(run_dir)}, "pid": 4242}
    assert queue._follow(entry, 3_000_000.0)
    assert entry["state"] == "succeeded" and entry["exit_code"] == 134


ABORTS_AFTER_FINISH = """\
import os, sys
import torch
from torch import nn
from gpudesk.training import Session

s = Session(seed=0, amp="off", checkpoint_every_steps=2, log_every=100)
model = nn.Linear(2, 1)
s.prepare(model, torch.optim.SGD(model.parameters(), lr=0.1))
x = torch.ones(4, 2)
for _ in range(3):
    loss = model(x).pow(2).mean()
    s.backward(loss)
    s.step(loss)
s.finish()
print("terminate called without an active exception", file=sys.stderr, flush=True)
os.abort()
"""


def test_the_run_page_shows_it_finished_and_folds_the_teardown(
        qtbot, page: RunPage, sshd: SshdServer, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    start(qtbot, page, sshd, script_project(tmp_path / "p", ABORTS_AFTER_FINISH),
          sys.executable)
    qtbot.waitUntil(lambda: ended(page), timeout=WAIT_MS)
    status = page.last_status
    assert status is not None and status.code == 134 and status.teardown
    assert page.state.text() == "finished (exit status 134)"
    said = page.status.text()
    assert "finished: every process wrote its final checkpoint" in said, said
    assert "exit status 134" in said and "folded" in said
    unfold = page.log_view.unfold_button
    assert not unfold.isHidden() and unfold.text().startswith("Show the teardown's lines")
    shown = page.log_view.visible_text()
    assert "finished at step 3" in shown and "terminate called" not in shown
    unfold.click()
    assert "terminate called" in page.log_view.visible_text()
