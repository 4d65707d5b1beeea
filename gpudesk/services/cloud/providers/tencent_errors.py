"""Tencent Cloud error codes → gpudesk's typed ProviderError, in one table-tested function.

The SDK raises ``TencentCloudSDKException(code, message, requestId)`` for API
errors and for transport failures (``ClientNetworkError``); the codes come
from the public CVM/VPC error lists (``tencentcloud/cvm/v20170312/errorcodes.py``
and the common errors every API shares). Only the code decides the kind; the
message is kept, scrubbed, in ``detail``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.cloud.provider_codes import CodeTable
from gpudesk.services.cloud.provider_codes import ZoneOrRegion
from gpudesk.services.cloud.provider_codes import refusal
from gpudesk.services.cloud.providers import base
from gpudesk.services.cloud.providers.base import MSG_NEED_GROUP as MSG_NEED_GROUP
from gpudesk.services.cloud.providers.base import detail_of as detail_of
from gpudesk.services.cloud.providers.base import error_with_detail
from gpudesk.services.cloud.providers.sdk_provider import Refused

PROVIDER_LABEL = QT_TRANSLATE_NOOP(
    "ProviderError", "Tencent Cloud")  # translated when shown

MSG_NEED_SPOT_PRICE = QT_TRANSLATE_NOOP(
    "ProviderError", "Tencent Cloud quotes no on-demand price for {instance_type} in {where} to "
    "bid with; give a maximum spot price.")

# What a stop leaves billing, in CVM's words (StopChargingMode); the ledger's "stop-billing".
MSG_STOPPED_NO_CHARGE = QT_TRANSLATE_NOOP(
    "ProviderError", "stopped with STOP_CHARGING: CPU, GPU and memory no longer bill; the "
    "cloud disks, bandwidth and image still do.")
MSG_STOPPED_KEEPS_CHARGING = QT_TRANSLATE_NOOP(
    "ProviderError", "stopped with {mode}: Tencent Cloud bills the machine as if it were "
    "running until it is started and stopped without charge, or terminated.")
# Said before a stop (and when CVM refuses STOP_CHARGING): the stop cannot end the bill.
MSG_STOP_CANNOT_STOP_CHARGING = QT_TRANSLATE_NOOP(
    "ProviderError", "Tencent Cloud cannot stop charging {name} while it is stopped ({why}): "
    "a stop keeps billing it at its full price. Terminate it to end the bill.")
# A stop answered "already stopped" while the machine still charges (an OS shutdown).
MSG_ALREADY_STOPPED_CHARGING = QT_TRANSLATE_NOOP(
    "ProviderError", "{name} is already stopped, but Tencent Cloud still charges it as if it "
    "were running ({mode}): a shutdown from inside the machine does not stop the charge. "
    "Start it and stop it from gpudesk, or terminate it, to end the bill.")
WHY_TYPE_REFUSES = QT_TRANSLATE_NOOP(
    "ProviderError", "CVM does not offer it for this machine")

_AUTH = frozenset({
    "AuthFailure.SecretIdNotFound", "AuthFailure.SignatureFailure", "AuthFailure.InvalidSecretId",
    "AuthFailure.TokenFailure", "AuthFailure.InvalidAuthorization", "AuthFailure",
    "InvalidCredential",  # the SDK's own refusal of an empty key, before any call
})
_CLOCK = frozenset({"AuthFailure.SignatureExpire"})
_PERMISSION_PREFIXES = ("UnauthorizedOperation", "AuthFailure.UnauthorizedOperation",
                        "AuthFailure.MFAFailure", "OperationDenied")
_NETWORK = frozenset({"ClientNetworkError", "ServerNetworkError"})
_PRICE = frozenset({"InvalidParameterValue.InsufficientPrice"})
_CAPACITY_EXTRA = frozenset({"InvalidParameterValue.InsufficientOffering",
                             "InvalidParameter.InvalidCloudDiskSoldOut"})
# Quota codes and the name a researcher finds in the console.
_QUOTA_NAMES: dict[str, str] = {
    "LimitExceeded.InstanceQuota": "CVM instances",
    "LimitExceeded.CvmInstanceQuota": "CVM instances",
    "InstancesQuotaLimitExceeded": "CVM instances",
    "LimitExceeded.SpotQuota": "spot instances of this type",
    "LimitExceeded.UserSpotQuota": "spot instances",
    "LimitExceeded.PrepayQuota": "prepaid instances",
    "LimitExceeded.SingleUSGQuota": "security groups",
    "ResourceInsufficient.InsufficientGroupQuota": "security groups",
    "InvalidKeyPair.LimitExceeded": "key pairs",
}
_NOT_FOUND_WHAT: dict[str, str] = {
    "InvalidInstanceId.NotFound": "machine",
    "InvalidInstanceId.Malformed": "machine",
    "ResourceNotFound.InvalidInstanceIdNotFound": "machine",
    "InvalidImageId.NotFound": "image",
    "InvalidImageId.Malformed": "image",
    "InvalidKeyPairId.NotFound": "key pair",
    "InvalidParameterValue.KeyPairNotFound": "key pair",
    "ResourceNotFound.KeyPairNotFound": "key pair",
    "InvalidSecurityGroupId.NotFound": "security group",
    "InvalidSgId.Malformed": "security group",
    "InvalidSecurityGroupID.NotFound": "security group",  # VPC spells it "ID"
    "InvalidSecurityGroupID.Malformed": "security group",
    "ResourceNotFound": "resource",
}
_INVALID_PREFIXES = ("InvalidParameter", "InvalidZone", "InvalidRegion", "UnsupportedRegion",
                     "MissingParameter", "UnknownParameter", "InvalidPublicKey",
                     "InvalidKeyPairName", "InvalidInstanceType", "InvalidClientToken",
                     "InvalidAction", "UnsupportedOperation", "InvalidFilter")


_TABLE = CodeTable(
    provider=PROVIDER_LABEL, price=_PRICE,
    is_quota=lambda code: code.startswith("LimitExceeded.") and "Quota" in code,
    quota_names=_QUOTA_NAMES, how_quota=base.HOW_QUOTA_TENCENT,
    is_capacity=lambda code: (code.startswith(("ResourcesSoldOut", "ResourceInsufficient"))
                              or code in _CAPACITY_EXTRA),
    not_found_what=_NOT_FOUND_WHAT, invalid_prefixes=_INVALID_PREFIXES)


@dataclass(frozen=True)
class CallContext(ZoneOrRegion):
    """What gpudesk was asking for, so the message can name it."""

    service: str  # "cvm" or "vpc"
    action: str  # API action, e.g. "RunInstances"
    region: str
    zone: str = ""
    instance_type: str = ""
    max_price: float | None = None
    resource: str = ""  # the id or name the call was about (for not-found)


def sdk_answer(send: Callable[[], Any]) -> dict[str, Any] | Refused:
    """The ``Response`` of one SDK call (``send``: ``client.call_json(action, params)``), or
    what refused it: the SDK's error code, a transport failure (``ClientNetworkError``) or an
    answer without a Response (``ServerNetworkError``), for ``SdkProvider._retrying``."""
    from tencentcloud.common.exception.tencent_cloud_sdk_exception import TencentCloudSDKException

    try:
        data = send()
    except TencentCloudSDKException as exc:
        return Refused(str(exc.code or "ClientError"), str(exc.message or ""))
    except Exception as exc:  # noqa: BLE001 - transport errors the SDK lets through
        return Refused("ClientNetworkError", f"{type(exc).__name__}: {exc}")
    answer = data.get("Response") if isinstance(data, dict) else None
    if not isinstance(answer, dict):
        return Refused("ServerNetworkError", "answer without a Response")
    return answer


def is_throttle(code: str) -> bool:
    """RequestLimitExceeded and its sub-codes (per uin, per IP, global): worth a retry."""
    return code == "RequestLimitExceeded" or code.startswith("RequestLimitExceeded.")


error = error_with_detail  # the name the provider calls it by


def map_error(code: str, message: str, ctx: CallContext) -> base.ProviderError:
    """The ProviderError for Tencent error ``code`` answered to the call ``ctx`` describes."""
    detail = detail_of(code, message)
    provider = PROVIDER_LABEL
    if code in _AUTH:
        return base.ProviderError("auth", base.MSG_AUTH, detail, provider=provider)
    if code in _CLOCK:
        return base.ProviderError("clock", base.MSG_CLOCK, detail, provider=provider)
    if code.startswith(_PERMISSION_PREFIXES):
        return base.ProviderError("permission", base.MSG_PERMISSION, detail,
                                  action=f"call {ctx.action}",
                                  permission=f"{ctx.service}:{ctx.action}")
    if code in _NETWORK:
        return error("network", base.MSG_NETWORK, detail, provider=provider)
    if is_throttle(code):
        return base.ProviderError("throttled", base.MSG_THROTTLED, detail, provider=provider)
    if code == "UnsupportedOperation.StoppedModeStopCharging":
        return base.ProviderError("invalid", MSG_STOP_CANNOT_STOP_CHARGING, detail,
                                  name=ctx.resource or "the machine", why=WHY_TYPE_REFUSES)
    return refusal(_TABLE, code, detail, ctx)
