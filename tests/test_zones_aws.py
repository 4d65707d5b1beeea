"""Zone failover on EC2 from EC2's own answer (DescribeInstanceTypeOfferings), on moto.

moto knows which zones offer which type (g6e.xlarge: us-east-1a-d, not e or f) but
never runs out of capacity; the one refusal EC2 would give (InsufficientInstanceCapacity
in one zone) is answered by a botocore ``before-call`` hook on the provider's own
client, so everything else goes over HTTP to moto as usual.
"""

from __future__ import annotations

import asyncio
from datetime import UTC
from datetime import datetime
from typing import Any

import pytest
from fixtures_aws import aws  # noqa: F401
from fixtures_aws import moto_server  # noqa: F401
from fixtures_keyring import memory_keyring  # noqa: F401

from gpudesk.services.cloud import credentials
from gpudesk.services.cloud.launcher import Launcher
from gpudesk.services.cloud.launcher import LaunchPlan
from gpudesk.services.cloud.launcher import probe_ssh
from gpudesk.services.cloud.providers import aws_offers
from gpudesk.services.cloud.providers.aws import AwsProvider
from gpudesk.services.cloud.providers.base import ZoneChoice
from gpudesk.services.money.ledger import Ledger

ADDRESS = "203.0.113.7/32"
PLAN = LaunchPlan(provider="aws", instance_type="g6e.xlarge", region="us-east-1",
                  allow_from=ADDRESS, gpu="L40S", gpus=1, price_per_hour=1.861, disk_gb=120)




@pytest.fixture
def cloud(aws, memory_keyring):  # type: ignore[no-untyped-def]  # noqa: F811
    credentials.save_credentials(aws.credentials)
    aws.publish_dlami("us-east-1")
    return aws


def test_zone_choices_are_ec2s_offerings(cloud) -> None:  # type: ignore[no-untyped-def]
    choices = cloud.provider().zone_choices("us-east-1", "g6e.xlarge")
    offered = {o["Location"] for o in cloud.client("ec2").describe_instance_type_offerings(
        LocationType="availability-zone",
        Filters=[{"Name": "instance-type", "Values": ["g6e.xlarge"]}])["InstanceTypeOfferings"]}
    assert [c.zone for c in choices if c.sells] == sorted(offered)
    refused = [c for c in choices if not c.sells]
    assert refused and all(c.reason == "g6e.xlarge not offered" for c in refused)
    assert {c.zone for c in refused}.isdisjoint(offered)
    assert len(choices) == 6  # every zone of the region, once


def _capacity_in(zone: str, seen: list[str]) -> Any:
    """A before-call hook: EC2's InsufficientInstanceCapacity for launches in ``zone``."""
    class _Http:
        status_code = 500
        headers: dict[str, str] = {}

    def hook(params: dict[str, Any], **_: Any) -> Any:
        asked = str(params.get("body", {}).get("Placement.AvailabilityZone", ""))
        seen.append(asked)
        if asked != zone:
            return None
        return _Http(), {"Error": {"Code": "InsufficientInstanceCapacity", "Message":
                                   f"We currently do not have sufficient g6e.xlarge capacity "
                                   f"in the Availability Zone you requested ({zone})."},
                         "ResponseMetadata": {"HTTPStatusCode": 500}}
    return hook


def test_launch_fails_over_zone_by_zone_with_ec2s_words(cloud, gpudesk_home,  # type: ignore[no-untyped-def]
                                                        banner_port) -> None:
    seen: list[str] = []
    provider = cloud.provider()

    def factory(_name: str) -> AwsProvider:
        provider._client("ec2", "us-east-1").meta.events.register(
            "before-call.ec2.RunInstances", _capacity_in("us-east-1a", seen),
            unique_id="capacity-hook")
        return provider

    with Ledger() as ledger:
        launcher = Launcher(ledger, factory, poll_s=0.01,
                            ssh_probe=lambda _a: probe_ssh("127.0.0.1", banner_port, 2))
        result = asyncio.run(launcher.launch(PLAN))
    assert result.machine.zone == "us-east-1b" and result.machine.state == "running"
    assert seen == ["us-east-1a", "us-east-1b"]
    # Zones that do not offer it are refused in words first, then us-east-1a's capacity.
    assert [(r.zone, r.error.kind) for r in result.refusals] == [
        ("us-east-1e", "capacity"), ("us-east-1f", "capacity"), ("us-east-1a", "capacity")]
    assert str(result.refusals[0].error) == (
        "AWS does not sell g6e.xlarge in us-east-1e now: g6e.xlarge not offered")
    assert "us-east-1a" in str(result.refusals[-1].error)


def test_no_zone_offers_it_refuses_before_any_launch(cloud, gpudesk_home, banner_port) -> None:  # type: ignore[no-untyped-def]
    class OnlyElsewhere(AwsProvider):
        def zone_choices(self, region: str, instance_type: str,
                         market: Any = "on-demand") -> list[ZoneChoice]:
            return [ZoneChoice(c.zone, False, c.reason or "capacity-blocked") for c in
                    super().zone_choices(region, instance_type, market)]

    provider = OnlyElsewhere(cloud.credentials, endpoint_url=cloud.endpoint)
    before = cloud.instance_count()  # the moto server is the session's: count what this adds
    with Ledger() as ledger:
        launcher = Launcher(ledger, lambda _n: provider, poll_s=0.01,
                            ssh_probe=lambda _a: probe_ssh("127.0.0.1", banner_port, 2))
        with pytest.raises(Exception) as info:
            asyncio.run(launcher.launch(PLAN))
        (row,) = ledger.machines()
    assert len(info.value.refusals) == 6  # type: ignore[attr-defined]
    assert row.state == "failed" and not row.cloud_id and cloud.instance_count() == before


def test_state_reason_is_ec2s_own_words() -> None:
    spot = {"InstanceId": "i-0abc", "State": {"Name": "terminated"},
            "InstanceLifecycle": "spot", "Placement": {"AvailabilityZone": "us-east-1b"},
            "LaunchTime": datetime(2026, 12, 3, tzinfo=UTC),
            "StateReason": {"Code": "Server.SpotInstanceTermination",
                            "Message": "Server.SpotInstanceTermination: Spot instance "
                                       "termination"}}
    inst = aws_offers.to_instance("us-east-1", spot)
    assert (inst.market, inst.state) == ("spot", "terminated")
    assert inst.reason == "Server.SpotInstanceTermination: Spot instance termination"
    failed = {**spot, "InstanceLifecycle": None, "StateReason": {
        "Code": "Server.InsufficientInstanceCapacity", "Message": "Insufficient capacity."}}
    inst = aws_offers.to_instance("us-east-1", failed)
    assert inst.market == "on-demand"
    assert inst.reason == "Server.InsufficientInstanceCapacity: Insufficient capacity."
    running = {**spot, "State": {"Name": "running"}}
    assert aws_offers.to_instance("us-east-1", running).reason == ""
