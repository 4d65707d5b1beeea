"""No launch without a price from the cloud, and the cloud's cap from the cloud's quote
(issue 21, items 3 and 4). The prices are the stand-ins' and the price list's own answers;
the caps are read back from the stand-ins' state, never from gpudesk's figures."""
# ruff: noqa: F811 - fixtures imported from fixtures_* arrive as parameters

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest
from aliyun_standin import AliyunStandin
from fixtures_aliyun import aliyun  # noqa: F401
from fixtures_aliyun import aliyun_creds  # noqa: F401
from fixtures_aliyun import aliyun_server  # noqa: F401
from fixtures_aws import MotoAws  # noqa: F401
from fixtures_aws import aws  # noqa: F401
from fixtures_aws import moto_server  # noqa: F401
from fixtures_keyring import memory_keyring  # noqa: F401
from fixtures_tencent import tencent  # noqa: F401
from fixtures_tencent import tencent_creds  # noqa: F401
from fixtures_tencent import tencent_server  # noqa: F401
from local_get import serve_get
from tencent_standin import TencentStandin
from tencent_standin import timer_at as _at
from tencent_standin import undo_timers as _timers
from test_aws_price_list import _offer_file

from gpudesk.cli.entry import main
from gpudesk.services.cloud import aws_price_list
from gpudesk.services.cloud import credentials
from gpudesk.services.cloud import guard
from gpudesk.services.cloud.accounts import TENCENT_ENDPOINT_ENV
from gpudesk.services.cloud.launcher import Launcher
from gpudesk.services.cloud.launcher import LaunchPlan
from gpudesk.services.cloud.providers.aliyun import AliyunProvider
from gpudesk.services.cloud.providers.base import Credentials
from gpudesk.services.cloud.providers.base import ProviderError
from gpudesk.services.cloud.providers.tencent import TencentProvider
from gpudesk.services.core.settings import Settings
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.remote.machine_budget import change_budget

HOUR = 3600.0
ZONE = "ap-guangzhou-3"
CVM_TYPE = "GN7.2XLARGE32"
RATE = 7.2
# The report: the bundled catalog's $1.209/h is 8.7 CNY/h; CVM itself quoted 7.43 CNY/h.
CATALOG_USD = 1.209
QUOTED_CNY = 7.43


@pytest.fixture
def cvm(tencent: TencentStandin, tencent_creds: Credentials) -> Iterator[TencentProvider]:
    p = TencentProvider(tencent_creds, endpoint=tencent.endpoint, protocol="http")
    yield p
    p.close()


def _cvm_plan(**kw: Any) -> LaunchPlan:
    values: dict[str, Any] = {
        "provider": "tencent", "instance_type": CVM_TYPE, "region": "ap-guangzhou",
        "zone": ZONE, "allow_from": "203.0.113.7/32", "gpu": "T4", "gpus": 1,
        "price_per_hour": CATALOG_USD, "cny_per_usd": RATE, "wait_ssh": False}
    return LaunchPlan(**{**values, **kw})


