"""S3's storage price from AWS's public price list (offer AmazonS3), with its source and
date; "unknown" with the reason where the file is missing, malformed or offline, and for
COS/OSS, which have no public price list.

No network: a stand-in serves AmazonS3 offer files in the real CSV form (five metadata
rows, the header, one row per price dimension; https://docs.aws.amazon.com/
awsaccountbilling/latest/aboutv2/reading-service-price-list-file-for-services.html) on
127.0.0.1 at the price list's own paths, through ``GPUDESK_AWS_PRICE_LIST_URL``.
"""
# ruff: noqa: F811 - fixtures imported from fixtures_* arrive as parameters

from __future__ import annotations

import argparse
import csv
import io
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from dataclasses import field
from datetime import date
from typing import Any

import pytest
from fixtures_aws import aws  # noqa: F401
from fixtures_aws import moto_server  # noqa: F401
from fixtures_keyring import MemoryKeyring  # noqa: F401
from fixtures_keyring import memory_keyring  # noqa: F401
from fixtures_storage import StoreEnv  # noqa: F401
from fixtures_storage import cos_server  # noqa: F401
from fixtures_storage import oss_server  # noqa: F401
from fixtures_storage import store_env  # noqa: F401
from local_get import serve_get
from PySide6.QtWidgets import QLabel
from test_storage_outputs import seed_run

from gpudesk.cli import spend as cli_spend
from gpudesk.cli.entry import main
from gpudesk.services.cloud import aws_price_list
from gpudesk.services.cloud.credentials import save_credentials
from gpudesk.services.money import spend
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.runs.detached import NodeRun
from gpudesk.services.runs.detached import RunRecord
from gpudesk.services.storage import buckets
from gpudesk.services.storage import outputs
from gpudesk.services.storage import pricing
from gpudesk.services.storage import s3_price_list
from gpudesk.services.storage import usage
from gpudesk.ui.machines.instances_page import InstancesPage

GIB = 1 << 30
PUBLISHED = "2026-11-20T18:12:41Z"

# The header of the AmazonS3 offer's CSV: the price columns the docs name first, then the
# product attributes, as the price list writes them (title case; usageType, operation).
HEADER = ["SKU", "OfferTermCode", "RateCode", "TermType", "PriceDescription",
          "EffectiveDate", "StartingRange", "EndingRange", "Unit", "PricePerUnit", "Currency",
          "Product Family", "serviceCode", "Location", "Location Type", "Availability",
          "Storage Class", "Volume Type", "Group", "Group Description", "Transfer Type",
          "From Location", "To Location", "usageType", "operation", "Durability",
          "Region Code", "From Region Code", "To Region Code"]


def _row(**cells: str) -> list[str]:
    row = {"TermType": "OnDemand", "Currency": "USD", "serviceCode": "AmazonS3",
           "EffectiveDate": "2026-11-01", "OfferTermCode": "JRTCKXETXF"} | cells
    unknown = set(row) - set(HEADER)
    assert not unknown, unknown
    return [row.get(h, "") for h in HEADER]


def _storage(prefix: str, region: str, cls: str, volume: str, usage_type: str, start: str,
             end: str, price: str) -> list[str]:
    # S3's file leaves Product Family empty on many rows: gpudesk must not need it.
    return _row(SKU=f"S{usage_type}{start}", StartingRange=start, EndingRange=end,
                Unit="GB-Mo", PricePerUnit=price, **{
                    "Storage Class": cls, "Volume Type": volume,
                    "usageType": prefix + usage_type, "Region Code": region,
                    "PriceDescription": f"${price} per GB-Month of storage used"})


def _request(prefix: str, region: str, group: str, usage_type: str, price: str) -> list[str]:
    return _row(SKU=f"R{group}", StartingRange="0", EndingRange="Inf", Unit="Requests",
                PricePerUnit=price, **{"Product Family": "API Request", "Group": group,
                                       "usageType": prefix + usage_type,
                                       "Region Code": region})


