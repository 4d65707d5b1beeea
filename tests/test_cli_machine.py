"""``gpudesk bootstrap``, ``gpudesk ssh-config`` and ``gpudesk cancel`` against the real sshd.

The verbs run through their own argparse sub-parsers and error handlers, as
``gpudesk.cli.entry.main`` wires them (tests/test_cli.py covers that wiring once the
lead adds them there).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from fake_gpu_tools import FakeTorch
from fake_gpu_tools import Tools
from fake_gpu_tools import make_tools
from fixtures_keyring import secret_service  # noqa: F401
from fixtures_ssh_agent import agent  # noqa: F401
from fixtures_sshd import SshdServer  # noqa: F401
from fixtures_sshd import sshd  # noqa: F401

from gpudesk.agent.runs import pid_alive
from gpudesk.agent.runs import process_tree
from gpudesk.cli import cloud as cli_cloud
from gpudesk.cli import machine as cli_machine
from gpudesk.cli import remote as cli_remote
from gpudesk.cli import runs as cli_runs
from gpudesk.services.cloud.credentials import ensure_ssh_key
from gpudesk.services.cloud.machines import add_own_machine
from gpudesk.services.cloud.providers.base import STATE_RUNNING
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine
from gpudesk.services.remote.host_keys import HostKeyPolicy
from gpudesk.services.remote.host_keys import PinStore
from gpudesk.services.remote.ssh import SshConnection
from gpudesk.services.remote.ssh import SshTarget
from gpudesk.services.runs import detached as runs

SYSTEM_PYTHON = "/usr/bin/python3"
DEADLINE_S = 90.0


def gpudesk(*argv: str) -> int:
    """The verbs as ``gpudesk.cli.entry.main`` runs them: parse, run, map errors to exit codes."""
    parser = argparse.ArgumentParser(prog="gpudesk")
    sub = parser.add_subparsers(dest="verb", required=True)
    cli_machine.add_parsers(sub)
    a = parser.parse_args(list(argv))
    try:
        code: int = a.func(a)
        return code
    except Exception as err:
        for handle in (cli_cloud.handle_error, cli_remote.handle_error, cli_runs.handle_error,
                       cli_machine.handle_error):
            mapped = handle(err)
            if mapped is not None:
                return mapped
        raise


def wait_for(check: Callable[[], bool], what: str, timeout: float = DEADLINE_S) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} within {timeout}s")
        time.sleep(0.02)  # polling interval, not a timing assumption


def on(server: SshdServer) -> list[str]:
    return ["--on", server.url, "--identity", str(server.client_key),
            "--host-key", server.host_key_fingerprint]


def tool_args(tools: Tools) -> list[str]:
    out = ["--path", str(tools.bin)]
    for key, value in tools.env.items():
        out += ["--env", f"{key}={value}"]
    return out


@pytest.fixture(autouse=True)
def _need_python() -> None:
    if not Path(SYSTEM_PYTHON).exists():
        pytest.skip("no /usr/bin/python3 on this machine")


# ------------------------------------------------------------------------------ bootstrap

def test_bootstrap_prints_the_mismatch_and_exits_1(
        sshd: SshdServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    tools = make_tools(tmp_path / "tools", smi_scenario="missing",
                       torch=FakeTorch("2.5.1+cu124", "12.4", False, 0))
    code = gpudesk("bootstrap", *on(sshd), "--python", SYSTEM_PYTHON, *tool_args(tools))
    out = capsys.readouterr().out
    assert code == 1
    assert "ok       driver  NVIDIA driver 470.223.02, which supports CUDA up to 11.4." in out
    assert ("error    torch   torch 2.5.1+cu124 is built for CUDA 12.4 but the driver "
            "470.223.02 supports up to CUDA 11.4: install a torch built for cu118") in out


def test_bootstrap_installs_requirements_once_then_says_cached(
        sshd: SshdServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    tools = make_tools(tmp_path / "tools", torch=FakeTorch())
    project = tmp_path / "proj"
    project.mkdir()
    (project / "requirements.txt").write_text("pip\n")
    args = ["bootstrap", *on(sshd), "--python", SYSTEM_PYTHON, "--project", str(project),
            "--remote-root", str(tmp_path / "machine"), *tool_args(tools),
            "--env", "PIP_NO_INDEX=1"]
    assert gpudesk(*args) == 0
    first = capsys.readouterr()
    assert "Creating a virtual environment in" in first.err
    assert "Installed requirements.txt into" in first.err
    venv_python = f"{tmp_path}/machine/venvs/{runs.project_folder_name(project)}/bin/python"
    assert f"gpudesk run --python {venv_python}" in first.out
    assert Path(venv_python).is_file()

    assert gpudesk(*args, "--json") == 0
    second = json.loads(capsys.readouterr().out)
    assert second["ok"] is True
    assert second["requirements"]["cached"] is True
    assert "nothing to do" in second["requirements"]["message"]
    assert second["facts"]["python_executable"] == venv_python
    assert [c["level"] for c in second["checks"]] == ["ok"] * 5


# ------------------------------------------------------------------------------ ssh-config

def test_ssh_config_include_needs_consent_then_real_ssh_uses_the_bootstrap_pin(
        sshd: SshdServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,  # noqa: F811
        capsys: pytest.CaptureFixture[str]) -> None:
    if shutil.which("ssh") is None:
        pytest.skip("no OpenSSH client")
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True, mode=0o700)
    user_config = home / ".ssh" / "config"
    user_config.write_bytes(b"Host *\n    StrictHostKeyChecking no\n")
    monkeypatch.setenv("HOME", str(home))
    with Ledger() as ledger:
        add_own_machine(ledger, "box", "127.0.0.1", sshd.port, sshd.user)

    # No terminal, no --yes: nothing changes in the user's file.
    assert gpudesk("ssh-config", "--include", "--identity",
                   f"box={sshd.client_key}") == 1
    captured = capsys.readouterr()
    assert "needs your consent" in captured.err
    assert "gpudesk-box" in captured.out
    assert user_config.read_bytes() == b"Host *\n    StrictHostKeyChecking no\n"

    assert gpudesk("ssh-config", "--include", "--yes") == 0
    assert "added to the top of" in capsys.readouterr().out
    assert user_config.read_bytes().endswith(b"\nHost *\n    StrictHostKeyChecking no\n")
    assert gpudesk("ssh-config", "--include", "--yes") == 0
    assert "already includes it" in capsys.readouterr().out

    command = ["ssh", "-F", str(user_config), "-o", "BatchMode=yes", "gpudesk-box", "true"]
    env = {k: v for k, v in os.environ.items() if k != "SSH_AUTH_SOCK"} | {"HOME": str(home)}
    refused = subprocess.run(command, capture_output=True, text=True, env=env, timeout=60,
                             check=False)
    assert refused.returncode == 255 and "Host key verification failed" in refused.stderr

    # gpudesk pins the key (first use) under the name the ssh_config's HostKeyAlias names.
    tools = make_tools(tmp_path / "tools", torch=FakeTorch())
    assert gpudesk("bootstrap", "--on", "box", "--identity", str(sshd.client_key),
                   "--accept-new", "--python", SYSTEM_PYTHON, *tool_args(tools)) == 0
    assert PinStore().names() == ["gpudesk-box"]
    reached = subprocess.run(command, capture_output=True, text=True, env=env, timeout=60,
                             check=False)
    assert reached.returncode == 0, reached.stderr

    assert gpudesk("ssh-config", "--remove-include") == 0
    assert user_config.read_bytes() == b"Host *\n    StrictHostKeyChecking no\n"


# ------------------------------------------------------------------------------ cancel

SLEEPER = """\
import os, signal, sys, time
print("ready", os.getpid(), flush=True)
while True:
    time.sleep(0.05)
