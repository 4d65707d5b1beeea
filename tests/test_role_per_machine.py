"""Issue 29, item 5: on Tencent Cloud and Alibaba Cloud each machine's self-stop role reaches
only that machine, and goes with it.

Neither CAM nor RAM has a condition for "the calling machine", so gpudesk gives each machine
its own role, ``gpudesk-self-stop-<ledger id>``, whose policy allows the stop and terminate
calls only on the instance tagged with that ledger id. Each part real: the roles made through
the provider's own CAM/RAM clients (``instance_role.before_launch``, as the launcher calls it
before RunInstances), machines launched naming them and tagged as gpudesk tags them, the
agent's ``cloud_stop`` signing with the role's temporary keys from a metadata stand-in, and
the stand-ins judging each call against the role's attached policy as CAM and RAM document
it (``tests/role_policy.py``): machine A's role stops A, is refused on B, and is deleted by
the cleanup that follows A's end.
"""
# ruff: noqa: F811 - pytest fixtures imported from the fixture modules arrive as parameters

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from alibabacloud_ecs20140526 import models
from aliyun_standin import IMAGES
from aliyun_standin import AliyunStandin
from aliyun_standin import sdk_client as ecs_client
from darabonba.runtime import RuntimeOptions
from fixtures_aliyun import aliyun  # noqa: F401
from fixtures_aliyun import aliyun_creds  # noqa: F401
from fixtures_aliyun import aliyun_server  # noqa: F401
from fixtures_tencent import tencent  # noqa: F401
from fixtures_tencent import tencent_creds  # noqa: F401
from fixtures_tencent import tencent_server  # noqa: F401
from metadata_standin import MetadataStandin
from tencent_standin import TencentStandin
from tencent_standin import sdk_client as cvm_client

from gpudesk.agent import cloud_stop
from gpudesk.services.cloud import cleanup
from gpudesk.services.cloud import instance_role
from gpudesk.services.cloud.providers import base
from gpudesk.services.cloud.providers.aliyun import AliyunProvider
from gpudesk.services.cloud.providers.base import Credentials
from gpudesk.services.cloud.providers.tencent import TencentProvider
from gpudesk.services.money.ledger import STATE_TERMINATED
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine

A, B = "m-aaaa111111", "m-bbbb222222"
TC_REGION, ALI_REGION = "ap-guangzhou", "cn-hangzhou"
RUNTIME = RuntimeOptions(autoretry=False, max_attempts=1)


def _ledger(tmp_path: Path, provider: str, region: str) -> Ledger:
    ledger = Ledger(tmp_path / "ledger.db")
    for ledger_id in (A, B):
        ledger.add(Machine(id=ledger_id, provider=provider, region=region, state="intent",
                           price_per_hour=8.0, currency="CNY", budget=10.0,
                           on_budget="stop"))
    return ledger


def _roles(ledger: Ledger, provider: Any) -> dict[str, str]:
    """Each machine's role, made before its RunInstances as the launcher makes it."""
    out = {}
    for ledger_id in (A, B):
        got = instance_role.before_launch(ledger, ledger_id, provider)
        assert got.attached, got.why
        out[ledger_id] = got.role
    return out


# ------------------------------------------------------------------ Tencent Cloud

@pytest.fixture
def tc_provider(tencent: TencentStandin, tencent_creds: Credentials) -> TencentProvider:
    return TencentProvider(tencent_creds, endpoint=tencent.endpoint, protocol="http",
                           sleep=lambda _s: None)


def _cvm_machine(tencent: TencentStandin, ledger_id: str, role: str) -> str:
    """A CVM machine naming its role in RunInstances, tagged as gpudesk tags it."""
    client = cvm_client(tencent)
    ids: list[str] = client.call_json("RunInstances", {
        "Placement": {"Zone": "ap-guangzhou-3"}, "InstanceType": "GN7.2XLARGE32",
        "ImageId": "img-gpu22cu12", "InstanceChargeType": "POSTPAID_BY_HOUR",
        "CamRoleName": role, "TagSpecification": [{"ResourceType": "instance", "Tags": [
            {"Key": base.TAG_MANAGED, "Value": "1"},
            {"Key": base.TAG_LEDGER, "Value": ledger_id}]}]})["Response"]["InstanceIdSet"]
    for _ in range(3):
        client.call_json("DescribeInstances", {"InstanceIds": ids})
    return ids[0]


def _cvm_state(tencent: TencentStandin, iid: str) -> str:
    answer = cvm_client(tencent).call_json("DescribeInstances", {"InstanceIds": [iid]})
    return str(answer["Response"]["InstanceSet"][0]["InstanceState"])


