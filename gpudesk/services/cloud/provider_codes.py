"""What the clouds' error codes have in common, once.

Aliyun's and Tencent's answers differ in spelling, not in meaning: a spot price
too low, a quota too small, no stock, a missing resource, a bad parameter, or
something else. Each ``*_errors`` module lists its own codes in a
:class:`CodeTable`; :func:`refusal` turns a code into the same ProviderError
for both, so the two mappings cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from gpudesk.services.cloud.providers import base


class ZoneOrRegion:
    """Mixed into each cloud's ``CallContext``: where a call was aimed, in the messages'
    words (the zone when it named one, else the region)."""

    zone: str
    region: str

    @property
    def where(self) -> str:
        return self.zone or self.region


class RefusedCall(base.CallPlace, Protocol):
    """The parts of a cloud's ``CallContext`` the shared messages name."""

    @property
    def max_price(self) -> float | None: ...

    @property
    def resource(self) -> str: ...


@dataclass(frozen=True)
class CodeTable:
    """One cloud's codes, by what they mean; checked in this order."""

    provider: str  # the cloud's label, marked for translation (translated when shown)
    price: frozenset[str]
    is_quota: Callable[[str], bool]
    quota_names: Mapping[str, str]  # code → the quota's name in the cloud's console
    how_quota: str  # where to ask for more
    is_capacity: Callable[[str], bool]
    not_found_what: Mapping[str, str]  # code → what the cloud has not got
    invalid_prefixes: tuple[str, ...]


def refusal(table: CodeTable, code: str, detail: str, ctx: RefusedCall) -> base.ProviderError:
    """The ProviderError for a code that is not about keys, clock, permission or throttling."""
    provider = table.provider
    if code in table.price:
        price = "?" if ctx.max_price is None else f"{ctx.max_price:g} CNY/h"
        return base.price_error(detail, price, ctx)
    if code in table.quota_names or table.is_quota(code):
        quota = table.quota_names.get(code, code.split(".", 1)[-1])
        return base.quota_error(detail, provider, ctx, quota, table.how_quota)
    if table.is_capacity(code):
        return base.capacity_error(detail, provider, ctx)
    if code in table.not_found_what:
        return base.not_found_error(detail, provider, ctx, table.not_found_what[code],
                                    ctx.resource)
    kind: base.ErrorKind = "invalid" if code.startswith(table.invalid_prefixes) else "other"
    return base.error_with_detail(kind, base.MSG_OTHER, detail, provider=provider)
