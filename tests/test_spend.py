"""Spend math against ledgers worked out by hand (each expected number is derived in a comment)."""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from gpudesk.services.money import spend
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine
from gpudesk.services.money.ledger import PriceChange as Price
from gpudesk.services.money.ledger import Transfer as Sent
from gpudesk.services.money.spend import Cost
from gpudesk.services.money.spend import History
from gpudesk.services.money.spend import Rates
from gpudesk.services.money.spend import Stretch
from gpudesk.services.money.spend import Window

SHANGHAI = ZoneInfo("Asia/Shanghai")  # UTC+8 all year: month edges are easy to write down


def _clocked_ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Ledger, list[float]]:
    clock = [0.0]
    monkeypatch.setattr("gpudesk.services.money.ledger.time.time", lambda: clock[0])
    return Ledger(tmp_path / "l.sqlite3"), clock


def test_spot_price_changes_mid_run_split_the_cost(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    ledger, clock = _clocked_ledger(tmp_path, monkeypatch)
    with ledger:
        ledger.add(Machine(id="m-s", provider="aws", market="spot", price_per_hour=0.9))
        ledger.update("m-s", state="running")  # t = 0
        ledger.record_price("m-s", 1.2, since=1800.0)  # spot moved after half an hour
        ledger.record_price("m-s", 0.6, since=5400.0)
        clock[0] = 7200.0
        ledger.update("m-s", state="stopped")
        h = spend.history(ledger, ledger.get("m-s"))  # type: ignore[arg-type]
    # 0.9 × 0.5 h + 1.2 × 1 h + 0.6 × 0.5 h = 0.45 + 1.2 + 0.3
    assert spend.compute_cost(h, now=10_000.0) == pytest.approx(1.95)
    assert spend.price_at(h, 3000.0) == 1.2
    # the row follows the newest price
    assert h.prices[-1] == Price(5400.0, 0.6) and not h.approximate


def test_stop_start_gaps_and_the_60_second_minimum_each_start(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ledger, clock = _clocked_ledger(tmp_path, monkeypatch)
    with ledger:
        ledger.add(Machine(id="m-1", provider="aws", price_per_hour=3.6))
        for start, end in ((0.0, 1000.0), (5000.0, 5020.0), (5030.0, 5040.0)):
            clock[0] = start
            ledger.update("m-1", state="running")
            clock[0] = end
            ledger.update("m-1", state="stopped")
        h = spend.history(ledger, ledger.get("m-1"))  # type: ignore[arg-type]
        row = ledger.get("m-1")
        assert row is not None
        one_figure = spend.machine_spend(ledger, row, 9999.0).total
    assert h.stretches == (Stretch(0, 1000), Stretch(5000, 5020), Stretch(5030, 5040))
    # 1000 s + a 20 s start billed 60 s + a 10 s restart billed 60 s = 1120 s at $0.001/s
    assert spend.billed_spans(h.stretches, spend.rule_for("aws"), 9999.0) == [
        (0.0, 1000.0), (5000.0, 5060.0), (5030.0, 5090.0)]
    assert spend.compute_cost(h, now=9999.0) == pytest.approx(1.12)
    assert one_figure == pytest.approx(1.12)  # the one spend figure agrees
    # A run from t=500 to t=5010: 500 s + 10 s of the second start = 510 s
    assert spend.compute_cost(h, 9999.0, Window(500.0, 5010.0)) == pytest.approx(0.51)


def test_a_20_second_machine_pays_a_minute_on_aws_and_20_seconds_on_tencent() -> None:
    aws = History("m-a", "aws", prices=(Price(0, 3.06),), stretches=(Stretch(100, 120),))
    assert spend.compute_cost(aws, now=200.0) == pytest.approx(3.06 / 60)  # 0.051
    # still running 20 s in: already the full minute
    live = History("m-b", "aws", prices=(Price(0, 3.06),), stretches=(Stretch(100, None),))
    assert spend.compute_cost(live, now=120.0) == pytest.approx(0.051)
    tencent = History("m-t", "tencent", "CNY", prices=(Price(0, 36.0),),
                      stretches=(Stretch(100, 120),))
    assert spend.compute_cost(tencent, now=200.0) == pytest.approx(0.2)  # 20 s × ¥0.01/s
    # per second: 10.4 s is billed as 11 s
    partial = History("m-t2", "tencent", "CNY", prices=(Price(0, 36.0),),
                      stretches=(Stretch(0, 10.4),))
    assert spend.compute_cost(partial, now=20.0) == pytest.approx(0.11)
    own = History("m-o", "own", prices=(Price(0, 9.0),), stretches=(Stretch(0, None),))
    assert spend.cost(own, now=86_400.0).total == 0.0


def test_a_month_boundary_splits_compute_storage_and_transfer() -> None:
    start = datetime(2026, 11, 30, 22, 0, tzinfo=SHANGHAI).timestamp()
    end = datetime(2026, 12, 1, 2, 0, tzinfo=SHANGHAI).timestamp()
    sent_at = datetime(2026, 12, 1, 1, 0, tzinfo=SHANGHAI).timestamp()
    h = History("m-x", "aws", prices=(Price(start, 1.5),), stretches=(Stretch(start, end),),
                disk_gb=100, disk_from=start, disk_to=end, transfers=(Sent(sent_at, 2 * 2**30),))
    months = spend.by_month(h, now=end + 86_400, tz=SHANGHAI)
    assert list(months) == ["2026-11", "2026-12"]
    nov, dec = months["2026-11"], months["2026-12"]
    # 2 h on each side of midnight at $1.5/h
    assert nov.compute == pytest.approx(3.0) and dec.compute == pytest.approx(3.0)
    # 100 GB × $0.08 × 7200 s / (30 days) and / (31 days)
    assert nov.storage == pytest.approx(8 * 7200 / (30 * 86400))  # 0.022222
    assert dec.storage == pytest.approx(8 * 7200 / (31 * 86400))  # 0.021505
    # 2 GiB out on 1 December at $0.09/GiB
    assert nov.transfer == 0.0 and dec.transfer == pytest.approx(0.18)
    whole = spend.cost(h, now=end + 86_400, tz=SHANGHAI)
    assert whole.total == pytest.approx(nov.total + dec.total)


def test_months_follow_local_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "Asia/Shanghai")
    time.tzset()
    try:
        # 2026-12-31 23:30 UTC is already January in Shanghai
        t = datetime(2026, 12, 31, 23, 30, tzinfo=ZoneInfo("UTC")).timestamp()
        assert spend.month_key(t) == "2027-01"
        assert spend.month_key(t, ZoneInfo("UTC")) == "2026-12"
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()


def test_projection_to_the_end_of_a_run_and_to_the_cap() -> None:
    h = History("m-p", "aws", prices=(Price(0, 2.0),), stretches=(Stretch(0, None),))
    now = 1800.0
    spent = spend.cost(h, now).total
    assert spent == pytest.approx(1.0)
    assert spend.rate_per_hour(h, now) == 2.0
    assert spend.projected(h, now, at=7200.0).total == pytest.approx(4.0)  # 2 h at $2
    # $5 cap: $4 to go at $2/h = 2 h after now
    assert spend.cap_reached_at(spent, 2.0, 5.0, now) == pytest.approx(1800.0 + 7200.0)
    assert spend.cap_reached_at(6.0, 2.0, 5.0, now) == now
    assert spend.cap_reached_at(1.0, 0.0, 5.0, now) is None
    stopped = History("m-q", "aws", prices=(Price(0, 2.0),), stretches=(Stretch(0, 3600),))
    assert spend.rate_per_hour(stopped, 7200.0) == 0.0
    assert spend.projected(stopped, 7200.0, at=99_999.0).total == pytest.approx(2.0)


def test_storage_bills_while_stopped_and_csv_rows() -> None:
    nov1 = datetime(2026, 11, 1, tzinfo=SHANGHAI).timestamp()
    h = History("m-d", "aws", prices=(Price(nov1, 1.0),), stretches=(Stretch(nov1, nov1 + 3600),),
                disk_gb=50, disk_from=nov1, name="trainer", instance_type="g5.xlarge",
                market="on-demand")
    t = History("m-t", "tencent", "CNY", prices=(Price(nov1, 36.0),),
                stretches=(Stretch(nov1 + 86_400, nov1 + 86_400 + 100),))
    now = nov1 + 15 * 86_400  # stopped since hour 1; the 50 GB disk has existed 15 days
    d = spend.cost(h, now, tz=SHANGHAI)
    # 50 GB × $0.08 × 15/30 of November = $2.00
    assert d.compute == pytest.approx(1.0) and d.storage == pytest.approx(2.0)
    rows = spend.month_rows([h, t], now, tz=SHANGHAI)
    assert spend.csv_text(rows).splitlines() == [
        "month,machine,name,provider,instance_type,market,compute,storage,transfer,total,"
        "currency,approximate",
        "2026-11,m-d,trainer,aws,g5.xlarge,on-demand,1.0000,2.0000,0.0000,3.0000,USD,no",
        "2026-11,m-t,,tencent,,,1.0000,0.0000,0.0000,1.0000,CNY,no",
    ]
    assert spend.totals(rows) == {"USD": Cost(1.0, 2.0, 0.0, "USD"),
                                  "CNY": Cost(1.0, 0.0, 0.0, "CNY")}
    assert spend.month_rows([h], now, month="2026-10", tz=SHANGHAI) == []
    custom = {"tencent": Rates(storage_per_gb_month=0.5, currency="CNY", known=True)}
    t_disk = History("m-t", "tencent", "CNY", prices=(Price(nov1, 36.0),),
                     stretches=(Stretch(nov1, nov1 + 100),), disk_gb=30, disk_from=nov1,
                     disk_to=nov1 + 3 * 86_400)
    # 30 GB × ¥0.5 × 3/30 of November = ¥1.5
    assert spend.cost(t_disk, now, rates=custom, tz=SHANGHAI).storage == pytest.approx(1.5)
    with pytest.raises(ValueError, match="CNY"):
        _ = d + spend.cost(t, now)


def test_rows_from_before_the_history_tables_are_rebuilt(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ledger, clock = _clocked_ledger(tmp_path, monkeypatch)
    with ledger:
        ledger.add(Machine(id="m-old", provider="aws", price_per_hour=3.6, state="stopped",
                           launched_at=100.0, billed_seconds=600.0, created_at=50.0))
        with ledger._tx() as db:  # as an older gpudesk left it: no history rows
            db.execute("DELETE FROM prices")
        h = spend.history(ledger, ledger.get("m-old"))  # type: ignore[arg-type]
        assert h.approximate and h.stretches == (Stretch(100.0, 700.0),)
        assert spend.compute_cost(h, now=10_000.0) == pytest.approx(0.6)  # 600 s at $0.001/s
        # started again after the upgrade: the new stretch is recorded, the old lump stays
        clock[0] = 2000.0
        ledger.update("m-old", state="running")
        clock[0] = 2100.0
        ledger.update("m-old", state="stopped")
        h = spend.history(ledger, ledger.get("m-old"))  # type: ignore[arg-type]
    assert h.stretches == (Stretch(100.0, 700.0), Stretch(2000.0, 2100.0))
    assert spend.compute_cost(h, now=10_000.0) == pytest.approx(0.7)  # 600 s + 100 s


def test_disk_and_data_out_are_priced_in_the_machines_own_region() -> None:
    """eu-west-1 gp3 is $0.088/GB-month (region_rates.csv, AWS Price List), not us-east-1's."""
    nov1 = datetime(2026, 11, 1, tzinfo=SHANGHAI).timestamp()
    now = nov1 + 15 * 86_400
    costs = {}
    for region in ("us-east-1", "eu-west-1", "ap-south-2"):  # the last: not in the file
        h = History("m-r", "aws", prices=(Price(nov1, 1.0),), stretches=(Stretch(nov1, nov1 + 60),),
                    disk_gb=100, disk_from=nov1, transfers=(Sent(nov1 + 10, 10 * 2**30),),
                    region=region)
        costs[region] = spend.cost(h, now, tz=SHANGHAI)
    # 100 GB × rate × 15/30 of November
    assert costs["us-east-1"].storage == pytest.approx(4.0)
    assert costs["eu-west-1"].storage == pytest.approx(4.4)
    assert costs["ap-south-2"].storage == pytest.approx(4.0)  # the default, as before
    assert {round(c.transfer, 6) for c in costs.values()} == {0.9}  # 10 GiB × $0.09


def test_a_stopped_machine_still_charged_costs_compute_and_disk_by_the_hour(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tencent ¥36/h with 30 GB at ¥0.72/GB-month, stopped KEEP_CHARGING at 1 h: the
    next hour costs 36 + 30 × 0.72 × 3600 / (31 days) ≈ 36.029; stopped STOP_CHARGING
    (its twin): the disk part only."""
    dec1 = datetime(2026, 12, 1, tzinfo=SHANGHAI).timestamp()  # December: 31 days
    rates = {"tencent": Rates(storage_per_gb_month=0.72, currency="CNY", known=True)}
    disk_hour = 30 * 0.72 * 3600 / (31 * 86_400)
    ledger, clock = _clocked_ledger(tmp_path, monkeypatch)
    with ledger:
        for ledger_id, word in (("m-keep", "KEEP_CHARGING"), ("m-free", "STOP_CHARGING")):
            clock[0] = dec1
            ledger.add(Machine(id=ledger_id, provider="tencent", currency="CNY",
                               price_per_hour=36.0, disk_gb=30, created_at=dec1))
            ledger.update(ledger_id, state="running")
            clock[0] = dec1 + 3600
            ledger.update(ledger_id, state="stopped", stopped_mode=word)
        keep, free = (spend.history(ledger, m) for m in ledger.machines())
        at = dec1 + 3600
        assert spend.running(keep) and not spend.running(free)
        assert spend.rate_per_hour(keep, at, rates=rates, tz=SHANGHAI) == \
            pytest.approx(36.0 + disk_hour)
        assert spend.rate_per_hour(free, at, rates=rates, tz=SHANGHAI) == \
            pytest.approx(disk_hour)
        two = at + 3600
        assert spend.cost(keep, two, rates=rates, tz=SHANGHAI).compute == pytest.approx(72.0)
        assert spend.cost(free, two, rates=rates, tz=SHANGHAI).compute == pytest.approx(36.0)