def _transfer(prefix: str, region: str, start: str, end: str, price: str) -> list[str]:
    return _row(SKU=f"T{start}", StartingRange=start, EndingRange=end, Unit="GB",
                PricePerUnit=price, **{"Product Family": "Data Transfer",
                                       "Transfer Type": "AWS Outbound", "To Location": "External",
                                       "usageType": prefix + "DataTransfer-Out-Bytes",
                                       "From Region Code": region})


def offer_file(region: str = "us-east-1", *, transfer: bool = False,
               standard: bool = True, extra: tuple[list[str], ...] = ()) -> bytes:
    """An AmazonS3 offer file for ``region``. The figures are this test's own, shaped like
    the public file; the tests check which row is taken, not what AWS charges."""
    prefix = "" if region == "us-east-1" else {"us-west-2": "USW2-", "eu-west-1": "EU-"}[region]
    out = io.StringIO()
    w = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    w.writerow(["FormatVersion", "v1.0"])
    w.writerow(["Disclaimer", "This pricing list is for informational purposes only."])
    w.writerow(["Publication Date", PUBLISHED])
    w.writerow(["Version", "20261120181241"])
    w.writerow(["OfferCode", "AmazonS3"])
    w.writerow(HEADER)
    rows = [
        # Glacier, Deep Archive and Standard-IA first: cheaper, and never S3 Standard
        _storage(prefix, region, "Archive", "Amazon Glacier", "TimedStorage-GlacierByteHrs",
                 "0", "Inf", "0.0036000000"),
        _storage(prefix, region, "Archive", "Glacier Deep Archive", "TimedStorage-GDA-ByteHrs",
                 "0", "Inf", "0.0009900000"),
        _storage(prefix, region, "Infrequent Access", "Standard - Infrequent Access",
                 "TimedStorage-SIA-ByteHrs", "0", "Inf", "0.0125000000"),
        # S3 Standard's higher tiers before its first
        _storage(prefix, region, "General Purpose", "Standard", "TimedStorage-ByteHrs",
                 "512000", "Inf", "0.0210000000"),
        _storage(prefix, region, "General Purpose", "Standard", "TimedStorage-ByteHrs",
                 "51200", "512000", "0.0220000000"),
        _request(prefix, region, "S3-API-SIA-Tier1", "Requests-SIA-Tier1", "0.0000100000"),
        _request(prefix, region, "S3-API-Tier1", "Requests-Tier1", "0.0000050000"),
        _request(prefix, region, "S3-API-Tier2", "Requests-Tier2", "0.0000004000"),
    ]
    if standard:
        rows.append(_storage(prefix, region, "General Purpose", "Standard",
                             "TimedStorage-ByteHrs", "0", "51200", "0.0230000000"))
    if transfer:  # the free first 100 GB, the first paid tier, a cheaper later one
        rows += [_transfer(prefix, region, "10240", "51200", "0.0850000000"),
                 _transfer(prefix, region, "0", "100", "0.0000000000"),
                 _transfer(prefix, region, "100", "10240", "0.0900000000")]
    for r in rows + list(extra):
        w.writerow(r)
    return out.getvalue().encode()


@dataclass
class PriceList:
    """The stand-in: offer files by (offer, region); every path asked, in order."""

    url: str = ""
    files: dict[tuple[str, str], tuple[int, bytes]] = field(default_factory=dict)
    asked: list[str] = field(default_factory=list)

    def path(self, region: str) -> str:
        return f"/offers/v1.0/aws/AmazonS3/current/{region}/index.csv"


@pytest.fixture
def price_list(monkeypatch: pytest.MonkeyPatch) -> Iterator[PriceList]:
    stand_in = PriceList()

    def answer(path: str) -> tuple[int, bytes]:
        stand_in.asked.append(path)
        parts = path.strip("/").split("/")  # offers/v1.0/aws/OFFER/current/REGION/index.csv
        if len(parts) != 7 or parts[:3] != ["offers", "v1.0", "aws"] or parts[6] != "index.csv":
            return 404, b"<Error><Code>NoSuchKey</Code></Error>"
        return stand_in.files.get((parts[3], parts[5]), (404, b"<Error>NoSuchKey</Error>"))

    with serve_get(answer) as url:
        stand_in.url = url
        monkeypatch.setenv(aws_price_list.BASE_ENV, url)
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        yield stand_in


