"""Expected cost and time to finish on a spot offer, from its cloud's interruption rate.

The planner ranks spot offers by this figure; the CLI's ``offers --json`` and the Plan
page show it with its range and the rate's source. Checkpoint interval, restart and
checkpoint-writing times are the user's, a run's own (``run_history``), or these
defaults, said to be assumed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from gpudesk.calc import spot_risk
from gpudesk.services.cloud.spot_rates import SpotRate

DEFAULT_CHECKPOINT_MINUTES = 30.0
DEFAULT_RESTART_MINUTES = 15.0  # a new machine, the environment, the checkpoint fetched
DEFAULT_CHECKPOINT_COST_SECONDS = 60.0


@dataclass(frozen=True)
class SpotAssumptions:
    checkpoint_minutes: float = DEFAULT_CHECKPOINT_MINUTES
    restart_minutes: float = DEFAULT_RESTART_MINUTES
    checkpoint_cost_seconds: float = DEFAULT_CHECKPOINT_COST_SECONDS
    assumed: bool = True  # defaults, not the user's nor measured
    budget_usd: float | None = None  # the machine's budget: the chance it runs out first
    # (figure, where it came from): "given" on the command line, a run's measurement
    # (``run_history``), or gpudesk's default; empty: nothing said beyond ``assumed``
    sources: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class SpotRisk:
    """One spot offer's outlook; ``outlook`` None when the cloud's rate is not known."""

    rate: SpotRate
    assumptions: SpotAssumptions
    outlook: spot_risk.SpotOutlook | None
    best_checkpoint_minutes: float | None
    chance_budget_runs_out: float | None = None  # with a budget and a known rate

    def to_json(self) -> dict[str, Any]:
        o = self.outlook

        def num(x: float | None) -> float | None:
            return round(x, 6) if x is not None and math.isfinite(x) else None

        return {
            "interruption_rate": self.rate.label if self.rate.known else None,
            "interruption_share": self.rate.share,
            "interruptions_per_hour": num(per_hour(self.rate)),
            "rate_source": self.rate.source if self.rate.known else self.rate.label,
            "rate_date": self.rate.day or None,
            "expected_cost": num(o.expected_cost) if o else None,
            "expected_cost_range": [num(o.low_cost), num(o.high_cost)] if o else None,
            "expected_hours": num(o.expected_hours) if o else None,
            "expected_hours_range": [num(o.low_hours), num(o.high_hours)] if o else None,
            "expected_interruptions": num(o.expected_interruptions) if o else None,
            "checkpoint_minutes": self.assumptions.checkpoint_minutes,
            "restart_minutes": self.assumptions.restart_minutes,
            "checkpoint_cost_seconds": self.assumptions.checkpoint_cost_seconds,
            "assumed": self.assumptions.assumed,
            "assumption_sources": dict(self.assumptions.sources) or None,
            "best_checkpoint_minutes": num(self.best_checkpoint_minutes),
            "budget": self.assumptions.budget_usd,
            "chance_budget_runs_out": num(self.chance_budget_runs_out),
            "placement_score": self.rate.placement_score,
            "placement_source": self.rate.placement_source or None,
        }


def per_hour(rate: SpotRate) -> float | None:
    """The rate's share per period as interruptions an hour (None: not known)."""
    if rate.share is None:
        return None
    return spot_risk.hourly_rate(rate.share, rate.period_hours)


def spot_outlook(rate: SpotRate, hours: float, price_per_hour: float,
                 assumptions: SpotAssumptions) -> SpotRisk:
    """The expected cost of ``hours`` of compute at ``price_per_hour`` under ``rate``."""
    lam = per_hour(rate)
    if lam is None or not math.isfinite(hours) or not math.isfinite(price_per_hour):
        return SpotRisk(rate, assumptions, None, None)
    cost_h = assumptions.checkpoint_cost_seconds / 3600
    job = spot_risk.SpotJob(hours, price_per_hour, lam, assumptions.checkpoint_minutes / 60,
                            assumptions.restart_minutes / 60, cost_h)
    best = spot_risk.best_checkpoint_interval(cost_h, lam) * 60
    budget = assumptions.budget_usd
    chance = spot_risk.chance_over_budget(job, budget) if budget is not None else None
    return SpotRisk(rate, assumptions, spot_risk.outlook(job), best, chance)
