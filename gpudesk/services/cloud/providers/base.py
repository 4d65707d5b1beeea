"""The one interface every machine provider implements, and its typed errors.

Providers are *blocking* (boto3, the Tencent SDK and sockets all block); the
async services call them through ``asyncio.to_thread`` so the window never
waits on the network. Everything a provider returns is a plain dataclass, so
the ledger, the CLI and the window never see an SDK object.

Every cloud resource gpudesk creates carries ``TAG_MANAGED`` and, for
instances, ``TAG_LEDGER`` with the ledger id, so that reconciliation can find
it again after a crash even when the ledger never heard the answer.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from dataclasses import field
from typing import Any
from typing import Literal
from typing import NamedTuple
from typing import Protocol
from typing import runtime_checkable

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP

# Normalised instance states; providers map theirs onto these (re-exported here).
from gpudesk.services.core.machine_states import BILLING_STATES as BILLING_STATES
from gpudesk.services.core.machine_states import STATE_PENDING as STATE_PENDING
from gpudesk.services.core.machine_states import STATE_RUNNING as STATE_RUNNING
from gpudesk.services.core.machine_states import STATE_STOPPED as STATE_STOPPED
from gpudesk.services.core.machine_states import STATE_STOPPING as STATE_STOPPING
from gpudesk.services.core.machine_states import STATE_TERMINATED as STATE_TERMINATED
from gpudesk.services.core.redact import redact

ProviderName = Literal["aws", "tencent", "aliyun", "own"]
Market = Literal["on-demand", "spot"]
LaunchCheck = Literal["allowed", "denied", "unknown"]

TAG_MANAGED = "gpudesk"  # value "1" on everything gpudesk created
TAG_LEDGER = "gpudesk-ledger-id"  # the ledger id of the instance
RESOURCE_PREFIX = "gpudesk-"  # names of key pairs and security groups



@dataclass(frozen=True)
class Credentials:
    """What a provider needs to sign requests. Lives only in memory and the keyring."""

    provider: ProviderName
    key_id: str  # AWS access key id / Tencent SecretId / Aliyun AccessKey ID; shown masked
    secret: str
    session_token: str = ""  # temporary (STS) keys only

    def __repr__(self) -> str:  # never print the secret, even in a traceback's locals
        return f"Credentials(provider={self.provider!r}, key_id={mask(self.key_id)!r})"

    __str__ = __repr__


def mask(key_id: str) -> str:
    """``AKIA…WXYZ``: enough to recognise a key, not enough to use it."""
    return key_id if len(key_id) <= 8 else f"{key_id[:4]}…{key_id[-4:]}"


@dataclass(frozen=True)
class Identity:
    """The answer to "are these keys valid?"."""

    account: str  # AWS account id / Tencent owner (app) id
    principal: str  # ARN / sub-account uin: who the keys belong to
    can_launch: bool  # the permission check (a dry run) passed
    # "allowed" / "denied" (the cloud said so), or "unknown": the dry run could not be
    # made or answered something else; ``launch_detail`` then says what, in its words.
    launch_check: LaunchCheck = "allowed"
    launch_detail: str = ""


@dataclass(frozen=True)
class LaunchRequest:
    """One attempt to rent one machine; validated before any call."""

    ledger_id: str  # the ledger row written before the call; tagged on the machine
    region: str
    instance_type: str
    market: Market = "on-demand"
    zone: str = ""  # empty: let the provider choose
    max_price: float | None = None  # USD/hour (AWS) or CNY/hour (Tencent); spot only
    image_id: str = ""  # empty: look up the provider's GPU deep-learning image
    disk_gb: int = 100
    allow_from: str = ""  # CIDR that may reach port 22; must be a single address (/32, /128)
    key_name: str = ""  # key pair to attach (ensure_key_pair's answer)
    security_group: str = ""  # ensure_security_group's answer
    client_token: str = ""  # idempotency token: the same token never makes two machines
    # The machine's budget in the provider's currency (None: none) and what happens at it.
    # Providers turn it into their own cloud-side guard (EC2 shutdown behaviour, a CVM
    # ActionTimer, an ECS AutoReleaseTime) from budget ÷ ``price_per_hour``.
    budget: float | None = None
    on_budget: str = "stop"  # "stop" or "terminate"
    price_per_hour: float = 0.0  # in the provider's currency; 0: unknown (no cloud timer)
    cloud_timer_at: float | None = None  # unix s: when the cloud itself ends it (guard.plan)
    user_data: str = ""  # a first-boot script (cloud-init); providers base64 it as needed
    # The role the machine carries from its creation (instance_role.role_name; "" = none):
    # EC2 IamInstanceProfile, CVM CamRoleName, ECS RamRoleName, so the first-boot guard can
    # stop the bill through the cloud from the machine's first second.
    instance_role: str = ""

    def tags(self) -> dict[str, str]:
        return {TAG_MANAGED: "1", TAG_LEDGER: self.ledger_id}


@dataclass(frozen=True)
class CloudInstance:
    """One machine as the provider sees it now."""

    provider: ProviderName
    cloud_id: str
    region: str
    zone: str
    instance_type: str
    state: str  # one of the STATE_* values
    market: Market
    public_ip: str = ""
    launched_at: float | None = None  # unix seconds
    tags: dict[str, str] = field(default_factory=dict)
    reason: str = ""  # the cloud's own words on why it ended (LatestOperationErrorMsg, StateReason)
    state_since: float | None = None  # when the cloud says this state began (unix s); None: ?
    # The cloud's own word on what the machine bills while stopped: CVM StopChargingMode
    # (KEEP_CHARGING / STOP_CHARGING / NOT_APPLICABLE), ECS StoppedMode (KeepCharging /
    # StopCharging / Not-applicable); "" where the cloud has none (EC2: disk only).
    # machine_states.bills_compute reads it: a stopped machine bills its compute price
    # unless this word says it does not.
    stopped_mode: str = ""
    image_id: str = ""  # the image it was made from ("" where the cloud did not say)

    @property
    def ledger_id(self) -> str:
        return self.tags.get(TAG_LEDGER, "")


@dataclass(frozen=True)
class LiveOffer:
    """A price the provider quoted just now (refreshes the bundled catalog)."""

    provider: ProviderName
    region: str
    zone: str
    instance_type: str
    market: Market
    price_per_hour: float  # in the provider's billing currency
    currency: str  # "USD" or "CNY"
    available: bool = True
    reason: str = ""  # why not available (sold out, ...), provider's words


@dataclass(frozen=True)
class ZoneChoice:
    """One zone of a region and whether the cloud sells a type there now (its own answer)."""

    zone: str
    sells: bool
    reason: str = ""  # the cloud's words when it does not (SoldOutReason, "not offered")


class PricePoint(NamedTuple):
    """A price in force from ``at`` (epoch seconds), per hour, in ``currency``."""

    at: float
    price: float
    currency: str


@runtime_checkable
class Provider(Protocol):
    """A place machines come from. All methods block; call them off the GUI thread."""

    name: ProviderName

    def verify(self) -> Identity:
        """Check the keys with a cheap call; raise a ProviderError saying what is wrong."""

    def regions(self) -> list[str]:
        """Regions gpudesk may launch in (for failover and validation)."""

    def ensure_key_pair(self, region: str, name: str, public_key: str) -> str:
        """Import the public key under ``name`` unless present; return the name used."""

    def ensure_security_group(self, region: str, allow_from: str) -> str:
        """A gpudesk group opening port 22 to ``allow_from`` only; return its id."""

    def find_image(self, region: str, instance_type: str) -> str:
        """The provider's current GPU deep-learning image (looked up, not hard-coded)."""

    def run_instance(self, request: LaunchRequest) -> CloudInstance:
        """Ask for one machine, tagged with the request's tags. Idempotent by client token."""

    def describe(self, region: str, cloud_ids: list[str]) -> list[CloudInstance]:
        """The named machines; ones the provider no longer has are simply absent."""

    def list_managed(self, region: str) -> list[CloudInstance]:
        """Every machine in ``region`` tagged as gpudesk's, whatever its state."""

    def stop(self, region: str, cloud_id: str) -> None: ...

    def start(self, region: str, cloud_id: str) -> None: ...

    def terminate(self, region: str, cloud_id: str) -> None: ...

    def cleanup(self, region: str) -> list[str]:
        """Delete gpudesk key pairs and security groups no live machine uses; say which."""

    def live_offers(self, region: str) -> list[LiveOffer]:
        """Current prices and availability of the GPU types gpudesk knows."""

    def spot_price_history(self, region: str, zone: str, instance_type: str,
                           since: float) -> list[PricePoint]:
        """Every spot price change from ``since`` on,
        oldest first, starting with the price in force at ``since``. A cloud that keeps no
        history answers with the price now, stamped now; [] when it quotes none."""


