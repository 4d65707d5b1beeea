"""Live prices replace bundled ones only where a provider answered, in USD."""

from __future__ import annotations

from datetime import date

from gpudesk.services.cloud.catalog import load_catalog
from gpudesk.services.cloud.live_prices import merge_live
from gpudesk.services.cloud.providers.base import LiveOffer

TODAY = date(2026, 12, 2)


def _offer(catalog, provider: str, itype: str, region: str):  # type: ignore[no-untyped-def]
    return next(o for o in catalog.offers
                if (o.provider, o.instance_type, o.region) == (provider, itype, region))


def test_cheapest_available_zone_sets_the_spot_price_and_cny_is_converted() -> None:
    bundled = load_catalog()
    live = [
        LiveOffer("aws", "us-east-1", "us-east-1a", "g5.xlarge", "spot", 0.45, "USD"),
        LiveOffer("aws", "us-east-1", "us-east-1b", "g5.xlarge", "spot", 0.38, "USD"),
        LiveOffer("aws", "us-east-1", "us-east-1c", "g5.xlarge", "spot", 0.10, "USD",
                  available=False, reason="no capacity"),
        LiveOffer("tencent", "ap-guangzhou", "ap-guangzhou-3", "GN7.2XLARGE32", "on-demand",
                  8.64, "CNY"),
    ]
    merged, updated, sold_out = merge_live(bundled, live, cny_per_usd=7.2, today=TODAY)
    g5 = _offer(merged, "aws", "g5.xlarge", "us-east-1")
    before = _offer(bundled, "aws", "g5.xlarge", "us-east-1")
    assert g5.spot_price == 0.38 and g5.ondemand_price == before.ondemand_price
    assert g5.price_date == TODAY and "live from aws" in g5.price_source
    gn7 = _offer(merged, "tencent", "GN7.2XLARGE32", "ap-guangzhou")
    assert gn7.ondemand_price == 1.2  # 8.64 CNY / 7.2
    assert updated == 2 and sold_out == []
    # Offers nobody answered for keep their bundled price and date.
    other = _offer(merged, "aws", "g5.xlarge", "us-west-2")
    assert other == _offer(bundled, "aws", "g5.xlarge", "us-west-2")
    assert len(merged.offers) == len(bundled.offers)


def test_sold_out_everywhere_keeps_the_bundled_price_and_says_so() -> None:
    bundled = load_catalog()
    live = [LiveOffer("tencent", "ap-shanghai", "ap-shanghai-2", "GT4.4XLARGE96", "on-demand",
                      30.0, "CNY", available=False, reason="SOLD_OUT")]
    merged, updated, sold_out = merge_live(bundled, live, 7.2, TODAY)
    assert updated == 0 and sold_out == ["GT4.4XLARGE96 ap-shanghai"]
    assert merged.offers == bundled.offers
