"""Interruption rates and spot price history from each cloud's own figures, on the stand-ins.

The Advisor document below is test data in the Spot Instance Advisor's format
(``ranges`` labels, ``spot_advisor[region][os][type] = {"s": savings, "r": band}``),
not AWS's figures.
"""

from __future__ import annotations

import io
import json
import os
from datetime import UTC
from datetime import date
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from alibabacloud_ecs20140526 import models
from aliyun_standin import AliyunStandin
from aliyun_standin import sdk_client
from darabonba.runtime import RuntimeOptions
from ec2_placement_scores import placement_scores
from ec2_placement_scores import violation
from fixtures_aliyun import aliyun  # noqa: F401
from fixtures_aliyun import aliyun_creds  # noqa: F401
from fixtures_aliyun import aliyun_server  # noqa: F401
from fixtures_aws import MotoAws  # noqa: F401
from fixtures_aws import aws  # noqa: F401
from fixtures_aws import moto_server  # noqa: F401

from gpudesk.services.cloud import spot_rates
from gpudesk.services.cloud.providers.aliyun import AliyunProvider
from gpudesk.services.cloud.providers.base import Credentials
from gpudesk.services.cloud.spot_history import price_history
from gpudesk.services.cloud.spot_rates import advisor_rates
from gpudesk.services.cloud.spot_rates import aliyun_rates
from gpudesk.services.cloud.spot_rates import load_rates
from gpudesk.services.cloud.spot_rates import parse_band
from gpudesk.services.cloud.spot_rates import rate_for
from gpudesk.services.cloud.spot_rates import refresh_rates
from gpudesk.services.plan.expected_cost import per_hour

T0 = datetime(2026, 3, 2, 0, 0, tzinfo=UTC).timestamp()  # a Monday, 00:00 UTC
V100 = "ecs.gn6v-c8g1.2xlarge"
T4 = "ecs.gn6i-c4g1.xlarge"
ADVISOR = {
    "ranges": [{"index": 0, "label": "<5%"}, {"index": 1, "label": "5-10%"},
               {"index": 2, "label": "10-15%"}, {"index": 3, "label": "15-20%"},
               {"index": 4, "label": ">20%"}],
    "spot_advisor": {"us-east-1": {"Linux": {"p3.2xlarge": {"s": 70, "r": 1},
                                             "g5.xlarge": {"s": 60, "r": 4}},
                                   "Windows": {"p3.2xlarge": {"s": 50, "r": 0}}}},
}


def _provider(server: AliyunStandin, creds: Credentials) -> AliyunProvider:
    return AliyunProvider(creds, endpoint=server.endpoint, protocol="http",
                          sleep=lambda _s: None)


def test_band_labels() -> None:
    assert parse_band("<5%") == (0.0, 0.05)
    assert parse_band("5-10%") == (0.05, 0.10)
    assert parse_band(">20%") == (0.20, None)
    assert parse_band("0-3%") == (0.0, 0.03)
    assert parse_band("often") is None


def test_advisor_bands_per_type_and_region() -> None:
    rates = advisor_rates(ADVISOR, "test advisor", "2026-03-01")
    p3 = rates[("us-east-1", "p3.2xlarge")]
    assert (p3.label, p3.low, p3.high, p3.share) == ("5-10%", 0.05, 0.10, pytest.approx(0.075))
    # 7.5 % a month: -ln(0.925) / 720 = 1.08280e-4 an hour
    assert per_hour(p3) == pytest.approx(1.08280e-4, rel=1e-4)
    g5 = rates[("us-east-1", "g5.xlarge")]
    assert (g5.label, g5.low, g5.high, g5.share) == (">20%", 0.20, None, 0.20)  # at least
    assert len(rates) == 2  # Windows rows are not Linux's


def test_the_bundle_holds_band_definitions_only() -> None:
    from gpudesk.resources import resources_root

    data = json.loads((resources_root() / "spot" / "aws-spot-advisor-bands.json").read_text())
    assert [r["label"] for r in data["ranges"]] == ["<5%", "5-10%", "10-15%", "15-20%", ">20%"]
    assert data["spot_advisor"] == {} and "instance-advisor" in data["source"]


def test_a_cloud_that_publishes_nothing_says_so() -> None:
    tencent = rate_for("tencent", "ap-guangzhou", "GN7.2XLARGE32", {})
    assert not tencent.known and not tencent.published
    assert tencent.label == "interruption rate: not published"
    ec2 = rate_for("aws", "us-east-1", "p3.2xlarge", {})
    assert not ec2.known and ec2.published and ec2.label == "interruption rate: not known yet"


