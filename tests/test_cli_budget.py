"""``gpudesk budget ID AMOUNT``: the ledger, the cloud's cap and the agent's rules all move, and
the command says what each now holds. Against moto with a real sshd standing for the machine,
and against the Tencent Cloud stand-in; the cloud's cap is read back from the clouds."""
# ruff: noqa: F811 - fixtures imported from fixtures_* arrive as parameters

from __future__ import annotations

import json
import os
import signal
import time
from datetime import UTC
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from fixtures_agent import pid_gone
from fixtures_agent import wait_for
from fixtures_aws import MotoAws  # noqa: F401
from fixtures_aws import aws  # noqa: F401
from fixtures_aws import moto_server  # noqa: F401
from fixtures_keyring import memory_keyring  # noqa: F401
from fixtures_sshd import SshdServer  # noqa: F401
from fixtures_sshd import sshd  # noqa: F401
from fixtures_telemetry import PYTHON
from fixtures_tencent import tencent  # noqa: F401
from fixtures_tencent import tencent_creds  # noqa: F401
from fixtures_tencent import tencent_server  # noqa: F401
from tencent_standin import TencentStandin

from gpudesk.cli.entry import main
from gpudesk.services.cloud import credentials
from gpudesk.services.cloud.accounts import TENCENT_ENDPOINT_ENV
from gpudesk.services.cloud.providers.base import Credentials
from gpudesk.services.cloud.providers.base import LaunchRequest
from gpudesk.services.cloud.providers.tencent import TencentProvider
from gpudesk.services.core.settings import Settings
from gpudesk.services.core.settings import save_settings
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine
from gpudesk.services.remote.host_keys import PinStore
from gpudesk.services.remote.ssh_config import host_alias

R = "us-east-1"
HOUR = 3600.0


def _at(text: str) -> float:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()


