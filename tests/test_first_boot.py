"""A guard from the first second: the user data script on a real sshd "machine".

The script is the one ``first_boot.user_data`` hands cloud-init in EC2/CVM user
data (``write_files`` + ``runcmd``). Here it runs over SSH (standing in for
cloud-init), with the service manager replaced by a small ``systemctl`` that
starts the unit's ``ExecStart`` detached, folders in a temporary directory, and
the power action replaced by a command that writes a
file. The budget's clock is faked through the rules: the machine has already run
9,995 s of its $10 budget at $3.6/h when it boots, so it reaches the cap seconds
later, long after the desktop has gone.
"""
# ruff: noqa: F811 - fixtures imported from fixtures_* arrive as parameters

from __future__ import annotations

import getpass
import json
import os
import shlex
import signal
import time
from pathlib import Path

import yaml
from fixtures_agent import pid_gone
from fixtures_agent import wait_for
from fixtures_sshd import SshdServer  # noqa: F401
from fixtures_sshd import sshd  # noqa: F401
from fixtures_telemetry import PYTHON
from fixtures_telemetry import connect

from gpudesk.services.remote import first_boot
from gpudesk.services.remote.agent_deploy import AgentRules
from gpudesk.services.remote.agent_deploy import BudgetStop
from gpudesk.services.remote.agent_deploy import IdleStop
from gpudesk.services.remote.host_key_rotation import GUARD_STATUS_NAME
from gpudesk.services.remote.host_key_rotation import GuardStatus
from gpudesk.services.remote.host_key_rotation import parse_guard_status
from gpudesk.services.remote.host_key_rotation import read_guard_status
from gpudesk.services.remote.host_keys import HostKeyPolicy
from gpudesk.services.remote.host_keys import PinStore
from gpudesk.services.remote.ssh import SshConnection
from gpudesk.services.remote.ssh import SshTarget

WAIT_S = 60.0

FAKE_SYSTEMCTL = """#!{python}
# Stands in for systemd: records each call; `enable --now UNIT` starts ExecStart detached.
import os, subprocess, sys
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "systemctl.log"), "a") as log:
    log.write(" ".join(sys.argv[1:]) + "\\n")
if sys.argv[1:3] == ["enable", "--now"]:
    unit = open(os.path.join(os.environ["GPUDESK_BOOT_UNIT_DIR"], sys.argv[3])).read()
    cmd = next(l.split("=", 1)[1] for l in unit.splitlines() if l.startswith("ExecStart="))
    out = open(os.path.join(here, "unit.log"), "ab")
    p = subprocess.Popen(cmd.split(), stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                         start_new_session=True)
    open(os.path.join(here, "unit.pid"), "w").write(str(p.pid))
"""


def _rules(flag: Path) -> AgentRules:
    write = f"open({str(flag)!r}, 'w').write(__import__('os').environ['GPUDESK_ACTION'])"
    return AgentRules(
        budget=BudgetStop(cap=10.0, price_per_hour=3.6, since=time.time() - 9_995.0,
                          action="terminate"),
        idle=IdleStop(minutes=30.0, below_pct=5.0, action="stop"),
        commands={"terminate": (PYTHON, "-c", write), "stop": (PYTHON, "-c", write)})