def test_spot_advice_from_the_standin_worst_zone_wins(
        aliyun: AliyunStandin, aliyun_creds: Credentials) -> None:  # noqa: F811
    aliyun.spot_advice = {("cn-hangzhou-i", V100): (3.0, "0-3%", 20),
                          ("cn-hangzhou-j", V100): (8.0, "5-10%", 25),
                          ("cn-hangzhou-h", V100): (1.0, "0-3%", 20),  # no spot sold there
                          ("cn-hangzhou-i", T4): (12.0, "10-15%", 15)}
    rows = _provider(aliyun, aliyun_creds).spot_advice("cn-hangzhou", [V100, T4])
    assert {(r["zone"], r["instance_type"], r["interruption_rate"]) for r in rows} == {
        ("cn-hangzhou-i", V100, 3.0), ("cn-hangzhou-j", V100, 8.0), ("cn-hangzhou-i", T4, 12.0)}
    rates = aliyun_rates(rows, "cn-hangzhou", "2026-03-01")
    v100 = rates[("cn-hangzhou", V100)]
    assert (v100.zone, v100.share, v100.label, v100.low, v100.high) == (
        "cn-hangzhou-j", 0.08, "5-10%", 0.05, 0.10)
    assert "DescribeSpotAdvice" in v100.source and "2026-03-01" in v100.source
    assert aliyun.limit_refusals == [] and aliyun.internal_errors == []


def test_spot_advice_takes_at_most_ten_types(aliyun: AliyunStandin) -> None:  # noqa: F811
    client = sdk_client(aliyun)
    with pytest.raises(Exception) as info:  # noqa: PT011 - the SDK's ClientException
        client.describe_spot_advice_with_options(models.DescribeSpotAdviceRequest(
            region_id="cn-hangzhou", instance_types=[f"ecs.t{i}" for i in range(11)]),
            RuntimeOptions(autoretry=False, max_attempts=1))
    assert (getattr(info.value, "data", None) or {}).get("Code") == "InvalidParameter"


def test_refresh_reads_both_sources_and_caches_them(
        aliyun: AliyunStandin, aliyun_creds: Credentials, tmp_path: Path) -> None:  # noqa: F811
    aliyun.spot_advice = {("cn-hangzhou-i", V100): (3.0, "0-3%", 20)}
    asked: list[str] = []

    def opener(url: str) -> Any:
        asked.append(url)
        return io.BytesIO(json.dumps(ADVISOR).encode())

    found, errors = refresh_rates(
        {"aws": ["us-east-1"], "aliyun": ["cn-hangzhou"]},
        {"aws": {"p3.2xlarge"}, "aliyun": {V100}}, _provider(aliyun, aliyun_creds),
        date(2026, 3, 1), opener=opener, cache=tmp_path)
    assert errors == {} and asked == [os.environ[spot_rates.ADVISOR_ENV]]  # conftest's
    assert sorted((r.provider, r.instance_type, round(r.share or 0, 6)) for r in found) == [
        ("aliyun", V100, 0.03), ("aws", "p3.2xlarge", 0.075)]
    kept = load_rates(tmp_path)
    assert kept[("aliyun", "cn-hangzhou", V100)].day == "2026-03-01"
    assert "read 2026-03-01" in kept[("aws", "us-east-1", "p3.2xlarge")].source


def test_aliyun_history_thirty_days_and_hour_bands(
        aliyun: AliyunStandin, aliyun_creds: Credentials) -> None:  # noqa: F811
    aliyun.clock = lambda: T0
    day = 86400.0
    # cheap 00:00-06:00 UTC (2.0), dear the rest of the day (5.0), for the last three days
    aliyun.spot_history = {("cn-hangzhou-i", V100): [
        (T0 - d * day + h * 3600, 2.0 if h == 0 else 5.0)
        for d in (3, 2, 1) for h in (0, 6)]}
    history = price_history(_provider(aliyun, aliyun_creds), "aliyun", "cn-hangzhou", V100,
                            now=T0, days=45, zones=["cn-hangzhou-i"])
    assert history.since == T0 - 30 * day + 3600  # ECS keeps 30 days: asked for less
    points = history.zones["cn-hangzhou-i"]
    assert [p.price for p in points] == [2.0, 5.0] * 3
    bands = history.hour_of_day()
    assert bands[:6] == [2.0] * 6 and bands[6:] == [5.0] * 18
    assert aliyun.limit_refusals == [] and aliyun.internal_errors == []


