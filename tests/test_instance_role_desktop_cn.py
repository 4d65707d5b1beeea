"""Issue 21 on the desktop's side for Tencent Cloud and Alibaba Cloud: a launch through the
real launcher makes (or finds) the CAM/RAM role, attaches its policy and binds it to the
machine on the stand-ins, which check the SDKs' real signatures (TC3 for service ``cam``,
ACS3 for RAM 2015-05-01), the documented limits (tests/cloud_limits.py), the role's trust
principal and the machine's region. A second launch reuses the role. Where CAM/RAM refuse
the key, the launch still succeeds, the ledger says why in the cloud's words and the
guard's words (``gpudesk show ID --json``) say the machine has no role."""

# ruff: noqa: F811 - pytest fixtures imported from fixtures_* arrive as parameters
from __future__ import annotations

import asyncio
import contextlib
import io
import json
from collections.abc import Callable
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import cloud_limits
import pytest
from aliyun_standin import AliyunStandin
from fixtures_aliyun import aliyun  # noqa: F401
from fixtures_aliyun import aliyun_creds  # noqa: F401
from fixtures_aliyun import aliyun_server  # noqa: F401
from fixtures_keyring import memory_keyring  # noqa: F401
from fixtures_tencent import tencent  # noqa: F401
from fixtures_tencent import tencent_creds  # noqa: F401
from fixtures_tencent import tencent_server  # noqa: F401
from tencent_standin import TencentStandin
from tencent_standin import sdk_client as cvm_client

from gpudesk.agent import cloud_stop
from gpudesk.services.cloud import credentials
from gpudesk.services.cloud import guard
from gpudesk.services.cloud import instance_role
from gpudesk.services.cloud.accounts import TENCENT_ENDPOINT_ENV
from gpudesk.services.cloud.launcher import Launcher
from gpudesk.services.cloud.launcher import LaunchPlan
from gpudesk.services.cloud.providers import base
from gpudesk.services.cloud.providers.aliyun import AliyunProvider
from gpudesk.services.cloud.providers.base import Credentials
from gpudesk.services.cloud.providers.tencent import TencentProvider
from gpudesk.services.core.settings import Settings
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine
from gpudesk.services.remote.machine_rules import agent_rules

FIXED_ID = "m-00000000f1"  # a launch's ledger id, where a test must know it beforehand
ROLE = instance_role.role_name("tencent", FIXED_ID)  # the same name on both clouds


def own_role(m: Machine) -> str:
    """Machine ``m``'s own self-stop role (issue 29: one per machine)."""
    return instance_role.role_name(m.provider, m.id)


@pytest.fixture
def fixed_id(monkeypatch: pytest.MonkeyPatch) -> str:
    """The next launch gets :data:`FIXED_ID` (its role's name known before it runs)."""
    import gpudesk.services.cloud.launcher as launcher_module

    monkeypatch.setattr(launcher_module, "new_ledger_id", lambda: FIXED_ID)
    return FIXED_ID
ADDRESS = "203.0.113.7/32"
CAM_AND_ROLE = frozenset({"GetRole", "CreateRole", "ListPolicies", "CreatePolicy",
                          "AttachRolePolicy", "RunInstances"})
RAM_AND_ROLE = frozenset({"GetRole", "CreateRole", "GetPolicy", "CreatePolicy",
                          "AttachPolicyToRole", "RunInstances"})
TENCENT_PLAN = LaunchPlan(provider="tencent", instance_type="GN7.2XLARGE32",
                          region="ap-guangzhou", allow_from=ADDRESS, gpu="T4", gpus=1,
                          price_per_hour=1.209, wait_ssh=False, budget=20.0,
                          on_budget="terminate")
ALIYUN_PLAN = LaunchPlan(provider="aliyun", instance_type="ecs.gn7i-c8g1.2xlarge",
                         region="cn-hangzhou", allow_from=ADDRESS, gpu="A10", gpus=1,
                         price_per_hour=2.0, disk_gb=100, wait_ssh=False, budget=20.0,
                         on_budget="terminate")


