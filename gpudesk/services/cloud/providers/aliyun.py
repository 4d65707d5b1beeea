"""Alibaba Cloud (Aliyun) ECS through the official SDK alibabacloud-ecs20140526.

Every request goes through :meth:`AliyunProvider._call`: the parameters are
written with the API's own names, passed through the SDK's request model
(which refuses a name the model does not know, so a typo fails here and not
silently at the cloud), signed by the SDK (ACS3-HMAC-SHA256), throttling
retried with backoff, and every SDK exception turned into a typed
:class:`ProviderError`: no SDK object or exception leaves this module.

Choices worth knowing:

* ``verify`` calls DescribeRegions (signed, cheap), then a complete RunInstances
  ``DryRun`` with what a launch would send (a type in stock, the region's public
  GPU image, a vSwitch and a security group that exist): ``DryRunOperation``
  means allowed, ``Forbidden.RAM`` denied, anything else "could not check" in
  the cloud's words. It creates nothing: without a vSwitch and a group to name,
  it says so, and the first launch checks instead.
* Machines live in one gpudesk VPC per region (172.16.0.0/16) with one vSwitch
  per zone, made on first use through the VPC API (2016-04-28) and found again
  by the gpudesk tag, like the security group, key pair and machine: ECS's own
  VPC actions take no tags, and a name would also find a VPC the user made.
* ``max_price`` is CNY/hour: a spot launch with it is ``SpotWithPriceLimit``,
  without it ``SpotAsPriceGo`` (never above the pay-as-you-go price).
* The budget guard is ``AutoReleaseTime``: ECS deletes the machine at that
  moment by itself, laptop or agent or not; :meth:`set_guard` keeps it current.
* ``stop`` uses ``StoppedMode=StopCharging``: CPU, GPU and memory stop billing
  (the system disk still bills, the public address is released and a restart
  may find no GPU free). ECS falls back to KeepCharging without an error where
  it does not apply (types with local SSDs, subscription machines, machines
  outside a VPC); :meth:`stop_note` says which applied, and why.
* Paging in each action's documented sizes, through every page: MaxResults and
  NextToken where the action takes them (DescribeSecurityGroups,
  DescribeInstances), else PageNumber/PageSize (50 for DescribeKeyPairs,
  DescribeVpcs and DescribeVSwitches). A larger page is refused by ECS
  (``InvalidParameter`` "PageSize", issue 24); tests/cloud_limits.py holds the
  limits the stand-in enforces.
* Each machine gets its own security group (aliyun_groups.py), as on the other
  clouds; :meth:`cleanup` deletes groups and key pairs no live machine uses.
* Spot is offered (:meth:`live_offers`) only where DescribeAvailableResource
  with a SpotStrategy lists the type in the zone: ECS leaves out what it does
  not sell as spot.
"""

from __future__ import annotations

import base64
import functools
import json
import time
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from alibabacloud_ecs20140526 import models as ecs_models
from alibabacloud_ecs20140526.client import Client as EcsClient
from alibabacloud_tea_openapi.utils_models import Config
from darabonba.runtime import RuntimeOptions

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.cloud.providers import aliyun_gpu_driver
from gpudesk.services.cloud.providers import aliyun_parse as ap
from gpudesk.services.cloud.providers import base
from gpudesk.services.cloud.providers.aliyun_errors import MSG_ALREADY_STOPPED_CHARGING
from gpudesk.services.cloud.providers.aliyun_errors import MSG_NEED_GROUP
from gpudesk.services.cloud.providers.aliyun_errors import MSG_STOP_CANNOT_STOP_CHARGING
from gpudesk.services.cloud.providers.aliyun_errors import MSG_STOPPED_KEEP_CHARGING
from gpudesk.services.cloud.providers.aliyun_errors import MSG_STOPPED_STOP_CHARGING
from gpudesk.services.cloud.providers.aliyun_errors import MSG_VPC_NOT_READY
from gpudesk.services.cloud.providers.aliyun_errors import PROVIDER_LABEL
from gpudesk.services.cloud.providers.aliyun_errors import WHY_KEEP_ASKED
from gpudesk.services.cloud.providers.aliyun_errors import WHY_KEEP_CLASSIC
from gpudesk.services.cloud.providers.aliyun_errors import WHY_KEEP_SUBSCRIPTION
from gpudesk.services.cloud.providers.aliyun_errors import WHY_KEEP_TYPE
from gpudesk.services.cloud.providers.aliyun_errors import CallContext
from gpudesk.services.cloud.providers.aliyun_errors import is_throttle
from gpudesk.services.cloud.providers.aliyun_errors import map_error
from gpudesk.services.cloud.providers.aliyun_groups import MachineGroups
from gpudesk.services.cloud.providers.aliyun_keep_alive import KeepAliveAliyun
from gpudesk.services.cloud.providers.sdk_provider import Refused
from gpudesk.services.cloud.providers.sdk_provider import SdkProvider
from gpudesk.services.cloud.providers.sdk_provider import ssh_group_name

