"""A stand-in Tencent Cloud API server: the CVM and VPC (2017-03-12) actions gpudesk uses.

It speaks the real wire format (POST JSON, ``X-TC-*`` headers, answers as
``{"Response": {..., "RequestId"}}`` with ``Content-Type: application/json``,
errors as ``{"Response": {"Error": {"Code", "Message"}, "RequestId"}}``) and
checks TC3-HMAC-SHA256 signatures exactly as tencentcloud-sdk-python makes
them (``abstract_client._build_req_with_tc3_signature``): canonical request
``POST\\n/\\n\\ncontent-type:…\\nhost:…\\n\\ncontent-type;host\\n<sha256(body)>``,
scope ``<UTC date>/<service>/tc3_request``. SDK 3.1.x signs with the client's
own service name (``cvm``/``vpc``) whatever the endpoint, so for an IP host
the server takes the service that owns the action, as the real gateway takes
it from the host name ``cvm.tencentcloudapi.com``.

CAM (2019-01-16, issue 21): roles, custom policies and their attachments, account-wide;
CreateRole and CreatePolicy check their documents, ModifyInstancesAttribute binds a role
only if it exists and trusts ``cvm.qcloud.com`` (``role_of`` says which role a machine
has); ``cam_denied`` refuses every CAM call, and passing a role, with
``AuthFailure.UnauthorizedOperation``.

STS (2018-08-13, issue 22): ``GetFederationToken`` hands out short-lived keys
(``Credentials{TmpSecretId, TmpSecretKey, Token}``, ``ExpiredTime``, ``Expiration``) held to
its documented limits (``Name``, a URL-encoded CAM ``Policy`` without ``principal``,
``DurationSeconds`` up to 7200 for the main account and 129600 for a sub-account) and
records each (``federation_tokens``); CAM ``GetUserAppId`` says whose keys sign
(``main_keys`` are the main account's, every other key a sub-account's).

State is kept per region: instances (PENDING → RUNNING on a later describe,
STOPPING → STOPPED, STARTING → RUNNING, TERMINATING → gone after being seen
``terminating_describes`` times; while it lasts its key pair and security group
answer ``ResourceInUse``), key pairs, security groups and their rules,
ClientToken answers, prices per zone (``zone_prices``), the (region, type) pairs sold
on-demand only (``no_spot``: no SPOTPAID item listed, spot launches refused), and
deletes still refused after a machine is gone (``linger_deletes``). ``fail_next`` makes the
next matching call(s) fail with a real code; ``fail_launch_next`` makes a
machine end ``LAUNCH_FAILED`` with ``LatestOperationErrorMsg``. A DryRun checks
the parameters and stock before answering ``DryRunOperation``. Every request is
held to the documented limits of ``tests/cloud_limits.py`` first and refused in
Tencent's words (``InvalidParameterValue``) when it breaks one.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import itertools
import json
import random
import re
import string
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from dataclasses import field
from datetime import UTC
from datetime import datetime
from typing import Any
from urllib.parse import unquote

import cloud_limits
import role_policy
from cloud_bill import tencent_view
from standin_http import ApiError
from standin_http import StandinServer

VERSION = "2017-03-12"
SECRET_ID = "AKIDgpudeskStandinKey0123456789abcd"  # AKID + 32, shaped like a real one
SECRET_KEY = "Gk7pQ2xVb9Lm4Nc8Rt1Yw6Zs3Hd5Jf0a"  # 32 characters, mixed case and digits
MAX_SKEW_S = 300

CVM_ACTIONS = frozenset({
    "DescribeRegions", "DescribeZones", "DescribeImages", "ImportKeyPair", "DescribeKeyPairs",
    "DeleteKeyPairs", "RunInstances", "DescribeInstances", "StopInstances", "StartInstances",
    "TerminateInstances", "DescribeZoneInstanceConfigInfos", "InquiryPriceRunInstances",
})
# Scheduled actions (issue 12): the cloud-side cap that needs neither the laptop nor the agent.
CVM_ACTIONS = CVM_ACTIONS | {"ImportInstancesActionTimer", "DescribeInstancesActionTimer",
                             "DeleteInstancesActionTimer"}
TIMER_MIN_AHEAD_S = 300  # ActionTime must be at least 5 minutes after now (API reference)
VPC_ACTIONS = frozenset({
    "CreateSecurityGroup", "DescribeSecurityGroups", "CreateSecurityGroupPolicies",
    "DescribeSecurityGroupPolicies", "DeleteSecurityGroupPolicies", "DeleteSecurityGroup",
})
# Instance roles (issue 21): a CAM role bound to a machine with ModifyInstancesAttribute.
CVM_ACTIONS = CVM_ACTIONS | {"ModifyInstancesAttribute"}
CAM_VERSION = "2019-01-16"
CAM_ACTIONS = frozenset({"GetRole", "CreateRole", "ListPolicies", "CreatePolicy", "GetPolicy",
                         "AttachRolePolicy"})
CVM_PRINCIPAL = "cvm.qcloud.com"  # the service a role must trust for CVM to bind it
OWNER_UIN = "100000000001"
SUB_UIN = "100000000011"  # the sub-account every key not in ``main_keys`` belongs to
APPID = "1250000000"
# STS GetFederationToken (https://cloud.tencent.com/document/api/1312/48195): Policy is
# URL-encoded CAM JSON without a principal; DurationSeconds defaults to 1800, at most 7200
# for the main account and 129600 for a sub-account. Name: the reference says letters
# ("readOnly"); the SDK model and STS's InvalidParameter answers take 2..32 of [\w+=,.@-].
# The reference gives no Policy length limit, so none is enforced here.
STS_VERSION = "2018-08-13"
STS_ACTIONS = frozenset({"GetFederationToken"})
CAM_ACTIONS = CAM_ACTIONS | {"GetUserAppId"}
# Keep-alive group roles (issue 23): a custom policy's document replaced (UpdatePolicy,
# https://cloud.tencent.com/document/api/598/34569: "只能更新 createMode==2 的策略", and the
# custom policy limit of 6,144 characters), detached, deleted; a role deleted.
CAM_ACTIONS = CAM_ACTIONS | {"UpdatePolicy", "DetachRolePolicy", "DeletePolicy", "DeleteRole"}
CAM_POLICY_MAX = 6144
STS_DEFAULT_S, STS_MAIN_MAX_S, STS_SUB_MAX_S = 1800, 7200, 129600
_FEDERATION_NAME = re.compile(r"^[\w+=,.@-]{2,32}$")
# ModifyInstancesAttribute: "每次请求必须指定实例的一种属性用于修改" (one attribute per call)
_MODIFIABLE = ("InstanceName", "UserData", "SecurityGroups", "CamRoleName", "HostName",
               "DisableApiTermination", "EnableJumboFrame")

REGIONS: dict[str, tuple[str, list[str]]] = {
    "ap-guangzhou": ("South China (Guangzhou)", ["ap-guangzhou-3", "ap-guangzhou-4",
                                                 "ap-guangzhou-6"]),
    "ap-shanghai": ("East China (Shanghai)", ["ap-shanghai-2", "ap-shanghai-4", "ap-shanghai-5"]),
    "ap-beijing": ("North China (Beijing)", ["ap-beijing-5", "ap-beijing-6", "ap-beijing-7"]),
}

# type: (family, vCPU, GiB, GPU model, GPUs, on-demand CNY/hour)
TYPES: dict[str, tuple[str, int, int, str, int, float]] = {
    "GN7.2XLARGE32": ("GN7", 8, 32, "T4", 1, 8.68),
    "GN7.20XLARGE320": ("GN7", 80, 320, "T4", 4, 43.40),
    "GN10Xp.2XLARGE40": ("GN10Xp", 10, 40, "V100", 1, 21.36),
    "GN10Xp.20XLARGE320": ("GN10Xp", 80, 320, "V100", 8, 170.88),
    "GT4.4XLARGE96": ("GT4", 16, 96, "A100", 1, 28.60),
    "GT4.41XLARGE948": ("GT4", 164, 948, "A100", 8, 228.80),
    "PNV4.7XLARGE116": ("PNV4", 28, 116, "A10", 1, 13.20),
    "PNV4.56XLARGE932": ("PNV4", 224, 932, "A10", 8, 105.60),
    "S5.MEDIUM4": ("S5", 2, 4, "", 0, 0.33),
}
SPOT_FACTOR = 0.3  # spot price = 30 % of on-demand, rounded to 0.01
# Where CVM sells no spot of a type (DescribeZoneInstanceConfigInfos lists no SPOTPAID item
# for it in any zone of the region; RunInstances answers NoInstanceTypeSupportSpot).
NO_SPOT: frozenset[tuple[str, str]] = frozenset({
    ("ap-guangzhou", "GT4.4XLARGE96"),
    ("ap-shanghai", "GT4.4XLARGE96"), ("ap-shanghai", "PNV4.7XLARGE116"),
    ("ap-beijing", "PNV4.56XLARGE932"),
})

IMAGES: list[dict[str, Any]] = [
    {"ImageId": "img-gpu22cu12", "ImageName": "Ubuntu Server 22.04 LTS 64bit GPU (driver 535, "
     "CUDA 12.2)", "ImageDescription": "Ubuntu 22.04 with the NVIDIA GPU driver and CUDA",
     "OsName": "Ubuntu Server 22.04 LTS 64bit", "CreatedTime": "2024-05-10T02:00:00Z",
     "Platform": "Ubuntu"},
    {"ImageId": "img-gpu20cu11", "ImageName": "Ubuntu Server 20.04 LTS 64bit GPU (driver 470, "
     "CUDA 11.4)", "ImageDescription": "Ubuntu 20.04 with the NVIDIA GPU driver",
     "OsName": "Ubuntu Server 20.04 LTS 64bit", "CreatedTime": "2022-03-01T02:00:00Z",
     "Platform": "Ubuntu"},
    {"ImageId": "img-ubuntu22", "ImageName": "Ubuntu Server 22.04 LTS 64bit",
     "ImageDescription": "Ubuntu 22.04", "OsName": "Ubuntu Server 22.04 LTS 64bit",
     "CreatedTime": "2025-01-01T02:00:00Z", "Platform": "Ubuntu"},
    {"ImageId": "img-tos31gpu", "ImageName": "TencentOS Server 3.1 GPU (driver 535)",
     "ImageDescription": "TencentOS with the GPU driver", "OsName": "TencentOS Server 3.1",
     "CreatedTime": "2025-02-01T02:00:00Z", "Platform": "TencentOS"},
    {"ImageId": "img-mygpu001", "ImageName": "my GPU image", "ImageType": "PRIVATE_IMAGE",
     "ImageDescription": "private", "OsName": "Ubuntu Server 22.04 LTS 64bit",
     "CreatedTime": "2025-06-01T02:00:00Z", "Platform": "Ubuntu"},
]

_ID_CHARS = string.ascii_lowercase + string.digits
_INSTANCE_ID = re.compile(r"^ins-[a-z0-9]{8}$")
_KEY_NAME = re.compile(r"^[A-Za-z0-9_]+$")
_AUTH = re.compile(r"^TC3-HMAC-SHA256 Credential=(?P<id>[^/]+)/(?P<date>\d{4}-\d{2}-\d{2})/"
                   r"(?P<service>[a-z0-9]+)/tc3_request, SignedHeaders=(?P<signed>[a-z;-]+), "
                   r"Signature=(?P<sig>[0-9a-f]{64})$")


@dataclass
class State:
    instances: dict[str, dict[str, Any]] = field(default_factory=dict)
    key_pairs: dict[str, dict[str, Any]] = field(default_factory=dict)
    groups: dict[str, dict[str, Any]] = field(default_factory=dict)
    tokens: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    action_timers: dict[str, dict[str, Any]] = field(default_factory=dict)  # by ActionTimerId
    # CAM (account-wide, no region): roles by name, policies by id, (role, policy id) pairs
    roles: dict[str, dict[str, Any]] = field(default_factory=dict)
    policies: dict[int, dict[str, Any]] = field(default_factory=dict)
    attached: set[tuple[str, int]] = field(default_factory=set)


def tc3_signature(secret_key: str, date: str, service: str, string_to_sign: str) -> str:
    def _hmac(key: bytes, msg: str) -> bytes:
        return hmac.new(key, msg.encode("utf-8"), hashlib.sha256).digest()

    k_date = _hmac(("TC3" + secret_key).encode("utf-8"), date)
    k_signing = _hmac(_hmac(k_date, service), "tc3_request")
    return hmac.new(k_signing, string_to_sign.encode("utf-8"), hashlib.sha256).hexdigest()


def _new_id(prefix: str) -> str:
    return prefix + "".join(random.choices(_ID_CHARS, k=8))


def _now_iso() -> str:
    # time.time, not datetime.now: a clock a test controls (the guard matrix's) dates the
    # cloud's timestamps too (CreatedTime dates a machine running since its creation)
    return datetime.fromtimestamp(time.time(), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _tags(items: Any) -> list[dict[str, str]]:
    return [{"Key": str(t["Key"]), "Value": str(t.get("Value", ""))} for t in items or []]


def _tag_spec(params: dict[str, Any], resource: str) -> list[dict[str, str]]:
    tags: list[dict[str, str]] = []
    for spec in params.get("TagSpecification") or []:
        if spec.get("ResourceType") == resource:
            tags += _tags(spec.get("Tags"))
    return tags


def _filters(params: dict[str, Any]) -> dict[str, list[str]]:
    return {str(f["Name"]): [str(v) for v in f.get("Values") or []]
            for f in params.get("Filters") or []}


def _tag_match(tags: list[dict[str, str]], filters: dict[str, list[str]]) -> bool:
    keys = {t["Key"]: t["Value"] for t in tags}
    if "tag-key" in filters and not any(k in keys for k in filters["tag-key"]):
        return False
    for name, values in filters.items():
        if name.startswith("tag:") and keys.get(name[4:]) not in values:
            return False
    return True


def _page(items: list[dict[str, Any]], params: dict[str, Any], cap: int) -> list[dict[str, Any]]:
    offset = int(params.get("Offset") or 0)
    limit = min(int(params.get("Limit") or 20), cap)
    return items[offset:offset + limit]


class TencentStandin(StandinServer):
    """The server; ``endpoint`` is what ``HttpProfile(endpoint=…)`` takes."""

    name = "tencent-standin"

    # ------------------------------------------------------------------ control

    def reset(self) -> None:
        with self._lock:
            self.state = State()
            self.calls: Counter[str] = Counter()
            self.requests = []  # action, region, params
            self.failures = []
            self.clock_offset = 0.0  # seconds the server's clock is ahead of the caller's
            self.max_page = 100
            self.instance_quota: int | None = None
            self.zone_state = {z: "AVAILABLE" for _, zones in REGIONS.values() for z in zones}
            self.sold_out: dict[tuple[str, str, str], str] = {}
            self.no_spot: set[tuple[str, str]] = set(NO_SPOT)  # (region, type): no spot sold
            # (region, type) the region does not list at all, neither charge (issue 30)
            self.unlisted: set[tuple[str, str]] = set()
            self.denied: set[str] = set()  # actions answered UnauthorizedOperation
            # every CAM call refused as CAM refuses a key without the permission
            # (AuthFailure.UnauthorizedOperation); ModifyInstancesAttribute too (passing a role)
            self.cam_denied = False
            self.main_keys: set[str] = set()  # keys of the main account (the others: a sub)
            self.federation_tokens: list[dict[str, Any]] = []  # what GetFederationToken gave
            self._caller = ""  # the key id the request being answered is signed with
            self._policy_ids = itertools.count(170000001)
            self.images = [dict(i) for i in IMAGES]
            self.launch_failures: list[tuple[str, str]] = []  # (zone or "", message)
            # (zone, type, charge) → CNY/hour where it differs from TYPES (and SPOT_FACTOR)
            self.zone_prices: dict[tuple[str, str, str], float] = {}
            self.terminating_describes = 1  # describes that still show TERMINATING
            # Deletes of a group or key pair still refused (ResourceInUse) after its last
            # machine left DescribeInstances, as CVM does while it releases the network
            # interface; ``lingering`` counts them down per resource id.
            self.linger_deletes = 0
            self.lingering: dict[str, int] = {}
            self.secrets = {}
            self.role_keys: dict[str, str] = {}  # key id → the role whose session it is
            self._ips = itertools.count(10)
            self.bill: Any = None  # a cloud_bill.Bill a test sets: what CVM would bill

    def sell_out(self, zone: str, instance_type: str, charge_type: str | None = None,
                 reason: str = "The instance type is sold out in this zone.") -> None:
        with self._lock:
            for charge in [charge_type] if charge_type else ["POSTPAID_BY_HOUR", "SPOTPAID"]:
                self.sold_out[(zone, instance_type, charge)] = reason

    def fail_launch_next(self, zone: str = "", message: str = "Insufficient stock for the "
                         "spot request.") -> None:
        """The next machine made (in ``zone``) is accepted, then ends LAUNCH_FAILED, as CVM
        does when an asynchronous launch cannot be fulfilled."""
        with self._lock:
            self.launch_failures.append((zone, message))

    def price(self, zone: str, instance_type: str, charge: str) -> float:
        """The hourly price of ``instance_type`` in ``zone`` (per zone, per charge type)."""
        listed = TYPES[instance_type][5]
        default = round(listed * SPOT_FACTOR, 2) if charge == "SPOTPAID" else listed
        return self.zone_prices.get((zone, instance_type, charge), default)

    def shutdown_inside(self, instance_id: str) -> None:
        """The machine's OS shut itself down (the agent's ``shutdown``, a user's
        ``poweroff``): CVM shows it STOPPED and keeps charging it (KEEP_CHARGING)."""
        with self._lock:
            instance = self.state.instances[instance_id]
            instance.update(InstanceState="STOPPED", StopChargingMode="KEEP_CHARGING",
                            LatestOperation="", LatestOperationState="SUCCESS")

    def add_role(self, name: str, service: str = CVM_PRINCIPAL) -> None:
        """Test control: a CAM role trusted by ``service`` (made before a RunInstances that
        names it, as gpudesk makes its own: CVM refuses a role it does not know)."""
        with self._lock:
            if name not in self.state.roles:
                self._CreateRole("", {"RoleName": name, "PolicyDocument": json.dumps(
                    {"version": "2.0", "statement": [{"effect": "allow",
                                                      "action": "name/sts:AssumeRole",
                                                      "principal": {"service": [service]}}]})})

    def add_rule(self, group_id: str, direction: str, rule: dict[str, Any]) -> None:
        """Put a rule straight into a group (as another tool or a person might)."""
        with self._lock:
            group = self.state.groups[group_id]
            group[direction].append(dict(rule))
            group["Version"] += 1

    # ------------------------------------------------------------------ request path

    def respond(self, method: str, target: str, headers: dict[str, str],
                body: bytes) -> tuple[int, Any]:
        """Every answer, an error too, is HTTP 200 with its body under ``Response``."""
        return 200, {"Response": self.handle(headers, body)}

    def handle(self, headers: dict[str, str], body: bytes) -> dict[str, Any]:
        action = headers.get("x-tc-action", "")
        region = headers.get("x-tc-region", "")
        with self._lock:
            self.calls[action] += 1
        try:
            self._authenticate(headers, body, action)
            service = self._service_of(action)
            if headers.get("x-tc-version") != self.versions.get(service, VERSION):
                raise ApiError("NoSuchVersion", "The API version does not exist.")
            if not service:
                raise ApiError("InvalidAction", f"The action {action} does not exist.")
            try:
                params = json.loads(body or b"{}")
            except ValueError:
                raise ApiError("InvalidParameter", "The body is not JSON.") from None
            with self._lock:
                self.requests.append((action, region, params))
                self._maybe_fail(action, region, params)
                self._caller = self._signer(headers)
                self._role_check(action, region, params)
                if action not in CAM_ACTIONS | {"DescribeRegions"} and region not in REGIONS:
                    raise ApiError("UnsupportedRegion", f"Region {region} is not supported.")
                # The documented limits (tests/cloud_limits.py), refused in Tencent's words.
                broken = cloud_limits.check("tencent", action, params)
                if broken:
                    raise ApiError(*cloud_limits.split(broken[0]))
                answer = getattr(self, "_" + action)(region, params)
                if self.bill is not None:  # the bill follows every change a request makes
                    self.bill.sync(tencent_view(self))
        except ApiError as err:
            return {"Error": {"Code": err.code, "Message": err.message},
                    "RequestId": str(uuid.uuid4())}
        answer["RequestId"] = str(uuid.uuid4())
        return answer

    # The services served and their versions; a subclass (tencent_as_standin) adds its own.
    versions: dict[str, str] = {"cvm": VERSION, "vpc": VERSION, "cam": CAM_VERSION,
                                "sts": STS_VERSION}

    def _service_of(self, action: str) -> str:
        """The service that owns ``action`` ("" for none): its signing scope and version."""
        return ("vpc" if action in VPC_ACTIONS else "cam" if action in CAM_ACTIONS
                else "sts" if action in STS_ACTIONS else "cvm" if action in CVM_ACTIONS else "")

    def _authenticate(self, headers: dict[str, str], body: bytes, action: str) -> None:
        match = _AUTH.match(headers.get("authorization", ""))
        if not match:
            raise ApiError("AuthFailure.InvalidAuthorization",
                           "The Authorization header does not follow the TC3 standard.")
        secret_id = match["id"]
        if not secret_id.startswith("AKID"):
            raise ApiError("AuthFailure.InvalidSecretId", "Invalid key (not a cloud API key).")
        with self._lock:
            secret_key = self.secrets.get(secret_id)
            offset = self.clock_offset
        if secret_key is None:
            raise ApiError("AuthFailure.SecretIdNotFound",
                           "The SecretId does not exist; check that it is right.")
        try:
            timestamp = int(headers.get("x-tc-timestamp", ""))
        except ValueError:
            raise ApiError("AuthFailure.SignatureFailure", "X-TC-Timestamp is missing.") from None
        if abs(time.time() + offset - timestamp) > MAX_SKEW_S:
            raise ApiError("AuthFailure.SignatureExpire",
                           "The signature expired: the timestamp differs from server time by "
                           "more than 5 minutes.")
        host = headers.get("host", "")
        first = host.split(".")[0]
        owner = self._service_of(action) or "cvm"
        service = first if first in self.versions else owner
        date = datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d")
        signed = match["signed"].split(";")
        canonical_headers = "".join(f"{h}:{headers.get(h, '').strip().lower()}\n" for h in signed)
        payload = (b"UNSIGNED-PAYLOAD" if headers.get("x-tc-content-sha256") == "UNSIGNED-PAYLOAD"
                   else body)
        canonical = "\n".join(["POST", "/", "", canonical_headers, match["signed"],
                               hashlib.sha256(payload).hexdigest()])
        scope = f"{date}/{service}/tc3_request"
        to_sign = "\n".join(["TC3-HMAC-SHA256", str(timestamp), scope,
                             hashlib.sha256(canonical.encode("utf-8")).hexdigest()])
        expected = tc3_signature(secret_key, date, service, to_sign)
        if (match["date"] != date or match["service"] != service
                or "content-type" not in signed or "host" not in signed
                or not hmac.compare_digest(expected, match["sig"])):
            raise ApiError("AuthFailure.SignatureFailure",
                           "The provided credentials could not be validated. Please check your "
                           "signature is correct.")

    def _maybe_fail(self, action: str, region: str, params: dict[str, Any]) -> None:
        if action in self.denied:
            raise ApiError("UnauthorizedOperation",
                           f"You are not authorized to perform operation ({action}).")
        if self.cam_denied and (action in CAM_ACTIONS or "CamRoleName" in params):
            service = "cam" if action in CAM_ACTIONS else "cvm"
            raise ApiError("AuthFailure.UnauthorizedOperation",
                           f"you are not authorized to perform operation ({service}:{action})"
                           f"\nresource (qcs::{service}::uin/{OWNER_UIN}:*) has no permission")
        seen = {"region": region, "zone": str((params.get("Placement") or {}).get("Zone")
                                              or (_filters(params).get("zone") or [""])[0]),
                "instance_type": str(params.get("InstanceType", "")),
                "charge_type": str(params.get("InstanceChargeType", ""))}
        self._fail_if_asked(action, seen)

    # ------------------------------------------------------------------ CVM: places & prices

    def _DescribeRegions(self, region: str, params: dict[str, Any]) -> dict[str, Any]:
        regions = [{"Region": r, "RegionName": n, "RegionState": "AVAILABLE"}
                   for r, (n, _) in REGIONS.items()]
        return {"TotalCount": len(regions), "RegionSet": regions}

    def _DescribeZones(self, region: str, params: dict[str, Any]) -> dict[str, Any]:
        zones = [{"Zone": z, "ZoneName": z, "ZoneId": str(100000 + i), "ZoneState":
                  self.zone_state[z]} for i, z in enumerate(REGIONS[region][1])]
        return {"TotalCount": len(zones), "ZoneSet": zones}

    def _image(self, raw: dict[str, Any]) -> dict[str, Any]:
        image = {"ImageType": "PUBLIC_IMAGE", "ImageSize": 50, "Architecture": "x86_64",
                 "ImageState": "NORMAL", "ImageCreator": "", "ImageSource": "OFFICIAL",
                 "IsSupportCloudinit": True, "Tags": [], "ImageDeprecated": False}
        image.update(raw)
        return image

    def _DescribeImages(self, region: str, params: dict[str, Any]) -> dict[str, Any]:
        if params.get("InstanceType") and params["InstanceType"] not in TYPES:
            raise ApiError("InvalidInstanceType.Malformed", "InstanceType is malformed.")
        f = _filters(params)
        ids = params.get("ImageIds") or f.get("image-id")
        images = [self._image(i) for i in self.images]
        images = [i for i in images
                  if (not ids or i["ImageId"] in ids)
                  and ("image-type" not in f or i["ImageType"] in f["image-type"])
                  and ("platform" not in f or i["Platform"] in f["platform"])
                  and ("image-name" not in f or i["ImageName"] in f["image-name"])]
        return {"TotalCount": len(images), "ImageSet": _page(images, params, 100)}

    def _quota_items(self, region: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        f = _filters(params)
        items = []
        for zone in REGIONS[region][1]:
            for itype, (family, cpu, mem, gpu, gpus, price) in TYPES.items():
                for charge in ("POSTPAID_BY_HOUR", "SPOTPAID"):
                    if charge == "SPOTPAID" and (region, itype) in self.no_spot:
                        continue  # not sold as spot here: no item at all, as CVM lists it
                    if (region, itype) in self.unlisted:
                        continue  # not sold here at all: no item of either charge
                    if any(name in f and value not in f[name] for name, value in (
                            ("zone", zone), ("instance-type", itype),
                            ("instance-charge-type", charge), ("instance-family", family))):
                        continue
                    unit = self.price(zone, itype, charge)
                    reason = self.sold_out.get((zone, itype, charge), "")
                    items.append({
                        "Zone": zone, "InstanceType": itype, "InstanceChargeType": charge,
                        "NetworkCard": 0, "Externals": {}, "Cpu": cpu, "Memory": mem,
                        "InstanceFamily": family, "TypeName": f"{family} {gpu}".strip(),
                        "LocalDiskTypeList": [], "Status": "SOLD_OUT" if reason else "SELL",
                        "Price": {"UnitPrice": price, "ChargeUnit": "HOUR",
                                  "UnitPriceDiscount": unit,
                                  "Discount": round(unit / price * 100, 1)},
                        "SoldOutReason": reason, "InstanceBandwidth": 10.0,
                        "InstancePps": 100, "StorageBlockAmount": 0, "CpuType": "Intel",
                        "Gpu": gpus, "Fpga": 0, "Remark": gpu, "GpuCount": float(gpus),
                        "Frequency": "2.5GHz", "StatusCategory": "EnoughStock"
                        if not reason else "WithoutStock"})
        return items

    def _DescribeZoneInstanceConfigInfos(self, region: str, params: dict[str, Any]
                                         ) -> dict[str, Any]:
        return {"InstanceTypeQuotaSet": self._quota_items(region, params)}

    def _check_launch(self, region: str, params: dict[str, Any]) -> tuple[str, str, str]:
        zone = str((params.get("Placement") or {}).get("Zone") or "")
        if not zone:
            raise ApiError("MissingParameter", "Placement.Zone is missing.")
        if zone not in REGIONS[region][1]:
            raise ApiError("InvalidZone.MismatchRegion", f"The zone {zone} does not exist.")
        itype = str(params.get("InstanceType") or "")
        if itype not in TYPES:
            raise ApiError("InvalidParameterValue.InstanceTypeNotFound",
                           f"The instance type {itype} does not exist.")
        image = params.get("ImageId")
        if not any(i["ImageId"] == image for i in self.images):
            raise ApiError("InvalidImageId.NotFound", f"The image {image} was not found.")
        charge = params.get("InstanceChargeType", "POSTPAID_BY_HOUR")
        if charge not in ("POSTPAID_BY_HOUR", "SPOTPAID"):
            raise ApiError("InvalidParameterValue",
                           f"InstanceChargeType {charge} is not offered by the stand-in.")
        if charge == "SPOTPAID" and (region, itype) in self.no_spot:
            raise ApiError("UnsupportedOperation.NoInstanceTypeSupportSpot",
                           f"The instance type {itype} does not support spot billing in "
                           f"{region}.")
        return zone, itype, charge

    def _InquiryPriceRunInstances(self, region: str, params: dict[str, Any]) -> dict[str, Any]:
        zone, itype, charge = self._check_launch(region, params)
        price = TYPES[itype][5]
        unit = self.price(zone, itype, charge)
        return {"Price": {"InstancePrice": {"UnitPrice": price, "ChargeUnit": "HOUR",
                                            "UnitPriceDiscount": unit,
                                            "Discount": round(unit / price * 100, 1)},
                          "BandwidthPrice": {"UnitPrice": 0.8, "ChargeUnit": "GB",
                                             "UnitPriceDiscount": 0.8, "Discount": 100.0}}}

    # ------------------------------------------------------------------ CVM: key pairs

    def _ImportKeyPair(self, region: str, params: dict[str, Any]) -> dict[str, Any]:
        name = str(params.get("KeyName") or "")
        if "ProjectId" not in params:
            raise ApiError("MissingParameter", "ProjectId is missing.")
        if not name:
            raise ApiError("InvalidKeyPairNameEmpty", "The key name is empty.")
        if not _KEY_NAME.match(name):
            raise ApiError("InvalidKeyPairNameIncludeIllegalChar",
                           "Key names allow only letters, digits and underscores.")
        if len(name) > 25:
            raise ApiError("InvalidKeyPairNameTooLong", "The key name exceeds 25 characters.")
        public = str(params.get("PublicKey") or "").split()
        # Tencent documents PublicKey as "OpenSSH RSA format": refuse other types.
        if len(public) < 2 or public[0] != "ssh-rsa":
            raise ApiError("InvalidPublicKey.Malformed", "The public key is malformed.")
        if any(k["KeyName"] == name and k["_region"] == region
               for k in self.state.key_pairs.values()):
            raise ApiError("InvalidKeyPairName.Duplicate", f"Key name {name} already exists.")
        key_id = _new_id("skey-")
        self.state.key_pairs[key_id] = {
            "KeyId": key_id, "KeyName": name, "ProjectId": int(params["ProjectId"]),
            "Description": "", "PublicKey": " ".join(public), "PrivateKey": "",
            "CreatedTime": _now_iso(), "Tags": _tag_spec(params, "keypair"), "_region": region}
        return {"KeyId": key_id}

    def _key_view(self, key: dict[str, Any]) -> dict[str, Any]:
        view = {k: v for k, v in key.items() if not k.startswith("_")}
        view["AssociatedInstanceIds"] = [
            i["InstanceId"] for i in self.state.instances.values()
            if key["KeyId"] in i["LoginSettings"]["KeyIds"]]  # TERMINATING ones too
        return view

    def _DescribeKeyPairs(self, region: str, params: dict[str, Any]) -> dict[str, Any]:
        f = _filters(params)
        ids = params.get("KeyIds")
        keys = [self._key_view(k) for k in self.state.key_pairs.values()
                if k["_region"] == region and (not ids or k["KeyId"] in ids)
                and ("key-name" not in f or k["KeyName"] in f["key-name"])
                and _tag_match(k["Tags"], f)]
        return {"TotalCount": len(keys), "KeyPairSet": _page(keys, params, self.max_page)}

    def _DeleteKeyPairs(self, region: str, params: dict[str, Any]) -> dict[str, Any]:
        ids = [str(i) for i in params.get("KeyIds") or []]
        for key_id in ids:
            key = self.state.key_pairs.get(key_id)
            if key is None or key["_region"] != region:
                raise ApiError("InvalidKeyPairId.NotFound", f"Key pair {key_id} not found.")
            if any(key_id in i["LoginSettings"]["KeyIds"] for i in self.state.instances.values()):
                raise ApiError("ResourceInUse", f"The key pair {key_id} is bound to a machine.")
            self._still_releasing(key_id)
        for key_id in ids:
            del self.state.key_pairs[key_id]
        return {}

    # ------------------------------------------------------------------ CVM: instances

    def _RunInstances(self, region: str, params: dict[str, Any]) -> dict[str, Any]:
        if params.get("DryRun"):
            # DryRun checks the required parameters and the stock too (CAM came first).
            if not params.get("ImageId"):
                raise ApiError("MissingParameter", "The request is missing ImageId.")
            zone, itype, charge = self._check_launch(region, params)
            if (zone, itype, charge) in self.sold_out:
                raise ApiError("ResourcesSoldOut.SpecifiedInstanceType",
                               f"The instance type {itype} is sold out in {zone}.")
            raise ApiError("DryRunOperation", "The request would have succeeded (DryRun).")
        token = str(params.get("ClientToken") or "")
        if len(token) > 64 or not token.isascii():
            raise ApiError("InvalidClientToken.TooLong", "ClientToken exceeds 64 characters.")
        if token and (region, token) in self.state.tokens:
            return {"InstanceIdSet": list(self.state.tokens[(region, token)])}
        zone, itype, charge = self._check_launch(region, params)
        if self.zone_state[zone] != "AVAILABLE":
            raise ApiError("ResourcesSoldOut.AvailableZone", f"The zone {zone} is sold out.")
        groups = [str(g) for g in params.get("SecurityGroupIds") or []]
        for group in groups:
            if group not in self.state.groups:
                raise ApiError("InvalidSecurityGroupId.NotFound",
                               f"The security group {group} does not exist.")
        keys = [str(k) for k in (params.get("LoginSettings") or {}).get("KeyIds") or []]
        for key in keys:
            if key not in self.state.key_pairs:
                raise ApiError("InvalidParameterValue.KeyPairNotFound",
                               f"The key pair {key} does not exist.")
        if charge == "SPOTPAID":
            market = params.get("InstanceMarketOptions") or {}
            spot = market.get("SpotOptions") or {}
            if market.get("MarketType") != "spot" or "MaxPrice" not in spot:
                raise ApiError("MissingParameter",
                               "InstanceMarketOptions.SpotOptions.MaxPrice is missing.")
        if (zone, itype, charge) in self.sold_out:
            raise ApiError("ResourcesSoldOut.SpecifiedInstanceType",
                           f"The instance type {itype} is sold out in {zone}.")
        if charge == "SPOTPAID":
            bid = float(params["InstanceMarketOptions"]["SpotOptions"]["MaxPrice"])
            if bid < self.price(zone, itype, charge):
                raise ApiError("InvalidParameterValue.InsufficientPrice",
                               "The bid is below the current spot price.")
        timer = params.get("ActionTimer")
        if timer is not None:
            self._check_timer(timer)
        role_name = str(params.get("CamRoleName") or "")
        if role_name:  # RunInstances CamRoleName: checked as ModifyInstancesAttribute checks it
            self._cvm_role(role_name)
        count = int(params.get("InstanceCount") or 1)
        alive = sum(1 for i in self.state.instances.values()
                    if i["_region"] == region and i["InstanceState"] != "TERMINATING")
        if self.instance_quota is not None and alive + count > self.instance_quota:
            raise ApiError("LimitExceeded.InstanceQuota",
                           "The instance quota is not enough for this request.")
        ids = [self._create(region, zone, itype, charge, params, groups, keys)
               for _ in range(count)]
        if token:
            self.state.tokens[(region, token)] = ids
        if timer is not None:
            for instance_id in ids:
                self._add_timer(instance_id, timer)
        return {"InstanceIdSet": ids}

    # ------------------------------------------------------------------ CVM: action timers

    def _check_timer(self, timer: Any) -> None:
        if not isinstance(timer, dict) or timer.get("TimerAction") != "TerminateInstances":
            raise ApiError("InvalidParameterValue",
                           "ActionTimer.TimerAction only supports TerminateInstances.")
        try:
            at = datetime.strptime(str(timer.get("ActionTime")), "%Y-%m-%dT%H:%M:%SZ")
        except ValueError:
            raise ApiError("InvalidParameterValue.InvalidTimeFormat",
                           "ActionTime must be YYYY-MM-DDThh:mm:ssZ (UTC).") from None
        if at.replace(tzinfo=UTC).timestamp() < time.time() + self.clock_offset + \
                TIMER_MIN_AHEAD_S:
            raise ApiError("InvalidParameterValue",
                           "ActionTime must be at least 5 minutes after the current time.")

    def _add_timer(self, instance_id: str, timer: dict[str, Any]) -> str:
        if any(t["InstanceId"] == instance_id and t["Status"] == "UNDO"
               for t in self.state.action_timers.values()):
            raise ApiError("FailedOperation.MutActionTimerExist",
                           f"The instance {instance_id} already has a scheduled action.")
        timer_id = _new_id("at-")
        self.state.action_timers[timer_id] = {
            "TimerAction": timer["TimerAction"], "ActionTime": timer["ActionTime"],
            "Externals": {}, "ActionTimerId": timer_id, "Status": "UNDO",
            "InstanceId": instance_id}
        return timer_id

    def _ImportInstancesActionTimer(self, region: str, params: dict[str, Any]
                                    ) -> dict[str, Any]:
        timer = params.get("ActionTimer")
        if timer is None:
            raise ApiError("MissingParameter", "ActionTimer is missing.")
        self._check_timer(timer)
        instances = self._instances(region, params)
        return {"ActionTimerIds": [self._add_timer(i["InstanceId"], timer) for i in instances]}

    def _DescribeInstancesActionTimer(self, region: str, params: dict[str, Any]
                                      ) -> dict[str, Any]:
        ids = {str(i) for i in params.get("ActionTimerIds") or []}
        instances = {str(i) for i in params.get("InstanceIds") or []}
        statuses = {str(s) for s in params.get("StatusList") or []}
        found = [dict(t) for t in self.state.action_timers.values()
                 if (not ids or t["ActionTimerId"] in ids)
                 and (not instances or t["InstanceId"] in instances)
                 and (not statuses or t["Status"] in statuses)
                 and self.state.instances.get(t["InstanceId"], {}).get("_region", region)
                 == region]
        return {"TotalCount": len(found), "ActionTimers": found}

    def _DeleteInstancesActionTimer(self, region: str, params: dict[str, Any]
                                    ) -> dict[str, Any]:
        ids = [str(i) for i in params.get("ActionTimerIds") or []]
        if not ids:
            raise ApiError("MissingParameter", "ActionTimerIds is missing.")
        for timer_id in ids:
            if timer_id not in self.state.action_timers:
                raise ApiError("InvalidParameterValue",
                               f"The action timer {timer_id} does not exist.")
        for timer_id in ids:
            del self.state.action_timers[timer_id]
        return {}

    def fire_timers(self, now: float) -> list[str]:
        """Test control: run every UNDO timer due at ``now`` as CVM would (terminate)."""
        fired = []
        with self._lock:
            for t in self.state.action_timers.values():
                at = datetime.strptime(t["ActionTime"], "%Y-%m-%dT%H:%M:%SZ")
                instance = self.state.instances.get(t["InstanceId"])
                if t["Status"] != "UNDO" or at.replace(tzinfo=UTC).timestamp() > now:
                    continue
                t["Status"] = "DONE"
                if instance is not None:
                    instance["InstanceState"] = "TERMINATING"
                    instance["LatestOperation"] = "TerminateInstances"
                    fired.append(t["InstanceId"])
        return fired

    def _create(self, region: str, zone: str, itype: str, charge: str, params: dict[str, Any],
                groups: list[str], keys: list[str]) -> str:
        instance_id = _new_id("ins-")
        family, cpu, mem, gpu, gpus, _ = TYPES[itype]
        disk = params.get("SystemDisk") or {}
        n = next(self._ips)
        self.state.instances[instance_id] = {
            "Placement": {"Zone": zone, "ProjectId": 0}, "InstanceId": instance_id,
            "InstanceType": itype, "CPU": cpu, "Memory": mem, "RestrictState": "NORMAL",
            "InstanceName": params.get("InstanceName", "未命名"), "InstanceChargeType": charge,
            "SystemDisk": {"DiskType": disk.get("DiskType", "CLOUD_PREMIUM"),
                           "DiskId": _new_id("disk-"), "DiskSize": disk.get("DiskSize", 50)},
            "DataDisks": None, "PrivateIpAddresses": [f"10.0.0.{n}"], "PublicIpAddresses": None,
            "InternetAccessible": params.get("InternetAccessible") or {},
            "VirtualPrivateCloud": {"VpcId": "vpc-default0", "SubnetId": "subnet-default0"},
            "ImageId": params["ImageId"], "RenewFlag": None, "CreatedTime": _now_iso(),
            "ExpiredTime": None, "OsName": "Ubuntu Server 22.04 LTS 64bit",
            "SecurityGroupIds": groups, "LoginSettings": {"KeyIds": keys},
            "InstanceState": "PENDING", "Tags": _tag_spec(params, "instance"),
            # NOT_APPLICABLE while not stopped; StopInstances sets the mode it stopped with
            "StopChargingMode": "NOT_APPLICABLE", "Uuid": str(uuid.uuid4()),
            "LatestOperation": "RunInstances", "LatestOperationState": "OPERATING",
            "GPUInfo": {"GPUCount": float(gpus), "GPUType": gpu} if gpus else None,
            "DefaultLoginUser": "ubuntu", "DefaultLoginPort": 22,
            "_region": region, "_public": f"198.51.100.{n}", "_fails": "",
        }
        if params.get("CamRoleName"):
            self.state.instances[instance_id]["CamRoleName"] = str(params["CamRoleName"])
        for i, (fail_zone, message) in enumerate(self.launch_failures):
            if fail_zone in ("", zone):
                self.state.instances[instance_id]["_fails"] = message
                del self.launch_failures[i]
                break
        return instance_id

    def _advance(self, instance: dict[str, Any]) -> None:
        """Each describe that shows a moving machine moves it one step on."""
        nxt = {"PENDING": "RUNNING", "STARTING": "RUNNING", "STOPPING": "STOPPED",
               "REBOOTING": "RUNNING"}.get(instance["InstanceState"])
        if nxt == "RUNNING" and instance["_fails"] and instance["InstanceState"] == "PENDING":
            instance["InstanceState"] = "LAUNCH_FAILED"
            instance["LatestOperationState"] = "FAILED"
            instance["LatestOperationErrorMsg"] = instance["_fails"]
        elif nxt:
            instance["InstanceState"] = nxt
            instance["LatestOperationState"] = "SUCCESS"
            if nxt == "RUNNING":
                instance["PublicIpAddresses"] = [instance["_public"]]
        elif instance["InstanceState"] == "TERMINATING":
            instance["_terminating"] = instance.get("_terminating", 0) + 1
            if instance["_terminating"] >= self.terminating_describes:
                del self.state.instances[instance["InstanceId"]]
                for held in [*instance["SecurityGroupIds"], *instance["LoginSettings"]["KeyIds"]]:
                    if self.linger_deletes:
                        self.lingering[held] = self.linger_deletes

    def _DescribeInstances(self, region: str, params: dict[str, Any]) -> dict[str, Any]:
        ids = [str(i) for i in params.get("InstanceIds") or []]
        f = _filters(params)
        if ids and f:
            raise ApiError("InvalidParameter", "InstanceIds and Filters cannot be used together.")
        for instance_id in ids + f.get("instance-id", []):
            if not _INSTANCE_ID.match(instance_id):
                raise ApiError("InvalidInstanceId.Malformed",
                               f"The instance id {instance_id} is malformed.")
        wanted = ids or f.get("instance-id")
        matched = [i for i in self.state.instances.values()
                   if i["_region"] == region and (not wanted or i["InstanceId"] in wanted)
                   and ("zone" not in f or i["Placement"]["Zone"] in f["zone"])
                   and ("instance-state" not in f or i["InstanceState"] in f["instance-state"])
                   and _tag_match(i["Tags"], f)]
        page = _page(matched, params, self.max_page)
        view = [{k: v for k, v in i.items() if not k.startswith("_")} for i in page]
        view = json.loads(json.dumps(view))  # a snapshot, before the machines move on
        for instance in page:
            self._advance(instance)
        return {"TotalCount": len(matched), "InstanceSet": view}

    def _instances(self, region: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        ids = [str(i) for i in params.get("InstanceIds") or []]
        if not ids:
            raise ApiError("MissingParameter", "InstanceIds is missing.")
        found = []
        for instance_id in ids:
            if not _INSTANCE_ID.match(instance_id):
                raise ApiError("InvalidInstanceId.Malformed",
                               f"The instance id {instance_id} is malformed.")
            instance = self.state.instances.get(instance_id)
            if instance is None or instance["_region"] != region:
                raise ApiError("InvalidInstanceId.NotFound",
                               f"The instance {instance_id} was not found.")
            found.append(instance)
        return found

    def _transition(self, region: str, params: dict[str, Any], allowed: str, to: str
                    ) -> list[dict[str, Any]]:
        instances = self._instances(region, params)
        for instance in instances:
            state = instance["InstanceState"]
            if state not in allowed.split("|"):
                raise ApiError(f"UnsupportedOperation.InstanceState{state.title()}",
                               f"The instance {instance['InstanceId']} is {state}.")
        operation = {"STOPPING": "StopInstances", "STARTING": "StartInstances",
                     "REBOOTING": "RebootInstances"}.get(to, "")
        for instance in instances:
            instance["InstanceState"] = to
            instance["LatestOperationState"] = "OPERATING"
            if operation:  # CVM names the latest operation (without its time)
                instance["LatestOperation"] = operation
        return instances

    def _StopInstances(self, region: str, params: dict[str, Any]) -> dict[str, Any]:
        mode = params.get("StoppedMode", "KEEP_CHARGING")
        if mode not in ("KEEP_CHARGING", "STOP_CHARGING"):
            raise ApiError("InvalidParameterValue", f"StoppedMode {mode} is not valid.")
        if mode == "STOP_CHARGING":
            # "No charge when shut down": pay-as-you-go machines on cloud disks only
            for instance in self._instances(region, params):
                disks = [instance["SystemDisk"], *(instance.get("DataDisks") or [])]
                if instance["InstanceChargeType"] != "POSTPAID_BY_HOUR" or any(
                        str(d.get("DiskType", "")).startswith("LOCAL_") for d in disks):
                    raise ApiError("UnsupportedOperation.StoppedModeStopCharging",
                                   f"The instance {instance['InstanceId']} does not support "
                                   "STOP_CHARGING.")
        for instance in self._transition(region, params, "RUNNING", "STOPPING"):
            instance["StopChargingMode"] = mode
        return {}

    def _StartInstances(self, region: str, params: dict[str, Any]) -> dict[str, Any]:
        for instance in self._transition(region, params, "STOPPED", "STARTING"):
            instance["StopChargingMode"] = "NOT_APPLICABLE"
        return {}

    def _TerminateInstances(self, region: str, params: dict[str, Any]) -> dict[str, Any]:
        self._transition(region, params, "PENDING|RUNNING|STOPPED|STOPPING|STARTING|"
                         "LAUNCH_FAILED|REBOOTING", "TERMINATING")
        return {}

    # ------------------------------------------------------------------ VPC: security groups

    def _group(self, region: str, group_id: str) -> dict[str, Any]:
        group = self.state.groups.get(group_id)
        if group is None or group["_region"] != region:
            raise ApiError("InvalidSecurityGroupID.NotFound",
                           f"The security group {group_id} does not exist.")
        return group

    def _CreateSecurityGroup(self, region: str, params: dict[str, Any]) -> dict[str, Any]:
        for name in ("GroupName", "GroupDescription"):
            if not params.get(name):
                raise ApiError("MissingParameter", f"{name} is missing.")
        if len(str(params["GroupName"])) > 60:
            raise ApiError("InvalidParameterValue.Range", "GroupName exceeds 60 characters.")
        group_id = _new_id("sg-")
        self.state.groups[group_id] = {
            "SecurityGroupId": group_id, "SecurityGroupName": params["GroupName"],
            "SecurityGroupDesc": params["GroupDescription"],
            "ProjectId": str(params.get("ProjectId", "0")), "IsDefault": False,
            "CreatedTime": _now_iso().replace("T", " ").rstrip("Z"),
            "TagSet": _tags(params.get("Tags")), "UpdateTime": _now_iso(),
            "Ingress": [], "Egress": [], "Version": 0, "_region": region}
        return {"SecurityGroup": self._group_view(self.state.groups[group_id])}

    def _group_view(self, group: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in group.items()
                if not k.startswith("_") and k not in ("Ingress", "Egress", "Version")}

    def _DescribeSecurityGroups(self, region: str, params: dict[str, Any]) -> dict[str, Any]:
        f = _filters(params)
        ids = params.get("SecurityGroupIds") or f.get("security-group-id")
        groups = [self._group_view(g) for g in self.state.groups.values()
                  if g["_region"] == region and (not ids or g["SecurityGroupId"] in ids)
                  and ("security-group-name" not in f
                       or g["SecurityGroupName"] in f["security-group-name"])
                  and _tag_match(g["TagSet"], f)]
        return {"TotalCount": len(groups), "SecurityGroupSet": _page(groups, params,
                                                                     self.max_page)}

    def _DescribeSecurityGroupPolicies(self, region: str, params: dict[str, Any]
                                       ) -> dict[str, Any]:
        group = self._group(region, str(params.get("SecurityGroupId")))
        out: dict[str, Any] = {"Version": str(group["Version"])}
        for direction in ("Ingress", "Egress"):
            out[direction] = [dict(rule, PolicyIndex=i, SecurityGroupId="", AddressTemplate={},
                                   ServiceTemplate={}, ModifyTime=group["UpdateTime"])
                              for i, rule in enumerate(group[direction])]
        return {"SecurityGroupPolicySet": out}

    @staticmethod
    def _direction(params: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
        policy_set = params.get("SecurityGroupPolicySet") or {}
        given = [d for d in ("Ingress", "Egress") if policy_set.get(d)]
        if len(given) != 1:
            raise ApiError("InvalidParameter",
                           "One request changes the rules of one direction only.")
        return given[0], list(policy_set[given[0]])

    @staticmethod
    def _check_rule(rule: dict[str, Any]) -> dict[str, Any]:
        protocol = str(rule.get("Protocol", "")).upper()
        port = str(rule.get("Port", "ALL") or "ALL").upper()
        if protocol not in ("TCP", "UDP", "ICMP", "ICMPV6", "ALL"):
            raise ApiError("InvalidParameterValue.Malformed", f"Protocol {protocol} is invalid.")
        if protocol == "ALL" and port != "ALL":
            raise ApiError("InvalidParameterValue.Range", "Protocol ALL takes port ALL.")
        if port != "ALL" and not re.fullmatch(r"\d{1,5}(-\d{1,5})?(,\d{1,5})*", port):
            raise ApiError("InvalidParameterValue.Malformed", f"Port {port} is invalid.")
        v4, v6 = rule.get("CidrBlock"), rule.get("Ipv6CidrBlock")
        if bool(v4) == bool(v6):
            raise ApiError("InvalidParameter", "Give exactly one of CidrBlock/Ipv6CidrBlock.")
        try:
            ipaddress.ip_network(str(v4 or v6), strict=False)
        except ValueError:
            raise ApiError("InvalidParameterValue.Malformed", "The CIDR is malformed.") from None
        action = str(rule.get("Action", "")).upper()
        if action not in ("ACCEPT", "DROP"):
            raise ApiError("InvalidParameterValue.Malformed", f"Action {action} is invalid.")
        clean = {"Protocol": protocol, "Port": port, "Action": action,
                 "PolicyDescription": str(rule.get("PolicyDescription", ""))}
        clean["CidrBlock" if v4 else "Ipv6CidrBlock"] = str(v4 or v6)
        clean.setdefault("CidrBlock", "")
        clean.setdefault("Ipv6CidrBlock", "")
        return clean

    def _CreateSecurityGroupPolicies(self, region: str, params: dict[str, Any]
                                     ) -> dict[str, Any]:
        group = self._group(region, str(params.get("SecurityGroupId")))
        direction, rules = self._direction(params)
        group[direction].extend(self._check_rule(r) for r in rules)
        group["Version"] += 1
        group["UpdateTime"] = _now_iso()
        return {}

    def _DeleteSecurityGroupPolicies(self, region: str, params: dict[str, Any]
                                     ) -> dict[str, Any]:
        group = self._group(region, str(params.get("SecurityGroupId")))
        direction, rules = self._direction(params)
        current = group[direction]
        if all("PolicyIndex" in r and len(r) == 1 for r in rules):
            doomed = {int(r["PolicyIndex"]) for r in rules}
            if any(i >= len(current) or i < 0 for i in doomed):
                raise ApiError("InvalidParameterValue.Range", "PolicyIndex is out of range.")
        else:
            wanted = [self._check_rule(r) for r in rules]
            doomed = {i for i, r in enumerate(current)
                      if any({k: r[k] for k in w if k != "PolicyDescription"}
                             == {k: w[k] for k in w if k != "PolicyDescription"}
                             for w in wanted)}
        group[direction] = [r for i, r in enumerate(current) if i not in doomed]
        group["Version"] += 1
        return {}

    def _DeleteSecurityGroup(self, region: str, params: dict[str, Any]) -> dict[str, Any]:
        group_id = str(params.get("SecurityGroupId"))
        self._group(region, group_id)
        if any(group_id in i["SecurityGroupIds"] for i in self.state.instances.values()):
            raise ApiError("ResourceInUse", f"The security group {group_id} is in use.")
        self._still_releasing(group_id)
        del self.state.groups[group_id]
        return {}

    # ------------------------------------------------------------------ CAM and the role

    def role_session(self, role: str) -> dict[str, str]:
        """Test control: ``role``'s temporary keys as CVM's metadata serves them to a machine
        bound to it. A call signed with them may do only what the role's attached policies
        allow (``role_policy.cam_allows``); the rest is refused as CAM refuses it."""
        key, secret, token = role_policy.session_keys(role, "AKID")
        with self._lock:
            self.secrets[key] = secret
            self.role_keys[key] = role
        return {"TmpSecretId": key, "TmpSecretKey": secret, "Token": token,
                "Expiration": "2030-01-01T00:00:00Z", "Code": "Success"}

    def _role_check(self, action: str, region: str, params: dict[str, Any]) -> None:
        """A call signed with a role's keys: every instance it names must be one the role's
        policies allow this action on (its tags as CAM reads them); a deleted role, none."""
        role = self.role_keys.get(self._caller)
        if role is None:
            return
        service = self._service_of(action)
        docs = [json.loads(self.state.policies[pid]["PolicyDocument"])
                for name, pid in self.state.attached
                if name == role and pid in self.state.policies and role in self.state.roles]
        for iid in [str(i) for i in params.get("InstanceIds") or []] or [""]:
            raw = self.state.instances.get(iid) or {}
            tags = {str(t["Key"]): str(t.get("Value", "")) for t in raw.get("Tags") or []}
            resource = f"qcs::{service}:{region}:uin/{OWNER_UIN}:instance/{iid or '*'}"
            if not role_policy.cam_allows(docs, service, action, resource, tags):
                raise ApiError("AuthFailure.UnauthorizedOperation",
                               f"you are not authorized to perform operation ({service}:"
                               f"{action})\nresource ({resource}) has no permission")

    def role_of(self, instance_id: str) -> str:
        """The CAM role CVM has bound to ``instance_id`` ("" for none)."""
        with self._lock:
            return str(self.state.instances[instance_id].get("CamRoleName") or "")

    def _role(self, params: dict[str, Any], name_key: str = "RoleName") -> dict[str, Any]:
        role = self.state.roles.get(str(params.get(name_key) or ""))
        if role is None:
            raise ApiError("InvalidParameter.RoleNotExist", "role not exist")
        return role

    def _GetRole(self, region: str, params: dict[str, Any]) -> dict[str, Any]:
        return {"RoleInfo": {k: v for k, v in self._role(params).items()
                             if not k.startswith("_")}}

    def _CreateRole(self, region: str, params: dict[str, Any]) -> dict[str, Any]:
        name = str(params.get("RoleName") or "")
        if name in self.state.roles:
            raise ApiError("InvalidParameter.RoleNameInUse", "role name in use")
        try:
            doc = json.loads(str(params.get("PolicyDocument") or ""))
            (statement,) = doc["statement"]
            services = statement["principal"]["service"]
        except (ValueError, KeyError, TypeError):
            raise ApiError("InvalidParameter.PrincipalError",
                           "policy document principal error") from None
        if doc.get("version") != "2.0" or statement.get("action") != "name/sts:AssumeRole":
            raise ApiError("InvalidParameter.PolicyDocumentError", "policy document error")
        role_id = str(4611686018427000000 + len(self.state.roles) + 1)
        self.state.roles[name] = {
            "RoleId": role_id, "RoleName": name, "PolicyDocument": json.dumps(doc),
            "Description": str(params.get("Description") or ""), "AddTime": _now_iso(),
            "UpdateTime": _now_iso(), "ConsoleLogin": int(params.get("ConsoleLogin") or 0),
            "RoleType": "user", "SessionDuration": int(params.get("SessionDuration") or 0),
            "Tags": _tags(params.get("Tags")),
            "RoleArn": f"qcs::cam::uin/{OWNER_UIN}:roleName/{name}",
            "_services": [services] if isinstance(services, str) else list(services)}
        return {"RoleId": role_id}

    def _policy_view(self, p: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in p.items() if k != "PolicyDocument"}

    def _ListPolicies(self, region: str, params: dict[str, Any]) -> dict[str, Any]:
        scope, keyword = params.get("Scope", "All"), str(params.get("Keyword") or "")
        found = [self._policy_view(p) for p in self.state.policies.values()
                 if scope != "QCS" and keyword in p["PolicyName"]]
        rp, page = int(params.get("Rp") or 20), int(params.get("Page") or 1)
        return {"TotalNum": len(found), "List": found[(page - 1) * rp:page * rp],
                "ServiceTypeList": []}

    def _GetPolicy(self, region: str, params: dict[str, Any]) -> dict[str, Any]:
        p = self.state.policies.get(int(params.get("PolicyId") or 0))
        if p is None:
            raise ApiError("ResourceNotFound.PolicyIdNotFound", "policy id not found")
        return {"PolicyName": p["PolicyName"], "Description": p["Description"], "Type": 1,
                "AddTime": p["AddTime"], "UpdateTime": p["AddTime"],
                "PolicyDocument": p["PolicyDocument"], "PresetAlias": "",
                "IsServiceLinkedRolePolicy": 0, "Tags": p["Tags"]}

    def _CreatePolicy(self, region: str, params: dict[str, Any]) -> dict[str, Any]:
        name = str(params.get("PolicyName") or "")
        if any(p["PolicyName"] == name for p in self.state.policies.values()):
            raise ApiError("FailedOperation.PolicyNameInUse", "policy name in use")
        try:
            doc = json.loads(str(params.get("PolicyDocument") or ""))
            statements = doc["statement"]
        except (ValueError, KeyError, TypeError):
            raise ApiError("InvalidParameter.PolicyDocumentError", "policy document error"
                           ) from None
        if doc.get("version") != "2.0" or not statements or any(
                st.get("effect") not in ("allow", "deny") for st in statements):
            raise ApiError("InvalidParameter.PolicyDocumentError", "policy document error")
        policy_id = next(self._policy_ids)
        self.state.policies[policy_id] = {
            "PolicyId": policy_id, "PolicyName": name, "AddTime": _now_iso(), "Type": 1,
            "Description": str(params.get("Description") or ""), "CreateMode": 2,
            "Attachments": 0, "ServiceType": "", "IsAttached": None,
            "PolicyDocument": json.dumps(doc), "Tags": _tags(params.get("Tags"))}
        return {"PolicyId": policy_id}

    def _AttachRolePolicy(self, region: str, params: dict[str, Any]) -> dict[str, Any]:
        role = self._role(params, "AttachRoleName")
        policy_id = int(params.get("PolicyId") or 0)
        if policy_id not in self.state.policies:
            raise ApiError("InvalidParameter.PolicyIdNotExist", "policy id not exist")
        pair = (role["RoleName"], policy_id)
        if pair not in self.state.attached:  # attaching again changes nothing
            self.state.attached.add(pair)
            self.state.policies[policy_id]["Attachments"] += 1
        return {}

    def _policy(self, params: dict[str, Any]) -> dict[str, Any]:
        """A custom policy by PolicyId or PolicyName ("二选一必填")."""
        if params.get("PolicyId"):
            found = self.state.policies.get(int(params["PolicyId"]))
        else:
            name = str(params.get("PolicyName") or "")
            found = next((p for p in self.state.policies.values() if p["PolicyName"] == name),
                         None)
        if found is None:
            raise ApiError("InvalidParameter.PolicyIdNotExist", "policy id not exist")
        return found

    def _UpdatePolicy(self, region: str, params: dict[str, Any]) -> dict[str, Any]:
        policy = self._policy(params)
        if policy["CreateMode"] != 2:
            raise ApiError("InvalidParameter.PolicyIdError", "only a custom policy (createMode 2)"
                           " can be updated")
        if "PolicyDocument" in params:
            text = str(params.get("PolicyDocument") or "")
            if len(text) > CAM_POLICY_MAX:
                raise ApiError("InvalidParameter.PolicyDocumentLengthOverLimit",
                               "policy document length over limit")
            try:
                doc = json.loads(text)
                statements = doc["statement"]
            except (ValueError, KeyError, TypeError):
                raise ApiError("InvalidParameter.PolicyDocumentError", "policy document error"
                               ) from None
            if doc.get("version") != "2.0" or not statements or any(
                    st.get("effect") not in ("allow", "deny") for st in statements):
                raise ApiError("InvalidParameter.PolicyDocumentError", "policy document error")
            policy["PolicyDocument"] = json.dumps(doc)
        if params.get("Description") is not None:
            policy["Description"] = str(params["Description"])
        return {"PolicyId": policy["PolicyId"]}

    def _DetachRolePolicy(self, region: str, params: dict[str, Any]) -> dict[str, Any]:
        role = self._role(params, "DetachRoleName")
        policy = self._policy(params)
        pair = (role["RoleName"], policy["PolicyId"])
        if pair in self.state.attached:
            self.state.attached.discard(pair)
            policy["Attachments"] -= 1
        return {}

    def _DeletePolicy(self, region: str, params: dict[str, Any]) -> dict[str, Any]:
        ids = [int(i) for i in params.get("PolicyId") or []]
        if not ids or any(i not in self.state.policies for i in ids):
            raise ApiError("InvalidParameter.PolicyIdNotExist", "policy id not exist")
        for policy_id in ids:  # deleting a policy ends its attachments
            del self.state.policies[policy_id]
            self.state.attached = {p for p in self.state.attached if p[1] != policy_id}
        return {}

    def _DeleteRole(self, region: str, params: dict[str, Any]) -> dict[str, Any]:
        role = self._role(params)
        for pair in [p for p in self.state.attached if p[0] == role["RoleName"]]:
            self.state.attached.discard(pair)
            self.state.policies[pair[1]]["Attachments"] -= 1
        del self.state.roles[role["RoleName"]]
        return {}

    def _cvm_role(self, name: str) -> None:
        """A role CVM may give a machine: it exists and trusts ``cvm.qcloud.com``."""
        role = self.state.roles.get(name)
        if role is None or CVM_PRINCIPAL not in role["_services"]:
            raise ApiError("AuthFailure.CamRoleNameAuthenticateFailed",
                           f"The CAM role {name} cannot be used by CVM.")

    def _ModifyInstancesAttribute(self, region: str, params: dict[str, Any]) -> dict[str, Any]:
        given = [k for k in _MODIFIABLE if k in params]
        if len(given) != 1:
            raise ApiError("InvalidParameter", "Exactly one attribute must be modified per "
                           "request.")
        instances = self._instances(region, params)
        if given == ["CamRoleName"] and params["CamRoleName"]:
            self._cvm_role(str(params["CamRoleName"]))
        for instance in instances:
            if given == ["CamRoleName"]:
                instance["CamRoleName"] = str(params["CamRoleName"])
            elif given == ["InstanceName"]:
                instance["InstanceName"] = str(params["InstanceName"])
            else:
                raise ApiError("InvalidParameter", f"stand-in: {given[0]} is not served")
        return {}

    # ------------------------------------------------------------------ STS (issue 22)

    @staticmethod
    def _signer(headers: dict[str, str]) -> str:
        found = _AUTH.match(headers.get("authorization", ""))
        return found["id"] if found else ""

    def _GetUserAppId(self, region: str, params: dict[str, Any]) -> dict[str, Any]:
        uin = OWNER_UIN if self._caller in self.main_keys else SUB_UIN
        return {"Uin": uin, "OwnerUin": OWNER_UIN, "AppId": int(APPID)}

    def _GetFederationToken(self, region: str, params: dict[str, Any]) -> dict[str, Any]:
        name = str(params.get("Name") or "")
        if not _FEDERATION_NAME.match(name):
            raise ApiError("InvalidParameter.ParamError",
                           "Name must be 2 to 32 characters of letters, digits and +=,.@_-.")
        try:
            doc = json.loads(unquote(str(params.get("Policy") or "")))
            statements = doc["statement"]
        except (ValueError, KeyError, TypeError):
            raise ApiError("InvalidParameter.PolicyError", "policy error") from None
        if (doc.get("version") != "2.0" or not isinstance(statements, list) or not statements
                or any("principal" in st for st in statements)
                or any(st.get("effect") not in ("allow", "deny") for st in statements)):
            raise ApiError("InvalidParameter.PolicyError", "policy error")
        main = self._caller in self.main_keys
        high = STS_MAIN_MAX_S if main else STS_SUB_MAX_S
        raw = params.get("DurationSeconds", STS_DEFAULT_S)
        if not isinstance(raw, int) or isinstance(raw, bool) or not 0 < raw <= high:
            raise ApiError("InvalidParameter.ParamError",
                           f"DurationSeconds must be 1 to {high} for this account.")
        now = int(time.time() + self.clock_offset)
        token = {"Name": name, "Policy": doc, "DurationSeconds": raw, "Key": self._caller,
                 "TmpSecretId": "AKID" + _new_id("t")[2:] + uuid.uuid4().hex[:24],
                 "TmpSecretKey": uuid.uuid4().hex, "Token": uuid.uuid4().hex * 4,
                 "ExpiredTime": now + raw}
        self.federation_tokens.append(token)
        return {"Credentials": {k: token[k] for k in ("TmpSecretId", "TmpSecretKey", "Token")},
                "ExpiredTime": now + raw,
                "Expiration": datetime.fromtimestamp(now + raw, UTC).strftime(
                    "%Y-%m-%dT%H:%M:%SZ")}

    def _still_releasing(self, resource: str) -> None:
        left = self.lingering.get(resource, 0)
        if left > 0:
            self.lingering[resource] = left - 1
            raise ApiError("ResourceInUse", f"The resource {resource} is still in use by a "
                                            "network interface being released.")


def sdk_client(server: TencentStandin, service: str = "cvm", region: str = "ap-guangzhou",
               secret_id: str = SECRET_ID, secret_key: str = SECRET_KEY) -> Any:
    """A real SDK client (CvmClient/VpcClient) pointed at ``server``."""
    from tencentcloud.common import credential
    from tencentcloud.common.profile.client_profile import ClientProfile
    from tencentcloud.common.profile.http_profile import HttpProfile
    from tencentcloud.cvm.v20170312.cvm_client import CvmClient
    from tencentcloud.vpc.v20170312.vpc_client import VpcClient

    profile = ClientProfile(httpProfile=HttpProfile(protocol="http", endpoint=server.endpoint,
                                                    reqTimeout=10))
    cls = VpcClient if service == "vpc" else CvmClient
    return cls(credential.Credential(secret_id, secret_key), region, profile)


def timer_at(text: str) -> float:
    """Unix seconds of an ActionTimer's ``ActionTime`` (``%Y-%m-%dT%H:%M:%SZ``, UTC)."""
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()


def undo_timers(cloud: TencentStandin, cloud_id: str) -> list[dict[str, Any]]:
    """The CVM action timers pending for ``cloud_id`` (``UNDO``), as the stand-in holds them."""
    return [t for t in cloud.state.action_timers.values()
            if t["InstanceId"] == cloud_id and t["Status"] == "UNDO"]