@pytest.fixture
def ledger(gpudesk_home: Any) -> Iterator[Ledger]:
    with Ledger() as ledger:
        yield ledger


def _show(machine_id: str) -> dict[str, Any]:
    """``gpudesk show ID --json`` in this process."""
    from gpudesk.cli.entry import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["show", machine_id, "--json"]) == 0
    data: dict[str, Any] = json.loads(out.getvalue())
    return data


def _no_limit_broken(cloud: str, requests: list[tuple[str, str, dict[str, Any]]],
                     actions: frozenset[str]) -> None:
    sent = [(a, p) for a, _r, p in requests if a in actions]
    assert {a for a, _ in sent} == actions  # every role path was really taken
    assert [v for a, p in sent for v in cloud_limits.check(cloud, a, p)] == []
    assert actions <= cloud_limits.actions(cloud)  # and each has its row of limits


# --------------------------------------------------------------------------- Tencent Cloud


@pytest.fixture
def cvm(tencent: TencentStandin, tencent_creds: Credentials, memory_keyring: Any,
        monkeypatch: pytest.MonkeyPatch) -> TencentStandin:
    """The stand-in, with the keys in the keyring the launcher reads them from."""
    monkeypatch.setenv(TENCENT_ENDPOINT_ENV, f"http://{tencent.endpoint}")
    credentials.save_credentials(tencent_creds)
    return tencent


def _launch_tencent(ledger: Ledger, plan: LaunchPlan = TENCENT_PLAN) -> Machine:
    m = asyncio.run(Launcher(ledger, poll_s=0.01).launch(plan)).machine
    got = ledger.get(m.id)
    assert got is not None and got.state == "running"
    return got


def test_tencent_launch_makes_each_machine_its_own_cam_role_and_binds_it(
        cvm: TencentStandin, ledger: Ledger) -> None:
    first, second = _launch_tencent(ledger), _launch_tencent(ledger)
    # one role and one policy per machine (issue 29), each attached to its own role
    assert (cvm.calls["GetRole"], cvm.calls["CreateRole"], cvm.calls["CreatePolicy"]) == (
        2, 2, 2)
    assert sorted(cvm.state.roles) == sorted([own_role(first), own_role(second)])
    for m in (first, second):
        role = cvm.state.roles[own_role(m)]
        trust, policy = instance_role.tencent_documents(m.id)
        assert json.loads(role["PolicyDocument"]) == trust
        assert role["_services"] == ["cvm.qcloud.com"] and role["ConsoleLogin"] == 0
        assert {"Key": base.TAG_MANAGED, "Value": "1"} in role["Tags"]
        assert {"Key": base.TAG_LEDGER, "Value": m.id} in role["Tags"]
        (made,) = [p for p in cvm.state.policies.values() if p["PolicyName"] == own_role(m)]
        assert json.loads(made["PolicyDocument"]) == policy
        assert {"Key": base.TAG_MANAGED, "Value": "1"} in made["Tags"]
        assert (own_role(m), made["PolicyId"]) in cvm.state.attached
    assert len(cvm.state.attached) == 2
    # CVM itself holds the binding of each machine
    for m in (first, second):
        assert cvm.role_of(m.cloud_id) == own_role(m)
        assert "instance-role" in m.enforced_by.split(",")
        steps = [e.step for e in ledger.events(m.id)]
        # the role is made and recorded before anything bills, then named at creation
        assert steps.index("instance-role-requested") < steps.index("instance-role") \
            < steps.index("instance-role-at-creation") < steps.index("request")
        assert "instance-role-refused" not in steps
    # bound by RunInstances itself (CamRoleName): from the machine's first second
    assert [p.get("CamRoleName") for p in cvm.params("RunInstances")] == [
        own_role(first), own_role(second)]
    assert cvm.calls["ModifyInstancesAttribute"] == 0
    _no_limit_broken("tencent", cvm.requests, CAM_AND_ROLE)
    # the agent gets the role's commands, with the region and the machine named
    commands = agent_rules(first, Settings(), ledger).to_json()["commands"]
    assert commands["terminate"] == [
        cloud_stop.COMMAND, "--provider", "tencent", "--role", own_role(first), "--action",
        "terminate",
        "--region", "ap-guangzhou", "--instance", first.cloud_id]
    assert "--or-poweroff" not in commands["stop"]
    says = _show(first.id)["guard_says"]
    assert any("asks Tencent Cloud itself to terminate the machine" in s for s in says), says
    assert not any("no role" in s for s in says)


