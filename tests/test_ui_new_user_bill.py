"""A new user, by clicking: the Launch dialog with its defaults on each cloud, the app closed
at once, and the cloud stand-in's own bill stops at the budget (issue 29).

The dialog is the real one, filled by Preferences as a new user has them (a day of the
machine, "stop", the role allowed); its Launch button runs the launcher the window makes,
against moto and the Tencent/Alibaba Cloud stand-ins. Then the window is gone and nothing of
gpudesk's desktop runs again: the machine's first-boot guard, on the rules in its user data,
is all that stands between the budget and the bill, over 30 days on the matrix's clock
(tests/guard_matrix_cases.py plays the machine, the clouds' timers and their bills).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import guard_matrix_cases as gm
import pytest

pytestmark = pytest.mark.timeout(600)


class DialogRow(gm.RowRun):
    """A matrix row whose launch is the Launch dialog, clicked."""

    qtbot: Any = None

    def launch(self) -> Any:
        from gpudesk.services.cloud.catalog import load_catalog
        from gpudesk.services.core.settings import Settings
        from gpudesk.ui.machines.launch_dialog import LaunchDialog

        new = Settings()  # a new user's Preferences
        catalog = load_catalog()
        offer = next(o for o in catalog.filter(provider=self.cloud)
                     if o.instance_type == self.offer.instance_type
                     and o.region == self.offer.region)
        dialog = LaunchDialog(offer, catalog, self.launcher().launch, detect=False,
                              budget=new.machine_budget_usd,
                              budget_hours=new.machine_budget_hours,
                              on_budget=new.budget_action)
        self.qtbot.addWidget(dialog)
        self.qtbot.keyClicks(dialog.allow_from, gm.ADDRESS)
        for i in range(dialog.fallbacks.count()):  # this region only
            item = dialog.fallbacks.item(i)
            item.setCheckState(item.checkState().Unchecked)
        with self.qtbot.waitSignal(dialog.launched, timeout=120_000):
            dialog.launch_button.click()
        ledger_id = dialog.ledger_id
        dialog.close()  # the app closes at once, the laptop with it
        self.sync_bill()
        m = self.ledger.get(ledger_id)
        assert m is not None
        self.notes.append(f"launched from the dialog: budget {m.budget:.2f} USD, "
                          f"{m.on_budget}, by {m.enforced_by}")
        return m


@pytest.fixture(scope="module")
def world() -> Iterator[gm.World]:
    w = gm.World()
    yield w
    w.close()


def _compute(row: gm.Row) -> float:
    found = re.search(r"running ([0-9.]+), stopped-charging ([0-9.]+)", row.why)
    assert found is not None, row.why
    return float(found[1]) + float(found[2])


@pytest.mark.parametrize("cloud", gm.CLOUDS)
def test_a_new_user_launches_with_the_defaults_closes_the_app_and_the_bill_stops(
        cloud: str, world: gm.World, qtbot: Any, loop: Any, tmp_path: Path) -> None:
    import logging

    quiet = {n: logging.getLogger(n).level for n in ("gpudesk", "werkzeug", "moto")}
    for name in quiet:
        logging.getLogger(name).setLevel(logging.CRITICAL)
    world.reset()
    run = DialogRow(world, cloud, "stop", "app-closed", tmp_path / "row",
                    role=cloud != "aws", budget_from_launch=True)
    run.qtbot = qtbot
    (tmp_path / "row").mkdir()
    try:
        with gm._environment(world, tmp_path / "row" / "home"), gm.clock_as_time(run.clock):
            try:
                row = run.run()
            finally:
                run.teardown()
    finally:
        for name, level in quiet.items():
            logging.getLogger(name).setLevel(level)
    assert "launched from the dialog: budget" in row.why and ", stop, " in row.why, row.why
    budget = float(row.budget.split()[0])
    # the default is a day of the machine, never none
    per_hour = gm.OFFERS[cloud].price
    assert 23.0 * per_hour <= budget <= 25.0 * per_hour, row
    assert row.outcome in ("capped", "said"), row
    step = per_hour / 60.0  # one billing step (a minute)
    assert _compute(row) <= budget + step, row.why
    if cloud != "aws":  # the first-boot guard asked the cloud for its stop-charging stop
        mode = "STOP_CHARGING" if cloud == "tencent" else "StopCharging"
        assert f"({mode})" in row.why, row.why
