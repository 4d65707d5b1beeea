"""States that are billing states: a stop that keeps billing is counted as billing.

Each cloud's own word decides (EC2 stopped: the disk only; CVM ``StopChargingMode``;
ECS ``StoppedMode``), read back from the cloud (the Tencent and Aliyun stand-ins over
HTTP with the real SDKs), recorded in the ledger, and counted by ``spend.machine_spend``: a
stopped machine its cloud keeps charging costs its compute price by the hour; one
stopped without charge, its disk.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from aliyun_standin import AliyunStandin
from fixtures_aliyun import aliyun  # noqa: F401
from fixtures_aliyun import aliyun_creds  # noqa: F401
from fixtures_aliyun import aliyun_server  # noqa: F401
from fixtures_keyring import memory_keyring  # noqa: F401
from fixtures_tencent import tencent  # noqa: F401
from fixtures_tencent import tencent_creds  # noqa: F401
from fixtures_tencent import tencent_server  # noqa: F401
from tencent_standin import TencentStandin

from gpudesk.cli.entry import main
from gpudesk.services.cloud import credentials
from gpudesk.services.cloud import machines
from gpudesk.services.cloud.accounts import TENCENT_ENDPOINT_ENV
from gpudesk.services.cloud.providers.aliyun import AliyunProvider
from gpudesk.services.cloud.providers.base import Credentials
from gpudesk.services.cloud.providers.base import LaunchRequest
from gpudesk.services.cloud.providers.base import ProviderError
from gpudesk.services.cloud.providers.tencent import STOP_CHARGING
from gpudesk.services.cloud.providers.tencent import STOP_KEEP_CHARGING
from gpudesk.services.cloud.providers.tencent import TencentProvider
from gpudesk.services.cloud.reconcile import reconcile
from gpudesk.services.core import machine_states as ms
from gpudesk.services.money import spend
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine

REGION = "ap-guangzhou"
ZONE = "ap-guangzhou-3"
T4 = "GN7.2XLARGE32"
PRICE = 8.0  # CNY/hour in the ledger
DISK_GB = 100.0
PUBLIC_KEY = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQgpudeskTestKeyOnlyForTheStandinServer00 me@lap"
RATES = {"tencent": spend.Rates(storage_per_gb_month=0.5, currency="CNY", known=True)}


@pytest.fixture
def ledger() -> Any:
    """The ledger `gpudesk show` reads too (under the test's own GPUDESK_HOME)."""
    with Ledger() as led:
        yield led


def _factory(cloud: TencentStandin, creds: Credentials, mode: str) -> Any:
    made: list[TencentProvider] = []

    def providers(_name: str) -> TencentProvider:
        p = TencentProvider(creds, endpoint=cloud.endpoint, protocol="http", stopped_mode=mode,
                            sleep=lambda _s: None)
        made.append(p)
        return p

    return providers


def _running_machine(cloud: TencentStandin, creds: Credentials, ledger: Ledger,
                     ledger_id: str = "m-t000000001", market: str = "on-demand") -> Machine:
    """A machine the stand-in runs and the ledger bills (running for ten minutes)."""
    p = TencentProvider(creds, endpoint=cloud.endpoint, protocol="http")
    key = p.ensure_key_pair(REGION, "gpudesk_test", PUBLIC_KEY)
    group = p.ensure_security_group(REGION, "203.0.113.7")
    inst = p.run_instance(LaunchRequest(
        ledger_id=ledger_id, region=REGION, instance_type=T4, zone=ZONE, key_name=key,
        security_group=group, market=market,  # type: ignore[arg-type]
        max_price=20.0 if market == "spot" else None))
    p.describe(REGION, [inst.cloud_id])  # PENDING → RUNNING
    p.close()
    started = time.time() - 600
    return ledger.add(Machine(
        id=ledger_id, provider="tencent", region=REGION, zone=ZONE, instance_type=T4,
        market=market, cloud_id=inst.cloud_id, state="running", price_per_hour=PRICE,
        currency="CNY", disk_gb=DISK_GB, launched_at=started, running_since=started,
        created_at=started))


def _stop(ledger: Ledger, m: Machine, providers: Any) -> Machine:
    asyncio.run(machines.act(ledger, m.id, "stop", providers))
    return asyncio.run(machines.settle(ledger, m.id, providers, poll_s=0))


def _hour_later(ledger: Ledger, m: Machine) -> spend.Cost:
    """What one more hour from now adds to the machine's one spend figure."""
    now = time.time()
    before = spend.machine_spend(ledger, m, now, rates=RATES)
    after = spend.machine_spend(ledger, m, now + 3600, rates=RATES)
    return spend.Cost(after.compute - before.compute, after.storage - before.storage,
                      after.transfer - before.transfer, "CNY")


def _disk_hour(now: float) -> float:
    month = spend.month_window(spend.month_key(now))
    assert month.start is not None and month.end is not None
    return DISK_GB * 0.5 * 3600 / (month.end - month.start)


def _show(m: Machine, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main(["show", m.id, "--json"]) == 0
    return dict(json.loads(capsys.readouterr().out))


# --------------------------------------------------------------------------- the rule


@pytest.mark.parametrize(("provider", "state", "word", "billing", "compute", "label"), [
    ("aws", "stopped", "", False, False, "stopped (disk only)"),
    ("tencent", "stopped", "KEEP_CHARGING", True, True, "KEEP_CHARGING"),
    ("tencent", "stopped", "NOT_APPLICABLE", True, True, "NOT_APPLICABLE"),
    ("tencent", "stopped", "STOP_CHARGING", False, False, "STOP_CHARGING"),
    ("tencent", "stopped", "", True, True, "stopped (still billing)"),  # unknown: billing
    ("tencent", "stopping", "KEEP_CHARGING", True, True, "KEEP_CHARGING"),
    ("tencent", "stopping", "STOP_CHARGING", True, False, "STOP_CHARGING"),
    ("aliyun", "stopped", "KeepCharging", True, True, "KeepCharging"),
    ("aliyun", "stopped", "Not-applicable", True, True, "Not-applicable"),
    ("aliyun", "stopped", "StopCharging", False, False, "StopCharging"),
    ("tencent", "running", "NOT_APPLICABLE", True, True, "running"),
    ("tencent", "terminated", "KEEP_CHARGING", False, False, "terminated"),
    ("own", "stopped", "KEEP_CHARGING", False, False, "KEEP_CHARGING"),
])
def test_each_clouds_word_decides_whether_a_stopped_machine_bills(
        provider: str, state: str, word: str, billing: bool, compute: bool, label: str) -> None:
    assert ms.is_billing(provider, state, word) is billing
    assert ms.bills_compute(provider, state, word) is compute
    assert ms.billing_state(provider, state, word) == label
    m = Machine(id="m-x", provider=provider, state=state, stopped_mode=word)
    assert (m.billing, m.compute_billing) == (billing, compute)
    assert (m.billing_label == "stopped (still billing)") is (state == "stopped" and compute)


# --------------------------------------------------------------------------- Tencent


def test_a_tencent_stop_that_keeps_charging_bills_at_the_compute_rate(
        tencent: TencentStandin, tencent_creds: Credentials, ledger: Ledger,  # noqa: F811
        capsys: pytest.CaptureFixture[str]) -> None:
    m = _running_machine(tencent, tencent_creds, ledger)
    row = _stop(ledger, m, _factory(tencent, tencent_creds, STOP_KEEP_CHARGING))
    assert tencent.params("StopInstances")[-1]["StoppedMode"] == "KEEP_CHARGING"
    assert (row.state, row.stopped_mode) == ("stopped", "KEEP_CHARGING")
    assert row.billing and row.compute_billing and row.billing_label == "stopped (still billing)"
    # one billed stretch, never closed by the stop: spend keeps counting at ¥8/h
    (stretch,) = ledger.intervals(row.id)
    assert stretch.end is None and row.running_since == m.running_since
    added = _hour_later(ledger, row)
    assert added.compute == pytest.approx(PRICE)
    assert added.storage == pytest.approx(_disk_hour(time.time()), rel=1e-3)
    notes = [e.detail for e in ledger.events(row.id) if e.step == "stop-billing"]
    assert notes and "KEEP_CHARGING" in notes[-1] and "as if it were running" in notes[-1]
    shown = _show(row, capsys)
    assert shown["billing_state"] == "KEEP_CHARGING" and shown["billing"] is True


def test_a_tencent_stop_without_charge_bills_the_disk_only(
        tencent: TencentStandin, tencent_creds: Credentials, ledger: Ledger,  # noqa: F811
        capsys: pytest.CaptureFixture[str]) -> None:
    m = _running_machine(tencent, tencent_creds, ledger)
    providers = _factory(tencent, tencent_creds, STOP_CHARGING)
    assert asyncio.run(machines.stop_warning(ledger, m.id, providers)) == ""  # it can
    row = _stop(ledger, m, providers)
    assert tencent.params("StopInstances")[-1]["StoppedMode"] == "STOP_CHARGING"
    assert (row.state, row.stopped_mode) == ("stopped", "STOP_CHARGING")
    assert not row.billing and not row.compute_billing and row.billing_label == "stopped"
    (stretch,) = ledger.intervals(row.id)
    assert stretch.end is not None
    added = _hour_later(ledger, row)
    assert added.compute == 0.0
    assert added.storage == pytest.approx(_disk_hour(time.time()), rel=1e-3)
    notes = [e.detail for e in ledger.events(row.id) if e.step == "stop-billing"]
    assert notes and notes[-1].startswith("stopped with STOP_CHARGING")
    assert _show(row, capsys)["billing_state"] == "STOP_CHARGING"


def test_a_shutdown_from_inside_keeps_billing_and_a_stop_then_is_not_success(
        tencent: TencentStandin, tencent_creds: Credentials, ledger: Ledger) -> None:  # noqa: F811
    """The agent's action is an OS shutdown: CVM keeps charging. Reconcile counts it
    billing, and "already stopped" (InstanceStateStopped) is said, not taken as done."""
    m = _running_machine(tencent, tencent_creds, ledger)
    tencent.shutdown_inside(m.cloud_id)
    providers = _factory(tencent, tencent_creds, STOP_CHARGING)
    report = asyncio.run(reconcile(ledger, providers, names=["tencent"]))
    row = ledger.get(m.id)
    assert row is not None and (row.state, row.stopped_mode) == ("stopped", "KEEP_CHARGING")
    assert [b.id for b in report.billing] == [m.id]  # reconcile's "still billing" alert
    (stretch,) = ledger.intervals(m.id)
    assert stretch.end is None  # billed on through the shutdown
    assert _hour_later(ledger, row).compute == pytest.approx(PRICE)

    with pytest.raises(ProviderError) as info:
        asyncio.run(machines.act(ledger, m.id, "stop", providers))
    text = info.value.message()
    assert "already stopped" in text and "still charges" in text and "KEEP_CHARGING" in text
    assert info.value.detail.startswith("[UnsupportedOperation.InstanceStateStopped]")
    row = ledger.get(m.id)
    assert row is not None and row.billing and row.stopped_mode == "KEEP_CHARGING"
    assert [e.step for e in ledger.events(m.id)][-2:] == ["stop-requested", "stop-refused"]


def test_already_stopped_without_charge_is_done(
        tencent: TencentStandin, tencent_creds: Credentials, ledger: Ledger) -> None:  # noqa: F811
    m = _running_machine(tencent, tencent_creds, ledger)
    providers = _factory(tencent, tencent_creds, STOP_CHARGING)
    _stop(ledger, m, providers)
    row = asyncio.run(machines.act(ledger, m.id, "stop", providers))  # a double click
    assert not row.billing and row.stopped_mode == "STOP_CHARGING"


def test_a_stop_that_cannot_stop_the_charge_is_said_before_it(
        tencent: TencentStandin, tencent_creds: Credentials, ledger: Ledger) -> None:  # noqa: F811
    """Spot (and prepaid, and local-disk) machines cannot stop charging: said before the
    stop, refused by CVM with STOP_CHARGING, never shown as not billing."""
    m = _running_machine(tencent, tencent_creds, ledger, market="spot")
    providers = _factory(tencent, tencent_creds, STOP_CHARGING)
    warning = asyncio.run(machines.stop_warning(ledger, m.id, providers))
    assert "cannot stop charging" in warning and "spot (SPOTPAID)" in warning
    assert "Terminate it" in warning
    with pytest.raises(ProviderError) as info:
        asyncio.run(machines.act(ledger, m.id, "stop", providers))
    assert info.value.detail.startswith("[UnsupportedOperation.StoppedModeStopCharging]")
    assert "cannot stop charging" in info.value.message()
    row = ledger.get(m.id)
    assert row is not None and row.state == "running" and row.billing
    # asked with KEEP_CHARGING it stops, and bills on
    keep = _factory(tencent, tencent_creds, STOP_KEEP_CHARGING)
    assert "StoppedMode KEEP_CHARGING" in asyncio.run(machines.stop_warning(ledger, m.id, keep))
    row = _stop(ledger, m, keep)
    assert row.state == "stopped" and row.billing and row.compute_billing
    # a machine on a local disk cannot either
    local = _running_machine(tencent, tencent_creds, ledger, ledger_id="m-t000000002")
    tencent.state.instances[local.cloud_id]["SystemDisk"]["DiskType"] = "LOCAL_SSD"
    assert "local disk (LOCAL_SSD)" in asyncio.run(machines.stop_warning(ledger, local.id,
                                                                         providers))


def test_gpudesk_stop_says_before_the_stop_that_it_cannot_end_the_bill(
        tencent: TencentStandin, tencent_creds: Credentials, ledger: Ledger,  # noqa: F811
        memory_keyring: Any, monkeypatch: pytest.MonkeyPatch,  # noqa: F811
        capsys: pytest.CaptureFixture[str]) -> None:
    """`gpudesk stop` on a spot CVM machine: the warning first, then CVM's refusal in words;
    on an on-demand one it stops without charge and says what still bills."""
    monkeypatch.setenv(TENCENT_ENDPOINT_ENV, f"http://{tencent.endpoint}")
    credentials.save_credentials(tencent_creds)
    spot = _running_machine(tencent, tencent_creds, ledger, market="spot")
    assert main(["stop", spot.id]) != 0
    err = capsys.readouterr().err
    assert "warning: Tencent Cloud cannot stop charging" in err and "spot (SPOTPAID)" in err
    assert err.index("warning:") < err.index("error:")
    plain = _running_machine(tencent, tencent_creds, ledger, ledger_id="m-t000000003")
    assert main(["stop", plain.id]) == 0
    out = capsys.readouterr()
    assert "warning" not in out.err and "stopped with STOP_CHARGING" in out.out


# --------------------------------------------------------------------------- EC2, ledger


def test_ec2_stopped_is_disk_only(ledger: Ledger, capsys: pytest.CaptureFixture[str]) -> None:
    started = time.time() - 600
    ledger.add(Machine(id="m-a", provider="aws", cloud_id="i-1", state="running",
                       price_per_hour=1.0, running_since=started, launched_at=started,
                       disk_gb=100))
    row = ledger.update("m-a", state="stopped")
    assert not row.billing and row.stopped_mode == ""
    (stretch,) = ledger.intervals("m-a")
    assert stretch.end is not None
    now = time.time()
    added = (spend.machine_spend(ledger, row, now + 3600).total
             - spend.machine_spend(ledger, row, now).total)
    assert 0.0 < added < 0.02  # 100 GB of gp3 for an hour, no compute
    assert _show(row, capsys)["billing_state"] == "stopped (disk only)"


def test_a_word_learnt_later_opens_the_billed_stretch_then(ledger: Ledger) -> None:
    """A ledger from before this knew a stopped Tencent machine as free; the cloud's word,
    once read, makes it billing from then on (and STOP_CHARGING keeps it closed)."""
    ledger.add(Machine(id="m-k", provider="tencent", cloud_id="ins-aaaaaaaa", state="running",
                       price_per_hour=PRICE, running_since=time.time() - 60))
    ledger.update("m-k", state="stopped", stopped_mode="STOP_CHARGING")
    assert ledger.intervals("m-k")[-1].end is not None
    row = ledger.update("m-k", stopped_mode="KEEP_CHARGING", step="reconcile")
    assert row.billing and row.running_since is not None
    assert [i.end is None for i in ledger.intervals("m-k")] == [False, True]
    row = ledger.update("m-k", state="running", stopped_mode="NOT_APPLICABLE")
    assert len(ledger.intervals("m-k")) == 2  # still the same stretch


def test_an_old_ledger_gains_the_stopped_mode_column(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE machines (id TEXT PRIMARY KEY, provider TEXT, state TEXT,"
               " cloud_id TEXT)")
    db.execute("INSERT INTO machines VALUES ('m-old', 'tencent', 'stopped', 'ins-bbbbbbbb')")
    db.commit()
    db.close()
    with Ledger(path) as ledger:
        old = ledger.get("m-old")
        # no word yet: a stopped Tencent machine is billing until the cloud says otherwise
        assert old is not None and old.stopped_mode == "" and old.billing
        assert ledger.update("m-old", stopped_mode="STOP_CHARGING").billing is False


# --------------------------------------------------------------------------- Aliyun


A10 = "ecs.gn7i-c8g1.2xlarge"
ALI_REGION = "cn-hangzhou"


def _ali_machine(cloud: AliyunStandin, creds: Credentials, ledger: Ledger,
                 ledger_id: str = "m-a000000001") -> tuple[Machine, Any]:
    def providers(_name: str) -> AliyunProvider:
        return AliyunProvider(creds, endpoint=cloud.endpoint, protocol="http",
                              sleep=lambda _s: None)

    p = providers("aliyun")
    key = p.ensure_key_pair(ALI_REGION, "gpudesk-abc", PUBLIC_KEY)
    group = p.ensure_security_group(ALI_REGION, "203.0.113.7/32")
    inst = p.run_instance(LaunchRequest(ledger_id=ledger_id, region=ALI_REGION,
                                        instance_type=A10, zone="cn-hangzhou-h",
                                        key_name=key, security_group=group))
    for _ in range(5):  # Pending → Running
        if p.describe(ALI_REGION, [inst.cloud_id])[0].state == "running":
            break
    p.close()
    started = time.time() - 600
    return ledger.add(Machine(
        id=ledger_id, provider="aliyun", region=ALI_REGION, zone="cn-hangzhou-h",
        instance_type=A10, cloud_id=inst.cloud_id, state="running", price_per_hour=PRICE,
        currency="CNY", disk_gb=DISK_GB, launched_at=started, running_since=started,
        created_at=started)), providers


def _ali_hour_later(ledger: Ledger, m: Machine) -> float:
    now = time.time()
    return (spend.machine_spend(ledger, m, now + 3600).compute
            - spend.machine_spend(ledger, m, now).compute)


def test_an_aliyun_stop_that_falls_back_to_keep_charging_bills_at_the_compute_rate(
        aliyun: AliyunStandin, aliyun_creds: Credentials, ledger: Ledger,  # noqa: F811
        capsys: pytest.CaptureFixture[str]) -> None:
    """ECS applies KeepCharging without an error where economical mode cannot apply."""
    m, providers = _ali_machine(aliyun, aliyun_creds, ledger)
    aliyun.keep_charging_types.add(A10)
    row = _stop(ledger, m, providers)
    assert aliyun.params("StopInstances")[-1]["StoppedMode"] == "StopCharging"  # asked
    assert (row.state, row.stopped_mode) == ("stopped", "KeepCharging")
    assert row.billing and row.billing_label == "stopped (still billing)"
    assert ledger.intervals(row.id)[-1].end is None
    assert _ali_hour_later(ledger, row) == pytest.approx(PRICE)
    assert _show(row, capsys)["billing_state"] == "KeepCharging"


def test_an_aliyun_stop_with_stop_charging_bills_the_disk_only(
        aliyun: AliyunStandin, aliyun_creds: Credentials, ledger: Ledger,  # noqa: F811
        capsys: pytest.CaptureFixture[str]) -> None:
    m, providers = _ali_machine(aliyun, aliyun_creds, ledger)
    assert asyncio.run(machines.stop_warning(ledger, m.id, providers)) == ""
    row = _stop(ledger, m, providers)
    assert (row.state, row.stopped_mode, row.billing) == ("stopped", "StopCharging", False)
    assert _ali_hour_later(ledger, row) == 0.0
    assert _show(row, capsys)["billing_state"] == "StopCharging"


def test_an_aliyun_machine_already_stopped_and_charged_is_said_not_done(
        aliyun: AliyunStandin, aliyun_creds: Credentials, ledger: Ledger) -> None:  # noqa: F811
    m, providers = _ali_machine(aliyun, aliyun_creds, ledger)
    # the OS shut itself down (the agent): ECS keeps charging it
    aliyun.state.instances[m.cloud_id].update(Status="Stopped", StoppedMode="KeepCharging")
    report = asyncio.run(reconcile(ledger, providers, names=["aliyun"]))
    assert [b.id for b in report.billing] == [m.id]
    with pytest.raises(ProviderError) as info:
        asyncio.run(machines.act(ledger, m.id, "stop", providers))
    assert "already stopped" in info.value.message() and "KeepCharging" in info.value.message()
    assert "StopInstances" not in aliyun.calls
    row = ledger.get(m.id)
    assert row is not None and row.billing and row.stopped_mode == "KeepCharging"
    assert _ali_hour_later(ledger, row) == pytest.approx(PRICE)
    # a subscription machine: said before the stop
    aliyun.state.instances[m.cloud_id]["InstanceChargeType"] = "PrePaid"
    warning = asyncio.run(machines.stop_warning(ledger, m.id, providers))
    assert "subscription" in warning and "Terminate it" in warning