def test_tencent_cam_refused_the_launch_goes_on_without_a_role(
        cvm: TencentStandin, ledger: Ledger) -> None:
    cvm.cam_denied = True
    m = _launch_tencent(ledger)
    assert m.cloud_id in cvm.state.instances and cvm.role_of(m.cloud_id) == ""
    assert cvm.state.roles == {} and cvm.calls["ModifyInstancesAttribute"] == 0
    assert "instance-role" not in m.enforced_by.split(",")
    (refused,) = [e.detail for e in ledger.events(m.id) if e.step == "instance-role-refused"]
    assert refused.startswith("AuthFailure.UnauthorizedOperation: you are not authorized "
                              "to perform operation (cam:GetRole)"), refused
    assert instance_role.rules_commands(m) == {}
    assert "commands" not in agent_rules(m, Settings(), ledger).to_json()
    says = _show(m.id)["guard_says"]
    (no_role,) = [s for s in says if "no role" in s]
    assert no_role.startswith("This machine has no role to stop itself "
                              "(AuthFailure.UnauthorizedOperation: ")
    assert no_role.endswith("with gpudesk closed, its agent cannot ask Tencent Cloud to stop "
                            "the bill.")
    assert not any("itself to terminate" in s for s in says)


def test_tencent_a_role_cvm_may_not_use_is_refused_not_rewritten(
        cvm: TencentStandin, ledger: Ledger, fixed_id: str) -> None:
    cvm.state.roles[ROLE] = {"RoleId": "1", "RoleName": ROLE, "_services": ["scf.qcloud.com"],
                             "PolicyDocument": json.dumps({"version": "2.0", "statement": [{
                                 "action": "name/sts:AssumeRole", "effect": "allow",
                                 "principal": {"service": ["scf.qcloud.com"]}}]})}
    m = _launch_tencent(ledger)
    (refused,) = [e.detail for e in ledger.events(m.id) if e.step == "instance-role-refused"]
    assert refused == f"the CAM role {ROLE} exists and is not trusted by cvm.qcloud.com"
    assert cvm.calls["CreateRole"] == 0 and cvm.role_of(m.cloud_id) == ""


def test_tencent_standin_holds_cam_and_cvm_to_their_limits(
        cvm: TencentStandin, tencent_creds: Credentials) -> None:
    provider = TencentProvider(tencent_creds, endpoint=cvm.endpoint, protocol="http",
                               sleep=lambda _s: None)
    cam = instance_role._cam_call(provider)

    def code(action: str, params: dict[str, Any]) -> str:
        with pytest.raises(base.ProviderError) as got:
            cam(action, params)
        return got.value.detail.split("]")[0].lstrip("[")

    trust = json.dumps(instance_role.tencent_documents()[0])
    assert code("CreateRole", {"RoleName": "x" * 129, "PolicyDocument": trust}) == (
        "InvalidParameter.RoleNameError")
    assert code("CreateRole", {"RoleName": "a role", "PolicyDocument": trust}) == (
        "InvalidParameter.RoleNameError")
    assert code("CreatePolicy", {"PolicyName": "p", "PolicyDocument": "{" * 6145}) == (
        "InvalidParameter.PolicyDocumentLengthOverLimit")
    assert code("GetRole", {"RoleName": ROLE}) == "InvalidParameter.RoleNotExist"
    assert code("ListPolicies", {"Rp": 201}) == "InvalidParameterValue"
    assert cam("CreateRole", {"RoleName": "x" * 128, "PolicyDocument": trust})["RoleId"]
    # CVM binds only a role that exists and trusts cvm.qcloud.com, to a machine of the region
    (iid,) = cvm_client(cvm).call_json("RunInstances", {
        "Placement": {"Zone": "ap-guangzhou-3"}, "InstanceType": "GN7.2XLARGE32",
        "ImageId": "img-gpu22cu12", "InstanceChargeType": "POSTPAID_BY_HOUR"})[
        "Response"]["InstanceIdSet"]
    with pytest.raises(base.ProviderError, match="CamRoleNameAuthenticateFailed"):
        instance_role.bind_tencent_role(provider, "ap-guangzhou", iid, "no-such-role",
                                        tries=1)
    with pytest.raises(base.ProviderError) as elsewhere:
        instance_role.bind_tencent_role(provider, "ap-shanghai", iid, "x" * 128, tries=1)
    assert elsewhere.value.detail.startswith("[InvalidInstanceId.NotFound]")
    with pytest.raises(base.ProviderError, match="CamRoleNameMalformed"):
        instance_role.bind_tencent_role(provider, "ap-guangzhou", iid, "a role", tries=1)
    instance_role.bind_tencent_role(provider, "ap-guangzhou", iid, "x" * 128, tries=1)
    assert cvm.role_of(iid) == "x" * 128


