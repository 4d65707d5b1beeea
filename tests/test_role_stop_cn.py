"""Issue 21: with its role, a Tencent Cloud or Alibaba Cloud machine stops its own bill at the
budget ("stop"), with no desktop.

The whole path, each part real: the rules gpudesk writes for the machine
(``machine_rules.agent_rules`` from its ledger row), the agent's guard
(``gpudesk/agent/guard.py``) crossing the budget on its clock and running the rules' command
as a process (``gpudesk/agent/cloud_stop.py``), the role's temporary keys from a metadata
stand-in, and the CVM/ECS stand-in checking the signature, stopping the machine in
stop-charging mode and keeping the bill (``cloud_bill``): the compute part stops, the disk
bills on. A refused call is tried again, never turned into a power-off from inside (which
keeps charging on those clouds); without the role the agent only warns.
"""

# ruff: noqa: F811 - pytest fixtures imported from fixtures_* arrive as parameters
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from alibabacloud_ecs20140526 import models
from aliyun_standin import IMAGES
from aliyun_standin import AliyunStandin
from aliyun_standin import sdk_client as ecs_client
from cloud_bill import Bill
from darabonba.runtime import RuntimeOptions
from fixtures_aliyun import aliyun  # noqa: F401
from fixtures_aliyun import aliyun_server  # noqa: F401
from fixtures_tencent import tencent  # noqa: F401
from fixtures_tencent import tencent_server  # noqa: F401
from metadata_standin import MetadataStandin
from tencent_standin import TencentStandin
from tencent_standin import sdk_client as cvm_client

from gpudesk.agent.clock import SimClock
from gpudesk.agent.events import EventLog
from gpudesk.agent.guard import RETRY_S
from gpudesk.agent.guard import Guard
from gpudesk.agent.rules import parse_rules
from gpudesk.services.cloud import guard as guards
from gpudesk.services.cloud import instance_role
from gpudesk.services.core.settings import Settings
from gpudesk.services.money.ledger import Machine
from gpudesk.services.remote.machine_rules import agent_rules
from gpudesk.services.remote.machine_rules import budget_action
from gpudesk.services.remote.machine_rules import idle_action

# each machine's own role (issue 29): the one its rules name, from its ledger id
TC_ROLE = instance_role.role_name("tencent", "m-tencent-1")
ALI_ROLE = instance_role.role_name("aliyun", "m-aliyun-1")
TMP_ID = "AKIDroleStopKey00000000000000000001"
TMP_SECRET = "roleStopSecret0123456789abcdefgh"
TMP_TOKEN = "role-stop-session-token-0123456789"
T0 = 1_800_000_000.0
HOUR = 3600.0
SETTINGS = Settings(cny_per_usd=7.2, machine_budget_usd=1.0, budget_action="stop",
                    idle_action="stop")


class BillClock:
    """The cloud's clock for its bill, moved by the test."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


def _row(provider: str, region: str, cloud_id: str, *, role: bool) -> Machine:
    """The ledger's row of a launched machine: 1 USD budget at 1.2 USD/h, "stop"."""
    return Machine(id=f"m-{provider}-1", provider=provider, region=region, cloud_id=cloud_id,
                   state="running", price_per_hour=1.2, currency="USD", disk_gb=100.0,
                   budget=1.0, on_budget="stop",
                   enforced_by="agent,instance-role" if role else "agent")


def _agent(tmp_path: Path, m: Machine, metadata: str, endpoint: str
           ) -> tuple[Guard, SimClock]:
    """The agent's guard on the rules gpudesk writes for ``m``; the machine's network is
    127.0.0.1 (its metadata and the cloud's endpoint named on the role's command)."""
    rules = agent_rules(m, SETTINGS, None, now=T0).to_json()
    stop = list(rules["commands"]["stop"])
    assert stop[0] == instance_role.AGENT_COMMAND and "--or-poweroff" not in stop
    rules["commands"] = {action: [*argv, "--metadata", metadata, "--endpoint", endpoint]
                         for action, argv in rules["commands"].items()}
    rules["runs_dir"] = str(tmp_path / "runs")
    clock = SimClock(T0)
    guard = Guard(parse_rules(rules), EventLog(tmp_path / "events", clock),
                  runs_dir=tmp_path / "runs", log_dir=tmp_path, clock=clock, boot="boot-1")
    return guard, clock


def _runs(events: list[Any]) -> list[dict[str, Any]]:
    return [dict(e) for e in events if e.get("kind") == "action-run"]


# ------------------------------------------------------------------ the rules