REQ_TIMEOUT_MS = 30_000
# Paging, as each action's SDK model documents it (ECS refuses a larger page with
# InvalidParameter 'The specified parameter "PageSize" is not valid.'):
# MaxResults/NextToken where the action takes it (ECS recommends it; PageSize "will be
# offline soon" there), else PageNumber/PageSize with the action's own largest page.
MAX_RESULTS: dict[str, int] = {"DescribeSecurityGroups": 100, "DescribeInstances": 100}
PAGE_SIZE: dict[str, int] = {"DescribeKeyPairs": 50, "DescribeImages": 100,
                             "DescribeVpcs": 50, "DescribeVSwitches": 50}
DEFAULT_PAGE = 10  # what every paged Describe call allows
IDS_PER_CALL = 100  # DescribeInstances: "a JSON array that consists of up to 100" IDs
MSG_NO_IMAGE = QT_TRANSLATE_NOOP(
    "ProviderError", "Alibaba Cloud has no public Ubuntu image for {instance_type} in "
    "{region}, with a GPU driver or to install one on. Choose one of the region's images "
    "with --image (the Launch dialog's Image field) and install a GPU driver on it, or "
    "launch in another region. Its images: {images}")
CREATION_FAILED = "SystemFailure.Delete"  # the event of an accepted machine ECS could not make
BANDWIDTH_OUT_MBPS = 100
DISK_CATEGORY = "cloud_essd"
_VPC_WAIT_TRIES = 10


@functools.cache
def _vpc_sdk() -> tuple[Any, Any]:
    """The VPC SDK's models and client, imported on the first VPC call: loading its models
    takes about half a second, which the window's start should not pay."""
    from alibabacloud_vpc20160428 import models as vpc_models  # noqa: PLC0415
    from alibabacloud_vpc20160428.client import Client as VpcClient  # noqa: PLC0415

    return vpc_models, VpcClient


def _managed(item: dict[str, Any]) -> bool:
    """Whether a VPC or vSwitch carries gpudesk's tag (checked again after the filter)."""
    return ap.tags_of(item.get("Tags")).get(base.TAG_MANAGED) == "1"


