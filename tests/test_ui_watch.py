"""The Watch page on a real loopback sshd: the agent deployed with the stand-in nvidia-smi
(the V100 capture), its samples on the dashboard, and the rules from Preferences on the
machine; own machines only ever get warnings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pytestqt")

from fixtures_sshd import SshdServer  # noqa: E402, F401
from fixtures_sshd import sshd  # noqa: E402, F401
from fixtures_telemetry import PYTHON  # noqa: E402, F401
from fixtures_telemetry import Roots  # noqa: E402, F401
from fixtures_telemetry import roots  # noqa: E402, F401
from fixtures_telemetry import smi_wrapper  # noqa: E402, F401
from PySide6.QtWidgets import QMessageBox  # noqa: E402

from gpudesk.services.core.settings import Settings  # noqa: E402
from gpudesk.services.money.ledger import Ledger  # noqa: E402
from gpudesk.services.money.ledger import Machine  # noqa: E402
from gpudesk.services.remote.machine_rules import agent_rules  # noqa: E402
from gpudesk.ui.watch.watch_page import WatchPage  # noqa: E402

WAIT_MS = 60_000


@pytest.fixture
def ledger(tmp_path: Path) -> Any:
    with Ledger(tmp_path / "ledger.sqlite") as led:
        yield led


def test_watch_deploys_the_agent_and_the_dashboard_shows_the_capture(
        qtbot, loop, ledger: Ledger, sshd: SshdServer, roots: Roots,  # noqa: F811
        tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    settings = Settings(idle_minutes=45, idle_action="terminate", machine_budget_usd=20)
    page = WatchPage(ledger, lambda: settings)
    qtbot.addWidget(page)
    root = roots.new()
    page.remote_root, page.python = str(root), PYTHON
    page.nvidia_smi = str(smi_wrapper(tmp_path / "bin", "v100"))
    page.machine.setCurrentText(sshd.url)
    page.identity.setText(str(sshd.client_key))
    page.connect_button.click()
    qtbot.waitUntil(lambda: page.question.last_box is not None, timeout=WAIT_MS)
    assert page.question.last_box is not None
    assert sshd.host_key_fingerprint in page.question.last_box.text()
    page.question.last_box.button(QMessageBox.StandardButton.Yes).click()
    dash = page.dashboards[sshd.url]
    try:
        qtbot.waitUntil(lambda: len(dash.gpus) == 1 and bool(dash.procs), timeout=WAIT_MS)
    except Exception:
        raise AssertionError((page.status.text(), dash.gpus, dash.procs, dash.history)) from None
    texts = dash.gpu_texts(dash._values_at()[1], 0)
    assert "99" in " ".join(texts), texts  # the V100 capture's utilisation
    assert sorted(int(p["mem_used_mib"]) for p in dash.procs) == [5530, 6265]
    assert page.overview.rows[sshd.url].key == sshd.url
    # an ssh:// target is not a cloud machine: the agent only warns, whatever Preferences say
    rules = json.loads((root / "agent" / "rules.json").read_text())
    assert rules["idle"] == {"below_pct": 5.0, "minutes": 45.0, "action": "warn"}
    assert "budget" not in rules
    page.disconnect_button.click()
    assert not page.feeds and not page.dashboards
    page.shutdown()


def test_rules_for_a_cloud_machine_carry_the_budget_and_spot_watch(ledger: Ledger) -> None:
    import time

    now = time.time()
    m = ledger.add(Machine(id="m-aaaaaaaaaa", provider="aws", market="spot",
                           price_per_hour=2.0, state="running", running_since=now - 1800,
                           launched_at=now - 1800, cloud_id="i-1", public_ip="1.2.3.4"))
    rules = agent_rules(m, Settings(machine_budget_usd=10, budget_action="terminate",
                                    idle_action="stop"), ledger, now=now)
    assert rules.spot_provider == "aws"
    assert rules.idle is not None and rules.idle.action == "stop"
    assert rules.budget is not None and rules.budget.action == "terminate"
    assert rules.budget.cap == 10 and rules.budget.price_per_hour == 2.0
    assert rules.budget.spent_before == pytest.approx(1.0, abs=0.01)  # half an hour at $2
    rules.validate()
    own = Machine(id="m-bbbbbbbbbb", provider="own", public_ip="10.0.0.1")
    mine = agent_rules(own, Settings(idle_action="terminate", machine_budget_usd=10), ledger)
    assert mine.idle is not None and mine.idle.action == "warn" and mine.budget is None
