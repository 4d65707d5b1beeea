"""Expected time and cost to finish on spot, checked against cases worked by hand."""

from __future__ import annotations

import math

import pytest

from gpudesk.calc.spot_risk import SpotJob
from gpudesk.calc.spot_risk import SpotRiskError
from gpudesk.calc.spot_risk import best_checkpoint_interval
from gpudesk.calc.spot_risk import chance_over_budget
from gpudesk.calc.spot_risk import hourly_rate
from gpudesk.calc.spot_risk import outlook
from gpudesk.calc.spot_risk import poisson_cdf
from gpudesk.calc.spot_risk import poisson_quantile

# A 10-hour job at 10 % an hour, checkpoints every 30 minutes, 15 minutes to restart and
# fetch, $2/h:
#   W = 10 h (checkpoints free), L = 0.5/2 + 0.25 = 0.5 h, lam*L = 0.05
#   T = 10 / 0.95 = 10.526316 h, E[N] = 0.1 * T = 20/19 = 1.052632, cost 2 * T = $21.052632
#   Poisson(20/19): P0 = e^-1.052632 = 0.349018, P(<=1) = 0.349018 * (1 + 1.052632) = 0.716406,
#   P(<=2) = 0.716406 + 0.349018 * 1.052632^2 / 2 = 0.909767
#   10th percentile: 0 interruptions -> 10 h, $20; 90th: 2 -> 10 + 2 * 0.5 = 11 h, $22.
TEN_HOURS = SpotJob(compute_hours=10, price_per_hour=2.0, interruptions_per_hour=0.1,
                    checkpoint_interval_hours=0.5, restart_hours=0.25)


def test_ten_hour_job_at_ten_percent_an_hour() -> None:
    got = outlook(TEN_HOURS)
    assert got.work_hours == pytest.approx(10.0)
    assert got.lost_per_interruption_hours == pytest.approx(0.5)
    assert got.expected_hours == pytest.approx(10.526316, abs=1e-6)
    assert got.expected_interruptions == pytest.approx(1.052632, abs=1e-6)
    assert got.expected_cost == pytest.approx(21.052632, abs=1e-6)
    assert (got.low_interruptions, got.high_interruptions) == (0, 2)
    assert (got.low_hours, got.high_hours) == pytest.approx((10.0, 11.0))
    assert (got.low_cost, got.high_cost) == pytest.approx((20.0, 22.0))
    assert got.finite


def test_poisson_by_hand() -> None:
    mean = 20 / 19
    assert poisson_cdf(0, mean) == pytest.approx(0.349018, abs=1e-6)
    assert poisson_cdf(1, mean) == pytest.approx(0.716406, abs=1e-6)
    assert poisson_cdf(2, mean) == pytest.approx(0.909767, abs=1e-6)
    assert poisson_quantile(0.10, mean) == 0
    assert poisson_quantile(0.90, mean) == 2
    assert poisson_quantile(0.95, mean) == 3
    assert poisson_quantile(0.9, 0.0) == 0


def test_checkpoint_writing_counts_and_young_picks_the_cheapest_interval() -> None:
    # 3 minutes (0.05 h) per checkpoint, MTBF = 1 / 0.1 = 10 h:
    #   Young: sqrt(2 * 0.05 * 10) = 1 h.
    #   tau 0.5: W = 10 * 1.1 = 11, L = 0.5, T = 11 / 0.95 = 11.578947
    #   tau 1:   W = 10.5, L = 0.75, T = 10.5 / 0.925 = 11.351351
    #   tau 2:   W = 10.25, L = 1.25, T = 10.25 / 0.875 = 11.714286
    assert best_checkpoint_interval(0.05, 0.1) == pytest.approx(1.0)
    hours = {tau: outlook(SpotJob(10, 2.0, 0.1, tau, 0.25, 0.05)).expected_hours
             for tau in (0.5, 1.0, 2.0)}
    assert hours == pytest.approx({0.5: 11.578947, 1.0: 11.351351, 2.0: 11.714286}, abs=1e-6)
    assert min(hours, key=hours.__getitem__) == 1.0
    assert best_checkpoint_interval(0.05, 0.0) == math.inf


def test_no_interruptions_is_the_sticker_price() -> None:
    got = outlook(SpotJob(8, 3.0, 0.0, 1.0, 0.5))
    assert (got.expected_hours, got.expected_cost) == (8.0, 24.0)
    assert (got.low_cost, got.high_cost) == (24.0, 24.0)


def test_interruptions_faster_than_progress_never_finish() -> None:
    # lam * L = 1 * (1/2 + 0.5) = 1: every hour of progress is lost again on average
    got = outlook(SpotJob(10, 2.0, 1.0, 1.0, 0.5))
    assert not got.finite and got.expected_cost == math.inf
    assert chance_over_budget(SpotJob(10, 2.0, 1.0, 1.0, 0.5), 1000.0) == 1.0


def test_chance_the_budget_runs_out() -> None:
    # $21 leaves 21/2 - 10 = 0.5 spare hours: one interruption (0.5 h) fits, two do not:
    #   P(N > 1) = 1 - 0.716406 = 0.283594; $22 absorbs two: 1 - 0.909767 = 0.090233
    assert chance_over_budget(TEN_HOURS, 21.0) == pytest.approx(0.283594, abs=1e-6)
    assert chance_over_budget(TEN_HOURS, 22.0) == pytest.approx(0.090233, abs=1e-6)
    assert chance_over_budget(TEN_HOURS, 19.99) == 1.0


def test_share_per_month_to_hourly_rate() -> None:
    # 5 % taken back over 30 days: -ln(0.95) / 720 = 0.0512933 / 720 = 7.12407e-5 an hour
    assert hourly_rate(0.05) == pytest.approx(7.12407e-5, rel=1e-5)
    assert hourly_rate(0.0) == 0.0
    with pytest.raises(SpotRiskError):
        hourly_rate(1.0)


def test_meaningless_inputs_refused() -> None:
    with pytest.raises(SpotRiskError):
        outlook(SpotJob(10, 2.0, 0.1, 0.0, 0.25))
    with pytest.raises(SpotRiskError):
        outlook(SpotJob(-1, 2.0, 0.1, 0.5, 0.25))


def test_large_counts_answer_at_once() -> None:
    # a budget that absorbs billions of interruptions: the tail is empty, not summed
    assert poisson_cdf(10**10, 0.001) == 1.0
    # Poisson(5000) is close to Normal(5000, 70.71): 90th percentile 5000 + 1.2816 * 70.71
    # = 5090.6 -> 5091; P(N <= mean) ~ 0.5 + (2/3) / sqrt(2 * pi * 5000) = 0.5 + 0.00376
    assert poisson_quantile(0.9, 5000.0) == 5091
    assert poisson_cdf(5000, 5000.0) == pytest.approx(0.5038, abs=1e-3)
