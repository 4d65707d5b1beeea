"""Every push keeps a launched machine's agent supervised (issue 21, "a supervised guard").

The background guard push (``guard_push.push_all``: a budget, Preferences or a price
changed) deploys the agent with its rules. On a machine gpudesk launched whose unit is
missing (its first boot failed, or an older gpudesk ran the agent detached from Watch),
the push installs the one unit (``Restart=always``) through the service manager and the
agent then runs under it, so a kill -9 brings it back. The user's own machine gets no unit
from a push.

The machine is the real sshd fixture; EC2 is moto; systemd is
``tests/service_manager_standin.py`` (never the real one).
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
from typing import Any

from fixtures_agent import pid_gone
from fixtures_agent import wait_for
from fixtures_aws import MotoAws  # noqa: F401
from fixtures_aws import aws  # noqa: F401
from fixtures_aws import moto_server  # noqa: F401
from fixtures_keyring import memory_keyring  # noqa: F401
from fixtures_sshd import SshdServer  # noqa: F401
from fixtures_sshd import sshd  # noqa: F401
from fixtures_telemetry import PYTHON
from fixtures_telemetry import connect
from service_manager_standin import StandinSystemd

from gpudesk.services.cloud import credentials
from gpudesk.services.cloud.providers.base import LaunchRequest
from gpudesk.services.core.settings import Settings
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine
from gpudesk.services.remote import agent_deploy
from gpudesk.services.remote.agent_deploy import UNIT
from gpudesk.services.remote.agent_deploy import ServiceManager
from gpudesk.services.remote.agent_deploy import unit_template
from gpudesk.services.remote.first_boot import _paramiko_key
from gpudesk.services.remote.guard_push import push_agent
from gpudesk.services.remote.guard_push import push_all
from gpudesk.services.remote.host_keys import HostKeyPolicy
from gpudesk.services.remote.host_keys import PinStore
from gpudesk.services.remote.ssh_config import host_alias
from gpudesk.services.remote.targets import open_connection

R = "us-east-1"
WAIT_S = 60.0
BACK_S = 30.0


def _under_unit(systemd: StandinSystemd, data: Path) -> dict[str, Any]:
    """agent.code of the live agent the unit runs ({} while there is none)."""
    main = systemd.main_pid(UNIT)
    try:
        info = json.loads((data / "agent.code").read_text())
    except (OSError, ValueError):
        return {}
    return info if main and info.get("pid") == main and not pid_gone(main) else {}


def _stop(pid: int) -> None:
    if pid and not pid_gone(pid):
        os.kill(pid, signal.SIGKILL)
        wait_for(lambda: pid_gone(pid), WAIT_S, "the agent to end")


def test_a_push_to_a_launched_machine_without_its_unit_puts_the_agent_under_one(
        aws: MotoAws, memory_keyring: Any, sshd: SshdServer, tmp_path: Path) -> None:
    credentials.save_credentials(aws.credentials)
    aws.publish_dlami(R)
    provider = aws.provider()
    group = provider.ensure_security_group(R, "203.0.113.7/32")
    inst = provider.run_instance(LaunchRequest("m-unit00001", R, "g5.xlarge",
                                               security_group=group, on_budget="stop"))
    root = tmp_path / "home" / "gpudesk"
    base, data = root / "agent", root / "agent" / "data"
    systemd = StandinSystemd.install(tmp_path / "systemd")
    service = ServiceManager(systemctl=shlex.quote(str(systemd.systemctl)),
                             unit_dir=str(systemd.unit_dir))
    # an earlier Watch (or an older gpudesk) started the agent detached: nothing supervises it
    with connect(sshd) as conn:
        before = agent_deploy.deploy(conn, None, root=str(root), python=PYTHON)
    pids = [before.pid]
    try:
        assert before.supervisor == "none" and not (systemd.unit_dir / UNIT).exists()
        with Ledger() as ledger:
            m = ledger.add(Machine(
                id="m-unit00001", provider="aws", region=R, cloud_id=inst.cloud_id,
                state="running", price_per_hour=1.006, budget=20.0, on_budget="stop",
                enforced_by="agent,shutdown-behavior", public_ip=sshd.host,
                ssh_port=sshd.port, ssh_user=sshd.user, key_file=str(sshd.client_key),
                remote_root=str(root), remote_python=PYTHON))
            PinStore().pin(host_alias(m), _paramiko_key(sshd.host_key_line))
            report = push_all(ledger, Settings(), service=service)
            assert report.failed == {} and report.pushed == [m.id]
            pid = report.agent_pids[m.id]
            pids.append(pid)
            steps = [e.step for e in ledger.events(m.id)]
        # the unit is installed, enabled and started through the service manager
        assert systemd.calls() == ["daemon-reload", f"enable {UNIT}", f"restart {UNIT}"]
        filled = (unit_template().replace("@USER@", getpass.getuser())
                  .replace("@PY@", PYTHON).replace("@BASE@", str(base)))
        assert (systemd.unit_dir / UNIT).read_text() == filled
        assert "Restart=always" in filled.splitlines()
        assert json.loads((base / "service.json").read_text())["systemctl"] == \
            service.systemctl
        # the agent runs under it with the pushed rules; the detached one is gone
        running = wait_for(lambda: _under_unit(systemd, data), WAIT_S, "the agent under the unit")
        assert running["pid"] == pid != before.pid and pid_gone(before.pid)
        assert json.loads((base / "rules.json").read_text())["budget"]["cap"] == 20.0
        assert "agent-unsupervised" not in steps
        # supervised: a kill -9 brings it back, through the unit
        os.kill(pid, signal.SIGKILL)
        start = time.monotonic()
        again = wait_for(lambda: (lambda r: r if r.get("pid") not in (None, pid) else {})(
            _under_unit(systemd, data)), BACK_S, "the unit to start the agent again")
        assert time.monotonic() - start < BACK_S
        pids.append(again["pid"])
        # a second push finds the unit in place: nothing reinstalled, nothing restarted
        with Ledger() as ledger:
            second = push_all(ledger, Settings(), service=service)
        assert second.agent_pids[m.id] == again["pid"]
        assert systemd.calls()[3:] == []
    finally:
        systemd.shutdown(UNIT)
        for p in pids:
            _stop(p)


def test_a_push_to_an_own_machine_installs_no_unit(
        sshd: SshdServer, tmp_path: Path) -> None:
    root = tmp_path / "own" / "gpudesk"
    systemd = StandinSystemd.install(tmp_path / "systemd")
    pid = 0
    try:
        with Ledger() as ledger:
            m = ledger.add(Machine(
                id="m-own000001", provider="own", origin="added", state="running",
                public_ip=sshd.host, ssh_port=sshd.port, ssh_user=sshd.user,
                key_file=str(sshd.client_key), remote_root=str(root), remote_python=PYTHON,
                budget=5.0, on_budget="stop"))
            PinStore().pin(host_alias(m), _paramiko_key(sshd.host_key_line))
            _rules, pid = push_agent(
                ledger, m, Settings(),
                lambda row: open_connection(row.id, None, HostKeyPolicy.refuse(), attempts=1),
                time.time(), ServiceManager(systemctl=shlex.quote(str(systemd.systemctl)),
                                            unit_dir=str(systemd.unit_dir)))
        assert pid > 0 and not pid_gone(pid)  # it runs, detached
        assert systemd.calls() == [] and not (systemd.unit_dir / UNIT).exists()
        assert not (root / "agent" / "service.json").exists()
    finally:
        systemd.shutdown(UNIT)
        _stop(pid)
