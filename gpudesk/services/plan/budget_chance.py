"""The chance that a spot machine's budget runs out before its job finishes (issue 33).

The Launch dialog, ``gpudesk launch --spot --job-hours H`` and the kept-alive group's end
say the same sentences: the job's expected cost and its range under the cloud's
interruption rate, and the chance that the budget runs out first. A kept-alive group ends
itself when the budget runs out (its scheduled size 0 at budget ÷ (price + disk) an hour,
``keep_alive_launch.with_end``), so for a group that chance is the chance its end comes
before the job's finish. Where the cloud publishes no rate, the sentence says so and gives
no chance: never a guess.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import replace

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.cloud.spot_rates import SpotRate
from gpudesk.services.core.said import Sentence
from gpudesk.services.core.said import in_english
from gpudesk.services.plan.expected_cost import SpotAssumptions
from gpudesk.services.plan.expected_cost import SpotRisk
from gpudesk.services.plan.expected_cost import spot_outlook

MSG_CHANCE = QT_TRANSLATE_NOOP(
    "SpotRates", "This job on spot: expected {expected} ({low} to {high}) and {hours} h to "
    "finish at interruption rate {rate} ({source}); a {chance} chance that the {budget} "
    "budget runs out before the job finishes.")
MSG_GROUP_END = QT_TRANSLATE_NOOP(
    "SpotRates", "The group ends itself when the {budget} budget runs out, after {end} h of "
    "machines: a {chance} chance that this comes before the job's expected finish "
    "({hours} h).")
MSG_NO_RATE = QT_TRANSLATE_NOOP(
    "SpotRates", "This job costs {cost} if never interrupted ({compute} h); {rate} "
    "({source}), so the chance that the budget runs out first is not known.")
MSG_NEVER = QT_TRANSLATE_NOOP(
    "SpotRates", "At interruption rate {rate} ({source}) this job is not expected to finish: "
    "it loses work faster than it saves it. Checkpoint more often.")


@dataclass(frozen=True)
class SpotJobInputs:
    """What a launch knows of the job it is for: its uninterrupted compute hours on this
    offer (the Plan page's figure), the cloud's rate, and the checkpoint figures."""

    compute_hours: float
    rate: SpotRate
    assumptions: SpotAssumptions = SpotAssumptions()


@dataclass(frozen=True)
class BudgetChance:
    """One job under one budget at ``per_hour`` (the price and the disk: what the budget
    pays an hour, as the group's end counts it)."""

    job: SpotJobInputs
    per_hour: float
    budget: float
    risk: SpotRisk

    @property
    def known(self) -> bool:
        return self.risk.outlook is not None and self.risk.chance_budget_runs_out is not None

    @property
    def chance(self) -> float | None:
        return self.risk.chance_budget_runs_out

    @property
    def end_hours(self) -> float:
        """How long the budget lasts: when a kept-alive group ends itself."""
        return self.budget / self.per_hour if self.per_hour > 0 else math.inf


def budget_chance(job: SpotJobInputs, per_hour: float, budget: float) -> BudgetChance:
    """The job's outlook at ``per_hour`` with ``budget`` (same currency, USD in gpudesk)."""
    assumptions = replace(job.assumptions, budget_usd=budget)
    return BudgetChance(job, per_hour, budget,
                        spot_outlook(job.rate, job.compute_hours, per_hour, assumptions))


def percent(p: float) -> str:
    """A chance in words that never rounds a possibility away: "<1%", ">99%"."""
    if 0 < p < 0.005:
        return "<1%"
    if 0.995 <= p < 1:
        return ">99%"
    return f"{p:.0%}"


def hours_text(h: float) -> str:
    return f"{h:,.1f}"


def sentences(c: BudgetChance, money: Callable[[float], str], *,
              group: bool = False) -> list[Sentence]:
    """(template, values) pairs: the expected cost and the chance; with ``group``, the
    kept-alive group's end too. ``money`` formats an amount of the budget's currency."""
    rate = c.job.rate
    source = rate.source
    o = c.risk.outlook
    if o is None:
        return [(MSG_NO_RATE, {"cost": money(c.job.compute_hours * c.per_hour),
                               "compute": hours_text(c.job.compute_hours),
                               "rate": rate.label, "source": source})]
    if not o.finite:
        return [(MSG_NEVER, {"rate": rate.label, "source": source})]
    chance = percent(c.chance if c.chance is not None else 1.0)
    said: list[Sentence] = [(MSG_CHANCE, {
        "expected": money(o.expected_cost), "low": money(o.low_cost),
        "high": money(o.high_cost), "hours": hours_text(o.expected_hours),
        "rate": rate.label, "source": source, "chance": chance,
        "budget": money(c.budget)})]
    if group:
        said.append((MSG_GROUP_END, {"budget": money(c.budget),
                                     "end": hours_text(c.end_hours), "chance": chance,
                                     "hours": hours_text(o.expected_hours)}))
    return said


def plain(said: list[Sentence]) -> str:
    """The sentences in English, as the CLI prints them."""
    return " ".join(in_english(sentence) for sentence in said)