"""


def test_cancel_stops_a_running_run_and_reports_its_exit_status(
        sshd: SshdServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    project = tmp_path / "proj"
    project.mkdir()
    (project / "train.py").write_text(SLEEPER)
    target = SshTarget.parse(sshd.url, key_file=sshd.client_key)
    conn = SshConnection(target, HostKeyPolicy.expect(sshd.host_key_fingerprint),
                         store=PinStore()).connect()
    with conn:
        record = runs.launch([conn], [(sshd.url, str(sshd.client_key))], runs.RunRequest(
            project=project, script="train.py", args=[], nproc=1, python=sys.executable,
            root=str(tmp_path / "machine")))
        run_dir = Path(record.main.run_dir)
        wait_for(lambda: b"ready" in (run_dir / "log").read_bytes()
                 if (run_dir / "log").exists() else False, "the run's first line")
        tree = process_tree(int((run_dir / "pid").read_text()))
        assert runs.status(conn, str(run_dir), sys.executable).running

        assert gpudesk("cancel", record.id) == 0
        out = capsys.readouterr().out
        final = runs.status(conn, str(run_dir), sys.executable)
    assert final.state == "exited" and final.code not in (None, 0) and final.cancelled, final
    assert out.strip() == f"run {record.id} stopped: cancelled (exit status {final.code})"
    wait_for(lambda: not any(pid_alive(p) for p in tree), "the end of the run's processes")

    assert gpudesk("cancel", record.id) == 0  # already over: says so, changes nothing
    assert (f"run {record.id} is not running: cancelled (exit status {final.code})"
            in capsys.readouterr().out)
    with SshConnection(target, HostKeyPolicy.refuse(), store=PinStore()).connect() as conn:
        runs.resume([conn], record)  # a resumed run is no longer "cancelled"
        again = runs.status(conn, str(run_dir), sys.executable)
        assert again.running and not again.cancelled, again
        runs.stop(conn, str(run_dir), sys.executable)
        wait_for(lambda: not runs.status(conn, str(run_dir), sys.executable).running,
                 "the resumed run to stop")


def test_cancel_of_an_unknown_run_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert gpudesk("cancel", "no-such-run") == 1
    assert "No run 'no-such-run'" in capsys.readouterr().err


def test_ssh_config_agent_uses_the_keyring_key_of_a_launched_machine(
        sshd: SshdServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,  # noqa: F811
        secret_service: object, agent: str,  # noqa: F811
        capsys: pytest.CaptureFixture[str]) -> None:
    """The real keyring and a real ssh-agent: the private key goes keyring -> agent, the
    ssh_config names only its public half, and real ssh logs in with it."""
    if shutil.which("ssh") is None:
        pytest.skip("no OpenSSH client")
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SSH_AUTH_SOCK", agent)
    pair = ensure_ssh_key("gpudesk", "ed25519")  # what a launch creates
    with (sshd.workdir / "authorized_keys").open("a") as f:
        f.write(pair.public_openssh + "\n")
    with Ledger() as ledger:
        ledger.add(Machine(id="m-00000000cc", provider="aws", name="gpu1",
                           public_ip="127.0.0.1", ssh_port=sshd.port, ssh_user=sshd.user,
                           state=STATE_RUNNING, cloud_id="i-0123456789abcdef0"))
    pin = SshConnection(SshTarget("127.0.0.1", sshd.port, sshd.user, key_file=sshd.client_key,
                                  pin_name="gpudesk-gpu1"),
                        HostKeyPolicy.expect(sshd.host_key_fingerprint), store=PinStore())
    pin.connect().close()

    assert gpudesk("ssh-config", "--agent", "--agent-lifetime", "10", "--include",
                   "--yes") == 0
    out = capsys.readouterr().out
    assert "added the key gpudesk to ssh-agent" in out and "gpudesk-gpu1" in out
    listed = subprocess.run(["ssh-add", "-L"], capture_output=True, text=True, timeout=30,
                            check=False)
    assert pair.public_openssh.split()[1] in listed.stdout
    env = {**os.environ, "HOME": str(home), "SSH_AUTH_SOCK": agent}
    reached = subprocess.run(["ssh", "-F", str(home / ".ssh" / "config"), "-o",
                              "BatchMode=yes", "gpudesk-gpu1", "true"], capture_output=True,
                             text=True, env=env, timeout=60, check=False)
    assert reached.returncode == 0, reached.stderr
