"""The cost of data is money too (issue 32): a dataset's storage a month, its one-time upload,
copies between regions and machine downloads, each priced with source and date or "price
not known (why)", the same words in ``gpudesk spend`` and on the window's spend line."""
# ruff: noqa: F811 - fixtures imported from test modules arrive as parameters

from __future__ import annotations

import json
from datetime import UTC
from datetime import datetime
from typing import Any

import pytest
from PySide6.QtWidgets import QLabel
from test_dataset_copy import ROWS
from test_storage_price_list import PriceList  # noqa: F401
from test_storage_price_list import offer_file  # noqa: F401
from test_storage_price_list import price_list  # noqa: F401

from gpudesk.cli.entry import main
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.storage import data_costs
from gpudesk.services.storage import s3_price_list
from gpudesk.services.storage import usage
from gpudesk.services.storage.datasets import DataFile
from gpudesk.services.storage.datasets import Dataset
from gpudesk.services.storage.uri import parse_uri
from gpudesk.ui.machines.instances_page import InstancesPage

GIB = 1 << 30
NOV = datetime(2026, 11, 5, 12, tzinfo=UTC).timestamp()
DEC = datetime(2026, 12, 2, 12, tzinfo=UTC).timestamp()


def _dataset(uri: str, region: str, sizes: tuple[int, ...]) -> Dataset:
    files = tuple(DataFile(f"f{i}", n, f"{i:064x}") for i, n in enumerate(sizes))
    return Dataset("imagenet", parse_uri(uri), region, files, "", "", "0" * 64)


def test_which_traffic_is_free_is_said_with_the_clouds_own_page() -> None:
    for cloud in ("aws", "tencent", "aliyun"):
        up = data_costs.upload_charge(cloud)
        assert up.per_gb == 0.0 and up.source.startswith("https://") and up.as_of
    same = data_costs.download_charge("aws", "us-east-1", "aws", "us-east-1")
    assert (same.per_gb, same.source) == (0.0, "https://aws.amazon.com/s3/pricing/ "
                                               "(Data Transfer)")
    cos = data_costs.download_charge("tencent", "ap-guangzhou", "tencent", "ap-guangzhou")
    assert cos.per_gb == 0.0 and "436/33776" in cos.source
    # OSS: the machines use its public endpoint, billed as internet traffic, no price read
    oss = data_costs.download_charge("aliyun", "cn-beijing", "aliyun", "cn-beijing")
    assert oss.per_gb is None and "public endpoint" in oss.reason and oss.currency == "CNY"
    # an own machine fetches over the internet: S3's data-out price with its source
    own = data_costs.download_charge("aws", "us-east-1", "own", "")
    assert (own.per_gb, own.as_of and own.as_of.isoformat()) == (0.09, "2025-06-01")
    assert own.cost(2 * GIB) == pytest.approx(0.18)


def test_the_months_transfers_are_summed_per_dataset_and_route_and_priced(
        price_list: PriceList) -> None:
    price_list.files[("AmazonS3", "us-east-1")] = (200, offer_file(extra=ROWS))
    s3_price_list.refresh("us-east-1")
    rec = data_costs.record
    assert rec(data_costs.UPLOAD, "imagenet", "aws", "us-east-1", 3 * GIB, at=NOV)
    assert not rec(data_costs.UPLOAD, "imagenet", "aws", "us-east-1", 0, at=NOV)  # nothing
    rec(data_costs.COPY, "imagenet", "aws", "us-east-1", 2 * GIB, to="us-west-2", at=NOV)
    rec(data_costs.COPY, "imagenet", "aws", "us-east-1", 1 * GIB, to="us-west-2", at=NOV + 9)
    rec(data_costs.COPY, "imagenet", "aws", "us-east-1", 5 * GIB, to="us-west-2", at=DEC)
    rec(data_costs.DOWNLOAD, "imagenet", "aws", "us-east-1", 4 * GIB, to="us-east-1",
        at=NOV)
    rec(data_costs.UPLOAD, "cifar", "tencent", "ap-guangzhou", GIB, at=NOV)
    rec(data_costs.COPY, "cifar", "tencent", "ap-guangzhou", GIB, to="ap-shanghai", at=NOV)
    lines = data_costs.month_lines("2026-11", now=DEC, tz=UTC)
    got = {(line.kind, line.dataset): (line.bytes, line.cost) for line in lines}
    assert got[("upload", "imagenet")] == (3 * GIB, 0.0)
    assert got[("copy", "imagenet")][0] == 3 * GIB  # December's 5 GiB is December's
    assert got[("copy", "imagenet")][1] == pytest.approx(0.06)
    assert got[("download", "imagenet")] == (4 * GIB, 0.0)
    assert got[("copy", "cifar")] == (GIB, None)
    assert data_costs.totals(lines) == pytest.approx({"CNY": 0.0, "USD": 0.06})
    words = {(line.kind, line.dataset): str(line.said()) for line in lines}
    assert words[("copy", "imagenet")].startswith(
        "Copy of dataset imagenet from aws us-east-1 to us-west-2: 3.0 GiB × 0.02 USD/GB = "
        f"0.0600 USD (AWS Price List {price_list.url}")
    assert words[("copy", "imagenet")].endswith(", 2026-11-20)")
    assert words[("download", "imagenet")] == (
        "Machine download of dataset imagenet from aws us-east-1 to us-east-1: 4.0 GiB, free "
        "(https://aws.amazon.com/s3/pricing/ (Data Transfer), read 2026-12-06)")
    assert words[("copy", "cifar")].startswith(
        "Copy of dataset cifar from tencent ap-guangzhou to ap-shanghai: 1.0 GiB, price not "
        "known (tencent publishes no price list")
    as_json = data_costs.month_json(lines)
    assert as_json["complete"] is False
    cifar = next(d for d in as_json["lines"] if d["dataset"] == "cifar" and d["kind"] == "copy")
    assert cifar["cost"] is None and "no price list" in cifar["unknown_because"]


