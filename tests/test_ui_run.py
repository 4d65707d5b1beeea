"""The Run page against a real loopback sshd and real torchrun (1 process, gloo, CPU).

The run is ``tests/fixtures_training.py``; its ``--pause-at`` hook holds it at a
step so the test can stop it while it is surely running.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pytestqt")

from fixtures_aws import MotoAws  # noqa: E402, F401
from fixtures_aws import aws  # noqa: E402, F401
from fixtures_aws import moto_server  # noqa: E402, F401
from fixtures_keyring import memory_keyring  # noqa: E402, F401
from fixtures_sshd import SshdServer  # noqa: E402, F401
from fixtures_sshd import sshd  # noqa: E402, F401
from fixtures_training import REPO  # noqa: E402
from PySide6.QtGui import QDesktopServices  # noqa: E402
from PySide6.QtWidgets import QMessageBox  # noqa: E402

from gpudesk.agent.run_folder import pid_alive  # noqa: E402
from gpudesk.services.cloud.credentials import save_credentials  # noqa: E402
from gpudesk.services.money.ledger import Ledger  # noqa: E402
from gpudesk.services.remote.host_keys import PinStore  # noqa: E402
from gpudesk.services.runs import detached as runs  # noqa: E402
from gpudesk.services.runs import run_control
from gpudesk.ui.run.run_page import RunPage  # noqa: E402

PYTHON = sys.executable  # the test venv's python has torch (CPU)
WAIT_MS = 120_000


@pytest.fixture
def ledger(tmp_path: Path) -> Any:
    with Ledger(tmp_path / "ledger.sqlite") as led:
        yield led


@pytest.fixture
def page(qtbot, loop, ledger: Ledger) -> Any:  # type: ignore[no-untyped-def]
    widget = RunPage(ledger)
    qtbot.addWidget(widget)
    yield widget
    widget.shutdown()


def project(root: Path) -> Path:
    root.mkdir(parents=True)
    shutil.copy(REPO / "tests" / "fixtures_training.py", root / "train.py")
    return root


def fill(page: RunPage, server: SshdServer, proj: Path, args: str) -> None:
    page.machine.setCurrentText(server.url)
    page.identity.setText(str(server.client_key))
    page.project.setText(str(proj))
    page.script.setText("train.py")
    page.args.setText(args)
    page.python.setText(PYTHON)
    page.nproc.setValue(0)  # the test machine has no NVIDIA driver: a CPU run, chosen
    page.remote_root = str(proj.parent / "machine")


def fill_pinned(page: RunPage, server: SshdServer, tmp_path: Path, args: str) -> Path:
    """The form for a run of the training fixture on an already pinned machine; the
    folder the run writes its results to."""
    PinStore().pin(f"[127.0.0.1]:{server.port}", _host_key(server))
    out = tmp_path / "out"
    out.mkdir()
    fill(page, server, project(tmp_path / "proj"), f"--out {out} {args}")
    return out


def answer_host_key(qtbot, page: RunPage, server: SshdServer) -> None:  # type: ignore[no-untyped-def]
    qtbot.waitUntil(lambda: page.question.last_box is not None
                    and page.question.last_box.isVisible(), timeout=WAIT_MS)
    box = page.question.last_box
    assert box is not None and server.host_key_fingerprint in box.text()
    box.button(QMessageBox.StandardButton.Yes).click()


def test_a_bad_form_is_refused_before_anything_connects(page: RunPage, tmp_path: Path) -> None:
    page.run_button.click()
    assert "Choose a machine" in page.status.text()
    page.machine.setCurrentText("ssh://nobody@127.0.0.1:1")
    page.project.setText(str(tmp_path / "missing"))
    page.run_button.click()
    assert "does not exist" in page.status.text()
    proj = project(tmp_path / "p")
    page.project.setText(str(proj))
    page.script.setText("nope.py")
    page.run_button.click()
    assert "nope.py" in page.status.text() and not page.launch_runner.busy
    page.script.setText("train.py")
    page.args.setText('--out "unclosed')
    page.run_button.click()
    assert "cannot be read" in page.status.text() and not page.launch_runner.busy


def test_run_asks_to_pin_the_key_follows_the_log_and_searches_it(
        qtbot, page: RunPage, sshd: SshdServer, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    out = tmp_path / "out"
    out.mkdir()
    fill(page, sshd, project(tmp_path / "proj"),
         f"--out {out} --max-steps 6 --ckpt-steps 3 --amp bf16")
    page.checkpoint.setValue(0)
    page.run_button.click()
    answer_host_key(qtbot, page, sshd)
    qtbot.waitUntil(lambda: page.last_status is not None and not page.last_status.running,
                    timeout=WAIT_MS)
    assert page.last_status is not None and page.last_status.state == "exited"
    assert page.last_exit_code == 0 and "exit status 0" in page.state.text()
    text = page.log.toPlainText()
    assert "step 5/6" in text and "finished at step 6" in text, text[-2000:]
    assert "gpudesk: started run" in text  # the launch's own progress lines
    assert "gpudesk: preflight on" in text  # the machine was checked before the sync
    assert page.log.lineWrapMode() == page.log.LineWrapMode.WidgetWidth  # long lines wrap
    assert (out / "result-rank0.pt").is_file()
    # pinned now, under the address's known_hosts name
    assert PinStore().fingerprints(f"[127.0.0.1]:{sshd.port}") == [sshd.host_key_fingerprint]
    record = page.selected_run()
    assert record is not None and runs.RunRecord.load(record.id).script == "train.py"
    assert page.resume_button.isEnabled() and not page.stop_button.isEnabled()

    page.search.setText("finished at step 6")
    assert page.match_count == text.count("finished at step 6") >= 1
    assert page.find_in_log(backward=False)
    assert page.log.textCursor().selectedText() == "finished at step 6"
    page.search.setText("no such words in any log")
    assert page.match_count == 0 and not page.find_in_log(backward=False)

    # choosing the run again re-attaches and shows the whole log from the machine
    page.log.clear()
    page.attach(record)
    qtbot.waitUntil(lambda: page.follower is None and page.last_status is not None,
                    timeout=WAIT_MS)
    assert "finished at step 6" in page.log.toPlainText()


def test_stop_asks_first_then_stops_the_running_run(
        qtbot, page: RunPage, sshd: SshdServer, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    out = fill_pinned(page, sshd, tmp_path, "--max-steps 20 --pause-at 2")
    page.run_button.click()
    qtbot.waitUntil(lambda: (out / "paused-2-rank0").exists(), timeout=WAIT_MS)
    assert page.question.last_box is None  # pinned already: nothing asked
    # Stop is enabled from the status asked when following starts, not when it ends
    qtbot.waitUntil(page.stop_button.isEnabled, timeout=WAIT_MS)
    assert page.state.text() == "running"
    page.stop_button.click()
    box = page.findChild(QMessageBox, "stopRunQuestion")
    assert box is not None
    box.button(QMessageBox.StandardButton.Cancel).click()
    assert not page.action_runner.busy  # cancelled: nothing sent
    assert not (out / "result-rank0.pt").exists()
    page.stop_button.click()
    box = page.findChild(QMessageBox, "stopRunQuestion")
    stop = next(b for b in box.buttons() if b.text() == "Stop run")
    stop.click()
    qtbot.waitUntil(lambda: page.follower is None and page.last_status is not None
                    and not page.last_status.running, timeout=WAIT_MS)
    assert page.last_status is not None and page.last_status.state == "exited"
    assert page.last_status.code != 0 and page.last_status.cancelled
    assert page.state.text() == "stopped on request"
    assert not (out / "result-rank0.pt").exists()
    # torchrun's traceback of the stop signal is folded, one click shows it (issue 25)
    view = page.log_view
    assert "SignalException" in page.log.toPlainText()
    assert view.folded > 0 and not view.unfold_button.isHidden()
    assert "SignalException" not in view.visible_text(), page.log.toPlainText()[-6000:]
    assert "stopped on request" in page.status.text() and "folded" in page.status.text()
    view.unfold_button.click()
    assert "SignalException" in view.visible_text()
    assert page.resume_button.isEnabled()


def _host_key(server: SshdServer) -> Any:
    import base64

    import paramiko

    return paramiko.Ed25519Key(data=base64.b64decode(server.host_key_line.split()[1]))


def test_tunnel_reaches_a_service_bound_to_the_machines_loopback_only(
        qtbot, page: RunPage, sshd: SshdServer, tmp_path: Path,  # noqa: F811
        monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    fill_pinned(page, sshd, tmp_path, "--max-steps 2")
    page.run_button.click()
    qtbot.waitUntil(lambda: page.follower is None and page.last_status is not None,
                    timeout=WAIT_MS)
    opened: list[str] = []
    monkeypatch.setattr(QDesktopServices, "openUrl", lambda url: opened.append(url.toString()))
    web = run_control.TunnelSpec("Web", "http.server", (
        "{python}", "-m", "http.server", "{port}", "--bind", "127.0.0.1",
        "--directory", "{logdir}"))
    page.open_tunnel(web)
    qtbot.waitUntil(lambda: bool(opened) or page.tunnel_runner.last_error is not None,
                    timeout=WAIT_MS)
    assert page.tunnel_runner.last_error is None
    tunnel = next(iter(page.tunnels.values()))
    assert opened == [tunnel.url] and tunnel.url.startswith("http://127.0.0.1:")
    with urllib.request.urlopen(tunnel.url + "exit_status", timeout=30) as reply:
        assert reply.read().strip() == b"0"  # the run folder, served on the machine
    assert tunnel.remote_pid > 0 and pid_alive(tunnel.remote_pid)
    page.shutdown()  # closes the forward and ends the service on the machine
    qtbot.waitUntil(lambda: not pid_alive(tunnel.remote_pid), timeout=WAIT_MS)

    missing = run_control.TunnelSpec("Nothing", "nosuchpkg", (
        "{python}", "-m", "nosuchpkg_xyz", "{port}"))
    page.open_tunnel(missing)
    qtbot.waitUntil(lambda: page.tunnel_runner.last_error is not None, timeout=WAIT_MS)
    assert "pip install nosuchpkg" in page.status.text()


def test_open_terminal_uses_ssh_with_the_pinned_key_and_it_connects(
        qtbot, page: RunPage, sshd: SshdServer, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    fill_pinned(page, sshd, tmp_path, "--max-steps 1")
    page.run_button.click()
    qtbot.waitUntil(lambda: page.follower is None and page.last_status is not None,
                    timeout=WAIT_MS)
    started: list[tuple[str, list[str]]] = []
    page._start_detached = lambda prog, args: (started.append((prog, args)), (True, 1))[1]
    page.open_terminal()
    if started:
        ssh_argv = started[0][1][started[0][1].index("ssh"):]
    else:  # no terminal program here: the command is on the clipboard
        from PySide6.QtGui import QGuiApplication

        ssh_argv = QGuiApplication.clipboard().text().split()
    assert "StrictHostKeyChecking=yes" in ssh_argv
    done = subprocess.run([*ssh_argv[:-1], "-o", "BatchMode=yes", "-F", "/dev/null",
                           ssh_argv[-1], "echo", "reached"], capture_output=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == b"reached", done.stderr
    PinStore().forget(f"[127.0.0.1]:{sshd.port}")
    PinStore().pin(f"[127.0.0.1]:{sshd.port}", _other_key())
    refused = subprocess.run([*ssh_argv[:-1], "-o", "BatchMode=yes", "-F", "/dev/null",
                              ssh_argv[-1], "true"], capture_output=True, timeout=60)
    assert refused.returncode != 0  # a wrong pin is refused, never replaced


def _other_key() -> Any:
    import paramiko
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    pem = Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
        serialization.NoEncryption())
    import io

    return paramiko.Ed25519Key.from_private_key(io.StringIO(pem.decode()))


def test_a_lost_run_offers_recovery_and_asks_before_launching(
        qtbot, page: RunPage, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from gpudesk.services.runs import spot_recovery

    record = runs.RunRecord(id="lost-run-1", project=str(tmp_path), remote_project="/p",
                            script="train.py", args=[], nproc=1,
                            nodes=[runs.NodeRun("m-0123456789", None, "/r/lost-run-1")])
    record.save()
    saved = spot_recovery.mirror_dir(record) / "checkpoints"
    saved.mkdir(parents=True)
    (saved / "ckpt-000000040.pt").write_bytes(b"x")
    page.reload_runs(select=record.id)
    assert page.recover_button.isHidden()
    page.last_status = runs.RunStatus("lost")
    page._update_buttons()
    assert not page.recover_button.isHidden()
    page.recover_button.click()
    box = page.findChild(QMessageBox, "recoverQuestion")
    assert box is not None and "ckpt-000000040.pt" in box.text() and "bills" in box.text()
    box.button(QMessageBox.StandardButton.Cancel).click()
    assert not page.launch_runner.busy  # nothing launched without a yes


def test_cancel_while_starting_stops_the_sync_and_starts_nothing(
        qtbot, page: RunPage, sshd: SshdServer, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    fill_pinned(page, sshd, tmp_path, "--max-steps 2")
    assert not page.cancel_start_button.isEnabled()  # nothing to cancel yet
    page.run_button.click()
    assert page.cancel_start_button.isEnabled()
    page.cancel_start_button.click()  # before the sync has copied anything
    qtbot.waitUntil(lambda: not page.launch_runner.busy, timeout=WAIT_MS)
    assert page.status.text().startswith("Cancelled before the run started")
    assert page.launch_runner.last_box is None  # asked for: not an error box
    assert not page.cancel_start_button.isEnabled()
    assert run_control.recorded_runs() == []  # no run was recorded, none started
    machine = tmp_path / "machine"
    assert not list(machine.glob("runs/*/pid")) and not list(machine.glob("projects/*/train.py"))


def test_a_missing_bucket_is_said_next_to_its_field_and_nothing_starts(  # type: ignore[no-untyped-def]
        qtbot, page: RunPage, sshd: SshdServer, tmp_path: Path,  # noqa: F811
        aws: MotoAws, memory_keyring: object) -> None:  # noqa: F811
    """Issue 30: this run's bucket is checked before anything connects or is copied."""
    save_credentials(aws.credentials)
    fill_pinned(page, sshd, tmp_path, "--max-steps 2")
    field = page.form_box.store
    qtbot.keyClicks(field, "s3://missing-lab-bucket/x")
    page.run_button.click()
    said = page.form_box.store_error
    qtbot.waitUntil(lambda: not page.launch_runner.busy and not page.starting,
                    timeout=WAIT_MS)
    assert said.isVisibleTo(page), page.status.text()  # (the page itself is not shown)
    assert "The bucket missing-lab-bucket does not exist" in said.text()
    assert "missing-lab-bucket" in page.status.text()
    assert not (tmp_path / "machine").exists()  # nothing synced, nothing started
    assert not list(runs.RunRecord.folder().glob("*.json"))
