"""The agent's idle rule per cloud: on Tencent Cloud and Alibaba Cloud an OS shutdown keeps
charging, so an idle "stop" there is a warning (the desktop's stop-charging stop applies);
terminate still powers off; EC2's shutdown behaviour makes "stop" a real stop."""

from __future__ import annotations

import pytest

from gpudesk.services.core.settings import Settings
from gpudesk.services.money.ledger import Machine
from gpudesk.services.remote.machine_rules import agent_rules
from gpudesk.services.remote.machine_rules import idle_action


@pytest.mark.parametrize(("provider", "action", "want"), [
    ("tencent", "stop", "warn"), ("aliyun", "stop", "warn"), ("aws", "stop", "stop"),
    ("tencent", "terminate", "terminate"), ("aliyun", "terminate", "terminate"),
    ("aws", "terminate", "terminate"), ("tencent", "warn", "warn"),
])
def test_idle_action_per_cloud(provider: str, action: str, want: str) -> None:
    assert idle_action(provider, action) == want
    m = Machine(id="m-idle000001", provider=provider, cloud_id="x-1", state="running")
    rules = agent_rules(m, Settings(idle_action=action))
    assert rules.idle is not None and rules.idle.action == want
