"""Issue 29: a "stop" that leaves the disk billing says what that disk costs, in money.

A spot machine's budget (an hour of cheap compute) can be a small part of a month of its
disk, so the words after "still bills its disk (N GB)" put the list price on it: per day and
per month, in the currency of the cloud's list price (no exchange rate guessed). The numbers
are the bundled list prices (``guard.DISK_PER_GB_MONTH``, ``region_rates.csv``).
"""

from __future__ import annotations

import pytest

from gpudesk.services.cloud import guard
from gpudesk.services.money.ledger import Machine


@pytest.mark.parametrize(("provider", "region", "enforced", "day", "month"), [
    ("aliyun", "cn-hangzhou", "agent,instance-role", "3.29 CNY", "100.00 CNY"),
    ("tencent", "ap-guangzhou", "agent,instance-role", "1.15 CNY", "35.00 CNY"),
    ("aliyun", "cn-hangzhou", "agent", "3.29 CNY", "100.00 CNY"),  # no role: desktop's stop
    ("aws", "us-east-1", "agent,shutdown-behavior", "0.26 USD", "8.00 USD"),
])
def test_a_stop_says_what_its_disk_costs(provider: str, region: str, enforced: str,
                                         day: str, month: str) -> None:
    m = Machine(id="m-1", provider=provider, region=region, disk_gb=100.0, budget=3.0,
                on_budget="stop", enforced_by=enforced, currency="USD")
    said = guard.english(m)
    disk = next(i for i, s in enumerate(said) if "still bills its disk (100 GB)" in s)
    assert said[disk + 1] == (f"Stopped, that disk costs about {day} a day ({month} a month "
                              "at list price); gpudesk counts it in the month's spend as it "
                              "accrues.")


def test_nothing_is_said_of_a_disk_that_does_not_outlive_the_machine() -> None:
    for m in (Machine(id="m-1", provider="aliyun", region="cn-hangzhou", disk_gb=100.0,
                      budget=3.0, on_budget="terminate", enforced_by="agent,cloud-timer"),
              Machine(id="m-2", provider="aws", region="us-east-1", disk_gb=100.0, budget=3.0,
                      on_budget="stop", market="spot", enforced_by="agent,shutdown-behavior"),
              Machine(id="m-3", provider="aliyun", region="cn-hangzhou", disk_gb=0.0,
                      budget=3.0, on_budget="stop", enforced_by="agent,instance-role")):
        assert not [s for s in guard.english(m) if "that disk costs" in s], m.id
