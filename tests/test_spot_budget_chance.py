"""The chance a spot job's budget runs out first (issue 33, item 4): worked by hand, then
said by the Launch dialog opened from the Plan page (clicked) and by ``gpudesk launch
--spot --job-hours`` on moto, with a kept-alive group's end.

Hand-worked: 10 h of compute at $2/h, 10 % interruptions an hour, a checkpoint every 30
min that costs nothing to write, 15 min to restart. Lost per interruption L = 0.25 + 0.25
= 0.5 h; expected hours T = 10 / (1 - 0.05) = 10.526 h; expected interruptions
m = 0.1 · T = 1.0526. A $21 budget pays 10.5 h: 0.5 h spare absorbs one interruption, so
it runs out when there are two or more: 1 - e^-m (1 + m) = 0.2836.
"""
# ruff: noqa: F811 - fixtures imported from fixtures_* arrive as parameters

from __future__ import annotations

import contextlib
import io
import json
import math
from typing import Any

import pytest
from cloud_window import fill_launch_dialog
from cloud_window import offer_row
from cloud_window import plan_gpt2
from fixtures_aws import MotoAws  # noqa: F401
from fixtures_aws import aws  # noqa: F401
from fixtures_aws import moto_server  # noqa: F401
from fixtures_keyring import memory_keyring  # noqa: F401
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QCheckBox
from PySide6.QtWidgets import QDoubleSpinBox
from PySide6.QtWidgets import QLabel
from PySide6.QtWidgets import QPushButton
from test_ui_launch_store import aws_window  # noqa: F401 - the fixture

from gpudesk.calc import spot_risk
from gpudesk.cli.entry import main
from gpudesk.services.cloud import credentials
from gpudesk.services.cloud import guard
from gpudesk.services.cloud.catalog import load_catalog
from gpudesk.services.cloud.spot_rates import SpotRate
from gpudesk.services.cloud.spot_rates import save_rates
from gpudesk.services.core.paths import cache_dir
from gpudesk.services.plan import budget_chance
from gpudesk.services.plan.expected_cost import SpotAssumptions
from gpudesk.ui.machines.launch_dialog import LaunchDialog
from gpudesk.ui.shell.main_window import MainWindow

TYPE, REGION = "g4dn.xlarge", "us-east-1"
# 10 % an hour: a share 1 - e^-1 taken back within 10 hours
TEN_PERCENT = SpotRate("aws", REGION, TYPE, -math.expm1(-1.0), None, None, "test 10%/h",
                       "test rate", "2026-12-01", period_hours=10.0)
HAND = SpotAssumptions(30.0, 15.0, 0.0, assumed=False)


def _usd(x: float) -> str:
    return f"${x:,.2f}"


def test_the_hand_worked_case() -> None:
    job = budget_chance.SpotJobInputs(10.0, TEN_PERCENT, HAND)
    c = budget_chance.budget_chance(job, 2.0, 21.0)
    assert c.risk.outlook is not None
    assert c.risk.outlook.expected_hours == pytest.approx(10 / 0.95)
    m = 0.1 * 10 / 0.95
    assert c.chance == pytest.approx(1 - math.exp(-m) * (1 + m), rel=1e-9)
    assert c.chance == pytest.approx(0.2836, abs=1e-4)
    assert c.end_hours == 10.5
    text = budget_chance.plain(budget_chance.sentences(c, _usd, group=True))
    assert ("expected $21.05 ($20.00 to $22.00) and 10.5 h to finish at interruption rate "
            "test 10%/h (test rate); a 28% chance that the $21.00 budget runs out before the "
            "job finishes.") in text
    assert ("The group ends itself when the $21.00 budget runs out, after 10.5 h of machines: "
            "a 28% chance that this comes before the job's expected finish (10.5 h).") in text
    # a budget below the uninterrupted cost never finishes; a huge one always does
    assert budget_chance.budget_chance(job, 2.0, 19.99).chance == 1.0
    assert budget_chance.budget_chance(job, 2.0, 1e6).chance == 0.0
    assert budget_chance.percent(0.001) == "<1%" and budget_chance.percent(0.999) == ">99%"


