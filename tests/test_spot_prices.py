"""Spot prices of running spot machines into the ledger: EC2 on moto's server, CVM on the
stand-in, and a price history with changes mid-run against a hand-computed cost."""

# ruff: noqa: F811 - pytest fixtures imported from the fixture modules arrive as parameters
from __future__ import annotations

import time
from datetime import UTC
from datetime import datetime
from datetime import timedelta
from typing import Any

import pytest
from fixtures_aws import MotoAws  # noqa: F401
from fixtures_aws import aws  # noqa: F401
from fixtures_aws import moto_server  # noqa: F401
from fixtures_tencent import tencent  # noqa: F401
from fixtures_tencent import tencent_creds  # noqa: F401
from fixtures_tencent import tencent_server  # noqa: F401
from tencent_standin import TencentStandin

from gpudesk.services.cloud.providers import aws_offers
from gpudesk.services.cloud.providers.base import Credentials
from gpudesk.services.cloud.providers.base import PricePoint
from gpudesk.services.cloud.providers.base import ProviderError
from gpudesk.services.cloud.providers.tencent import TencentProvider
from gpudesk.services.cloud.spot_prices import record_spot_prices
from gpudesk.services.money import spend
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine

START = 1_780_000_000.0  # a fixed launch time; the clock is passed in


def _spot(ledger: Ledger, provider: str = "aws", zone: str = "us-east-1a",
          itype: str = "g5.xlarge", price: float = 0.9, region: str = "us-east-1",
          start: float = START) -> Machine:
    machine = ledger.add(Machine(id=f"m-{provider}-{zone}", provider=provider, region=region,
                                 zone=zone, instance_type=itype, market="spot",
                                 price_per_hour=price, created_at=start - 30, state="running"))
    ledger.update(machine.id, launched_at=start, running_since=start)
    return ledger.get(machine.id) or machine


def test_points_of_one_zone_and_type_oldest_first_without_repeats() -> None:
    t0 = datetime(2026, 5, 1, 12, tzinfo=UTC)
    history = [
        {"AvailabilityZone": "us-east-1a", "InstanceType": "g5.xlarge", "SpotPrice": "0.45",
         "Timestamp": t0 + timedelta(hours=2)},
        {"AvailabilityZone": "us-east-1a", "InstanceType": "g5.xlarge", "SpotPrice": "0.40",
         "Timestamp": t0 + timedelta(hours=1)},
        {"AvailabilityZone": "us-east-1a", "InstanceType": "g5.xlarge", "SpotPrice": "0.40",
         "Timestamp": "2026-05-01T12:30:00.000Z"},  # the wire's text form; a repeat
        {"AvailabilityZone": "us-east-1a", "InstanceType": "g5.xlarge", "SpotPrice": "0.41",
         "Timestamp": t0},
        {"AvailabilityZone": "us-east-1b", "InstanceType": "g5.xlarge", "SpotPrice": "0.10",
         "Timestamp": t0},
        {"AvailabilityZone": "us-east-1a", "InstanceType": "p4d.24xlarge", "SpotPrice": "9.1",
         "Timestamp": t0},
        {"AvailabilityZone": "us-east-1a", "InstanceType": "g5.xlarge", "SpotPrice": "n/a",
         "Timestamp": t0},
    ]
    ts = t0.timestamp()
    assert aws_offers.spot_price_points(history, "us-east-1a", "g5.xlarge") == [
        (ts, 0.41), (ts + 1800, 0.40), (ts + 7200, 0.45)]


class _History:
    """EC2's answer for a run whose spot price moved twice (moto's server answers one
    constant price, so it cannot show a change)."""

    name = "aws"

    def __init__(self, points: list[PricePoint]) -> None:
        self.points = points
        self.asked: list[tuple[str, str, str, float]] = []

    def spot_price_history(self, region: str, zone: str, itype: str,
                           since: float) -> list[PricePoint]:
        self.asked.append((region, zone, itype, since))
        return [p for i, p in enumerate(self.points)
                if p.at >= since or (i + 1 < len(self.points) and self.points[i + 1].at > since)]