# --------------------------------------------------------------------------- Alibaba Cloud


@pytest.fixture
def ecs(aliyun: AliyunStandin, aliyun_creds: Credentials, memory_keyring: Any,
        monkeypatch: pytest.MonkeyPatch) -> AliyunStandin:
    from gpudesk.services.cloud.accounts import ALIYUN_ENDPOINT_ENV

    credentials.save_credentials(aliyun_creds)
    monkeypatch.setenv(ALIYUN_ENDPOINT_ENV, f"http://{aliyun.endpoint}")
    return aliyun


@pytest.fixture
def ali(ecs: AliyunStandin, aliyun_creds: Credentials) -> AliyunProvider:
    return AliyunProvider(aliyun_creds, endpoint=ecs.endpoint, protocol="http",
                          sleep=lambda _s: None)


def _launch_aliyun(ledger: Ledger, provider: AliyunProvider,
                   plan: LaunchPlan = ALIYUN_PLAN) -> Machine:
    providers: Callable[[str], AliyunProvider] = lambda _name: provider  # noqa: E731
    m = asyncio.run(Launcher(ledger, providers, poll_s=0.0).launch(plan)).machine  # type: ignore[arg-type]
    got = ledger.get(m.id)
    assert got is not None and got.state == "running"
    return got


def test_aliyun_launch_makes_each_machine_its_own_ram_role_and_attaches_it(
        ecs: AliyunStandin, ali: AliyunProvider, ledger: Ledger) -> None:
    first, second = _launch_aliyun(ledger, ali), _launch_aliyun(ledger, ali)
    assert (ecs.calls["GetRole"], ecs.calls["CreateRole"], ecs.calls["CreatePolicy"]) == (
        2, 2, 2)
    assert sorted(ecs.state.roles) == sorted([own_role(first), own_role(second)])
    for m in (first, second):
        name = own_role(m)
        role = ecs.state.roles[name]
        trust, policy = instance_role.aliyun_documents(m.id)
        assert json.loads(role["AssumeRolePolicyDocument"]) == trust
        assert role["_services"] == ["ecs.aliyuncs.com"] and role["_tags"] == {
            base.TAG_MANAGED: "1", base.TAG_LEDGER: m.id}
        made = ecs.state.policies[name]
        assert json.loads(made["_document"]) == policy
        assert made["_tags"] == {base.TAG_MANAGED: "1", base.TAG_LEDGER: m.id}
        assert made["AttachmentCount"] == 1
    assert ecs.state.attached == {(own_role(m), own_role(m)) for m in (first, second)}
    for m in (first, second):
        assert ecs.role_of(m.cloud_id) == own_role(m)
        assert "instance-role" in m.enforced_by.split(",")
        (detail,) = [e.detail for e in ledger.events(m.id) if e.step == "instance-role"]
        assert detail == f"{own_role(m)} (acs:ram::1234567890123456:role/{own_role(m)})"
    # bound by RunInstances itself (RamRoleName): from the machine's first second
    assert [(q["RegionId"], q.get("RamRoleName")) for q in ecs.params("RunInstances")] == [
        ("cn-hangzhou", own_role(first)), ("cn-hangzhou", own_role(second))]
    assert ecs.params("AttachInstanceRamRole") == []
    assert ecs.versions[("CreateRole", "2015-05-01")] == 2  # one role per machine
    assert ecs.limit_refusals == [] and ecs.internal_errors == []
    _no_limit_broken("aliyun", ecs.requests, RAM_AND_ROLE)
    commands = agent_rules(first, Settings(), ledger).to_json()["commands"]
    assert commands["stop"] == [
        cloud_stop.COMMAND, "--provider", "aliyun", "--role", own_role(first), "--action", "stop",
        "--region", "cn-hangzhou", "--instance", first.cloud_id]
    says = _show(first.id)["guard_says"]
    assert any("asks Alibaba Cloud itself to terminate the machine" in s for s in says), says