def test_a_cvm_timer_is_the_budget_over_the_clouds_own_quote_in_cny(
        tencent: TencentStandin, cvm: TencentProvider) -> None:
    """100 CNY at CVM's 7.43 CNY/h is 13.46 h, not 11.49 h at the catalog's 8.7 CNY/h (the
    report's timer came 118 minutes early)."""
    tencent.zone_prices[(ZONE, CVM_TYPE, "POSTPAID_BY_HOUR")] = QUOTED_CNY
    plan = _cvm_plan(budget=100.0 / RATE, on_budget="terminate")  # 100 CNY, in the ledger's USD
    with Ledger() as ledger:
        launcher = Launcher(ledger, lambda _n: cvm, poll_s=0.0)  # type: ignore[arg-type]
        m = asyncio.run(launcher.launch(plan)).machine
        (timer,) = _timers(tencent, m.cloud_id)
        assert timer["TimerAction"] == "TerminateInstances"
        launched = m.launched_at
        assert launched is not None
        # the cloud's quote for compute, plus the system disk, which bills while it runs
        disk = guard.disk_per_hour("tencent", m.region, m.disk_gb, "CNY")
        assert disk > 0
        assert _at(timer["ActionTime"]) == pytest.approx(
            launched + 100.0 / (QUOTED_CNY + disk) * HOUR, abs=5.0)
        # the quote is in the ledger with its source, before the machine was asked for
        steps = [e.step for e in ledger.events(m.id)]
        assert steps.index(guard.QUOTE_STEP) < steps.index("request")
        quote = guard.launch_quote(ledger, m)
        assert quote is not None
        assert (quote.price, quote.currency, quote.source, quote.cny_per_usd, quote.zone) == (
            QUOTED_CNY, "CNY", "InquiryPriceRunInstances", RATE, ZONE)
        assert m.price_per_hour == round(QUOTED_CNY / RATE, 6)  # spend counts the same price
        assert m.cloud_timer_at == pytest.approx(_at(timer["ActionTime"]), abs=1.0)

        # a new budget later is held to the same quote, in CNY: 200 CNY less what was spent
        now = time.time()
        change_budget(ledger, m.id, 200.0 / RATE, "terminate", settings=Settings(),
                      providers=lambda _n: cvm, now=now)
        row = ledger.get(m.id)
        assert row is not None
        from gpudesk.services.money.spend import machine_spend

        spent_cny = machine_spend(ledger, row, now).total * RATE
        (timer,) = _timers(tencent, m.cloud_id)
        assert _at(timer["ActionTime"]) == pytest.approx(
            now + (200.0 - spent_cny) / (QUOTED_CNY + disk) * HOUR, abs=2.0)


def test_the_cap_follows_the_quote_even_when_preferences_rate_moves() -> None:
    """Budget and spend go into the cloud's currency at the launch's rate, whatever rate the
    ledger's USD figures are later read with."""
    q = guard.Quote(7.43, "CNY", "InquiryPriceRunInstances", 7.2)
    g = guard.plan("tencent", 100 / 7.2, "terminate", 99.0, 0.0, 1_000_000.0, quote=q)
    assert g.cloud_timer_at == pytest.approx(1_000_000.0 + 100 / 7.43 * HOUR, abs=1.0)
    assert guard.Quote.parse(q.detail()) == q
    assert guard.Quote.parse("8 CNY/h somewhere") is None


def test_no_cvm_quote_means_no_launch_and_nothing_made(
        tencent: TencentStandin, cvm: TencentProvider) -> None:
    tencent.fail_next("InquiryPriceRunInstances", "InternalError", "The price service failed.")
    with Ledger() as ledger:
        launcher = Launcher(ledger, lambda _n: cvm, poll_s=0.0)  # type: ignore[arg-type]
        with pytest.raises(ProviderError) as refused:
            asyncio.run(launcher.launch(_cvm_plan(budget=10.0, on_budget="terminate")))
        assert refused.value.kind == "price"
        assert "gave no price for GN7.2XLARGE32 in ap-guangzhou" in refused.value.message()
        assert "InternalError" in str(refused.value)
        assert ledger.machines() == []  # nothing written that could be read as billing
    made = {"RunInstances", "ImportKeyPair", "CreateKeyPair", "CreateSecurityGroup",
            "CreateSecurityGroupPolicies"}
    assert not made & set(tencent.calls)
    assert tencent.state.instances == {}