def test_aliyun_history_span_over_thirty_days_refused(aliyun: AliyunStandin) -> None:  # noqa: F811
    client = sdk_client(aliyun)
    with pytest.raises(Exception) as info:  # noqa: PT011 - the SDK's ClientException
        client.describe_spot_price_history_with_options(
            models.DescribeSpotPriceHistoryRequest(
                region_id="cn-hangzhou", network_type="vpc", instance_type=V100,
                start_time="2026-01-01T00:00:00Z", end_time="2026-02-15T00:00:00Z"),
            RuntimeOptions(autoretry=False, max_attempts=1))
    assert (getattr(info.value, "data", None) or {}).get("Code") == "InvalidParameter"


def test_placement_scores_through_the_standin_and_into_the_rate(
        aws: MotoAws, tmp_path: Path) -> None:  # noqa: F811
    with placement_scores(aws.endpoint) as proxy:
        proxy.scores = {("us-east-1", "use1-az1"): 3, ("us-east-1", "use1-az2"): 7,
                        ("us-west-2", "usw2-az1"): 9}
        provider = aws.provider(endpoint_url=proxy.url)
        assert provider.spot_placement_scores("us-east-1", "p3.2xlarge") == {
            "use1-az1": 3, "use1-az2": 7}
        form = proxy.asked[-1]
        assert (form["TargetCapacity"], form["SingleAvailabilityZone"],
                form["RegionName.1"], form["InstanceType.1"]) == (
            ["1"], ["true"], ["us-east-1"], ["p3.2xlarge"])

        def opener(_url: str) -> Any:
            return io.BytesIO(json.dumps(ADVISOR).encode())

        found, errors = refresh_rates(
            {"aws": ["us-east-1"]}, {"aws": {"p3.2xlarge", "p4d.24xlarge"}}, None,
            date(2026, 3, 1), opener=opener, cache=tmp_path, aws=provider)
    assert errors == {}
    by_type = {r.instance_type: r for r in found}
    p3 = by_type["p3.2xlarge"]  # the Advisor's band, with the score beside it
    assert (p3.label, p3.placement_score) == ("5-10%", 7)
    assert "use1-az2" in p3.placement_source and "GetSpotPlacementScores" in p3.placement_source
    p4 = by_type["p4d.24xlarge"]  # no Advisor row: no rate, the score alone
    assert (p4.known, p4.placement_score) == (False, 7)
    assert p4.label == "interruption rate: not known yet"
    kept = load_rates(tmp_path)
    assert kept[("aws", "us-east-1", "p4d.24xlarge")].placement_score == 7


def test_placement_scores_limits() -> None:
    ok = {"TargetCapacity": ["1"], "InstanceType.1": ["p3.2xlarge"]}
    assert violation(ok) == ""
    assert violation({"InstanceType.1": ["p3.2xlarge"]}) == "TargetCapacity"
    assert violation({**ok, "TargetCapacity": ["2000000001"]}) == "TargetCapacity"
    assert violation({**ok, **{f"RegionName.{i}": ["r"] for i in range(1, 12)}}) == (
        "RegionNames")
    assert violation({**ok, "MaxResults": ["5"]}) == "MaxResults"
    assert violation({**ok, "InstanceRequirementsWithMetadata.ArchitectureType.1":
                            ["x86_64"]}) == "InstanceTypes"


def test_ec2_history_on_moto_asks_at_most_ninety_days(aws: MotoAws) -> None:  # noqa: F811
    history = price_history(aws.provider(), "aws", "us-east-1", "g5.xlarge", now=T0,
                            days=365)
    assert history.since == T0 - 90 * 86400 + 3600  # EC2 keeps 90 days: asked for less
    assert history.source == "EC2 DescribeSpotPriceHistory, 90 days"
    assert history.zones  # moto quotes the type in every zone it sells it in
    for points in history.zones.values():
        # moto's one record (0.00001 USD/h, 2006): the price in force when the window opens
        assert [(p.price, p.currency) for p in points] == [(0.00001, "USD")]
        assert points[0].at < history.since
    assert history.hour_of_day() == [0.00001] * 24  # held all window long
