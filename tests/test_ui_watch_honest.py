"""Watch says only what it knows (issue 25): a machine with no NVIDIA driver is said to have
no GPU (not "live, no data yet" forever); an unreachable machine's agent is not claimed to
be running; the spend panel does not promise a cap "by the end" when no end is set. Real
loopback sshd and the real agent, whose nvidia-smi is missing."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

pytest.importorskip("pytestqt")

from fixtures_sshd import SshdServer  # noqa: E402, F401
from fixtures_sshd import sshd  # noqa: E402, F401
from fixtures_telemetry import PYTHON  # noqa: E402, F401
from fixtures_telemetry import Roots  # noqa: E402, F401
from fixtures_telemetry import agent_pid  # noqa: E402, F401
from fixtures_telemetry import roots  # noqa: E402, F401
from PySide6.QtCore import Qt  # noqa: E402
from test_ui_watch_agent import ledger  # noqa: E402, F401
from test_ui_watch_agent import own  # noqa: E402, F401

from gpudesk.services.core.settings import Settings  # noqa: E402
from gpudesk.services.money.ledger import Ledger  # noqa: E402
from gpudesk.services.money.ledger import Machine  # noqa: E402
from gpudesk.ui.watch.dashboard_page import DashboardPage  # noqa: E402
from gpudesk.ui.watch.watch_page import WatchPage  # noqa: E402

WAIT_MS = 60_000


def test_a_machine_without_a_driver_is_said_to_have_no_gpu(
        qtbot, loop, ledger: Ledger, sshd: SshdServer, roots: Roots,  # noqa: F811
        tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    root = roots.new()
    ref = own(ledger, sshd, root)
    page = WatchPage(ledger, lambda: Settings())
    qtbot.addWidget(page)
    page.nvidia_smi = str(tmp_path / "bin" / "nvidia-smi")  # not there: no driver
    page.machine.setCurrentIndex(page.machine.findData(ref))
    qtbot.mouseClick(page.connect_button, Qt.MouseButton.LeftButton)
    dash = page.dashboards[ref]
    try:
        qtbot.waitUntil(lambda: "No NVIDIA GPU or driver" in page.status.text(),
                        timeout=WAIT_MS)
        qtbot.waitUntil(lambda: dash.status.text() == "No NVIDIA GPU or driver on this "
                        "machine", timeout=WAIT_MS)
    except Exception:
        raise AssertionError((page.status.text(), dash.status.text())) from None
    assert "live." not in page.status.text()
    assert dash.plots.isHidden()  # no empty plots with a millisecond time axis
    log = (root / "agent" / "data" / "agent.log").read_text()
    assert log.count("No NVIDIA GPU or driver on this machine") == 1, log
    assert "[Errno 2]" not in log
    page.shutdown()


def test_an_unreachable_machine_is_not_said_to_run_an_agent(
        qtbot, loop, ledger: Ledger, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    m = ledger.add(Machine(id="m-0123456789", provider="aws", state="running",
                           cloud_id="i-1", public_ip="127.0.0.1", ssh_port=1,
                           ssh_user="ubuntu", name="gone"))
    page = WatchPage(ledger, lambda: Settings())
    qtbot.addWidget(page)
    page.machine.setCurrentIndex(page.machine.findData(m.id))
    qtbot.mouseClick(page.connect_button, Qt.MouseButton.LeftButton)
    feed = page.feeds[m.id]
    qtbot.waitUntil(lambda: feed.state_now == "failed", timeout=WAIT_MS)
    qtbot.waitUntil(lambda: "not known" in page.agent.text(), timeout=WAIT_MS)
    assert "keeps running" not in page.agent.text()
    page.shutdown()


def test_the_spend_panel_says_what_is_left_when_no_end_is_set(qtbot) -> None:  # type: ignore[no-untyped-def]
    dash = DashboardPage("m", "m")
    qtbot.addWidget(dash)
    now = time.time()
    dash.clock = lambda: now  # type: ignore[method-assign]
    points = [(now - 3600, 0.0), (now, 1.0)]
    dash.set_spend(points, 0.0, "USD", 30.0, None)
    assert dash.end_label.text() == "No end time set"
    assert "by the end" not in dash.cap_label.text()
    assert dash.cap_label.text() == "Cap $30.00: $29.00 left", dash.cap_label.text()
