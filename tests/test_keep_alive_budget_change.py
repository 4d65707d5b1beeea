"""Change budget… on a kept-alive machine (issue 29, item 9) moves its group's own end.

A kept-alive machine's cap with gpudesk away is its group's size-0 scheduled action at
budget ÷ price. A lowered budget must move that action earlier in the cloud, and the
ledger's cloud timer must say the moment the cloud then holds (never dropped). Per cloud:
moto's Auto Scaling, the Tencent AS stand-in, the Aliyun ESS stand-in; each action's time
is read from the cloud's own state, not from gpudesk's answer."""
# ruff: noqa: F811 - fixtures imported from fixtures_* arrive as parameters

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest
from aliyun_ess_standin import AliyunEssStandin
from aliyun_standin import ACCESS_KEY_ID
from aliyun_standin import ACCESS_KEY_SECRET
from aliyun_standin import AliyunStandin
from fixtures_aliyun import aliyun  # noqa: F401
from fixtures_aliyun import aliyun_creds  # noqa: F401
from fixtures_aliyun import aliyun_server  # noqa: F401
from fixtures_aws import MotoAws  # noqa: F401
from fixtures_aws import aws  # noqa: F401
from fixtures_aws import moto_server  # noqa: F401
from fixtures_keyring import memory_keyring  # noqa: F401
from standin_http import fresh_standin
from tencent_as_standin import TencentAsStandin
from tencent_standin import SECRET_ID
from tencent_standin import SECRET_KEY
from test_keep_alive_aliyun import _request as ess_request
from test_keep_alive_aliyun import ess_server  # noqa: F401
from test_keep_alive_aws import _end_actions
from test_keep_alive_aws import _request as asg_request
from test_keep_alive_tencent import _request as as_request
from test_ui_change_budget import _open_dialog  # noqa: F401
from test_ui_change_budget import _type  # noqa: F401
from test_ui_change_budget import aws_window  # noqa: F401

from gpudesk.services.cloud import guard
from gpudesk.services.cloud.providers import aliyun_parse as ap
from gpudesk.services.cloud.providers.aliyun import AliyunProvider
from gpudesk.services.cloud.providers.base import Credentials
from gpudesk.services.cloud.providers.tencent import TencentProvider
from gpudesk.services.core.settings import Settings
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine
from gpudesk.services.remote.machine_budget import MSG_GROUP_END
from gpudesk.services.remote.machine_budget import MSG_GROUP_ENDED
from gpudesk.services.remote.machine_budget import change_budget

HOUR = 3600.0
RATE = 7.2


@pytest.fixture(scope="module")
def as_server_here() -> Iterator[TencentAsStandin]:
    server = TencentAsStandin().start()
    yield server
    server.stop()


def _row(ledger: Ledger, ledger_id: str, provider: str, region: str, itype: str,
         state: Any, usd_per_hour: float, budget_usd: float, quote: guard.Quote,
         now: float) -> Machine:
    """The launch's row for the group: running its first member for an hour, its cloud
    timer the group's end as created."""
    m = ledger.add(Machine(
        id=ledger_id, provider=provider, region=region, instance_type=itype, market="spot",
        cloud_id=state.members[0].cloud_id, state="running", running_since=now - HOUR,
        launched_at=now - HOUR, price_per_hour=usd_per_hour, budget=budget_usd,
        on_budget="terminate", enforced_by="agent,cloud-timer", cloud_timer_at=state.end_at,
        group_id=state.group_id, group_state="live", name=ledger_id))
    guard.record_quote(ledger, m.id, quote)
    return m


def _lower(ledger: Ledger, m: Machine, provider: object, amount: float, currency: str,
           now: float) -> Any:
    return change_budget(ledger, m.id, amount, currency=currency,
                         settings=Settings(cny_per_usd=RATE), providers=lambda _n: provider,
                         now=now)


