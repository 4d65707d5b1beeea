"""The whole rent path on AWS: keyring → launcher → moto (over HTTP) → ledger → reconcile.

moto quirks this leans on and works around (reference/clouds.md): ClientToken
is not idempotent (gpudesk looks for its own tag first), spot only sets
InstanceLifecycle, and pending turns running on the next describe.
"""

from __future__ import annotations

import asyncio

import pytest
from fixtures_aws import aws  # noqa: F401
from fixtures_aws import moto_server  # noqa: F401
from fixtures_keyring import memory_keyring  # noqa: F401

from gpudesk.services.cloud import credentials
from gpudesk.services.cloud.launcher import Launcher
from gpudesk.services.cloud.launcher import LaunchPlan
from gpudesk.services.cloud.launcher import probe_ssh
from gpudesk.services.cloud.machines import act
from gpudesk.services.cloud.providers.base import TAG_LEDGER
from gpudesk.services.cloud.providers.base import TAG_MANAGED
from gpudesk.services.cloud.reconcile import reconcile
from gpudesk.services.money.ledger import Ledger

ADDRESS = "203.0.113.7/32"
PLAN = LaunchPlan(provider="aws", instance_type="g5.xlarge", region="us-east-1",
                  market="spot", max_price=0.9, allow_from=ADDRESS, gpu="A10G", gpus=1,
                  price_per_hour=0.402, disk_gb=120)




@pytest.fixture
def cloud(aws, memory_keyring):  # type: ignore[no-untyped-def]  # noqa: F811
    credentials.save_credentials(aws.credentials)
    aws.publish_dlami("us-east-1")
    return aws


def test_spot_launch_reconcile_and_terminate_on_moto(cloud, gpudesk_home, banner_port) -> None:  # type: ignore[no-untyped-def]
    with Ledger() as ledger:
        launcher = Launcher(ledger, poll_s=0.01,
                            ssh_probe=lambda _a: probe_ssh("127.0.0.1", banner_port, 2))
        m = asyncio.run(launcher.launch(PLAN)).machine
        assert m.state == "running" and m.market == "spot" and m.cloud_id.startswith("i-")
        ec2 = cloud.client("ec2")
        (inst,) = [i for r in ec2.describe_instances()["Reservations"] for i in r["Instances"]]
        tags = {t["Key"]: t["Value"] for t in inst["Tags"]}
        assert tags[TAG_LEDGER] == m.id and tags[TAG_MANAGED] == "1"
        assert inst.get("InstanceLifecycle") == "spot"
        assert inst["MetadataOptions"]["HttpTokens"] == "required"  # IMDSv2 only
        (group,) = ec2.describe_security_groups(GroupIds=[m.security_group])["SecurityGroups"]
        rules = group["IpPermissions"]
        assert [(r["IpProtocol"], r["FromPort"], r["ToPort"]) for r in rules] == [("tcp", 22, 22)]
        assert [x["CidrIp"] for x in rules[0]["IpRanges"]] == [ADDRESS]
        (key,) = ec2.describe_key_pairs(KeyNames=[m.key_name])["KeyPairs"]
        assert key["KeyName"].startswith("gpudesk-")

        # Another computer (or a ledger lost with its disk) finds the machine by its tag.
        with Ledger(gpudesk_home / "other.sqlite3") as other:
            report = asyncio.run(reconcile(other, names=["aws"]))
            assert report.adopted == [m.id]
            adopted = other.get(m.id)
            assert adopted is not None and adopted.cloud_id == m.cloud_id and adopted.billing
            assert adopted.gpu == "A10G" and adopted.market == "spot"

        ended = asyncio.run(act(ledger, m.id, "terminate"))
        assert ended.state == "terminated" and not ended.billing
        # The key pair and the group went with the last machine that used them.
        names = [k["KeyName"] for k in ec2.describe_key_pairs()["KeyPairs"]]
        assert m.key_name not in names
        report = asyncio.run(reconcile(ledger, names=["aws"]))
        assert report.billing == []


def test_a_second_launch_with_the_same_ledger_id_is_not_a_second_machine(cloud) -> None:  # type: ignore[no-untyped-def]
    """moto ignores ClientToken; gpudesk's own tag check keeps the launch idempotent."""
    from gpudesk.services.cloud.accounts import provider_from_keyring
    from gpudesk.services.cloud.providers.base import LaunchRequest

    provider = provider_from_keyring("aws")
    group = provider.ensure_security_group("us-east-1", ADDRESS)
    request = LaunchRequest("m-00000000aa", "us-east-1", "g5.xlarge", allow_from=ADDRESS,
                            security_group=group, client_token="m-00000000aa-1")
    first = provider.run_instance(request)
    again = provider.run_instance(request)  # a retry after a lost answer
    assert first.cloud_id == again.cloud_id and cloud.instance_count() == 1


def test_relaunch_like_a_lost_spot_machine_on_moto(cloud, banner_port) -> None:  # type: ignore[no-untyped-def]
    """Spot recovery's replacement: the same type, market, price cap and zone, tagged anew."""
    from dataclasses import replace

    from gpudesk.services.runs.spot_recovery import relaunch_like

    with Ledger() as ledger:
        launcher = Launcher(ledger, poll_s=0.01,
                            ssh_probe=lambda _a: probe_ssh("127.0.0.1", banner_port, 2))
        lost = asyncio.run(launcher.launch(replace(PLAN, zone="us-east-1b"))).machine
        asyncio.run(act(ledger, lost.id, "terminate"))  # the spot machine was reclaimed
        new_id = asyncio.run(relaunch_like(launcher, lost.id, allow_from=ADDRESS))
        new = ledger.get(new_id)
        assert new is not None and new.id != lost.id and new.state == "running"
        assert (new.instance_type, new.market, new.max_price, new.zone, new.region) == (
            "g5.xlarge", "spot", 0.9, "us-east-1b", "us-east-1")
        ec2 = cloud.client("ec2")
        tags = {t["Key"]: t["Value"] for r in ec2.describe_instances(
            InstanceIds=[new.cloud_id])["Reservations"] for i in r["Instances"]
            for t in i["Tags"]}
        assert tags[TAG_LEDGER] == new.id