def test_no_published_rate_gives_no_chance() -> None:
    rate = SpotRate("tencent", "ap-guangzhou", "GN7.2XLARGE32", None, None, None,
                    "interruption rate: not published", "Tencent Cloud's CVM API publishes "
                    "no interruption rate", "", published=False)
    c = budget_chance.budget_chance(budget_chance.SpotJobInputs(4.0, rate), 1.5, 100.0)
    assert c.chance is None and not c.known
    assert budget_chance.plain(budget_chance.sentences(c, _usd)) == (
        "This job costs $6.00 if never interrupted (4.0 h); interruption rate: not published "
        "(Tencent Cloud's CVM API publishes no interruption rate), so the chance that the "
        "budget runs out first is not known.")


def _tick(qtbot: Any, box: QCheckBox) -> None:
    box.setFocus()
    qtbot.keyClick(box, Qt.Key.Key_Space)


def test_the_launch_dialog_says_the_chance_for_the_plan_pages_job(
        aws_window: MainWindow, qtbot: Any) -> None:
    window = aws_window
    # what load_rates() reads from the cache at start: the cloud's rate for this offer
    window.plan.spot_rates = {("aws", REGION, TYPE): TEN_PERCENT}
    plan_gpt2(window.plan)
    spot = window.plan.spot
    if not spot.isChecked():
        spot.click()
    window.plan.select_row(offer_row(window.plan, TYPE, REGION))
    ranked = window.plan.selected_offer()
    assert ranked is not None and ranked.spot and ranked.risk is not None
    window.plan.launch_button.click()
    dialog = window.launch_dialog
    assert isinstance(dialog, LaunchDialog)
    fill_launch_dialog(dialog, "203.0.113.7/32", fallbacks=False)
    said = dialog.findChild(QLabel, "spotChance")
    budget = dialog.findChild(QDoubleSpinBox, "budget")
    keep = dialog.findChild(QCheckBox, "keepAlive")
    assert said is not None and budget is not None and keep is not None
    assert dialog.spot.isChecked() and said.isVisible()

    # the figures the words must carry, from the calculation itself
    price = dialog.price()
    per_hour = price + guard.disk_per_hour("aws", REGION, dialog.disk.value(), "USD")
    a = ranked.risk.assumptions
    job = spot_risk.SpotJob(ranked.hours, per_hour, 0.1, a.checkpoint_minutes / 60,
                            a.restart_minutes / 60, a.checkpoint_cost_seconds / 3600)
    o = spot_risk.outlook(job)
    typed = round(o.expected_cost, 2)  # about an even chance: the budget is the expectation
    budget.selectAll()
    qtbot.keyClicks(budget, f"{typed:.2f}")
    qtbot.keyClick(budget, Qt.Key.Key_Tab)
    assert budget.value() == pytest.approx(typed)
    chance = spot_risk.chance_over_budget(job, typed)
    assert 0 < chance < 1
    text = said.text()
    assert f"expected ${o.expected_cost:,.2f} (${o.low_cost:,.2f} to ${o.high_cost:,.2f})" in text
    assert f"{o.expected_hours:,.1f} h to finish at interruption rate test 10%/h" in text
    assert (f"a {budget_chance.percent(chance)} chance that the ${typed:,.2f} budget runs out "
            "before the job finishes") in text
    assert "group ends itself" not in text

    _tick(qtbot, keep)  # the kept-alive group's end is the budget's: said too
    assert keep.isChecked()
    assert (f"The group ends itself when the ${typed:,.2f} budget runs out, after "
            f"{typed / per_hour:,.1f} h of machines: a {budget_chance.percent(chance)} chance "
            f"that this comes before the job's expected finish ({o.expected_hours:,.1f} h)."
            ) in said.text()

    # a bigger budget: a smaller chance
    budget.selectAll()
    qtbot.keyClicks(budget, f"{3 * typed:.2f}")
    qtbot.keyClick(budget, Qt.Key.Key_Tab)
    bigger = spot_risk.chance_over_budget(job, round(3 * typed, 2))
    assert bigger < chance
    assert f"a {budget_chance.percent(bigger)} chance" in said.text()

    # the budget from the expected cost: its 90th percentile, rounded up to the cent
    button = dialog.findChild(QPushButton, "budgetFromExpected")
    assert button is not None and button.isVisible()
    high = math.ceil(o.high_cost * 100) / 100
    assert button.text() == (f"Budget ${high:,.2f}: enough for the job in at least 9 cases "
                             "out of 10")
    button.click()
    assert budget.value() == pytest.approx(high)
    at_high = spot_risk.chance_over_budget(job, high)
    assert at_high <= 0.1
    assert (f"a {budget_chance.percent(at_high)} chance that the ${high:,.2f} budget runs out"
            ) in said.text()
    assert dialog.plan().budget == pytest.approx(high)  # what the launch is given

    _tick(qtbot, dialog.spot)  # on-demand: nothing interrupts it, nothing to say
    assert not dialog.spot.isChecked() and not said.isVisible() and not button.isVisible()
    dialog.close()