def test_an_aliyun_launch_with_a_catalog_price_still_asks_describe_price(
        aliyun: AliyunStandin, aliyun_creds: Credentials) -> None:
    provider = AliyunProvider(aliyun_creds, endpoint=aliyun.endpoint, protocol="http",
                              sleep=lambda _s: None)
    plan = LaunchPlan(provider="aliyun", instance_type="ecs.gn7i-c8g1.2xlarge",
                      region="cn-hangzhou", allow_from="203.0.113.7/32", price_per_hour=9.99,
                      cny_per_usd=8.0, wait_ssh=False, budget=20.0, on_budget="terminate")
    aliyun.fail_next("DescribePrice", "InternalError", "The request processing has failed.")
    with Ledger() as ledger:
        launcher = Launcher(ledger, lambda _n: provider, poll_s=0.0)  # type: ignore[arg-type]
        with pytest.raises(ProviderError) as refused:
            asyncio.run(launcher.launch(plan))
        assert refused.value.kind == "price" and ledger.machines() == []
        assert aliyun.state.instances == {} and "RunInstances" not in aliyun.calls
        m = asyncio.run(launcher.launch(plan)).machine  # the next answer has a price
        assert m.price_per_hour == 2.0  # the stand-in's 16 CNY/h at 8 CNY/USD, not 9.99
        released = aliyun.state.instances[m.cloud_id]["AutoReleaseTime"]
        # $20 is 160 CNY, at 16 CNY/h plus the disk: ECS releases it a little before ten hours
        disk = guard.disk_per_hour("aliyun", m.region, m.disk_gb, "CNY")
        assert disk > 0
        assert _at(released) == pytest.approx((m.launched_at or 0) + 160 / (16 + disk) * HOUR,
                                              abs=60.0)


@pytest.fixture
def price_list(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, bytes]]:
    """The AWS price list on 127.0.0.1: region → its EC2 offer file (absent: 404)."""
    files: dict[str, bytes] = {}

    def answer(path: str) -> tuple[int, bytes]:
        parts = path.strip("/").split("/")
        if len(parts) == 7 and parts[3] == "AmazonEC2" and parts[5] in files:
            return 200, files[parts[5]]
        return 404, b"not found"

    with serve_get(answer) as url:
        monkeypatch.setenv(aws_price_list.BASE_ENV, url)
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        yield files


def test_an_aws_launch_without_a_price_reads_the_price_list_or_refuses(
        aws: MotoAws, memory_keyring: Any, price_list: dict[str, bytes]) -> None:
    """g6.xlarge has no bundled price in eu-west-1: the region's price list file is read, and
    while it does not answer nothing is launched."""
    credentials.save_credentials(aws.credentials)
    aws.publish_dlami("eu-west-1")
    plan = LaunchPlan(provider="aws", instance_type="g6.xlarge", region="eu-west-1",
                      zone="eu-west-1a",
                      allow_from="203.0.113.7/32", price_per_hour=0.0, wait_ssh=False)
    with Ledger() as ledger:
        launcher = Launcher(ledger, poll_s=0.01)
        with pytest.raises(ProviderError) as refused:  # the price list does not answer
            asyncio.run(launcher.launch(plan))
        assert refused.value.kind == "price" and ledger.machines() == []
        assert "gave no price for g6.xlarge in eu-west-1" in refused.value.message()
        assert aws.instance_count("eu-west-1") == 0
        price_list["eu-west-1"] = _offer_file("eu-west-1", {"g6.xlarge": 0.8854})
        m = asyncio.run(launcher.launch(plan)).machine
        assert m.price_per_hour == 0.8854 and aws.instance_count("eu-west-1") == 1
        quote = guard.launch_quote(ledger, m)
        assert quote is not None and quote.source.startswith("AWS Price List published")


def test_an_aws_type_with_a_bundled_list_price_is_quoted_from_it(
        aws: MotoAws, memory_keyring: Any, price_list: dict[str, bytes]) -> None:
    credentials.save_credentials(aws.credentials)
    aws.publish_dlami("us-east-1")
    plan = LaunchPlan(provider="aws", instance_type="g5.xlarge", region="us-east-1",
                      allow_from="203.0.113.7/32", price_per_hour=0.0, wait_ssh=False)
    with Ledger() as ledger:
        m = asyncio.run(Launcher(ledger, poll_s=0.01).launch(plan)).machine
        assert m.price_per_hour == 1.006  # the price list's, as bundled (and dated)
        quote = guard.launch_quote(ledger, m)
        assert quote is not None and quote.source.endswith("(bundled)")


