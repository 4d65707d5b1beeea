"""Issue 30: an Alibaba Cloud machine released while Pending ends the launch within a minute.

ECS documents that a RunInstances it accepted can still fail for lack of inventory: the
machine is released at once (gone from DescribeInstances) and a ``SystemFailure.Delete``
system event says why. The launch must say so in the cloud's words, leave nothing billing
and no live ledger row, and move on to the next zone when there is one. Waiting runs on a
test clock (its sleeps advance it), so "within a minute" is counted, not slept.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from aliyun_standin import AliyunStandin
from fixtures_aliyun import aliyun  # noqa: F401
from fixtures_aliyun import aliyun_creds  # noqa: F401
from fixtures_aliyun import aliyun_server  # noqa: F401
from fixtures_keyring import memory_keyring  # noqa: F401

from gpudesk.services.cloud import credentials
from gpudesk.services.cloud.accounts import ALIYUN_ENDPOINT_ENV
from gpudesk.services.cloud.launcher import GONE_AFTER_S
from gpudesk.services.cloud.launcher import Launcher
from gpudesk.services.cloud.launcher import LaunchPlan
from gpudesk.services.cloud.launcher import LaunchRefused
from gpudesk.services.cloud.providers.aliyun import AliyunProvider
from gpudesk.services.cloud.providers.base import Credentials
from gpudesk.services.cloud.providers.base import ProviderError
from gpudesk.services.money.ledger import Ledger

REGION = "cn-hangzhou"
A10 = "ecs.gn7i-c8g1.2xlarge"
PLAN = LaunchPlan(provider="aliyun", instance_type=A10, region=REGION,
                  allow_from="203.0.113.7/32", gpu="A10", gpus=1, price_per_hour=2.0,
                  disk_gb=100, wait_ssh=False)


class StepClock:
    """monotonic() for the launcher; its sleep advances the clock instead of waiting."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds
        await asyncio.sleep(0)


@pytest.fixture
def providers(aliyun: AliyunStandin, aliyun_creds: Credentials, memory_keyring,  # type: ignore[no-untyped-def]  # noqa: F811
              gpudesk_home: Path, monkeypatch: pytest.MonkeyPatch
              ) -> Callable[[str], AliyunProvider]:
    credentials.save_credentials(aliyun_creds)
    monkeypatch.setenv(ALIYUN_ENDPOINT_ENV, f"http://{aliyun.endpoint}")
    provider = AliyunProvider(aliyun_creds, endpoint=aliyun.endpoint, protocol="http",
                              sleep=lambda _s: None)
    return lambda _name: provider


def _launcher(ledger: Ledger, providers: Callable[[str], AliyunProvider],
              clock: StepClock) -> Launcher:
    return Launcher(ledger, providers, poll_s=3.0, clock=clock,  # type: ignore[arg-type]
                    sleep=clock.sleep)


def _live(ledger: Ledger) -> list[str]:
    return [m.id for m in ledger.machines() if m.billing]


def test_released_while_pending_fails_within_a_minute_with_the_clouds_reason(
        aliyun: AliyunStandin, providers: Callable[[str], AliyunProvider]) -> None:  # noqa: F811
    aliyun.fail_creation("cn-hangzhou-h", A10)
    clock = StepClock()
    with Ledger() as ledger:
        with pytest.raises(ProviderError) as caught:
            asyncio.run(_launcher(ledger, providers, clock).launch(
                replace(PLAN, zone="cn-hangzhou-h")))
        (row,) = ledger.machines()
        assert row.state == "failed" and _live(ledger) == []
        assert "SystemFailure.Delete" in row.error and "insufficient" in row.error
    assert caught.value.kind == "capacity"
    assert "could not be started in cn-hangzhou-h" in caught.value.message()
    assert clock.now - 1000.0 < 60.0
    assert aliyun.state.instances == {}  # nothing left to bill
    assert aliyun.calls["DescribeInstanceHistoryEvents"] >= 1
    assert aliyun.limit_refusals == [] and aliyun.internal_errors == []


def test_released_while_pending_moves_on_to_the_next_zone(
        aliyun: AliyunStandin, providers: Callable[[str], AliyunProvider]) -> None:  # noqa: F811
    aliyun.fail_creation("cn-hangzhou-h", A10)
    clock = StepClock()
    with Ledger() as ledger:
        result = asyncio.run(_launcher(ledger, providers, clock).launch(PLAN))
        m = result.machine
        assert m.state == "running" and m.zone == "cn-hangzhou-i"
        assert [(r.zone, r.error.kind) for r in result.refusals] == [("cn-hangzhou-h",
                                                                      "capacity")]
        assert "SystemFailure.Delete" in result.refusals[0].error.message()
        assert _live(ledger) == [m.id]
    assert list(aliyun.state.instances) == [m.cloud_id]
    assert clock.now - 1000.0 < 60.0


def test_a_machine_unlisted_without_a_reason_ends_after_the_grace(
        aliyun: AliyunStandin, providers: Callable[[str], AliyunProvider]) -> None:  # noqa: F811
    """No event to read (none yet, or the look refused): unlisted for GONE_AFTER_S, it has
    failed all the same, well before the long running time-out."""
    aliyun.fail_creation("cn-hangzhou-h", A10)
    aliyun.denied.add("DescribeInstanceHistoryEvents")
    clock = StepClock()
    with Ledger() as ledger:
        with pytest.raises((ProviderError, LaunchRefused)) as caught:
            asyncio.run(_launcher(ledger, providers, clock).launch(
                replace(PLAN, zone="cn-hangzhou-h")))
        (row,) = ledger.machines()
        assert row.state == "failed" and _live(ledger) == []
    assert "no longer lists it" in str(caught.value)
    assert GONE_AFTER_S <= clock.now - 1000.0 < 60.0


def test_a_failed_creation_still_listed_pending_is_released_and_ends_the_launch(
        aliyun: AliyunStandin, providers: Callable[[str], AliyunProvider]) -> None:  # noqa: F811
    """ECS may take minutes to release a machine it could not create: still Pending, its
    event already says why. The launch asks once the machine is slow to start, releases it
    itself and moves on, well within a minute."""
    aliyun.fail_creation("cn-hangzhou-h", A10, listed=True)
    clock = StepClock()
    with Ledger() as ledger:
        result = asyncio.run(_launcher(ledger, providers, clock).launch(PLAN))
        assert result.machine.zone == "cn-hangzhou-i" and result.machine.state == "running"
        assert [r.zone for r in result.refusals] == ["cn-hangzhou-h"]
        assert "SystemFailure.Delete" in result.refusals[0].error.message()
    assert list(aliyun.state.instances) == [result.machine.cloud_id]  # the first released
    assert aliyun.calls["DeleteInstances"] == 1
    assert clock.now - 1000.0 < 60.0
