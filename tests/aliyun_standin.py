"""A stand-in Alibaba Cloud ECS (2014-05-26) and VPC (2016-04-28) API server: the actions
gpudesk uses.

It speaks the wire format alibabacloud-ecs20140526 uses (RPC style, POST with
the parameters in the query string flattened as ``Tag.1.Key``, ``x-acs-*``
headers, answers as JSON with a ``RequestId``, errors as HTTP 4xx with
``{"RequestId", "HostId", "Code", "Message", "Recommend"}``) and checks the
ACS3-HMAC-SHA256 signature exactly as alibabacloud-tea-openapi makes it
(``Utils.get_authorization``): canonical request ``METHOD\\n/\\n<sorted query,
RFC 3986 encoded>\\n<signed headers, lower-case, sorted>\\n<names>\\n<x-acs-content-sha256>``,
string to sign ``ACS3-HMAC-SHA256\\n<sha256 hex>``, HMAC-SHA256 with the secret.
The payload hash header must be the body's SHA-256, the date within 15
minutes and every nonce new.

The product is told by the ``x-acs-version`` header: the VPC actions
(CreateVpc, DescribeVpcs, CreateVSwitch, DescribeVSwitches) are served as the
VPC API's, with ``Tag.N.Key``/``Tag.N.Value`` on create and as a filter on
describe and ``Tags.Tag[].Key/Value`` in answers. ECS's legacy VPC actions,
which take no tags, are not served: a call to them fails as an unknown action.

State per region: machines (Pending → Running on a later describe, Stopping →
Stopped, Starting → Running, deleted at once by DeleteInstances and at their
AutoReleaseTime by the server's clock), key pairs, security groups and rules,
VPCs (Pending → Available) and vSwitches with their tags, ClientToken answers,
stock per zone. RunInstances, a DryRun too, checks that its image, vSwitch and
security group exist. ``add_vpc``/``add_vswitch``/``add_group`` put in the
user's own network (no gpudesk tag); ``fail_next`` makes the next matching
call(s) fail with a real code.

RAM (2015-05-01, issue 21, told by its version header): roles and custom policies with
their attachments, account-wide; CreateRole and CreatePolicy check their documents, and ECS
AttachInstanceRamRole attaches a role only if it exists and trusts ``ecs.aliyuncs.com``,
to machines of the region (``role_of`` says which role a machine has). ``ram_denied``
answers every RAM call NoPermission and AttachInstanceRamRole Forbidden.RAM (and
``pass_role_denied`` a RunInstances naming ``RamRoleName``). RunInstances takes the role
too (``RamRoleName``, checked as AttachInstanceRamRole checks it).

STS (2015-04-01, issue 22, told by its version header): ``GetCallerIdentity`` says whose
keys sign (``root_keys`` are the account's own, every other key a RAM user's), and
``AssumeRole`` hands out short-lived keys for a role whose trust policy names the account
(``Principal.RAM``), held to the documented limits: the account's own keys may not call it,
``RoleSessionName`` 2..64 of letters, digits and ``_.@-``, ``Policy`` at most 2048
characters of JSON, ``DurationSeconds`` 900..the role's ``MaxSessionDuration``. Each is recorded
(``assumed``). RAM CreateRole also takes a role trusted by accounts (``Principal.RAM``),
with ``MaxSessionDuration`` 3600..43200.

Every request is checked against ECS's and VPC's documented limits in
``cloud_limits.ALIYUN`` before anything else and refused in ECS's words
(``InvalidParameter: The specified parameter "PageSize" is not valid.``);
``limit_refusals`` lists them. DescribeSecurityGroups and DescribeInstances page
by MaxResults/NextToken too. Spot is sold only outside ``no_spot`` (zone or "*",
type): DescribeAvailableResource with a SpotStrategy leaves those out, spot
price history has none, and RunInstances refuses them
(``InvalidResourceType.NotSupported``).
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import random
import re
import string
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from datetime import UTC
from datetime import datetime
from typing import Any
from urllib.parse import parse_qsl
from urllib.parse import quote
from urllib.parse import urlsplit

import cloud_limits
import role_policy
from cloud_bill import Bill
from cloud_bill import Seen
from cloud_bill import aliyun_state
from standin_http import ApiError
from standin_http import StandinServer

VERSION = "2014-05-26"  # ECS
VPC_VERSION = "2016-04-28"
VPC_ACTIONS = frozenset({"CreateVpc", "DescribeVpcs", "CreateVSwitch", "DescribeVSwitches"})
# Instance roles (issue 21): RAM 2015-05-01 (ram.aliyuncs.com, account-wide: no RegionId)
# and ECS AttachInstanceRamRole.
RAM_VERSION = "2015-05-01"
RAM_ACTIONS = frozenset({"GetRole", "CreateRole", "GetPolicy", "CreatePolicy",
                         "AttachPolicyToRole"})
# Keep-alive group roles (issue 23): a policy's document replaced by a new default version
# (CreatePolicyVersion: PolicyDocument at most 6,144 bytes, "a policy can have at most 5
# versions", RotateStrategy None | DeleteOldestNonDefaultVersionWhenLimitExceeded; the
# default version cannot be deleted), detached, deleted (DeletePolicy refuses a policy still
# attached or with non-default versions; DeleteRole one with policies attached).
RAM_ACTIONS = RAM_ACTIONS | {"CreatePolicyVersion", "DeletePolicyVersion", "ListPolicyVersions",
                             "DetachPolicyFromRole", "DeletePolicy", "DeleteRole"}
RAM_POLICY_VERSIONS = 5
RAM_POLICY_MAX = 6144
ECS_PRINCIPAL = "ecs.aliyuncs.com"  # the service a role must trust for ECS to attach it
ACCOUNT_ID = "1234567890123456"
# STS AssumeRole (https://www.alibabacloud.com/help/en/ram/api-assumerole): RAM users and
# roles only; RoleSessionName 2-64 characters (letters, digits, ".", "@", "-", "_");
# Policy 1-2048 characters; DurationSeconds 900..the role's MaxSessionDuration (3600 by
# default). RAM CreateRole: MaxSessionDuration 3600-43200.
STS_VERSION = "2015-04-01"
STS_ACTIONS = frozenset({"AssumeRole", "GetCallerIdentity"})
STS_POLICY_MAX = 2048
STS_MIN_S = 900
ROLE_MAX_SESSION = (3600, 43200)
_SESSION_NAME = re.compile(r"^[\w.@-]{2,64}$")
# Actions ECS pages with MaxResults/NextToken (the others: PageNumber/PageSize only); the
# largest pages are cloud_limits.ALIYUN's, which every request is checked against.
TOKEN_PAGED = frozenset({"DescribeSecurityGroups", "DescribeInstances"})
ACCESS_KEY_ID = "LTAI5tGpudeskStandin0123"  # LTAI + 20, shaped like a real one
ACCESS_KEY_SECRET = "Gk7pQ2xVb9Lm4Nc8Rt1Yw6Zs3Hd5Jf"  # 30 characters
MAX_SKEW_S = 15 * 60
# The SDK dates its signature with the real clock (datetime.utcnow), whatever clock a test
# gives the cloud's own state: the skew is checked against the real one.
_real_time = time.time

REGIONS: dict[str, tuple[str, list[str]]] = {
    "cn-hangzhou": ("China (Hangzhou)", ["cn-hangzhou-h", "cn-hangzhou-i", "cn-hangzhou-j"]),
    "cn-shanghai": ("China (Shanghai)", ["cn-shanghai-e", "cn-shanghai-f", "cn-shanghai-l"]),
    "cn-beijing": ("China (Beijing)", ["cn-beijing-h", "cn-beijing-i", "cn-beijing-l"]),
}

# type: (vCPU, GiB, GPU, GPUs, pay-as-you-go CNY/hour as the stand-in quotes it)
TYPES: dict[str, tuple[int, int, str, int, float]] = {
    "ecs.gn6i-c4g1.xlarge": (4, 15, "T4", 1, 11.0),
    "ecs.gn6i-c8g1.2xlarge": (8, 31, "T4", 1, 13.0),
    "ecs.gn6v-c8g1.2xlarge": (8, 32, "V100", 1, 26.0),
    "ecs.gn6e-c12g1.3xlarge": (12, 92, "V100", 1, 30.0),
    "ecs.gn7i-c8g1.2xlarge": (8, 30, "A10", 1, 16.0),
    "ecs.gn7i-c16g1.4xlarge": (16, 60, "A10", 1, 19.0),
    "ecs.gn7e-c16g1.4xlarge": (16, 125, "A100", 1, 35.0),
}
SPOT_FACTOR = 0.2  # spot price = 20 % of pay-as-you-go
# Where spot is not sold at all (DescribeAvailableResource with a SpotStrategy leaves the type
# out of the zone; RunInstances refuses): (zone, type); "*" for every zone.
NO_SPOT: frozenset[tuple[str, str]] = frozenset({
    ("*", "ecs.gn7e-c16g1.4xlarge"),  # A100: pay-as-you-go only
    ("cn-hangzhou-h", "ecs.gn6v-c8g1.2xlarge"),  # V100: spot in the other zones only
})

IMAGES: list[dict[str, Any]] = [
    {"ImageId": "ubuntu_22_04_gpu_cuda12_20240510.vhd", "ImageName": "Ubuntu 22.04 64 bit "
     "GPU (NVIDIA driver 535, CUDA 12.2)", "Description": "Ubuntu with the NVIDIA GPU driver",
     "CreationTime": "2024-05-10T02:00:00Z", "Platform": "Ubuntu", "OSName": "Ubuntu 22.04"},
    {"ImageId": "ubuntu_20_04_gpu_cuda11_20220301.vhd", "ImageName": "Ubuntu 20.04 64 bit "
     "GPU (NVIDIA driver 470)", "Description": "GPU driver",
     "CreationTime": "2022-03-01T02:00:00Z", "Platform": "Ubuntu", "OSName": "Ubuntu 20.04"},
    {"ImageId": "ubuntu_22_04_x64_20G_alibase_20250101.vhd", "ImageName": "Ubuntu 22.04 64 bit",
     "Description": "Ubuntu", "CreationTime": "2025-01-01T02:00:00Z", "Platform": "Ubuntu",
     "OSName": "Ubuntu 22.04"},
    {"ImageId": "aliyun_3_x64_gpu_20250201.vhd", "ImageName": "Alibaba Cloud Linux 3 GPU",
     "Description": "GPU driver", "CreationTime": "2025-02-01T02:00:00Z",
     "Platform": "Aliyun", "OSName": "Alibaba Cloud Linux 3"},
]

_ID_CHARS = string.ascii_lowercase + string.digits
_AUTH = re.compile(r"^ACS3-HMAC-SHA256 Credential=(?P<id>[^,]+),"
                   r"SignedHeaders=(?P<signed>[a-z0-9;-]+),Signature=(?P<sig>[0-9a-f]{64})$")
_STATUS = {  # HTTP status of an error code, as ECS answers
    "InvalidAccessKeyId.NotFound": 404, "Forbidden.RAM": 403, "InvalidInstanceId.NotFound": 404,
    "InvalidSecurityGroupId.NotFound": 404, "InvalidKeyPairName.NotFound": 404,
    "IncorrectInstanceStatus": 403, "OperationDenied.NoStock": 403, "Zone.NotOnSale": 403,
    "InvalidAction.NotFound": 404, "DependencyViolation": 403, "InvalidVpcId.NotFound": 404,
    "InvalidVSwitchId.NotExist": 404, "InvalidImageId.NotFound": 404,
    "InvalidResourceType.NotSupported": 403,
    # RAM's and ECS's answers about roles (their API references' error tables)
    "NoPermission": 403, "EntityNotExist.Role": 404, "EntityNotExist.Policy": 404,
    "EntityAlreadyExists.Role": 409, "EntityAlreadyExists.Policy": 409,
    "EntityAlreadyExists.Role.Policy": 409, "InvalidRamRole.NotFound": 404,
    "InvalidRamRole.NotEcsRole": 404,
    "EntityNotExist.Role.Policy": 404, "EntityNotExist.PolicyVersion": 404,
    "DeleteConflict.Role.Policy": 409, "DeleteConflict.Policy.Role": 409,
    "DeleteConflict.Policy.Version": 409, "DeleteConflict.PolicyVersion.Default": 409,
    "LimitExceeded.Policy.Version": 409,
}


@dataclass
class State:
    instances: dict[str, dict[str, Any]] = field(default_factory=dict)  # id → raw (+ "_region")
    key_pairs: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    groups: dict[str, dict[str, Any]] = field(default_factory=dict)
    vpcs: dict[str, dict[str, Any]] = field(default_factory=dict)
    vswitches: dict[str, dict[str, Any]] = field(default_factory=dict)
    tokens: dict[tuple[str, str, str], Any] = field(default_factory=dict)
    released: list[tuple[str, float]] = field(default_factory=list)  # (id, when) by the clock
    # RAM (account-wide): roles and custom policies by name, (role, policy) attachments
    roles: dict[str, dict[str, Any]] = field(default_factory=dict)
    policies: dict[str, dict[str, Any]] = field(default_factory=dict)
    attached: set[tuple[str, str]] = field(default_factory=set)


def acs3_signature(secret: str, method: str, path: str, query: dict[str, str],
                   headers: dict[str, str], signed: list[str], payload_hash: str) -> str:
    """The signature alibabacloud-tea-openapi sends, recomputed from what arrived."""
    canonical_query = "&".join(f"{k}={quote(query[k], safe='~')}" for k in sorted(query))
    canonical_headers = "".join(f"{h}:{headers.get(h, '').strip()}\n" for h in signed)
    canonical = "\n".join([method, path or "/", canonical_query, canonical_headers,
                           ";".join(signed), payload_hash])
    to_sign = "ACS3-HMAC-SHA256\n" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()
    return hmac.new(secret.encode(), to_sign.encode(), hashlib.sha256).hexdigest()


def _new_id(prefix: str, n: int = 20) -> str:
    return prefix + "".join(random.choices(_ID_CHARS, k=n))


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse_iso(text: str) -> float | None:
    for fmt in ("%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%MZ"):
        try:
            return datetime.strptime(text, fmt).replace(tzinfo=UTC).timestamp()
        except ValueError:
            continue
    return None


def _listed(q: dict[str, str], name: str) -> list[str]:
    """``Name.1``, ``Name.2`` … from the flattened query."""
    out = []
    for i in itertools.count(1):
        if f"{name}.{i}" not in q:
            return out
        out.append(q[f"{name}.{i}"])
    return out  # pragma: no cover - count() never ends


def _objects(q: dict[str, str], name: str) -> list[dict[str, str]]:
    out = []
    for i in itertools.count(1):
        prefix = f"{name}.{i}."
        item = {k[len(prefix):]: v for k, v in q.items() if k.startswith(prefix)}
        if not item:
            return out
        out.append(item)
    return out


def _true(value: str | None) -> bool:
    return str(value).lower() == "true"


def _tags_view(tags: dict[str, str]) -> dict[str, Any]:
    return {"Tag": [{"TagKey": k, "TagValue": v} for k, v in tags.items()]}


def _tag_match(tags: dict[str, str], q: dict[str, str]) -> bool:
    return all(tags.get(t.get("Key", "")) == t.get("Value", tags.get(t.get("Key", "")))
               and t.get("Key", "") in tags for t in _objects(q, "Tag"))


class AliyunStandin(StandinServer):
    """The server; ``endpoint`` is ``127.0.0.1:PORT`` (what ``Config(endpoint=…)`` takes)."""

    name = "aliyun-standin"
    methods = frozenset({"POST", "GET"})
    content_type = "application/json;charset=utf-8"

    # ------------------------------------------------------------------ control

    def reset(self) -> None:
        with self._lock:
            self.state = State()
            self.calls: Counter[str] = Counter()
            self.requests = []  # action, region, query
            self.versions: Counter[tuple[str, str]] = Counter()  # (action, x-acs-version)
            self.failures = []
            self.clock_offset = 0.0  # seconds the server's clock is ahead of the caller's
            self.elapsed = 0.0  # seconds the cloud has lived ahead (advance()), signatures aside
            self.no_stock: set[tuple[str, str]] = set()  # (zone, type)
            self.not_on_sale: set[str] = set()  # zones
            self.denied: set[str] = set()  # actions answered Forbidden.RAM
            # every RAM call answered NoPermission, and AttachInstanceRamRole (passing a
            # role) Forbidden.RAM, as for a key without those permissions
            self.ram_denied = False
            # a key that may make roles but not pass one (ram:PassRole): RunInstances naming
            # RamRoleName answered Forbidden.RAM (as with ram_denied)
            self.pass_role_denied = False
            self.root_keys: set[str] = set()  # the account's own keys (the others: RAM users)
            self.assumed: list[dict[str, Any]] = []  # what AssumeRole gave
            self._caller = ""  # the key id the request being answered is signed with
            self.keep_charging_types: set[str] = set()  # StopCharging not allowed
            # DeleteSecurityGroup refused this many more times once no instance uses the
            # group (DependencyViolation), as ECS does while it releases the network card
            self.linger_deletes = 0
            self.lingering: Counter[str] = Counter()  # group id -> refusals so far
            self.no_spot: set[tuple[str, str]] = set(NO_SPOT)  # (zone or "*", type)
            self.limit_refusals: list[tuple[str, str]] = []  # (action, cloud_limits violation)
            self.nonces: set[str] = set()
            self.internal_errors: list[str] = []  # stand-in bugs, for the tests to assert none
            self.currency = "CNY"  # DescribePrice's: the international site answers in USD
            # DescribeSpotAdvice: (zone, type) -> (InterruptionRate %, InterruptRateDesc,
            # AverageSpotDiscount %); a type without a row is left out of the answer
            self.spot_advice: dict[tuple[str, str], tuple[float, str, int]] = {}
            # DescribeSpotPriceHistory: (zone, type) -> [(epoch, price)] answered instead of
            # the two made-up points around StartTime, when a test sets one
            self.spot_history: dict[tuple[str, str], list[tuple[float, float]]] = {}
            self.secrets = {}
            self.role_keys: dict[str, str] = {}  # key id → the role whose session it is
            self._ips = itertools.count(10)
            # The cloud's clock for its own state (AutoReleaseTime, the bill); None: real time
            self.clock: Callable[[], float] | None = None
            self.bill: Bill | None = None  # set by a test: what ECS would bill (cloud_bill)
            # (zone, type) whose accepted machines ECS fails to create (issue 30): released
            # at once, gone from DescribeInstances, a SystemFailure.Delete event left behind
            self.failed_creations: set[tuple[str, str]] = set()
            self.failed_but_listed: set[tuple[str, str]] = set()  # the same, still Pending
            self.history_events: list[dict[str, Any]] = []  # DescribeInstanceHistoryEvents
            # regions whose public images name no GPU driver (issue 30), or ("no_ubuntu")
            # that have no Ubuntu image
            self.driverless_regions: dict[str, str] = {}

    def sells_spot(self, zone: str, instance_type: str) -> bool:
        """Whether spot is sold for ``instance_type`` in ``zone`` at all (stock aside)."""
        return not {(zone, instance_type), ("*", instance_type)} & self.no_spot

    def sell_out(self, zone: str, instance_type: str) -> None:
        with self._lock:
            self.no_stock.add((zone, instance_type))

    def fail_creation(self, zone: str, instance_type: str, *, listed: bool = False) -> None:
        """ECS accepts RunInstances in ``zone`` but cannot create the machine for lack of
        inventory: it is released at once (never listed again) and an Executed
        ``SystemFailure.Delete`` system event says why ("System events related to instance
        creation failures", ECS documentation). ``listed``: ECS has not released it yet (it
        may take up to 5 minutes): it stays listed Pending until deleted."""
        with self._lock:
            (self.failed_but_listed if listed else self.failed_creations).add(
                (zone, instance_type))

    def reclaim(self, instance_id: str) -> None:
        """The cloud takes a spot machine back: locked Recycling, stopped, then released."""
        with self._lock:
            raw = self.state.instances[instance_id]
            raw["Status"] = "Stopped"
            raw["OperationLocks"] = {"LockReason": [{"LockReason": "Recycling",
                                                     "LockMsg": "spot recycling"}]}
            self._bill_sync()

    def shutdown_inside(self, instance_id: str) -> None:
        """The machine's OS powered itself off (the agent's ``shutdown``): ECS shows it
        Stopped in standard mode (KeepCharging); economical mode comes only from
        StopInstances (console or API), never from inside."""
        with self._lock:
            raw = self.state.instances[instance_id]
            raw.update(Status="Stopped", StoppedMode="KeepCharging", _seen=0)
            self._bill_sync()

    def release_due(self) -> list[str]:
        """Let the cloud's clock act with nobody calling: AutoReleaseTime releases."""
        with self._lock:
            before = len(self.state.released)
            self._release_due()
            self._bill_sync()
            return [iid for iid, _at in self.state.released[before:]]

    def billing_view(self) -> dict[str, Seen]:
        """Every machine in its billing state, at the stand-in's own prices (lock held)."""
        out: dict[str, Seen] = {}
        for iid, raw in self.state.instances.items():
            itype = str(raw["InstanceType"])
            price = TYPES[itype][4] if itype in TYPES else 0.0
            if raw.get("SpotStrategy", "NoSpot") != "NoSpot":
                price = round(price * SPOT_FACTOR, 3)
            out[iid] = Seen(aliyun_state(raw), float(price), float(raw.get("_disk_gb", 0)))
        return out

    def _bill_sync(self) -> None:
        if self.bill is not None:
            self.bill.sync(self.billing_view())

    def add_role(self, name: str, service: str = ECS_PRINCIPAL) -> None:
        """Test control: a RAM role trusted by ``service`` (made before a RunInstances that
        names it, as gpudesk makes its own: ECS refuses a role it does not know)."""
        with self._lock:
            if name not in self.state.roles:
                self._CreateRole("", {"RoleName": name, "AssumeRolePolicyDocument": json.dumps(
                    {"Version": "1", "Statement": [{"Action": "sts:AssumeRole",
                                                    "Effect": "Allow",
                                                    "Principal": {"Service": [service]}}]})})

    def add_vpc(self, region: str, name: str = "", tags: dict[str, str] | None = None,
                cidr: str = "192.168.0.0/16") -> str:
        """A VPC made outside gpudesk (the user's own unless ``tags`` say otherwise)."""
        with self._lock:
            vpc_id = _new_id("vpc-")
            self.state.vpcs[vpc_id] = {
                "VpcId": vpc_id, "VpcName": name, "CidrBlock": cidr, "Description": "",
                "Status": "Available", "RegionId": region, "IsDefault": False,
                "CreationTime": _iso(self.now()), "Tags": dict(tags or {}), "_seen": 0}
            return vpc_id

    def add_vswitch(self, vpc_id: str, zone: str, name: str = "",
                    tags: dict[str, str] | None = None, cidr: str = "192.168.1.0/24") -> str:
        with self._lock:
            vsw = _new_id("vsw-")
            self.state.vswitches[vsw] = {
                "VSwitchId": vsw, "VpcId": vpc_id, "ZoneId": zone, "CidrBlock": cidr,
                "VSwitchName": name, "Description": "", "Status": "Available",
                "RegionId": self.state.vpcs[vpc_id]["RegionId"],
                "CreationTime": _iso(self.now()), "Tags": dict(tags or {})}
            return vsw

    def add_group(self, vpc_id: str, name: str = "default",
                  tags: dict[str, str] | None = None) -> str:
        with self._lock:
            group_id = _new_id("sg-")
            self.state.groups[group_id] = {
                "SecurityGroupId": group_id, "SecurityGroupName": name, "Description": "",
                "VpcId": vpc_id, "RegionId": self.state.vpcs[vpc_id]["RegionId"],
                "SecurityGroupType": "normal", "CreationTime": _iso(self.now()),
                "Tags": dict(tags or {}), "Rules": []}
            return group_id

    def now(self) -> float:
        """The cloud's time for its own state (AutoReleaseTime, timestamps)."""
        base = self.clock() if self.clock is not None else time.time()
        return base + self.clock_offset + self.elapsed

    def advance(self, seconds: float) -> None:
        """Let the cloud live ``seconds`` ahead, as if that time had passed."""
        with self._lock:
            self.elapsed += seconds

    # ------------------------------------------------------------------ request path

    def respond(self, method: str, target: str, headers: dict[str, str],
                body: bytes) -> tuple[int, dict[str, Any]]:
        url = urlsplit(target)
        query = dict(parse_qsl(url.query, keep_blank_values=True))
        action = headers.get("x-acs-action", "")
        region = query.get("RegionId", "")
        with self._lock:
            self.calls[action] += 1
        try:
            self._authenticate(method, url.path, query, headers, body)
            version = headers.get("x-acs-version", "")
            if version not in (VERSION, VPC_VERSION, RAM_VERSION, STS_VERSION):
                raise ApiError("InvalidVersion", "Specified parameter Version is not valid.")
            handler = getattr(self, "_" + action, None)
            if handler is None or (action in VPC_ACTIONS) != (version == VPC_VERSION) or (
                    action in RAM_ACTIONS) != (version == RAM_VERSION) or (
                    action in STS_ACTIONS) != (version == STS_VERSION):
                raise ApiError("InvalidAction.NotFound", f"Specified api {action} is not found.")
            with self._lock:
                self.requests.append((action, region, query))
                self.versions[(action, version)] += 1
                violations = cloud_limits.check("aliyun", action, query)
                if violations:  # refused as ECS refuses it, before anything else
                    self.limit_refusals += [(action, v) for v in violations]
                    raise ApiError(*cloud_limits.split(violations[0]))
                self._release_due()
                self._maybe_fail(action, region, query)
                found = _AUTH.match(headers.get("authorization", ""))
                self._caller = found["id"] if found else ""
                self._role_check(action, region, query)
                if (action not in RAM_ACTIONS | STS_ACTIONS | {"DescribeRegions"}
                        and region not in REGIONS):
                    raise ApiError("InvalidRegionId.NotFound",
                                   "The specified RegionId does not exist.")
                answer = handler(region, query)
                self._bill_sync()  # the one place a request changes machines
        except Exception as exc:  # noqa: BLE001 - a stand-in bug answers as ECS's own would
            if not isinstance(exc, ApiError):
                self.internal_errors.append(f"{action}: {type(exc).__name__}: {exc}")
                exc = ApiError("InternalError", "The request processing has failed due to some "
                               "unknown error.")
            err = exc
            return _STATUS.get(err.code, 400 if err.code != "InternalError" else 500), {
                "RequestId": str(uuid.uuid4()).upper(),
                "HostId": "vpc.aliyuncs.com" if action in VPC_ACTIONS else
                "ram.aliyuncs.com" if action in RAM_ACTIONS else
                "sts.aliyuncs.com" if action in STS_ACTIONS else "ecs.aliyuncs.com",
                "Code": err.code, "Message": err.message,
                "Recommend": f"https://api.aliyun.com/troubleshoot?q={err.code}"}
        answer["RequestId"] = str(uuid.uuid4()).upper()
        return 200, answer

    def _authenticate(self, method: str, path: str, query: dict[str, str],
                      headers: dict[str, str], body: bytes) -> None:
        check_acs3(self.secrets, self.nonces, self._lock, method, path, query, headers, body,
                   now=_real_time() + self.clock_offset)

    def _maybe_fail(self, action: str, region: str, q: dict[str, str]) -> None:
        passes_role = action == "AttachInstanceRamRole" or (
            action == "RunInstances" and bool(q.get("RamRoleName")))
        if action in self.denied or (
                (self.ram_denied or self.pass_role_denied) and passes_role):
            raise ApiError("Forbidden.RAM", "User not authorized to operate on the specified "
                           "resource, or this API doesn't support RAM.")
        if self.ram_denied and action in RAM_ACTIONS:
            raise ApiError("NoPermission", "You are not authorized to do this action. You "
                           "should be authorized by RAM.")
        self._fail_if_asked(action, {"region": region, "zone": q.get("ZoneId", ""),
                                     "instance_type": q.get("InstanceType", "")})

    def _release_due(self) -> None:
        """AutoReleaseTime honoured: ECS deletes the machine at that moment by itself."""
        now = self.now()
        for iid, raw in list(self.state.instances.items()):
            at = _parse_iso(raw.get("AutoReleaseTime") or "")
            if at is not None and at <= now:
                del self.state.instances[iid]
                self.state.released.append((iid, now))

    # ------------------------------------------------------------------ places & prices

    def _DescribeRegions(self, region: str, q: dict[str, str]) -> dict[str, Any]:
        return {"Regions": {"Region": [
            {"RegionId": r, "LocalName": n, "RegionEndpoint": f"ecs.{r}.aliyuncs.com",
             "Status": "available"} for r, (n, _) in REGIONS.items()]}}

    def _DescribeZones(self, region: str, q: dict[str, str]) -> dict[str, Any]:
        return {"Zones": {"Zone": [{"ZoneId": z, "LocalName": z}
                                   for z in REGIONS[region][1]]}}

    def _DescribeAvailableResource(self, region: str, q: dict[str, str]) -> dict[str, Any]:
        zones = []
        wanted = q.get("InstanceType")
        for zone in REGIONS[region][1]:
            if q.get("ZoneId") and q["ZoneId"] != zone:
                continue
            if zone in self.not_on_sale:
                zones.append({"ZoneId": zone, "RegionId": region, "Status": "SoldOut",
                              "StatusCategory": "WithoutStock"})
                continue
            spot = q.get("SpotStrategy", "NoSpot") != "NoSpot"  # a type not sold so: left out
            items = [{"Value": t, "Status": "SoldOut" if (zone, t) in self.no_stock
                      else "Available", "StatusCategory": "WithoutStock"
                      if (zone, t) in self.no_stock else "WithStock"}
                     for t in TYPES if (not wanted or t == wanted)
                     and (not spot or self.sells_spot(zone, t))]
            zones.append({"ZoneId": zone, "RegionId": region, "Status": "Available",
                          "StatusCategory": "WithStock", "AvailableResources": {
                              "AvailableResource": [{"Type": "InstanceType",
                                                     "SupportedResources": {
                                                         "SupportedResource": items}}]}})
        return {"AvailableZones": {"AvailableZone": zones}}

    def _DescribePrice(self, region: str, q: dict[str, str]) -> dict[str, Any]:
        itype = q.get("InstanceType", "")
        if itype not in TYPES:
            raise ApiError("InvalidInstanceType.ValueNotSupported",
                           "The specified InstanceType does not exist or beyond the permitted "
                           "range.")
        price = TYPES[itype][4] / (7.2 if self.currency == "USD" else 1.0)
        if q.get("SpotStrategy", "NoSpot") != "NoSpot":  # the spot price, where spot is sold
            zones = [q["ZoneId"]] if q.get("ZoneId") else REGIONS[region][1]
            if not any(self.sells_spot(z, itype) for z in zones):
                raise ApiError("InvalidResourceType.NotSupported", "This resource type is not "
                               "supported; please try other resource types.")
            price = round(price * SPOT_FACTOR, 3)
        return {"PriceInfo": {"Price": {"OriginalPrice": price, "DiscountPrice": 0.0,
                                        "TradePrice": price, "Currency": self.currency}}}

    def _DescribeSpotPriceHistory(self, region: str, q: dict[str, str]) -> dict[str, Any]:
        itype = q.get("InstanceType", "")
        if itype not in TYPES:
            raise ApiError("InvalidInstanceType.ValueNotSupported", "InstanceType unknown.")
        # "The time span between the start time and the specified end time cannot exceed 30
        # days"; EndTime empty: now; StartTime empty: 3 hours before the end (SDK model).
        # The code for a longer span is not documented: ECS's generic InvalidParameter.
        end = _parse_iso(q.get("EndTime", "")) or self.now()
        start = _parse_iso(q.get("StartTime", "")) or end - 3 * 3600
        if end - start > 30 * 86400:
            raise ApiError("InvalidParameter", 'The specified parameter "StartTime" is not '
                           "valid.")
        price = TYPES[itype][4]
        points = []
        for zone in REGIONS[region][1]:
            if (q.get("ZoneId") and q["ZoneId"] != zone) or not self.sells_spot(zone, itype):
                continue
            if (zone, itype) in self.spot_history:  # with the price in force at StartTime
                kept = sorted(self.spot_history[(zone, itype)])
                before = [i for i, (at, _p) in enumerate(kept) if at < start]
                points += [{"ZoneId": zone, "InstanceType": itype, "IoOptimized": "optimized",
                            "NetworkType": "vpc", "Timestamp": _iso(at), "SpotPrice": p,
                            "OriginPrice": price}
                           for at, p in kept[before[-1] if before else 0:] if at <= end]
                continue
            for i, at in enumerate((start - 1800, start + 600)):
                points.append({"ZoneId": zone, "InstanceType": itype, "IoOptimized": "optimized",
                               "NetworkType": "vpc", "Timestamp": _iso(at),
                               "SpotPrice": round(price * (SPOT_FACTOR + 0.01 * i), 3),
                               "OriginPrice": price})
        return {"Currency": "CNY", "NextOffset": 0, "SpotPrices": {"SpotPriceType": points}}

    def _DescribeSpotAdvice(self, region: str, q: dict[str, str]) -> dict[str, Any]:
        """The last 30 days' release rate and discount per zone and type (the API
        reference's AvailableSpotZones shape); "up to 10 instance types" per call."""
        wanted = _listed(q, "InstanceTypes")
        if len(wanted) > 10:
            raise ApiError("InvalidParameter", 'The specified parameter "InstanceTypes" is '
                           "not valid.")
        zones = []
        for zone in REGIONS[region][1]:
            if q.get("ZoneId") and q["ZoneId"] != zone:
                continue
            rows = [{"InstanceType": t, "InterruptionRate": rate, "InterruptRateDesc": desc,
                     "AverageSpotDiscount": discount}
                    for (z, t), (rate, desc, discount) in sorted(self.spot_advice.items())
                    if z == zone and (not wanted or t in wanted) and self.sells_spot(z, t)]
            if rows:
                zones.append({"ZoneId": zone, "AvailableSpotResources": {
                    "AvailableSpotResource": rows}})
        return {"RegionId": region, "AvailableSpotZones": {"AvailableSpotZone": zones}}

    def _DescribeImages(self, region: str, q: dict[str, str]) -> dict[str, Any]:
        if q.get("InstanceType") and q["InstanceType"] not in TYPES:
            raise ApiError("InvalidInstanceType.ValueNotSupported", "InstanceType unknown.")
        images = [dict(i, ImageOwnerAlias="system", OSType="linux", Architecture="x86_64",
                       Status="Available", IsSupportCloudinit=True) for i in IMAGES]
        bare = self.driverless_regions.get(region)
        if bare == "no_ubuntu":  # no Ubuntu image there at all
            images = [i for i in images if i["Platform"] != "Ubuntu"]
        elif bare is not None:  # no image there names a GPU driver
            images = [i for i in images if "GPU" not in i["ImageName"]]
        return self._paged(images, q, "Images", "Image")

    @staticmethod
    def _paged(items: list[dict[str, Any]], q: dict[str, str], outer: str, inner: str,
               token_paged: bool = False) -> dict[str, Any]:
        """One page: MaxResults/NextToken where the action takes them (no TotalCount then,
        NextToken "" on the last page), else PageNumber/PageSize (sizes: cloud_limits)."""
        if token_paged and (q.get("MaxResults") or q.get("NextToken")):
            token = q.get("NextToken") or "standin-0"
            if not re.fullmatch(r"standin-\d+", token) or int(token[8:]) > len(items):
                raise ApiError("InvalidParameter", 'The specified parameter "NextToken" is '
                               "not valid.")
            start, size = int(token[8:]), min(int(q.get("MaxResults") or 10), 100)
            more = start + size < len(items)
            return {"NextToken": f"standin-{start + size}" if more else "",
                    outer: {inner: items[start:start + size]}}
        number = int(q.get("PageNumber") or 1)
        size = int(q.get("PageSize") or 10)
        return {"TotalCount": len(items), "PageNumber": number, "PageSize": size,
                outer: {inner: items[(number - 1) * size:number * size]}}

    # ------------------------------------------------------------------ network

    # The VPC API (2016-04-28): tags on create, as a filter, and in the answer.

    @staticmethod
    def _vpc_paged(items: list[dict[str, Any]], q: dict[str, str], outer: str,
                   inner: str) -> dict[str, Any]:
        view = [{**{k: v for k, v in item.items() if not k.startswith("_") and k != "Tags"},
                 "Tags": {"Tag": [{"Key": k, "Value": v} for k, v in item["Tags"].items()]}}
                for item in items]
        return AliyunStandin._paged(view, q, outer, inner)

    def _CreateVpc(self, region: str, q: dict[str, str]) -> dict[str, Any]:
        token = ("CreateVpc", region, q.get("ClientToken", ""))
        if q.get("ClientToken") and token in self.state.tokens:
            return dict(self.state.tokens[token])
        vpc_id = _new_id("vpc-")
        self.state.vpcs[vpc_id] = {"VpcId": vpc_id, "VpcName": q.get("VpcName", ""),
                                   "CidrBlock": q.get("CidrBlock", "172.16.0.0/12"),
                                   "Description": q.get("Description", ""), "Status": "Pending",
                                   "RegionId": region, "IsDefault": False,
                                   "CreationTime": _iso(self.now()),
                                   "Tags": {t["Key"]: t.get("Value", "")
                                            for t in _objects(q, "Tag")}, "_seen": 0}
        answer = {"VpcId": vpc_id, "VRouterId": _new_id("vrt-"), "RouteTableId": _new_id("vtb-"),
                  "ResourceGroupId": "rg-standin"}
        if q.get("ClientToken"):
            self.state.tokens[token] = answer
        return dict(answer)

    def _DescribeVpcs(self, region: str, q: dict[str, str]) -> dict[str, Any]:
        wanted = set(filter(None, q.get("VpcId", "").split(",")))
        vpcs = [v for v in self.state.vpcs.values() if v["RegionId"] == region
                and (not wanted or v["VpcId"] in wanted)
                and (not q.get("VpcName") or v["VpcName"] == q["VpcName"])
                and _tag_match(v["Tags"], q)]
        for vpc in vpcs:  # Pending → Available once seen
            vpc["_seen"] += 1
            if vpc["_seen"] > 1:
                vpc["Status"] = "Available"
        return self._vpc_paged(vpcs, q, "Vpcs", "Vpc")

    def _CreateVSwitch(self, region: str, q: dict[str, str]) -> dict[str, Any]:
        vpc = self.state.vpcs.get(q.get("VpcId", ""))
        if vpc is None:
            raise ApiError("InvalidVpcId.NotFound", "The specified VpcId does not exist.")
        if vpc["Status"] != "Available":
            raise ApiError("IncorrectVpcStatus", "Current VPC status does not support this "
                           "operation.")
        if q.get("ZoneId") not in REGIONS[region][1]:
            raise ApiError("InvalidZoneId.NotFound", "The specified zone does not exist.")
        if any(s["VpcId"] == vpc["VpcId"] and s["CidrBlock"] == q.get("CidrBlock")
               for s in self.state.vswitches.values()):
            raise ApiError("InvalidCidrBlock.Overlapped", "The CIDR block overlaps.")
        vsw = _new_id("vsw-")
        self.state.vswitches[vsw] = {"VSwitchId": vsw, "VpcId": vpc["VpcId"],
                                     "ZoneId": q["ZoneId"], "CidrBlock": q.get("CidrBlock", ""),
                                     "VSwitchName": q.get("VSwitchName", ""),
                                     "Description": q.get("Description", ""),
                                     "Status": "Available", "RegionId": region,
                                     "CreationTime": _iso(self.now()),
                                     "Tags": {t["Key"]: t.get("Value", "")
                                              for t in _objects(q, "Tag")}}
        return {"VSwitchId": vsw}

    def _DescribeVSwitches(self, region: str, q: dict[str, str]) -> dict[str, Any]:
        items = [s for s in self.state.vswitches.values() if s["RegionId"] == region
                 and all(not q.get(k) or s[k] == q[k]
                         for k in ("VpcId", "ZoneId", "VSwitchId", "VSwitchName"))
                 and _tag_match(s["Tags"], q)]
        return self._vpc_paged(items, q, "VSwitches", "VSwitch")

    # ------------------------------------------------------------------ key pairs

    def _ImportKeyPair(self, region: str, q: dict[str, str]) -> dict[str, Any]:
        name = q.get("KeyPairName", "")
        body = q.get("PublicKeyBody", "")
        if not re.match(r"^[A-Za-z][A-Za-z0-9:_\-.]{1,127}$", name):
            raise ApiError("InvalidKeyPairName.Malformed", "Specified key pair name is not "
                           "valid.")
        if not body.startswith(("ssh-rsa ", "ssh-ed25519 ", "ecdsa-sha2-")):
            raise ApiError("InvalidPublicKeyBody.Malformed", "The public key is malformed.")
        if (region, name) in self.state.key_pairs:
            raise ApiError("KeyPair.AlreadyExist", "The key pair already exist.")
        finger = hashlib.md5(body.split()[1].encode()).hexdigest()  # noqa: S324 - as ECS shows
        tags = {t["Key"]: t.get("Value", "") for t in _objects(q, "Tag")}
        self.state.key_pairs[(region, name)] = {
            "KeyPairName": name, "KeyPairFingerPrint": finger, "PublicKey": body.strip(),
            "CreationTime": _iso(self.now()), "Tags": tags}
        return {"KeyPairName": name, "KeyPairFingerPrint": finger}

    def _DescribeKeyPairs(self, region: str, q: dict[str, str]) -> dict[str, Any]:
        items = []
        for (r, name), key in self.state.key_pairs.items():
            if r != region or (q.get("KeyPairName") and q["KeyPairName"] != name):
                continue
            if not _tag_match(key["Tags"], q):
                continue
            view = {k: v for k, v in key.items() if k != "Tags"}
            view["Tags"] = _tags_view(key["Tags"])
            if not _true(q.get("IncludePublicKey")):
                view.pop("PublicKey")
            items.append(view)
        return self._paged(items, q, "KeyPairs", "KeyPair")

    def _DeleteKeyPairs(self, region: str, q: dict[str, str]) -> dict[str, Any]:
        for name in json.loads(q.get("KeyPairNames") or "[]"):
            self.state.key_pairs.pop((region, name), None)
        return {}

    # ------------------------------------------------------------------ security groups

    def _CreateSecurityGroup(self, region: str, q: dict[str, str]) -> dict[str, Any]:
        token = ("CreateSecurityGroup", region, q.get("ClientToken", ""))
        if q.get("ClientToken") and token in self.state.tokens:
            return {"SecurityGroupId": self.state.tokens[token]}
        if q.get("VpcId") not in self.state.vpcs:
            raise ApiError("InvalidVpcId.NotFound", "The specified VpcId does not exist.")
        group_id = _new_id("sg-")
        self.state.groups[group_id] = {
            "SecurityGroupId": group_id, "SecurityGroupName": q.get("SecurityGroupName", ""),
            "Description": q.get("Description", ""), "VpcId": q["VpcId"], "RegionId": region,
            "SecurityGroupType": "normal", "CreationTime": _iso(self.now()),
            "Tags": {t["Key"]: t.get("Value", "") for t in _objects(q, "Tag")}, "Rules": []}
        if q.get("ClientToken"):
            self.state.tokens[token] = group_id
        return {"SecurityGroupId": group_id}

    def _group(self, q: dict[str, str]) -> dict[str, Any]:
        group = self.state.groups.get(q.get("SecurityGroupId", ""))
        if group is None:
            raise ApiError("InvalidSecurityGroupId.NotFound",
                           "The specified SecurityGroupId does not exist.")
        return group

    def _DescribeSecurityGroups(self, region: str, q: dict[str, str]) -> dict[str, Any]:
        items = []
        for group in self.state.groups.values():
            if group["RegionId"] != region or not _tag_match(group["Tags"], q):
                continue
            if any(q.get(k) and q[k] != group[k] for k in ("VpcId", "SecurityGroupName")):
                continue
            items.append({**{k: v for k, v in group.items() if k not in ("Tags", "Rules")},
                          "Tags": _tags_view(group["Tags"])})
        return self._paged(items, q, "SecurityGroups", "SecurityGroup", token_paged=True)

    def _DescribeSecurityGroupAttribute(self, region: str, q: dict[str, str]) -> dict[str, Any]:
        group = self._group(q)
        rules = [r for r in group["Rules"] if q.get("Direction", "all") in ("all",
                                                                          r["Direction"])]
        return {"SecurityGroupId": group["SecurityGroupId"], "VpcId": group["VpcId"],
                "InnerAccessPolicy": "Accept", "Permissions": {"Permission": rules}}

    def _AuthorizeSecurityGroup(self, region: str, q: dict[str, str]) -> dict[str, Any]:
        group = self._group(q)
        for perm in _objects(q, "Permissions"):
            cidr = perm.get("SourceCidrIp") or perm.get("Ipv6SourceCidrIp") or ""
            if cidr in ("0.0.0.0/0", "::/0"):  # the test would rather see it than allow it
                raise ApiError("InvalidParameter", "stand-in refuses a world-open rule")
            group["Rules"].append({
                "SecurityGroupRuleId": _new_id("sgr-"), "Direction": "ingress",
                "IpProtocol": perm.get("IpProtocol", "").upper(),
                "PortRange": perm.get("PortRange", ""), "SourceCidrIp":
                perm.get("SourceCidrIp", ""), "Ipv6SourceCidrIp": perm.get("Ipv6SourceCidrIp",
                                                                           ""),
                "Policy": perm.get("Policy", "Accept"), "Priority": perm.get("Priority", "1"),
                "Description": perm.get("Description", ""), "CreateTime": _iso(self.now())})
        return {}

    def _RevokeSecurityGroup(self, region: str, q: dict[str, str]) -> dict[str, Any]:
        group = self._group(q)
        gone = set(_listed(q, "SecurityGroupRuleId"))
        group["Rules"] = [r for r in group["Rules"] if r["SecurityGroupRuleId"] not in gone]
        return {}

    def add_rule(self, group_id: str, rule: dict[str, str]) -> None:
        """Put a rule straight into a group (as another tool or a person might)."""
        with self._lock:
            self.state.groups[group_id]["Rules"].append(
                {"SecurityGroupRuleId": _new_id("sgr-"), "Direction": "ingress",
                 "Policy": "Accept", **rule})

    def _DeleteSecurityGroup(self, region: str, q: dict[str, str]) -> dict[str, Any]:
        group = self._group(q)
        if any(group["SecurityGroupId"] in i["SecurityGroupIds"]["SecurityGroupId"]
               for i in self.state.instances.values()):
            raise ApiError("DependencyViolation", "There is still instance(s) in the specified "
                           "security group.")
        if self.lingering[group["SecurityGroupId"]] < self.linger_deletes:
            self.lingering[group["SecurityGroupId"]] += 1
            raise ApiError("DependencyViolation", "There is still instance(s) in the specified "
                           "security group.")
        del self.state.groups[group["SecurityGroupId"]]
        return {}

    def _TagResources(self, region: str, q: dict[str, str]) -> dict[str, Any]:
        tags = {t["Key"]: t.get("Value", "") for t in _objects(q, "Tag")}
        for resource in _listed(q, "ResourceId"):
            kind = q.get("ResourceType", "")
            if kind == "securitygroup":
                self._group({"SecurityGroupId": resource})["Tags"].update(tags)
            elif kind == "keypair":
                key = self.state.key_pairs.get((region, resource))
                if key is None:
                    raise ApiError("InvalidKeyPairName.NotFound", "The specified KeyPairName "
                                   "does not exist.")
                key["Tags"].update(tags)
            elif kind == "instance":
                raw = self._instance(resource)
                have = {t["TagKey"]: t["TagValue"] for t in raw["Tags"]["Tag"]}
                raw["Tags"] = _tags_view({**have, **tags})
            else:
                raise ApiError("InvalidResourceType.NotSupported", "The resource type is not "
                               "supported.")
        return {}

    # ------------------------------------------------------------------ instances

    def _RunInstances(self, region: str, q: dict[str, str]) -> dict[str, Any]:
        itype, zone = q.get("InstanceType", ""), q.get("ZoneId", "")
        if itype not in TYPES:
            raise ApiError("InvalidInstanceType.ValueNotSupported",
                           "The specified InstanceType does not exist or beyond the permitted "
                           "range.")
        dry_run = _true(q.get("DryRun"))
        token = ("RunInstances", region, q.get("ClientToken", ""))
        if not dry_run and q.get("ClientToken") and token in self.state.tokens:
            return {"InstanceIdSets": {"InstanceIdSet": list(self.state.tokens[token])}}
        if zone not in REGIONS[region][1]:
            raise ApiError("InvalidZoneId.NotFound", "The specified zone does not exist.")
        if zone in self.not_on_sale:
            raise ApiError("Zone.NotOnSale", "The specified zone is not available for "
                           "purchase.")
        if (zone, itype) in self.no_stock:
            raise ApiError("OperationDenied.NoStock", "The requested resource is sold out in "
                           "the specified zone; try other types of resources or other regions "
                           "and zones.")
        if q.get("SpotStrategy", "NoSpot") != "NoSpot" and not self.sells_spot(zone, itype):
            raise ApiError("InvalidResourceType.NotSupported", "This resource type is not "
                           "supported; please try other resource types.")
        if q.get("Password"):
            raise ApiError("InvalidParameter", "stand-in: gpudesk never sets a password")
        if q.get("ImageId") not in {i["ImageId"] for i in IMAGES}:
            raise ApiError("InvalidImageId.NotFound", "The specified ImageId does not exist.")
        vsw = self.state.vswitches.get(q.get("VSwitchId", ""))
        if vsw is None or vsw["ZoneId"] != zone or vsw["RegionId"] != region:
            raise ApiError("InvalidVSwitchId.NotExist", "The VSwitchId provided does not exist "
                           "in our records.")
        group = self._group(q)
        if group["VpcId"] != vsw["VpcId"]:
            raise ApiError("InvalidSecurityGroup.NotInSameVpc", "group and vSwitch differ")
        key = q.get("KeyPairName", "")
        if key and (region, key) not in self.state.key_pairs:
            raise ApiError("InvalidKeyPairName.NotFound", "The specified KeyPairName does not "
                           "exist.")
        if dry_run:
            raise ApiError("DryRunOperation", "Request validation has been passed with DryRun "
                           "flag set.")
        strategy = q.get("SpotStrategy", "NoSpot")
        spot_price = round(TYPES[itype][4] * SPOT_FACTOR, 3)
        if strategy == "SpotWithPriceLimit" and float(q.get("SpotPriceLimit") or 0) < spot_price:
            raise ApiError("InvalidSpotPriceLimit.LowerThanPublicPrice",
                           "The specified parameter spotPriceLimit can't be lower than current "
                           "public price.")
        role_name = q.get("RamRoleName", "")
        if role_name:  # RunInstances RamRoleName: checked as AttachInstanceRamRole checks it
            self._ecs_role(role_name)
        release = q.get("AutoReleaseTime", "")
        if release:
            at = _parse_iso(release)
            if at is None or at < self.now() + 30 * 60 - 5:
                raise ApiError("InvalidAutoReleaseTime.Malformed",
                               "The specified parameter AutoReleaseTime is not valid.")
        iid = _new_id("i-")
        now = self.now()
        self.state.instances[iid] = {
            "InstanceId": iid, "RegionId": region, "ZoneId": zone, "InstanceType": itype,
            "Status": "Pending", "InstanceChargeType": q.get("InstanceChargeType", "PostPaid"),
            "SpotStrategy": strategy, "SpotPriceLimit": float(q.get("SpotPriceLimit") or 0),
            "CreationTime": datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%dT%H:%MZ"),
            "InstanceName": q.get("InstanceName", ""), "KeyPairName": key,
            "ImageId": q.get("ImageId", ""), "AutoReleaseTime": release,
            "StoppedMode": "Not-applicable", "GPUAmount": TYPES[itype][3],
            "GPUSpec": f"NVIDIA {TYPES[itype][2]}", "Cpu": TYPES[itype][0],
            "Memory": TYPES[itype][1] * 1024,
            "SecurityGroupIds": {"SecurityGroupId": [group["SecurityGroupId"]]},
            "VpcAttributes": {"VpcId": vsw["VpcId"], "VSwitchId": vsw["VSwitchId"]},
            "PublicIpAddress": {"IpAddress": []}, "EipAddress": {"IpAddress": ""},
            "OperationLocks": {"LockReason": []},
            "Tags": _tags_view({t["Key"]: t.get("Value", "") for t in _objects(q, "Tag")}),
            "_seen": 0, "_disk_gb": int(q.get("SystemDisk.Size") or 40)}
        if role_name:
            self.state.instances[iid]["_ram_role"] = role_name
        if q.get("ClientToken"):
            self.state.tokens[token] = [iid]
        if (zone, itype) in self.failed_but_listed:  # accepted, failed, not released yet
            self.state.instances[iid]["_stuck"] = True
        if (zone, itype) in self.failed_creations:  # accepted, then released at once
            del self.state.instances[iid]
            self.state.released.append((iid, now))
        if (zone, itype) in self.failed_creations | self.failed_but_listed:
            self.history_events.append({
                "EventId": _new_id("e-"), "InstanceId": iid, "ResourceType": "instance",
                "EventType": {"Name": "SystemFailure.Delete"},
                "EventCycleStatus": {"Name": "Executed"},
                "EventPublishTime": _iso(now), "NotBefore": _iso(now),
                "EventFinishTime": _iso(now), "ReasonCode": "NoStock",
                "Reason": "The instance failed to be created because the resources in the "
                          "zone are insufficient."})
        return {"InstanceIdSets": {"InstanceIdSet": [iid]}, "TradePrice": TYPES[itype][4]}

    def _advance(self, raw: dict[str, Any]) -> None:
        """A machine moves on once it has been seen: Pending → Running and the like."""
        raw["_seen"] += 1
        if raw["_seen"] < 2 or raw.get("_stuck"):
            return
        nxt = {"Pending": "Running", "Starting": "Running", "Stopping": "Stopped"}
        if raw["Status"] in nxt:
            raw["Status"] = nxt[raw["Status"]]
            raw["_seen"] = 0
            if raw["Status"] == "Running":  # ECS's StartTime: its last start, to the minute
                raw["StartTime"] = datetime.fromtimestamp(self.now(), UTC).strftime(
                    "%Y-%m-%dT%H:%MZ")
        if raw["Status"] == "Running" and not raw["PublicIpAddress"]["IpAddress"]:
            raw["PublicIpAddress"]["IpAddress"] = [f"198.51.100.{next(self._ips)}"]

    def _DescribeInstances(self, region: str, q: dict[str, str]) -> dict[str, Any]:
        ids = json.loads(q["InstanceIds"]) if q.get("InstanceIds") else None
        items = []
        for raw in self.state.instances.values():
            if raw["RegionId"] != region or (ids is not None and raw["InstanceId"] not in ids):
                continue
            tags = {t["TagKey"]: t["TagValue"] for t in raw["Tags"]["Tag"]}
            if not _tag_match(tags, q):
                continue
            self._advance(raw)
            items.append({k: v for k, v in raw.items() if not k.startswith("_")})
        return self._paged(items, q, "Instances", "Instance", token_paged=True)

    def _DescribeInstanceHistoryEvents(self, region: str, q: dict[str, str]
                                       ) -> dict[str, Any]:
        """System events; by default only Avoided, Executed, Canceled and Failed ones."""
        kinds = _listed(q, "InstanceEventType") or ([q["EventType"]] if q.get("EventType")
                                                     else [])
        cycles = _listed(q, "InstanceEventCycleStatus") or (
            [q["EventCycleStatus"]] if q.get("EventCycleStatus")
            else ["Avoided", "Executed", "Canceled", "Failed"])
        items = [e for e in self.history_events
                 if (not q.get("InstanceId") or e["InstanceId"] == q["InstanceId"])
                 and (not kinds or e["EventType"]["Name"] in kinds)
                 and e["EventCycleStatus"]["Name"] in cycles]
        return self._paged(items, q, "InstanceSystemEventSet", "InstanceSystemEventType")

    def _instance(self, iid: str) -> dict[str, Any]:
        raw = self.state.instances.get(iid)
        if raw is None:
            raise ApiError("InvalidInstanceId.NotFound", "The specified InstanceId does not "
                           "exist.")
        return raw

    def _StopInstances(self, region: str, q: dict[str, str]) -> dict[str, Any]:
        for iid in _listed(q, "InstanceId"):
            raw = self._instance(iid)
            if raw["Status"] != "Running":
                raise ApiError("IncorrectInstanceStatus", "The current status of the resource "
                               "does not support this operation.")
            mode = q.get("StoppedMode", "KeepCharging")
            if raw["InstanceType"] in self.keep_charging_types:
                mode = "KeepCharging"
            raw.update(Status="Stopping", StoppedMode=mode, _seen=0)
            if mode == "StopCharging":
                raw["PublicIpAddress"]["IpAddress"] = []
        return {}

    def _StartInstances(self, region: str, q: dict[str, str]) -> dict[str, Any]:
        for iid in _listed(q, "InstanceId"):
            raw = self._instance(iid)
            if raw["Status"] != "Stopped" or raw["OperationLocks"]["LockReason"]:
                raise ApiError("IncorrectInstanceStatus", "The current status of the resource "
                               "does not support this operation.")
            if (raw["ZoneId"], raw["InstanceType"]) in self.no_stock:
                raise ApiError("OperationDenied.NoStock", "The requested resource is sold out.")
            raw.update(Status="Starting", StoppedMode="Not-applicable", _seen=0)
        return {}

    def _DeleteInstances(self, region: str, q: dict[str, str]) -> dict[str, Any]:
        for iid in _listed(q, "InstanceId"):
            raw = self._instance(iid)
            if raw["Status"] != "Stopped" and not _true(q.get("Force")):
                raise ApiError("IncorrectInstanceStatus", "The current status of the resource "
                               "does not support this operation.")
            del self.state.instances[iid]
        return {}

    def _ModifyInstanceAutoReleaseTime(self, region: str, q: dict[str, str]) -> dict[str, Any]:
        raw = self._instance(q.get("InstanceId", ""))
        release = q.get("AutoReleaseTime", "")
        if release:
            at = _parse_iso(release)
            if at is None or at < self.now() + 30 * 60 - 5:
                raise ApiError("InvalidAutoReleaseTime.Malformed",
                               "The specified parameter AutoReleaseTime is not valid.")
            # "seconds other than 00 are taken as the start of that minute" (ECS API
            # reference): ECS keeps whole minutes
            release = release[:17] + "00Z" if len(release) == 20 else release
        raw["AutoReleaseTime"] = release
        return {}


    # ------------------------------------------------------------------ RAM and the role

    def role_session(self, role: str) -> dict[str, str]:
        """Test control: ``role``'s temporary keys as ECS's metadata serves them to a machine
        the role is attached to. A call signed with them may do only what the role's attached
        policies allow (``role_policy.ram_allows``); the rest is refused as RAM refuses it."""
        key, secret, token = role_policy.session_keys(role, "STS.")
        with self._lock:
            self.secrets[key] = secret
            self.role_keys[key] = role
        return {"AccessKeyId": key, "AccessKeySecret": secret, "SecurityToken": token,
                "Expiration": "2030-01-01T00:00:00Z", "Code": "Success"}

    def _role_check(self, action: str, region: str, q: dict[str, str]) -> None:
        """A call signed with a role's keys: every instance it names must be one the role's
        policies allow this action on (its tags as RAM reads them); a deleted role, none."""
        role = self.role_keys.get(self._caller)
        if role is None:
            return
        docs = [json.loads(self.state.policies[name]["_document"])
                for r, name in self.state.attached
                if r == role and name in self.state.policies and role in self.state.roles]
        for iid in _listed(q, "InstanceId") or [q.get("InstanceId", "")]:
            raw = self.state.instances.get(iid) or {}
            tags = {str(t.get("TagKey")): str(t.get("TagValue", ""))  # as DescribeInstances
                    for t in (raw.get("Tags") or {}).get("Tag") or []}
            resource = f"acs:ecs:{region}:{ACCOUNT_ID}:instance/{iid or '*'}"
            if not role_policy.ram_allows(docs, action, resource, tags):
                raise ApiError("Forbidden.RAM", "User not authorized to operate on the "
                               "specified resource, or this API doesn't support RAM.")

    def role_of(self, instance_id: str) -> str:
        """The RAM role ECS has attached to ``instance_id`` ("" for none)."""
        with self._lock:
            return str(self.state.instances[instance_id].get("_ram_role") or "")

    def _role_view(self, role: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in role.items() if not k.startswith("_")}

    def _GetRole(self, region: str, q: dict[str, str]) -> dict[str, Any]:
        role = self.state.roles.get(q.get("RoleName", ""))
        if role is None:
            raise ApiError("EntityNotExist.Role", "The role does not exist.")
        return {"Role": self._role_view(role)}

    def _CreateRole(self, region: str, q: dict[str, str]) -> dict[str, Any]:
        name = q.get("RoleName", "")
        if name in self.state.roles:
            raise ApiError("EntityAlreadyExists.Role", "The role already exists.")
        def listed(st: dict[str, Any], kind: str) -> list[str]:
            given = st["Principal"].get(kind) or []
            return [given] if isinstance(given, str) else list(given)

        try:
            doc = json.loads(q.get("AssumeRolePolicyDocument", ""))
            trusting = [st for st in doc["Statement"] if st["Action"] == "sts:AssumeRole"]
            services = [s for st in trusting for s in listed(st, "Service")]
            accounts = [a for st in trusting for a in listed(st, "RAM")]
        except (ValueError, KeyError, TypeError, AttributeError):
            raise ApiError("MalformedPolicyDocument", "The policy document is malformed."
                           ) from None
        if doc.get("Version") != "1" or not (services or accounts):
            raise ApiError("MalformedPolicyDocument", "The policy document is malformed.")
        longest = int(q.get("MaxSessionDuration") or 3600)
        if not ROLE_MAX_SESSION[0] <= longest <= ROLE_MAX_SESSION[1]:
            raise ApiError("InvalidParameter.MaxSessionDuration",
                           "The parameter MaxSessionDuration is invalid.")
        now = _iso(self.now())
        self.state.roles[name] = {
            "RoleId": str(300000000000000000 + len(self.state.roles) + 1), "RoleName": name,
            "Arn": f"acs:ram::{ACCOUNT_ID}:role/{name.lower()}",
            "Description": q.get("Description", ""), "AssumeRolePolicyDocument": json.dumps(doc),
            "CreateDate": now, "UpdateDate": now,
            "MaxSessionDuration": int(q.get("MaxSessionDuration") or 3600),
            "_tags": {t["Key"]: t.get("Value", "") for t in _objects(q, "Tag")},
            "_services": services, "_accounts": accounts}
        return {"Role": self._role_view(self.state.roles[name])}

    def _GetPolicy(self, region: str, q: dict[str, str]) -> dict[str, Any]:
        policy = self.state.policies.get(q.get("PolicyName", ""))
        if policy is None or q.get("PolicyType") != "Custom":
            raise ApiError("EntityNotExist.Policy", "The policy does not exist.")
        (default,) = [v for v in self._versions(policy) if v["IsDefaultVersion"]]
        return {"Policy": self._role_view(policy), "DefaultPolicyVersion": dict(default)}

    def _versions(self, policy: dict[str, Any]) -> list[dict[str, Any]]:
        """The policy's versions (v1 made with it); ``_document`` is the default's."""
        if "_versions" not in policy:
            policy["_versions"] = [{"VersionId": "v1", "IsDefaultVersion": True,
                                    "CreateDate": policy["CreateDate"],
                                    "PolicyDocument": policy["_document"]}]
            policy["_next_version"] = 2
        versions: list[dict[str, Any]] = policy["_versions"]
        return versions

    def _custom(self, q: dict[str, str]) -> dict[str, Any]:
        policy = self.state.policies.get(q.get("PolicyName", ""))
        if policy is None or q.get("PolicyType", "Custom") != "Custom":
            raise ApiError("EntityNotExist.Policy", "The policy does not exist.")
        return policy

    def _CreatePolicyVersion(self, region: str, q: dict[str, str]) -> dict[str, Any]:
        policy = self._custom(q)
        text = q.get("PolicyDocument", "")
        if not 1 <= len(text.encode()) <= RAM_POLICY_MAX:
            raise ApiError("InvalidParameter", 'The specified parameter "PolicyDocument" is '
                           "not valid.")
        try:
            doc = json.loads(text)
            statements = doc["Statement"]
        except (ValueError, KeyError, TypeError):
            raise ApiError("MalformedPolicyDocument", "The policy document is malformed."
                           ) from None
        if doc.get("Version") != "1" or not statements or any(
                st.get("Effect") not in ("Allow", "Deny") for st in statements):
            raise ApiError("MalformedPolicyDocument", "The policy document is malformed.")
        versions = self._versions(policy)
        if len(versions) >= RAM_POLICY_VERSIONS:
            if q.get("RotateStrategy", "None") != "DeleteOldestNonDefaultVersionWhenLimitExceeded":
                raise ApiError("LimitExceeded.Policy.Version",
                               "Exceeded the maximum number of versions of the policy.")
            oldest = next(v for v in versions if not v["IsDefaultVersion"])
            versions.remove(oldest)
        default = q.get("SetAsDefault", "false").lower() == "true"
        version = {"VersionId": f"v{policy['_next_version']}", "IsDefaultVersion": default,
                   "CreateDate": _iso(self.now()), "PolicyDocument": json.dumps(doc)}
        policy["_next_version"] += 1
        if default:
            for v in versions:
                v["IsDefaultVersion"] = False
            policy.update(DefaultVersion=version["VersionId"], _document=json.dumps(doc),
                          UpdateDate=version["CreateDate"])
        versions.append(version)
        return {"PolicyVersion": dict(version)}

    def _ListPolicyVersions(self, region: str, q: dict[str, str]) -> dict[str, Any]:
        policy = self._custom(q)
        return {"PolicyVersions": {"PolicyVersion": [dict(v) for v in self._versions(policy)]}}

    def _DeletePolicyVersion(self, region: str, q: dict[str, str]) -> dict[str, Any]:
        versions = self._versions(self._custom(q))
        found = next((v for v in versions if v["VersionId"] == q.get("VersionId")), None)
        if found is None:
            raise ApiError("EntityNotExist.PolicyVersion", "The policy version does not exist.")
        if found["IsDefaultVersion"]:
            raise ApiError("DeleteConflict.PolicyVersion.Default",
                           "The default version of the policy cannot be deleted.")
        versions.remove(found)
        return {}

    def _DetachPolicyFromRole(self, region: str, q: dict[str, str]) -> dict[str, Any]:
        role, name = q.get("RoleName", ""), q.get("PolicyName", "")
        if role not in self.state.roles:
            raise ApiError("EntityNotExist.Role", "The role does not exist.")
        self._custom(q)
        if (role, name) not in self.state.attached:
            raise ApiError("EntityNotExist.Role.Policy",
                           "The policy is not attached to the role.")
        self.state.attached.discard((role, name))
        self.state.policies[name]["AttachmentCount"] -= 1
        return {}

    def _DeletePolicy(self, region: str, q: dict[str, str]) -> dict[str, Any]:
        policy = self._custom(q)
        name = policy["PolicyName"]
        if any(p == name for _r, p in self.state.attached):
            raise ApiError("DeleteConflict.Policy.Role",
                           "The policy is still attached to a role.")
        if len(self._versions(policy)) > 1:
            raise ApiError("DeleteConflict.Policy.Version",
                           "The policy still has non-default versions.")
        del self.state.policies[name]
        return {}

    def _DeleteRole(self, region: str, q: dict[str, str]) -> dict[str, Any]:
        name = q.get("RoleName", "")
        if name not in self.state.roles:
            raise ApiError("EntityNotExist.Role", "The role does not exist.")
        if any(r == name for r, _p in self.state.attached):
            raise ApiError("DeleteConflict.Role.Policy",
                           "The role still has policies attached.")
        del self.state.roles[name]
        return {}

    def _CreatePolicy(self, region: str, q: dict[str, str]) -> dict[str, Any]:
        name = q.get("PolicyName", "")
        if name in self.state.policies:
            raise ApiError("EntityAlreadyExists.Policy", "The policy already exists.")
        try:
            doc = json.loads(q.get("PolicyDocument", ""))
            statements = doc["Statement"]
        except (ValueError, KeyError, TypeError):
            raise ApiError("MalformedPolicyDocument", "The policy document is malformed."
                           ) from None
        if doc.get("Version") != "1" or not statements or any(
                st.get("Effect") not in ("Allow", "Deny") for st in statements):
            raise ApiError("MalformedPolicyDocument", "The policy document is malformed.")
        now = _iso(self.now())
        self.state.policies[name] = {
            "PolicyName": name, "PolicyType": "Custom", "Description": q.get("Description", ""),
            "DefaultVersion": "v1", "CreateDate": now, "UpdateDate": now,
            "AttachmentCount": 0, "_document": json.dumps(doc),
            "_tags": {t["Key"]: t.get("Value", "") for t in _objects(q, "Tag")}}
        return {"Policy": self._role_view(self.state.policies[name])}

    def _AttachPolicyToRole(self, region: str, q: dict[str, str]) -> dict[str, Any]:
        role, name = q.get("RoleName", ""), q.get("PolicyName", "")
        if role not in self.state.roles:
            raise ApiError("EntityNotExist.Role", "The role does not exist.")
        if q.get("PolicyType") != "Custom" or name not in self.state.policies:
            raise ApiError("EntityNotExist.Policy", "The policy does not exist.")
        if (role, name) in self.state.attached:
            raise ApiError("EntityAlreadyExists.Role.Policy",
                           "The policy has already been attached to the role.")
        self.state.attached.add((role, name))
        self.state.policies[name]["AttachmentCount"] += 1
        return {}

    def _ecs_role(self, name: str) -> None:
        """A role ECS may give a machine: it exists and trusts ``ecs.aliyuncs.com``."""
        role = self.state.roles.get(name)
        if role is None:
            raise ApiError("InvalidRamRole.NotFound", "The specified RAMRoleName does not "
                           "exist.")
        if ECS_PRINCIPAL not in role["_services"]:
            raise ApiError("InvalidRamRole.NotEcsRole", "The specified ram role is not "
                           "authorized for ecs, please check your role policy.")

    def _AttachInstanceRamRole(self, region: str, q: dict[str, str]) -> dict[str, Any]:
        name = q.get("RamRoleName", "")
        self._ecs_role(name)
        results = []
        for iid in json.loads(q.get("InstanceIds") or "[]"):
            raw = self.state.instances.get(iid)
            if raw is None or raw["RegionId"] != region:
                results.append({"InstanceId": iid, "Success": False,
                                "Code": "InvalidInstanceId.NotFound",
                                "Message": "The specified InstanceId does not exist."})
                continue
            raw["_ram_role"] = name
            results.append({"InstanceId": iid, "Success": True, "Code": "200",
                            "Message": "success"})
        return {"RamRoleName": name, "TotalCount": len(results),
                "FailCount": sum(1 for r in results if not r["Success"]),
                "AttachInstanceRamRoleResults": {"AttachInstanceRamRoleResult": results}}


    # ------------------------------------------------------------------ STS (issue 22)

    def _GetCallerIdentity(self, region: str, q: dict[str, str]) -> dict[str, Any]:
        root = self._caller in self.root_keys
        return {"AccountId": ACCOUNT_ID, "IdentityType": "Account" if root else "RAMUser",
                "Arn": f"acs:ram::{ACCOUNT_ID}:root" if root
                else f"acs:ram::{ACCOUNT_ID}:user/gpudesk",
                "UserId": ACCOUNT_ID if root else "200000000000000001",
                "PrincipalId": ACCOUNT_ID if root else "200000000000000001"}

    def _AssumeRole(self, region: str, q: dict[str, str]) -> dict[str, Any]:
        if self._caller in self.root_keys:
            raise ApiError("NoPermission", "You are not authorized to do this action. You "
                           "should be authorized by RAM.")
        arn = q.get("RoleArn", "")
        role = next((r for r in self.state.roles.values() if r["Arn"] == arn), None)
        if role is None:
            raise ApiError("EntityNotExist.Role", "The role not exists: " + arn)
        if f"acs:ram::{ACCOUNT_ID}:root" not in role.get("_accounts", []):
            raise ApiError("NoPermission", "You are not authorized to assume this role.")
        name = q.get("RoleSessionName", "")
        if not _SESSION_NAME.match(name):
            raise ApiError("InvalidParameter.RoleSessionName",
                           "The parameter RoleSessionName is wrongly formed.")
        policy = q.get("Policy")
        doc: dict[str, Any] | None = None
        if policy is not None:
            if not 1 <= len(policy) <= STS_POLICY_MAX:
                raise ApiError("InvalidParameter.PolicySize",
                               f"The size of Policy must be smaller than {STS_POLICY_MAX} "
                               "bytes.")
            try:
                doc = json.loads(policy)
                statements = doc["Statement"]
            except (ValueError, KeyError, TypeError):
                raise ApiError("InvalidParameter.PolicyGrammar",
                               "The parameter Policy has not passed grammar check.") from None
            if doc.get("Version") != "1" or not statements:
                raise ApiError("InvalidParameter.PolicyGrammar",
                               "The parameter Policy has not passed grammar check.")
        try:
            seconds = int(q.get("DurationSeconds") or 3600)
        except ValueError:
            seconds = -1
        if not STS_MIN_S <= seconds <= int(role["MaxSessionDuration"]):
            raise ApiError("InvalidParameter.DurationSeconds",
                           f"The Min/Max value of DurationSeconds is {STS_MIN_S}/"
                           f"{role['MaxSessionDuration']} seconds.")
        expires = _iso(self.now() + seconds)
        given = {"AccessKeyId": "STS." + _new_id("", 24),
                 "AccessKeySecret": uuid.uuid4().hex, "SecurityToken": uuid.uuid4().hex * 4,
                 "Expiration": expires}
        self.assumed.append({"RoleArn": arn, "RoleSessionName": name, "Policy": doc,
                             "DurationSeconds": seconds, "Key": self._caller, **given})
        return {"Credentials": given, "AssumedRoleUser": {
            "Arn": f"{arn}/{name}", "AssumedRoleId": f"{role['RoleId']}:{name}"}}


