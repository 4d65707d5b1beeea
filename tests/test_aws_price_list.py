"""AWS list prices from recorded Price List offer files; the bundled catalog is built from
recorded sources; `offers --refresh --json` says where each price comes from.

No network: the recorded files are served from 127.0.0.1 with the price list's own paths.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pytest
from fixtures_aws import aws, moto_server  # noqa: F401
from fixtures_keyring import memory_keyring  # noqa: F401
from fixtures_tencent import tencent, tencent_creds, tencent_server  # noqa: F401
from local_get import serve_get

from gpudesk.cli import main
from gpudesk.services.cloud import aws_price_list, credentials
from gpudesk.services.cloud.accounts import TENCENT_ENDPOINT_ENV
from gpudesk.services.cloud.catalog import load_catalog
from gpudesk.services.cloud.live_prices import apply_cache, prices_for_ranking

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ROOT / "catalog_sources" / "aws"
OFFERS = ["offers", "--model", "gpt2", "--batch", "1", "--seq", "512", "--precision",
          "amp-fp16", "--all", "--json"]


def _lines(name: str) -> list[str]:
    return (SOURCES / name).read_text("utf-8").splitlines()


def test_parse_keeps_on_demand_linux_shared_hours_gp3_and_data_out() -> None:
    ec2 = aws_price_list.parse_offer_csv(_lines("AmazonEC2-us-east-1.csv"), "us-east-1")
    assert ec2.published == "2025-06-01" and ec2.published_date == date(2025, 6, 1)
    # Windows (x1.18), dedicated (x1.1), SQL (x1.4) and reserved (x0.6) rows are skipped.
    assert ec2.ondemand["g5.xlarge"] == 1.006 and ec2.ondemand["g4dn.xlarge"] == 0.526
    assert ec2.ondemand["p5.48xlarge"] == 55.04 and len(ec2.ondemand) == 20
    assert ec2.storage_gb_month == 0.08  # gp3, not gp2's 0.10
    assert ec2.transfer_out_gb is None  # not in EC2's file
    both = aws_price_list.parse_offer_csv(_lines("AWSDataTransfer-us-east-1.csv"), "us-east-1",
                                          into=ec2)
    assert both.transfer_out_gb == 0.09 and both.ondemand == ec2.ondemand  # first paid tier
    eu = aws_price_list.parse_offer_csv(_lines("AmazonEC2-eu-west-1.csv"), "eu-west-1",
                                        {"g5.xlarge"})
    assert eu.ondemand == {"g5.xlarge": 1.123} and eu.storage_gb_month == 0.088


def test_not_an_offer_file_is_refused() -> None:
    with pytest.raises(ValueError):
        aws_price_list.parse_offer_csv(["<html>", "nope"], "us-east-1")


@pytest.fixture
def price_list(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The recorded files at the price list's own paths, on 127.0.0.1; the paths asked."""
    asked: list[str] = []

    def answer(path: str) -> tuple[int, bytes]:
        asked.append(path)
        parts = path.strip("/").split("/")  # offers/v1.0/aws/OFFER/current/REGION/..
        found = SOURCES / f"{parts[3]}-{parts[5]}.csv" if len(parts) == 7 else None
        if found is None or not found.is_file():
            return 404, b"not found"
        return 200, found.read_bytes()

    with serve_get(answer) as url:
        monkeypatch.setenv(aws_price_list.BASE_ENV, url)
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        yield asked


def test_fetch_reads_both_offer_files_and_caches_with_the_date(price_list, tmp_path) -> None:  # type: ignore[no-untyped-def]
    prices = aws_price_list.fetch_region("us-west-2", {"g6.xlarge"})
    assert price_list == ["/offers/v1.0/aws/AmazonEC2/current/us-west-2/index.csv",
                          "/offers/v1.0/aws/AWSDataTransfer/current/us-west-2/index.csv"]
    assert (prices.ondemand, prices.storage_gb_month, prices.transfer_out_gb) == (
        {"g6.xlarge": 0.8048}, 0.08, 0.09)
    aws_price_list.save(tmp_path, prices)
    assert aws_price_list.load(tmp_path, "us-west-2") == prices
    assert aws_price_list.load(tmp_path, "eu-west-1") is None


def test_the_bundled_catalog_is_what_the_recorded_sources_make() -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "build_catalog.py"),
                           "--check"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    catalog = load_catalog()
    assert all(o.spot_price is None for o in catalog.offers if o.provider in ("aws", "tencent"))
    g5 = next(o for o in catalog.offers if (o.instance_type, o.region) == ("g5.xlarge",
                                                                           "us-east-1"))
    assert g5.price_status == "bundled 2025-06-01" and "AWS Price List" in g5.price_source