@pytest.mark.parametrize("provider", ["tencent", "aliyun"])
def test_stop_is_the_agents_with_the_role_and_a_warning_without(provider: str) -> None:
    with_role = agent_rules(_row(provider, "r", "i-1", role=True), SETTINGS, None, now=T0)
    assert with_role.budget is not None and with_role.budget.action == "stop"
    assert with_role.idle is not None and with_role.idle.action == "stop"
    assert with_role.commands["stop"][:2] == (instance_role.AGENT_COMMAND, "--provider")
    assert "--or-poweroff" not in with_role.commands["stop"]
    without = agent_rules(_row(provider, "r", "i-1", role=False), SETTINGS, None, now=T0)
    assert without.budget is not None and without.budget.action == "warn"
    assert without.idle is not None and without.idle.action == "warn"
    assert without.commands == {}
    assert (budget_action(provider, "stop"), idle_action(provider, "stop")) == ("warn", "warn")
    assert budget_action(provider, "stop", role=True) == "stop"
    assert budget_action(provider, "terminate") == "terminate"


@pytest.mark.parametrize(("provider", "mode"), [("tencent", "STOP_CHARGING"),
                                                ("aliyun", "StopCharging")])
def test_the_words_say_the_agent_stops_it_not_only_the_desktop(provider: str,
                                                                mode: str) -> None:
    said = guards.english(_row(provider, "r", "i-1", role=True))
    text = " ".join(said)
    assert "needs gpudesk running and online" not in text
    assert "with the laptop shut nothing stops the bill: choose" not in text
    assert any("also asks" in s and "to stop the machine" in s for s in said)
    assert any(f"stops it in {mode} mode" in s and "disk (100 GB)" in s for s in said)
    # the first-boot guard makes the call too (role named at creation, cloud_stop bundled)
    assert not any("first-boot guard" in s or "laptop shut nothing stops" in s for s in said)
    plain = " ".join(guards.english(_row(provider, "r", "i-1", role=False)))
    assert "needs gpudesk running and online" in plain


# ------------------------------------------------------------------ Tencent Cloud

def _cvm_machine(tencent: TencentStandin) -> str:
    tencent.add_role(TC_ROLE)  # CVM refuses a RunInstances naming a role it does not know
    client = cvm_client(tencent)
    ids: list[str] = client.call_json("RunInstances", {
        "Placement": {"Zone": "ap-guangzhou-3"}, "InstanceType": "GN7.2XLARGE32",
        "ImageId": "img-gpu22cu12", "InstanceChargeType": "POSTPAID_BY_HOUR",
        "SystemDisk": {"DiskType": "CLOUD_PREMIUM", "DiskSize": 100}, "CamRoleName": TC_ROLE,
        "TagSpecification": [{"ResourceType": "instance",
                              "Tags": [{"Key": "gpudesk", "Value": "1"}]}]})[
        "Response"]["InstanceIdSet"]
    for _ in range(3):
        client.call_json("DescribeInstances", {"InstanceIds": ids})
    return ids[0]


def _cvm(tencent: TencentStandin, iid: str) -> dict[str, Any]:
    answer = cvm_client(tencent).call_json("DescribeInstances", {"InstanceIds": [iid]})
    found: dict[str, Any] = answer["Response"]["InstanceSet"][0]
    return found


def _tencent_keys() -> dict[str, str]:
    return {"TmpSecretId": TMP_ID, "TmpSecretKey": TMP_SECRET, "Token": TMP_TOKEN,
            "Expiration": "2030-01-01T00:00:00Z", "Code": "Success"}


