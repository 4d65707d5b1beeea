"""The ledger: rows survive reopening, billing intervals add up, ended machines stay ended."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from gpudesk.services.money.ledger import STATE_FAILED
from gpudesk.services.money.ledger import STATE_INTENT
from gpudesk.services.money.ledger import Account
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine
from gpudesk.services.money.ledger import new_ledger_id
from gpudesk.services.money.spend import machine_spend


def _spent(ledger: Ledger, m: Machine) -> float:
    """The one spend figure (services.money.spend), at the patched clock."""
    return machine_spend(ledger, m).total


def test_intent_then_result_survive_reopen(tmp_path: Path) -> None:
    path = tmp_path / "l.sqlite3"
    with Ledger(path) as ledger:
        m = ledger.add(Machine(id="m-1", provider="aws", region="us-east-1",
                               instance_type="g5.xlarge", client_token="m-1-1"))
        assert m.state == STATE_INTENT and m.billing
        ledger.update("m-1", cloud_id="i-123", state="pending", step="instance")
    # Another process (a restarted app) sees exactly that.
    with Ledger(path) as again:
        row = again.get("m-1")
        assert row is not None and row.cloud_id == "i-123" and row.state == "pending"
        assert [e.step for e in again.events("m-1")] == ["intent", "instance"]
        assert again.find("i-123") == row


def test_billing_intervals_and_the_aws_minute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                              ) -> None:
    clock = [1000.0]
    monkeypatch.setattr("gpudesk.services.money.ledger.time.time", lambda: clock[0])
    with Ledger(tmp_path / "l.sqlite3") as ledger:
        ledger.add(Machine(id="m-1", provider="aws", price_per_hour=3.6, cloud_id="i-1"))
        ledger.update("m-1", state="pending")
        assert ledger.get("m-1").running_since is None  # type: ignore[union-attr]
        ledger.update("m-1", state="running")
        clock[0] = 1010.0  # 10 s of running bills the 60 s minimum
        m = ledger.get("m-1")
        assert m is not None and m.billed_s() == 60.0 and _spent(ledger, m) == pytest.approx(0.06)
        ledger.update("m-1", state="stopped")
        clock[0] = 5000.0  # stopped time is free
        m = ledger.get("m-1")
        assert m is not None and m.billed_seconds == 60.0
        assert _spent(ledger, m) == pytest.approx(0.06)
        ledger.update("m-1", state="running")
        clock[0] = 5000.0 + 3600
        m = ledger.get("m-1")
        assert m is not None and m.billed_s() == 60.0 + 3600 and m.uptime_s() == 3600
        assert _spent(ledger, m) == pytest.approx(3.66)
        ledger.update("m-1", state="terminated")
        m = ledger.get("m-1")
        assert m is not None and m.ended and not m.billing and m.ended_at == 5000.0 + 3600


def test_tencent_bills_by_the_second(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [0.0]
    monkeypatch.setattr("gpudesk.services.money.ledger.time.time", lambda: clock[0])
    with Ledger(tmp_path / "l.sqlite3") as ledger:
        ledger.add(Machine(id="m-t", provider="tencent", price_per_hour=36.0))
        ledger.update("m-t", state="running")
        clock[0] = 10.0
        assert _spent(ledger, ledger.get("m-t")) == pytest.approx(0.1)  # type: ignore[arg-type]


def test_a_billing_machine_cannot_be_forgotten(tmp_path: Path) -> None:
    with Ledger(tmp_path / "l.sqlite3") as ledger:
        ledger.add(Machine(id="m-1", provider="aws", state="running", cloud_id="i-1"))
        with pytest.raises(ValueError, match="billing"):
            ledger.remove("m-1")
        ledger.update("m-1", state=STATE_FAILED)
        ledger.remove("m-1")
        assert ledger.get("m-1") is None


def test_unknown_columns_are_refused(tmp_path: Path) -> None:
    with Ledger(tmp_path / "l.sqlite3") as ledger:
        ledger.add(Machine(id="m-1", provider="aws"))
        with pytest.raises(KeyError):
            ledger.update("m-1", secret="x")


def test_old_file_gains_new_columns(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE machines (id TEXT PRIMARY KEY, provider TEXT, state TEXT)")
    db.execute("INSERT INTO machines VALUES ('m-old', 'aws', 'running')")
    db.commit()
    db.close()
    with Ledger(path) as ledger:
        old = ledger.get("m-old")
        assert old is not None and old.state == "running" and old.price_per_hour == 0.0
        assert old.billing


def test_accounts_keep_no_secret(tmp_path: Path) -> None:
    with Ledger(tmp_path / "l.sqlite3") as ledger:
        ledger.save_account(Account("aws", "AKIA…MPLE", "123456789012", "arn:x", True, 5.0))
        assert ledger.account("aws") == Account("aws", "AKIA…MPLE", "123456789012", "arn:x",
                                                True, 5.0, ledger.account("aws").added_at)  # type: ignore[union-attr]
        ledger.delete_account("aws")
        assert ledger.accounts() == []


def test_ledger_ids_are_unique_and_tag_safe() -> None:
    ids = {new_ledger_id() for _ in range(1000)}
    assert len(ids) == 1000
    assert all(len(i) == 12 and i.startswith("m-") and i[2:].isalnum() for i in ids)


def test_a_stop_that_keeps_charging_keeps_the_billed_interval_open(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """CVM KEEP_CHARGING / ECS KeepCharging: stopped, billed in full; STOP_CHARGING and
    StopCharging: the interval closes at the stop."""
    clock = [0.0]
    monkeypatch.setattr("gpudesk.services.money.ledger.time.time", lambda: clock[0])
    with Ledger(tmp_path / "l.sqlite3") as ledger:
        for ledger_id, provider, keep, free in (("m-t", "tencent", "KEEP_CHARGING",
                                                 "STOP_CHARGING"),
                                                ("m-a", "aliyun", "KeepCharging",
                                                 "StopCharging")):
            clock[0] = 0.0
            ledger.add(Machine(id=ledger_id, provider=provider, price_per_hour=36.0))
            ledger.update(ledger_id, state="running")
            clock[0] = 100.0
            ledger.update(ledger_id, state="stopped", stopped_mode=keep)
            clock[0] = 200.0
            m = ledger.get(ledger_id)
            assert m is not None and m.billing and m.running_since == 0.0
            assert _spent(ledger, m) == pytest.approx(2.0)  # 200 s at 36/h: still counting
            m = ledger.update(ledger_id, stopped_mode=free)  # started & stopped free since
            clock[0] = 1000.0
            assert not m.billing and m.billed_seconds == 200.0
            assert _spent(ledger, m) == pytest.approx(2.0)
