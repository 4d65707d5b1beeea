"""The Launch dialog and Preferences say, per cloud, who enforces a machine's budget."""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QCheckBox
from PySide6.QtWidgets import QComboBox
from PySide6.QtWidgets import QDoubleSpinBox
from PySide6.QtWidgets import QLabel

from gpudesk.services.cloud.catalog import load_catalog
from gpudesk.services.core.settings import Settings
from gpudesk.ui.machines.launch_dialog import LaunchDialog
from gpudesk.ui.shell.settings_dialog import SettingsDialog


async def _never(*_a: Any) -> Any:
    raise AssertionError("nothing launches here")


def _dialog(qtbot: Any, provider: str, instance_type: str, **kw: Any) -> LaunchDialog:
    catalog = load_catalog()
    offer = next(o for o in catalog.filter(provider=provider)
                 if o.instance_type == instance_type)
    d = LaunchDialog(offer, catalog, _never, detect=False, **kw)
    qtbot.addWidget(d)
    return d


def test_launch_dialog_says_who_enforces_the_budget(qtbot: Any) -> None:
    d = _dialog(qtbot, "tencent", "GN7.2XLARGE32", budget=40.0, on_budget="terminate")
    text = d.findChild(QLabel, "guardText")
    assert text is not None
    assert "Tencent Cloud itself terminates this machine at" in text.text()
    assert "even if gpudesk and the machine's agent are gone" in text.text()
    plan = d.plan()
    assert (plan.budget, plan.on_budget) == (40.0, "terminate")
    action = d.findChild(QComboBox, "onBudget")
    assert action is not None
    action.setCurrentIndex(action.findData("stop"))  # as a user picks it
    # the role named at creation (issue 29): the machine's own agent makes the stop-charging
    # stop, app closed or not; only the stopped disk bills on
    assert "the machine's agent also asks Tencent Cloud itself to stop the machine" \
        in text.text()
    assert "stops it in STOP_CHARGING mode" in text.text()
    assert "keeps charging" not in text.text()
    budget = d.findChild(QDoubleSpinBox, "budget")
    assert budget is not None
    budget.setValue(0.0)  # 0 is never "none" (issue 29): the default's hours of the price
    plan = d.plan()
    assert (plan.budget, plan.budget_hours) == (None, 24.0)
    assert "nothing stops this machine" not in text.text()
    assert f"At {24 * d.price():.2f} USD " in text.text()
    none = d.findChild(QCheckBox, "noBudget")
    assert none is not None
    none.setChecked(True)  # "No budget", on purpose
    plan = d.plan()
    assert (plan.budget, plan.budget_hours) == (None, 0.0)
    assert "nothing stops this machine" in text.text()


def test_launch_dialog_on_aws_says_a_stopped_machine_bills_its_disk(qtbot: Any) -> None:
    d = _dialog(qtbot, "aws", "g5.xlarge", budget=30.0, on_budget="stop")
    text = d.findChild(QLabel, "guardText")
    assert text is not None and "still bills its disk (100 GB)" in text.text()


def test_preferences_say_it_per_cloud(qtbot: Any) -> None:
    d = SettingsDialog(Settings(machine_budget_usd=30.0, budget_action="terminate"))
    qtbot.addWidget(d)
    text = d.findChild(QLabel, "pref_guard_text")
    assert text is not None
    aws, tencent, aliyun = text.text().splitlines()
    assert aws.startswith("AWS:") and "EC2 terminates it" in aws
    assert tencent.startswith("Tencent Cloud:") and \
        "The cloud itself terminates it when budget ÷ price runs out" in tencent
    assert aliyun.startswith("Alibaba Cloud:") and "The cloud itself releases it" in aliyun
    d.findChild(QComboBox, "pref_budget_action").setCurrentIndex(0)  # "Warn me"
    assert text.text() == "Machine budgets only warn: nothing is stopped."