def test_price_changes_mid_run_are_recorded_once_and_spend_follows_them() -> None:
    history = _History([PricePoint(START - 600, 0.9, "USD"),  # in force at the launch
                        PricePoint(START + 1800, 1.2, "USD"),
                        PricePoint(START + 3600, 0.6, "USD")])
    with Ledger() as ledger:
        machine = _spot(ledger)
        report = record_spot_prices(ledger, lambda _n: history, 7.2,  # type: ignore[arg-type,return-value]
                                    now=START + 5400)
        assert (report.machines, report.recorded, report.errors) == (1, 2, {})
        assert [(p.since, p.price) for p in ledger.prices(machine.id)] == [
            (START - 30, 0.9), (START + 1800, 1.2), (START + 3600, 0.6)]
        # 0.5 h at 0.9 + 0.5 h at 1.2 + 0.5 h at 0.6, by hand: $1.35
        cost = spend.cost(spend.history(ledger, ledger.get(machine.id)), START + 5400)
        assert cost.compute == pytest.approx(1.35)
        assert ledger.get(machine.id).price_per_hour == 0.6  # type: ignore[union-attr]
        again = record_spot_prices(ledger, lambda _n: history, 7.2,  # type: ignore[arg-type,return-value]
                                   now=START + 5500)
        assert again.recorded == 0 and len(ledger.prices(machine.id)) == 3
        assert history.asked[-1] == ("us-east-1", "us-east-1a", "g5.xlarge", START + 3600)


def test_ec2_spot_price_on_moto_and_only_spot_machines_that_bill(aws: MotoAws) -> None:
    zone = aws.client("ec2").describe_instance_type_offerings(
        LocationType="availability-zone",
        Filters=[{"Name": "instance-type", "Values": ["g5.xlarge"]}],
    )["InstanceTypeOfferings"][0]["Location"]
    provider = aws.provider()
    with Ledger() as ledger:
        machine = _spot(ledger, zone=zone, price=0.5)
        ledger.add(Machine(id="ondemand", provider="aws", region="us-east-1", zone=zone,
                           instance_type="g5.xlarge", state="running"))
        ended = _spot(ledger, zone=zone + "x")
        ledger.update(ended.id, state="terminated", ended_at=START + 10)
        report = record_spot_prices(ledger, lambda _n: provider, 7.2, now=START + 3600)
        # moto answers 0.00001 USD/h since 2006: older than EC2's 90 days of history and
        # under 5 % of g5.xlarge's $1.006 on-demand, so it is not the price in force
        assert (report.machines, report.recorded, report.errors) == (1, 0, {})
        assert "older than the 90 days" in report.doubted[machine.id]
        # the launch's 0.5 stays the price
        assert [(p.since, p.price) for p in ledger.prices(machine.id)] == [(START - 30, 0.5)]
        cost = spend.cost(spend.history(ledger, ledger.get(machine.id)), START + 3600)
        assert cost.compute == pytest.approx(0.5)


def test_cvm_spot_price_now_in_usd_and_errors_are_kept_per_machine(
        tencent: TencentStandin, tencent_creds: Credentials) -> None:
    provider = TencentProvider(tencent_creds, endpoint=tencent.endpoint, protocol="http")

    def providers(name: str) -> Any:
        if name == "aws":
            raise ProviderError("auth", "Add an AWS account first.")
        return provider

    now = time.time()
    try:
        with Ledger() as ledger:
            cvm = _spot(ledger, "tencent", "ap-guangzhou-3", "GN7.2XLARGE32", price=0.5,
                        region="ap-guangzhou", start=now - 600)
            ec2 = _spot(ledger, start=now - 600)
            report = record_spot_prices(ledger, providers, 7.2, now=now)
            assert report.machines == 2 and report.recorded == 1
            assert list(report.errors) == [ec2.id]
            newest = ledger.prices(cvm.id)[-1]
            assert newest.price == pytest.approx(2.6 / 7.2, abs=1e-6)  # the stand-in's ¥2.60
            assert now - 5 <= newest.since <= time.time()
    finally:
        provider.close()


def test_the_window_records_spot_prices_in_the_background(qtbot, loop,  # type: ignore[no-untyped-def]
                                                          aws: MotoAws) -> None:
    from gpudesk.services.cloud.catalog import load_catalog
    from gpudesk.services.core.settings import Settings
    from gpudesk.ui.shell.main_window import MainWindow

    provider = aws.provider()
    ledger = Ledger()
    machine = _spot(ledger, zone="us-east-1a", price=0.5)
    window = MainWindow(Settings(language="en", welcomed=True), load_catalog(), ledger=ledger,
                        providers=lambda _n: provider)
    try:
        assert window.spot_timer.isActive() and window.spot_timer.interval() == 15 * 60 * 1000
        with qtbot.waitSignal(window.spot_runner.finished, timeout=10000) as asked:
            window.refresh_spot_prices()
        assert asked.args == [True]
        # moto's $0.00001 of 2006 is not believed: the launch's 0.5 stays the price
        assert [p.price for p in ledger.prices(machine.id)] == [0.5]
        assert ledger.get(machine.id).price_per_hour == 0.5  # type: ignore[union-attr]
        assert window.spot_runner.last_box is None  # never a dialog
    finally:
        from PySide6.QtCore import QCoreApplication
        from PySide6.QtCore import QEvent

        window.close()
        # Delete the window before its ledger closes: its timers would otherwise query a
        # closed database in a later test.
        window.deleteLater()
        QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
        ledger.close()