# --------------------------------------------------------------------------- errors

ErrorKind = Literal[
    "auth", "permission", "clock", "network", "quota", "capacity", "price",
    "throttled", "not-found", "invalid", "keyring", "other",
]

# Kinds that mean "this zone/region/market cannot give you that machine now":
# the launcher moves on to the next candidate instead of giving up.
FAILOVER_KINDS = frozenset({"quota", "capacity", "price"})

MSG_AUTH = QT_TRANSLATE_NOOP(
    "ProviderError", "{provider} rejected the keys: the key id or secret is wrong, or the key "
    "was deleted. Check them in the {provider} console and add them again.")
MSG_PERMISSION = QT_TRANSLATE_NOOP(
    "ProviderError", "The keys are valid but may not {action}. Ask the account owner to grant "
    "{permission} to this user.")
MSG_CLOCK = QT_TRANSLATE_NOOP(
    "ProviderError", "{provider} refused the request because this computer's clock is off. "
    "Turn on automatic time setting and try again.")
MSG_NETWORK = QT_TRANSLATE_NOOP(
    "ProviderError", "Could not reach {provider} ({detail}). Check the internet connection "
    "or proxy and try again.")
MSG_QUOTA = QT_TRANSLATE_NOOP(
    "ProviderError", "Your {provider} quota \"{quota}\" in {region} is too small for "
    "{instance_type}. {how}")
