"""A stop that stops the bill, in each cloud's terms: EC2's shutdown behaviour on moto,
CVM's action timer on the Tencent stand-in; and `gpudesk launch --budget` / `show --json`."""
# ruff: noqa: F811 - fixtures imported from fixtures_* arrive as parameters

from __future__ import annotations

import asyncio
import json
import time
from datetime import UTC
from datetime import datetime
from typing import Any

import pytest
import yaml
from fixtures_aws import MotoAws  # noqa: F401
from fixtures_aws import aws  # noqa: F401
from fixtures_aws import moto_server  # noqa: F401
from fixtures_keyring import memory_keyring  # noqa: F401
from fixtures_tencent import tencent  # noqa: F401
from fixtures_tencent import tencent_creds  # noqa: F401
from fixtures_tencent import tencent_server  # noqa: F401
from tencent_standin import TencentStandin

from gpudesk.cli.entry import main
from gpudesk.services.cloud import credentials
from gpudesk.services.cloud import guard
from gpudesk.services.cloud.launcher import Launcher
from gpudesk.services.cloud.launcher import LaunchPlan
from gpudesk.services.cloud.providers.base import Credentials
from gpudesk.services.cloud.providers.base import LaunchRequest
from gpudesk.services.cloud.providers.tencent import TencentProvider
from gpudesk.services.cloud.providers.user_data import decode_base64
from gpudesk.services.core.settings import Settings
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.remote import first_boot
from gpudesk.services.remote.host_keys import PinStore

ADDRESS = "203.0.113.7/32"
R = "us-east-1"


def _attr(aws: MotoAws, cloud_id: str, name: str) -> Any:
    return aws.client("ec2").describe_instance_attribute(InstanceId=cloud_id, Attribute=name)


@pytest.fixture
def cloud(aws: MotoAws, memory_keyring: Any) -> MotoAws:
    credentials.save_credentials(aws.credentials)
    aws.publish_dlami(R)
    return aws


def _launch(ledger: Ledger, **kw: Any) -> Any:
    plan = LaunchPlan(provider="aws", instance_type="g5.xlarge", region=R,
                      allow_from=ADDRESS, price_per_hour=1.006, wait_ssh=False, **kw)
    launcher = Launcher(ledger, poll_s=0.01,
                        first_boot=first_boot.for_launch(lambda: Settings(), ledger))
    return asyncio.run(launcher.launch(plan)).machine