def test_aws_a_lowered_budget_moves_the_auto_scaling_end_earlier(aws: MotoAws) -> None:
    p = aws.provider()
    now = time.time()
    # $10 at $0.50/h: the group's end 20 h after the launch (an hour ago)
    state = p.create_group(asg_request(aws, p, budget=10.0, price_per_hour=0.5,
                                       cloud_timer_at=now + 19 * HOUR))
    with Ledger() as ledger:
        m = _row(ledger, "m-0042", "aws", "us-east-1", "g5.xlarge", state, 0.5, 10.0,
                 guard.Quote(0.5, "USD", "DescribeSpotPriceHistory", RATE, "us-east-1"), now)
        [before] = _end_actions(aws, state.group_id)
        change = _lower(ledger, m, p, 2.0, "USD", now)
        # $0.50 spent in the hour; $1.50 left at $0.50/h: 3 h from now
        [after] = _end_actions(aws, state.group_id)
        at = after["StartTime"].timestamp()
        assert at < before["StartTime"].timestamp()
        assert abs(at - (now + 3 * HOUR)) <= 2
        row = ledger.get(m.id)
        assert row is not None and row.cloud_timer_at == at and row.budget == 2.0
        assert "cloud-timer" in row.enforced_by.split(",")
        assert change.ok and change.cloud_says[0][0] == MSG_GROUP_END
        assert change.guard is not None and change.guard.cloud_timer_at == at

        # a budget already spent ends the group now: no end left to bill past it
        spent = _lower(ledger, m, p, 0.25, "USD", now)
        row = ledger.get(m.id)
        assert row is not None and row.group_state == "ended" and row.state == "terminated"
        assert spent.cloud_says == [(MSG_GROUP_ENDED, {"group": state.group_id})]
        assert p.describe_group("us-east-1", state.group_id) is None


@pytest.fixture
def as_cloud(as_server_here: TencentAsStandin, monkeypatch: pytest.MonkeyPatch
             ) -> Iterator[tuple[TencentAsStandin, TencentProvider]]:
    cloud = fresh_standin(as_server_here, SECRET_ID, SECRET_KEY, monkeypatch)
    p = TencentProvider(Credentials(provider="tencent", key_id=SECRET_ID, secret=SECRET_KEY),
                        endpoint=cloud.endpoint, protocol="http", sleep=lambda _s: None)
    yield cloud, p
    p.close()


def test_tencent_a_lowered_budget_moves_the_as_scheduled_action_earlier(
        as_cloud: tuple[TencentAsStandin, TencentProvider]) -> None:
    cloud, p = as_cloud
    now = time.time()
    # 60 CNY at CVM's 2.6 CNY/h: the end 23 h after the launch
    state = p.create_group(as_request(p, budget=60.0, price_per_hour=2.6,
                                      cloud_timer_at=now + 22 * HOUR))
    with Ledger() as ledger:
        m = _row(ledger, "m-0a1b2c3d4e", "tencent", "ap-guangzhou", "GN7.2XLARGE32", state,
                 round(2.6 / RATE, 6), 60.0 / RATE,
                 guard.Quote(2.6, "CNY", "InquiryPriceRunInstances", RATE, "ap-guangzhou"),
                 now)
        (before,) = cloud.actions.values()
        before_at = datetime.fromisoformat(before["StartTime"]).timestamp()
        change = _lower(ledger, m, p, 13.0, "CNY", now)
        # 2.6 CNY spent in the hour; 10.4 CNY left at 2.6 CNY/h: 4 h from now
        (after,) = cloud.actions.values()
        at = datetime.fromisoformat(after["StartTime"]).timestamp()
        assert at < before_at and abs(at - (now + 4 * HOUR)) <= 2
        assert (after["DesiredCapacity"], after["MaxSize"]) == (0, 0)
        row = ledger.get(m.id)
        assert row is not None and row.cloud_timer_at == at
        assert row.budget == pytest.approx(13.0 / RATE)
        assert change.ok and change.cloud_says[0][0] == MSG_GROUP_END
        # the member got no timer of its own: the group is the cap
        assert [t for t in cloud.state.action_timers.values()
                if t["InstanceId"] == m.cloud_id and t["Status"] == "UNDO"] == []