def _run(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return code, out.getvalue(), err.getvalue()


def test_launch_with_job_hours_says_the_chance_and_the_groups_end(
        aws: MotoAws, memory_keyring: Any) -> None:
    credentials.save_credentials(aws.credentials)
    aws.publish_dlami(REGION)
    save_rates(cache_dir(), [TEN_PERCENT])
    offer = next(o for o in load_catalog().filter(provider="aws", region=REGION)
                 if o.instance_type == TYPE)
    price = offer.price(True) or offer.ondemand_price
    assert price
    per_hour = price + guard.disk_per_hour("aws", REGION, 100, "USD")
    budget = 10.0
    code, out, err = _run(["launch", "--provider", "aws", "--type", TYPE, "--region", REGION,
                           "--allow-from", "203.0.113.7/32", "--no-wait-ssh", "--poll", "0.01",
                           "--no-instance-role", "--spot", "--keep-alive", "--budget",
                           f"{budget}", "--job-hours", "8", "--json"])
    assert code == 0, err
    d = SpotAssumptions()
    job = spot_risk.SpotJob(8.0, per_hour, 0.1, d.checkpoint_minutes / 60,
                            d.restart_minutes / 60, d.checkpoint_cost_seconds / 3600)
    o = spot_risk.outlook(job)
    chance = spot_risk.chance_over_budget(job, budget)
    # said before anything bills, in the Launch dialog's words
    assert (f"expected ${o.expected_cost:,.2f} (${o.low_cost:,.2f} to ${o.high_cost:,.2f}) and "
            f"{o.expected_hours:,.1f} h to finish at interruption rate test 10%/h (test rate); "
            f"a {budget_chance.percent(chance)} chance that the $10.00 budget runs out before "
            "the job finishes.") in err
    assert (f"The group ends itself when the $10.00 budget runs out, after "
            f"{budget / per_hour:,.1f} h of machines") in err
    data = json.loads(out)
    risk = data["spot_risk"]
    assert risk["chance_budget_runs_out"] == pytest.approx(chance, abs=1e-6)
    assert risk["expected_cost"] == pytest.approx(o.expected_cost, abs=1e-6)
    assert risk["budget_lasts_hours"] == pytest.approx(budget / per_hour)
    assert risk["job_hours"] == 8.0 and risk["rate_source"] == "test rate"
    assert risk["assumed"] is True
    # the group's own end is the same budget ÷ (price + disk) the sentence counted
    shown = data["guard"]
    assert shown["budget"] == pytest.approx(budget)
    assert _run(["launch", "--provider", "aws", "--type", TYPE, "--region", REGION,
                 "--allow-from", "203.0.113.7/32", "--spot", "--job-hours", "0"])[0] == 2