def test_tencent_each_machine_has_its_own_role_that_reaches_only_itself(
        tencent: TencentStandin, tc_provider: TencentProvider, tmp_path: Path) -> None:
    ledger = _ledger(tmp_path, "tencent", TC_REGION)
    roles = _roles(ledger, tc_provider)
    # two machines, two roles, each with a policy of its own name scoped to its ledger id
    assert roles == {A: f"gpudesk-self-stop-{A}", B: f"gpudesk-self-stop-{B}"}
    assert sorted(tencent.state.roles) == sorted(roles.values())
    for ledger_id, role in roles.items():
        (policy,) = [p for p in tencent.state.policies.values() if p["PolicyName"] == role]
        doc = json.loads(policy["PolicyDocument"])
        assert doc["statement"][0]["condition"] == {"for_any_value:string_equal": {
            "qcs:resource_tag": [f"{base.TAG_LEDGER}&{ledger_id}"]}}
        assert (role, policy["PolicyId"]) in tencent.state.attached
    # the rules the machine's agent runs name its own role
    m = ledger.get(A)
    assert m is not None
    assert instance_role.rules_commands(m)["stop"][3:5] == ("--role", roles[A])
    iid = {ledger_id: _cvm_machine(tencent, ledger_id, role) for ledger_id, role in roles.items()}
    endpoint = f"http://{tencent.endpoint}/"
    with MetadataStandin("tencent", roles[A], iid[A], TC_REGION,
                         lambda: tencent.role_session(roles[A])) as md:
        # A's role on B: refused as CAM refuses it; B runs on
        with pytest.raises(cloud_stop.CloudStopError, match="AuthFailure.UnauthorizedOperation"):
            cloud_stop.stop_self("tencent", "stop", roles[A], instance_id=iid[B],
                                 metadata=md.url, endpoint=endpoint)
        with pytest.raises(cloud_stop.CloudStopError, match="AuthFailure.UnauthorizedOperation"):
            cloud_stop.stop_self("tencent", "terminate", roles[A], instance_id=iid[B],
                                 metadata=md.url, endpoint=endpoint)
        assert _cvm_state(tencent, iid[B]) == "RUNNING"
        # A's role on A: accepted, in stop-charging mode
        said = cloud_stop.stop_self("tencent", "stop", roles[A], metadata=md.url,
                                    endpoint=endpoint)
        assert said == f"CVM StopInstances {iid[A]} (STOP_CHARGING): accepted"
        said = cloud_stop.stop_self("tencent", "terminate", roles[A], metadata=md.url,
                                    endpoint=endpoint)
        assert said == f"CVM TerminateInstances {iid[A]}: accepted"
    # A ended: the cleanup that follows deletes its role and policy, and only those
    ledger.update(A, state=STATE_TERMINATED, cloud_id=iid[A])
    ledger.update(B, state="running", cloud_id=iid[B])
    a = ledger.get(A)
    assert a is not None and instance_role.role_to_delete(ledger, a) == roles[A]
    report = cleanup.run(ledger, lambda _name: tc_provider)
    assert f"{A} {TC_REGION}" in report.done
    assert sorted(tencent.state.roles) == [roles[B]]
    assert [p["PolicyName"] for p in tencent.state.policies.values()] == [roles[B]]
    assert any(e.step == instance_role.STEP_DELETED and e.detail == roles[A]
               for e in ledger.events(A))
    assert instance_role.role_to_delete(ledger, a) == ""  # asked once, not at every reconcile
    cleanup.run(ledger, lambda _name: tc_provider)
    assert tencent.calls["DeleteRole"] == 1


def test_tencent_a_refused_role_deletion_is_asked_again(
        tencent: TencentStandin, tc_provider: TencentProvider, tmp_path: Path) -> None:
    ledger = _ledger(tmp_path, "tencent", TC_REGION)
    roles = _roles(ledger, tc_provider)
    ledger.update(A, state=STATE_TERMINATED, cloud_id="ins-gone0001")
    ledger.update(B, state="running", cloud_id="ins-other0001")  # no launch in flight
    tencent.fail_next("DeleteRole", "InternalError", "try later")
    report = cleanup.run(ledger, lambda _name: tc_provider)
    assert f"{A} {TC_REGION}" in report.waiting and roles[A] in tencent.state.roles
    assert any(e.step == instance_role.STEP_DELETE_REFUSED for e in ledger.events(A))
    report = cleanup.run(ledger, lambda _name: tc_provider)
    assert f"{A} {TC_REGION}" in report.done and roles[A] not in tencent.state.roles


