"""Expected time and cost to finish a job on a machine that may be taken back (spot).

Pure arithmetic, no Qt, no clouds: the Plan page, ``gpudesk offers`` and the
Launch dialog's budget note all call this, so they say the same numbers.

The model, kept small enough to check by hand:

- The job needs ``C`` hours of uninterrupted compute. Writing a checkpoint every
  ``tau`` hours costs ``delta`` hours each, so the work grows to
  ``W = C * (1 + delta / tau)``.
- Interruptions come as a Poisson process of rate ``lam`` per hour of billed
  time. Each costs the work since the last checkpoint (``tau / 2`` on average)
  plus the restart and data fetch (``R``): ``L = tau / 2 + R`` hours.
- Lost time is itself exposed to interruptions, so the expected billed time
  solves ``T = W + lam * T * L``: ``T = W / (1 - lam * L)`` (finite only while
  ``lam * L < 1``; beyond that the job never finishes on average).
- The range takes the 10th and 90th percentiles of a Poisson count of mean
  ``lam * T``: ``W + n * L`` hours for each.
- Every hour, lost ones included, is billed at the spot price (conservative:
  EC2 and ECS stop billing a reclaimed machine, but the replacement bills while
  it restarts and fetches).

The checkpoint interval that minimises the expected time is Young's first-order
rule, ``tau* = sqrt(2 * delta * MTBF)`` (J. W. Young, "A first order approximation to
the optimum checkpoint interval", CACM 17(9), 1974; Daly 2006 refines it).

A cloud states its interruption rate as the share of machines taken back over
a period (AWS's Spot Instance Advisor: the trailing month; Alibaba Cloud's
DescribeSpotAdvice: the last 30 days). :func:`hourly_rate` turns that share into
a per-hour rate: ``lam = -ln(1 - share) / hours``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

PERIOD_HOURS = 30 * 24.0  # "the last 30 days" (ECS), "the past month" (AWS), in hours
LOW_QUANTILE = 0.10
HIGH_QUANTILE = 0.90


class SpotRiskError(ValueError):
    """Inputs that have no meaning (negative hours, a share of 100 % or more)."""


@dataclass(frozen=True)
class SpotJob:
    """One job on one spot offer; every duration in hours."""

    compute_hours: float  # uninterrupted compute, checkpoints not counted
    price_per_hour: float
    interruptions_per_hour: float  # lam
    checkpoint_interval_hours: float  # tau
    restart_hours: float  # R: a new machine, the environment and the checkpoint fetched
    checkpoint_cost_hours: float = 0.0  # delta: writing one checkpoint


@dataclass(frozen=True)
class SpotOutlook:
    """Expected and 10th-90th percentile time and cost to finish; ``finite`` is False
    when interruptions come faster than the job can make progress (``lam * L >= 1``)."""

    work_hours: float  # W: compute plus checkpoint writing
    lost_per_interruption_hours: float  # L
    expected_interruptions: float
    expected_hours: float
    expected_cost: float
    low_interruptions: int
    high_interruptions: int
    low_hours: float
    high_hours: float
    low_cost: float
    high_cost: float

    @property
    def finite(self) -> bool:
        return math.isfinite(self.expected_hours)


def hourly_rate(share: float, period_hours: float = PERIOD_HOURS) -> float:
    """The per-hour interruption rate of a machine of which ``share`` (0..1) are taken back
    within ``period_hours``: ``-ln(1 - share) / period_hours``."""
    if not 0.0 <= share < 1.0 or period_hours <= 0:
        raise SpotRiskError(f"share {share} over {period_hours} h")
    return -math.log1p(-share) / period_hours


def _term(k: int, mean: float) -> float:
    """P(N = k), in log space so that large means do not underflow."""
    return math.exp(-mean + k * math.log(mean) - math.lgamma(k + 1))


def _far_tail(mean: float) -> int:
    """A count beyond which P(N > k) is below 1e-12 (Chernoff-style margin)."""
    return int(mean + 12 * math.sqrt(mean) + 40)


def poisson_cdf(k: int, mean: float) -> float:
    """P(N <= k) for N ~ Poisson(mean)."""
    if k < 0:
        return 0.0
    if mean <= 0 or k >= _far_tail(mean):
        return 1.0
    return min(1.0, math.fsum(_term(i, mean) for i in range(k + 1)))


def poisson_quantile(q: float, mean: float) -> int:
    """The least k with P(N <= k) >= q."""
    if mean <= 0:
        return 0
    total = 0.0
    for k in range(_far_tail(mean) + 1):
        total += _term(k, mean)
        if total >= q:
            return k
    return _far_tail(mean)


def _check(job: SpotJob) -> None:
    values = (job.compute_hours, job.price_per_hour, job.interruptions_per_hour,
              job.restart_hours, job.checkpoint_cost_hours)
    if any(v < 0 or not math.isfinite(v) for v in values) or not (
            job.checkpoint_interval_hours > 0):
        raise SpotRiskError(f"{job}")


def outlook(job: SpotJob) -> SpotOutlook:
    """Expected time and cost to finish ``job``, with the 10th-90th percentile range."""
    _check(job)
    tau = job.checkpoint_interval_hours
    work = job.compute_hours * (1 + job.checkpoint_cost_hours / tau)
    lost = tau / 2 + job.restart_hours
    lam = job.interruptions_per_hour
    exposure = lam * lost
    if exposure >= 1:
        inf = math.inf
        return SpotOutlook(work, lost, inf, inf, inf, 0, 0, inf, inf, inf, inf)
    hours = work / (1 - exposure)
    mean = lam * hours
    low = poisson_quantile(LOW_QUANTILE, mean)
    high = poisson_quantile(HIGH_QUANTILE, mean)
    low_hours, high_hours = work + low * lost, work + high * lost
    price = job.price_per_hour
    return SpotOutlook(work, lost, mean, hours, hours * price, low, high, low_hours,
                       high_hours, low_hours * price, high_hours * price)


def chance_over_budget(job: SpotJob, budget: float) -> float:
    """The chance that finishing costs more than ``budget``: more interruptions than the
    budget's spare hours absorb (a Poisson count of mean ``lam * T``). 1.0 when even an
    uninterrupted run costs more; 0.0 for a free machine."""
    result = outlook(job)
    if job.price_per_hour <= 0:
        return 0.0
    spare = budget / job.price_per_hour - result.work_hours
    if spare < 0 or not result.finite:
        return 1.0
    if result.lost_per_interruption_hours <= 0:
        return 0.0
    absorbed = math.floor(spare / result.lost_per_interruption_hours + 1e-12)
    return max(0.0, 1.0 - poisson_cdf(absorbed, result.expected_interruptions))


def best_checkpoint_interval(checkpoint_cost_hours: float,
                             interruptions_per_hour: float) -> float:
    """Young's interval ``sqrt(2 * delta * MTBF)`` in hours; infinite when nothing
    interrupts (checkpoint only at the end)."""
    if checkpoint_cost_hours < 0 or interruptions_per_hour < 0:
        raise SpotRiskError("negative checkpoint cost or rate")
    if interruptions_per_hour == 0:
        return math.inf
    return math.sqrt(2 * checkpoint_cost_hours / interruptions_per_hour)