def test_the_cli_says_why_before_anything_is_made(
        tencent: TencentStandin, tencent_creds: Credentials, memory_keyring: Any,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    credentials.save_credentials(tencent_creds)
    monkeypatch.setenv(TENCENT_ENDPOINT_ENV, f"http://{tencent.endpoint}")
    tencent.fail_next("InquiryPriceRunInstances", "InternalError", "The price service failed.")
    code = main(["launch", "--provider", "tencent", "--region", "ap-guangzhou", "--zone", ZONE,
                 "--type", CVM_TYPE, "--allow-from", "203.0.113.7/32", "--no-wait-ssh"])
    err = capsys.readouterr().err
    assert code != 0
    assert "gave no price for GN7.2XLARGE32 in ap-guangzhou" in err
    assert "nothing was started" in err
    assert "RunInstances" not in tencent.calls and tencent.state.instances == {}
    with Ledger() as ledger:
        assert ledger.machines() == []


# ------------------------------------------------------------- a spot price not believed

def _moto_spot_launch(aws: MotoAws, **kw: Any) -> tuple[Ledger, Any]:
    credentials.save_credentials(aws.credentials)
    aws.publish_dlami("us-east-1")
    values: dict[str, Any] = {
        "provider": "aws", "instance_type": "g5.xlarge", "region": "us-east-1",
        "zone": "us-east-1a", "market": "spot", "allow_from": "203.0.113.7/32",
        "price_per_hour": 0.0, "wait_ssh": False, "budget": 2.0, "on_budget": "stop"}
    ledger = Ledger()
    m = asyncio.run(Launcher(ledger, poll_s=0.01).launch(LaunchPlan(**{**values, **kw}))).machine
    return ledger, m


@pytest.mark.parametrize("handed", [0.0, 0.00001])  # asked at launch; the refreshed catalog's
def test_motos_spot_price_of_2006_is_not_counted_and_the_budget_still_crosses(
        aws: MotoAws, memory_keyring: Any, price_list: dict[str, bytes], handed: float) -> None:
    """moto answers $0.00001 dated 2006 for every spot type. Counted, the spend would be
    ¥0.01 a day and the $2 budget would never cross: the launch counts the on-demand
    price (the most a spot machine bills) and says why, and the 15-minute refresh does not
    bring the placeholder back."""
    from gpudesk.services.cloud.spot_prices import record_spot_prices
    from gpudesk.services.money import spend

    ledger, m = _moto_spot_launch(aws, price_per_hour=handed)
    try:
        assert m.market == "spot" and m.price_per_hour == 1.006  # the bundled list price
        quote = guard.launch_quote(ledger, m)
        assert quote is not None and quote.price == 1.006
        assert "DescribeSpotPriceHistory's 1e-05 USD/h dated 2006-01-02" in quote.source
        assert "the most a spot machine bills" in quote.source
        launched = m.launched_at
        assert launched is not None
        report = record_spot_prices(ledger, lambda _n: aws.provider(), RATE,
                                    now=launched + 2 * HOUR)
        assert report.recorded == 0 and m.id in report.doubted
        m = ledger.get(m.id)
        assert m is not None and m.price_per_hour == 1.006
        # 1.006 $/h: under the $2 budget after 1.9 h, over it after 2 h
        under = spend.machine_spend(ledger, m, launched + 1.9 * HOUR).compute
        over = spend.machine_spend(ledger, m, launched + 2.0 * HOUR).compute
        assert under < 2.0 <= over
        assert over == pytest.approx(2.012, abs=0.01)
    finally:
        ledger.close()


def test_a_refused_spot_price_counts_the_users_maximum_price_where_it_is_lower(
        aws: MotoAws, memory_keyring: Any, price_list: dict[str, bytes]) -> None:
    ledger, m = _moto_spot_launch(aws, max_price=0.4)
    try:
        assert m.price_per_hour == 0.4
        quote = guard.launch_quote(ledger, m)
        assert quote is not None and quote.source.startswith("your maximum price, the most")
    finally:
        ledger.close()