def sdk_client(server: AliyunStandin, region: str = "cn-hangzhou",
               key_id: str = ACCESS_KEY_ID, secret: str = ACCESS_KEY_SECRET) -> Any:
    """A real SDK client pointed at ``server``."""
    from alibabacloud_ecs20140526.client import Client
    from alibabacloud_tea_openapi.utils_models import Config

    return Client(Config(access_key_id=key_id, access_key_secret=secret, region_id=region,
                         endpoint=server.endpoint, protocol="http", read_timeout=10_000))


def vpc_sdk_client(server: AliyunStandin, region: str = "cn-hangzhou",
                   key_id: str = ACCESS_KEY_ID, secret: str = ACCESS_KEY_SECRET) -> Any:
    """A real VPC SDK (2016-04-28) client pointed at ``server``."""
    from alibabacloud_tea_openapi.utils_models import Config
    from alibabacloud_vpc20160428.client import Client

    return Client(Config(access_key_id=key_id, access_key_secret=secret, region_id=region,
                         endpoint=server.endpoint, protocol="http", read_timeout=10_000))


def check_acs3(secrets: dict[str, str], nonces: set[str], lock: Any, method: str, path: str,
               query: dict[str, str], headers: dict[str, str], body: bytes, *,
               now: float) -> None:
    """ACS3-HMAC-SHA256 as alibabacloud-tea-openapi signs it (every Alibaba Cloud product
    gpudesk calls: ECS, VPC, RAM, STS, ESS): the key, the time within MAX_SKEW_S of ``now``,
    the body's hash, the signed headers, the signature, a nonce used once."""
    match = _AUTH.match(headers.get("authorization", ""))
    if not match:
        raise ApiError("IncompleteSignature", "The request signature does not conform to "
                       "Aliyun standards.")
    with lock:
        secret = secrets.get(match["id"])
    if secret is None:
        raise ApiError("InvalidAccessKeyId.NotFound", "Specified access key is not found.")
    stamp = _parse_iso(headers.get("x-acs-date", ""))
    if stamp is None:
        raise ApiError("InvalidTimeStamp.Format", "Specified time stamp is not valid.")
    if abs(now - stamp) > MAX_SKEW_S:
        raise ApiError("InvalidTimeStamp.Expired",
                       "Specified time stamp or date value is expired.")
    payload_hash = headers.get("x-acs-content-sha256", "")
    signed = match["signed"].split(";")
    expected = acs3_signature(secret, method, path, query, headers, signed, payload_hash)
    if (payload_hash != hashlib.sha256(body).hexdigest()
            or not {"host", "x-acs-action", "x-acs-date", "x-acs-signature-nonce",
                    "x-acs-content-sha256", "x-acs-version"} <= set(signed)
            or not hmac.compare_digest(expected, match["sig"])):
        raise ApiError("SignatureDoesNotMatch", "Specified signature is not matched with "
                       "our calculation.")
    nonce = headers.get("x-acs-signature-nonce", "")
    with lock:
        if nonce in nonces:
            raise ApiError("SignatureNonceUsed", "Specified signature nonce was used "
                           "already.")
        nonces.add(nonce)
