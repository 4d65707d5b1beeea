"""AWS list prices from recorded Price List offer files; the bundled catalog is built from
recorded sources; `offers --refresh --json` says where each price comes from.

No network: the recorded files are served from 127.0.0.1 with the price list's own paths.
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pytest
from fixtures_aws import aws  # noqa: F401
from fixtures_aws import moto_server  # noqa: F401
from fixtures_keyring import memory_keyring  # noqa: F401
from fixtures_tencent import tencent  # noqa: F401
from fixtures_tencent import tencent_creds  # noqa: F401
from fixtures_tencent import tencent_server  # noqa: F401
from local_get import serve_get

from gpudesk.cli.entry import main
from gpudesk.services.cloud import aws_price_list
from gpudesk.services.cloud import credentials
from gpudesk.services.cloud.accounts import TENCENT_ENDPOINT_ENV
from gpudesk.services.cloud.catalog import Catalog
from gpudesk.services.cloud.catalog import load_catalog
from gpudesk.services.cloud.live_prices import apply_cache
from gpudesk.services.cloud.live_prices import prices_for_ranking

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
    # moto's DescribeSpotPriceHistory quotes a constant 0.00001 where it knows the type:
    # under 5 % of on-demand, not believed (spot_sanity), so ranked by on-demand.
    g5 = rows["g5.xlarge"]
    assert (g5["price_source"], g5["spot_price"]) == ("live", None)
    assert g5["price_per_hour"] > 0.5 and "spot: none believed" in g5["price_note"]
    assert "under 5% of the on-demand" in g5["price_note"]
    # moto lacks p3.2xlarge: no quote, so "no spot price", ranked by on-demand (3.06).
    p3 = rows["p3.2xlarge"]
    assert p3["spot_price"] is None and p3["price_per_hour"] == 3.06
    assert p3["price_source"] == "live"  # its on-demand came from the price list just now


# --------------------------------------------------------------------------- every region

HEADER = _lines("AmazonEC2-eu-west-1.csv")[5]  # the price list's own column header
PUBLISHED = "2026-11-01"


def _offer_file(region: str, prices: dict[str, float]) -> bytes:
    """An EC2 offer file for ``region`` in the price list's CSV form: its metadata rows,
    its header, one on-demand Linux row per type, and rows the parser must skip."""
    columns = next(csv.reader([HEADER]))
    rows = ['"FormatVersion","v1.0"', '"Disclaimer","stand-in"',
            f'"Publication Date","{PUBLISHED}T00:00:00Z"', '"Version","20261101000000"',
            '"OfferCode","AmazonEC2"', HEADER]
    for n, (itype, price) in enumerate(sorted(prices.items())):
        for os_name, factor in (("Linux", 1.0), ("Windows", 1.2)):
            row = {"SKU": f"SKU{region}{n}{os_name}", "TermType": "OnDemand", "Unit": "Hrs",
                   "PricePerUnit": f"{price * factor:.4f}", "Currency": "USD",
                   "Product Family": "Compute Instance", "Instance Type": itype,
                   "Tenancy": "Shared", "Operating System": os_name,
                   "License Model": "No License required", "CapacityStatus": "Used",
                   "Pre Installed S/W": "NA", "Region Code": region}
            out = io.StringIO()
            csv.writer(out, quoting=csv.QUOTE_ALL).writerow([row.get(c, "") for c in columns])
            rows.append(out.getvalue().strip())
    return ("\n".join(rows) + "\n").encode()


@pytest.fixture
def every_region_price_list(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, float]]:
    """A stand-in price list serving every AWS region of the catalog with every type the
    catalog lists there (at 90 % of the bundled price, so a refreshed price shows); the
    data-transfer files answer 404. Yields (region/type → price served)."""
    served: dict[str, float] = {}
    by_region: dict[str, dict[str, float]] = {}
    for o in load_catalog().offers:
        if o.provider == "aws" and o.ondemand_price is not None:
            price = round(o.ondemand_price * 0.9, 4)
            by_region.setdefault(o.region, {})[o.instance_type] = price
            served[f"{o.region}/{o.instance_type}"] = price

    def answer(path: str) -> tuple[int, bytes]:
        parts = path.strip("/").split("/")  # offers/v1.0/aws/OFFER/current/REGION/index.csv
        if len(parts) == 7 and parts[3] == "AmazonEC2" and parts[5] in by_region:
            return 200, _offer_file(parts[5], by_region[parts[5]])
        return 404, b"not found"

    with serve_get(answer) as url:
        monkeypatch.setenv(aws_price_list.BASE_ENV, url)
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        yield served


def test_refresh_prices_every_catalog_region_without_an_account(  # type: ignore[no-untyped-def]
        every_region_price_list, memory_keyring, gpudesk_home, capsys) -> None:  # noqa: F811
    bundled = [o for o in load_catalog().offers if o.provider == "aws"]
    estimates = [o for o in bundled if o.region == "eu-west-1" and o.price_kind == "estimate"]
    assert len(estimates) == 9  # the rows
    assert main([*OFFERS, "--refresh", "--provider", "aws"]) == 0  # no AWS keys anywhere
    out = json.loads(capsys.readouterr().out)
    rows = out["offers"]
    assert {r["region"] for r in rows} == {"us-east-1", "us-west-2", "eu-west-1"}
    assert len(rows) == len(bundled)
    assert {r["price_source"] for r in rows} == {"live"}  # none "estimate", none "bundled"
    for r in rows:
        assert r["price_per_hour"] == every_region_price_list[
            f"{r['region']}/{r['instance_type']}"]
        # price_source names where the price came from: the region's file and its date
        assert (f"AWS Price List {os.environ[aws_price_list.BASE_ENV]}/offers/v1.0/aws/"
                f"AmazonEC2/current/{r['region']}/index.csv, published {PUBLISHED}"
                in r["price_note"])
        assert "spot: not asked (no account)" in r["price_note"] and r["spot_price"] is None
    assert out["refresh_errors"] == {}  # the missing data-transfer files cost no prices


def test_refresh_with_an_aws_account_quotes_spot_only_where_ec2_sells_it(  # type: ignore[no-untyped-def]
        every_region_price_list, aws, memory_keyring, gpudesk_home, capsys) -> None:  # noqa: F811
    credentials.save_credentials(aws.credentials)
    assert main([*OFFERS, "--refresh", "--provider", "aws", "--spot"]) == 0
    rows = json.loads(capsys.readouterr().out)["offers"]
    assert len(rows) == len([o for o in load_catalog().offers if o.provider == "aws"])
    sold_somewhere = 0
    for region in ("us-east-1", "us-west-2", "eu-west-1"):
        offered = {o["InstanceType"] for o in aws.client("ec2", region)
                   .describe_instance_type_offerings(LocationType="availability-zone")
                   ["InstanceTypeOfferings"]}
        for r in (r for r in rows if r["region"] == region):
            # a spot quote only where EC2's spot price history (its offerings) has the type;
            # moto's quote is $0.00001, under 5 % of on-demand, so it is said and not used
            sold = r["instance_type"] in offered
            assert r["spot_price"] is None
            assert ("spot: none believed, aws's 1e-05 USD/h" in r["price_note"]) == sold, (
                region, r["instance_type"])
            if not sold:
                # not sold as spot: ranked by its on-demand price, from the price list
                assert r["price_per_hour"] == every_region_price_list[
                    f"{region}/{r['instance_type']}"]
                assert "spot: none, aws quoted no spot price here" in r["price_note"]
            sold_somewhere += sold
    assert 0 < sold_somewhere < len(rows)  # some sold as spot, some not


def test_tencent_refresh_quotes_spot_only_where_cvm_sells_it(  # type: ignore[no-untyped-def]
        every_region_price_list, tencent, tencent_creds, memory_keyring, monkeypatch,  # noqa: F811
        gpudesk_home, capsys) -> None:
    from dataclasses import replace

    from tencent_standin import NO_SPOT

    from gpudesk.services.cloud.price_cache import save_cache
    from gpudesk.services.core.paths import cache_dir

    monkeypatch.setenv(TENCENT_ENDPOINT_ENV, f"http://{tencent.endpoint}")
    credentials.save_credentials(tencent_creds)
    # An earlier refresh kept a spot price for GT4.4XLARGE96 in Guangzhou (as the issue's
    # rows showed one): a cloud that now lists no SPOTPAID item there must clear it.
    catalog = load_catalog()
    stale = Catalog(catalog.gpus, tuple(
        replace(o, price_kind="live", spot_price=1.0)
        if (o.instance_type, o.region) == ("GT4.4XLARGE96", "ap-guangzhou") else o
        for o in catalog.offers))
    save_cache(cache_dir(), stale)
    assert main([*OFFERS, "--provider", "tencent", "--spot"]) == 0
    before = {(r["instance_type"], r["region"]): r
              for r in json.loads(capsys.readouterr().out)["offers"]}
    assert before[("GT4.4XLARGE96", "ap-guangzhou")]["spot_price"] == 1.0
    assert main([*OFFERS, "--refresh", "--provider", "tencent", "--spot"]) == 0
    rows = {(r["instance_type"], r["region"]): r
            for r in json.loads(capsys.readouterr().out)["offers"]}
    assert len(rows) == 24
    for (itype, region), r in rows.items():
        assert r["price_source"] == "live"
        if (region, itype) in NO_SPOT:
            assert r["spot_price"] is None, (itype, region)
            assert "spot: none, tencent quoted no spot price here" in r["price_note"]
            assert r["price_per_hour"] == round(tencent.price(
                "", itype, "POSTPAID_BY_HOUR") / 7.2, 6)  # ranked by on-demand
        else:
            # the cheapest zone's SPOTPAID quote, converted at 7.2 CNY/USD
            assert r["spot_price"] == round(tencent.price("", itype, "SPOTPAID") / 7.2, 6)
    assert {("ap-shanghai", "PNV4.7XLARGE116"), ("ap-guangzhou", "GT4.4XLARGE96"),
            ("ap-shanghai", "GT4.4XLARGE96"), ("ap-beijing", "PNV4.56XLARGE932")} <= NO_SPOT
    # the next run (no refresh) shows the same from the cache: no spot price comes back
    assert main([*OFFERS, "--provider", "tencent", "--spot"]) == 0
    cached = {(r["instance_type"], r["region"]): r
              for r in json.loads(capsys.readouterr().out)["offers"]}
    assert cached[("GT4.4XLARGE96", "ap-guangzhou")]["spot_price"] is None


def test_the_windows_refresh_with_no_account_reads_every_aws_region(  # type: ignore[no-untyped-def]
        every_region_price_list, tmp_path) -> None:
    """What Tools → Refresh prices runs when no cloud has keys: the price list alone."""
    import asyncio

    from gpudesk.services.cloud.live_prices import refresh_prices

    def no_keys(name: str) -> object:
        raise AssertionError(f"no provider may be built without keys ({name})")

    report = asyncio.run(refresh_prices(load_catalog(), [], 7.2, no_keys,  # type: ignore[arg-type]
                                        price_list=True, cache=tmp_path))
    aws_offers = [o for o in report.catalog.offers if o.provider == "aws"]
    assert {o.price_kind for o in aws_offers} == {"live"} and report.errors == {}
    assert report.not_listed == []
    assert {o.region for o in aws_offers} == {"us-east-1", "us-west-2", "eu-west-1"}
    assert all(aws_price_list.load(tmp_path, r) is not None
               for r in ("us-east-1", "us-west-2", "eu-west-1"))


def test_a_type_the_regions_file_does_not_list_keeps_its_price_and_is_named(  # type: ignore[no-untyped-def]
        price_list, tmp_path) -> None:
    """The recorded eu-west-1 file lists 3 of its 12 types: the other 9 keep their marked
    estimates, and the report names them instead of passing over them in silence."""
    import asyncio

    from gpudesk.services.cloud.live_prices import refresh_prices

    report = asyncio.run(refresh_prices(load_catalog(), [], 7.2, price_list=True,
                                        cache=tmp_path))
    assert sorted(report.not_listed) == sorted(
        f"aws {o.instance_type} eu-west-1" for o in load_catalog().offers
        if o.provider == "aws" and o.region == "eu-west-1" and o.price_kind == "estimate")
    assert len(report.not_listed) == 9