def test_a_recorded_tencent_answer_sets_its_price(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    import build_catalog

    (tmp_path / "tencent").mkdir()
    item = {"InstanceType": "GN7.2XLARGE32", "InstanceChargeType": "POSTPAID_BY_HOUR",
            "Status": "SELL", "Price": {"UnitPrice": 8.2, "ChargeUnit": "HOUR"}}
    answer = {"Response": {"InstanceTypeQuotaSet": [
        {**item, "Zone": "ap-guangzhou-3", "Price": {"UnitPrice": 8.5}},
        {**item, "Zone": "ap-guangzhou-4"},
        {**item, "Zone": "ap-guangzhou-6", "Status": "SOLD_OUT", "Price": {"UnitPrice": 7.0}},
        {**item, "Zone": "ap-guangzhou-6", "InstanceChargeType": "SPOTPAID",
         "Price": {"UnitPrice": 2.0}}]}}
    (tmp_path / "tencent" / "DescribeZoneInstanceConfigInfos-ap-guangzhou.json").write_text(
        json.dumps(answer), "utf-8")
    offers, _rates = build_catalog.build(sources=tmp_path)
    row = next(line for line in offers.splitlines()
               if line.startswith("tencent,GN7.2XLARGE32,ap-guangzhou,"))
    assert ",1.142,," in row and "CNY 8.2/h" in row  # 8.2 / 7.18; spot never bundled


def test_offers_refresh_json_says_live_cached_or_bundled(  # type: ignore[no-untyped-def]
        price_list, tencent, tencent_creds, memory_keyring, monkeypatch, gpudesk_home,  # noqa: F811
        capsys) -> None:
    monkeypatch.setenv(TENCENT_ENDPOINT_ENV, f"http://{tencent.endpoint}")
    credentials.save_credentials(tencent_creds)
    assert main([*OFFERS, "--refresh", "--provider", "tencent"]) == 0
    tencent_rows = json.loads(capsys.readouterr().out)["offers"]
    assert {r["price_source"] for r in tencent_rows} == {"live"}
    gn7 = next(r for r in tencent_rows if (r["instance_type"], r["region"]) ==
               ("GN7.2XLARGE32", "ap-guangzhou"))
    assert gn7["price_per_hour"] == round(8.68 / 7.2, 6)  # the stand-in's CNY, at 7.2/USD
    assert main([*OFFERS, "--provider", "aws", "--region", "us-east-1", "--spot"]) == 0
    aws_rows = json.loads(capsys.readouterr().out)["offers"]
    # Refreshed from the price list before (no AWS account): kept, dated by the refresh.
    assert {r["price_source"] for r in aws_rows} == {f"cached {date.today().isoformat()}"}
    # No AWS account, so no spot quote: "no spot price", ranked by on-demand.
    assert all(r["spot_price"] is None for r in aws_rows)
    g5 = next(r for r in aws_rows if r["instance_type"] == "g5.xlarge")
    assert g5["price_per_hour"] == 1.006
    assert any(p.endswith("/us-east-1/index.csv") for p in price_list)


def test_without_refresh_or_cache_everything_is_bundled(tmp_path: Path) -> None:
    catalog, report = prices_for_ranking(load_catalog(), refresh=False, cache=tmp_path)
    assert report is None and catalog == apply_cache(load_catalog(), tmp_path)
    assert {o.price_kind for o in catalog.offers} == {"bundled", "estimate", "unpriced"}
    # a number with no published source is never shown as a bundled price
    for o in catalog.offers:
        assert (o.price_status.split()[0] == "estimate") == o.price_source.startswith("ESTIMATE")
    # and where none could be cited, there is no number at all (the Aliyun rows)
    aliyun = [o for o in catalog.offers if o.provider == "aliyun"]
    assert len(aliyun) == 21 and all(o.price_kind == "unpriced" and o.ondemand_price is None
                                     for o in aliyun)
    assert {o.price_status for o in aliyun} == {
        "no bundled price: refresh prices with your Alibaba Cloud account"}
    assert all(o.priced for o in catalog.offers if o.provider != "aliyun")


def test_storage_and_data_out_per_region_are_bundled() -> None:
    from gpudesk.services.money.region_rates import load_region_rates

    rates = load_region_rates()
    assert rates[("aws", "eu-west-1")].storage_per_gb_month == 0.088
    assert rates[("aws", "us-east-1")].storage_per_gb_month == 0.08
    assert {r.transfer_out_per_gb for r in rates.values()} == {0.09}
    assert all(r.price_date == date(2025, 6, 1) and "Price List" in r.source
               for r in rates.values())


def test_refresh_with_an_aws_account_quotes_spot_per_zone(  # type: ignore[no-untyped-def]
        price_list, aws, memory_keyring, gpudesk_home, capsys) -> None:  # noqa: F811
    credentials.save_credentials(aws.credentials)
    assert main([*OFFERS, "--refresh", "--provider", "aws", "--region", "us-east-1",
                 "--spot"]) == 0
    rows = {r["instance_type"]: r for r in json.loads(capsys.readouterr().out)["offers"]}
    # moto's DescribeSpotPriceHistory quotes a constant 0.00001 where it knows the type.
    g5 = rows["g5.xlarge"]
    assert (g5["price_source"], g5["spot_price"], g5["price_per_hour"]) == (
        "live", 0.00001, 0.00001)
    # moto lacks p3.2xlarge: no quote, so "no spot price", ranked by on-demand (3.06).
    p3 = rows["p3.2xlarge"]
    assert p3["spot_price"] is None and p3["price_per_hour"] == 3.06
    assert p3["price_source"] == "live"  # its on-demand came from the price list just now