def test_budget_moves_ec2_and_the_agent_on_a_reachable_machine(
        aws: MotoAws, memory_keyring: Any, sshd: SshdServer, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    credentials.save_credentials(aws.credentials)
    aws.publish_dlami(R)
    provider = aws.provider()
    group = provider.ensure_security_group(R, "203.0.113.7/32")
    inst = provider.run_instance(LaunchRequest("m-clibud001", R, "g5.xlarge",
                                               security_group=group, on_budget="stop"))
    root = tmp_path / "machine-root"
    since = time.time() - HOUR  # an hour at $3.6
    with Ledger() as ledger:
        m = ledger.add(Machine(
            id="m-clibud001", provider="aws", region=R, cloud_id=inst.cloud_id,
            state="running", running_since=since, launched_at=since, price_per_hour=3.6,
            budget=20.0, on_budget="stop", enforced_by="agent,shutdown-behavior",
            public_ip=sshd.host, ssh_port=sshd.port, ssh_user=sshd.user,
            key_file=str(sshd.client_key), remote_root=str(root), remote_python=PYTHON))
        from gpudesk.services.remote.first_boot import _paramiko_key

        PinStore().pin(host_alias(m), _paramiko_key(sshd.host_key_line))
    pid = 0
    try:
        assert main(["budget", m.id, "30", "--on-budget", "terminate", "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        pid = out["agent"]["pid"] or 0
        assert pid > 0 and not pid_gone(pid)  # the agent runs with the new rules
        # the ledger
        assert out["ledger"] == {"budget": 30.0, "currency": "USD", "action": "terminate",
                                 "previous_budget": 20.0, "previous_action": "stop"}
        with Ledger() as ledger:
            row = ledger.get(m.id)
            steps = [e.step for e in ledger.events(m.id)]
        assert row is not None and (row.budget, row.on_budget) == (30.0, "terminate")
        assert steps.index("budget") < steps.index("guard-requested")
        # EC2, asked directly: an OS shutdown now terminates it
        behaviour = aws.client("ec2").describe_instance_attribute(
            InstanceId=inst.cloud_id, Attribute="instanceInitiatedShutdownBehavior")
        assert behaviour["InstanceInitiatedShutdownBehavior"]["Value"] == "terminate"
        assert out["cloud"]["says"] == [
            "EC2 says: an OS shutdown terminates the machine (shutdown behaviour)."]
        # the agent, read on the machine
        rules = json.loads((root / "agent" / "rules.json").read_text())
        assert rules["budget"]["cap"] == 30.0 and rules["budget"]["action"] == "terminate"
        assert rules["budget"]["spent_before"] == pytest.approx(3.6, abs=0.05)
        assert out["agent"]["pushed"] is True
        assert out["agent"]["says"].startswith("The machine's agent has the new rules: "
                                               "terminate at 30.00 USD")
        # the desktop
        assert out["desktop"]["cap_usd"] == 30.0 and out["desktop"]["action"] == "terminate"
        assert out["desktop"]["percent"] == pytest.approx(12.0, abs=0.2)
    finally:
        if pid and not pid_gone(pid):
            os.kill(pid, signal.SIGTERM)
            wait_for(lambda: pid_gone(pid), 30, "the agent to stop")


@pytest.fixture
def cvm(tencent: TencentStandin, tencent_creds: Credentials, memory_keyring: Any,
        monkeypatch: pytest.MonkeyPatch) -> Any:
    """The stand-in as every ``gpudesk`` command reaches it: keys in the keyring, endpoint
    from the environment."""
    monkeypatch.setenv(TENCENT_ENDPOINT_ENV, f"http://{tencent.endpoint}")
    credentials.save_credentials(tencent_creds)
    p = TencentProvider(tencent_creds, endpoint=tencent.endpoint, protocol="http")
    yield p
    p.close()


def test_budget_on_tencent_resets_cvms_timer_and_says_the_agent_waits(
        tencent: TencentStandin, cvm: TencentProvider,
        capsys: pytest.CaptureFixture[str]) -> None:
    save_settings(Settings(cny_per_usd=7.2))
    group = cvm.ensure_security_group("ap-guangzhou", "203.0.113.7")
    first = time.time() + HOUR
    inst = cvm.run_instance(LaunchRequest("m-clibud002", "ap-guangzhou", "GN7.2XLARGE32",
                                          zone="ap-guangzhou-3", security_group=group,
                                          cloud_timer_at=first))
    cvm.describe("ap-guangzhou", [inst.cloud_id])  # PENDING → RUNNING
    since = time.time() - 30_000.0  # $30 at $3.6/h
    with Ledger() as ledger:
        m = ledger.add(Machine(
            id="m-clibud002", provider="tencent", region="ap-guangzhou", cloud_id=inst.cloud_id,
            state="running", running_since=since, launched_at=since, price_per_hour=3.6,
            currency="USD", budget=12.0, on_budget="terminate", enforced_by="cloud-timer",
            cloud_timer_at=first))

    def timers() -> list[dict[str, Any]]:
        return [t for t in tencent.state.action_timers.values()
                if t["InstanceId"] == inst.cloud_id and t["Status"] == "UNDO"]

    # ¥360, Tencent's own currency: $50 at ¥7.2/$, $20 left at $3.6/h
    before = time.time()
    assert main(["budget", inst.cloud_id, "360"]) == 0
    text = capsys.readouterr().out
    (timer,) = timers()
    assert before + 20_000 - 2 <= _at(timer["ActionTime"]) <= time.time() + 20_000
    clock = datetime.fromtimestamp(_at(timer["ActionTime"]), UTC).strftime("%Y-%m-%d %H:%M")
    assert "budget 50.00 USD, terminate at it (was 12.00 USD)" in text
    assert "ledger:  50.00 USD, terminate" in text
    assert "desktop: 30.00 of 50.00 USD spent (60 %)" in text
    assert "agent:   gpudesk knows no address of the machine yet: its agent gets the new " \
        "rules at the next connect." in text
    assert f"cloud:   Tencent Cloud says: it terminates the machine itself at {clock} UTC" \
        in text

    # down to $10 with "stop": CVM's timer goes (it only terminates); the desktop stops it
    assert main(["budget", m.id, "10", "--currency", "USD", "--on-budget", "stop",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert timers() == []
    assert out["cloud"]["says"] == [
        "Tencent Cloud says: no time is set at which it ends the machine itself."]
    assert out["desktop"]["action"] == "stop" and out["desktop"]["percent"] >= 300.0
    assert any("gpudesk stops this machine with StopInstances" in line
               for line in out["cloud"]["guard_says"])
    with Ledger() as ledger:
        row = ledger.get(m.id)
    assert row is not None and (row.budget, row.on_budget, row.cloud_timer_at) == (
        10.0, "stop", None)


def test_bad_input_is_refused_in_words(capsys: pytest.CaptureFixture[str]) -> None:
    with Ledger() as ledger:
        ledger.add(Machine(id="m-clibud003", provider="aws", region=R, state="running",
                           price_per_hour=1.0, budget=5.0, on_budget="stop"))
        ledger.add(Machine(id="m-clibud004", provider="aws", state="terminated"))
    for argv, code, words in [
            (["budget", "m-clibud003", "ten"], 2, "AMOUNT: 'ten' is not a number"),
            (["budget", "m-clibud003", "-5"], 2, "a budget must be more than 0 (got -5)"),
            (["budget", "m-clibud003", "0"], 2, "a budget must be more than 0 (got 0)"),
            (["budget", "m-clibud003", "inf"], 2, "'inf' is not a number"),
            (["budget", "m-nope", "5"], 1, "No machine 'm-nope' in the ledger"),
            (["budget", "m-clibud004", "5"], 2, "has ended (terminated)")]:
        assert main(argv) == code, argv
        captured = capsys.readouterr()
        assert words in captured.err and captured.out == ""
    with pytest.raises(SystemExit) as exit_:
        main(["budget", "m-clibud003", "5", "--on-budget", "warn"])
    assert exit_.value.code == 2 and "invalid choice: 'warn'" in capsys.readouterr().err
    with Ledger() as ledger:
        row = ledger.get("m-clibud003")
        assert row is not None and (row.budget, row.on_budget) == (5.0, "stop")
        assert [e.step for e in ledger.events("m-clibud003")] == ["intent"]