def test_aws_launch_carries_guard_user_data_and_terminates_on_shutdown(
        cloud: MotoAws, capsys: pytest.CaptureFixture[str]) -> None:
    with Ledger() as ledger:
        m = _launch(ledger, budget=25.0, on_budget="terminate")
        # EC2 itself turns the agent's power-off into a termination: nothing bills after it
        assert _attr(cloud, m.cloud_id, "instanceInitiatedShutdownBehavior")[
            "InstanceInitiatedShutdownBehavior"]["Value"] == "terminate"
        user_data = decode_base64(_attr(cloud, m.cloud_id, "userData")["UserData"]["Value"])
        config = yaml.safe_load(user_data)  # gzip on EC2: cloud-init reads it unpacked
        text = config["write_files"][0]["content"]
        assert text.startswith("#!/bin/bash") and first_boot.UNIT in text
        rules = json.loads(text.split("<<'GPUDESK_RULES'\n")[1].split("\nGPUDESK_RULES")[0])
        assert rules["budget"]["cap"] == 25.0 and rules["budget"]["action"] == "terminate"
        # compute + the 100 GB gp3 system disk (0.08 USD per GB-month, 730 h): both bill
        assert rules["budget"]["price_per_hour"] == pytest.approx(1.006 + 100 * 0.08 / 730)
        # the host key: known (pinned, recorded, its private half in the keyring) before SSH
        assert m.host_key_fingerprint.startswith("SHA256:")
        assert PinStore().fingerprints(f"gpudesk-{m.name}") == [m.host_key_fingerprint]
        pem = credentials.load_private_key(first_boot.host_key_entry(m.id))
        assert pem is not None and config["ssh_keys"]["ed25519_private"] == pem
        # the user changes the action: ModifyInstanceAttribute follows
        provider = cloud.provider()
        row = ledger.get(m.id)
        assert row is not None
        g = guard.apply(ledger, row, provider, 25.0, "stop", time.time())
        assert _attr(cloud, m.cloud_id, "instanceInitiatedShutdownBehavior")[
            "InstanceInitiatedShutdownBehavior"]["Value"] == "stop"
        # the launch gave it a role that may only stop or terminate itself (issue 21)
        assert g.enforced_by == ("agent", "shutdown-behavior", "instance-role")
    assert main(["show", m.id, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["host_key_fingerprint"] == m.host_key_fingerprint
    # (``installed``: whether the agent's guard runs there, asked over SSH: not here)
    assert {k: v for k, v in shown["guard"].items() if k != "installed"} == {
        "budget": 25.0, "action": "stop",
        "enforced_by": ["agent", "shutdown-behavior", "instance-role"], "cloud_timer_at": None}
    assert any("still bills its disk" in line for line in shown["guard_says"])


def test_a_one_time_spot_machine_is_terminated_by_a_shutdown_whatever_the_action(
        cloud: MotoAws) -> None:
    provider = cloud.provider()
    group = provider.ensure_security_group(R, ADDRESS)
    inst = provider.run_instance(LaunchRequest("m-spot00001", R, "g5.xlarge", "spot",
                                               security_group=group, on_budget="stop"))
    assert _attr(cloud, inst.cloud_id, "instanceInitiatedShutdownBehavior")[
        "InstanceInitiatedShutdownBehavior"]["Value"] == "terminate"


def _iso(t: float) -> str:
    return datetime.fromtimestamp(int(t), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_tencent_terminates_the_machine_itself_at_budget_over_price(
        tencent: TencentStandin, tencent_creds: Credentials) -> None:
    now = time.time()
    # ¥100 at ¥8.68/h: the cloud ends it 11.52 h from now, laptop and agent or not
    g = guard.plan("tencent", 100.0, "terminate", 8.68, 0.0, now)
    assert g.enforced_by == ("agent", "cloud-timer")
    assert g.cloud_timer_at == pytest.approx(now + 100 / 8.68 * 3600, abs=1.0)
    p = TencentProvider(tencent_creds, endpoint=tencent.endpoint, protocol="http")
    try:
        group = p.ensure_security_group("ap-guangzhou", "203.0.113.7")
        inst = p.run_instance(LaunchRequest(
            "m-tc0000001", "ap-guangzhou", "GN7.2XLARGE32", zone="ap-guangzhou-3",
            security_group=group, budget=100.0, on_budget="terminate", price_per_hour=8.68,
            cloud_timer_at=g.cloud_timer_at, user_data="#!/bin/bash\necho guard\n"))
        (sent,) = [params for action, _r, params in tencent.requests if action == "RunInstances"]
        assert sent["ActionTimer"] == {"TimerAction": "TerminateInstances",
                                       "ActionTime": _iso(g.cloud_timer_at or 0)}
        assert decode_base64(sent["UserData"]) == "#!/bin/bash\necho guard\n"  # of gzip
        (timer,) = p.action_timers("ap-guangzhou", inst.cloud_id)
        assert timer["ActionTime"] == _iso(g.cloud_timer_at or 0)
        # the budget is raised to ¥200: the old timer goes, the new one is imported
        later = guard.plan("tencent", 200.0, "terminate", 8.68, 0.0, now)
        p.set_guard("ap-guangzhou", inst.cloud_id, "terminate", "on-demand",
                    later.cloud_timer_at)
        (timer,) = p.action_timers("ap-guangzhou", inst.cloud_id)
        assert timer["ActionTime"] == _iso(later.cloud_timer_at or 0)
        # at that moment CVM terminates it with nobody connected (the stand-in's clock)
        assert tencent.fire_timers(now + 3600) == []
        assert tencent.fire_timers((later.cloud_timer_at or 0) + 1) == [inst.cloud_id]
        (gone,) = p.describe("ap-guangzhou", [inst.cloud_id])
        assert gone.state == "terminated"  # TERMINATING: billing has ended
    finally:
        p.close()


def test_tencent_refuses_a_timer_less_than_five_minutes_ahead(
        tencent: TencentStandin, tencent_creds: Credentials) -> None:
    from gpudesk.services.cloud.providers.base import ProviderError

    now = time.time()
    assert guard.timer_at(10.0, 9.99, 8.68, now) >= now + 300  # guard.plan never asks that
    p = TencentProvider(tencent_creds, endpoint=tencent.endpoint, protocol="http")
    try:
        group = p.ensure_security_group("ap-guangzhou", "203.0.113.7")
        with pytest.raises(ProviderError):
            p.run_instance(LaunchRequest("m-tc0000002", "ap-guangzhou", "GN7.2XLARGE32",
                                         zone="ap-guangzhou-3", security_group=group,
                                         cloud_timer_at=now + 60))
    finally:
        p.close()


def test_tencent_stop_is_said_plainly() -> None:
    from gpudesk.services.money.ledger import Machine

    m = Machine(id="m-1", provider="tencent", budget=50.0, on_budget="stop",
                enforced_by="agent", currency="USD")
    (first, *_rest) = guard.english(m)
    assert "keeps charging" in first and "choose terminate" in first
    assert guard.plan("tencent", 50.0, "stop", 1.2, 0.0, 0.0).enforced_by == ("agent",)


def test_a_stop_while_gpudesk_was_closed_bills_until_ec2_says_not_until_noticed(
        cloud: MotoAws, monkeypatch: pytest.MonkeyPatch) -> None:
    """The ledger closes the billed interval at EC2's StateTransitionReason time."""
    from gpudesk.services.cloud import reconcile
    from gpudesk.services.cloud.providers import aws_offers
    from gpudesk.services.money import spend
    from gpudesk.services.money.ledger import Machine

    assert aws_offers.state_since({"StateTransitionReason": "User initiated "
                                   "(2026-12-03 19:10:34 GMT)"}, "stopped") == \
        datetime(2026, 12, 3, 19, 10, 34, tzinfo=UTC).timestamp()
    provider = cloud.provider()
    group = provider.ensure_security_group(R, ADDRESS)
    inst = provider.run_instance(LaunchRequest("m-dated0001", R, "g5.xlarge",
                                               security_group=group))
    start = time.time() - 3600.0  # it has run an hour
    with Ledger() as ledger:
        ledger.add(Machine(id="m-dated0001", provider="aws", region=R, cloud_id=inst.cloud_id,
                           state="running", running_since=start, launched_at=start,
                           price_per_hour=3.6))
        cloud.client("ec2").stop_instances(InstanceIds=[inst.cloud_id])  # from the console
        stopped_at = time.time()
        real = time.time
        monkeypatch.setattr(time, "time", lambda: real() + 7200.0)  # noticed 2 h later
        reconcile.reconcile_provider(ledger, "aws", provider, [R], reconcile.ReconcileReport())
        row = ledger.get("m-dated0001")
        assert row is not None and row.state in ("stopping", "stopped")
        (interval,) = ledger.intervals("m-dated0001")
        assert interval.end is not None and abs(interval.end - stopped_at) < 2.0
        # $3.6/h for one hour (and a second or so), not three hours
        assert spend.machine_spend(ledger, row).compute == pytest.approx(3.6, abs=0.01)


def test_tencent_launch_records_the_cloud_timer_and_show_says_it(
        tencent: TencentStandin, tencent_creds: Credentials, memory_keyring: Any,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The launcher hands CVM budget ÷ price in its own currency; the ledger and `show`
    know the moment, before any SSH."""
    def providers(_name: str) -> Any:
        return TencentProvider(tencent_creds, endpoint=tencent.endpoint, protocol="http")

    plan = LaunchPlan(provider="tencent", instance_type="GN7.2XLARGE32", region="ap-guangzhou",
                      zone="ap-guangzhou-3", allow_from="203.0.113.7/32",
                      price_per_hour=1.2, budget=12.0, on_budget="terminate", cny_per_usd=7.0,
                      wait_ssh=False)
    # what CVM quotes there (InquiryPriceRunInstances): ¥8.4/h, the catalog's $1.2 at ¥7/$
    tencent.zone_prices[("ap-guangzhou-3", "GN7.2XLARGE32", "POSTPAID_BY_HOUR")] = 8.4
    before = time.time()
    with Ledger() as ledger:
        launcher = Launcher(ledger, providers, poll_s=0.01,  # type: ignore[arg-type]
                            first_boot=first_boot.for_launch(lambda: Settings(), ledger))
        m = asyncio.run(launcher.launch(plan)).machine
    (sent,) = [p for a, _r, p in tencent.requests if a == "RunInstances"]
    # $12 at ¥7/$ is ¥84, at the quoted ¥8.4/h plus the 100 GB Premium disk's ¥0.35 per
    # GB-month (it bills while the machine runs): just under ten hours from the launch
    hours = 84.0 / (8.4 + 100 * 0.35 / 730)
    at = datetime.strptime(sent["ActionTimer"]["ActionTime"], "%Y-%m-%dT%H:%M:%SZ").replace(
        tzinfo=UTC).timestamp()
    assert before + hours * 3600 - 2 <= at <= time.time() + hours * 3600
    assert sent["UserData"]  # the guard and the host key ride along
    assert main(["show", m.id, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    # the CAM role is named at creation too (issues 21, 29: instance_role on Tencent Cloud)
    assert sorted(shown["guard"]["enforced_by"]) == ["agent", "cloud-timer", "instance-role"]
    assert shown["guard"]["cloud_timer_at"] == sent["ActionTimer"]["ActionTime"]
    assert shown["host_key_fingerprint"].startswith("SHA256:")
    assert any("Tencent Cloud itself terminates this machine" in line
               for line in shown["guard_says"])


def test_launch_budget_flags_are_in_the_providers_currency() -> None:
    import argparse

    from gpudesk.cli.cloud import _launch_budget
    from gpudesk.services.cloud.providers.base import ProviderError
    from gpudesk.services.core.settings import save_settings

    save_settings(Settings(cny_per_usd=7.0, machine_budget_usd=25.0, budget_action="terminate"))
    flags = argparse.Namespace(provider="tencent", budget=70.0, on_budget="stop",
                               no_budget=False)
    got = _launch_budget(flags, 1.2)
    assert (got.usd, got.action, got.rate) == (10.0, "stop", 7.0)  # ¥70 is $10 in the ledger
    flags = argparse.Namespace(provider="aws", budget=None, on_budget=None, no_budget=False)
    got = _launch_budget(flags, 1.2)
    assert (got.usd, got.action, got.rate) == (25.0, "terminate", 7.0)  # Preferences' fixed
    with pytest.raises(ProviderError):
        _launch_budget(argparse.Namespace(provider="aws", budget=0.0, on_budget=None,
                                          no_budget=False), 1.2)


def test_a_guard_the_cloud_refused_is_not_claimed_in_the_ledger() -> None:
    from gpudesk.services.cloud.providers.base import ProviderError
    from gpudesk.services.money.ledger import Machine

    class Refusing:
        def set_guard(self, region: str, cloud_id: str, action: str, market: str,
                      timer_at: float | None = None) -> None:
            raise ProviderError("throttled", "The cloud asked gpudesk to slow down.")

    with Ledger() as ledger:
        m = ledger.add(Machine(id="m-refused01", provider="tencent", cloud_id="ins-abcdefgh",
                               state="running", price_per_hour=1.2, budget=12.0,
                               on_budget="terminate", enforced_by="agent,cloud-timer",
                               cloud_timer_at=2_000_000_000.0))
        with pytest.raises(ProviderError):
            guard.apply(ledger, m, Refusing(), 50.0, "terminate", time.time())
        row = ledger.get(m.id)
        assert row is not None
        assert (row.budget, row.cloud_timer_at) == (12.0, 2_000_000_000.0)
        assert [e.step for e in ledger.events(m.id)][-2:] == ["guard-requested", "guard-failed"]


def test_spot_recoverys_replacement_is_pinned_before_its_first_connection(
        cloud: MotoAws) -> None:
    from gpudesk.services.runs import spot_recovery

    with Ledger() as ledger:
        lost = _launch(ledger, market="spot", max_price=0.9)
        async def answers(_address: str) -> bool:
            return True  # the SSH banner: the replacement is up

        launcher = Launcher(ledger, poll_s=0.01, ssh_probe=answers,
                            first_boot=first_boot.for_launch(lambda: Settings(), ledger))
        new_id = asyncio.run(spot_recovery.relaunch_like(launcher, lost.id,
                                                         allow_from=ADDRESS))
        new = ledger.get(new_id)
    assert new is not None and new.host_key_fingerprint.startswith("SHA256:")
    assert new.host_key_fingerprint != lost.host_key_fingerprint  # a key of its own
    assert PinStore().fingerprints(f"gpudesk-{new.name}") == [new.host_key_fingerprint]
    policy = spot_recovery.replacement_policy(new_id)
    assert (policy.mode, policy.fingerprints) == ("fingerprints", (new.host_key_fingerprint,))


# ---------------------------------------------------------------- stop where a shutdown bills


@pytest.mark.parametrize("provider", ["tencent", "aliyun"])
def test_an_os_shutdown_is_not_the_agents_stop_where_it_keeps_charging(provider: str) -> None:
    """CVM and ECS keep charging a machine shut down from inside, and a machine already
    stopped that way refuses the desktop's stop-charging stop: with "stop" the agent only
    records the budget; terminate still powers off (the cloud's timer ends those)."""
    from gpudesk.services.money.ledger import Machine
    from gpudesk.services.remote.machine_rules import agent_rules

    for action, agent_does in (("stop", "warn"), ("terminate", "terminate")):
        m = Machine(id="m-1", provider=provider, price_per_hour=1.0, budget=5.0,
                    on_budget=action, disk_gb=100.0, region="r")
        rules = agent_rules(m, Settings(), None, 0.0)
        assert rules.budget is not None and rules.budget.action == agent_does
    aws = Machine(id="m-2", provider="aws", price_per_hour=1.0, budget=5.0, on_budget="stop")
    got = agent_rules(aws, Settings(), None, 0.0).budget
    assert got is not None and got.action == "stop"  # EC2: the shutdown behaviour stops it


def test_the_stop_sentences_say_the_disk_and_that_the_desktop_must_be_online() -> None:
    from gpudesk.services.money.ledger import Machine

    for provider, cloud, end in (("tencent", "Tencent Cloud", "terminate it."),
                                 ("aliyun", "Alibaba Cloud", "release it.")):
        m = Machine(id="", provider=provider, disk_gb=100.0)
        text = " ".join(guard.english(m, guard.plan(provider, 2.0, "stop", 1.0, 0.0, 0.0)))
        assert f"a stopped {cloud} machine still bills its disk (100 GB) until you {end}" \
            in text
        assert "no charge while stopped" not in text
        assert "This stop needs gpudesk running and online" in text
        assert "with the laptop shut nothing stops the bill" in text
    aliyun = " ".join(guard.english(Machine(id="", provider="aliyun", disk_gb=100.0),
                                    guard.plan("aliyun", 2.0, "stop", 1.0, 0.0, 0.0)))
    assert "KeepCharging" in aliyun and "release timer" in aliyun


def test_a_tencent_spot_machine_is_terminated_at_its_budget_not_stopped() -> None:
    """CVM refuses STOP_CHARGING for spot machines: a "stop" could not end the bill."""
    from gpudesk.services.money.ledger import Machine

    g = guard.plan("tencent", 2.0, "stop", 1.0, 0.0, 0.0, market="spot")
    assert g.action == "terminate" and "cloud-timer" in g.enforced_by
    assert guard.plan("tencent", 2.0, "stop", 1.0, 0.0, 0.0).action == "stop"
    m = Machine(id="", provider="tencent", market="spot", disk_gb=100.0)
    assert any("cannot be stopped without charging" in s for s in guard.english(m, g))


def test_an_aliyun_spot_machine_is_released_at_its_budget_not_stopped() -> None:
    """An ECS spot machine stopped may never start again while its disk bills on (a month of
    it was 32x a spot budget in the matrix): a spot machine ends released on every cloud."""
    from gpudesk.services.money.ledger import Machine

    g = guard.plan("aliyun", 2.0, "stop", 1.0, 0.0, 0.0, market="spot")
    assert g.action == "terminate" and "cloud-timer" in g.enforced_by
    assert guard.plan("aliyun", 2.0, "stop", 1.0, 0.0, 0.0).action == "stop"  # on-demand
    m = Machine(id="", provider="aliyun", market="spot", disk_gb=100.0)
    said = guard.english(m, g)
    assert any("is released, not stopped" in s for s in said), said
    assert not any("a month at list price" in s for s in said)  # no disk is left to bill


def test_the_cloud_timer_counts_the_system_disk_with_the_compute() -> None:
    # ECS ESSD 1.0 CNY per GB-month: 100 GB is 0.137 CNY/h on top of 16 CNY/h
    q = guard.Quote(16.0, "CNY", "DescribePrice", 7.2)
    g = guard.plan("aliyun", 16.0 / 7.2, "terminate", 16.0 / 7.2, 0.0, 0.0, quote=q,
                   disk_gb=100.0, region="cn-hangzhou")
    # ECS keeps whole minutes (AutoReleaseTime): the plan says the minute ECS will hold
    assert g.cloud_timer_at == pytest.approx(3600.0 * 16.0 / (16.0 + 100 / 730), abs=60.0)
    assert g.cloud_timer_at is not None and g.cloud_timer_at % 60 == 0
    assert guard.disk_per_hour("aws", "us-east-1", 100.0, "USD") == pytest.approx(8.0 / 730)
    assert guard.disk_per_hour("tencent", "", 100.0, "USD", 7.0) == pytest.approx(
        35.0 / 730 / 7.0)
    assert guard.disk_per_hour("own", "", 100.0, "USD") == 0.0


def test_a_cvm_shut_down_from_inside_is_started_and_stopped_without_charge(
        tencent: TencentStandin, tencent_creds: Credentials, memory_keyring: Any) -> None:
    """Stopped from inside, CVM keeps charging and refuses a STOP_CHARGING stop (already
    stopped): the budget's stop starts it and stops it again, and the ledger says so."""
    from gpudesk.services.cloud import stop_charging
    from gpudesk.services.cloud.providers.tencent import STOP_CHARGING

    def providers(_name: str) -> Any:  # as accounts.py makes it: stops stop charging
        return TencentProvider(tencent_creds, endpoint=tencent.endpoint, protocol="http",
                               stopped_mode=STOP_CHARGING)

    plan = LaunchPlan(provider="tencent", instance_type="GN7.2XLARGE32", region="ap-guangzhou",
                      zone="ap-guangzhou-3", allow_from="203.0.113.7/32", wait_ssh=False,
                      budget=5.0, on_budget="stop")
    with Ledger() as ledger:
        m = asyncio.run(Launcher(ledger, providers, poll_s=0.0).launch(plan)).machine  # type: ignore[arg-type]
        tencent.shutdown_inside(m.cloud_id)
        row = ledger.update(m.id, state="stopped", stopped_mode="KEEP_CHARGING")
        assert stop_charging.keeps_charging(row)
        done = asyncio.run(stop_charging.act_for_budget(ledger, m.id, "stop", providers))
        raw = tencent.state.instances[m.cloud_id]
        assert raw["InstanceState"] in ("STOPPING", "STOPPED")
        assert raw["StopChargingMode"] == "STOP_CHARGING"
        assert not stop_charging.keeps_charging(done)
        steps = [e.step for e in ledger.events(m.id)]
        assert "start" in steps and steps.count(stop_charging.STEP) == 2
