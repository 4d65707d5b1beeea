"""The AWS EC2 provider against a real moto server over HTTP (127.0.0.1 only).

moto quirks these tests work around, not test: it accepts any key unless IAM
checking is switched on (``enforce_iam``); ClientToken is stored but not
idempotent; spot history is one constant price; no Pricing API; no p3.* in
DescribeInstanceTypes; nobody may write the public ``/aws/service`` SSM tree or
Amazon-owned AMIs, so the fixture publishes a Deep Learning AMI itself.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from datetime import UTC
from datetime import datetime
from datetime import timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError
from botocore.exceptions import ConnectTimeoutError
from botocore.exceptions import EndpointConnectionError
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from fixtures_aws import KEY_ID  # noqa: F401
from fixtures_aws import SECRET  # noqa: F401
from fixtures_aws import MotoAws  # noqa: F401
from fixtures_aws import aws  # noqa: F401
from fixtures_aws import moto_server  # noqa: F401

from gpudesk.services.cloud.providers import aws_errors
from gpudesk.services.cloud.providers import aws_offers
from gpudesk.services.cloud.providers.aws import AwsProvider
from gpudesk.services.cloud.providers.aws import group_name
from gpudesk.services.cloud.providers.base import HOW_QUOTA_AWS
from gpudesk.services.cloud.providers.base import MSG_NOT_FOUND
from gpudesk.services.cloud.providers.base import MSG_OTHER
from gpudesk.services.cloud.providers.base import TAG_LEDGER
from gpudesk.services.cloud.providers.base import TAG_MANAGED
from gpudesk.services.cloud.providers.base import Credentials
from gpudesk.services.cloud.providers.base import LaunchRequest
from gpudesk.services.cloud.providers.base import Provider
from gpudesk.services.cloud.providers.base import ProviderError

R = "us-east-1"
ME = "203.0.113.7"


def _public_key() -> str:
    key = Ed25519PrivateKey.generate().public_key()
    return key.public_bytes(serialization.Encoding.OpenSSH,
                            serialization.PublicFormat.OpenSSH).decode() + " gpudesk"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _no_server(**kwargs: Any) -> AwsProvider:
    """A provider whose every call would fail with a network error (nothing listens)."""
    return AwsProvider(Credentials("aws", KEY_ID, SECRET),
                       endpoint_url=f"http://127.0.0.1:{_closed_port()}", max_attempts=1,
                       **kwargs)


def _launch(aws: MotoAws, p: AwsProvider, ledger_id: str = "m-0001", **kw: Any) -> LaunchRequest:  # noqa: F811
    key = p.ensure_key_pair(R, "gpudesk-test", _public_key())
    group = p.ensure_security_group(R, ME + "/32")
    fields: dict[str, Any] = dict(ledger_id=ledger_id, region=R, instance_type="g5.xlarge",
                                  key_name=key, security_group=group,
                                  client_token=f"{ledger_id}-1", allow_from=ME + "/32")
    fields.update(kw)
    return LaunchRequest(**fields)


def _ec2_instance(aws: MotoAws, cloud_id: str) -> dict[str, Any]:  # noqa: F811
    answer = aws.client("ec2").describe_instances(InstanceIds=[cloud_id])
    inst: dict[str, Any] = answer["Reservations"][0]["Instances"][0]
    return inst


def _no_secret(*things: object) -> None:
    for thing in things:
        texts = [repr(thing), str(thing)]
        if isinstance(thing, ProviderError):
            texts += [thing.detail, thing.message(), repr(thing.values)]
        for text in texts:
            assert SECRET not in text
            assert SECRET[:20] not in text


@pytest.fixture(autouse=True)
def no_error_carries_the_secret(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[ProviderError]]:
    """Every ProviderError made during any test here is checked for the secret afterwards."""
    made: list[ProviderError] = []
    real_init = ProviderError.__init__

    def recording_init(self: ProviderError, *args: Any, **kwargs: Any) -> None:
        real_init(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(ProviderError, "__init__", recording_init)
    yield made
    _no_secret(*made)


# --------------------------------------------------------------------------- identity


def test_provider_satisfies_the_protocol_and_uses_bundled_defaults(aws: MotoAws) -> None:  # noqa: F811
    p = aws.provider()
    assert isinstance(p, Provider)
    assert p.name == "aws"
    assert p.regions() == ["eu-west-1", "us-east-1", "us-west-2"]
    assert {"g4dn.xlarge", "g5.xlarge", "p5.48xlarge"} <= p.known_types
    client = p._client("ec2", R)
    assert client is p._client("ec2", R)  # cached per (service, region)
    assert client is not p._client("ec2", "us-west-2")
    cfg = client.meta.config
    assert (cfg.connect_timeout, cfg.read_timeout) == (10, 30)
    assert cfg.retries == {"mode": "standard", "total_max_attempts": 5}
    assert "gpudesk" in cfg.user_agent_extra


def test_verify_answers_account_principal_and_launch_permission(aws: MotoAws) -> None:  # noqa: F811
    aws.publish_dlami()
    identity = aws.provider().verify()
    assert identity.account == "123456789012"
    assert identity.principal.startswith("arn:aws:")
    assert identity.can_launch is True  # moto answers the dry run with DryRunOperation


def test_keys_come_only_from_the_credentials_never_a_profile(
        aws: MotoAws, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    creds_file = tmp_path / "credentials"
    creds_file.write_text("[default]\naws_access_key_id = AKIAOTHERPROFILE0001\n"
                          "aws_secret_access_key = other\n")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(creds_file))
    monkeypatch.setenv("AWS_PROFILE", "no-such-profile")  # would make boto3's default session fail
    p = aws.provider(endpoint_url=None)  # boto3's own resolution: AWS_ENDPOINT_URL → moto
    assert p.verify().account == "123456789012"
    signer = p._client("sts", R)._request_signer
    assert signer._credentials.access_key == KEY_ID


def test_wrong_keys_are_refused_as_auth_with_real_signature_checks(aws: MotoAws) -> None:  # noqa: F811
    p = AwsProvider(Credentials("aws", "AKIAUNKNOWNKEY000001", SECRET), endpoint_url=aws.endpoint)
    with aws.enforce_iam(), pytest.raises(ProviderError) as info:
        p.verify()
    assert info.value.kind == "auth"
    assert info.value.detail.startswith("InvalidClientTokenId")
    assert "rejected the keys" in str(info.value)
    _no_secret(info.value, p)


def test_user_without_run_instances_may_verify_but_not_launch(aws: MotoAws) -> None:  # noqa: F811
    aws.publish_dlami()
    iam = aws.client("iam")
    with aws.enforce_iam(free_calls=3):
        iam.create_user(UserName="reader")
        iam.put_user_policy(UserName="reader", PolicyName="read", PolicyDocument=json.dumps({
            "Version": "2012-10-17", "Statement": [
                {"Effect": "Allow", "Action": ["sts:GetCallerIdentity", "ec2:Describe*",
                                               "ssm:GetParametersByPath"], "Resource": "*"}]}))
        key = iam.create_access_key(UserName="reader")["AccessKey"]
        p = AwsProvider(Credentials("aws", key["AccessKeyId"], key["SecretAccessKey"]),
                        endpoint_url=aws.endpoint)
        identity = p.verify()
    assert identity.principal.endswith(":user/reader")
    assert identity.can_launch is False
    # A permission refusal of RunInstances (EC2: UnauthorizedOperation; moto: AccessDenied)
    # is a "no", not "could not check".
    assert identity.launch_check == "denied", identity.launch_detail


def test_no_network_is_a_network_error() -> None:
    with pytest.raises(ProviderError) as info:
        _no_server().verify()
    assert info.value.kind == "network"
    assert "Could not reach AWS (cannot connect: http://127.0.0.1:" in str(info.value)


# --------------------------------------------------------------------------- key pair & firewall


def test_key_pair_is_imported_once_and_tagged(aws: MotoAws) -> None:  # noqa: F811
    p = aws.provider()
    public = _public_key()
    assert p.ensure_key_pair(R, "gpudesk-abc", public) == "gpudesk-abc"
    assert p.ensure_key_pair(R, "gpudesk-abc", public) == "gpudesk-abc"
    pairs = aws.client("ec2").describe_key_pairs()["KeyPairs"]
    assert [k["KeyName"] for k in pairs] == ["gpudesk-abc"]
    assert pairs[0]["KeyType"] == "ed25519"
    assert {"Key": TAG_MANAGED, "Value": "1"} in pairs[0]["Tags"]


def test_a_bad_public_key_is_a_typed_refusal(aws: MotoAws) -> None:  # noqa: F811
    with pytest.raises(ProviderError) as info:
        aws.provider().ensure_key_pair(R, "gpudesk-bad", "ssh-ed25519 not-base64")
    assert info.value.kind == "invalid"
    assert info.value.detail.startswith("InvalidKeyPair.Format")


def _ingress(aws: MotoAws, group_id: str) -> list[dict[str, Any]]:  # noqa: F811
    group = aws.client("ec2").describe_security_groups(GroupIds=[group_id])["SecurityGroups"][0]
    perms: list[dict[str, Any]] = group["IpPermissions"]
    return perms


def test_security_group_opens_only_ssh_from_one_address(aws: MotoAws) -> None:  # noqa: F811
    p = aws.provider()
    gid = p.ensure_security_group(R, ME)  # a bare address means /32
    assert p.ensure_security_group(R, ME + "/32") == gid  # found again, not a second group
    ec2 = aws.client("ec2")
    group = ec2.describe_security_groups(GroupIds=[gid])["SecurityGroups"][0]
    assert group["GroupName"] == "gpudesk-ssh-203-0-113-7" == group_name(ME + "/32")
    default_vpc = ec2.describe_vpcs(Filters=[{"Name": "isDefault", "Values": ["true"]}])
    assert group["VpcId"] == default_vpc["Vpcs"][0]["VpcId"]
    assert {"Key": TAG_MANAGED, "Value": "1"} in group["Tags"]
    perms = _ingress(aws, gid)
    assert len(perms) == 1
    assert (perms[0]["IpProtocol"], perms[0]["FromPort"], perms[0]["ToPort"]) == ("tcp", 22, 22)
    assert [r["CidrIp"] for r in perms[0]["IpRanges"]] == [ME + "/32"]
    assert perms[0].get("Ipv6Ranges", []) == []


def test_security_group_for_an_ipv6_address_uses_a_128(aws: MotoAws) -> None:  # noqa: F811
    gid = aws.provider().ensure_security_group(R, "2001:db8::7")
    perms = _ingress(aws, gid)
    assert [r["CidrIpv6"] for r in perms[0]["Ipv6Ranges"]] == ["2001:db8::7/128"]
    assert perms[0].get("IpRanges", []) == []


@pytest.mark.parametrize("cidr", ["0.0.0.0/0", "198.51.100.0/24", "::/0", "not an address"])
def test_security_group_refuses_wide_ranges_before_any_call(cidr: str) -> None:
    with pytest.raises(ProviderError) as info:
        _no_server().ensure_security_group(R, cidr)  # a call would fail as "network"
    assert info.value.kind == "invalid"
    assert "one address only" in str(info.value)


def test_security_group_loses_every_other_rule(aws: MotoAws) -> None:  # noqa: F811
    p = aws.provider()
    gid = p.ensure_security_group(R, ME + "/32")
    ec2 = aws.client("ec2")
    ec2.authorize_security_group_ingress(GroupId=gid, IpPermissions=[
        {"IpProtocol": "tcp", "FromPort": 22, "ToPort": 22,
         "IpRanges": [{"CidrIp": "0.0.0.0/0"}, {"CidrIp": "198.51.100.9/32"}]},
        {"IpProtocol": "tcp", "FromPort": 8888, "ToPort": 8888,
         "IpRanges": [{"CidrIp": ME + "/32"}]},
        {"IpProtocol": "-1", "Ipv6Ranges": [{"CidrIpv6": "::/0"}]},
    ])
    assert sum(len(x.get("IpRanges", [])) + len(x.get("Ipv6Ranges", []))
               for x in _ingress(aws, gid)) == 5
    assert p.ensure_security_group(R, ME + "/32") == gid
    perms = _ingress(aws, gid)
    assert [(x["IpProtocol"], x["FromPort"], [r["CidrIp"] for r in x["IpRanges"]],
             x.get("Ipv6Ranges", [])) for x in perms] == [("tcp", 22, [ME + "/32"], [])]


# --------------------------------------------------------------------------- image


def test_image_is_the_newest_dlami_parameter(aws: MotoAws) -> None:  # noqa: F811
    aws.publish_dlami(torch="2.7", ubuntu="22.04", ami_id="ami-0a0000000000000a1")
    newest = aws.publish_dlami(torch="2.10", ubuntu="24.04", ami_id="ami-0b0000000000000b2")
    aws.publish_dlami(torch="2.9", ubuntu="24.04", ami_id="ami-0c0000000000000c3")
    aws.publish_parameter(R, "/aws/service/deeplearning/ami/x86_64/"
                          "oss-nvidia-driver-gpu-pytorch-2.99-amazon-linux-2023/latest/ami-id",
                          "ami-0d0000000000000d4")  # not Ubuntu: the launcher logs in as ubuntu
    assert aws.provider().find_image(R, "g5.xlarge") == newest


def test_image_falls_back_to_amazons_newest_dlami(aws: MotoAws) -> None:  # noqa: F811
    day = datetime(2026, 3, 1, tzinfo=UTC)
    name = "Deep Learning OSS Nvidia Driver AMI GPU PyTorch {} (Ubuntu 22.04) {}"
    aws.publish_image(R, "ami-0e0000000000000e1", name.format("2.7", "20260101"), day)
    newer = aws.publish_image(R, "ami-0e0000000000000e2", name.format("2.7", "20260301"),
                              day + timedelta(days=60))
    aws.publish_image(R, "ami-0e0000000000000e3", "Deep Learning Base AMI (Amazon Linux 2)",
                      day + timedelta(days=90))
    aws.publish_image(R, "ami-0e0000000000000e4", name.format("2.7", "20260401"),
                      day + timedelta(days=90), arch="arm64")
    assert aws.provider().find_image(R, "g5.xlarge") == newer
    assert aws.provider().find_image(R, "g5g.xlarge") == "ami-0e0000000000000e4"


def test_no_image_is_a_typed_not_found(aws: MotoAws) -> None:  # noqa: F811
    with pytest.raises(ProviderError) as info:
        aws.provider().find_image(R, "g5.xlarge")
    assert info.value.kind == "not-found"
    assert info.value.template == MSG_NOT_FOUND
    assert str(info.value).startswith("AWS has no GPU deep-learning image called Deep Learning")


# --------------------------------------------------------------------------- instances


def test_on_demand_launch_is_tagged_imdsv2_and_sized(aws: MotoAws) -> None:  # noqa: F811
    image = aws.publish_dlami()
    p = aws.provider()
    req = _launch(aws, p, disk_gb=250)
    inst = p.run_instance(req)
    assert (inst.provider, inst.region, inst.instance_type, inst.market) == \
        ("aws", R, "g5.xlarge", "on-demand")
    assert inst.state in ("pending", "running")
    assert inst.ledger_id == "m-0001"
    raw = _ec2_instance(aws, inst.cloud_id)
    assert raw["ImageId"] == image
    assert raw["KeyName"] == "gpudesk-test"
    assert [g["GroupId"] for g in raw["SecurityGroups"]] == [req.security_group]
    # IMDSv2 only, one hop: a container or forwarded process on it cannot read user data
    assert raw["MetadataOptions"]["HttpTokens"] == "required"
    assert raw["MetadataOptions"]["HttpPutResponseHopLimit"] == 1
    assert "InstanceLifecycle" not in raw
    tags = {t["Key"]: t["Value"] for t in raw["Tags"]}
    assert tags == {TAG_MANAGED: "1", TAG_LEDGER: "m-0001", "Name": "gpudesk-m-0001"}
    ec2 = aws.client("ec2")
    volume_ids = [m["Ebs"]["VolumeId"] for m in raw["BlockDeviceMappings"]]
    volumes = ec2.describe_volumes(VolumeIds=volume_ids)["Volumes"]
    root = [v for v in volumes if v["Attachments"][0]["Device"] == "/dev/sda1"]
    assert len(root) == 1
    assert (root[0]["Size"], root[0]["VolumeType"]) == (250, "gp3")
    root_mapping = [m for m in raw["BlockDeviceMappings"] if m["DeviceName"] == "/dev/sda1"]
    assert root_mapping[0]["Ebs"]["DeleteOnTermination"] is True
    assert {t["Key"]: t["Value"] for t in root[0]["Tags"]} == tags


def test_the_metadata_service_is_imdsv2_and_one_hop_on_the_wire(aws: MotoAws) -> None:  # noqa: F811
    """moto answers hop limit 1 when none is sent, so the request itself is read: a pass-
    through proxy in front of moto keeps every form RunInstances sent."""
    from urllib.parse import parse_qs

    from ec2_linger_proxy import LingerProxy

    class Recording(LingerProxy):
        def __init__(self, upstream: str) -> None:
            super().__init__(upstream, linger=0)
            self.forms: list[dict[str, list[str]]] = []

        def refusal_for(self, body: bytes) -> str:
            self.forms.append(parse_qs(body.decode("utf-8", "replace")))
            return ""

    aws.publish_dlami()
    proxy = Recording(aws.endpoint).start()
    try:
        p = aws.provider(endpoint_url=proxy.url)
        inst = p.run_instance(_launch(aws, p))
    finally:
        proxy.stop()
    (sent,) = [f for f in proxy.forms if f.get("Action") == ["RunInstances"]]
    assert sent["MetadataOptions.HttpTokens"] == ["required"]
    assert sent["MetadataOptions.HttpPutResponseHopLimit"] == ["1"]
    assert _ec2_instance(aws, inst.cloud_id)["MetadataOptions"]["HttpPutResponseHopLimit"] == 1


def test_spot_launch_asks_for_a_one_time_spot_at_the_max_price(aws: MotoAws) -> None:  # noqa: F811
    aws.publish_dlami()
    p = aws.provider()
    sent: list[dict[str, Any]] = []
    p._client("ec2", R).meta.events.register(
        "provide-client-params.ec2.RunInstances", lambda params, **_: sent.append(params))
    inst = p.run_instance(_launch(aws, p, market="spot", max_price=0.42, zone="us-east-1b"))
    assert inst.market == "spot"
    assert inst.zone == "us-east-1b"
    assert _ec2_instance(aws, inst.cloud_id)["InstanceLifecycle"] == "spot"
    assert sent[0]["InstanceMarketOptions"] == {"MarketType": "spot", "SpotOptions": {
        "MaxPrice": "0.42", "SpotInstanceType": "one-time",
        "InstanceInterruptionBehavior": "terminate"}}
    assert sent[0]["ClientToken"] == "m-0001-1"
    assert sent[0]["Placement"] == {"AvailabilityZone": "us-east-1b"}
    assert (sent[0]["MinCount"], sent[0]["MaxCount"]) == (1, 1)


def test_the_same_request_twice_makes_one_machine(aws: MotoAws) -> None:  # noqa: F811
    aws.publish_dlami()
    p = aws.provider()
    req = _launch(aws, p)
    first = p.run_instance(req)
    again = p.run_instance(req)
    assert again.cloud_id == first.cloud_id
    assert aws.instance_count() == 1
    # A new provider (the app restarted) finds it too, by the ledger tag.
    assert aws.provider().run_instance(req).cloud_id == first.cloud_id
    assert aws.instance_count() == 1
    # Once that machine is terminated, the same ledger id may launch again.
    p.terminate(R, first.cloud_id)
    assert p.run_instance(req).cloud_id != first.cloud_id
    assert aws.instance_count() == 2


def test_a_machine_found_by_client_token_is_not_launched_twice(aws: MotoAws) -> None:  # noqa: F811
    image = aws.publish_dlami()
    made = aws.client("ec2").run_instances(ImageId=image, InstanceType="g5.xlarge", MinCount=1,
                                           MaxCount=1, ClientToken="tok-7")
    p = aws.provider()
    found = p.run_instance(_launch(aws, p, ledger_id="m-0007", client_token="tok-7"))
    assert found.cloud_id == made["Instances"][0]["InstanceId"]
    assert aws.instance_count() == 1


def test_describe_leaves_unknown_ids_out(aws: MotoAws) -> None:  # noqa: F811
    aws.publish_dlami()
    p = aws.provider()
    a = p.run_instance(_launch(aws, p, "m-a"))
    b = p.run_instance(_launch(aws, p, "m-b"))
    unknown = "i-0123456789abcdef0"
    assert p.describe(R, []) == []
    assert p.describe(R, [unknown]) == []
    found = p.describe(R, [a.cloud_id, unknown, b.cloud_id, a.cloud_id])
    assert sorted(i.cloud_id for i in found) == sorted([a.cloud_id, b.cloud_id])
    assert {i.ledger_id for i in found} == {"m-a", "m-b"}


def test_list_managed_finds_only_gpudesk_machines(aws: MotoAws) -> None:  # noqa: F811
    image = aws.publish_dlami()
    p = aws.provider()
    ours = p.run_instance(_launch(aws, p))
    aws.client("ec2").run_instances(ImageId=image, InstanceType="g5.xlarge", MinCount=2,
                                    MaxCount=2)
    assert aws.instance_count() == 3
    managed = p.list_managed(R)
    assert [i.cloud_id for i in managed] == [ours.cloud_id]
    assert p.list_managed("us-west-2") == []


def test_stop_start_terminate(aws: MotoAws) -> None:  # noqa: F811
    aws.publish_dlami()
    p = aws.provider()
    inst = p.run_instance(_launch(aws, p))

    def state() -> str:
        return p.describe(R, [inst.cloud_id])[0].state

    assert state() == "running"  # moto: pending → running on the next describe
    p.stop(R, inst.cloud_id)
    assert state() in ("stopping", "stopped")
    p.start(R, inst.cloud_id)
    assert state() in ("pending", "running")
    p.terminate(R, inst.cloud_id)
    assert state() == "terminated"
    assert p.list_managed(R)[0].state == "terminated"  # still listed, and not billing
    for action in (p.stop, p.start, p.terminate):
        with pytest.raises(ProviderError) as info:
            action(R, "i-0123456789abcdef0")
        assert info.value.kind == "not-found"
        assert str(info.value) == "AWS has no machine called i-0123456789abcdef0 in us-east-1."


def test_cleanup_deletes_only_what_no_machine_uses(aws: MotoAws) -> None:  # noqa: F811
    aws.publish_dlami()
    p = aws.provider()
    req = _launch(aws, p)  # key "gpudesk-test" and the group for ME, both used below
    inst = p.run_instance(req)
    spare_key = p.ensure_key_pair(R, "gpudesk-spare", _public_key())
    spare_group = p.ensure_security_group(R, "198.51.100.9/32")
    ec2 = aws.client("ec2")
    ec2.import_key_pair(KeyName="not-ours", PublicKeyMaterial=_public_key().encode())
    theirs = ec2.create_security_group(GroupName="not-ours", Description="x")["GroupId"]

    assert sorted(p.cleanup(R)) == sorted([spare_key, group_name("198.51.100.9/32")])
    keys = {k["KeyName"] for k in ec2.describe_key_pairs()["KeyPairs"]}
    assert keys == {"gpudesk-test", "not-ours"}
    groups = {g["GroupId"] for g in ec2.describe_security_groups()["SecurityGroups"]}
    assert req.security_group in groups and theirs in groups and spare_group not in groups

    p.terminate(R, inst.cloud_id)
    assert sorted(p.cleanup(R)) == sorted(["gpudesk-test", group_name(ME)])
    assert p.cleanup(R) == []


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(("change", "words"), [
    ({"region": "mars-north-1"}, "not a aws region"),
    ({"instance_type": "t2.micro"}, "not a GPU instance type"),
    ({"market": "spot", "max_price": 0.0}, "must be above zero"),
    ({"max_price": 1.0}, "only applies to spot"),
    ({"disk_gb": 10}, "between 30 and"),
    ({"allow_from": "0.0.0.0/0"}, "one address only"),
])
def test_bad_requests_are_refused_before_any_call(aws: MotoAws, change: dict[str, Any],  # noqa: F811
                                                  words: str) -> None:
    fields: dict[str, Any] = dict(ledger_id="m-x", region=R, instance_type="g5.xlarge",
                                  security_group="sg-1", client_token="t")
    fields.update(change)
    request = LaunchRequest(**fields)
    for p in (_no_server(), aws.provider()):  # unreachable: any call would say "network"
        with pytest.raises(ProviderError) as info:
            p.run_instance(request)
        assert info.value.kind == "invalid"
        assert words in str(info.value)
    assert aws.instance_count() == 0


def test_real_refusals_from_ec2_are_typed(aws: MotoAws) -> None:  # noqa: F811
    p = aws.provider()
    req = _launch(aws, p, image_id="ami-0badbadbadbadbad0")
    with pytest.raises(ProviderError) as info:
        p.run_instance(req)
    assert (info.value.kind, info.value.values["what"]) == ("not-found", "image")
    assert info.value.detail.startswith("InvalidAMIID.NotFound")
    assert "image called ami-0badbadbadbadbad0" in str(info.value)
    aws.publish_dlami()
    with pytest.raises(ProviderError) as info:
        p.run_instance(_launch(aws, p, "m-2", security_group="sg-0123456789abcdef0"))
    assert info.value.kind == "not-found"
    assert info.value.detail.startswith("InvalidGroup.NotFound")
    assert str(info.value) == \
        "AWS has no security group called sg-0123456789abcdef0 in us-east-1."
    assert aws.instance_count() == 0


# --------------------------------------------------------------------------- error mapping


def _client_error(code: str, message: str = "message", status: int = 400) -> ClientError:
    response: Any = {"Error": {"Code": code, "Message": message},
                     "ResponseMetadata": {"HTTPStatusCode": status}}
    return ClientError(response, "RunInstances")


G5 = aws_errors.CallContext("ec2", "RunInstances", R, "us-east-1a", "g5.xlarge")
P4_SPOT = aws_errors.CallContext("ec2", "RunInstances", R, "", "p4d.24xlarge", "spot", 9.5)
P4 = aws_errors.CallContext("ec2", "RunInstances", R, "", "p4d.24xlarge")
G5_SPOT = aws_errors.CallContext("ec2", "RunInstances", R, "", "g5.xlarge", "spot")


@pytest.mark.parametrize(("code", "message", "ctx", "kind"), [
    ("InvalidClientTokenId", "The security token included in the request is invalid.", G5,
     "auth"),
    ("SignatureDoesNotMatch", "The request signature we calculated does not match", G5, "auth"),
    ("AuthFailure", "AWS was not able to validate the provided access credentials", G5, "auth"),
    ("UnrecognizedClientException", "The security token is invalid", G5, "auth"),
    ("RequestExpired", "Request has expired.", G5, "clock"),
    ("SignatureDoesNotMatch", "Signature expired: 20260101T000000Z is now earlier than", G5,
     "clock"),
    ("InvalidSignatureException", "Signature expired: 20260101T000000Z", G5, "clock"),
    ("RequestTimeTooSkewed", "The difference between the request time and the current time "
     "is too large.", G5, "clock"),
    ("UnauthorizedOperation", "You are not authorized to perform this operation.", G5,
     "permission"),
    ("AccessDenied", "User is not authorized to perform: sts:GetCallerIdentity", G5,
     "permission"),
    ("InsufficientInstanceCapacity", "We currently do not have sufficient g5.xlarge capacity",
     G5, "capacity"),
    ("InsufficientHostCapacity", "Insufficient capacity.", G5, "capacity"),
    ("Unsupported", "Your requested instance type (g5.xlarge) is not supported in your "
     "requested Availability Zone (us-east-1e).", G5, "capacity"),
    ("Unsupported", "The requested configuration is currently not supported.", G5, "other"),
    ("SpotMaxPriceTooLow", "Your Spot request price of 9.5 is lower than the minimum", P4_SPOT,
     "price"),
    ("InstanceLimitExceeded", "You have requested more instances than your limit", P4, "quota"),
    ("VcpuLimitExceeded", "You have requested more vCPU capacity than your limit", G5, "quota"),
    ("MaxSpotInstanceCountExceeded", "Max spot instance count exceeded", G5, "quota"),
    ("RequestLimitExceeded", "Request limit exceeded.", G5, "throttled"),
    ("Throttling", "Rate exceeded", G5, "throttled"),
    ("InvalidInstanceID.NotFound", "The instance ID 'i-1' does not exist", G5, "not-found"),
    ("InvalidAMIID.NotFound", "The image id '[ami-1]' does not exist", G5, "not-found"),
    ("InvalidKeyPair.NotFound", "The key pair 'k' does not exist", G5, "not-found"),
    ("InvalidGroup.NotFound", "The security group 'sg-1' does not exist", G5, "not-found"),
    ("InvalidParameterValue", "Value (x) for parameter y is invalid", G5, "invalid"),
    ("SomethingNewInEc2", "a code gpudesk has never seen", G5, "other"),
])
def test_error_mapping_table(code: str, message: str, ctx: aws_errors.CallContext,
                             kind: str) -> None:
    err = aws_errors.from_exception(_client_error(code, message), ctx)
    assert err.kind == kind
    assert err.detail == f"{code}: {message}"
    assert err.failover == (kind in ("quota", "capacity", "price"))
    text = str(err)
    assert "{" not in text  # every placeholder filled
    if kind == "other":
        assert err.template == MSG_OTHER
        assert text == f"AWS refused the request: {code}: {message}"
    if kind == "permission":
        assert err.values["permission"] == "ec2:RunInstances"
        assert "may not call RunInstances" in text


@pytest.mark.parametrize(("code", "ctx", "quota", "quota_code"), [
    ("VcpuLimitExceeded", G5, "Running On-Demand G and VT instances", "L-DB2E81BA"),
    ("InstanceLimitExceeded", P4, "Running On-Demand P instances", "L-417A185B"),
    ("MaxSpotInstanceCountExceeded", G5, "All G and VT Spot Instance Requests", "L-3819A6DF"),
    ("VcpuLimitExceeded", G5_SPOT, "All G and VT Spot Instance Requests", "L-3819A6DF"),
    ("MaxSpotInstanceCountExceeded", P4_SPOT, "All P Spot Instance Requests", "L-7212CCBC"),
])
def test_quota_errors_name_the_quota_and_how_to_raise_it(
        code: str, ctx: aws_errors.CallContext, quota: str, quota_code: str) -> None:
    err = aws_errors.map_error(code, "limit", ctx)
    assert err.kind == "quota"
    assert (err.values["quota"], err.values["code"], err.values["how"]) == \
        (quota, quota_code, HOW_QUOTA_AWS)
    assert f'"{quota}" in us-east-1 is too small for {ctx.instance_type}' in str(err)
    assert f"(quota code {quota_code})" in str(err)


def test_capacity_and_price_messages_name_the_place() -> None:
    cap = aws_errors.map_error("InsufficientInstanceCapacity", "none", G5)
    assert str(cap) == "AWS has no g5.xlarge free in us-east-1a right now."
    price = aws_errors.map_error("SpotMaxPriceTooLow", "low", P4_SPOT)
    assert "maximum spot price 9.5 USD/h is below the market price in us-east-1" in str(price)


def test_transport_failures_are_network_errors() -> None:
    for exc in (EndpointConnectionError(endpoint_url="https://ec2.us-east-1.amazonaws.com/"),
                ConnectTimeoutError(endpoint_url="https://ec2.us-east-1.amazonaws.com/")):
        err = aws_errors.from_exception(exc, G5)
        assert err.kind == "network"
        assert "ec2.us-east-1.amazonaws.com" in str(err)


def test_secret_never_shows_in_repr_str_or_errors(
        aws: MotoAws, no_error_carries_the_secret: list[ProviderError]) -> None:  # noqa: F811
    p = aws.provider()
    assert "AKIA…0001" in repr(p)
    leaky = _client_error("SignatureDoesNotMatch",
                          f"The canonical string ... aws_secret_access_key={SECRET} "
                          f"Credential={KEY_ID}/20260101 and {SECRET}")
    err = aws_errors.from_exception(leaky, G5)
    assert KEY_ID not in err.detail
    errors: list[ProviderError] = [err]
    for call in (lambda: _no_server().verify(), lambda: p.find_image(R, "g5.xlarge"),
                 lambda: p.terminate(R, "i-0123456789abcdef0")):
        with pytest.raises(ProviderError) as info:
            call()
        errors.append(info.value)
    _no_secret(p, str(p), *errors)
    assert len(no_error_carries_the_secret) >= 4  # the autouse check saw them too


# --------------------------------------------------------------------------- pure parts


def test_latest_spot_price_per_zone_and_type() -> None:
    t0 = datetime(2026, 5, 1, 12, tzinfo=UTC)
    history = [
        {"AvailabilityZone": "us-east-1a", "InstanceType": "g5.xlarge", "SpotPrice": "0.40",
         "Timestamp": t0},
        {"AvailabilityZone": "us-east-1a", "InstanceType": "g5.xlarge", "SpotPrice": "0.45",
         "Timestamp": t0 + timedelta(hours=1)},
        {"AvailabilityZone": "us-east-1a", "InstanceType": "g5.xlarge", "SpotPrice": "0.41",
         "Timestamp": t0 - timedelta(hours=1)},
        {"AvailabilityZone": "us-east-1b", "InstanceType": "g5.xlarge", "SpotPrice": "0.39",
         "Timestamp": t0},
        {"AvailabilityZone": "us-east-1b", "InstanceType": "p4d.24xlarge", "SpotPrice": "9.10",
         "Timestamp": t0},
        {"AvailabilityZone": "us-east-1c", "InstanceType": "g5.xlarge", "SpotPrice": "n/a",
         "Timestamp": t0},
        {"AvailabilityZone": "us-east-1c", "InstanceType": "g5.xlarge", "SpotPrice": "0",
         "Timestamp": t0},
    ]
    assert aws_offers.latest_spot_prices(history) == {
        ("us-east-1a", "g5.xlarge"): 0.45, ("us-east-1b", "g5.xlarge"): 0.39,
        ("us-east-1b", "p4d.24xlarge"): 9.10}


def test_live_offers_spot_per_zone_and_bundled_on_demand(aws: MotoAws) -> None:  # noqa: F811
    p = aws.provider(known_types={"g5.xlarge", "g4dn.xlarge", "p3.2xlarge"})
    offers = p.live_offers(R)
    on_demand = {o.instance_type: o.price_per_hour for o in offers if o.market == "on-demand"}
    assert on_demand == {"g5.xlarge": 1.006, "g4dn.xlarge": 0.526}  # p3 unknown to moto
    spot = [o for o in offers if o.market == "spot"]
    zones = {o.zone for o in spot if o.instance_type == "g5.xlarge"}
    offered = aws.client("ec2").describe_instance_type_offerings(
        LocationType="availability-zone",
        Filters=[{"Name": "instance-type", "Values": ["g5.xlarge"]}])["InstanceTypeOfferings"]
    assert zones == {o["Location"] for o in offered} and len(zones) >= 2
    assert all(o.currency == "USD" and o.price_per_hour > 0 and o.region == R for o in offers)
    assert {o.instance_type for o in spot} <= {"g5.xlarge", "g4dn.xlarge"}


def test_state_and_market_mapping() -> None:
    for aws_state, ours in [("pending", "pending"), ("running", "running"),
                            ("stopping", "stopping"), ("stopped", "stopped"),
                            ("shutting-down", "terminated"), ("terminated", "terminated")]:
        inst = aws_offers.to_instance(R, {"InstanceId": "i-1", "State": {"Name": aws_state},
                                          "InstanceLifecycle": "spot"})
        assert (inst.state, inst.market) == (ours, "spot")
    plain = aws_offers.to_instance(R, {"InstanceId": "i-2", "State": {"Name": "running"},
                                       "PublicIpAddress": "198.51.100.1",
                                       "LaunchTime": datetime(2026, 1, 1, tzinfo=UTC)})
    assert (plain.market, plain.public_ip, plain.launched_at) == \
        ("on-demand", "198.51.100.1", datetime(2026, 1, 1, tzinfo=UTC).timestamp())


def test_dlami_choice_and_architecture() -> None:
    root = "/aws/service/deeplearning/ami/x86_64/"
    params = [{"Name": root + "oss-nvidia-driver-gpu-pytorch-2.9-ubuntu-22.04/latest/ami-id",
               "Value": "ami-00000000000000001"},
              {"Name": root + "oss-nvidia-driver-gpu-pytorch-2.9-ubuntu-24.04/latest/ami-id",
               "Value": "ami-00000000000000002"},
              {"Name": root + "oss-nvidia-driver-gpu-pytorch-2.10-ubuntu-22.04/latest/ami-id",
               "Value": "ami-00000000000000003"},
              {"Name": root + "oss-nvidia-driver-gpu-pytorch-2.11-ubuntu-24.04/latest/ami-id",
               "Value": "not-an-ami"},
              {"Name": root + "base-oss-nvidia-driver-ubuntu-24.04/latest/ami-id",
               "Value": "ami-00000000000000004"}]
    assert aws_offers.best_dlami_parameter(params) == "ami-00000000000000003"  # 2.10 > 2.9
    assert aws_offers.best_dlami_parameter([]) == ""
    assert [aws_offers.architecture(t) for t in ("g5.xlarge", "g5g.xlarge", "p4de.24xlarge",
                                                 "g6e.xlarge", "c7gn.large")] == \
        ["x86_64", "arm64", "x86_64", "x86_64", "arm64"]