def test_tencent_machine_with_its_role_stops_its_compute_bill_at_the_budget(
        tencent: TencentStandin, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    clock = BillClock()
    bill = Bill("tencent", clock)
    tencent.bill = bill
    try:
        iid = _cvm_machine(tencent)
        tencent.add_secret(TMP_ID, TMP_SECRET)
        assert bill.state_of(iid) == "compute"
        with MetadataStandin("tencent", TC_ROLE, iid, "ap-guangzhou", _tencent_keys) as md:
            guard, agent_clock = _agent(tmp_path, _row("tencent", "ap-guangzhou", iid,
                                                       role=True),
                                        md.url, f"http://{tencent.endpoint}/")
            agent_clock.advance(HOUR)  # 1.2 USD of 1.0: over the budget
            clock.now = T0 + HOUR
            tencent.fail_next("StopInstances", "RequestLimitExceeded", "too frequent")
            seen = guard.tick()
            assert [(e["attempt"], e["rc"]) for e in _runs(seen)] == [(1, 1)]  # again
            assert _cvm(tencent, iid)["InstanceState"] == "RUNNING"
            agent_clock.advance(RETRY_S)
            clock.now += RETRY_S
            seen += guard.tick()
            assert [(e["attempt"], e["rc"]) for e in _runs(seen)] == [(1, 1), (2, 0)]
            assert f"GET /latest/meta-data/cam/security-credentials/{TC_ROLE}" in md.hits
        log = (tmp_path / "actions.log").read_text()
        assert f"CVM StopInstances {iid} (STOP_CHARGING): accepted" in log
        assert "powering off" not in log  # a refusal is tried again, never a shutdown
        stop = tencent.params("StopInstances")[-1]
        assert stop["StoppedMode"] == "STOP_CHARGING" and stop["InstanceIds"] == [iid]
        assert _cvm(tencent, iid)["InstanceState"] in ("STOPPING", "STOPPED")
        clock.now += 60.0
        state = _cvm(tencent, iid)  # the cloud finishes the stop
        assert (state["InstanceState"], state["StopChargingMode"]) == ("STOPPED",
                                                                      "STOP_CHARGING")
        assert bill.state_of(iid) == "disk"
        at_stop = bill.parts(clock.now)
        later = bill.parts(clock.now + 30 * 24 * HOUR)
        assert later.running == pytest.approx(at_stop.running)  # the compute bill ended
        assert later.keep == 0.0
        assert later.disk > at_stop.disk  # the disk bills on (said)
        # the compute billed until the stop the retry asked for: 8.68 CNY/h, nothing after
        assert at_stop.running == pytest.approx(8.68 * (HOUR + RETRY_S) / HOUR, rel=1e-3)
    finally:
        tencent.bill = None


# ------------------------------------------------------------------ Alibaba Cloud

def _ecs_machine(aliyun: AliyunStandin) -> str:
    vpc_id = aliyun.add_vpc("cn-hangzhou")
    vswitch = aliyun.add_vswitch(vpc_id, "cn-hangzhou-h")
    group = aliyun.add_group(vpc_id)
    aliyun.add_role(ALI_ROLE)  # ECS refuses a RunInstances naming a role it does not know
    answer = ecs_client(aliyun).run_instances_with_options(models.RunInstancesRequest(
        region_id="cn-hangzhou", zone_id="cn-hangzhou-h", amount=1,
        instance_type="ecs.gn7i-c8g1.2xlarge", image_id=IMAGES[0]["ImageId"],
        v_switch_id=vswitch, security_group_id=group, ram_role_name=ALI_ROLE,
        system_disk=models.RunInstancesRequestSystemDisk(category="cloud_essd", size="100"),
        instance_charge_type="PostPaid"), RuntimeOptions(autoretry=False, max_attempts=1))
    iid = str(answer.body.instance_id_sets.instance_id_set[0])
    with aliyun._lock:
        aliyun.state.instances[iid]["Status"] = "Running"
        aliyun._bill_sync()
    return iid


def _aliyun_keys() -> dict[str, str]:
    return {"AccessKeyId": "STS.roleStopKey0001", "AccessKeySecret": TMP_SECRET,
            "SecurityToken": TMP_TOKEN, "Expiration": "2030-01-01T00:00:00Z",
            "Code": "Success"}


def test_aliyun_machine_with_its_role_stops_its_compute_bill_at_the_budget(
        aliyun: AliyunStandin, tmp_path: Path) -> None:  # noqa: F811
    clock = BillClock()
    bill = Bill("aliyun", clock)
    aliyun.bill = bill
    aliyun.clock = clock
    try:
        iid = _ecs_machine(aliyun)
        aliyun.add_secret("STS.roleStopKey0001", TMP_SECRET)
        assert bill.state_of(iid) == "compute"
        with MetadataStandin("aliyun", ALI_ROLE, iid, "cn-hangzhou", _aliyun_keys) as md:
            guard, agent_clock = _agent(tmp_path, _row("aliyun", "cn-hangzhou", iid,
                                                       role=True),
                                        md.url, f"http://{aliyun.endpoint}/")
            agent_clock.advance(HOUR)
            clock.now = T0 + HOUR
            assert [(e["attempt"], e["rc"]) for e in _runs(guard.tick())] == [(1, 0)]
            assert f"GET /latest/meta-data/ram/security-credentials/{ALI_ROLE}" in md.hits
        log = (tmp_path / "actions.log").read_text()
        assert f"ECS StopInstances {iid} (StopCharging): accepted" in log
        stop = aliyun.params("StopInstances")[-1]
        assert stop["StoppedMode"] == "StopCharging"
        with aliyun._lock:
            raw = aliyun.state.instances[iid]
            raw.update(Status="Stopped")  # the cloud finishes the stop it accepted
            aliyun._bill_sync()
            assert raw["StoppedMode"] == "StopCharging"
        assert bill.state_of(iid) == "disk"
        at_stop = bill.parts(clock.now)
        later = bill.parts(clock.now + 30 * 24 * HOUR)
        assert later.running == pytest.approx(at_stop.running)
        assert later.keep == 0.0 and later.disk > at_stop.disk
        assert at_stop.running == pytest.approx(16.0, rel=0.01)
    finally:
        aliyun.bill = None
        aliyun.clock = None