# --------------------------------------------------------------------------- the file


def test_the_first_tier_of_s3_standard_is_taken_not_glacier_ia_or_a_higher_tier() -> None:
    lines = offer_file("us-west-2").decode().splitlines()
    read = s3_price_list.parse_offer_csv(lines, "us-west-2", "u", fetched_at=1.0)
    assert (read.storage_gb_month, read.published, read.url) == (0.023, "2026-11-20", "u")
    assert (read.tier1_request, read.tier2_request) == (0.000005, 0.0000004)  # not SIA's
    assert read.transfer_out_gb is None  # this file carries no data out
    with_out = s3_price_list.parse_offer_csv(
        offer_file("us-west-2", transfer=True).decode().splitlines(), "us-west-2", "u")
    assert with_out.transfer_out_gb == 0.09  # the first paid tier: not 0, not 0.085


def test_a_file_without_one_first_tier_standard_price_is_refused() -> None:
    def parse(data: bytes) -> None:
        s3_price_list.parse_offer_csv(data.decode().splitlines(), "us-east-1", "u")

    with pytest.raises(ValueError, match="0 first-tier"):
        parse(offer_file(standard=False))  # Glacier, IA and higher tiers only
    other = _storage("", "us-east-1", "General Purpose", "Standard", "TimedStorage-ByteHrs",
                     "0", "51200", "0.0250000000")
    with pytest.raises(ValueError, match="2 first-tier"):
        parse(offer_file(extra=(other,)))  # two figures: no guessing which
    with pytest.raises(ValueError, match="not an AWS price list"):
        parse(b"<html><body>Service Unavailable</body></html>")
    with pytest.raises(ValueError, match="not AmazonS3"):
        parse(offer_file().replace(b'"OfferCode","AmazonS3"', b'"OfferCode","AmazonEC2"'))


# --------------------------------------------------------------------------- read and cache


def test_the_price_comes_with_currency_source_url_and_publication_date(
        price_list: PriceList) -> None:
    price_list.files[("AmazonS3", "us-east-1")] = (200, offer_file())
    before = pricing.storage_price("aws", "us-east-1")
    assert before.price is None and "has not been read for this region" in before.reason
    read = s3_price_list.refresh("us-east-1")
    assert read is not None and price_list.asked == [price_list.path("us-east-1")]
    found = pricing.storage_price("aws", "us-east-1").price
    assert found is not None
    url = f"{price_list.url}{price_list.path('us-east-1')}"
    assert (found.amount, found.currency, found.as_of) == (0.023, "USD", date(2026, 11, 20))
    assert found.source == f"AWS Price List {url} (read {date.today().isoformat()})"
    assert pricing.monthly_cost(10 * GIB, found) == pytest.approx(0.23)
    requests = pricing.request_prices("aws", "us-east-1")
    assert requests.tier1.price is not None and requests.tier2.price is not None
    assert (requests.tier1.price.amount, requests.tier2.price.amount) == (0.000005, 0.0000004)
    assert requests.tier1.price.source == found.source
    # this file has no data out: the bundled AWS figure stays, with its own date
    out = pricing.data_out_price("aws", "us-east-1").price
    assert out is not None and (out.amount, out.as_of) == (0.09, date(2025, 6, 1))


def test_data_out_from_the_offer_when_it_has_it(price_list: PriceList) -> None:
    price_list.files[("AmazonS3", "us-west-2")] = (200, offer_file("us-west-2", transfer=True))
    assert s3_price_list.refresh("us-west-2") is not None
    out = pricing.data_out_price("aws", "us-west-2").price
    assert out is not None and (out.amount, out.as_of) == (0.09, date(2026, 11, 20))
    assert "AmazonS3/current/us-west-2/index.csv" in out.source


