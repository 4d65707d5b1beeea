"""``gpudesk offers --spot`` ranks by expected cost with each cloud's interruption rate, and
``--history`` draws a type's spot prices, on the stand-ins.

The Advisor file served here is test data in the Spot Instance Advisor's format, not
AWS's figures: every AWS type of the catalog in every region, band by position.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from datetime import UTC
from datetime import datetime

import pytest
from aliyun_standin import REGIONS
from aliyun_standin import TYPES
from aliyun_standin import AliyunStandin
from fixtures_aliyun import aliyun  # noqa: F401
from fixtures_aliyun import aliyun_creds  # noqa: F401
from fixtures_aliyun import aliyun_server  # noqa: F401
from fixtures_keyring import memory_keyring  # noqa: F401
from local_get import serve_get

from gpudesk.calc.sizing import Setup
from gpudesk.calc.sizing import Workload
from gpudesk.calc.sizing import preset
from gpudesk.cli.entry import main
from gpudesk.services.cloud import credentials
from gpudesk.services.cloud.accounts import ALIYUN_ENDPOINT_ENV
from gpudesk.services.cloud.catalog import load_catalog
from gpudesk.services.cloud.providers.base import Credentials
from gpudesk.services.cloud.spot_rates import ADVISOR_ENV
from gpudesk.services.cloud.spot_rates import SpotRate
from gpudesk.services.plan.expected_cost import SpotAssumptions
from gpudesk.services.plan.planner import Job
from gpudesk.services.plan.planner import rank_catalog

OFFERS = ["offers", "--model", "gpt2", "--batch", "1", "--seq", "512", "--precision",
          "amp-fp16", "--tokens", "2e10", "--all", "--spot"]
LABELS = ["<5%", "5-10%", "10-15%", "15-20%", ">20%"]


def _advisor() -> dict[str, object]:
    rows: dict[str, dict[str, dict[str, dict[str, int]]]] = {}
    aws = sorted({(o.region, o.instance_type) for o in load_catalog().offers
                  if o.provider == "aws"})
    for i, (region, itype) in enumerate(aws):
        rows.setdefault(region, {"Linux": {}})["Linux"][itype] = {"s": 60, "r": i % 5}
    return {"ranges": [{"index": i, "label": label} for i, label in enumerate(LABELS)],
            "spot_advisor": rows}


@pytest.fixture
def clouds(aliyun: AliyunStandin, aliyun_creds: Credentials,  # noqa: F811
           memory_keyring: object, monkeypatch: pytest.MonkeyPatch  # noqa: F811
           ) -> Iterator[AliyunStandin]:
    monkeypatch.setenv(ALIYUN_ENDPOINT_ENV, f"http://{aliyun.endpoint}")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    credentials.save_credentials(aliyun_creds)
    aliyun.spot_advice = {(zone, itype): (float(n % 4) * 3, f"{n % 4 * 3}-{n % 4 * 3 + 3}%", 20)
                          for n, (zone, itype) in enumerate(
                              (z, t) for zones in (v[1] for v in REGIONS.values())
                              for z in zones for t in TYPES)}
    body = json.dumps(_advisor()).encode()
    with serve_get(lambda _path: (200, body)) as url:
        monkeypatch.setenv(ADVISOR_ENV, f"{url}/spot-advisor-data.json")
        yield aliyun


def test_spot_rows_carry_rate_source_and_expected_cost(
        clouds: AliyunStandin, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*OFFERS, "--refresh", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    rows = [r for r in out["offers"] if r["fits"]]
    assert {r["provider"] for r in rows} == {"aws", "tencent", "aliyun"}
    for r in rows:
        assert {"interruption_rate", "rate_source", "expected_cost", "expected_hours"} <= r.keys()
        if r["provider"] == "tencent":
            assert r["interruption_rate"] is None
            assert r["rate_source"] == "interruption rate: not published"
            continue
        if r["provider"] == "aliyun" and r["instance_type"] == "ecs.gn7e-c16g1.4xlarge":
            # the stand-in's A100 is pay-as-you-go only: no spot price, no advice, said so
            assert r["spot_price"] is None and r["interruption_rate"] is None
            assert r["rate_source"] == "interruption rate: not known yet"
            continue
        assert r["interruption_rate"], r  # every AWS and Alibaba Cloud spot row has one
        where = "AWS Spot Instance Advisor" if r["provider"] == "aws" else "DescribeSpotAdvice"
        assert where in r["rate_source"] and r["rate_date"]
        if r["price_per_hour"] is not None:
            low, high = r["expected_cost_range"]
            assert low <= r["expected_cost"] <= high or math.isclose(low, high)
            assert r["expected_cost"] >= r["cost_to_finish"]
            assert r["expected_hours"] >= r["hours"]
    aliyun_rows = [r for r in rows if r["provider"] == "aliyun" and r["spot_price"]]
    assert {r["interruption_rate"] for r in aliyun_rows} <= {"0-3%", "3-6%", "6-9%", "9-12%"}
    # ranked by the expected figure (the sticker cost where none is known)
    key = [r["expected_cost"] if r["expected_cost"] is not None else
           (r["cost_to_finish"] if r["cost_to_finish"] is not None else math.inf)
           for r in rows]
    assert key == sorted(key)
    assert clouds.limit_refusals == [] and clouds.internal_errors == []
    asked = [q for action, _r, q in clouds.requests if action == "DescribeSpotAdvice"]
    assert asked and all(len([k for k in q if k.startswith("InstanceTypes.")]) <= 10
                         for q in asked)
    assert main([*OFFERS]) == 0  # the same rows in words: expected cost and the rate
    text = capsys.readouterr().out
    assert "interruption rate" in text and "expected $" in text


def test_a_risky_offer_drops_below_a_dearer_safe_one() -> None:
    job = Job(preset("gpt2"), Setup(precision="amp-fp16"), Workload(tokens=2e9))
    catalog = load_catalog()
    plain = [r for r in rank_catalog(job, catalog, spot=True) if r.fits and r.priced]
    first = plain[0].offer
    # 1 interruption an hour (63.2 % over one hour): L = 30/2 + 15 min = 0.5 h, lam*L = 0.5
    # -> expected hours = W / 0.5 = 2 * hours * (1 + 1/30): about 2.067 times the cost.
    risky = SpotRate(first.provider, first.region, first.instance_type, 1 - math.exp(-1.0),
                     None, None, "test", "test", "2026-03-01", period_hours=1.0)
    ranked = [r for r in rank_catalog(
        job, catalog, spot=True, assumptions=SpotAssumptions(),
        rates={(first.provider, first.region, first.instance_type): risky})
        if r.fits and r.priced]
    moved = next(r for r in ranked if r.offer == first)
    assert moved.expected_cost == pytest.approx(plain[0].cost * 2 * (1 + 1 / 30), rel=1e-9)
    cheaper = [r for r in plain[1:] if r.cost < moved.expected_cost]
    assert ranked.index(moved) == len(cheaper) >= 1


def test_history_json_and_hour_bands(clouds: AliyunStandin, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    t0 = datetime(2026, 3, 2, tzinfo=UTC).timestamp()  # a Monday, 00:00 UTC
    clouds.clock = lambda: t0
    monkeypatch.setattr("gpudesk.cli.entry._now", lambda: t0)
    itype = "ecs.gn6i-c4g1.xlarge"
    clouds.spot_history = {(zone, itype): [(t0 - 86400, 1.5), (t0 - 86400 + 8 * 3600, 2.5)]
                           for zone in REGIONS["cn-hangzhou"][1]}
    assert main(["offers", "--history", itype, "--region", "cn-hangzhou", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["source"].startswith("ECS DescribeSpotPriceHistory, 30 days")
    assert {z: [p["price"] for p in points] for z, points in out["zones"].items()} == {
        zone: [1.5, 2.5] for zone in REGIONS["cn-hangzhou"][1]}
    # Sunday 00:00-08:00 at 1.5, then 2.5 until Monday 00:00 (time-weighted per hour)
    assert out["hour_of_day_utc"] == [1.5] * 8 + [2.5] * 16
    assert out["day_of_week_utc"] == [None] * 6 + [pytest.approx((8 * 1.5 + 16 * 2.5) / 24)]
    assert main(["offers", "--history", itype, "--region", "cn-hangzhou"]) == 0
    text = capsys.readouterr().out
    assert "cn-hangzhou-i" in text and "2 changes, 1.5000-2.5000 CNY/h, now 2.5000" in text
    assert clouds.limit_refusals == [] and clouds.internal_errors == []


def test_budget_chance_per_spot_row(clouds: AliyunStandin,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*OFFERS, "--refresh", "--json", "--provider", "aliyun", "--budget",
                 "0.01"]) == 0
    rows = [r for r in json.loads(capsys.readouterr().out)["offers"]
            if r["fits"] and r["expected_cost"] is not None]
    assert rows and all(r["budget"] == 0.01 and r["chance_budget_runs_out"] == 1.0
                        for r in rows)  # a cent never finishes the job
    assert main([*OFFERS, "--json", "--provider", "aliyun", "--budget", "1e9"]) == 0
    rows = [r for r in json.loads(capsys.readouterr().out)["offers"]
            if r["fits"] and r["expected_cost"] is not None]
    assert rows and all(r["chance_budget_runs_out"] == 0.0 for r in rows)
    assert main([*OFFERS, "--provider", "aliyun", "--budget", "1e9"]) == 0
    assert "0% chance the $1,000,000,000.00 budget runs out first" in capsys.readouterr().out