def test_aliyun_ram_refused_the_launch_goes_on_without_a_role(
        ecs: AliyunStandin, ali: AliyunProvider, ledger: Ledger) -> None:
    ecs.ram_denied = True
    m = _launch_aliyun(ledger, ali)
    assert ecs.role_of(m.cloud_id) == "" and ecs.state.roles == {}
    assert "instance-role" not in m.enforced_by.split(",")
    (refused,) = [e.detail for e in ledger.events(m.id) if e.step == "instance-role-refused"]
    assert refused.startswith("NoPermission: You are not authorized to do this action."), \
        refused
    assert instance_role.rules_commands(m) == {}
    data = _show(m.id)
    assert "instance-role" not in data["guard"]["enforced_by"]
    (no_role,) = [s for s in data["guard_says"] if "no role" in s]
    assert no_role == (f"This machine has no role to stop itself ({refused}): with gpudesk "
                       "closed, its agent cannot ask Alibaba Cloud to stop the bill.")


def test_aliyun_passing_the_role_refused_is_said_in_ecs_words(
        ecs: AliyunStandin, ali: AliyunProvider, ledger: Ledger) -> None:
    ecs.pass_role_denied = True  # RAM may make roles, the key may not pass one to ECS
    m = _launch_aliyun(ledger, ali)
    (refused,) = [e.detail for e in ledger.events(m.id) if e.step == "instance-role-refused"]
    assert refused.startswith("Forbidden.RAM: User not authorized"), refused
    assert own_role(m) in ecs.state.roles and ecs.role_of(m.cloud_id) == ""
    assert "instance-role" not in m.enforced_by.split(",")
    # launched again without the role, and its first-boot rules do not name the role's call
    assert [bool(q.get("RamRoleName")) for q in ecs.params("RunInstances")] == [True, False]
    assert instance_role.rules_commands(m) == {}