def test_the_cache_is_reused_for_a_day_and_kept_when_a_refresh_fails(
        price_list: PriceList) -> None:
    price_list.files[("AmazonS3", "eu-west-1")] = (200, offer_file("eu-west-1"))
    first = s3_price_list.refresh("eu-west-1")
    assert s3_price_list.refresh("eu-west-1") == first  # within the day: not asked again
    assert len(price_list.asked) == 1
    s3_price_list.ensure_fresh(["eu-west-1"])
    assert len(price_list.asked) == 1
    # the file is now broken: a forced refresh keeps the last good read and says so
    price_list.files[("AmazonS3", "eu-west-1")] = (503, b"Slow Down")
    assert s3_price_list.refresh("eu-west-1", max_age_s=0) == first
    assert len(price_list.asked) == 2
    found = pricing.storage_price("aws", "eu-west-1").price
    assert found is not None and found.amount == 0.023 and found.as_of == date(2026, 11, 20)
    assert "failed: HTTPError" in found.source
    # a good read again clears the note
    price_list.files[("AmazonS3", "eu-west-1")] = (200, offer_file("eu-west-1"))
    assert s3_price_list.refresh("eu-west-1", max_age_s=0) is not None
    again = pricing.storage_price("aws", "eu-west-1").price
    assert again is not None and "failed" not in again.source


@pytest.mark.parametrize(("status", "body", "why"), [
    (404, b"<Error><Code>NoSuchKey</Code></Error>", "HTTPError"),
    (200, b"<html>Service Unavailable</html>", "not an AWS price list offer file"),
    (200, offer_file(standard=False), "0 first-tier S3 Standard storage prices"),
])
def test_a_missing_or_malformed_offer_is_unknown_with_the_reason(
        price_list: PriceList, status: int, body: bytes, why: str) -> None:
    price_list.files[("AmazonS3", "us-east-1")] = (status, body)
    assert s3_price_list.refresh("us-east-1") is None
    lookup = pricing.storage_price("aws", "us-east-1")
    assert lookup.price is None
    assert lookup.reason.startswith("No storage (GB-month) price for aws in us-east-1: AWS's "
                                    "public price list (AmazonS3) could not be read (")
    assert why in lookup.reason
    assert pricing.request_prices("aws", "us-east-1").tier1.price is None
    assert not s3_price_list.cache_file(s3_price_list.cache_dir(), "us-east-1").exists()


def test_cos_and_oss_stay_unknown_there_is_no_public_price_list() -> None:
    for cloud, region in (("tencent", "ap-guangzhou"), ("aliyun", "cn-hangzhou")):
        lookup = pricing.storage_price(cloud, region)
        assert lookup.price is None
        assert lookup.reason == (f"No storage (GB-month) price for {cloud} in {region}: this "
                                 "cloud publishes no price list that can be read without an "
                                 "account, so gpudesk shows no figure rather than a guess.")
        assert pricing.request_prices(cloud, region).tier2.price is None


# --------------------------------------------------------------------------- where it shows


def _spend(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="gpudesk")
    cli_spend.add_parsers(parser.add_subparsers(dest="verb", required=True))
    args = parser.parse_args(argv)
    assert args.func(args) == 0


def test_gpudesk_spend_reads_the_price_list_when_not_cached(
        price_list: PriceList, capsys: pytest.CaptureFixture[str]) -> None:
    price_list.files[("AmazonS3", "us-east-1")] = (200, offer_file())
    start = spend.month_window(spend.month_key(time.time())).start
    assert start is not None
    usage.record_sample("run-s3", "aws", "us-east-1", 4 * GIB, at=start)
    _spend(["spend", "--json"])
    data = json.loads(capsys.readouterr().out)
    (row,) = data["storage"]["runs"]
    assert price_list.asked == [price_list.path("us-east-1")]
    assert row["storage_price"]["amount"] == 0.023 and row["storage_price"]["as_of"] == \
        "2026-11-20"
    assert row["storage_cost"] == pytest.approx(row["gib_months"] * 0.023, abs=1e-6)
    assert row["storage_cost"] > 0 and data["storage"]["complete"] is True
    _spend(["spend"])  # the cache answers now: the file is not asked again
    assert "at 0.023 USD/GB-month (AWS Price List http://127.0.0.1:" in capsys.readouterr().out
    assert len(price_list.asked) == 1


