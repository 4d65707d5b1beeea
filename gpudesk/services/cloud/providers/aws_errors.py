"""AWS error codes → gpudesk's typed ProviderError, in one table-tested function.

botocore raises ``ClientError`` for every answer AWS sends (the code is in
``response["Error"]["Code"]``) and its own ``BotoCoreError`` subclasses for
transport failures. Only the code decides the kind (except the clock: AWS
answers a skewed clock with ``SignatureDoesNotMatch``/``InvalidSignatureException``
and "Signature expired" in the message); the message is kept, scrubbed by
:func:`gpudesk.services.core.redact.redact`, in ``detail``.

Throttling is retried by botocore itself (``retries={"mode": "standard"}``,
exponential backoff with jitter); a throttle that reaches this module means
the retries ran out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from botocore.exceptions import BotoCoreError
from botocore.exceptions import ClientError
from botocore.exceptions import ConnectionError
from botocore.exceptions import ConnectTimeoutError
from botocore.exceptions import EndpointConnectionError
from botocore.exceptions import HTTPClientError
from botocore.exceptions import ReadTimeoutError

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.cloud.providers import base
from gpudesk.services.cloud.providers.base import MSG_NEED_GROUP as MSG_NEED_GROUP
from gpudesk.services.core.redact import redact

PROVIDER_LABEL = "AWS"
DETAIL_MAX = 300  # characters of a transport failure worth keeping

MSG_DISK_BELOW_IMAGE = QT_TRANSLATE_NOOP(
    "ProviderError", "The image {image} needs a disk of at least {minimum} GB; {disk_gb} GB "
    "is too small.")

_AUTH = frozenset({
    "InvalidClientTokenId", "SignatureDoesNotMatch", "AuthFailure", "UnrecognizedClientException",
    "InvalidAccessKeyId", "IncompleteSignature", "InvalidSignatureException", "ExpiredToken",
    "ExpiredTokenException", "InvalidToken", "MissingAuthenticationToken",
})
_CLOCK = frozenset({"RequestExpired", "RequestTimeTooSkewed", "RequestInTheFuture"})
_CLOCK_WORDS = ("signature expired", "request has expired", "time too skewed",
                "signature not yet current")
_PERMISSION = frozenset({"UnauthorizedOperation", "AccessDenied", "AccessDeniedException",
                         "UnauthorizedAccess"})
_THROTTLE = frozenset({"RequestLimitExceeded", "Throttling", "ThrottlingException",
                       "TooManyRequestsException", "ThrottledException",
                       "RequestThrottled", "RequestThrottledException", "SlowDown",
                       "EC2ThrottledException"})
_CAPACITY = frozenset({"InsufficientInstanceCapacity", "InsufficientHostCapacity",
                       "InsufficientReservedInstanceCapacity", "InsufficientCapacity",
                       "InsufficientCapacityOnHost",
                       "InsufficientFreeAddressesInSubnet", "SpotInstanceCapacityNotAvailable",
                       "InstanceTypeNotSupported"})
_PRICE = frozenset({"SpotMaxPriceTooLow"})
_QUOTA_INSTANCES = frozenset({"InstanceLimitExceeded", "VcpuLimitExceeded"})
_QUOTA_SPOT = frozenset({"MaxSpotInstanceCountExceeded", "MaxSpotFleetRequestCountExceeded"})
# Quotas that are not about machines; named as the Service Quotas console names them.
_QUOTA_OTHER: dict[str, tuple[str, str]] = {
    "KeyPairLimitExceeded": ("Key pairs per Region", "L-0263D0A3"),
    "SecurityGroupLimitExceeded": ("VPC security groups per Region", "L-E79EC296"),
    "RulesPerSecurityGroupLimitExceeded": ("Inbound or outbound rules per security group",
                                           "L-0EA8095F"),
    "VolumeLimitExceeded": ("Storage for General Purpose SSD (gp3) volumes, in TiB",
                            "L-7A658B76"),
}
_NOT_FOUND_WHAT: dict[str, str] = {
    "InvalidInstanceID.NotFound": "machine",
    "InvalidInstanceID.Malformed": "machine",
    "InvalidAMIID.NotFound": "image",
    "InvalidAMIID.Malformed": "image",
    "InvalidAMIID.Unavailable": "image",
    "ParameterNotFound": "image",
    "InvalidKeyPair.NotFound": "key pair",
    "InvalidGroup.NotFound": "security group",
    "InvalidGroupId.Malformed": "security group",
    "InvalidSecurityGroupID.NotFound": "security group",
    "InvalidVpcID.NotFound": "VPC",
    "VPCIdNotSpecified": "default VPC",
    "InvalidSubnetID.NotFound": "subnet",
    "InvalidZone.NotFound": "availability zone",
}
_INVALID_PREFIXES = ("InvalidParameter", "MissingParameter", "UnknownParameter",
                     "InvalidBlockDeviceMapping", "InvalidKeyPair.Format",
                     "InvalidKeyPair.Duplicate", "InvalidGroup.Duplicate",
                     "InvalidPermission.", "IdempotentParameterMismatch", "InvalidInstanceType",
                     "InvalidInput", "ValidationError", "ValidationException", "InvalidRequest",
                     "OperationNotPermitted", "IncorrectState", "IncorrectInstanceState",
                     "DependencyViolation")


@dataclass(frozen=True)
class CallContext:
    """What gpudesk was asking for, so the message can name it."""

    service: str  # "ec2", "sts", "ssm"
    action: str  # API action, e.g. "RunInstances"
    region: str
    zone: str = ""
    instance_type: str = ""
    market: base.Market = "on-demand"
    max_price: float | None = None
    resource: str = ""  # the id or name the call was about (for not-found)
    names: tuple[tuple[str, str], ...] = ()  # what → name, for calls naming several things

    @property
    def where(self) -> str:
        return self.zone or self.region


def quota_for(instance_type: str, market: base.Market) -> tuple[str, str]:
    """The Service Quotas name and code that limit ``instance_type`` in ``market``.

    EC2 counts running vCPUs per instance family group; GPU researchers meet
    the G/VT and P groups. Everything else falls in the Standard group.
    """
    family = instance_type.split(".", 1)[0].lower()
    spot = market == "spot"
    if family.startswith("p"):
        return (("All P Spot Instance Requests", "L-7212CCBC") if spot
                else ("Running On-Demand P instances", "L-417A185B"))
    if family.startswith(("g", "vt")):
        return (("All G and VT Spot Instance Requests", "L-3819A6DF") if spot
                else ("Running On-Demand G and VT instances", "L-DB2E81BA"))
    return (("All Standard (A, C, D, H, I, M, R, T, Z) Spot Instance Requests", "L-34B43A08")
            if spot else ("Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances",
                          "L-1216C47A"))


def detail_of(code: str, message: str) -> str:
    """The provider's words for the log and the details pane, never a secret.

    Code and message are scrubbed apart: "UnauthorizedOperation: You ..." reads
    to the scrubber like ``auth...: value`` and would lose the message's first word.
    """
    return f"{redact(code)}: {redact(message)}" if message else redact(code)


error = base.error_with_detail  # the name the provider calls it by


def is_clock(code: str, message: str) -> bool:
    lowered = message.lower()
    return code in _CLOCK or any(word in lowered for word in _CLOCK_WORDS)


def map_error(code: str, message: str, ctx: CallContext) -> base.ProviderError:
    """The ProviderError for AWS error ``code`` answered to the call ``ctx`` describes."""
    detail = detail_of(code, message)
    provider = PROVIDER_LABEL
    if is_clock(code, message):
        return base.ProviderError("clock", base.MSG_CLOCK, detail, provider=provider)
    if code in _AUTH:
        return base.ProviderError("auth", base.MSG_AUTH, detail, provider=provider)
    if code in _PERMISSION or code.startswith("UnauthorizedOperation"):
        return base.ProviderError("permission", base.MSG_PERMISSION, detail,
                                  action=f"call {ctx.action}",
                                  permission=f"{ctx.service}:{ctx.action}")
    if code in _THROTTLE:
        return base.ProviderError("throttled", base.MSG_THROTTLED, detail, provider=provider)
    if code in _PRICE:
        price = "(none)" if ctx.max_price is None else f"{ctx.max_price:g} USD/h"
        return base.price_error(detail, price, ctx)
    if code in _QUOTA_INSTANCES or code in _QUOTA_SPOT or code in _QUOTA_OTHER:
        if code in _QUOTA_OTHER:
            quota, quota_code = _QUOTA_OTHER[code]
        else:
            market: base.Market = "spot" if code in _QUOTA_SPOT else ctx.market
            quota, quota_code = quota_for(ctx.instance_type, market)
        return base.quota_error(detail, provider, ctx, quota, base.HOW_QUOTA_AWS,
                                code=quota_code)
    if code in _CAPACITY or (code == "Unsupported" and _about_placement(message)):
        return base.capacity_error(detail, provider, ctx)
    if code in _NOT_FOUND_WHAT:
        what = _NOT_FOUND_WHAT[code]
        return base.not_found_error(detail, provider, ctx, what,
                                    dict(ctx.names).get(what) or ctx.resource)
    if code.startswith(_INVALID_PREFIXES):
        return error("invalid", base.MSG_OTHER, detail, provider=provider)
    return error("other", base.MSG_OTHER, detail, provider=provider)


def _about_placement(message: str) -> bool:
    """``Unsupported`` names the zone or type when the machine just is not offered there."""
    lowered = message.lower()
    return "availability zone" in lowered or "instance type" in lowered


def from_exception(exc: Exception, ctx: CallContext) -> base.ProviderError:
    """Any botocore exception → ProviderError (network failures included)."""
    if isinstance(exc, ClientError):
        err = exc.response.get("Error", {})
        return map_error(str(err.get("Code", "") or "Unknown"), str(err.get("Message", "")), ctx)
    if isinstance(exc, (ConnectionError, HTTPClientError)):
        return error("network", base.MSG_NETWORK, _network_detail(exc), provider=PROVIDER_LABEL)
    # BotoCoreError, or botocore's ResponseParserError (a server that answered nonsense)
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    return error("other", base.MSG_OTHER, redact(text[:DETAIL_MAX]), provider=PROVIDER_LABEL)


_URL = re.compile(r"https?://[^\s\"']+")


def _network_detail(exc: BotoCoreError) -> str:
    """Short: the kind of failure and the host, not a page of urllib3 text."""
    kind = {EndpointConnectionError: "cannot connect", ConnectTimeoutError: "connect timed out",
            ReadTimeoutError: "no answer in time"}.get(type(exc), "connection failed")
    found = _URL.search(str(exc))
    return redact(f"{kind}: {found.group(0)}" if found else kind)


def error_code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))