def test_aliyun_standin_attaches_only_an_ecs_role_in_the_machines_region(
        ecs: AliyunStandin, ali: AliyunProvider, ledger: Ledger,
        monkeypatch: pytest.MonkeyPatch) -> None:
    m = _launch_aliyun(ledger, ali)
    ram = instance_role._ram_call(ali)
    other = json.dumps({"Version": "1", "Statement": [{
        "Action": "sts:AssumeRole", "Effect": "Allow",
        "Principal": {"Service": ["fc.aliyuncs.com"]}}]})
    ram("CreateRole", {"RoleName": "fc-only", "AssumeRolePolicyDocument": other})
    with pytest.raises(base.ProviderError, match="InvalidRamRole.NotEcsRole"):
        instance_role.attach_aliyun_role(ali, "cn-hangzhou", m.cloud_id, "fc-only", tries=1)
    with pytest.raises(base.ProviderError, match="InvalidRamRole.NotFound"):
        instance_role.attach_aliyun_role(ali, "cn-hangzhou", m.cloud_id, "none", tries=1)
    with pytest.raises(instance_role.RoleRefused, match="InvalidInstanceId.NotFound"):
        instance_role.attach_aliyun_role(ali, "cn-shanghai", m.cloud_id, own_role(m), tries=1)
    with pytest.raises(base.ProviderError, match=r"\[InvalidParameter\]"):
        ram("CreateRole", {"RoleName": "under_score", "AssumeRolePolicyDocument": other})
    with pytest.raises(base.ProviderError, match=r"\[InvalidParameter\]"):
        ram("CreatePolicy", {"PolicyName": "big", "PolicyDocument": "{" * 6145})
    # the role the next machine would get exists and trusts a different service: refused,
    # not rewritten
    import gpudesk.services.cloud.launcher as launcher_module

    monkeypatch.setattr(launcher_module, "new_ledger_id", lambda: FIXED_ID)
    ram("CreateRole", {"RoleName": ROLE, "AssumeRolePolicyDocument": other})
    later = _launch_aliyun(ledger, ali)
    assert later.id == FIXED_ID and ecs.state.roles[ROLE]["_services"] == ["fc.aliyuncs.com"]
    assert ecs.role_of(later.cloud_id) == "" and ecs.role_of(m.cloud_id) == own_role(m)
    assert instance_role.why_not(ledger, m) is None  # the first one keeps its role
    assert guard.english(later, role_why=instance_role.why_not(ledger, later))[-2] == (
        f"This machine has no role to stop itself (the RAM role {ROLE} exists and is not "
        "trusted by ecs.aliyuncs.com): with gpudesk closed, its agent cannot ask Alibaba "
        "Cloud to stop the bill.")


# ------------------------------------------------------- a "stop" budget needs the role (issue 29)

def test_tencent_stop_budget_without_a_role_is_refused_before_anything_bills(
        cvm: TencentStandin, ledger: Ledger) -> None:
    """CAM refused: a stop from inside a CVM machine keeps charging, so a "stop" budget with
    no role would be no cap with the laptop shut. Refused before RunInstances, in words that
    say the two ways on; accepting the open app alone (app_stop_only) launches."""
    from gpudesk.services.cloud.providers.base import ProviderError

    cvm.cam_denied = True
    stop = replace(TENCENT_PLAN, on_budget="stop")
    with pytest.raises(ProviderError) as refused:
        asyncio.run(Launcher(ledger, poll_s=0.01).launch(stop))
    words = refused.value.message()
    assert words.startswith("Tencent Cloud gave gpudesk no role for this machine "
                            "(AuthFailure.UnauthorizedOperation"), words
    assert "Nothing was launched. Choose terminate at the budget" in words
    assert cvm.calls["RunInstances"] == 0 and cvm.state.instances == {}
    (row,) = ledger.machines()
    assert row.state == "failed" and not row.billing
    accepted = _launch_tencent(ledger, replace(stop, app_stop_only=True))
    assert accepted.on_budget == "stop" and cvm.role_of(accepted.cloud_id) == ""


def test_aliyun_stop_budget_refused_when_the_role_cannot_be_passed(
        ecs: AliyunStandin, ali: AliyunProvider, ledger: Ledger) -> None:
    """RAM made the role but the key may not pass it: ECS refused the RunInstances that named
    it, so nothing was made, and the "stop" budget is refused rather than launched uncapped."""
    from gpudesk.services.cloud.providers.base import ProviderError

    ecs.pass_role_denied = True
    stop = replace(ALIYUN_PLAN, on_budget="stop")
    providers: Callable[[str], AliyunProvider] = lambda _name: ali  # noqa: E731
    with pytest.raises(ProviderError) as refused:
        asyncio.run(Launcher(ledger, providers, poll_s=0.0).launch(stop))  # type: ignore[arg-type]
    assert "Forbidden.RAM" in refused.value.message()
    assert ecs.state.instances == {}
    assert [m.state for m in ledger.machines()] == ["failed"]