# ------------------------------------------------------------------ Alibaba Cloud

@pytest.fixture
def ali_provider(aliyun: AliyunStandin, aliyun_creds: Credentials) -> AliyunProvider:
    return AliyunProvider(aliyun_creds, endpoint=aliyun.endpoint, protocol="http",
                          sleep=lambda _s: None)


def _ecs_machine(aliyun: AliyunStandin, ledger_id: str, role: str, vswitch: str,
                 group: str) -> str:
    answer = ecs_client(aliyun).run_instances_with_options(models.RunInstancesRequest(
        region_id=ALI_REGION, zone_id="cn-hangzhou-h", amount=1,
        instance_type="ecs.gn7i-c8g1.2xlarge", image_id=IMAGES[0]["ImageId"],
        v_switch_id=vswitch, security_group_id=group, ram_role_name=role,
        tag=[models.RunInstancesRequestTag(key=base.TAG_MANAGED, value="1"),
             models.RunInstancesRequestTag(key=base.TAG_LEDGER, value=ledger_id)],
        instance_charge_type="PostPaid"), RUNTIME)
    iid = str(answer.body.instance_id_sets.instance_id_set[0])
    with aliyun._lock:
        aliyun.state.instances[iid]["Status"] = "Running"
    return iid


def test_aliyun_each_machine_has_its_own_role_that_reaches_only_itself(
        aliyun: AliyunStandin, ali_provider: AliyunProvider, tmp_path: Path) -> None:
    ledger = _ledger(tmp_path, "aliyun", ALI_REGION)
    roles = _roles(ledger, ali_provider)
    assert roles == {A: f"gpudesk-self-stop-{A}", B: f"gpudesk-self-stop-{B}"}
    assert sorted(aliyun.state.roles) == sorted(roles.values())
    for ledger_id, role in roles.items():
        doc = json.loads(aliyun.state.policies[role]["_document"])
        assert doc["Statement"][0]["Condition"] == {"StringEquals": {
            f"ecs:tag/{base.TAG_LEDGER}": ledger_id}}
        assert (role, role) in aliyun.state.attached
    vpc = aliyun.add_vpc(ALI_REGION)
    vswitch, group = aliyun.add_vswitch(vpc, "cn-hangzhou-h"), aliyun.add_group(vpc)
    iid = {ledger_id: _ecs_machine(aliyun, ledger_id, role, vswitch, group)
           for ledger_id, role in roles.items()}
    endpoint = f"http://{aliyun.endpoint}/"
    with MetadataStandin("aliyun", roles[A], iid[A], ALI_REGION,
                         lambda: aliyun.role_session(roles[A])) as md:
        for action in ("stop", "terminate"):  # A's role on B: Forbidden.RAM
            with pytest.raises(cloud_stop.CloudStopError, match="Forbidden.RAM"):
                cloud_stop.stop_self("aliyun", action, roles[A], instance_id=iid[B],
                                     metadata=md.url, endpoint=endpoint)
        assert aliyun.state.instances[iid[B]]["Status"] == "Running"
        said = cloud_stop.stop_self("aliyun", "stop", roles[A], metadata=md.url,
                                    endpoint=endpoint)
        assert said == f"ECS StopInstances {iid[A]} (StopCharging): accepted"
        said = cloud_stop.stop_self("aliyun", "terminate", roles[A], metadata=md.url,
                                    endpoint=endpoint)
        assert said == f"ECS DeleteInstances {iid[A]}: accepted"
    assert iid[A] not in aliyun.state.instances and aliyun.internal_errors == []
    ledger.update(A, state=STATE_TERMINATED, cloud_id=iid[A])
    ledger.update(B, state="running", cloud_id=iid[B])
    report = cleanup.run(ledger, lambda _name: ali_provider)
    assert f"{A} {ALI_REGION}" in report.done
    assert sorted(aliyun.state.roles) == [roles[B]] and sorted(aliyun.state.policies) == [
        roles[B]]
    assert aliyun.state.attached == {(roles[B], roles[B])}
    # a deleted role's keys reach nothing, its own machine's kin included
    with MetadataStandin("aliyun", roles[A], iid[B], ALI_REGION,
                         lambda: aliyun.role_session(roles[A])) as md, \
            pytest.raises(cloud_stop.CloudStopError, match="Forbidden.RAM"):
        cloud_stop.stop_self("aliyun", "stop", roles[A], metadata=md.url, endpoint=endpoint)