@pytest.fixture
def ess_cloud(ess_server: AliyunEssStandin, aliyun: AliyunStandin,  # noqa: F811
              aliyun_creds: Credentials, monkeypatch: pytest.MonkeyPatch
              ) -> Iterator[tuple[AliyunEssStandin, AliyunProvider]]:
    ess_server.ecs = aliyun
    ess = fresh_standin(ess_server, ACCESS_KEY_ID, ACCESS_KEY_SECRET, monkeypatch)
    p = AliyunProvider(aliyun_creds, endpoint=ess.endpoint, protocol="http",
                       sleep=lambda _s: None)
    yield ess, p
    p.close()


def test_aliyun_a_lowered_budget_moves_the_ess_scheduled_task_earlier(
        ess_cloud: tuple[AliyunEssStandin, AliyunProvider]) -> None:
    ess, p = ess_cloud
    now = time.time()
    # 50 CNY at 3.2 CNY/h: the end 15.6 h after the launch
    state = p.create_group(ess_request(p, budget=50.0, price_per_hour=3.2,
                                       cloud_timer_at=now + 14.6 * HOUR))
    with Ledger() as ledger:
        m = _row(ledger, "m-0123456789", "aliyun", "cn-hangzhou", "ecs.gn7i-c8g1.2xlarge",
                 state, round(3.2 / RATE, 6), 50.0 / RATE,
                 guard.Quote(3.2, "CNY", "DescribeSpotPriceHistory", RATE, "cn-hangzhou"),
                 now)
        (before,) = ess.tasks.values()
        before_at = ap.parse_time(before["LaunchTime"])
        change = _lower(ledger, m, p, 16.0, "CNY", now)
        # 3.2 CNY spent in the hour; 12.8 CNY left at 3.2 CNY/h: 4 h from now, on its minute
        (after,) = ess.tasks.values()
        at = ap.parse_time(after["LaunchTime"])
        assert at is not None and before_at is not None and at < before_at
        assert now + 4 * HOUR - 62 <= at <= now + 4 * HOUR
        row = ledger.get(m.id)
        assert row is not None and row.cloud_timer_at == at
        assert change.ok and change.cloud_says[0][0] == MSG_GROUP_END


def test_change_budget_clicked_on_a_kept_alive_machine_moves_its_group_end(  # type: ignore[no-untyped-def]
        aws_window, qtbot, aws) -> None:
    """The same on AWS, clicked: Instances → Change budget… → 2 → Change budget."""
    window = aws_window
    p = aws.provider()
    now = time.time()
    state = p.create_group(asg_request(aws, p, ledger_id="m-0043", budget=10.0,
                                       price_per_hour=0.5, cloud_timer_at=now + 19 * HOUR))
    m = _row(window.ledger, "m-0043", "aws", "us-east-1", "g5.xlarge", state, 0.5, 10.0,
             guard.Quote(0.5, "USD", "DescribeSpotPriceHistory", RATE, "us-east-1"), now)
    [before] = _end_actions(aws, state.group_id)
    dialog = _open_dialog(window, m.id, qtbot)
    assert dialog.amount.text() == "10.00"
    _type(qtbot, dialog.amount, "2")
    clicked = time.time()
    dialog.apply_button.click()
    qtbot.waitUntil(lambda: dialog.result_change is not None, timeout=20000)
    [after] = _end_actions(aws, state.group_id)
    at = after["StartTime"].timestamp()
    # $0.50 spent in the first hour, $1.50 left at $0.50/h: 3 h after the click
    assert at < before["StartTime"].timestamp()
    assert clicked + 3 * HOUR - 60 <= at <= time.time() + 3 * HOUR
    row = window.ledger.get(m.id)
    assert row is not None and row.cloud_timer_at == at
    text = dialog.result_label.text()
    assert f"Cloud: AWS says: the group {state.group_id} goes to 0 machines at" in text
    assert "The cloud's cap did not change" not in text
