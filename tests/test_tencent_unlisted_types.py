"""Issue 30: a Tencent region that answered without a type sells it neither way.

CVM's DescribeZoneInstanceConfigInfos lists every type a region sells, pay-as-you-go and
spot. A refresh whose answer for a region has no item of a type drops that row (no
on-demand estimate, no spot price), also from the cache the next run reads; a later
answer that lists it again brings it back. Regions and types that were listed keep their
live prices.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from fixtures_tencent import tencent  # noqa: F401
from fixtures_tencent import tencent_creds  # noqa: F401
from fixtures_tencent import tencent_server  # noqa: F401
from tencent_standin import TencentStandin

from gpudesk.services.cloud.catalog import Catalog
from gpudesk.services.cloud.catalog import load_catalog
from gpudesk.services.cloud.live_prices import refresh_prices
from gpudesk.services.cloud.price_cache import apply_cache
from gpudesk.services.cloud.providers.base import Credentials
from gpudesk.services.cloud.providers.tencent import TencentProvider

GONE = ("tencent", "PNV4.7XLARGE116", "ap-shanghai")


def _keys(catalog: Catalog) -> set[tuple[str, str, str]]:
    return {(o.provider, o.instance_type, o.region) for o in catalog.offers}


def _tencent_only() -> Catalog:
    catalog = load_catalog()
    return Catalog(catalog.gpus, tuple(o for o in catalog.offers if o.provider == "tencent"))


def test_a_type_the_region_does_not_list_is_dropped_and_stays_dropped(
        tencent: TencentStandin, tencent_creds: Credentials,  # noqa: F811
        tmp_path: Path) -> None:
    tencent.unlisted.add(("ap-shanghai", "PNV4.7XLARGE116"))
    provider = TencentProvider(tencent_creds, endpoint=tencent.endpoint, protocol="http")
    catalog = _tencent_only()
    assert GONE in _keys(catalog)

    report = asyncio.run(refresh_prices(catalog, ["tencent"], 7.2, lambda _n: provider,
                                        cache=tmp_path))
    assert report.errors == {}
    assert _keys(report.catalog) == _keys(catalog) - {GONE}
    # the same type elsewhere, and the region's other types, keep their live prices
    rows = {(o.instance_type, o.region): o for o in report.catalog.offers}
    assert rows[("PNV4.7XLARGE116", "ap-guangzhou")].price_kind == "live"
    assert rows[("PNV4.7XLARGE116", "ap-guangzhou")].spot_price is not None
    assert rows[("PNV4.56XLARGE932", "ap-shanghai")].price_kind == "live"
    assert "tencent PNV4.7XLARGE116 ap-shanghai" in report.not_listed

    # the next run, without asking: the cache leaves the row out too (no bundled estimate)
    cached = apply_cache(catalog, tmp_path)
    assert GONE not in _keys(cached)
    assert all(o.price_kind == "cached" for o in cached.offers)

    # the region lists it again: a refresh from the cached catalog brings the row back
    tencent.unlisted.clear()
    again = asyncio.run(refresh_prices(cached, ["tencent"], 7.2, lambda _n: provider,
                                       cache=tmp_path))
    back = {(o.instance_type, o.region): o for o in again.catalog.offers}
    assert back[("PNV4.7XLARGE116", "ap-shanghai")].price_kind == "live"
    assert GONE in _keys(apply_cache(catalog, tmp_path))