def test_the_user_data_guard_terminates_the_machine_at_its_budget_with_no_desktop(
        sshd: SshdServer, tmp_path: Path) -> None:
    key = first_boot.new_host_key()
    flag = tmp_path / "power-action"
    data = first_boot.user_data(_rules(flag), key, user=getpass.getuser())
    for cloud in first_boot.USER_DATA_LIMITS:  # no cloud named: it fits every cloud's
        size, limit = first_boot.user_data_size(cloud, data)  # (each cloud's own and its
        assert size <= limit, (cloud, size)  # spare: tests/test_first_boot_size.py)
    config = yaml.safe_load(data)  # what cloud-init reads
    assert data.startswith("#cloud-config\n")
    # the host key: cloud-init's ssh module installs it before sshd starts, nothing else
    assert config["ssh_keys"] == {"ed25519_private": key.private_pem,
                                  "ed25519_public": key.public_line}
    assert config["ssh_deletekeys"] is True and config["ssh_genkeytypes"] == []
    (script,) = config["write_files"]
    assert config["runcmd"] == [["bash", script["path"]]] and script["permissions"] == "0700"
    text = script["content"]  # the script cloud-init runs as root, unchanged
    fake = tmp_path / "sysbin"
    fake.mkdir()
    systemctl = fake / "systemctl"
    systemctl.write_text(FAKE_SYSTEMCTL.format(python=PYTHON))
    systemctl.chmod(0o755)
    home, units = tmp_path / "home", tmp_path / "units"
    for d in (home, units):
        d.mkdir()
    env = {"GPUDESK_BOOT_HOME": home, "GPUDESK_BOOT_UNIT_DIR": units,
           "GPUDESK_BOOT_SYSTEMCTL": systemctl, "GPUDESK_BOOT_PYTHON": PYTHON,
           "GPUDESK_BOOT_STATE_DIR": tmp_path / "state"}
    command = "env " + " ".join(f"{k}={shlex.quote(str(v))}" for k, v in env.items()) + \
        " bash -s"
    pid = 0
    try:
        with connect(sshd) as conn:  # cloud-init's part: run the script once, as root would
            done = conn.exec(command, input=text.encode(), timeout=WAIT_S)
        assert done.ok, done.stderr.decode(errors="replace")
        pid = int(wait_for(lambda: (fake / "unit.pid").exists() and
                           (fake / "unit.pid").read_text(), WAIT_S, "the unit to start"))
        sshd.stop()  # no desktop, no SSH at all from here on

        # the unit: restarted on failure, started on boot, the same guard and rules
        unit = (units / first_boot.UNIT).read_text()
        assert "Restart=always" in unit and "WantedBy=multi-user.target" in unit
        assert f"ExecStart={PYTHON} {home}/gpudesk/agent/current/agent --dir " in unit
        calls = (fake / "systemctl.log").read_text().splitlines()
        assert calls == ["daemon-reload", f"enable --now {first_boot.UNIT}"]
        # what the desktop reads at its first login: the guard is in place
        marker = tmp_path / "state" / GUARD_STATUS_NAME
        assert marker.read_text() == "installed\n" and marker.stat().st_mode & 0o777 == 0o644
        rules = json.loads((home / "gpudesk/agent/rules.json").read_text())
        assert rules["budget"]["cap"] == 10.0 and rules["budget"]["action"] == "terminate"
        assert rules["idle"]["minutes"] == 30.0 and rules["runs_dir"] == f"{home}/gpudesk/runs"

        # the machine acts alone at its budget
        wait_for(lambda: flag.exists() and flag.read_text() == "terminate", WAIT_S,
                 "the budget action")
        def read_events() -> list[dict]:  # type: ignore[type-arg]
            text = (home / "gpudesk/agent/data/events.jsonl").read_text()
            return [json.loads(line) for line in text.splitlines(keepends=True)
                    if line.endswith("\n")]  # whole lines: the guard may be writing

        wait_for(lambda: any(e["kind"] == "action-run" for e in read_events()), WAIT_S,
                 "the action's exit status")
        events = read_events()
        assert events[0]["kind"] == "boot-guard-start" and events[0]["pid"] == pid
        fired = [e for e in events if e["kind"] == "rule-fired"]
        assert [(e["rule"], e["action"]) for e in fired] == [("budget", "terminate")]
        assert fired[0]["spend"] >= 10.0 and fired[0]["cap"] == 10.0
        assert [e["rc"] for e in events if e["kind"] == "action-run"] == [0]
        assert not pid_gone(pid)  # still guarding (idle rule) after the action ran
    finally:
        if pid and not pid_gone(pid):
            os.kill(pid, signal.SIGTERM)
            wait_for(lambda: pid_gone(pid), WAIT_S, "the guard to stop")


