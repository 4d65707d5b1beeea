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


def test_a_spot_price_comes_only_from_this_refreshs_quote_where_spot_was_asked() -> None:
    from dataclasses import replace

    from gpudesk.services.cloud.catalog import Catalog

    bundled = load_catalog()
    # An earlier answer left spot prices on two offers (as a cache does).
    earlier = Catalog(bundled.gpus, tuple(
        replace(o, spot_price=0.5) if (o.instance_type, o.region) in (
            ("GT4.4XLARGE96", "ap-guangzhou"), ("GN7.2XLARGE32", "ap-beijing")) else o
        for o in bundled.offers))
    live = [LiveOffer("tencent", "ap-guangzhou", "ap-guangzhou-3", "GT4.4XLARGE96",
                      "on-demand", 28.8, "CNY")]  # on-demand only: no SPOTPAID item
    merged, _, _ = merge_live(earlier, live, 7.2, TODAY,
                              spot_asked={("tencent", "ap-guangzhou")})
    gt4 = _offer(merged, "tencent", "GT4.4XLARGE96", "ap-guangzhou")
    assert gt4.spot_price is None and gt4.ondemand_price == 4.0
    assert "spot: none, tencent quoted no spot price here" in gt4.price_source
    # Beijing was not asked this time (no answer): what it had stays, under its old label.
    assert _offer(merged, "tencent", "GN7.2XLARGE32", "ap-beijing").spot_price == 0.5
    # Asked, and the type is not even listed on demand: no spot price either.
    merged, _, _ = merge_live(earlier, [], 7.2, TODAY, spot_asked={("tencent", "ap-beijing")})
    assert _offer(merged, "tencent", "GN7.2XLARGE32", "ap-beijing").spot_price is None
