"""Each provider's billing rule: the minimum billed each time a machine starts, and the step.

Below both the ledger (a machine's billed-until time) and ``spend`` (what it has
cost), which read the same rules; ``spend`` re-exports them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BillingRule:
    """How a provider turns running time into billed time."""

    min_s: float = 0.0  # billed at least this long each time the machine starts
    step_s: float = 1.0  # billed time is rounded up to a multiple of this
    free: bool = False  # the user's own machine


RULES: dict[str, BillingRule] = {
    "aws": BillingRule(min_s=60.0, step_s=1.0),  # EC2 Linux (reference/clouds.md)
    "tencent": BillingRule(min_s=0.0, step_s=1.0),  # CVM pay-as-you-go
    "aliyun": BillingRule(min_s=0.0, step_s=1.0),  # ECS pay-as-you-go: by the second
    "own": BillingRule(free=True),
}


def rule_for(provider: str) -> BillingRule:
    return RULES.get(provider, BillingRule())