def test_spend_prints_the_dataset_lines_in_the_same_words(
        price_list: PriceList, capsys: pytest.CaptureFixture[str]) -> None:
    price_list.files[("AmazonS3", "us-east-1")] = (200, offer_file(extra=ROWS))
    data_costs.record(data_costs.COPY, "imagenet", "aws", "us-east-1", 3 * GIB,
                      to="us-west-2", at=NOV)
    assert main(["spend", "--month", "2026-11", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    line = data["data"]["lines"][0]
    assert (line["bytes"], line["price_per_gb"], line["as_of"]) == (3 * GIB, 0.02,
                                                                     "2026-11-20")
    assert line["cost"] == pytest.approx(0.06)
    assert data["totals_with_storage"]["USD"] == pytest.approx(0.06)
    assert main(["spend", "--month", "2026-11"]) == 0
    text = capsys.readouterr().out
    assert f"Datasets moved:\n  {line['text']}\n" in text
    assert "Total: 0.06 USD\n" in text


def test_a_datasets_storage_per_month_for_the_data_page(price_list: PriceList) -> None:
    price_list.files[("AmazonS3", "us-east-1")] = (200, offer_file())
    s3_price_list.refresh("us-east-1")
    month = data_costs.storage_per_month(_dataset("s3://lab-data/lab", "us-east-1", (GIB, 2 * GIB)))
    assert (month.currency, month.amount) == ("USD", pytest.approx(3 * 0.023))
    assert month.words.startswith("3.000 GB × 0.023 USD/GB-month = 0.0690 USD a month "
                                  f"(AWS Price List {price_list.url}")
    cos = data_costs.storage_per_month(_dataset("cos://lab-1250000000/lab", "ap-guangzhou",
                                                (GIB,)))
    assert (cos.amount, cos.currency) == (None, "CNY")
    assert cos.words.startswith("1.000 GB a month, price not known (No storage (GB-month) "
                                "price for tencent in ap-guangzhou")


def test_the_windows_spend_line_shows_the_dataset_lines(qtbot: Any) -> None:
    data_costs.record(data_costs.UPLOAD, "imagenet", "aws", "us-east-1", 3 * GIB)
    data_costs.record(data_costs.COPY, "cifar", "tencent", "ap-guangzhou", GIB,
                      to="ap-shanghai")
    with Ledger() as ledger:
        page = InstancesPage(ledger)
        qtbot.addWidget(page)
        page.show()
        label = page.findChild(QLabel, "monthStorage")
        assert label is not None and label.isVisible()
        lines = label.text().splitlines()
    moved = lines[lines.index("Datasets moved this month:") + 1:]
    assert moved == [
        "Upload of dataset imagenet to aws us-east-1: 3.0 GiB, free "
        "(https://aws.amazon.com/s3/pricing/ (Data Transfer), read 2026-12-06)",
        "Copy of dataset cifar from tencent ap-guangzhou to ap-shanghai: 1.0 GiB, price not "
        "known (tencent publishes no price list that can be read without an account, so "
        "gpudesk shows no figure for traffic between its regions rather than a guess)"]


def test_a_stores_datasets_are_named_as_datasets_on_the_spend_lines(
        qtbot: Any, capsys: pytest.CaptureFixture[str]) -> None:
    key = "data:s3://lab-data/lab/"  # what datasets._note_usage keeps a store's data under
    usage.record_sample(key, "aws", "us-east-1", GIB, uri="s3://lab-data/lab/data/")
    usage.record_requests(key, "aws", "us-east-1", 5, 1, uri="s3://lab-data/lab/data/")
    with Ledger() as ledger:
        page = InstancesPage(ledger)
        qtbot.addWidget(page)
        label = page.findChild(QLabel, "monthStorage")
        assert label is not None
        lines = label.text().splitlines()
    line = next(x for x in lines if "lab-data" in x)
    assert line.startswith("Datasets in s3://lab-data/lab/data/ (us-east-1): ")
    assert "GB-month, cost unknown: No storage (GB-month) price for aws in us-east-1" in line
    assert "Requests: 6 (5 PUT/COPY/POST/LIST, 1 GET and other)" in line
    assert main(["spend"]) == 0
    assert "  datasets in s3://lab-data/lab/data/ " in capsys.readouterr().out
