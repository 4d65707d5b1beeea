"""Alibaba Cloud ECS and VPC error codes → gpudesk's typed ProviderError, in one table-tested
function.

The SDK (alibabacloud-tea-openapi) raises ``ClientException``/``ServerException``/
``ThrottlingException`` whose ``data`` is the answer's JSON
(``{"Code", "Message", "RequestId", "Recommend"}``), and lets transport errors
(requests, timeouts) through. The codes come from the ECS API reference and its
error centre: ``InvalidAccessKeyId.NotFound``, ``SignatureDoesNotMatch`` and
``Forbidden.RAM`` are three different answers (unknown key, wrong secret,
valid key without the RAM permission) and are told apart.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.cloud.provider_codes import CodeTable
from gpudesk.services.cloud.provider_codes import ZoneOrRegion
from gpudesk.services.cloud.provider_codes import refusal
from gpudesk.services.cloud.providers import base
from gpudesk.services.cloud.providers.base import MSG_NEED_GROUP as MSG_NEED_GROUP
from gpudesk.services.cloud.providers.base import detail_of as detail_of
from gpudesk.services.cloud.providers.base import error_with_detail

PROVIDER_LABEL = QT_TRANSLATE_NOOP(
    "ProviderError", "Alibaba Cloud")  # translated when shown

MSG_UNKNOWN_KEY = QT_TRANSLATE_NOOP(
    "ProviderError", "Alibaba Cloud does not know the AccessKey ID {key_id}: it is mistyped, "
    "or the key was deleted or disabled. Check it in the RAM console and add it again.")
MSG_BAD_SECRET = QT_TRANSLATE_NOOP(
    "ProviderError", "Alibaba Cloud knows the AccessKey ID {key_id} but the secret does not "
    "match it. Paste the AccessKey secret again.")
MSG_RAM = QT_TRANSLATE_NOOP(
    "ProviderError", "The keys are valid but the RAM user may not {action}. Ask the account "
    "owner to grant {permission} (for example the AliyunECSFullAccess policy).")
MSG_RAM_VPC = QT_TRANSLATE_NOOP(
    "ProviderError", "The keys are valid but the RAM user may not {action}. Ask the account "
    "owner to grant {permission} (for example the AliyunVPCFullAccess policy): gpudesk keeps "
    "its machines in a VPC of its own.")
MSG_NO_BALANCE = QT_TRANSLATE_NOOP(
    "ProviderError", "Alibaba Cloud refused to bill a new machine: the account balance is too "
    "low or the account is not verified ({detail}). Top up or finish real-name verification "
    "in the console.")
HOW_QUOTA_ALIYUN = QT_TRANSLATE_NOOP(
    "ProviderError", "Request more in the Alibaba Cloud console under ECS → Quota Center "
    "(privileges & quotas); approval often takes a day.")
MSG_VPC_NOT_READY = QT_TRANSLATE_NOOP(
    "ProviderError", "The gpudesk network {name} in {region} is still being created; try again "
    "in a minute.")
# What still bills after a stop (ledger "stop-billing"). When StopCharging (economical mode)
# applies, from the StopInstances model: "Instance types that do not support economical mode
# include instances with local SSDs and subscription instances", and it is for VPC machines
# only (https://help.aliyun.com/document_detail/63353.html); ECS then stops with KeepCharging
# without an error.
MSG_STOPPED_STOP_CHARGING = QT_TRANSLATE_NOOP(
    "ProviderError", "stopped with StopCharging: CPU, GPU and memory no longer bill; the system "
    "disk still bills, and the public address may change on restart")
MSG_STOPPED_KEEP_CHARGING = QT_TRANSLATE_NOOP(
    "ProviderError", "stopped with KeepCharging ({why}): the machine bills as if running until "
    "it is terminated")
# Said before a stop that cannot end the bill, and when one is already stopped but charged.
MSG_STOP_CANNOT_STOP_CHARGING = QT_TRANSLATE_NOOP(
    "ProviderError", "Alibaba Cloud cannot stop charging {name} while it is stopped ({why}): "
    "a stop keeps billing it at its full price. Terminate it to end the bill.")
MSG_ALREADY_STOPPED_CHARGING = QT_TRANSLATE_NOOP(
    "ProviderError", "{name} is already stopped, but Alibaba Cloud still charges it as if it "
    "were running ({mode}): a shutdown from inside the machine does not stop the charge. "
    "Start it and stop it from gpudesk, or terminate it, to end the bill.")
WHY_KEEP_ASKED = QT_TRANSLATE_NOOP(
    "ProviderError", "as asked")
WHY_KEEP_SUBSCRIPTION = QT_TRANSLATE_NOOP(
    "ProviderError", "a subscription machine does not get StopCharging")
WHY_KEEP_CLASSIC = QT_TRANSLATE_NOOP(
    "ProviderError", "a machine outside a VPC does not get StopCharging")
WHY_KEEP_TYPE = QT_TRANSLATE_NOOP(
    "ProviderError", "this type ({instance_type}) does not allow StopCharging, as types with "
    "local SSDs do not")

_UNKNOWN_KEY = frozenset({"InvalidAccessKeyId.NotFound", "InvalidAccessKeyId",
                          "InvalidAccessKeyId.Inactive", "InvalidCredentials"})
_BAD_SECRET = frozenset({"SignatureDoesNotMatch", "IncompleteSignature",
                         "InvalidSecurityToken.Expired", "InvalidSecurityToken.Malformed",
                         "InvalidSecurityToken.MismatchWithAccessKey"})
_CLOCK = frozenset({"InvalidTimeStamp.Expired", "InvalidTimeStamp.Format",
                    "SignatureNonceUsed"})
_PERMISSION = frozenset({"Forbidden.RAM", "Forbidden", "Forbidden.NotAuthorized",
                         "Forbidden.SubUser", "NoPermission", "Forbidden.Unauthorized"})
_BALANCE = frozenset({"InvalidAccountStatus.NotEnoughBalance", "Account.Arrearage",
                      "InvalidUser.NotRealName", "InvalidAccountStatus.SnapshotServiceUnavailable",
                      "InvalidPayMethod"})
_NETWORK = frozenset({"ClientNetworkError", "ServiceUnavailable", "InternalError",
                      "UnknownError"})
_THROTTLE = frozenset({"Throttling", "Throttling.User", "Throttling.Api",
                       "Throttling.Resource", "ServiceUnavailable.Throttling"})
_PRICE = frozenset({"InvalidSpotPriceLimit.LowerThanPublicPrice", "InvalidSpotPriceLimit",
                    "InvalidSpotPrice.LowerThanPublicPrice"})
# The stock answers the launcher fails over on (zone, then region).
CAPACITY_CODES = frozenset({
    "OperationDenied.NoStock", "Zone.NotOnSale", "InvalidInstanceType.ValueNotSupported",
    "OperationDenied.ZoneNotAllowed", "Zone.NotOpen", "InvalidResourceType.NotSupported",
    "ResourceNotAvailable", "OperationDenied.ZoneSystemCategoryNotMatch",
})
_QUOTA_NAMES: dict[str, str] = {
    "QuotaExceed.ElasticQuota": "vCPUs of pay-as-you-go instances",
    "QuotaExceed.PostPaidInstance": "pay-as-you-go instances",
    "QuotaExceed.SpotInstance": "spot instances",
    "QuotaExceed.SecurityGroup": "security groups",
    "QuotaExceeded.SecurityGroup": "security groups",
    "QuotaExceed.KeyPair": "key pairs",
    "QuotaExceeded.Vpc": "VPCs",
    "QuotaExceeded.VSwitch": "vSwitches",
}
_NOT_FOUND_WHAT: dict[str, str] = {
    "InvalidInstanceId.NotFound": "machine",
    "InvalidInstanceId.MalFormed": "machine",
    "InvalidImageId.NotFound": "image",
    "InvalidKeyPairName.NotFound": "key pair",
    "InvalidSecurityGroupId.NotFound": "security group",
    "InvalidVpcId.NotFound": "VPC",
    "InvalidVSwitchId.NotExist": "vSwitch",
    "InvalidVSwitchId.NotFound": "vSwitch",
    "InvalidRegionId.NotFound": "region",
}
_INVALID_PREFIXES = ("InvalidParameter", "MissingParameter", "InvalidInstanceType",
                     "InvalidZoneId", "InvalidRegionId", "InvalidSystemDisk", "InvalidKeyPair",
                     "InvalidImageId", "InvalidAutoReleaseTime", "IncorrectInstanceStatus",
                     "InvalidInstanceName", "InvalidSecurityGroup", "InvalidClientToken",
                     "InvalidVSwitchId", "InvalidVpcId", "InvalidAction", "InvalidSpot",
                     "InvalidCidrBlock", "OperationDenied", "DependencyViolation")


_TABLE = CodeTable(
    provider=PROVIDER_LABEL, price=_PRICE,
    is_quota=lambda code: code.startswith(("QuotaExceed.", "QuotaExceeded.")),
    quota_names=_QUOTA_NAMES, how_quota=HOW_QUOTA_ALIYUN,
    is_capacity=CAPACITY_CODES.__contains__, not_found_what=_NOT_FOUND_WHAT,
    invalid_prefixes=_INVALID_PREFIXES)


@dataclass(frozen=True)
class CallContext(ZoneOrRegion):
    """What gpudesk was asking for, so the message can name it."""

    action: str  # API action, e.g. "RunInstances"
    region: str
    zone: str = ""
    instance_type: str = ""
    max_price: float | None = None
    resource: str = ""  # the id or name the call was about (for not-found)
    key_id: str = ""  # masked AccessKey ID, for the auth messages
    product: str = "ecs"  # "ecs" (2014-05-26) or "vpc" (2016-04-28): the RAM action's prefix


def is_throttle(code: str) -> bool:
    """Throttling and its sub-codes: worth a retry."""
    return code in _THROTTLE or code.startswith("Throttling.")


error = error_with_detail  # the name the provider calls it by


def map_error(code: str, message: str, ctx: CallContext) -> base.ProviderError:
    """The ProviderError for ECS error ``code`` answered to the call ``ctx`` describes."""
    detail = detail_of(code, message)
    provider = PROVIDER_LABEL
    if code in _UNKNOWN_KEY:
        return base.ProviderError("auth", MSG_UNKNOWN_KEY, detail, key_id=ctx.key_id or "?")
    if code in _BAD_SECRET:
        return base.ProviderError("auth", MSG_BAD_SECRET, detail, key_id=ctx.key_id or "?")
    if code in _CLOCK:
        return base.ProviderError("clock", base.MSG_CLOCK, detail, provider=provider)
    if code in _PERMISSION or code.startswith("Forbidden."):
        return base.ProviderError("permission", MSG_RAM_VPC if ctx.product == "vpc" else MSG_RAM,
                                  detail, action=f"call {ctx.action}",
                                  permission=f"{ctx.product}:{ctx.action}")
    if code in _BALANCE:
        return error("permission", MSG_NO_BALANCE, detail)
    if is_throttle(code):
        return base.ProviderError("throttled", base.MSG_THROTTLED, detail, provider=provider)
    if code in _NETWORK:
        return error("network", base.MSG_NETWORK, detail, provider=provider)
    return refusal(_TABLE, code, detail, ctx)