MSG_CAPACITY = QT_TRANSLATE_NOOP(
    "ProviderError", "{provider} has no {instance_type} free in {where} right now.")
MSG_PRICE = QT_TRANSLATE_NOOP(
    "ProviderError", "Your maximum spot price {max_price} is below the market price in "
    "{where}; raise it or use on-demand.")
MSG_THROTTLED = QT_TRANSLATE_NOOP(
    "ProviderError", "{provider} is limiting the request rate; gpudesk retried and gave up. "
    "Wait a minute and try again.")
MSG_NOT_FOUND = QT_TRANSLATE_NOOP(
    "ProviderError", "{provider} has no {what} called {name} in {region}.")
MSG_OTHER = QT_TRANSLATE_NOOP(
    "ProviderError", "{provider} refused the request: {detail}")

MSG_NEED_GROUP = QT_TRANSLATE_NOOP(
    "ProviderError", "gpudesk launches only behind its own security group, which opens SSH to "
    "your address alone; give the address (--allow-from) so it can make one.")

HOW_QUOTA_AWS = QT_TRANSLATE_NOOP(
    "ProviderError", "Request more in the AWS console under Service Quotas → Amazon EC2 "
    "(quota code {code}); approval often takes a day.")
HOW_QUOTA_TENCENT = QT_TRANSLATE_NOOP(
    "ProviderError", "Request more in the Tencent Cloud console under CVM → Quotas, or open "
    "a ticket; approval often takes a day.")

# Refused before any call (kind "invalid").
MSG_BAD_REGION = QT_TRANSLATE_NOOP(
    "ProviderError", "'{region}' is not a {provider} region gpudesk knows; choose one of "
    "{choices}.")
MSG_BAD_TYPE = QT_TRANSLATE_NOOP(
    "ProviderError", "'{instance_type}' is not a GPU instance type gpudesk knows for "
    "{provider}.")
MSG_BAD_PRICE = QT_TRANSLATE_NOOP(
    "ProviderError", "The maximum spot price must be above zero (got {max_price}).")
MSG_PRICE_NEEDS_SPOT = QT_TRANSLATE_NOOP(
    "ProviderError", "A maximum price only applies to spot machines; add --spot.")
MSG_BAD_CIDR = QT_TRANSLATE_NOOP(
    "ProviderError", "SSH must be opened to one address only (like 203.0.113.7/32), not "
    "'{cidr}'.")
