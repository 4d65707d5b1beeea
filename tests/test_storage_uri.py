"""Store URIs, the run layout, bucket-name rules and the cost arithmetic."""

from __future__ import annotations

from datetime import UTC
from datetime import date
from datetime import datetime

import pytest

from gpudesk.services.storage import pricing
from gpudesk.services.storage.buckets import expiry_date
from gpudesk.services.storage.errors import StorageError
from gpudesk.services.storage.uri import StoreUri
from gpudesk.services.storage.uri import check_bucket
from gpudesk.services.storage.uri import cos_appid
from gpudesk.services.storage.uri import parse_uri


def test_uris_round_trip_with_the_run_layout() -> None:
    for text, cloud in (("s3://my-bucket/team/a", "aws"),
                        ("cos://gpudesk-1-1250000000/x", "tencent"),
                        ("oss://gpudesk-oss/", "aliyun")):
        store = parse_uri(text)
        assert store.cloud == cloud and parse_uri(str(store)) == store
    store = parse_uri("s3://my-bucket/team/a/")
    assert str(store) == "s3://my-bucket/team/a/"
    run = store.run("r-1")
    assert run.manifest == "team/a/runs/r-1/manifest.json"
    assert run.checkpoint("step-1.pt") == "team/a/runs/r-1/checkpoints/step-1.pt"
    assert run.log("train.log") == "team/a/runs/r-1/logs/train.log"
    assert run.output("eval/m.json") == "team/a/runs/r-1/outputs/eval/m.json"
    assert run.uri == "s3://my-bucket/team/a/runs/r-1/"
    assert cos_appid("gpudesk-1-1250000000") == "1250000000"


@pytest.mark.parametrize("text", ["my-bucket", "gs://b/x", "s3://", "s3://Bad_Name/x",
                                  "cos://nobucketappid/x", "oss://ab", "s3://ok-bucket/../x"])
def test_bad_uris_say_what_is_wrong(text: str) -> None:
    with pytest.raises(StorageError) as caught:
        parse_uri(text)
    assert caught.value.message()


def test_run_ids_and_paths_cannot_escape_the_run_folder() -> None:
    store = StoreUri("aws", "b-bucket")
    for bad in ("../x", "a/b", ""):
        with pytest.raises(StorageError):
            store.run(bad)
    for bad in ("../etc", "/abs", "a//b"):
        with pytest.raises(StorageError):
            store.run("r").output(bad)


def test_cos_domain_length_is_checked_with_the_region() -> None:
    check_bucket("tencent", "a" * 19 + "-1250000000", region="ap-guangzhou")  # 60 chars
    with pytest.raises(StorageError):
        check_bucket("tencent", "a" * 20 + "-1250000000", region="ap-guangzhou")


def test_expiry_is_the_midnight_after_end_plus_days() -> None:
    assert expiry_date(datetime(2030, 1, 1, tzinfo=UTC), 30) == datetime(2030, 1, 31, tzinfo=UTC)
    assert expiry_date(datetime(2030, 1, 1, 0, 0, 1, tzinfo=UTC), 1) == datetime(
        2030, 1, 3, tzinfo=UTC)


def test_costs_are_none_without_a_price_and_exact_with_one() -> None:
    lookup = pricing.storage_price("tencent", "ap-guangzhou")
    assert lookup.price is None and "ap-guangzhou" in lookup.reason
    assert pricing.monthly_cost(10 * pricing.GB, None) is None
    price = pricing.Price(0.5, "CNY", "a price page", date(2026, 1, 1))
    assert pricing.monthly_cost(3 * pricing.GB, price) == pytest.approx(1.5)
    out = pricing.data_out_price("aws", "us-east-1")
    assert out.price is not None and out.price.amount == 0.09 and out.price.source
    assert pricing.data_out_cost(2 * pricing.GB, out.price) == pytest.approx(0.18)
