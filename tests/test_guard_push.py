"""Preferences change: every running machine's guard follows, in the cloud (moto) and in the
agent's rules.json on the machine (a real sshd), over pinned host keys only. A machine's own
budget (Launch dialog, --budget, gpudesk budget) stays its own: Preferences' machine budget is
only the default for a machine that has none."""
# ruff: noqa: F811 - fixtures imported from fixtures_* arrive as parameters

from __future__ import annotations

import json
import os
import signal
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
from service_manager_standin import StandinSystemd

from gpudesk.services.cloud import credentials
from gpudesk.services.cloud.providers.base import LaunchRequest
from gpudesk.services.core.settings import Settings
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine
from gpudesk.services.remote.agent_deploy import UNIT
from gpudesk.services.remote.agent_deploy import ServiceManager
from gpudesk.services.remote.guard_push import push_all
from gpudesk.services.remote.host_keys import PinStore
from gpudesk.services.remote.ssh_config import host_alias

R = "us-east-1"


def test_preferences_push_the_default_budget_and_keep_each_machines_own(
        aws: MotoAws, memory_keyring: Any, sshd: SshdServer, tmp_path: Path) -> None:
    credentials.save_credentials(aws.credentials)
    aws.publish_dlami(R)
    provider = aws.provider()
    group = provider.ensure_security_group(R, "203.0.113.7/32")
    inst = provider.run_instance(LaunchRequest("m-push00001", R, "g5.xlarge",
                                               security_group=group, on_budget="stop"))
    bare = provider.run_instance(LaunchRequest("m-push00002", R, "g5.xlarge",
                                               security_group=group, on_budget="stop"))
    root = tmp_path / "machine-root"
    with Ledger() as ledger:
        # its own budget, typed at launch: $20, stop
        m = ledger.add(Machine(
            id="m-push00001", provider="aws", region=R, cloud_id=inst.cloud_id,
            state="running", price_per_hour=1.006, budget=20.0, on_budget="stop",
            enforced_by="agent,shutdown-behavior", public_ip=sshd.host, ssh_port=sshd.port,
            ssh_user=sshd.user, key_file=str(sshd.client_key), remote_root=str(root),
            remote_python=PYTHON))
        # launched with no budget (0 in the Launch dialog), not reachable now
        none = ledger.add(Machine(
            id="m-push00002", provider="aws", region=R, cloud_id=bare.cloud_id,
            state="running", price_per_hour=1.006, enforced_by="agent"))
        # pinned as at launch; a machine with no pin would be skipped, never asked about
        from gpudesk.services.remote.first_boot import _paramiko_key

        PinStore().pin(host_alias(m), _paramiko_key(sshd.host_key_line))
        settings = Settings(machine_budget_usd=50.0, budget_action="terminate")
        # a launched machine's agent is kept under its unit: the stand-in systemd, never
        # this machine's own
        systemd = StandinSystemd.install(tmp_path / "systemd")
        report = push_all(ledger, settings, budget_from_settings=True,
                          service=ServiceManager(systemctl=str(systemd.systemctl),
                                                 unit_dir=str(systemd.unit_dir)))
        pid = report.agent_pids.get(m.id, 0)
        try:
            assert report.failed == {}
            assert report.guarded == [m.id, none.id] and report.pushed == [m.id]
            # the machine's own budget is kept, in the ledger, in EC2 and in the agent
            row = ledger.get(m.id)
            assert row is not None and (row.budget, row.on_budget) == (20.0, "stop")
            behaviour = aws.client("ec2").describe_instance_attribute(
                InstanceId=inst.cloud_id, Attribute="instanceInitiatedShutdownBehavior")
            assert behaviour["InstanceInitiatedShutdownBehavior"]["Value"] == "stop"
            rules = json.loads((root / "agent" / "rules.json").read_text())
            assert rules["budget"]["cap"] == 20.0 and rules["budget"]["action"] == "stop"
            assert pid > 0 and not pid_gone(pid)  # the agent runs with the rules
            # the machine with none gets Preferences' default, and EC2 follows it
            row = ledger.get(none.id)
            assert row is not None and (row.budget, row.on_budget) == (50.0, "terminate")
            behaviour = aws.client("ec2").describe_instance_attribute(
                InstanceId=bare.cloud_id, Attribute="instanceInitiatedShutdownBehavior")
            assert behaviour["InstanceInitiatedShutdownBehavior"]["Value"] == "terminate"
            assert systemd.main_pid(UNIT) == pid  # supervised by the unit
        finally:
            systemd.shutdown(UNIT)
            if pid and not pid_gone(pid):
                os.kill(pid, signal.SIGTERM)
                wait_for(lambda: pid_gone(pid), 30, "the agent to stop")
