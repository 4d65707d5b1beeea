"""AWS EC2 through boto3: keys, firewall, Deep Learning AMI, instances and live prices.

Every call goes through :meth:`AwsProvider._call`, which turns any botocore
exception into a typed :class:`ProviderError` (see ``aws_errors``), so nothing
from botocore leaves this module. Choices worth knowing:

* Clients come from an explicit ``boto3.session.Session`` built on a botocore
  session that reads no ``~/.aws`` files and no ``AWS_PROFILE``: the keys the
  user gave gpudesk are the only ones used. ``AWS_ENDPOINT_URL`` is still
  honoured (tests point it at moto; private clouds at their endpoint).
* Throttling is retried by botocore ("standard" mode, 5 attempts, backoff).
* ``run_instance`` looks for a live instance tagged with the ledger id (or
  carrying the client token) before it asks for one: EC2 honours ClientToken
  itself, moto does not, and a retried launch must never make two machines.
* The security group opens tcp/22 to one address and nothing else inbound;
  outbound stays EC2's default (all), which the machine needs for pip & co.
* ``verify`` calls STS GetCallerIdentity, then a RunInstances DryRun in the
  first region: DryRunOperation means the keys may launch, UnauthorizedOperation
  that they may not (moto answers DryRunOperation to any dry run).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from collections.abc import Iterator
from datetime import UTC
from datetime import datetime
from typing import Any
from typing import TypeVar

import boto3
import botocore.session
from botocore.config import Config
from botocore.exceptions import BotoCoreError
from botocore.exceptions import ClientError
from botocore.parsers import ResponseParserError

from gpudesk.services.cloud.providers import aws_offers as offers
from gpudesk.services.cloud.providers import base
from gpudesk.services.cloud.providers.aws_errors import MSG_DISK_BELOW_IMAGE
from gpudesk.services.cloud.providers.aws_errors import MSG_NEED_GROUP
from gpudesk.services.cloud.providers.aws_errors import PROVIDER_LABEL
from gpudesk.services.cloud.providers.aws_errors import CallContext
from gpudesk.services.cloud.providers.aws_errors import error_code
from gpudesk.services.cloud.providers.aws_errors import from_exception
from gpudesk.services.cloud.providers.aws_groups import SSH_RULE_DESCRIPTION
from gpudesk.services.cloud.providers.aws_groups import MachineGroups
from gpudesk.services.cloud.providers.aws_keep_alive import AwsKeepAlive
from gpudesk.services.cloud.providers.aws_machine import machine_params

CONNECT_TIMEOUT_S = 10
READ_TIMEOUT_S = 30
MAX_ATTEMPTS = 5
USER_AGENT_EXTRA = "gpudesk"
GROUP_PREFIX = base.RESOURCE_PREFIX + "ssh-"
PLACEHOLDER_AMI = "ami-00000000000000000"  # a well-formed id for the permission dry run
_T = TypeVar("_T")


def _bundled_aws() -> tuple[list[str], set[str]]:
    from gpudesk.services.cloud.catalog import load_catalog

    catalog = load_catalog()
    return catalog.regions("aws"), {o.instance_type for o in catalog.filter(provider="aws")}


def _bundled_ondemand(region: str) -> dict[str, float]:
    from gpudesk.services.cloud.catalog import load_catalog

    return {o.instance_type: o.ondemand_price
            for o in load_catalog().filter(provider="aws", region=region)
            if o.ondemand_price is not None}


def shutdown_behavior(action: str, market: str) -> str:
    """InstanceInitiatedShutdownBehavior for a budget action (spot one-time: terminate)."""
    return "terminate" if action == "terminate" or market == "spot" else "stop"


# The default login user of an AMI by what its name says, first match wins (AWS's list:
# "Default user names" in the EC2 user guide). Amazon Linux, RHEL and SUSE: ec2-user.
_IMAGE_USERS = (("ubuntu", "ubuntu"), ("debian", "admin"), ("centos", "centos"),
                ("rocky", "rocky"), ("fedora", "fedora"), ("almalinux", "ec2-user"),
                ("bitnami", "bitnami"))


def image_login_user(description: str) -> str:
    """The login user of an AMI from its name/description/platform text."""
    text = description.lower()
    return next((user for word, user in _IMAGE_USERS if word in text), "ec2-user")


def group_name(address: str) -> str:
    """``gpudesk-ssh-203-0-113-7`` for 203.0.113.7/32: one group per allowed address."""
    host = address.split("/", 1)[0]
    return GROUP_PREFIX + host.replace(".", "-").replace(":", "-")


_LOADER_LOCK = threading.Lock()
_loader: Any = None


def _shared_loader() -> Any:
    """One botocore data loader for the process: each new session otherwise parses EC2's
    service model again (0.2-0.3 s per provider; 0.02 s with the parsed model shared)."""
    global _loader
    with _LOADER_LOCK:
        if _loader is None:
            import botocore.loaders

            _loader = botocore.loaders.create_loader()
        return _loader


def _isolated_session(creds: base.Credentials) -> boto3.session.Session:
    """A session that uses ``creds`` only: no ~/.aws files, no AWS_PROFILE."""
    core = botocore.session.Session(session_vars={
        "profile": (None, None, None, None),
        "config_file": (None, None, os.devnull, None),
        "credentials_file": (None, None, os.devnull, None),
    })
    core.register_component("data_loader", _shared_loader())
    return boto3.session.Session(
        aws_access_key_id=creds.key_id, aws_secret_access_key=creds.secret,
        aws_session_token=creds.session_token or None, botocore_session=core)


class AwsProvider(MachineGroups, AwsKeepAlive):
    """:class:`~gpudesk.services.cloud.providers.base.Provider` for AWS EC2. Blocking."""

    name: base.ProviderName = "aws"

    def __init__(self, credentials: base.Credentials, *, endpoint_url: str | None = None,
                 known_types: set[str] | None = None, regions: list[str] | None = None,
                 max_attempts: int = MAX_ATTEMPTS) -> None:
        self._creds = credentials
        self._endpoint_url = endpoint_url
        bundled = (_bundled_aws() if regions is None or known_types is None
                   else ([], set()))  # the catalog is read only when a default is needed
        self._regions = list(regions if regions is not None else bundled[0])
        self.known_types = set(known_types if known_types is not None else bundled[1])
        self._config = Config(
            connect_timeout=CONNECT_TIMEOUT_S, read_timeout=READ_TIMEOUT_S,
            retries={"mode": "standard", "total_max_attempts": max_attempts},
            user_agent_extra=USER_AGENT_EXTRA)
        self._session: boto3.session.Session | None = None
        self._clients: dict[tuple[str, str], Any] = {}
        self._lock = threading.Lock()
        # resource → EC2's words when it last refused to delete it (cleanup reads it)
        self.refusals: dict[str, str] = {}

    def __repr__(self) -> str:  # never the secret: only the masked key id
        return f"AwsProvider(key_id={base.mask(self._creds.key_id)!r}, regions={self._regions!r})"

    __str__ = __repr__

    # ------------------------------------------------------------------ plumbing

    def _client(self, service: str, region: str) -> Any:
        """One client per (service, region); creating one is not thread-safe, using it is."""
        key = (service, region)
        with self._lock:
            client = self._clients.get(key)
            if client is None:
                if self._session is None:
                    self._session = _isolated_session(self._creds)
                client = self._session.client(  # type: ignore[call-overload]
                    service, region_name=region, endpoint_url=self._endpoint_url,
                    config=self._config)
                self._clients[key] = client
            return client

    def _call(self, ctx: CallContext, fn: Callable[[Any], _T]) -> _T:
        """Run ``fn(client)``; any botocore exception becomes a ProviderError."""
        try:
            client = self._client(ctx.service, ctx.region)
            return fn(client)
        except (ClientError, BotoCoreError, ResponseParserError) as exc:
            raise from_exception(exc, ctx) from None

    def _pages(self, ctx: CallContext, key: str, **params: Any) -> list[Any]:
        """Every item under ``key`` across the pages of a paginated operation."""
        def fetch(client: Any) -> list[Any]:
            paginator = client.get_paginator(_snake(ctx.action))
            return [item for page in paginator.paginate(**params) for item in page.get(key, [])]
        return self._call(ctx, fetch)

    def _ec2(self, action: str, region: str, **ctx: Any) -> CallContext:
        return CallContext("ec2", action, region, **ctx)

    # ------------------------------------------------------------------ identity

    def regions(self) -> list[str]:
        return list(self._regions)

    def verify(self) -> base.Identity:
        region = self._regions[0] if self._regions else "us-east-1"
        who = self._call(CallContext("sts", "GetCallerIdentity", region),
                         lambda c: c.get_caller_identity())
        check, detail = self._can_launch(region)
        return base.Identity(account=str(who.get("Account", "")),
                             principal=str(who.get("Arn", "")),
                             can_launch=check == "allowed", launch_check=check,
                             launch_detail=detail)

    def _can_launch(self, region: str) -> tuple[base.LaunchCheck, str]:
        """RunInstances with DryRun: EC2 checks the permission without starting anything."""
        itype = ("g4dn.xlarge" if "g4dn.xlarge" in self.known_types or not self.known_types
                 else min(self.known_types))
        try:
            image = self.find_image(region, itype)
        except base.ProviderError:
            image = PLACEHOLDER_AMI
        ctx = self._ec2("RunInstances", region, instance_type=itype)
        try:
            self._client("ec2", region).run_instances(
                DryRun=True, ImageId=image, InstanceType=itype, MinCount=1, MaxCount=1)
        except ClientError as exc:
            code = error_code(exc)
            if code == "DryRunOperation":
                return "allowed", ""
            mapped = from_exception(exc, ctx)
            if mapped.kind in ("auth", "clock", "network", "throttled"):
                raise mapped from None
            if code == "UnauthorizedOperation" or mapped.kind == "permission":
                return "denied", mapped.detail  # the documented refusal (IAM: AccessDenied)
            return "unknown", mapped.detail or mapped.message()  # the dry run proved nothing
        except (BotoCoreError, ResponseParserError) as exc:
            raise from_exception(exc, ctx) from None
        return "allowed", ""  # pragma: no cover - EC2 never runs a dry run

    # ------------------------------------------------------------------ key pair & firewall

    def ensure_key_pair(self, region: str, name: str, public_key: str) -> str:
        ctx = self._ec2("DescribeKeyPairs", region, resource=name)
        existing = self._call(ctx, lambda c: c.describe_key_pairs(
            Filters=[{"Name": "key-name", "Values": [name]}]))
        if existing.get("KeyPairs"):
            return name
        tags = [{"Key": base.TAG_MANAGED, "Value": "1"}]
        try:
            self._call(self._ec2("ImportKeyPair", region, resource=name),
                       lambda c: c.import_key_pair(
                           KeyName=name, PublicKeyMaterial=public_key.strip().encode(),
                           TagSpecifications=[{"ResourceType": "key-pair", "Tags": tags}]))
        except base.ProviderError as err:
            if "InvalidKeyPair.Duplicate" not in err.detail:  # another launch won the race
                raise
        return name

    def ensure_security_group(self, region: str, allow_from: str) -> str:
        address = base.single_address(allow_from)  # refuses 0.0.0.0/0, /24, ... before any call
        name = group_name(address)
        vpc = self._default_vpc(region)
        group = self._group_named(region, name, vpc)
        if group is not None:
            group_id = str(group["GroupId"])
        else:
            tags = [{"Key": base.TAG_MANAGED, "Value": "1"}]
            created = self._call(self._ec2("CreateSecurityGroup", region, resource=name),
                                 lambda c: c.create_security_group(
                                     GroupName=name, VpcId=vpc,
                                     Description=f"gpudesk: SSH from {address} only",
                                     TagSpecifications=[{"ResourceType": "security-group",
                                                         "Tags": tags}]))
            group_id = str(created["GroupId"])
            group = {"IpPermissions": []}
        self._only_ssh_from(region, group_id, address, group.get("IpPermissions", []))
        return group_id

    def _default_vpc(self, region: str) -> str:
        vpcs = self._call(self._ec2("DescribeVpcs", region, resource="default"),
                          lambda c: c.describe_vpcs(
                              Filters=[{"Name": "isDefault", "Values": ["true"]}]))["Vpcs"]
        if not vpcs:
            raise base.ProviderError("not-found", base.MSG_NOT_FOUND, provider=PROVIDER_LABEL,
                                     what="default VPC", name="(default)", region=region)
        return str(vpcs[0]["VpcId"])

    def _only_ssh_from(self, region: str, group_id: str, address: str,
                       permissions: list[dict[str, Any]]) -> None:
        """Revoke every inbound rule but tcp/22 from ``address``; add that one if missing."""
        v6 = ":" in address
        wanted = ("tcp", 22, 22, "Ipv6Ranges" if v6 else "IpRanges", address)
        extra: list[dict[str, Any]] = []
        present = False
        for atom, revoke in _atoms(permissions):
            if atom == wanted:
                present = True
            else:
                extra.append(revoke)
        if extra:
            self._call(self._ec2("RevokeSecurityGroupIngress", region, resource=group_id),
                       lambda c: c.revoke_security_group_ingress(GroupId=group_id,
                                                                 IpPermissions=extra))
        if not present:
            key, field = ("Ipv6Ranges", "CidrIpv6") if v6 else ("IpRanges", "CidrIp")
            rule = {"IpProtocol": "tcp", "FromPort": 22, "ToPort": 22,
                    key: [{field: address, "Description": SSH_RULE_DESCRIPTION}]}
            self._call(self._ec2("AuthorizeSecurityGroupIngress", region, resource=group_id),
                       lambda c: c.authorize_security_group_ingress(GroupId=group_id,
                                                                    IpPermissions=[rule]))

    # ------------------------------------------------------------------ image

    def find_image(self, region: str, instance_type: str) -> str:
        """The newest AWS Deep Learning AMI (OSS NVIDIA driver, PyTorch, Ubuntu).

        First the public SSM parameters AWS keeps for it; if SSM has none (or
        the keys may not read SSM), DescribeImages of Amazon's own images.
        """
        arch = offers.architecture(instance_type)
        root = offers.DLAMI_SSM_ROOT.format(arch=arch)
        ctx = CallContext("ssm", "GetParametersByPath", region, resource=root)
        try:
            params = list(self._pages(ctx, "Parameters", Path=root, Recursive=True))
        except base.ProviderError as err:
            if err.kind not in ("permission", "not-found", "invalid", "other"):
                raise
            params = []
        found = offers.best_dlami_parameter(params)
        if found:
            return found
        images = self._call(
            self._ec2("DescribeImages", region, resource=offers.DLAMI_TITLE),
            lambda c: c.describe_images(Owners=["amazon"], Filters=[
                {"Name": "name", "Values": [offers.DLAMI_NAME_FILTER]},
                {"Name": "state", "Values": ["available"]},
                {"Name": "architecture", "Values": [arch]}])).get("Images", [])
        found = offers.newest_dlami_image(images, arch)
        if not found:
            raise base.ProviderError("not-found", base.MSG_NOT_FOUND, provider=PROVIDER_LABEL,
                                     what="GPU deep-learning image",
                                     name=offers.DLAMI_TITLE, region=region)
        return found

    def login_user(self, region: str, image_id: str = "") -> str:
        """Who logs in on ``image_id`` (""; the image :meth:`find_image` picks, a DLAMI on
        Ubuntu): read from the image's name and platform (DescribeImages)."""
        if not image_id:
            return "ubuntu"
        image = self._image(region, image_id)
        return image_login_user(" ".join(str(image.get(k) or "") for k in (
            "Name", "Description", "PlatformDetails", "ImageLocation")))

    def _image(self, region: str, image_id: str) -> dict[str, Any]:
        """The image ``image_id`` as DescribeImages answers it; not-found if it has none."""
        images = self._call(self._ec2("DescribeImages", region, resource=image_id),
                            lambda c: c.describe_images(ImageIds=[image_id])).get("Images", [])
        if not images:
            raise base.ProviderError("not-found", base.MSG_NOT_FOUND, provider=PROVIDER_LABEL,
                                     what="image", name=image_id, region=region)
        return dict(images[0])

    def _root_device(self, region: str, image_id: str) -> tuple[str, int]:
        """The image's root device name and its snapshot size (GB, 0 when unknown)."""
        image = self._image(region, image_id)
        device = str(image.get("RootDeviceName") or "/dev/sda1")
        size = 0
        for mapping in image.get("BlockDeviceMappings", []):
            if mapping.get("DeviceName") == device:
                size = int(mapping.get("Ebs", {}).get("VolumeSize") or 0)
        return device, size

    def _launch_image(self, request: base.LaunchRequest) -> tuple[str, str]:
        """The image a launch uses (the request's, else found) and its root device; a disk
        smaller than the image's snapshot is refused before anything is made."""
        image = request.image_id or self.find_image(request.region, request.instance_type)
        device, minimum = self._root_device(request.region, image)
        if minimum > request.disk_gb:
            raise base.ProviderError("invalid", MSG_DISK_BELOW_IMAGE, image=image,
                                     minimum=minimum, disk_gb=request.disk_gb)
        return image, device

    # ------------------------------------------------------------------ instances

    def run_instance(self, request: base.LaunchRequest) -> base.CloudInstance:
        base.validate_request("aws", request, self._regions, self.known_types)
        region = request.region
        existing = self._existing(request)
        if existing is not None:
            return existing
        group = request.security_group
        if not group:
            if not request.allow_from:
                raise base.ProviderError("invalid", MSG_NEED_GROUP)
            group = self.ensure_security_group(region, request.allow_from)
        image, device = self._launch_image(request)
        params = dict(machine_params(request, image, device, group), MinCount=1, MaxCount=1)
        if request.client_token:
            params["ClientToken"] = request.client_token
        # What the agent's OS shutdown means to EC2 (issue 12): terminate ends the bill, stop
        # leaves the disk billing. A one-time spot machine cannot be stopped: terminate.
        params["InstanceInitiatedShutdownBehavior"] = shutdown_behavior(
            request.on_budget, request.market)
        if request.user_data:
            from gpudesk.services.cloud.providers.user_data import encode  # gzip: 16 KB raw
            params["UserData"] = encode("aws", request.user_data)  # boto3 base64-encodes it
        if request.instance_role:  # RunInstances IamInstanceProfile: bound at creation
            params["IamInstanceProfile"] = {"Name": request.instance_role}
        if request.zone:
            params["Placement"] = {"AvailabilityZone": request.zone}
        ctx = self._ec2("RunInstances", region, zone=request.zone,
                        instance_type=request.instance_type, market=request.market,
                        max_price=request.max_price, resource=image,
                        names=(("image", image), ("security group", group),
                               ("key pair", request.key_name), ("machine", request.ledger_id)))
        answer = self._call(ctx, lambda c: c.run_instances(**params))
        return offers.to_instance(region, answer["Instances"][0])

    def _existing(self, request: base.LaunchRequest) -> base.CloudInstance | None:
        """A live machine this request already made (same ledger id or client token).

        Matched here rather than with a ``client-token`` filter, which moto lacks;
        one DescribeInstances of the live machines answers both questions.
        """
        live = self._raw_instances(request.region, Filters=[
            {"Name": "instance-state-name", "Values": list(offers.LIVE_STATES)}])
        for inst in live:
            tags = {t.get("Key"): t.get("Value") for t in inst.get("Tags", [])}
            if tags.get(base.TAG_LEDGER) == request.ledger_id or (
                    request.client_token and inst.get("ClientToken") == request.client_token):
                return offers.to_instance(request.region, inst)
        return None

    def _raw_instances(self, region: str, **params: Any) -> list[dict[str, Any]]:
        ctx = self._ec2("DescribeInstances", region,
                        resource=",".join(params.get("InstanceIds", [])))
        return [inst for reservation in self._pages(ctx, "Reservations", **params)
                for inst in reservation.get("Instances", [])]

    def _instances(self, region: str, **params: Any) -> list[base.CloudInstance]:
        return [offers.to_instance(region, inst) for inst in self._raw_instances(region, **params)]

    def describe(self, region: str, cloud_ids: list[str]) -> list[base.CloudInstance]:
        ids = [i for i in dict.fromkeys(cloud_ids) if i]
        if not ids:
            return []
        try:
            return self._instances(region, InstanceIds=ids)
        except base.ProviderError as err:
            if err.kind != "not-found":
                raise
        # One unknown id fails the whole call; a filter simply leaves the unknown ones out.
        return self._instances(region, Filters=[{"Name": "instance-id", "Values": ids}])

    def list_managed(self, region: str) -> list[base.CloudInstance]:
        return self._instances(region, Filters=[{"Name": "tag-key",
                                                 "Values": [base.TAG_MANAGED]}])

    def set_guard(self, region: str, cloud_id: str, action: str, market: str,
                  timer_at: float | None = None) -> None:
        """Follow a changed budget action: ModifyInstanceAttribute's shutdown behaviour.

        EC2 has no cloud-side timer; ``timer_at`` is ignored.
        """
        del timer_at
        value = shutdown_behavior(action, market)
        self._call(self._ec2("ModifyInstanceAttribute", region, resource=cloud_id),
                   lambda c: c.modify_instance_attribute(
                       InstanceId=cloud_id, Attribute="instanceInitiatedShutdownBehavior",
                       Value=value))

    def shutdown_behavior_of(self, region: str, cloud_id: str) -> str:
        """EC2's own word on what an OS shutdown does to this machine."""
        answer = self._call(self._ec2("DescribeInstanceAttribute", region, resource=cloud_id),
                            lambda c: c.describe_instance_attribute(
                                InstanceId=cloud_id,
                                Attribute="instanceInitiatedShutdownBehavior"))
        return str(answer.get("InstanceInitiatedShutdownBehavior", {}).get("Value", ""))

    def stop(self, region: str, cloud_id: str) -> None:
        self._call(self._ec2("StopInstances", region, resource=cloud_id),
                   lambda c: c.stop_instances(InstanceIds=[cloud_id]))

    def start(self, region: str, cloud_id: str) -> None:
        self._call(self._ec2("StartInstances", region, resource=cloud_id),
                   lambda c: c.start_instances(InstanceIds=[cloud_id]))

    def terminate(self, region: str, cloud_id: str) -> None:
        self._call(self._ec2("TerminateInstances", region, resource=cloud_id),
                   lambda c: c.terminate_instances(InstanceIds=[cloud_id]))

    def cleanup(self, region: str) -> list[str]:
        """Delete gpudesk's key pairs and groups that no instance (but terminated) uses.

        EC2 refuses a group an interface still holds (``DependencyViolation``) for a while
        after its instance terminated: that one is skipped, its refusal kept in
        ``refusals``, and asked again by the next cleanup.
        """
        using = self._raw_instances(region, Filters=[{"Name": "instance-state-name",
                                                      "Values": list(offers.USING_STATES)}])
        keys_used = {str(i["KeyName"]) for i in using if i.get("KeyName")}
        groups_used = {str(g["GroupId"]) for i in using for g in i.get("SecurityGroups", [])}
        managed = [{"Name": "tag-key", "Values": [base.TAG_MANAGED]}]
        removed: list[str] = []
        keys = self._call(self._ec2("DescribeKeyPairs", region),
                          lambda c: c.describe_key_pairs(Filters=managed)).get("KeyPairs", [])
        for key in keys:
            name = str(key["KeyName"])
            if name not in keys_used and self._try_delete(
                    self._ec2("DeleteKeyPair", region, resource=name),
                    lambda c: c.delete_key_pair(KeyName=name)):  # noqa: B023
                removed.append(name)
        groups = self._pages(self._ec2("DescribeSecurityGroups", region), "SecurityGroups",
                             Filters=managed)
        for group in groups:
            gid, gname = str(group["GroupId"]), str(group.get("GroupName", ""))
            if gid not in groups_used and self._try_delete(
                    self._ec2("DeleteSecurityGroup", region, resource=gid),
                    lambda c: c.delete_security_group(GroupId=gid)):  # noqa: B023
                removed.append(gname or gid)
        return removed

    def _try_delete(self, ctx: CallContext, fn: Callable[[Any], object]) -> bool:
        """One delete; a refusal (in use, a dependency, already gone) skips that resource
        only and is kept in ``refusals``; keys, permission and network errors stop all."""
        try:
            self._call(ctx, fn)
        except base.ProviderError as err:
            if err.kind in ("auth", "clock", "network", "permission", "throttled"):
                raise
            self.refusals[ctx.resource] = err.detail or err.message()
            return False
        self.refusals.pop(ctx.resource, None)
        return True

    # ------------------------------------------------------------------ prices

    def live_offers(self, region: str) -> list[base.LiveOffer]:
        """Spot prices per zone now, and on-demand offers for the types the region has.

        EC2 itself quotes no on-demand price (that needs the Pricing API), so the
        on-demand ``price_per_hour`` is the *bundled catalog's* list price, and an
        on-demand offer is listed only where DescribeInstanceTypes knows the type
        and the catalog has a price for it in ``region``.
        """
        present = self._types_in_region(region)
        result: list[base.LiveOffer] = []
        bundled = _bundled_ondemand(region)
        for itype in sorted(present):
            if itype in bundled:
                result.append(base.LiveOffer("aws", region, "", itype, "on-demand",
                                             bundled[itype], "USD"))
        if not present:
            return result
        ctx = self._ec2("DescribeSpotPriceHistory", region)
        history = self._pages(ctx, "SpotPriceHistory", InstanceTypes=sorted(present),
                              ProductDescriptions=["Linux/UNIX"],
                              StartTime=datetime.now(UTC))
        for (zone, itype), price in sorted(offers.latest_spot_prices(history).items(),
                                           key=lambda kv: (kv[0][1], kv[0][0])):
            if itype in present:
                result.append(base.LiveOffer("aws", region, zone, itype, "spot", price, "USD"))
        return result

    def spot_price_history(self, region: str, zone: str, instance_type: str,
                           since: float) -> list[base.PricePoint]:
        ctx = self._ec2("DescribeSpotPriceHistory", region)
        history = self._pages(ctx, "SpotPriceHistory", InstanceTypes=[instance_type],
                              AvailabilityZone=zone, ProductDescriptions=["Linux/UNIX"],
                              StartTime=datetime.fromtimestamp(since, UTC))
        return [base.PricePoint(at, price, "USD")
                for at, price in offers.spot_price_points(history, zone, instance_type)]

    def spot_placement_scores(self, region: str, instance_type: str,
                              target_capacity: int = 1) -> dict[str, int]:
        """GetSpotPlacementScores for one type in ``region``, per Availability Zone id: how
        likely (1-10) a spot request for ``target_capacity`` machines succeeds now. Not an
        interruption rate; AWS notes that one or two types always score low."""
        ctx = self._ec2("GetSpotPlacementScores", region)
        items = self._pages(ctx, "SpotPlacementScores", InstanceTypes=[instance_type],
                            TargetCapacity=target_capacity, SingleAvailabilityZone=True,
                            RegionNames=[region])
        return {str(i.get("AvailabilityZoneId") or i.get("Region") or region): int(i["Score"])
                for i in items if isinstance(i.get("Score"), int)}

    def _types_in_region(self, region: str) -> set[str]:
        """The known types DescribeInstanceTypes reports here (unknown ones are dropped)."""
        wanted = set(self.known_types)
        ctx = self._ec2("DescribeInstanceTypes", region)
        for _ in range(3):
            if not wanted:
                return set()
            try:
                return {str(t["InstanceType"]) for t in self._pages(
                    ctx, "InstanceTypes", InstanceTypes=sorted(wanted))}
            except base.ProviderError as err:
                missing = offers.unknown_types(err.detail)
                if "InvalidInstanceType" not in err.detail or not missing & wanted:
                    raise
                wanted -= missing
        return set()


_SOURCES = (("IpRanges", "CidrIp"), ("Ipv6Ranges", "CidrIpv6"),
            ("PrefixListIds", "PrefixListId"), ("UserIdGroupPairs", "GroupId"))


def _atoms(permissions: list[dict[str, Any]]
           ) -> Iterator[tuple[tuple[object, ...], dict[str, Any]]]:
    """One (rule, its revoke request) per source of each permission EC2 listed."""
    for perm in permissions:
        ports: dict[str, Any] = {k: perm[k] for k in ("FromPort", "ToPort") if k in perm}
        for kind, field in _SOURCES:
            for source in perm.get(kind, []):
                value = source.get(field, "")
                atom = (perm.get("IpProtocol"), ports.get("FromPort"), ports.get("ToPort"),
                        kind, value)
                yield atom, {"IpProtocol": perm.get("IpProtocol"), **ports,
                             kind: [{field: value}]}


def _snake(action: str) -> str:
    out = [("_" + ch.lower()) if ch.isupper() else ch for ch in action]
    return "".join(out).lstrip("_")