MSG_BAD_DISK = QT_TRANSLATE_NOOP(
    "ProviderError", "The disk must be between {minimum} and {maximum} GB (got {disk_gb}).")


class ProviderError(RuntimeError):
    """A refusal a researcher can act on.

    ``template`` is English with ``{placeholders}``; the window translates it in
    the ``ProviderError`` context before formatting (the core stays Qt-free).
    ``detail`` is the provider's own code and message, already scrubbed of
    secrets, for the log and the "details" part of an error dialog.
    """

    translation_context = "ProviderError"

    def __init__(self, kind: ErrorKind, template: str, detail: str = "", **values: Any) -> None:
        self.kind = kind
        self.template = template
        self.values = {"detail": detail, **values}  # templates may name {detail} too
        self.detail = detail
        super().__init__(self.message())

    def message(self) -> str:
        """English text; nested templates among the values are filled in too."""
        def fill(text: str) -> str:
            try:
                return text.format(**self.values)
            except (KeyError, IndexError, ValueError):
                return text

        values = {k: fill(v) if isinstance(v, str) else v for k, v in self.values.items()}
        try:
            return self.template.format(**values)
        except (KeyError, IndexError, ValueError):
            return self.template

    @property
    def failover(self) -> bool:
        return self.kind in FAILOVER_KINDS


# --------------------------------------------------------------------------- validation

_TYPE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.\-]{1,40}$")
MIN_DISK_GB, MAX_DISK_GB = 30, 16384


def login_user_of(provider: object, region: str, image_id: str) -> str:
    """Who logs in on ``image_id`` by the provider's own reading of the image (its
    ``login_user``: root on Alibaba Cloud's and most Tencent images, ubuntu on Ubuntu ones,
    an AMI's name on AWS); "" when the provider cannot say. The launcher and the reconciler
    ask the same question. Blocking; a cloud refusal raises (ProviderError)."""
    ask = getattr(provider, "login_user", None)
    return str(ask(region, image_id) or "") if ask is not None else ""


def single_address(cidr: str) -> str:
    """Normalise ``cidr`` to one address (/32 or /128) or refuse it; never 0.0.0.0/0."""
    try:
        net = ipaddress.ip_network(cidr.strip(), strict=False)
    except ValueError:
        raise ProviderError("invalid", MSG_BAD_CIDR, cidr=cidr) from None
    if net.num_addresses != 1 or net.is_unspecified:
        raise ProviderError("invalid", MSG_BAD_CIDR, cidr=cidr)
    return str(net)


def validate_request(
    provider: ProviderName, request: LaunchRequest, regions: list[str], known_types: set[str]
) -> None:
    """Refuse a request that cannot be right before it costs a call (or money)."""
    if request.region not in regions:
        raise ProviderError("invalid", MSG_BAD_REGION, provider=provider, region=request.region,
                            choices=", ".join(sorted(regions)))
    if not _TYPE_RE.match(request.instance_type) or request.instance_type not in known_types:
        raise ProviderError("invalid", MSG_BAD_TYPE, provider=provider,
                            instance_type=request.instance_type)
    if request.max_price is not None:
        if request.market != "spot":
            raise ProviderError("invalid", MSG_PRICE_NEEDS_SPOT)
        if not request.max_price > 0:
            raise ProviderError("invalid", MSG_BAD_PRICE, max_price=request.max_price)
    if not MIN_DISK_GB <= request.disk_gb <= MAX_DISK_GB:
        raise ProviderError("invalid", MSG_BAD_DISK, minimum=MIN_DISK_GB, maximum=MAX_DISK_GB,
                            disk_gb=request.disk_gb)
    if request.allow_from:
        single_address(request.allow_from)


# --------------------------------------------------------------------------- SDK errors
# Shared by the SDK-based providers (tencent_errors, aliyun_errors).

def detail_of(code: str, message: str) -> str:
    """``[Code] message`` for the log and the details pane, never a secret.

    Not ``Code: message``: redact() would read ``AuthFailure.X: …`` as an
    ``auth: value`` pair and blank the cloud's explanation.
    """
    return redact(f"[{code}] {message}" if message else f"[{code}]")