def test_the_desktop_pins_the_host_key_before_the_first_connection(
        sshd: SshdServer, tmp_path: Path) -> None:
    """sshd started with the key the user data hands cloud-init: the first connection
    already knows it (refuse anything else, no trust on first use)."""
    key = first_boot.new_host_key()
    store = PinStore(tmp_path / "known_hosts")
    store.pin("gpudesk-m-new", first_boot._paramiko_key(key.public_line))
    sshd.stop()
    host_key = sshd.workdir / "host_ed25519"
    host_key.write_text(key.private_pem)
    host_key.chmod(0o600)
    sshd.host_key_line, sshd.host_key_fingerprint = key.public_line, key.fingerprint
    sshd.start()
    target = SshTarget.parse(sshd.url, key_file=sshd.client_key, pin_name="gpudesk-m-new")
    with SshConnection(target, HostKeyPolicy.refuse(), store=store).connect() as conn:
        assert conn.exec("echo ok", timeout=WAIT_S).stdout.strip() == b"ok"
    assert store.fingerprints("gpudesk-m-new") == [key.fingerprint]
    assert key.fingerprint.startswith("SHA256:")


# The full agent taking over from the first-boot guard (the deploy upgrading the unit in
# place through the service manager): tests/test_guard_supervised.py.


def test_a_login_user_the_image_lacks_leaves_a_not_installed_marker_not_silence(
        sshd: SshdServer, tmp_path: Path) -> None:
    """The script made for ``ubuntu`` on an image that logs in as root (Alibaba Cloud's):
    it stops before touching anything, says why on stderr and in the marker the desktop
    reads at its first login, and the desktop records "not installed"."""
    rules = AgentRules(budget=BudgetStop(cap=10.0, price_per_hour=3.6, since=time.time()),
                       commands={"terminate": (PYTHON, "-c", "pass"),
                                 "stop": (PYTHON, "-c", "pass")})
    text = first_boot.script(rules, user="gpudesk-no-such-user")
    fake, units, state = tmp_path / "sysbin", tmp_path / "units", tmp_path / "state"
    for d in (fake, units):
        d.mkdir()
    (fake / "systemctl").write_text(FAKE_SYSTEMCTL.format(python=PYTHON))
    (fake / "systemctl").chmod(0o755)
    env = {"GPUDESK_BOOT_UNIT_DIR": units, "GPUDESK_BOOT_SYSTEMCTL": fake / "systemctl",
           "GPUDESK_BOOT_PYTHON": PYTHON, "GPUDESK_BOOT_STATE_DIR": state}
    command = "env " + " ".join(f"{k}={shlex.quote(str(v))}" for k, v in env.items()) + \
        " bash -s"
    with connect(sshd) as conn:
        done = conn.exec(command, input=text.encode(), timeout=WAIT_S)
        assert not done.ok  # cloud-init logs the failure ...
        assert b"the guard did not install: no user gpudesk-no-such-user" in done.stderr
        # ... and the desktop reads it over SSH
        status = read_guard_status(conn, first_boot.RotationConfig(
            guard_status_path=str(state / GUARD_STATUS_NAME), guard_wait_s=0))
    assert status == GuardStatus("not-installed", "no user gpudesk-no-such-user on this "
                                 "machine")
    assert not any(units.iterdir()) and not (fake / "systemctl.log").exists()  # nothing made


def test_a_failing_step_is_named_in_the_marker(sshd: SshdServer, tmp_path: Path) -> None:
    """systemd refusing the unit (set -e stops the script): the marker names the step."""
    rules = AgentRules(budget=BudgetStop(cap=10.0, price_per_hour=3.6, since=time.time()),
                       commands={"terminate": (PYTHON, "-c", "pass"),
                                 "stop": (PYTHON, "-c", "pass")})
    text = first_boot.script(rules, user=getpass.getuser())
    home, units, state = tmp_path / "home", tmp_path / "units", tmp_path / "state"
    for d in (home, units):
        d.mkdir()
    env = {"GPUDESK_BOOT_HOME": home, "GPUDESK_BOOT_UNIT_DIR": units,
           "GPUDESK_BOOT_SYSTEMCTL": "false", "GPUDESK_BOOT_PYTHON": PYTHON,
           "GPUDESK_BOOT_STATE_DIR": state}
    command = "env " + " ".join(f"{k}={shlex.quote(str(v))}" for k, v in env.items()) + \
        " bash -s"
    with connect(sshd) as conn:
        assert not conn.exec(command, input=text.encode(), timeout=WAIT_S).ok
    marker = (state / GUARD_STATUS_NAME).read_text()
    assert parse_guard_status(marker) == GuardStatus("not-installed",
                                                     "systemd failed (exit 1)")
    assert parse_guard_status("") == GuardStatus("unknown")  # no marker yet
