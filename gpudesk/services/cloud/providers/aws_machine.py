"""One EC2 machine as gpudesk asks for it, the same for ``RunInstances`` (``aws.run_instance``)
and for a keep-alive group's launch template (``aws_keep_alive``): a group's machine is the
machine ``run_instance`` would make, so both read their parameters from here."""

from __future__ import annotations

from typing import Any

from gpudesk.services.cloud.providers import base


def tag_list(tags: dict[str, str]) -> list[dict[str, str]]:
    return [{"Key": k, "Value": v} for k, v in tags.items()]


def machine_params(request: base.LaunchRequest, image: str, device: str,
                   group: str) -> dict[str, Any]:
    """Image, type, security group, root disk, the machine's and its disk's tags, IMDSv2,
    key pair and spot market: what RunInstances and RequestLaunchTemplateData both name so."""
    tags = tag_list(request.tags())
    tags.append({"Key": "Name", "Value": f"gpudesk-{request.ledger_id}"})
    params: dict[str, Any] = {
        "ImageId": image, "InstanceType": request.instance_type,
        "SecurityGroupIds": [group],
        "BlockDeviceMappings": [{"DeviceName": device, "Ebs": {
            "VolumeSize": request.disk_gb, "VolumeType": "gp3",
            "DeleteOnTermination": True}}],
        "TagSpecifications": [{"ResourceType": "instance", "Tags": tags},
                              {"ResourceType": "volume", "Tags": tags}],
        # IMDSv2 only, and its token only one hop away: no container or forwarded process
        # on the machine reaches the metadata service (its user data, the role's keys).
        "MetadataOptions": {"HttpTokens": "required", "HttpEndpoint": "enabled",
                            "HttpPutResponseHopLimit": 1},
    }
    if request.key_name:
        params["KeyName"] = request.key_name
    if request.market == "spot":
        spot: dict[str, Any] = {"SpotInstanceType": "one-time",
                                "InstanceInterruptionBehavior": "terminate"}
        if request.max_price is not None:
            spot["MaxPrice"] = f"{request.max_price:.6f}".rstrip("0").rstrip(".")
        params["InstanceMarketOptions"] = {"MarketType": "spot", "SpotOptions": spot}
    return params
