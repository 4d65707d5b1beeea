"""What the SDK-based providers (``tencent.py``, ``aliyun.py``) share, written once.

The options both take (endpoint, protocol, bundled regions and types, retries,
stop mode), the masked ``repr``, the region check, the retry-with-backoff loop
around one API call, ``verify``'s shape and the launch steps that mean the same
on both clouds (a gpudesk security group or none, the first zone in stock, the
answer of RunInstances).

What a cloud says in its own words stays in its module: how it signs and where
it sends, its error table (``<name>_errors``), its states and paging
(``<name>_parse``), what a stop keeps billing. Nothing here imports an SDK: the
window must start without them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any
from typing import Generic
from typing import NamedTuple
from typing import TypeVar

from gpudesk.services.cloud.providers import base

CtxT = TypeVar("CtxT")  # the cloud's CallContext: what gpudesk was asking for
SSH_GROUP_PREFIX = base.RESOURCE_PREFIX + "ssh-"
_GPU_IMAGE = "public Ubuntu image with a GPU driver"


class Refused(NamedTuple):
    """One try's refusal, in the cloud's words (its code and message)."""

    code: str
    message: str


def bundled_catalog(provider: base.ProviderName) -> tuple[list[str], set[str]]:
    """The regions and instance types the bundled catalog lists for ``provider``."""
    from gpudesk.services.cloud.catalog import load_catalog

    catalog = load_catalog()
    types = {o.instance_type for o in catalog.offers if o.provider == provider}
    return catalog.regions(provider), types


def ssh_group_name(cidr: str) -> str:
    """``gpudesk-ssh-203.0.113.7`` for 203.0.113.7/32: one group per allowed address."""
    return SSH_GROUP_PREFIX + cidr.split("/")[0].replace(":", "-")


class SdkProvider(Generic[CtxT]):
    """The plumbing of a provider that calls its cloud through the cloud's own SDK.

    A subclass names its cloud (``name``, ``label``), its defaults, and supplies
    ``_call`` (one signed API call, through :meth:`_retrying`), its error table
    (``_is_throttle``, ``_map_error``) and the Provider calls that differ.
    """

    name: base.ProviderName
    label: str  # the cloud's name in messages: "Tencent Cloud"
    default_stopped_mode: str  # what ``stop`` asks for unless told otherwise
    home_region: str  # where ``verify`` calls when no region is known
    need_group_message: str  # the refusal of a launch with neither group nor address

    def __init__(self, credentials: base.Credentials, *, endpoint: str | None = None,
                 protocol: str = "https", known_types: set[str] | None = None,
                 regions: list[str] | None = None,
                 sleep: Callable[[float], None] = time.sleep, max_tries: int = 4,
                 backoff_s: float = 1.0, stopped_mode: str | None = None) -> None:
        """``stopped_mode`` None: the cloud's ``default_stopped_mode``."""
        self._credentials = credentials
        self._endpoint = endpoint
        self._protocol = protocol
        if regions is None or known_types is None:
            bundled_regions, bundled_types = bundled_catalog(self.name)
            regions = bundled_regions if regions is None else regions
            known_types = bundled_types if known_types is None else known_types
        self._regions = list(regions)
        self._known_types = set(known_types)
        self._sleep = sleep
        self._max_tries = max(1, max_tries)
        self._backoff_s = backoff_s
        self._stopped_mode = self.default_stopped_mode if stopped_mode is None else stopped_mode
        self._clients: dict[tuple[str, str], Any] = {}  # (product, region) → SDK client
        self._lock = threading.Lock()
        # resource → the cloud's words when it last refused to delete it (cleanup reads it)
        self.refusals: dict[str, str] = {}

    def __repr__(self) -> str:  # never the secret: only the masked key id
        return (f"{type(self).__name__}(key_id={base.mask(self._credentials.key_id)!r}, "
                f"endpoint={self._endpoint or 'default'!r})")

    __str__ = __repr__

    # ------------------------------------------------------------------ the cloud's part

    def _call(self, ctx: CtxT, params: dict[str, Any],
              ok_codes: frozenset[str] = frozenset()) -> dict[str, Any]:
        raise NotImplementedError

    @staticmethod
    def _is_throttle(code: str) -> bool:
        raise NotImplementedError

    @staticmethod
    def _map_error(code: str, message: str, ctx: CtxT) -> base.ProviderError:
        raise NotImplementedError

    def _signed_ping(self, region: str) -> None:
        """A cheap signed call that only valid keys pass (DescribeRegions)."""
        raise NotImplementedError

    def _launch_check(self, region: str) -> tuple[base.LaunchCheck, str]:
        raise NotImplementedError

    def ensure_security_group(self, region: str, allow_from: str) -> str:
        raise NotImplementedError

    def zone_choices(self, region: str, instance_type: str,
                     market: base.Market = "on-demand") -> list[base.ZoneChoice]:
        raise NotImplementedError

    def describe(self, region: str, cloud_ids: list[str]) -> list[base.CloudInstance]:
        raise NotImplementedError

    # ------------------------------------------------------------------ plumbing

    def _retrying(self, ctx: CtxT, attempt: Callable[[], dict[str, Any] | Refused],
                  ok_codes: frozenset[str]) -> dict[str, Any]:
        """``attempt()`` until it answers: throttling retried with exponential backoff,
        any other refusal typed by the cloud's error table.

        A code in ``ok_codes`` (DryRunOperation, "already stopped") is an answer,
        returned as ``{"Code": code}``.
        """
        for tried in range(self._max_tries):
            answer = attempt()
            if not isinstance(answer, Refused):
                return answer
            if answer.code in ok_codes:
                return {"Code": answer.code}
            if self._is_throttle(answer.code) and tried + 1 < self._max_tries:
                self._sleep(self._backoff_s * 2 ** tried)
                continue
            raise self._map_error(answer.code, answer.message, ctx)
        raise AssertionError("unreachable")  # pragma: no cover

    def _check_region(self, region: str) -> None:
        if region not in self._regions:
            raise base.ProviderError("invalid", base.MSG_BAD_REGION, provider=self.label,
                                     region=region, choices=", ".join(sorted(self._regions)))

    def _try_delete(self, ctx: CtxT, params: dict[str, Any]) -> bool:
        """A refusal (still in use elsewhere, already gone) skips one resource, not the rest."""
        resource = str(getattr(ctx, "resource", ""))
        try:
            self._call(ctx, params)
        except base.ProviderError as err:
            if err.kind in ("auth", "clock", "network", "permission", "throttled"):
                raise
            self.refusals[resource] = err.detail or err.message()
            return False
        self.refusals.pop(resource, None)
        return True

    def _gpu_image(self, image: str, region: str) -> str:
        """``image``, or the refusal that the region has no public GPU image."""
        if not image:
            raise base.ProviderError("not-found", base.MSG_NOT_FOUND, provider=self.label,
                                     what=_GPU_IMAGE, name="'*GPU*'", region=region)
        return image

    # ------------------------------------------------------------------ Provider

    def regions(self) -> list[str]:
        return list(self._regions)

    def verify(self) -> base.Identity:
        """Neither cloud says which account a key belongs to: ``account`` is empty and
        ``principal`` is the masked key id; ``can_launch`` is the RunInstances dry run's."""
        region = self._regions[0] if self._regions else self.home_region
        self._signed_ping(region)
        check, detail = self._launch_check(region)
        return base.Identity(account="", principal=base.mask(self._credentials.key_id),
                             can_launch=check == "allowed", launch_check=check,
                             launch_detail=detail)

    def first_available_zone(self, region: str, instance_type: str,
                             market: base.Market = "on-demand") -> str:
        """The first zone that sells ``instance_type`` now, or why none does, zone by zone."""
        choices = self.zone_choices(region, instance_type, market)
        for choice in choices:
            if choice.sells:
                return choice.zone
        where = "; ".join(f"{c.zone}: {c.reason}" for c in choices) or region
        raise base.ProviderError("capacity", base.MSG_CAPACITY, provider=self.label,
                                 instance_type=instance_type, where=where)

    def _launch_place(self, request: base.LaunchRequest) -> tuple[str, str]:
        """(security group, zone) of a launch, after refusing a request that cannot be right.

        gpudesk launches only behind its own group (made for ``allow_from`` unless one is
        given); without a zone, the first that sells the type.
        """
        base.validate_request(self.name, request, self._regions, self._known_types)
        group = request.security_group
        if not group:
            if not request.allow_from:
                raise base.ProviderError("invalid", self.need_group_message)
            group = self.ensure_security_group(request.region, request.allow_from)
        zone = request.zone or self.first_available_zone(request.region, request.instance_type,
                                                          request.market)
        return group, zone

    def _launched(self, request: base.LaunchRequest, zone: str,
                  ids: list[str]) -> base.CloudInstance:
        """The machine RunInstances answered ``ids`` for, as described now (or pending)."""
        if not ids:
            raise base.error_with_detail("other", base.MSG_OTHER,
                                         "RunInstances answered no instance id",
                                         provider=self.label)
        described = self.describe(request.region, ids[:1])
        if described:
            return described[0]
        return base.CloudInstance(  # not listed yet: what we asked for, still pending
            provider=self.name, cloud_id=ids[0], region=request.region, zone=zone,
            instance_type=request.instance_type, state=base.STATE_PENDING,
            market=request.market, tags=request.tags())
