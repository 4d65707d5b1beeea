"""What each cloud accepts: one table of per-action parameter limits per cloud, with sources.

The stand-ins (``tests/aliyun_standin.py``, ``tests/tencent_standin.py``) call
:func:`check` on every request and refuse a violation as the cloud would, and
``tests/test_request_conformance.py`` drives gpudesk's own request paths and
asserts that nothing it sends breaks a row here. A limit the stand-in did not
know is how a launch that passed every test failed at the real cloud
(``PageSize=100`` on ECS DescribeSecurityGroups, issue 24).

Every row names its source: the SDK's model (the docstring of the request
field in the installed ``alibabacloud_ecs20140526`` / ``alibabacloud_vpc20160428``
/ ``tencentcloud`` package, or the ``min``/``max``/``enum`` of botocore's
``ec2`` service model) or, where the model has no range, the API reference
page it comes from.

The API, kept stable (others add rows and call it):

* ``check(cloud, action, params) -> list[str]``: each violation as
  ``"<Code>: <Message>"`` in the cloud's own words where they are known
  (:func:`split` takes one apart). ``params`` is either the flattened form an
  RPC query arrives in (``Tag.1.Key``) or nested dicts and lists as an SDK
  or a JSON body holds them; both are read the same (list items become
  ``Name.<i>``, whatever the base of ``i``).
* ``TABLES[cloud][action]`` is a list of :class:`Rule`. A row names a
  parameter with ``N`` for any list index (``Tag.N.Key``); a rule whose
  parameter is absent is not checked unless ``required``.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from typing import Any

# ---------------------------------------------------------------------- sources

ALIYUN_ECS_SDK = "alibabacloud_ecs20140526 request model"
ALIYUN_VPC_SDK = "alibabacloud_vpc20160428 request model"
TENCENT_SDK = "tencentcloud-sdk-python cvm/vpc v20170312 models"
# Instance roles (issue 21): the CAM and RAM SDK models are not installed (gpudesk calls them
# through the common clients), so the rows cite the models in the SDKs' repositories.
TENCENT_CAM_SDK = "tencentcloud-sdk-python tencentcloud/cam/v20190116/models.py"
TENCENT_CAM_ERRORS = "tencentcloud-sdk-python tencentcloud/cam/v20190116/errorcodes.py"
# "The maximum length for the content of a custom policy is 6,144 characters" (CAM policy
# syntax, https://www.tencentcloud.com/document/product/1031/64685).
TENCENT_CAM_POLICY = "Tencent Cloud CAM custom policy limit (document/product/1031/64685)"
ALIYUN_RAM_SDK = "alibabacloud-python-sdk ram-20150501 request models"
BOTOCORE = "botocore ec2 service-2 model"

# Error words each cloud uses for a parameter it refuses: (code, message template).
# ECS answers exactly this for an out-of-range PageSize (issue 24, from a real call):
#   InvalidParameter: The specified parameter "PageSize" is not valid.
GENERIC: dict[str, tuple[str, str]] = {
    "aliyun": ("InvalidParameter", 'The specified parameter "{param}" is not valid.'),
    # https://cloud.tencent.com/document/api/213/15694 (common error codes)
    "tencent": ("InvalidParameterValue", "The value of parameter `{param}` is invalid."),
    # https://docs.aws.amazon.com/AWSEC2/latest/APIReference/errors-overview.html
    "aws": ("InvalidParameterValue", "Value for parameter {param} is invalid."),
}

ISO8601_UTC = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")  # yyyy-MM-ddTHH:mm:ssZ
ISO8601_UTC_MINUTES = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?Z$")


@dataclass(frozen=True)
class Rule:
    """One limit on one parameter of one action.

    ``kind``: ``int`` (``lo``..``hi``), ``enum`` (``values``), ``len`` (string length
    ``lo``..``hi``, and ``pattern`` if given), ``pattern``, ``count`` (how many
    items ``Name.N…`` there are, at most ``hi``), ``json-list`` (a JSON array in a
    string, at most ``hi`` items), ``cidr`` (a network with a prefix ``lo``..``hi``),
    ``forbidden`` (must not be sent), ``custom`` (``test(params)`` returns the
    problem or "").
    """

    param: str
    kind: str
    source: str
    lo: float | None = None
    hi: float | None = None
    values: frozenset[str] = frozenset()
    pattern: str = ""
    required: bool = False
    case_insensitive: bool = False
    code: str = ""  # the cloud's own code for this one, where it has a specific one
    message: str = ""  # its message; "{param}" and "{value}" are filled in
    test: Callable[[dict[str, str]], str] | None = field(default=None, compare=False)


def _int(param: str, lo: float | None, hi: float | None, source: str, **kw: Any) -> Rule:
    return Rule(param, "int", source, lo=lo, hi=hi, **kw)


def _enum(param: str, values: Iterable[str], source: str, **kw: Any) -> Rule:
    return Rule(param, "enum", source, values=frozenset(values), **kw)


def _len(param: str, lo: int, hi: int, source: str, pattern: str = "", **kw: Any) -> Rule:
    return Rule(param, "len", source, lo=lo, hi=hi, pattern=pattern, **kw)


def _count(param: str, hi: int, source: str, **kw: Any) -> Rule:
    return Rule(param, "count", source, hi=hi, **kw)


def _time(param: str, source: str, pattern: re.Pattern[str] = ISO8601_UTC,
          **kw: Any) -> Rule:
    return Rule(param, "pattern", source, pattern=pattern.pattern, **kw)


def _custom(param: str, source: str, test: Callable[[dict[str, str]], str],
            **kw: Any) -> Rule:
    return Rule(param, "custom", source, test=test, **kw)


# ---------------------------------------------------------------------- Alibaba Cloud

_ALIYUN_TAGS = [  # ECS and VPC alike: "Valid values of N: 1 to 20 … up to 128 characters …
    # cannot start with aliyun or acs: … cannot contain http:// or https://"
    _count("Tag.N.Key", 20, ALIYUN_ECS_SDK),
    _len("Tag.N.Key", 1, 128, ALIYUN_ECS_SDK, pattern=r"^(?!aliyun|acs:)(?!.*https?://).*$"),
    _len("Tag.N.Value", 0, 128, ALIYUN_ECS_SDK, pattern=r"^(?!aliyun|acs:)(?!.*https?://).*$"),
]
_ALIYUN_CHARGE = ("PrePaid", "PostPaid")  # InstanceChargeType, ECS SDK model
_ALIYUN_SPOT = ("NoSpot", "SpotWithPriceLimit", "SpotAsPriceGo")  # SpotStrategy, ECS SDK model
# ECS names (instances, groups, VPCs): "2 to 128 characters … must start with a letter and
# cannot start with http:// or https://. It can contain letters [Unicode], digits, colons (:),
# underscores (_), periods (.), and hyphens (-)."
_ALIYUN_NAME = r"^(?!https?://)[^\W\d_][\w:.\-]*$"
_CLIENT_TOKEN = _len("ClientToken", 1, 64, ALIYUN_ECS_SDK, pattern=r"^[\x20-\x7e]+$")


def _aliyun_pagings(page_size_hi: int, max_results: tuple[int, int | None] | None,
                    source: str = ALIYUN_ECS_SDK) -> list[Rule]:
    """PageNumber/PageSize paging, and MaxResults/NextToken where the action takes it.

    Where both are sent, MaxResults wins ("Setting MaxResults indicates that the MaxResults
    and NextToken combination is used"): ECS does not refuse the pair, so neither does this.
    """
    rows = [_int("PageNumber", 1, None, source), _int("PageSize", 1, page_size_hi, source)]
    if max_results is not None:
        rows.append(_int("MaxResults", max_results[0], max_results[1], source))
    return rows


ALIYUN: dict[str, list[Rule]] = {
    "DescribeRegions": [],
    "DescribeZones": [_enum("InstanceChargeType", _ALIYUN_CHARGE, ALIYUN_ECS_SDK),
                      _enum("SpotStrategy", _ALIYUN_SPOT, ALIYUN_ECS_SDK)],
    # https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-describesecuritygroups
    # (doc-detail/25556): PageSize "Maximum value: 50"; MaxResults "Maximum value: 100" (SDK).
    "DescribeSecurityGroups": _aliyun_pagings(50, (1, 100)),
    # SDK model: PageSize "Maximum value: 50. Default value: 10."; no MaxResults/NextToken.
    "DescribeKeyPairs": _aliyun_pagings(50, None),
    # SDK model: PageSize "Maximum value: 100"; MaxResults "Maximum value: 100 … greater than
    # 100, the default value is 100" (taken as 100, not refused); InstanceIds "a JSON array
    # that consists of up to 100" IDs.
    "DescribeInstances": [*_aliyun_pagings(100, (1, None)),
                          Rule("InstanceIds", "json-list", ALIYUN_ECS_SDK, hi=100)],
    "DescribeImages": [*_aliyun_pagings(100, None),
                       _enum("ImageOwnerAlias", ("system", "self", "others", "marketplace"),
                             ALIYUN_ECS_SDK),
                       _enum("OSType", ("windows", "linux"), ALIYUN_ECS_SDK),
                       _enum("Architecture", ("i386", "x86_64", "arm64"), ALIYUN_ECS_SDK)],
    "DescribeAvailableResource": [
        _enum("DestinationResource", ("Zone", "IoOptimized", "InstanceType", "SystemDisk",
                                      "DataDisk", "Network", "ddh"), ALIYUN_ECS_SDK),
        _enum("InstanceChargeType", _ALIYUN_CHARGE, ALIYUN_ECS_SDK),
        _enum("SpotStrategy", _ALIYUN_SPOT, ALIYUN_ECS_SDK)],
    "DescribePrice": [
        _enum("ResourceType", ("instance", "disk", "diskperformance", "ddh", "bandwidth"),
              ALIYUN_ECS_SDK),
        _enum("PriceUnit", ("Month", "Year", "Hour", "Week"), ALIYUN_ECS_SDK),
        _enum("SpotStrategy", _ALIYUN_SPOT, ALIYUN_ECS_SDK),
        _enum("InstanceChargeType", _ALIYUN_CHARGE, ALIYUN_ECS_SDK),
        _enum("SystemDisk.Category", ("cloud", "cloud_efficiency", "cloud_ssd", "ephemeral_ssd",
                                      "cloud_essd", "cloud_auto", "cloud_essd_entry"),
              ALIYUN_ECS_SDK)],
    # SDK model: "StartTime … yyyy-MM-ddTHH:mm:ssZ format. The time must be in UTC", at most
    # 30 days back; NetworkType classic|vpc; OSType linux|windows.
    "DescribeSpotPriceHistory": [
        _time("StartTime", ALIYUN_ECS_SDK), _time("EndTime", ALIYUN_ECS_SDK),
        _enum("NetworkType", ("classic", "vpc"), ALIYUN_ECS_SDK, required=True),
        _enum("OSType", ("linux", "windows"), ALIYUN_ECS_SDK),
        Rule("InstanceType", "pattern", ALIYUN_ECS_SDK, pattern=r".+", required=True)],
    "RunInstances": [
        _len("InstanceName", 2, 128, ALIYUN_ECS_SDK, pattern=_ALIYUN_NAME,
             code="InvalidInstanceName.Malformed",
             message="Specified parameter InstanceName is not valid."),
        _enum("InstanceChargeType", _ALIYUN_CHARGE, ALIYUN_ECS_SDK),
        _enum("SpotStrategy", _ALIYUN_SPOT, ALIYUN_ECS_SDK),
        # SpotStrategy and SpotPriceLimit "take effect only" with PostPaid and
        # SpotWithPriceLimit: ignored otherwise, not refused.
        _enum("InternetChargeType", ("PayByBandwidth", "PayByTraffic"), ALIYUN_ECS_SDK),
        _int("InternetMaxBandwidthOut", 0, 100, ALIYUN_ECS_SDK),  # "0 to 100. Unit: Mbit/s"
        _int("Amount", 1, 100, ALIYUN_ECS_SDK),
        _int("SystemDisk.Size", 20, 2048, ALIYUN_ECS_SDK),  # cloud_essd: "20 to 2048" GiB
        _enum("SystemDisk.Category", ("cloud_efficiency", "cloud_ssd", "cloud_essd", "cloud",
                                      "cloud_auto", "cloud_essd_entry"), ALIYUN_ECS_SDK),
        # "yyyy-MM-ddTHH:mm:ssZ format. The time must be in UTC"
        _time("AutoReleaseTime", ALIYUN_ECS_SDK, code="InvalidAutoReleaseTime.Malformed",
              message="The specified parameter AutoReleaseTime is not valid."),
        _len("UserData", 1, 32 * 1024, ALIYUN_ECS_SDK),  # "cannot exceed 32 KB" (Base64)
        _CLIENT_TOKEN, *_ALIYUN_TAGS],
    # SDK model: InstanceId.N "Valid values of N: 1 to 100"; StoppedMode
    # StopCharging|KeepCharging (pay-as-you-go VPC machines only; see stop_note).
    "StopInstances": [_count("InstanceId.N", 100, ALIYUN_ECS_SDK),
                      _enum("StoppedMode", ("StopCharging", "KeepCharging"), ALIYUN_ECS_SDK),
                      _enum("BatchOptimization", ("SuccessFirst", "AllTogether"),
                            ALIYUN_ECS_SDK)],
    "StartInstances": [_count("InstanceId.N", 100, ALIYUN_ECS_SDK)],
    "DeleteInstances": [_count("InstanceId.N", 100, ALIYUN_ECS_SDK)],
    "ModifyInstanceAutoReleaseTime": [
        Rule("AutoReleaseTime", "pattern", ALIYUN_ECS_SDK,
             pattern=r"^$|" + ISO8601_UTC.pattern, code="InvalidAutoReleaseTime.Malformed",
             message="The specified parameter AutoReleaseTime is not valid.")],
    # SDK model: "2 to 128 characters … must start with a letter … digits, colons (:),
    # underscores (_), and hyphens (-)" (periods too, in the name of an imported key).
    "ImportKeyPair": [
        _len("KeyPairName", 2, 128, ALIYUN_ECS_SDK, pattern=r"^[A-Za-z][A-Za-z0-9:_\-.]*$",
             required=True, code="InvalidKeyPairName.Malformed",
             message="Specified key pair name is not valid."),
        *_ALIYUN_TAGS],
    # SDK model: KeyPairNames "a JSON array of up to 100 key pair names".
    "DeleteKeyPairs": [Rule("KeyPairNames", "json-list", ALIYUN_ECS_SDK, hi=100,
                            required=True)],
    "CreateSecurityGroup": [
        _len("SecurityGroupName", 2, 128, ALIYUN_ECS_SDK, pattern=_ALIYUN_NAME),
        _len("Description", 2, 256, ALIYUN_ECS_SDK, pattern=r"^(?!https?://).*$"),
        _enum("SecurityGroupType", ("normal", "enterprise"), ALIYUN_ECS_SDK),
        _CLIENT_TOKEN, *_ALIYUN_TAGS],
    "DescribeSecurityGroupAttribute": [
        _enum("Direction", ("egress", "ingress", "all"), ALIYUN_ECS_SDK),
        _int("MaxResults", 10, 1000, ALIYUN_ECS_SDK)],
    # SDK model: Permissions.N "Valid values of N: 1 to 100"; IpProtocol TCP|UDP|ICMP|ICMPV6|
    # GRE|ALL (case-insensitive); PortRange "start/end", 1 to 65535 for TCP and UDP; Priority
    # 1 to 100; Policy accept|drop; SourceCidrIp "CIDR block or IPv4 address".
    "AuthorizeSecurityGroup": [
        _count("Permissions.N.IpProtocol", 100, ALIYUN_ECS_SDK),
        _enum("Permissions.N.IpProtocol", ("TCP", "UDP", "ICMP", "ICMPV6", "GRE", "ALL"),
              ALIYUN_ECS_SDK, case_insensitive=True),
        Rule("Permissions.N.PortRange", "pattern", ALIYUN_ECS_SDK,
             pattern=r"^(-1/-1|([1-9]\d{0,4})/([1-9]\d{0,4}))$"),
        _enum("Permissions.N.Policy", ("accept", "drop"), ALIYUN_ECS_SDK,
              case_insensitive=True),
        _int("Permissions.N.Priority", 1, 100, ALIYUN_ECS_SDK),
        Rule("Permissions.N.SourceCidrIp", "cidr", ALIYUN_ECS_SDK, lo=0, hi=32),
        _len("Permissions.N.Description", 1, 512, ALIYUN_ECS_SDK,
             pattern=r"^(?!https?://).*$")],
    "RevokeSecurityGroup": [_count("SecurityGroupRuleId.N", 100, ALIYUN_ECS_SDK)],
    "DeleteSecurityGroup": [],
    # SDK model: ResourceType instance|disk|snapshot|image|securitygroup|volume|eni|ddh|
    # keypair|launchtemplate|…; ResourceId.N "Valid values of N: 1 to 50".
    "TagResources": [
        _enum("ResourceType", ("instance", "disk", "snapshot", "image", "securitygroup",
                               "volume", "eni", "ddh", "ddhcluster", "keypair",
                               "launchtemplate", "reservedinstance", "snapshotpolicy",
                               "elasticityassurance", "capacityreservation", "command",
                               "invocation", "activation", "managedinstance"),
              ALIYUN_ECS_SDK, required=True),
        _count("ResourceId.N", 50, ALIYUN_ECS_SDK), *_ALIYUN_TAGS],
    # VPC API (2016-04-28). SDK model: PageSize "Maximum value: 50. Default value: 10";
    # DescribeVpcs and DescribeVSwitches take no MaxResults/NextToken in this version.
    "DescribeVpcs": [*_aliyun_pagings(50, None, ALIYUN_VPC_SDK),
                     _count("Tag.N.Key", 20, ALIYUN_VPC_SDK)],
    "DescribeVSwitches": [*_aliyun_pagings(50, None, ALIYUN_VPC_SDK),
                          _count("Tag.N.Key", 20, ALIYUN_VPC_SDK)],
    # SDK model: CidrBlock "10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16 and their subnets" with
    # a mask of 8 to 28 bits; VpcName "1 to 128 characters … cannot start with http://";
    # Description "1 to 256 characters".
    "CreateVpc": [
        Rule("CidrBlock", "cidr", ALIYUN_VPC_SDK, lo=8, hi=28),
        _len("VpcName", 1, 128, ALIYUN_VPC_SDK, pattern=r"^(?!https?://).*$"),
        _len("Description", 1, 256, ALIYUN_VPC_SDK, pattern=r"^(?!https?://).*$"),
        _CLIENT_TOKEN, *_ALIYUN_TAGS],
    # SDK model: CidrBlock mask "16 to 29 bits"; VSwitchName "1 to 128 characters".
    "CreateVSwitch": [
        Rule("CidrBlock", "cidr", ALIYUN_VPC_SDK, lo=16, hi=29, required=True),
        Rule("ZoneId", "pattern", ALIYUN_VPC_SDK, pattern=r".+", required=True),
        _len("VSwitchName", 1, 128, ALIYUN_VPC_SDK, pattern=r"^(?!https?://).*$"),
        _len("Description", 1, 256, ALIYUN_VPC_SDK, pattern=r"^(?!https?://).*$"),
        _CLIENT_TOKEN, *_ALIYUN_TAGS],
    # ECS SDK model: InstanceIds "Array length: 1 to 100", Policy "Length: 1 to 1,024".
    "AttachInstanceRamRole": [
        Rule("InstanceIds", "json-list", ALIYUN_ECS_SDK, hi=100, required=True),
        _len("RamRoleName", 1, 64, ALIYUN_ECS_SDK, required=True),
        _len("Policy", 1, 1024, ALIYUN_ECS_SDK)],
    # RAM API 2015-05-01 (ram.aliyuncs.com). RoleName "1 to 64 characters … letters, digits,
    # periods (.), and hyphens (-)"; Description "1 to 1,024 characters"; MaxSessionDuration
    # "Valid values: 3600 to 43200".
    "GetRole": [_len("RoleName", 1, 64, ALIYUN_RAM_SDK, pattern=r"^[A-Za-z0-9.\-]+$",
                     required=True)],
    "CreateRole": [
        _len("RoleName", 1, 64, ALIYUN_RAM_SDK, pattern=r"^[A-Za-z0-9.\-]+$", required=True),
        Rule("AssumeRolePolicyDocument", "pattern", ALIYUN_RAM_SDK, pattern=r".+",
             required=True),
        _len("Description", 1, 1024, ALIYUN_RAM_SDK),
        _int("MaxSessionDuration", 3600, 43200, ALIYUN_RAM_SDK), *_ALIYUN_TAGS],
    # PolicyName "1 to 128 characters … letters, digits, and hyphens (-)"; PolicyDocument
    # "1 to 6,144 characters"; PolicyType "System and Custom".
    "CreatePolicy": [
        _len("PolicyName", 1, 128, ALIYUN_RAM_SDK, pattern=r"^[A-Za-z0-9\-]+$", required=True),
        _len("PolicyDocument", 1, 6144, ALIYUN_RAM_SDK, required=True),
        _len("Description", 1, 1024, ALIYUN_RAM_SDK), *_ALIYUN_TAGS],
    "GetPolicy": [_len("PolicyName", 1, 128, ALIYUN_RAM_SDK, required=True),
                  _enum("PolicyType", ("System", "Custom"), ALIYUN_RAM_SDK, required=True)],
    "AttachPolicyToRole": [
        _enum("PolicyType", ("System", "Custom"), ALIYUN_RAM_SDK, required=True),
        _len("PolicyName", 1, 128, ALIYUN_RAM_SDK, required=True),
        _len("RoleName", 1, 64, ALIYUN_RAM_SDK, pattern=r"^[A-Za-z0-9.\-]+$", required=True)],
}

# ---------------------------------------------------------------------- Tencent Cloud

# Source for each: the docstring of the field in tencentcloud/<cvm|vpc>/v20170312/models.py.
TENCENT: dict[str, list[Rule]] = {
    # "返回数量，默认为20，最大值为100" (Limit); Offset "默认为0".
    "DescribeInstances": [_int("Limit", 1, 100, TENCENT_SDK), _int("Offset", 0, None,
                                                                   TENCENT_SDK),
                          _count("InstanceIds.N", 100, TENCENT_SDK)],
    "DescribeKeyPairs": [_int("Limit", 1, 100, TENCENT_SDK), _int("Offset", 0, None,
                                                                  TENCENT_SDK)],
    "DescribeSecurityGroups": [_int("Limit", 1, 100, TENCENT_SDK),
                               _int("Offset", 0, None, TENCENT_SDK)],
    "RunInstances": [
        _enum("InstanceChargeType", ("PREPAID", "POSTPAID_BY_HOUR", "CDHPAID", "SPOTPAID",
                                     "CDCPAID"), TENCENT_SDK),
        _enum("InstanceMarketOptions.MarketType", ("spot",), TENCENT_SDK),
        _enum("InstanceMarketOptions.SpotOptions.SpotInstanceType", ("one-time",),
              TENCENT_SDK),
        _len("InstanceName", 1, 128, TENCENT_SDK),
        # https://cloud.tencent.com/document/api/213/15730: InstanceCount 1 to 100
        _int("InstanceCount", 1, 100, TENCENT_SDK),
        # UserData "需要以 base64 方式编码，支持的最大数据大小为 16KB": held to 16 KB of the
        # base64 text sent, as AS is (tencent_as_standin; gpudesk sends base64 of gzip,
        # gpudesk/services/cloud/providers/user_data.py)
        _len("UserData", 0, 16 * 1024, TENCENT_SDK,
             code="InvalidParameterValue.UserDataSizeExceeded",
             message="UserData is longer than 16 KB."),
        Rule("UserData", "pattern", TENCENT_SDK, pattern=r"^[A-Za-z0-9+/]*={0,2}$",
             code="InvalidParameterValue.UserDataFormatError",
             message="UserData is not base64.")],
    # StoppedMode KEEP_CHARGING|STOP_CHARGING; StopType SOFT|HARD|SOFT_FIRST.
    "StopInstances": [_enum("StoppedMode", ("KEEP_CHARGING", "STOP_CHARGING"), TENCENT_SDK),
                      _enum("StopType", ("SOFT", "HARD", "SOFT_FIRST"), TENCENT_SDK),
                      _count("InstanceIds.N", 100, TENCENT_SDK)],
    # "密钥对名称，可由数字、字母和下划线组成，长度不超过25个字符"
    "ImportKeyPair": [_len("KeyName", 1, 25, TENCENT_SDK, pattern=r"^[A-Za-z0-9_]+$",
                           required=True)],
    # "安全组名称，可任意命名，但不得超过60个字符"; "安全组备注，最多100个字符"
    "CreateSecurityGroup": [_len("GroupName", 1, 60, TENCENT_SDK, required=True),
                            _len("GroupDescription", 0, 100, TENCENT_SDK)],
    # ActionTime "按照ISO8601标准表示，并且使用UTC时间。格式为 YYYY-MM-DDThh:mm:ssZ"
    "ImportInstancesActionTimer": [
        _time("ActionTimer.ActionTime", TENCENT_SDK),
        _enum("ActionTimer.TimerAction", ("TerminateInstances",), TENCENT_SDK)],
    # InstanceIds "每次请求批量实例的上限为100" (Start/TerminateInstances); KeyIds
    # "每次请求批量密钥对的上限为100" (DeleteKeyPairs); TimerAction "目前仅支持…TerminateInstances".
    "StartInstances": [_count("InstanceIds.N", 100, TENCENT_SDK)],
    "TerminateInstances": [_count("InstanceIds.N", 100, TENCENT_SDK)],
    "DeleteKeyPairs": [_count("KeyIds.N", 100, TENCENT_SDK)],
    "DescribeInstancesActionTimer": [
        _enum("TimerAction", ("TerminateInstances",), TENCENT_SDK)],
    # ModifyInstancesAttribute: InstanceIds "每次请求允许操作的实例数量上限是100"; CamRoleType
    # "当前只接受user、system和service_linked"; CamRoleName "只允许包含英文字母、数字或者 +=,.@_-"
    # (cvm errorcodes.py InvalidParameterValue.CamRoleNameMalformed).
    "ModifyInstancesAttribute": [
        _count("InstanceIds.N", 100, TENCENT_SDK),
        _len("CamRoleName", 0, 128, TENCENT_SDK, pattern=r"^[A-Za-z0-9+=,.@_\-]*$",
             code="InvalidParameterValue.CamRoleNameMalformed",
             message="CamRoleName may contain only letters, digits and +=,.@_-."),
        _enum("CamRoleType", ("user", "system", "service_linked"), TENCENT_SDK)],
    # CAM 2019-01-16 (cam.tencentcloudapi.com). RoleName and PolicyName "长度为1~128个字符，
    # 可包含英文字母、数字和+=,.@-_"; SessionDuration "范围：0~43200"; ConsoleLogin "1 为允许
    # 0 为不允许"; Description "长度不能大于300字节" (errorcodes); ListPolicies Rp "必须大于 0
    # 且小于或等于 200", Page "不能大于 200", Scope 'All', 'QCS', 'Local'.
    "GetRole": [_len("RoleName", 1, 128, TENCENT_CAM_SDK, pattern=r"^[A-Za-z0-9+=,.@_\-]+$")],
    "CreateRole": [
        _len("RoleName", 1, 128, TENCENT_CAM_SDK, pattern=r"^[A-Za-z0-9+=,.@_\-]+$",
             required=True, code="InvalidParameter.RoleNameError",
             message="RoleName is not valid."),
        _len("PolicyDocument", 1, 6144, TENCENT_CAM_POLICY, required=True,
             code="InvalidParameter.PolicyDocumentLengthOverLimit",
             message="PolicyDocument is longer than allowed."),
        _len("Description", 0, 300, TENCENT_CAM_ERRORS,
             code="InvalidParameter.DescriptionLengthOverlimit",
             message="Description must not be longer than 300 bytes."),
        _int("SessionDuration", 0, 43200, TENCENT_CAM_SDK),
        _enum("ConsoleLogin", ("0", "1"), TENCENT_CAM_SDK)],
    "CreatePolicy": [
        _len("PolicyName", 1, 128, TENCENT_CAM_SDK, pattern=r"^[A-Za-z0-9+=,.@_\-]+$",
             required=True, code="InvalidParameter.PolicyNameError",
             message="PolicyName is not valid."),
        _len("PolicyDocument", 1, 6144, TENCENT_CAM_POLICY, required=True,
             code="InvalidParameter.PolicyDocumentLengthOverLimit",
             message="PolicyDocument is longer than allowed."),
        _len("Description", 0, 300, TENCENT_CAM_ERRORS,
             code="InvalidParameter.DescriptionLengthOverlimit",
             message="Description must not be longer than 300 bytes.")],
    "ListPolicies": [_int("Rp", 1, 200, TENCENT_CAM_SDK), _int("Page", 1, 200, TENCENT_CAM_SDK),
                     _enum("Scope", ("All", "QCS", "Local"), TENCENT_CAM_SDK)],
    "AttachRolePolicy": [
        _len("AttachRoleName", 1, 128, TENCENT_CAM_SDK, pattern=r"^[A-Za-z0-9+=,.@_\-]+$")],
}

# ---------------------------------------------------------------------- AWS (EC2)

# botocore validates only a minimum; the maximum and the enums are checked here.
AWS: dict[str, list[Rule]] = {
    # botocore model: MaxResults min 5 max 1000.
    "DescribeSecurityGroups": [_int("MaxResults", 5, 1000, BOTOCORE)],
    "DescribeVpcs": [_int("MaxResults", 5, 1000, BOTOCORE)],
    "DescribeSubnets": [_int("MaxResults", 5, 1000, BOTOCORE)],
    "DescribeInstanceTypeOfferings": [_int("MaxResults", 5, 1000, BOTOCORE)],
    # https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeInstances.html:
    # "You can specify a value between 5 and 1000. You cannot specify this parameter and the
    # instance IDs parameter in the same request."
    "DescribeInstances": [
        _int("MaxResults", 5, 1000, "EC2 API reference DescribeInstances"),
        _custom("MaxResults", "EC2 API reference DescribeInstances",
                lambda q: "MaxResults" if q.get("MaxResults") and any(
                    k.startswith("InstanceIds") or k.startswith("InstanceId.") for k in q)
                else "")],
    # DescribeSpotPriceHistory: neither the botocore model nor the API reference gives a
    # MaxResults range, so it has no row here (botocore checks what the model says).
    # https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateSecurityGroup.html:
    # "Constraints: Up to 255 characters in length. Cannot start with sg-."
    "CreateSecurityGroup": [
        _len("GroupName", 1, 255, "EC2 API reference CreateSecurityGroup",
             pattern=r"^(?!sg-).*$", required=True),
        _len("Description", 0, 255, "EC2 API reference CreateSecurityGroup")],
    # https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_ImportKeyPair.html
    # ("Constraints: Up to 255 ASCII characters")
    "ImportKeyPair": [_len("KeyName", 1, 255, "EC2 API reference ImportKeyPair",
                           pattern=r"^[\x20-\x7e]+$", required=True)],
    # botocore model enums: MarketType spot|capacity-block; SpotInstanceType one-time|
    # persistent; InstanceInterruptionBehavior hibernate|stop|terminate.
    "RunInstances": [
        _enum("InstanceMarketOptions.MarketType", ("spot", "capacity-block", "interruptible-"
                                                   "capacity-reservation"), BOTOCORE),
        _enum("InstanceMarketOptions.SpotOptions.SpotInstanceType", ("one-time", "persistent"),
              BOTOCORE),
        _enum("InstanceMarketOptions.SpotOptions.InstanceInterruptionBehavior",
              ("hibernate", "stop", "terminate"), BOTOCORE),
        _enum("InstanceInitiatedShutdownBehavior", ("stop", "terminate"), BOTOCORE),
        # https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/Using_Tags.html: 50 tags,
        # key up to 128, value up to 256 characters, no "aws:" prefix.
        _count("TagSpecifications.N.Tags.N.Key", 50, "EC2 tag restrictions"),
        _len("TagSpecifications.N.Tags.N.Key", 1, 128, "EC2 tag restrictions",
             pattern=r"^(?!aws:).*$"),
        _len("TagSpecifications.N.Tags.N.Value", 0, 256, "EC2 tag restrictions")],
    "CreateTags": [_count("Tags.N.Key", 50, "EC2 tag restrictions"),
                   _len("Tags.N.Key", 1, 128, "EC2 tag restrictions", pattern=r"^(?!aws:).*$"),
                   _len("Tags.N.Value", 0, 256, "EC2 tag restrictions")],
    "AuthorizeSecurityGroupIngress": [
        Rule("IpPermissions.N.IpRanges.N.CidrIp", "cidr", BOTOCORE, lo=0, hi=32),
        _int("IpPermissions.N.FromPort", -1, 65535, BOTOCORE),
        _int("IpPermissions.N.ToPort", -1, 65535, BOTOCORE)],
}

TABLES: dict[str, dict[str, list[Rule]]] = {"aliyun": ALIYUN, "tencent": TENCENT, "aws": AWS}


# ---------------------------------------------------------------------- checking

def flatten(params: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """Nested dicts and lists as ``A.B``/``A.<i>.B`` (1-based), scalars as the wire text."""
    out: dict[str, str] = {}
    for key, value in params.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten(value, name + "."))
        elif isinstance(value, list | tuple):
            for i, item in enumerate(value, 1):
                if isinstance(item, Mapping):
                    out.update(flatten(item, f"{name}.{i}."))
                else:
                    out[f"{name}.{i}"] = _text(item)
        elif value is not None:
            out[name] = _text(value)
    return out


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _matcher(param: str) -> re.Pattern[str]:
    parts = [r"\d+" if part == "N" else re.escape(part) for part in param.split(".")]
    return re.compile(r"^" + r"\.".join(parts) + r"$")


def _violation(cloud: str, rule: Rule, param: str, value: str) -> str:
    code, template = GENERIC.get(cloud, ("InvalidParameter", "{param} is not valid."))
    if rule.code:
        code = rule.code
    if rule.message:
        template = rule.message
    return f"{code}: {template.format(param=param, value=value)}"


def _bad(rule: Rule, value: str) -> bool:
    """Whether one value breaks ``rule`` (kinds that look at one value)."""
    if rule.kind == "int":
        try:
            number = int(value)
        except ValueError:
            return True
        return ((rule.lo is not None and number < rule.lo)
                or (rule.hi is not None and number > rule.hi))
    if rule.kind == "enum":
        if rule.case_insensitive:
            return value.lower() not in {v.lower() for v in rule.values}
        return value not in rule.values
    if rule.kind == "len":
        if (rule.lo is not None and len(value) < rule.lo) or (
                rule.hi is not None and len(value) > rule.hi):
            return True
        return bool(rule.pattern) and not re.match(rule.pattern, value, re.S)
    if rule.kind == "pattern":
        return not re.match(rule.pattern, value, re.S)
    if rule.kind == "forbidden":
        return True
    if rule.kind == "json-list":
        try:
            items = json.loads(value)
        except ValueError:
            return True
        return not isinstance(items, list) or not items or (
            rule.hi is not None and len(items) > rule.hi)
    if rule.kind == "cidr":
        try:
            net = ipaddress.ip_network(value if "/" in value else f"{value}/32", strict=True)
        except ValueError:
            return True
        return not (rule.lo or 0) <= net.prefixlen <= (rule.hi or 32)
    raise ValueError(f"unknown rule kind {rule.kind!r}")


def check(cloud: str, action: str, params: Mapping[str, Any]) -> list[str]:
    """Every limit of ``TABLES[cloud][action]`` that ``params`` breaks, in the cloud's words.

    An action without a row is not checked (``[]``); ``actions(cloud)`` lists those with one.
    """
    rules = TABLES.get(cloud, {}).get(action)
    if not rules:
        return []
    flat = flatten(params)
    found: list[str] = []
    for rule in rules:
        if rule.kind == "custom":
            assert rule.test is not None
            bad_param = rule.test(flat)
            if bad_param:
                found.append(_violation(cloud, rule, bad_param, flat.get(bad_param, "")))
            continue
        match = _matcher(rule.param)
        names = [k for k in flat if match.match(k)]
        if rule.kind == "count":
            if rule.hi is not None and len(names) > rule.hi:
                first = rule.param.split(".N", 1)[0]
                found.append(_violation(cloud, rule, first, str(len(names))))
            continue
        if not names and rule.required:
            found.append(_violation(cloud, rule, rule.param, ""))
        found += [_violation(cloud, rule, name, flat[name]) for name in names
                  if _bad(rule, flat[name])]
    return list(dict.fromkeys(found))


def split(violation: str) -> tuple[str, str]:
    """``"Code: Message"`` → ``("Code", "Message")``."""
    code, _, message = violation.partition(": ")
    return code, message


def actions(cloud: str) -> frozenset[str]:
    """The actions with a row for ``cloud``."""
    return frozenset(TABLES.get(cloud, {}))