class AliyunProvider(SdkProvider[CallContext], MachineGroups, KeepAliveAliyun):
    """Alibaba Cloud ECS behind gpudesk's Provider interface. Blocking; call off the GUI thread.

    Takes :class:`SdkProvider`'s options; ``stopped_mode`` defaults to StopCharging.
    """

    name: base.ProviderName = "aliyun"
    label = PROVIDER_LABEL
    default_stopped_mode = ap.STOP_CHARGING
    home_region = "cn-hangzhou"
    need_group_message = MSG_NEED_GROUP
    _is_throttle = staticmethod(is_throttle)
    _map_error = staticmethod(map_error)

    # ------------------------------------------------------------------ plumbing

    def _client(self, region: str, product: str = "ecs") -> Any:
        """The SDK client of ``product`` ("ecs" or "vpc") for ``region``.

        An ``endpoint`` given to the provider (a test stand-in, a private cloud) serves
        both; otherwise each SDK picks its own (``vpc.aliyuncs.com`` for cn-hangzhou,
        ``vpc.<region>.aliyuncs.com`` elsewhere, from its endpoint map).
        """
        with self._lock:
            client = self._clients.get((product, region))
            if client is None:
                config = Config(
                    access_key_id=self._credentials.key_id,
                    access_key_secret=self._credentials.secret,
                    security_token=self._credentials.session_token or None,
                    region_id=region, protocol=self._protocol,
                    endpoint=self._endpoint or None,
                    read_timeout=REQ_TIMEOUT_MS, connect_timeout=10_000)
                client = EcsClient(config) if product == "ecs" else _vpc_sdk()[1](config)
                self._clients[(product, region)] = client
            return client

    def close(self) -> None:
        """Forget the SDK clients (they hold no sockets between calls)."""
        with self._lock:
            self._clients = {}

    def _call(self, ctx: CallContext, params: dict[str, Any],
              ok_codes: frozenset[str] = frozenset()) -> dict[str, Any]:
        """One API call: checked against the SDK model, signed, throttling retried, typed.

        A code in ``ok_codes`` (DryRunOperation, "already stopped") is an answer,
        returned as ``{"Code": code}``.
        """
        models = ecs_models if ctx.product == "ecs" else _vpc_sdk()[0]
        request_cls = getattr(models, f"{ctx.action}Request")
        request = request_cls().from_map({"RegionId": ctx.region, **params})
        unknown = ap.unknown_keys(params, request.to_map())
        if unknown:  # a programming error, not the user's: say which name
            raise TypeError(f"{ctx.action} has no parameter {', '.join(unknown)}")
        method = getattr(self._client(ctx.region, ctx.product),
                         f"{ap.sdk_method(ctx.action)}_with_options")
        runtime = RuntimeOptions(autoretry=False, max_attempts=1, read_timeout=REQ_TIMEOUT_MS,
                                 connect_timeout=10_000)

        def attempt() -> dict[str, Any] | Refused:
            try:
                response = method(request, runtime)
            except Exception as exc:  # noqa: BLE001 - the SDK's and requests' errors alike
                return Refused(*ap.code_of(exc))
            body = getattr(response, "body", None)
            answer = body.to_map() if body is not None else {}
            return answer if isinstance(answer, dict) else {}

        return self._retrying(replace(ctx, key_id=base.mask(self._credentials.key_id)),
                              attempt, ok_codes)

    def _ecs(self, region: str, action: str, params: dict[str, Any],
             **ctx: Any) -> dict[str, Any]:
        return self._call(CallContext(action, region, **ctx), params)

    def _vpc(self, region: str, action: str, params: dict[str, Any],
             **ctx: Any) -> dict[str, Any]:
        """A call to the VPC API (2016-04-28): its VPC and vSwitch calls take tags."""
        return self._call(CallContext(action, region, product="vpc", **ctx), params)

    def _pages(self, region: str, action: str, params: dict[str, Any],
               path: tuple[str, str], product: str = "ecs") -> Iterator[dict[str, Any]]:
        """Every item of a paged Describe call, through every page, in the action's own sizes."""
        ctx = CallContext(action, region, product=product)
        if action in MAX_RESULTS:
            token, seen = "", set[str]()
            while True:
                request = dict(params, MaxResults=MAX_RESULTS[action])
                if token:
                    request["NextToken"] = token
                answer = self._call(ctx, request)
                yield from (answer.get(path[0]) or {}).get(path[1]) or []
                token = str(answer.get("NextToken") or "")
                if not token or token in seen:  # the last page (or a cloud going round)
                    return
                seen.add(token)
        size = PAGE_SIZE.get(action, DEFAULT_PAGE)
        number = 1
        while True:
            answer = self._call(ctx, dict(params, PageNumber=number, PageSize=size))
            batch = (answer.get(path[0]) or {}).get(path[1]) or []
            yield from batch
            total = int(answer.get("TotalCount") or 0)
            if not batch or number * size >= total:
                return
            number += 1

    # ------------------------------------------------------------------ Provider

    def _signed_ping(self, region: str) -> None:
        self._ecs(region, "DescribeRegions", {})

    def _launch_check(self, region: str) -> tuple[base.LaunchCheck, str]:
        """A complete RunInstances DryRun, made of what exists: nothing is created for it.

        A type gpudesk knows in stock in a zone with a vSwitch (gpudesk's first, else
        any), a security group of that vSwitch's VPC and the region's public GPU
        image (:meth:`find_image`, as a launch picks it). DryRunOperation means
        allowed, Forbidden.RAM denied; anything else, or a dry run that cannot be put
        together (no vSwitch yet), is "unknown" in words, and the first launch checks.
        """
        try:
            pick = self._dry_run_place(region)
            if isinstance(pick, str):
                return "unknown", pick
            zone, itype, vswitch, group = pick
            image = self.find_image(region, itype)
        except base.ProviderError as err:  # the dry run could not be put together
            if err.kind in ("auth", "clock", "network", "throttled"):
                raise
            return "unknown", err.detail or err.message()
        try:
            self._call(CallContext("RunInstances", region, zone=zone, instance_type=itype), {
                "DryRun": True, "ZoneId": zone, "InstanceType": itype,
                "InstanceChargeType": ap.CHARGE_ON_DEMAND, "SpotStrategy": ap.SPOT_NONE,
                "ImageId": image, "VSwitchId": vswitch, "SecurityGroupId": group,
                "SystemDisk": {"Category": DISK_CATEGORY, "Size": 40},
                "InternetChargeType": "PayByTraffic",
                "InternetMaxBandwidthOut": BANDWIDTH_OUT_MBPS, "Amount": 1},
                ok_codes=frozenset({"DryRunOperation"}))
        except base.ProviderError as err:
            if err.kind in ("auth", "clock", "network", "throttled"):
                raise
            if err.kind == "permission" and "Forbidden" in err.detail:
                return "denied", err.detail
            return "unknown", err.detail or err.message()
        return "allowed", ""

    def _dry_run_place(self, region: str) -> tuple[str, str, str, str] | str:
        """(zone, type, vSwitch, security group) for the dry run, or why there is none.

        Only looks: a key check must not create anything, not even the free VPC.
        """
        switches = sorted(self._vswitches(region, {}, managed=False),
                          key=lambda v: not _managed(v))  # gpudesk's first
        if not switches:
            return (f"the account has no vSwitch in {region} yet, so the launch permission "
                    "could not be checked; the first launch checks it")
        answer = self._ecs(region, "DescribeAvailableResource", {
            "DestinationResource": "InstanceType", "InstanceChargeType": ap.CHARGE_ON_DEMAND,
            "SpotStrategy": ap.SPOT_NONE})
        in_stock: dict[str, list[str]] = {}
        for item in (answer.get("AvailableZones") or {}).get("AvailableZone") or []:
            in_stock[str(item.get("ZoneId", ""))] = [
                t for t in sorted(self._known_types) if ap.stock_of(item, t) == "WithStock"]
        groups: dict[str, str] = {}  # VPC → a security group in it (gpudesk's first)
        for switch in switches:
            zone, vpc_id = str(switch.get("ZoneId", "")), str(switch.get("VpcId", ""))
            if not in_stock.get(zone):
                continue
            if vpc_id not in groups:
                groups[vpc_id] = self._any_group(region, vpc_id)
            if groups[vpc_id]:
                return zone, in_stock[zone][0], str(switch["VSwitchId"]), groups[vpc_id]
        if not groups:
            return (f"no GPU type gpudesk knows is in stock in the zones of the vSwitches "
                    f"in {region}")
        return (f"no security group in the VPCs of the vSwitches in {region} yet, so the "
                "launch permission could not be checked; the first launch checks it")

    def _any_group(self, region: str, vpc_id: str) -> str:
        """A security group of ``vpc_id`` for the dry run, gpudesk's first; "" if none."""
        found = list(self._pages(region, "DescribeSecurityGroups", {"VpcId": vpc_id},
                                 ("SecurityGroups", "SecurityGroup")))
        found.sort(key=lambda g: ap.tags_of(g.get("Tags")).get(base.TAG_MANAGED) != "1")
        return str(found[0].get("SecurityGroupId", "")) if found else ""

    def ensure_key_pair(self, region: str, name: str, public_key: str) -> str:
        self._check_region(region)
        existing = self._key_pair(region, name)
        if existing and not ap.same_key(existing, public_key):
            name = f"{name}-{ap.key_digest(public_key)}"  # same name, another key: never reuse
            existing = self._key_pair(region, name)
        if existing:
            return name
        try:
            self._ecs(region, "ImportKeyPair", {
                "KeyPairName": name, "PublicKeyBody": public_key.strip(),
                "Tag": ap.tag_list({base.TAG_MANAGED: "1"})}, resource=name)
        except base.ProviderError:
            if self._key_pair(region, name):  # another gpudesk imported it meanwhile
                return name
            raise
        return name

    def _key_pair(self, region: str, name: str) -> dict[str, Any] | None:
        answer = self._ecs(region, "DescribeKeyPairs", {"KeyPairName": name,
                                                        "IncludePublicKey": True})
        pairs = (answer.get("KeyPairs") or {}).get("KeyPair") or []
        return next((k for k in pairs if k.get("KeyPairName") == name), None)

    def ensure_network(self, region: str, zone: str) -> tuple[str, str]:
        """The gpudesk VPC of ``region`` and its vSwitch in ``zone``, made once, found by tag.

        A VPC or vSwitch without gpudesk's tag is the user's, whatever its name: never
        used. Both are free; they stay for the next launch.
        """
        self._check_region(region)
        vpc = self._managed_vpc(region)
        if vpc is None:
            made = self._vpc(region, "CreateVpc", {
                "VpcName": ap.VPC_NAME, "CidrBlock": ap.VPC_CIDR,
                "Description": "gpudesk: the network of its machines",
                "Tag": ap.tag_list({base.TAG_MANAGED: "1"}),
                "ClientToken": f"{ap.VPC_NAME}-{region}"})
            vpc = {"VpcId": made.get("VpcId"), "Status": "Pending"}
        vpc_id = str(vpc.get("VpcId", ""))
        for _ in range(_VPC_WAIT_TRIES):
            if vpc.get("Status") == "Available":
                break
            self._sleep(self._backoff_s)
            found = self._vpc(region, "DescribeVpcs", {"VpcId": vpc_id})
            vpc = next(iter((found.get("Vpcs") or {}).get("Vpc") or []), vpc)
        else:
            raise base.ProviderError("other", MSG_VPC_NOT_READY, name=vpc_id, region=region)
        if not zone:
            return vpc_id, ""
        switches = self._vswitches(region, {"VpcId": vpc_id, "ZoneId": zone}, managed=True)
        if switches:
            return vpc_id, str(switches[0]["VSwitchId"])
        zones = [str(z.get("ZoneId")) for z in
                 (self._ecs(region, "DescribeZones", {}).get("Zones") or {}).get("Zone") or []]
        made = self._vpc(region, "CreateVSwitch", {
            "VpcId": vpc_id, "ZoneId": zone, "CidrBlock": ap.vswitch_cidr(zones, zone),
            "VSwitchName": f"{base.RESOURCE_PREFIX}{zone}",
            "Description": "gpudesk: the network of its machines in one zone",
            "Tag": ap.tag_list({base.TAG_MANAGED: "1"}),
            "ClientToken": f"{ap.VPC_NAME}-{zone}"}, zone=zone)
        return vpc_id, str(made.get("VSwitchId", ""))

    def _managed_vpc(self, region: str) -> dict[str, Any] | None:
        """The gpudesk-tagged VPC of ``region`` (an available one first, then the oldest)."""
        vpcs = [v for v in self._pages(region, "DescribeVpcs", {"Tag": self._managed_tag()},
                                       ("Vpcs", "Vpc"), product="vpc") if _managed(v)]
        vpcs.sort(key=lambda v: (v.get("Status") != "Available",
                                 ap.parse_time(v.get("CreationTime")) or 0.0))
        return vpcs[0] if vpcs else None

    def _vswitches(self, region: str, params: dict[str, Any],
                   managed: bool) -> list[dict[str, Any]]:
        """DescribeVSwitches (VPC API); ``managed``: gpudesk-tagged ones only."""
        if managed:
            params = dict(params, Tag=self._managed_tag())
        found = self._pages(region, "DescribeVSwitches", params, ("VSwitches", "VSwitch"),
                            product="vpc")
        return [v for v in found if _managed(v) or not managed]

    @staticmethod
    def _managed_tag() -> list[dict[str, str]]:
        return ap.tag_list({base.TAG_MANAGED: "1"})

    def ensure_security_group(self, region: str, allow_from: str) -> str:
        cidr = base.single_address(allow_from)  # refuses 0.0.0.0/0 & co. before any call
        self._check_region(region)
        vpc_id, _ = self.ensure_network(region, "")
        group_name = ssh_group_name(cidr)
        found = [g for g in self._pages(region, "DescribeSecurityGroups", {
            "VpcId": vpc_id, "SecurityGroupName": group_name},
            ("SecurityGroups", "SecurityGroup")) if g.get("SecurityGroupName") == group_name]
        if found:
            group_id = str(found[0]["SecurityGroupId"])
        else:
            created = self._ecs(region, "CreateSecurityGroup", {
                "SecurityGroupName": group_name, "VpcId": vpc_id,
                "Description": f"gpudesk: SSH from {cidr} only",
                "Tag": ap.tag_list({base.TAG_MANAGED: "1"}),
                "ClientToken": f"{group_name}-{vpc_id}"[:64]})
            group_id = str(created["SecurityGroupId"])
        self._converge_rules(region, group_id, ap.ssh_permission(cidr))
        return group_id

    def find_image(self, region: str, instance_type: str) -> str:
        """The newest public Ubuntu image that names a GPU driver; where the region has
        none, its newest public Ubuntu image, on which the launch installs the driver as
        the console's "auto-install GPU driver" does (``aliyun_gpu_driver``); where it has
        no Ubuntu image either, a refusal that lists its images for ``--image``."""
        self._check_region(region)
        images = list(self._pages(region, "DescribeImages", {
            "ImageOwnerAlias": "system", "OSType": "linux", "Architecture": "x86_64",
            "InstanceType": instance_type, "Status": "Available"}, ("Images", "Image")))
        found = ap.newest_gpu_image(images) or ap.newest_ubuntu_image(images)
        if found and found != ap.newest_gpu_image(images):
            self._driver_images().add(found)  # the driver is installed at first boot
        if not found:
            raise base.ProviderError("not-found", MSG_NO_IMAGE, region=region,
                                     instance_type=instance_type,
                                     images=ap.image_list(images) or "-")
        return found

    def _driver_images(self) -> set[str]:
        """Images :meth:`find_image` chose without a GPU driver: a launch from one installs
        it (the console's auto-install user data)."""
        return vars(self).setdefault("_needs_driver", set())  # type: ignore[no-any-return]

    def login_user(self, region: str, image_id: str = "") -> str:
        """Who logs in: ``root`` on every Alibaba Cloud public Linux image (Ubuntu too),
        unless the instance is made with another login name, which gpudesk does not ask."""
        return "root"

    def zone_choices(self, region: str, instance_type: str,
                     market: base.Market = "on-demand") -> list[base.ZoneChoice]:
        """Every zone and whether it has ``instance_type`` in stock (DescribeAvailableResource)."""
        self._check_region(region)
        answer = self._ecs(region, "DescribeAvailableResource", {
            "DestinationResource": "InstanceType", "InstanceType": instance_type,
            "InstanceChargeType": ap.CHARGE_ON_DEMAND,
            "SpotStrategy": ap.SPOT_MARKET if market == "spot" else ap.SPOT_NONE},
            instance_type=instance_type)
        selling: list[base.ZoneChoice] = []
        refused: list[base.ZoneChoice] = []
        for zone in (answer.get("AvailableZones") or {}).get("AvailableZone") or []:
            zone_id = str(zone.get("ZoneId", ""))
            stock = ap.stock_of(zone, instance_type)
            if stock == "WithStock":
                selling.append(base.ZoneChoice(zone_id, True))
            else:
                refused.append(base.ZoneChoice(zone_id, False, stock or "not offered"))
        return selling + refused

    def run_instance(self, request: base.LaunchRequest) -> base.CloudInstance:
        region = request.region
        group, zone = self._launch_place(request)
        _, vswitch = self.ensure_network(region, zone)
        image = request.image_id or self.find_image(region, request.instance_type)
        params: dict[str, Any] = {
            "ZoneId": zone, "InstanceType": request.instance_type,
            "InstanceChargeType": ap.CHARGE_ON_DEMAND, "SpotStrategy": ap.SPOT_NONE,
            "ImageId": image,
            "SystemDisk": {"Category": DISK_CATEGORY, "Size": request.disk_gb},
            "InternetChargeType": "PayByTraffic",
            "InternetMaxBandwidthOut": BANDWIDTH_OUT_MBPS,
            "SecurityGroupId": group, "VSwitchId": vswitch, "Amount": 1,
            "InstanceName": f"{base.RESOURCE_PREFIX}{request.ledger_id}"[:128],
            "PasswordInherit": False,
            "ClientToken": ap.client_token(request.ledger_id, request.client_token),
            "Tag": ap.tag_list(request.tags()),
        }
        if request.key_name:
            params["KeyPairName"] = request.key_name
        if request.market == "spot":
            if request.max_price is not None:
                params["SpotStrategy"] = ap.SPOT_CAPPED
                params["SpotPriceLimit"] = float(ap.price_text(request.max_price))
            else:
                params["SpotStrategy"] = ap.SPOT_MARKET
        release = self._release_at(request.cloud_timer_at)
        if release is not None:  # the cap ECS enforces itself: it deletes the machine then
            params["AutoReleaseTime"] = ap.format_time(release)
        user_data = request.user_data
        if image in self._driver_images() or aliyun_gpu_driver.is_plain_ubuntu(
                request.image_id):  # a public image without the driver (picked or typed)
            user_data = aliyun_gpu_driver.with_driver(user_data)
        if user_data:
            params["UserData"] = base64.b64encode(user_data.encode()).decode()
        if request.instance_role:  # RunInstances RamRoleName: bound at creation
            params["RamRoleName"] = request.instance_role
        self._tag_shared(region, request.ledger_id, group, request.key_name)
        answer = self._ecs(region, "RunInstances", params, zone=zone,
                           instance_type=request.instance_type, max_price=request.max_price)
        ids = [str(i) for i in (answer.get("InstanceIdSets") or {}).get("InstanceIdSet") or []]
        return self._launched(request, zone, ids)

    def _tag_shared(self, region: str, ledger_id: str, group: str, key_name: str) -> None:
        """The group and key pair name the latest machine that uses them (gpudesk-ledger-id)."""
        tags = ap.tag_list({base.TAG_MANAGED: "1", base.TAG_LEDGER: ledger_id})
        for kind, resource in (("securitygroup", group), ("keypair", key_name)):
            if resource:
                self._ecs(region, "TagResources", {"ResourceType": kind,
                                                   "ResourceId": [resource], "Tag": tags},
                          resource=resource)

    @staticmethod
    def _release_at(timer_at: float | None, now: float | None = None) -> float | None:
        """``timer_at`` moved to ECS's accepted window (:func:`aliyun_parse.release_at`:
        the floor guard.plan uses too, on a whole minute as ECS keeps it)."""
        return ap.release_at(timer_at, time.time() if now is None else now)

    def set_guard(self, region: str, cloud_id: str, action: str, market: str,
                  timer_at: float | None = None) -> None:
        """Keep AutoReleaseTime current (ModifyInstanceAutoReleaseTime); None cancels it."""
        del action, market  # AutoReleaseTime only deletes; guard.plan decided whether to set it
        self._check_region(region)
        release = self._release_at(timer_at)
        self._ecs(region, "ModifyInstanceAutoReleaseTime", {
            "InstanceId": cloud_id,
            "AutoReleaseTime": ap.format_time(release) if release is not None else ""},
            resource=cloud_id)

    def guard_at(self, region: str, cloud_id: str) -> float | None:
        """The release time ECS itself holds for the machine (DescribeInstances'
        AutoReleaseTime), None when none: what the ledger records after each change."""
        raw = next(iter(self.describe_raw(region, [cloud_id])), {})
        return ap.parse_time(str(raw.get("AutoReleaseTime") or ""))

    def describe(self, region: str, cloud_ids: list[str]) -> list[base.CloudInstance]:
        return [ap.parse_instance(raw, region) for raw in self.describe_raw(region, cloud_ids)]

    def describe_raw(self, region: str, cloud_ids: list[str]) -> list[dict[str, Any]]:
        """The machines as ECS describes them (AutoReleaseTime, StoppedMode, locks)."""
        self._check_region(region)
        wanted = [i for i in dict.fromkeys(cloud_ids) if ap.INSTANCE_ID_RE.match(i)]
        found: list[dict[str, Any]] = []
        for start in range(0, len(wanted), IDS_PER_CALL):
            found += self._pages(region, "DescribeInstances", {
                "InstanceIds": json.dumps(wanted[start:start + IDS_PER_CALL])},
                ("Instances", "Instance"))
        return found

    def creation_failure(self, region: str, cloud_id: str) -> str:
        """Why ECS could not create an accepted machine, in its words ("" when it has not
        said). ECS documents that a RunInstances it accepted may still fail for lack of
        inventory: it then sends a ``SystemFailure.Delete`` system event and releases the
        machine, which vanishes from DescribeInstances ("System events related to instance
        creation failures"; read with DescribeInstanceHistoryEvents)."""
        self._check_region(region)
        events = self._pages(region, "DescribeInstanceHistoryEvents", {
            "InstanceId": cloud_id, "InstanceEventType": [CREATION_FAILED],
            "InstanceEventCycleStatus": ["Executing", "Executed"]},
            ("InstanceSystemEventSet", "InstanceSystemEventType"))
        for event in events:
            if (event.get("EventType") or {}).get("Name") == CREATION_FAILED:
                reason = str(event.get("Reason") or event.get("ReasonCode") or "").strip()
                return f"{CREATION_FAILED}: {reason}" if reason else CREATION_FAILED
        return ""

    def _managed_raw(self, region: str) -> list[dict[str, Any]]:
        return list(self._pages(region, "DescribeInstances", {
            "Tag": [{"Key": base.TAG_MANAGED, "Value": "1"}]}, ("Instances", "Instance")))

    def list_managed(self, region: str) -> list[base.CloudInstance]:
        self._check_region(region)
        return [ap.parse_instance(raw, region) for raw in self._managed_raw(region)]

    def stop(self, region: str, cloud_id: str, *, stopped_mode: str | None = None) -> None:
        """Stop; StopCharging (the default here) ends the compute bill but may lose the GPU.

        Already stopped is done only when the machine's own StoppedMode is what was asked:
        a machine shut down from inside keeps charging (KeepCharging), and is said so."""
        mode = stopped_mode or self._stopped_mode
        self._check_region(region)
        raw = next(iter(self.describe_raw(region, [cloud_id])), {})
        word = str(raw.get("StoppedMode") or "")
        if (raw.get("Status") in ("Stopped", "Stopping") and mode == ap.STOP_CHARGING
                and word != ap.STOP_CHARGING):
            raise base.ProviderError("invalid", MSG_ALREADY_STOPPED_CHARGING,
                                     f"Status={raw.get('Status')} StoppedMode={word or '?'}",
                                     name=cloud_id, mode=word or "?")
        self._instance_action(region, cloud_id, "StopInstances", {
            "StoppedMode": mode, "ForceStop": False}, ("Stopped", "Stopping"))

    def stop_warning(self, region: str, cloud_id: str) -> str:
        """Before a stop: why it cannot end the compute bill, in words ("" when ECS's
        rules allow StopCharging; a type that does not is only known after the stop)."""
        self._check_region(region)
        raw = next(iter(self.describe_raw(region, [cloud_id])), {})
        why = self._why_keeps_charging(raw)
        return MSG_STOP_CANNOT_STOP_CHARGING.format(name=cloud_id, why=why) if why else ""

    def _why_keeps_charging(self, raw: dict[str, Any]) -> str:
        """Why a stop keeps the compute bill, as far as it is known before the stop: asked
        for KeepCharging, a subscription, or the classic network ("" otherwise)."""
        if self._stopped_mode == ap.KEEP_CHARGING:
            return WHY_KEEP_ASKED
        if raw.get("InstanceChargeType") == "PrePaid":
            return WHY_KEEP_SUBSCRIPTION
        if raw.get("InstanceNetworkType") == "classic":
            return WHY_KEEP_CLASSIC
        return ""

    def stop_note(self, region: str, cloud_id: str) -> str:
        """What still bills after a stop, from the machine's own StoppedMode, and why ECS did
        not apply StopCharging when it did not (it falls back without an error)."""
        raw = next(iter(self.describe_raw(region, [cloud_id])), {})
        if raw.get("StoppedMode") != ap.KEEP_CHARGING:
            return MSG_STOPPED_STOP_CHARGING
        why = (self._why_keeps_charging(raw)
               or WHY_KEEP_TYPE.format(instance_type=raw.get("InstanceType", "")))
        return MSG_STOPPED_KEEP_CHARGING.format(why=why)

    def start(self, region: str, cloud_id: str) -> None:
        self._instance_action(region, cloud_id, "StartInstances", {}, ("Running", "Starting"))

    def terminate(self, region: str, cloud_id: str) -> None:
        """DeleteInstances with Force: a running machine is stopped and released at once."""
        self._check_region(region)
        try:
            self._call(CallContext("DeleteInstances", region, resource=cloud_id), {
                "InstanceId": [cloud_id], "Force": True})
        except base.ProviderError as err:
            if err.kind == "not-found":  # already released: done
                return
            raise

    def _instance_action(self, region: str, cloud_id: str, action: str,
                         extra: dict[str, Any], done_states: tuple[str, ...]) -> None:
        """Already in the wanted state counts as done: retries and double clicks are safe."""
        self._check_region(region)
        raw = next(iter(self.describe_raw(region, [cloud_id])), None)
        if raw is not None and raw.get("Status") in done_states:
            return
        self._call(CallContext(action, region, resource=cloud_id),
                   {"InstanceId": [cloud_id], **extra})

    def cleanup(self, region: str) -> list[str]:
        """Delete gpudesk-tagged key pairs and groups that no machine still alive refers to."""
        self._check_region(region)
        alive = [raw for raw in self._managed_raw(region)
                 if ap.state_of(str(raw.get("Status", "")), ap.locks_of(raw))
                 != base.STATE_TERMINATED]
        used_keys = {str(raw.get("KeyPairName") or "") for raw in alive}
        used_groups = {g for raw in alive
                       for g in (raw.get("SecurityGroupIds") or {}).get("SecurityGroupId") or []}
        tagged = [{"Key": base.TAG_MANAGED, "Value": "1"}]
        deleted: list[str] = []
        for key in list(self._pages(region, "DescribeKeyPairs", {"Tag": tagged},
                                    ("KeyPairs", "KeyPair"))):
            name = str(key.get("KeyPairName", ""))
            if name in used_keys:
                continue
            if self._try_delete(CallContext("DeleteKeyPairs", region, resource=name),
                                {"KeyPairNames": f'["{name}"]'}):
                deleted.append(name)
        for group in list(self._pages(region, "DescribeSecurityGroups", {"Tag": tagged},
                                      ("SecurityGroups", "SecurityGroup"))):
            group_id = str(group.get("SecurityGroupId", ""))
            if group_id in used_groups:
                continue
            if self._try_delete(CallContext("DeleteSecurityGroup", region, resource=group_id),
                                {"SecurityGroupId": group_id}):
                deleted.append(group_id)
        return deleted

    def live_offers(self, region: str) -> list[base.LiveOffer]:
        """Pay-as-you-go prices (DescribePrice) per zone, and spot prices (history) only where
        ECS's own answer sells spot for the type in the zone (:meth:`spot_zones`)."""
        self._check_region(region)
        offers: list[base.LiveOffer] = []
        for itype in sorted(self._known_types):
            try:
                choices = self.zone_choices(region, itype)
                on_demand = self.on_demand_price(region, itype) if choices else None
                spot_zones = self.spot_zones(region, itype) if choices else {}
            except base.ProviderError as err:
                if err.kind not in ("capacity", "invalid", "not-found"):
                    raise
                continue  # a type this region does not sell: no offer, not a failed refresh
            for choice in choices:
                if on_demand is not None:
                    offers.append(base.LiveOffer(
                        "aliyun", region, choice.zone, itype, "on-demand", on_demand[0],
                        on_demand[1], choice.sells, choice.reason))
                spot_choice = spot_zones.get(choice.zone)
                if spot_choice is None:
                    continue  # no spot sold for this type here: no spot price to offer
                spot = self.spot_price_history(region, choice.zone, itype, time.time() - 3600)
                if spot:
                    offers.append(base.LiveOffer(
                        "aliyun", region, choice.zone, itype, "spot", spot[-1].price,
                        spot[-1].currency, spot_choice.sells, spot_choice.reason))
        return offers

    def spot_zones(self, region: str, instance_type: str) -> dict[str, base.ZoneChoice]:
        """The zones where ECS sells ``instance_type`` as spot at all, with whether it is in
        stock now: DescribeAvailableResource with a SpotStrategy lists a type only in the
        zones that sell it so (sold out shows as WithoutStock; not sold, not listed)."""
        answer = self._ecs(region, "DescribeAvailableResource", {
            "DestinationResource": "InstanceType", "InstanceType": instance_type,
            "InstanceChargeType": ap.CHARGE_ON_DEMAND, "SpotStrategy": ap.SPOT_MARKET},
            instance_type=instance_type)
        zones: dict[str, base.ZoneChoice] = {}
        for zone in (answer.get("AvailableZones") or {}).get("AvailableZone") or []:
            stock = ap.stock_of(zone, instance_type)
            if stock:
                zone_id = str(zone.get("ZoneId", ""))
                zones[zone_id] = base.ZoneChoice(zone_id, stock == "WithStock",
                                                 "" if stock == "WithStock" else stock)
        return zones

    def on_demand_price(self, region: str, instance_type: str) -> tuple[float, str] | None:
        """The pay-as-you-go price per hour ECS quotes for the instance alone (DescribePrice),
        with its currency: CNY on the China site, USD on the international one."""
        answer = self._ecs(region, "DescribePrice", {
            "ResourceType": "instance", "InstanceType": instance_type, "PriceUnit": "Hour",
            "Period": 1, "SystemDisk": {"Category": DISK_CATEGORY, "Size": 40}},
            instance_type=instance_type)
        quoted = (answer.get("PriceInfo") or {}).get("Price") or {}
        price = quoted.get("TradePrice")
        if not isinstance(price, int | float) or price <= 0:
            return None
        return float(price), str(quoted.get("Currency") or "CNY")

    def spot_price_history(self, region: str, zone: str, instance_type: str,
                           since: float) -> list[base.PricePoint]:
        """DescribeSpotPriceHistory from ``since`` (ECS keeps 30 days), oldest first."""
        self._check_region(region)
        params: dict[str, Any] = {"InstanceType": instance_type, "NetworkType": "vpc",
                                  "OSType": "linux", "StartTime": ap.format_time(since)}
        if zone:
            params["ZoneId"] = zone
        answer = self._ecs(region, "DescribeSpotPriceHistory", params, zone=zone,
                           instance_type=instance_type)
        currency = str(answer.get("Currency") or "CNY")
        points = []
        for item in (answer.get("SpotPrices") or {}).get("SpotPriceType") or []:
            at = ap.parse_time(item.get("Timestamp"))
            price = item.get("SpotPrice")
            if at is not None and isinstance(price, int | float):
                points.append(base.PricePoint(max(at, since), float(price), currency))
        points.sort()
        return points

    def spot_advice(self, region: str, instance_types: list[str]) -> list[dict[str, Any]]:
        """DescribeSpotAdvice (at most 10 types a call): per zone and type, the last 30
        days' release rate in percent, its band and the average discount, as
        ``{"zone", "instance_type", "interruption_rate", "description", "discount"}``."""
        self._check_region(region)
        answer = self._ecs(region, "DescribeSpotAdvice", {"InstanceTypes": instance_types})
        rows: list[dict[str, Any]] = []
        for zone in (answer.get("AvailableSpotZones") or {}).get("AvailableSpotZone") or []:
            for item in ((zone.get("AvailableSpotResources") or {})
                         .get("AvailableSpotResource") or []):
                rows.append({"zone": str(zone.get("ZoneId") or ""),
                             "instance_type": str(item.get("InstanceType") or ""),
                             "interruption_rate": item.get("InterruptionRate"),
                             "description": str(item.get("InterruptRateDesc") or ""),
                             "discount": item.get("AverageSpotDiscount")})
        return rows