def test_gpudesk_spend_offline_says_why(capsys: pytest.CaptureFixture[str]) -> None:
    # conftest points the price list at a closed port on 127.0.0.1: as good as offline
    usage.record_sample("run-off", "aws", "us-east-1", GIB, at=time.time() - 60)
    _spend(["spend", "--json"])
    (row,) = json.loads(capsys.readouterr().out)["storage"]["runs"]
    assert row["storage_cost"] is None and row["storage_price"] is None
    assert "could not be read (URLError)" in row["storage_unknown_because"]


@pytest.mark.parametrize("store_env", ["aws"], indirect=True)
def test_outputs_json_gives_a_monthly_cost_once_the_price_is_known(
        store_env: StoreEnv, memory_keyring: MemoryKeyring, price_list: PriceList,
        capsys: pytest.CaptureFixture[str]) -> None:
    env = store_env
    price_list.files[("AmazonS3", env.region)] = (200, offer_file(env.region))
    client = env.client()
    store = buckets.ensure_bucket(client, env.target(), env.memory).store
    seed_run(client, store, "priced-run")
    save_credentials(env.creds)
    RunRecord(id="priced-run", project="/tmp/p", remote_project="~/p", script="train.py",
              args=[], nproc=1, nodes=[NodeRun("ssh://u@h", None, "~/gpudesk/runs/priced")],
              store_uri=str(store), store_region=env.region).save()
    assert main(["outputs", "priced-run", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    total = outputs.list_run(client, store, "priced-run").total_bytes
    assert total > 0 and data["currency"] == "USD"
    assert data["monthly_cost"] == pytest.approx(total / GIB * 0.023)
    assert price_list.asked == [price_list.path(env.region)]


def test_the_instances_storage_line_shows_the_cost_with_source_and_date(
        qtbot: Any, price_list: PriceList) -> None:
    price_list.files[("AmazonS3", "us-east-1")] = (200, offer_file())
    assert s3_price_list.refresh("us-east-1") is not None
    start = spend.month_window(spend.month_key(time.time())).start
    assert start is not None
    usage.record_sample("run-s3", "aws", "us-east-1", 2 * GIB, at=start)
    with Ledger() as ledger:
        page = InstancesPage(ledger)
        qtbot.addWidget(page)
        page.show()
        label = page.findChild(QLabel, "monthStorage")
        assert label is not None
        text = label.text()
    assert "the rest has no price" not in text and "cost unknown" not in text
    line = next(x for x in text.splitlines() if x.startswith("Run run-s3"))
    url = f"{price_list.url}{price_list.path('us-east-1')}"
    assert "GB-month × 0.023 USD = " in line
    assert line.endswith(f"USD (AWS Price List {url} (read {date.today().isoformat()}), "
                         "2026-11-20).")


def test_refresh_prices_in_the_window_reads_the_buckets_s3_prices(
        qtbot: Any, loop: Any, price_list: PriceList) -> None:
    from PySide6.QtCore import QCoreApplication
    from PySide6.QtCore import QEvent

    from gpudesk.services.cloud.catalog import load_catalog
    from gpudesk.services.core.settings import Settings
    from gpudesk.ui.shell.main_window import MainWindow

    price_list.files[("AmazonS3", "eu-west-1")] = (200, offer_file("eu-west-1"))
    start = spend.month_window(spend.month_key(time.time())).start
    assert start is not None
    usage.record_sample("run-eu", "aws", "eu-west-1", 3 * GIB, at=start)
    ledger = Ledger()
    window = MainWindow(Settings(language="en", welcomed=True), load_catalog(), ledger=ledger)
    try:
        page = window.instances
        label = page.findChild(QLabel, "monthStorage")
        assert label is not None and "has not been read for this region" in label.text()
        window.prices_action.trigger()  # Tools → Refresh prices from my clouds
        qtbot.waitUntil(lambda: not window.prices_runner.busy, timeout=20000)
        # read off the GUI thread, for the bucket's region only (no account needed)
        assert [p for p in price_list.asked if "AmazonS3" in p] == [price_list.path("eu-west-1")]
        qtbot.waitUntil(lambda: "× 0.023 USD" in label.text(), timeout=5000)
        assert "cost unknown" not in label.text()
    finally:
        window.close()
        window.deleteLater()
        QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
        ledger.close()
