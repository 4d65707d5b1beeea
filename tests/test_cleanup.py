"""Nothing left behind: 20 launch/terminate cycles per cloud end with only live machines'
security groups and key pairs (Tencent and ECS stand-ins, TERMINATING lasting on Tencent;
moto for EC2).

The app's own path each time: launcher → terminate (machines.act) → reconcile, whose
cleanup retries until the cloud reports each machine gone. Each cloud also refuses every
group's (and Tencent every key pair's) first two deletes after the machine is gone, as the
clouds do while they release its network interface: the Tencent stand-in with
``ResourceInUse``, EC2 (moto behind tests/ec2_linger_proxy.py) and the ECS stand-in with
``DependencyViolation``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from aliyun_standin import AliyunStandin
from ec2_linger_proxy import linger_proxy
from fixtures_aliyun import aliyun  # noqa: F401
from fixtures_aliyun import aliyun_creds  # noqa: F401
from fixtures_aliyun import aliyun_server  # noqa: F401
from fixtures_aws import aws  # noqa: F401
from fixtures_aws import moto_server  # noqa: F401
from fixtures_keyring import memory_keyring  # noqa: F401
from fixtures_tencent import tencent  # noqa: F401
from fixtures_tencent import tencent_creds  # noqa: F401
from fixtures_tencent import tencent_server  # noqa: F401

from gpudesk.cli.entry import main
from gpudesk.services.cloud import cleanup
from gpudesk.services.cloud import credentials
from gpudesk.services.cloud.accounts import ALIYUN_ENDPOINT_ENV
from gpudesk.services.cloud.accounts import TENCENT_ENDPOINT_ENV
from gpudesk.services.cloud.accounts import provider_from_keyring
from gpudesk.services.cloud.launcher import Launcher
from gpudesk.services.cloud.launcher import LaunchPlan
from gpudesk.services.cloud.machines import act
from gpudesk.services.cloud.reconcile import reconcile
from gpudesk.services.money.ledger import Ledger

ADDRESS = "203.0.113.7/32"
TENCENT_PLAN = LaunchPlan(provider="tencent", instance_type="GN7.2XLARGE32",
                          region="ap-guangzhou", allow_from=ADDRESS, wait_ssh=False)
AWS_PLAN = LaunchPlan(provider="aws", instance_type="g5.xlarge", region="us-east-1",
                      allow_from=ADDRESS, wait_ssh=False, disk_gb=120)
ALIYUN_PLAN = LaunchPlan(provider="aliyun", instance_type="ecs.gn7i-c8g1.2xlarge",
                         region="cn-hangzhou", allow_from=ADDRESS, wait_ssh=False,
                         gpu="A10", gpus=1, price_per_hour=2.0, disk_gb=100)
CYCLES = 20


@pytest.fixture
def ledger(gpudesk_home) -> Iterator[Ledger]:  # type: ignore[no-untyped-def]
    with Ledger() as ledger:
        yield ledger


@pytest.fixture
def tencent_cloud(tencent, tencent_creds, memory_keyring, monkeypatch):  # type: ignore[no-untyped-def]  # noqa: F811
    monkeypatch.setenv(TENCENT_ENDPOINT_ENV, f"http://{tencent.endpoint}")
    credentials.save_credentials(tencent_creds)
    tencent.terminating_describes = 6  # TERMINATING outlives the terminate call and a reconcile
    tencent.linger_deletes = 2  # and then each delete is refused twice more (ResourceInUse)
    return tencent


@pytest.fixture
def aws_cloud(aws, memory_keyring, monkeypatch):  # type: ignore[no-untyped-def]  # noqa: F811
    credentials.save_credentials(aws.credentials)
    aws.publish_dlami("us-east-1")
    with linger_proxy(aws.endpoint, linger=2) as proxy:  # DependencyViolation twice per group
        monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.url)
        aws.proxy = proxy
        yield aws


@pytest.fixture
def aliyun_cloud(aliyun, aliyun_creds, memory_keyring, monkeypatch):  # type: ignore[no-untyped-def]  # noqa: F811
    monkeypatch.setenv(ALIYUN_ENDPOINT_ENV, f"http://{aliyun.endpoint}")
    credentials.save_credentials(aliyun_creds)
    aliyun.linger_deletes = 2  # each group's delete refused twice after its machine is gone
    return aliyun


def _cycles(ledger: Ledger, plan: LaunchPlan, name: Any,
            providers: Any = provider_from_keyring) -> tuple[Any, list[Any]]:
    launcher = Launcher(ledger, providers, poll_s=0.0)
    reports = []
    for _ in range(CYCLES):
        machine = asyncio.run(launcher.launch(plan)).machine
        asyncio.run(act(ledger, machine.id, "terminate", providers))
        reports.append(asyncio.run(reconcile(ledger, providers, names=[name])).cleanup)
    keep = asyncio.run(launcher.launch(plan)).machine
    for _ in range(8):  # the app reconciles periodically; each pass retries what waits
        report = asyncio.run(reconcile(ledger, providers, names=[name])).cleanup
        reports.append(report)
        if report is not None and not report.waiting:
            break
    return keep, reports


def test_tencent_twenty_cycles_leave_only_the_live_machines_resources(  # type: ignore[no-untyped-def]
        tencent_cloud, ledger) -> None:
    keep, reports = _cycles(ledger, TENCENT_PLAN, "tencent")
    # While a machine was still TERMINATING its group could not go (ResourceInUse): waited.
    assert reports[0] is not None and reports[0].waiting
    assert reports[-1] is not None and not reports[-1].waiting
    # Every machine's group was refused after the machine was gone, and retried to the end.
    assert not any(n for r, n in tencent_cloud.lingering.items() if r != keep.key_name)
    ended = [m for m in ledger.machines() if m.ended]
    assert len(ended) == CYCLES
    for m in ended:
        refused = [e.detail for e in ledger.events(m.id) if e.step == cleanup.STEP_REFUSED]
        assert any(m.security_group in d and "ResourceInUse" in d for d in refused), refused
        states = {r.kind: r.state for r in cleanup.status(ledger, m)}
        # the key pair is one per public key: the machine kept alive still holds it
        assert states == {"security group": "deleted", "key pair": "done"}, states
    provider = provider_from_keyring("tencent")
    left = provider.leftovers("ap-guangzhou")  # type: ignore[attr-defined]
    assert sorted(left) == sorted([keep.key_name, keep.security_group])
    assert set(tencent_cloud.state.groups) == {keep.security_group}
    assert len({m.security_group for m in ledger.machines()}) == CYCLES + 1  # one per machine
    assert cleanup.pending(ledger) == {}
    # A machine's group carries its ledger id, so each leftover is traceable.
    tags = {t["Key"]: t["Value"] for t in tencent_cloud.state.groups[keep.security_group]
            ["TagSet"]}
    assert tags["gpudesk-ledger-id"] == keep.id


def test_aws_twenty_cycles_leave_only_the_live_machines_resources(aws_cloud, ledger) -> None:  # type: ignore[no-untyped-def]
    keep, reports = _cycles(ledger, AWS_PLAN, "aws")
    assert reports[-1] is not None and not reports[-1].waiting
    # EC2 refused each group twice (DependencyViolation) before it went: retried, recorded.
    ended = [m for m in ledger.machines() if m.ended]
    assert len(ended) == CYCLES
    assert all(aws_cloud.proxy.refused[m.security_group] == 2 for m in ended)
    for m in ended:
        refused = [e.detail for e in ledger.events(m.id) if e.step == cleanup.STEP_REFUSED]
        assert any(m.security_group in d and "DependencyViolation" in d for d in refused)
        assert ("security group", "deleted") in {(r.kind, r.state)
                                                 for r in cleanup.status(ledger, m)}
    provider = provider_from_keyring("aws")
    left = provider.leftovers("us-east-1")  # type: ignore[attr-defined]
    assert sorted(left) == sorted([keep.key_name, keep.security_group])
    ec2 = aws_cloud.client("ec2")
    managed = ec2.describe_security_groups(Filters=[{"Name": "tag-key",
                                                     "Values": ["gpudesk"]}])
    assert [g["GroupId"] for g in managed["SecurityGroups"]] == [keep.security_group]
    assert cleanup.pending(ledger) == {}


def test_a_refused_region_is_cleaned_while_the_machine_runs_elsewhere(  # type: ignore[no-untyped-def]
        tencent_cloud, ledger) -> None:
    for zone in ("ap-guangzhou-3", "ap-guangzhou-4", "ap-guangzhou-6"):
        tencent_cloud.fail_next("RunInstances", "ResourcesSoldOut.SpecifiedInstanceType",
                                zone=zone)
    plan = LaunchPlan(**{**TENCENT_PLAN.__dict__, "fallback_regions": ("ap-shanghai",)})
    machine = asyncio.run(Launcher(ledger, poll_s=0.0).launch(plan)).machine
    assert machine.region == "ap-shanghai"
    guangzhou = [g for g in tencent_cloud.state.groups.values() if g["_region"] ==
                 "ap-guangzhou"]
    assert len(guangzhou) == 1  # the refused attempts' group, still there
    report = asyncio.run(reconcile(ledger, names=["tencent"])).cleanup
    assert report is not None and f"{machine.id} ap-guangzhou" in report.done
    assert [g["_region"] for g in tencent_cloud.state.groups.values()] == ["ap-shanghai"]


def test_ls_retries_a_refused_delete_and_show_says_why_until_it_is_gone(  # type: ignore[no-untyped-def]
        tencent_cloud, ledger, capsys) -> None:
    """The reported case: terminate, the cloud stops listing the machine, `gpudesk ls`
    runs; the group and key pair were refused and must be asked again until gone."""
    tencent_cloud.terminating_describes = 1  # gone from DescribeInstances after one look
    machine = asyncio.run(Launcher(ledger, poll_s=0.0).launch(TENCENT_PLAN)).machine
    # terminate looks once (the machine leaves the list), then its cleanup: ResourceInUse
    asyncio.run(act(ledger, machine.id, "terminate"))
    assert machine.security_group in tencent_cloud.state.groups
    assert not tencent_cloud.state.instances
    capsys.readouterr()

    def show() -> dict[str, dict[str, str]]:
        assert main(["show", machine.id, "--json"]) == 0
        rows = json.loads(capsys.readouterr().out)["cleanup"]
        return {r["kind"]: r for r in rows}

    assert main(["ls", "--all", "--json"]) == 0  # refused a second time
    err = capsys.readouterr().err
    assert "cleanup not finished" in err and machine.id in err
    waiting = show()
    assert waiting["security group"]["resource"] == machine.security_group
    assert waiting["security group"]["state"] == "waiting"
    assert "ResourceInUse" in waiting["security group"]["last_error"]
    assert waiting["key pair"]["resource"] == machine.key_name
    assert waiting["key pair"]["state"] == "waiting"
    assert machine.security_group in tencent_cloud.state.groups
    assert main(["ls", "--json"]) == 0  # and now the cloud lets it go
    assert "cleanup not finished" not in capsys.readouterr().err
    assert machine.security_group not in tencent_cloud.state.groups
    assert machine.key_name not in tencent_cloud.state.key_pairs
    done = show()
    assert {r["state"] for r in done.values()} == {"deleted"}
    assert {r["last_error"] for r in done.values()} == {""}
    assert cleanup.pending(ledger) == {}
    refusals = [e for e in ledger.events(machine.id) if e.step == cleanup.STEP_REFUSED]
    assert refusals  # the ledger kept each new refusal, once per answer


def test_show_json_of_a_live_machine_says_its_resources_are_in_use(  # type: ignore[no-untyped-def]
        tencent_cloud, ledger, capsys) -> None:
    machine = asyncio.run(Launcher(ledger, poll_s=0.0).launch(TENCENT_PLAN)).machine
    capsys.readouterr()
    assert main(["show", machine.id, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["cleanup"]
    assert rows == [
        {"resource": machine.security_group, "kind": "security group", "state": "in use",
         "last_error": ""},
        {"resource": machine.key_name, "kind": "key pair", "state": "in use",
         "last_error": ""}]


def test_aliyun_twenty_cycles_leave_only_the_live_machines_resources(  # type: ignore[no-untyped-def]
        aliyun_cloud: AliyunStandin, aliyun_creds, ledger) -> None:  # noqa: F811
    from gpudesk.services.cloud.providers.aliyun import AliyunProvider

    # the app's provider, with the VPC backoff not slept (the stand-in's VPC is ready at once)
    provider = AliyunProvider(aliyun_creds, endpoint=aliyun_cloud.endpoint, protocol="http",
                              sleep=lambda _s: None)
    keep, reports = _cycles(ledger, ALIYUN_PLAN, "aliyun", lambda _n: provider)
    assert reports[-1] is not None and not reports[-1].waiting
    ended = [m for m in ledger.machines() if m.ended]
    assert len(ended) == CYCLES
    # ECS refused each ended machine's group twice (DependencyViolation): retried, recorded
    assert all(aliyun_cloud.lingering[m.security_group] == 2 for m in ended)
    for m in ended:
        refused = [e.detail for e in ledger.events(m.id) if e.step == cleanup.STEP_REFUSED]
        assert any(m.security_group in d and "DependencyViolation" in d for d in refused)
        assert {r.kind: r.state for r in cleanup.status(ledger, m)}["security group"] == \
            "deleted"
    assert set(aliyun_cloud.state.groups) == {keep.security_group}
    assert sorted(provider.leftovers("cn-hangzhou")) == sorted(
        [keep.key_name, keep.security_group])
    assert cleanup.pending(ledger) == {}