def error_with_detail(kind: ErrorKind, template: str, detail: str, **values: object
                      ) -> ProviderError:
    """A ProviderError whose template may name ``{detail}`` too.

    ``ProviderError(kind, template, detail, **values)`` binds a ``detail=``
    keyword to its own parameter, so MSG_NETWORK's and MSG_OTHER's
    ``{detail}`` placeholder is filled in here, after construction.
    """
    err = ProviderError(kind, template, detail, **values)
    if "{detail}" in template:
        err.values["detail"] = detail
        err.args = (err.message(),)
    return err


# --------------------------------------------------------------------------- refusals
# The answers every cloud's error table words alike (aws_errors, tencent_errors,
# aliyun_errors): only the codes that lead to them differ.

class CallPlace(Protocol):
    """Where a refused call was aimed: each cloud's ``CallContext`` has these."""

    @property
    def region(self) -> str: ...

    @property
    def instance_type(self) -> str: ...

    @property
    def where(self) -> str: ...


def price_error(detail: str, max_price: str, ctx: CallPlace) -> ProviderError:
    """The spot market is above the maximum price (``max_price`` in words, with its unit)."""
    return ProviderError("price", MSG_PRICE, detail, max_price=max_price, where=ctx.where)


def quota_error(detail: str, provider: str, ctx: CallPlace, quota: str, how: str,
                **values: object) -> ProviderError:
    """A quota too small for the machine; ``how`` says where to ask for more."""
    return ProviderError("quota", MSG_QUOTA, detail, provider=provider, quota=quota,
                         region=ctx.region, instance_type=ctx.instance_type or "this machine",
                         how=how, **values)


def capacity_error(detail: str, provider: str, ctx: CallPlace) -> ProviderError:
    """No such machine free where it was asked for (the launcher fails over)."""
    return ProviderError("capacity", MSG_CAPACITY, detail, provider=provider,
                         instance_type=ctx.instance_type or "such machine", where=ctx.where)


def not_found_error(detail: str, provider: str, ctx: CallPlace, what: str,
                    name: str) -> ProviderError:
    """The cloud has no ``what`` called ``name`` in the call's region."""
    return ProviderError("not-found", MSG_NOT_FOUND, detail, provider=provider, what=what,
                         name=name or "?", region=ctx.region)


# The things a refusal names ({what}, {quota} of MSG_NOT_FOUND and the quota messages),
# marked here so the window translates them inside the translated sentence (issue 31: no
# "GPU deep-learning image" in a Chinese sentence).
WHAT_WORDS = (
    QT_TRANSLATE_NOOP("ProviderError", "machine"),
    QT_TRANSLATE_NOOP("ProviderError", "image"),
    QT_TRANSLATE_NOOP("ProviderError", "key pair"),
    QT_TRANSLATE_NOOP("ProviderError", "key pairs"),
    QT_TRANSLATE_NOOP("ProviderError", "security group"),
    QT_TRANSLATE_NOOP("ProviderError", "security groups"),
    QT_TRANSLATE_NOOP("ProviderError", "default VPC"),
    QT_TRANSLATE_NOOP("ProviderError", "subnet"),
    QT_TRANSLATE_NOOP("ProviderError", "vSwitch"),
    QT_TRANSLATE_NOOP("ProviderError", "vSwitches"),
    QT_TRANSLATE_NOOP("ProviderError", "region"),
    QT_TRANSLATE_NOOP("ProviderError", "availability zone"),
    QT_TRANSLATE_NOOP("ProviderError", "resource"),
    QT_TRANSLATE_NOOP("ProviderError", "launch template"),
    QT_TRANSLATE_NOOP("ProviderError", "Auto Scaling group"),
    QT_TRANSLATE_NOOP("ProviderError", "GPU deep-learning image"),
    QT_TRANSLATE_NOOP("ProviderError", "public Ubuntu image with a GPU driver"),
    QT_TRANSLATE_NOOP("ProviderError", "spot instances"),
    QT_TRANSLATE_NOOP("ProviderError", "spot instances of this type"),
    QT_TRANSLATE_NOOP("ProviderError", "prepaid instances"),
    QT_TRANSLATE_NOOP("ProviderError", "CVM instances"),
)
